"""Batched fitting: lumen.FitPlan (plan once, execute many times) and lumen.fit (both at once).

Thin layer over include/lumen/fit.h: the options are lumen_fit_options, the buffers are the
caller's (numpy arrays handed to C without copying), so results equal the C API's bit for bit.
"""
import ctypes
import math

import numpy as np

from . import _lib
from ._lib import lib, check, context, cstr, pystr, P, c_double, c_int, c_int32, c_int64, c_void_p

__all__ = ["FitPlan", "FitResult", "fit", "models", "model_info", "fit_states", "fit_tiers",
           "bounds_presets", "population_aif", "parse_backend"]

# Array sizes of lumen_fit_options / lumen_fit_results (macros in fit.h, not enum values; the
# layout is checked against lumen_fit_options_init's defaults at import, see _check_layout).
_MAX_PARAMS = 4          # LUMEN_FIT_MAX_PARAMS
_NAME_MAX = 64           # LUMEN_FIT_NAME_MAX
_REASON_MAX = 512        # LUMEN_FIT_REASON_MAX
_NCONSTS = 2             # LUMEN_FIT_NCONSTS
CONST_R10 = 0            # LUMEN_FIT_CONST_R10: fxr pre-contrast R1 (1/s)
CONST_B1 = 1             # LUMEN_FIT_CONST_B1: vfa family flip-angle scale
_UNBOUNDED = 1e30        # |bound| >= 1e20 is "no bound" for every tier; finite in float32 too
_GUARD = 1024            # spare bytes after each struct handed to C


class _FitOptions(ctypes.Structure):
    _fields_ = [
        ("model", c_int),
        ("tolerance", c_double),
        ("max_iterations", c_int),
        ("start", c_double * _MAX_PARAMS),
        ("lo", c_double * _MAX_PARAMS),
        ("hi", c_double * _MAX_PARAMS),
        ("fixed", ctypes.c_ubyte * _MAX_PARAMS),
        ("bounds_preset", c_int),
        ("weights", P(c_double)),
        ("precision", c_int),
        ("conv", c_int),
        ("linear_start", c_int),
        ("confidence", c_int),
        ("n_starts", c_int),
        ("fit_delay", c_int),
        ("delay_lo", c_double),
        ("delay_hi", c_double),
        ("backend", ctypes.c_char_p),
        ("rocketship_names", c_int),
        ("force_cpu", c_int),
        ("tr", c_double),
        ("r1", c_double),
        ("auc_window", c_double),
        ("auc_t0", c_double),
    ]


class _FitOptionsBox(ctypes.Structure):
    _fields_ = [("o", _FitOptions), ("guard", ctypes.c_char * _GUARD)]


_N_TIERS = len(_lib.FIT_TIER_NAMES)
_N_STATES = len(_lib.FIT_STATE_NAMES)


class _FitResults(ctypes.Structure):
    _fields_ = [
        ("params", P(c_double)),
        ("state", P(c_int32)),
        ("derived", P(c_double)),
        ("chi2", P(c_double)),
        ("r2", P(c_double)),
        ("iterations", P(c_int32)),
        ("ci_lo", P(c_double)),
        ("ci_hi", P(c_double)),
        ("delay", P(c_double)),
        ("bound_mask", P(c_int32)),
        ("backend_requested", ctypes.c_char * _NAME_MAX),
        ("backend_selected", ctypes.c_char * _NAME_MAX),
        ("backend_used", ctypes.c_char * _NAME_MAX),
        ("reason", ctypes.c_char * _REASON_MAX),
        ("curves_per_tier", c_int64 * _N_TIERS),
        ("state_counts", c_int64 * _N_STATES),
        ("at_lower", c_int64 * _MAX_PARAMS),
        ("at_upper", c_int64 * _MAX_PARAMS),
        ("seconds", c_double),
        ("kernel_seconds", c_double),
    ]


class _FitResultsBox(ctypes.Structure):
    _fields_ = [("r", _FitResults), ("guard", ctypes.c_char * _GUARD)]


class _AifOptions(ctypes.Structure):
    _fields_ = [
        ("kind", c_int),
        ("delay", c_double),
        ("hct", c_double),
        ("plasma", c_int),
        ("dose", c_double),
        ("table_t", P(c_double)),
        ("table_c", P(c_double)),
        ("table_n", c_int64),
    ]


class _AifOptionsBox(ctypes.Structure):
    _fields_ = [("o", _AifOptions), ("guard", ctypes.c_char * _GUARD)]


def _default_options():
    box = _FitOptionsBox()
    lib.lumen_fit_options_init(ctypes.byref(box))
    return box


def _check_layout():
    o = _default_options().o
    tofts = c_int()
    lib.lumen_model_parse(b"tofts", ctypes.byref(tofts))
    ok = (o.model == tofts.value and o.tolerance == 1e-6 and o.max_iterations == 200
          and all(math.isnan(v) for v in o.start) and all(math.isnan(v) for v in o.hi)
          and not any(o.fixed) and o.bounds_preset == _lib.FIT_BOUNDS_PRESET_NAMES.index("physical")
          and not o.weights and o.linear_start == 1 and o.confidence == 1
          and o.n_starts == 4 and o.delay_lo == 0.0 and o.delay_hi == 0.5 and o.r1 == 4.5
          and o.auc_window == 1.5 and math.isnan(o.auc_t0))
    if not ok:
        raise ImportError("lumen: the binding's copy of lumen_fit_options does not match %s "
                          "(lumen_fit_options_init defaults read back wrong); rebuild the binding "
                          "and the library from the same source" % _lib.library_path())


_check_layout()


# ---------------------------------------------------------------------------- enums, names


def models():
    """Every model name, read from the library (lumen_model_name)."""
    return _lib.enum_names(lib.lumen_model_name)


def fit_states():
    """Per-curve state names in order: fit_states()[state] names a state value."""
    return list(_lib.FIT_STATE_NAMES)


def fit_tiers():
    """Solver tiers in the order `auto` probes them ("cuda", "cpu", "cpu_single", "standard")."""
    return list(_lib.FIT_TIER_NAMES)


def bounds_presets():
    """Names of the default-bounds presets ("physical", the default, and "rocketship")."""
    return list(_lib.FIT_BOUNDS_PRESET_NAMES)


def _model_id(model):
    if isinstance(model, (int, np.integer)) and not isinstance(model, bool):
        if 0 <= int(model) < len(models()):
            return int(model)
        raise ValueError("model %d: expected 0 .. %d (lumen.models())" % (model, len(models()) - 1))
    if not isinstance(model, str):
        raise TypeError("model: expected a model name (str), got %s" % type(model).__name__)
    m = c_int()
    st = lib.lumen_model_parse(cstr(model), ctypes.byref(m))
    if st != 0:
        raise _lib.error_for(st, "model '%s' is unknown, expected one of: %s" % (model, ", ".join(models())),
                             "lumen_model_parse")
    return m.value


def model_info(model, bounds_preset="physical"):
    """Parameters (public and fit order), units, defaults (start and bounds in bounds_preset)
    and derived values of a model."""
    m = _model_id(model)
    preset = _enum_index(bounds_preset, lib.lumen_fit_bounds_preset_name, "bounds_preset")
    n = lib.lumen_model_param_count(m)
    params = []
    for k in range(n):
        s, lo, hi = c_double(), c_double(), c_double()
        lib.lumen_model_param_defaults_preset(m, k, preset, ctypes.byref(s), ctypes.byref(lo), ctypes.byref(hi))
        params.append({"name": pystr(lib.lumen_model_param_name(m, k)),
                       "unit": pystr(lib.lumen_model_param_unit(m, k)),
                       "start": s.value, "lo": lo.value, "hi": hi.value})
    nf = lib.lumen_fit_param_count(m)
    nd = lib.lumen_fit_derived_count(m)
    return {
        "model": pystr(lib.lumen_model_name(m)),
        "id": m,
        "bounds_preset": _lib.FIT_BOUNDS_PRESET_NAMES[preset],
        "params": params,
        "fit_params": [pystr(lib.lumen_fit_param_name(m, k)) for k in range(nf)],
        "derived": [{"name": pystr(lib.lumen_fit_derived_name(m, k)),
                     "unit": pystr(lib.lumen_fit_derived_unit(m, k))} for k in range(nd)],
    }


def parse_backend(request, rocketship_names=False):
    """Canonical name of a backend request ("gpufit" -> "accelerated", ...), checked by C."""
    ctx = context()
    buf = ctypes.create_string_buffer(_NAME_MAX)
    st = lib.lumen_fit_backend_parse(ctx, cstr(request), 1 if rocketship_names else 0, buf, _NAME_MAX)
    check(st, "lumen_fit_backend_parse", ctx)
    return pystr(buf.value)


def _enum_index(value, fn, what):
    names = _lib.enum_names(fn)
    if isinstance(value, str):
        if value in names:
            return names.index(value)
        raise ValueError("%s '%s': expected one of %s" % (what, value, ", ".join(names)))
    raise TypeError("%s: expected one of %s, got %r" % (what, ", ".join(names), value))


def population_aif(kind, times, hematocrit=None, delay=0.0, plasma=True, dose=None):
    """A population AIF (lumen_aif_population) at times (minutes): plasma mM by default."""
    ctx = context()
    k = c_int()
    st = lib.lumen_aif_parse(cstr(kind), ctypes.byref(k))
    if st != 0:
        raise _lib.error_for(st, "aif '%s' is unknown, expected one of: %s"
                             % (kind, ", ".join(_lib.enum_names(lib.lumen_aif_name))), "lumen_aif_parse")
    box = _AifOptionsBox()
    lib.lumen_aif_options_init(ctypes.byref(box))
    o = box.o
    o.kind = k.value
    o.delay = float(delay)
    if hematocrit is not None:
        o.hct = float(hematocrit)
    o.plasma = 1 if plasma else 0
    if dose is not None:
        o.dose = float(dose)
    t = np.ascontiguousarray(times, dtype=np.float64).ravel()
    out = np.empty_like(t)
    st = lib.lumen_aif_population(ctx, ctypes.byref(box), t.size, t.ctypes.data_as(P(c_double)),
                                  out.ctypes.data_as(P(c_double)))
    check(st, "lumen_aif_population", ctx)
    return out


# ---------------------------------------------------------------------------- argument helpers


def _vector(name, value, n=None, dtype=np.float64):
    try:
        a = np.asarray(value)
    except Exception:
        raise TypeError("%s: expected a 1-D array of numbers" % name)
    if a.dtype.kind not in "biuf":
        raise TypeError("%s: expected real numbers, got dtype %s" % (name, a.dtype))
    a = np.ascontiguousarray(a, dtype=dtype)
    if a.ndim != 1:
        raise ValueError("%s: expected a 1-D array, got shape %s" % (name, a.shape))
    if n is not None and a.size != n:
        raise ValueError("%s: expected %d values (one per sample), got %d" % (name, n, a.size))
    return a


def _bound(v):
    v = float(v)
    if math.isinf(v):
        return math.copysign(_UNBOUNDED, v)
    return v


def _param_index(names, key, what):
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        if 0 <= int(key) < len(names):
            return int(key)
        raise ValueError("%s: parameter index %d out of range 0 .. %d" % (what, key, len(names) - 1))
    if key in names:
        return names.index(key)
    raise ValueError("%s: unknown parameter '%s', expected one of %s" % (what, key, ", ".join(names)))


def _items(value, names, what):
    """(index, item) pairs of a dict by name/index, or a sequence by position."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [(_param_index(names, k, what), v) for k, v in value.items()]
    seq = list(value)
    if len(seq) > len(names):
        raise ValueError("%s: %d values given, the model has %d fit parameters (%s)"
                         % (what, len(seq), len(names), ", ".join(names)))
    return list(enumerate(seq))


# ---------------------------------------------------------------------------- results


class FitResult(object):
    """The results of a batched fit. Arrays (n_curves rows):
    params (n, P) public parameters in param_names order; states int32 (fit_states() names them);
    chi2 (weighted sum of squared residuals); r2; iterations int32; ci_lo / ci_hi (n, P) 95 %
    confidence interval (None when confidence=False); derived (n, D) with derived_names;
    delay (n,) in minutes when fit_delay; bound_mask int32 (bit 2k: fit parameter k on its lower
    bound, 2k + 1: on its upper bound; at_bound() decodes it). A state "at_bound" is a converged
    fit with a free parameter on a bound: its values are kept. Backend fields: backend_requested,
    backend_selected, backend_used, reason; curves_per_tier and state_counts (dicts); at_lower and
    at_upper (dicts by fit parameter name: curves with that parameter on its lower / upper bound);
    seconds (C execute time); kernel_seconds (time the GPU ran the fitting kernels; 0 unless curves
    ran on tier cuda).
    Also a read-only mapping: res["params"], res["Ktrans"], dict(res)."""

    _keys = ("params", "states", "chi2", "r2", "iterations", "ci_lo", "ci_hi", "derived", "delay",
             "bound_mask", "param_names", "fit_param_names", "derived_names", "model", "bounds_preset",
             "backend_requested", "backend_selected", "backend_used", "reason", "curves_per_tier",
             "state_counts", "at_lower", "at_upper", "seconds", "kernel_seconds")

    def keys(self):
        return list(self._keys)

    def __getitem__(self, key):
        if key in self._keys:
            return getattr(self, key)
        if key in self.param_names:
            return self.params[:, self.param_names.index(key)]
        if key in self.derived_names:
            return self.derived[:, self.derived_names.index(key)]
        raise KeyError(key)

    def __contains__(self, key):
        return key in self._keys or key in self.param_names or key in self.derived_names

    def param(self, name):
        """Column of a parameter or derived value by name."""
        return self[name]

    @property
    def state_names(self):
        names = _lib.FIT_STATE_NAMES
        return [names[s] if 0 <= s < len(names) else "unknown" for s in self.states.tolist()]

    @property
    def chi_squares(self):
        return self.chi2

    @property
    def has_values(self):
        """Boolean (n,): curves with parameter values (converged, at_bound, max_iterations)."""
        with_values = [i for i in range(len(_lib.FIT_STATE_NAMES)) if lib.lumen_fit_state_has_values(i)]
        return np.isin(self.states, with_values)

    def at_bound(self, curve):
        """The fit parameters of one curve that rest on a bound: {name: "lower" | "upper"}."""
        m = int(self.bound_mask[curve])
        return {name: side for k, name in enumerate(self.fit_param_names)
                for b, side in ((0, "lower"), (1, "upper")) if (m >> (2 * k + b)) & 1}

    def as_dict(self):
        return {k: getattr(self, k) for k in self._keys}

    def __len__(self):
        return int(self.states.shape[0])

    def __repr__(self):
        return ("FitResult(model=%r, curves=%d, params=%s, backend requested %s, selected %s, used %s, "
                "states=%s)" % (self.model, len(self), self.param_names, self.backend_requested,
                                self.backend_selected, self.backend_used,
                                {k: v for k, v in self.state_counts.items() if v}))


# ---------------------------------------------------------------------------- plan


_TIME_UNITS = {"min": 1.0, "minute": 1.0, "minutes": 1.0, "s": 1.0 / 60.0, "sec": 1.0 / 60.0, "second": 1.0 / 60.0,
               "seconds": 1.0 / 60.0}
_ANGLE_UNITS = {"rad": 1.0, "radian": 1.0, "radians": 1.0, "deg": np.pi / 180.0, "degree": np.pi / 180.0,
                "degrees": np.pi / 180.0}
# An unlabelled DCE grid longer than this (minutes) is most likely in seconds: a 3-min acquisition
# sampled every 3 s spans 180 "minutes". With time_unit="min" any span up to the C library's 240 min.
_DCE_SPAN_UNLABELLED_MAX_MIN = 60.0


def _unit(value, table, what):
    key = str(value).strip().lower()
    if key not in table:
        raise ValueError("%s: %r is not a unit here, expected one of %s" % (what, value, ", ".join(sorted(table))))
    return table[key]


# The LUMEN_MF_* flags the binding reads (include/lumen/models.h): the x-value kind of a model.
_MF_AIF, _MF_X_TIMES, _MF_X_FLIP = 0x01, 0x02, 0x08


def _model_flags(model):
    """The LUMEN_MF_* flags of a model's row (lumen_model_flags_of); 0 for an unknown name."""
    m = c_int()
    if lib.lumen_model_parse(cstr(model), ctypes.byref(m)) != 0:
        return 0
    return lib.lumen_model_flags_of(m)


def _grid_in_lumen_units(model, x, time_unit, angle_unit):
    """The sample grid converted to the C API's units (DCE: minutes; vfa*: radians); refuses an
    unlabelled grid in a likely wrong unit (issue 39 item 3: times in seconds, angles in degrees)."""
    flags = _model_flags(model)
    angles = bool(flags & _MF_X_FLIP)
    recovery = bool(flags & _MF_X_TIMES) and not flags & _MF_AIF  # ir, sr: seconds
    if angles:
        if time_unit is not None:
            raise ValueError("time_unit: model %r takes flip angles, not times: give angle_unit" % model)
        if angle_unit is not None:
            return x * _unit(angle_unit, _ANGLE_UNITS, "angle_unit")
        if x.size and float(np.max(x)) > np.pi / 2 + 1e-9:
            raise ValueError("times (flip angles of %r) go up to %g: radians above pi/2 (90 deg) are implausible "
                             "for VFA; degrees? pass angle_unit='deg' (or np.deg2rad); radians indeed? pass "
                             "angle_unit='rad'" % (model, float(np.max(x))))
        return x
    if angle_unit is not None:
        raise ValueError("angle_unit: model %r takes times, not flip angles" % model)
    if recovery:
        if time_unit is not None and _unit(time_unit, _TIME_UNITS, "time_unit") != 1.0 / 60.0:
            raise ValueError("time_unit: the %s times are seconds; give them in seconds (time_unit='s')"
                             % model)
        return x
    if time_unit is not None:
        return x * _unit(time_unit, _TIME_UNITS, "time_unit")
    span = float(x[-1] - x[0]) if x.size > 1 else 0.0
    if span > _DCE_SPAN_UNLABELLED_MAX_MIN:
        raise ValueError("times: the DCE times span %g; lumen's unit is minutes, which makes this a %.1f-h "
                         "acquisition. In seconds? pass time_unit='s' (lumen converts: %g min); minutes indeed? "
                         "pass time_unit='min'" % (span, span / 60.0, span / 60.0))
    return x


class FitPlan(object):
    """A lumen_fit_plan: model, sample grid, AIF and options fixed once; execute() fits batches.

    FitPlan(model, times, aif=None, *, starts=None, bounds=None, bounds_preset="physical",
            fixed=None, weights=None,
            tolerance=None, max_iterations=None, backend="auto", precision=None, conv=None,
            linear_start=True, confidence=True, n_starts=None, fit_delay=False,
            rocketship_names=False, force_cpu=False, tr=None, r1=None, auc_window=None,
            auc_t0=None, hematocrit=None, aif_delay=0.0)

    times: the sample grid in the C API's units: minutes for the DCE models, flip angles in
    radians for vfa*, inversion / recovery times in seconds for ir / sr. aif: plasma
    concentration (mM) at the times, or a population AIF name ("parker", ...; then hematocrit
    and aif_delay apply). starts / bounds / fixed: by FIT parameter name (dict) or position
    (sequence); bounds are (lo, hi) pairs, None or NaN = the model's default, +-inf = unbounded;
    a 'delay' entry in bounds sets the delay bounds (minutes). bounds_preset: the default bounds,
    "physical" (Ktrans [0, 5] /min, ve [1e-4, 1], vp [0, 1], ...) or "rocketship"
    (ROCKETSHIP's: Ktrans [1e-7, 2], ve [0.02, 1], vp [0.001, 1], ...); bounds override it.
    fixed: {name: value} holds a parameter at value, or a sequence of flags holds parameters at
    their starts. Values in a likely wrong unit raise ValueError naming it (flip angles above pi:
    degrees?; a vfa tr outside 0.0005..0.1 s: ms?; an fxr r1 outside 1..50 1/(mM s)).

    time_unit ("min" or "s") and angle_unit ("rad" or "deg") say the unit of times explicitly;
    lumen converts to its own (minutes for DCE, radians for vfa*). Without them a DCE grid that
    spans more than 60 (a 1-h acquisition in minutes; seconds, most likely) or flip angles above
    pi/2 (degrees, most likely) raise ValueError asking for the unit (docs/BINDINGS.md "Units").
    """

    def __init__(self, model, times, aif=None, *, starts=None, bounds=None, bounds_preset="physical",
                 fixed=None, weights=None,
                 tolerance=None, max_iterations=None, backend="auto", precision=None, conv=None,
                 linear_start=True, confidence=True, n_starts=None, fit_delay=False,
                 rocketship_names=False, force_cpu=False, tr=None, r1=None, auc_window=None,
                 auc_t0=None, hematocrit=None, aif_delay=0.0, threads=None, time_unit=None, angle_unit=None):
        self._plan = None
        m = _model_id(model)
        info = model_info(m)
        self.model = info["model"]
        self.model_id = m
        self.param_names = [p["name"] for p in info["params"]]
        self.fit_param_names = info["fit_params"]
        self.derived_names = [d["name"] for d in info["derived"]]
        self.threads = threads
        x = _grid_in_lumen_units(self.model, _vector("times", times), time_unit, angle_unit)
        n = x.size
        if n < 1:
            raise ValueError("times: expected at least one sample")
        self.times = x
        self.n_points = n

        box = _default_options()
        o = box.o
        o.model = m
        if tolerance is not None:
            o.tolerance = float(tolerance)
        if max_iterations is not None:
            if int(max_iterations) != max_iterations:
                raise TypeError("max_iterations: expected an integer, got %r" % (max_iterations,))
            o.max_iterations = int(max_iterations)
        names = self.fit_param_names
        o.bounds_preset = _enum_index(bounds_preset if bounds_preset is not None else "physical",
                                      lib.lumen_fit_bounds_preset_name, "bounds_preset")
        self.bounds_preset = _lib.FIT_BOUNDS_PRESET_NAMES[o.bounds_preset]
        for k, v in _items(starts, names, "starts"):
            if v is not None:
                o.start[k] = float(v)
        if isinstance(bounds, dict) and "delay" in bounds:
            bounds = dict(bounds)
            dl, dh = bounds.pop("delay")
            o.delay_lo, o.delay_hi = float(dl), float(dh)
        for k, v in _items(bounds, names, "bounds"):
            if v is None:
                continue
            try:
                lo, hi = v
            except (TypeError, ValueError):
                raise ValueError("bounds: expected (lo, hi) for %s, got %r" % (names[k], v))
            if lo is not None:
                o.lo[k] = _bound(lo)
            if hi is not None:
                o.hi[k] = _bound(hi)
        if isinstance(fixed, dict):
            for k, v in _items(fixed, names, "fixed"):
                o.fixed[k] = 1
                if v is not None and v is not True:
                    o.start[k] = float(v)
        elif isinstance(fixed, (list, tuple, np.ndarray)) and len(fixed) and isinstance(
                list(fixed)[0], str):
            for name in fixed:
                o.fixed[_param_index(names, name, "fixed")] = 1
        else:
            for k, v in _items(fixed, names, "fixed"):
                o.fixed[k] = 1 if v else 0
        self._weights = None
        if weights is not None:
            self._weights = _vector("weights", weights, n)
            o.weights = self._weights.ctypes.data_as(P(c_double))
        if precision is not None:
            o.precision = _enum_index(precision, lib.lumen_fit_precision_name, "precision")
        if conv is not None:
            o.conv = _enum_index(conv, lib.lumen_fit_conv_name, "conv")
        o.linear_start = 1 if linear_start else 0
        o.confidence = 1 if confidence else 0
        if n_starts is not None:
            o.n_starts = int(n_starts)
        o.fit_delay = 1 if fit_delay else 0
        self._backend = cstr(backend if backend is not None else "auto")
        o.backend = self._backend
        o.rocketship_names = 1 if rocketship_names else 0
        o.force_cpu = 1 if force_cpu else 0
        if tr is not None:
            o.tr = float(tr)
        if r1 is not None:
            o.r1 = float(r1)
        if auc_window is not None:
            o.auc_window = float(auc_window)
        if auc_t0 is not None:
            o.auc_t0 = float(auc_t0)
        self.confidence = bool(confidence)
        self.fit_delay = bool(fit_delay)

        cp = None
        if isinstance(aif, str):
            cp = population_aif(aif, x, hematocrit=hematocrit, delay=aif_delay)
        elif aif is not None:
            cp = _vector("aif", aif, n)
        self.aif = cp
        self._box = box
        ctx = context()
        self._apply_threads(ctx)
        h = c_void_p()
        st = lib.lumen_fit_plan_create(ctx, ctypes.byref(box), n, x.ctypes.data_as(P(c_double)),
                                       cp.ctypes.data_as(P(c_double)) if cp is not None else None,
                                       ctypes.byref(h))
        check(st, "lumen_fit_plan_create", ctx)
        self._plan = h
        self._destroy = lib.lumen_fit_plan_destroy

    def _apply_threads(self, ctx):
        t = 0 if self.threads is None else int(self.threads)
        check(lib.lumen_ctx_set_threads(ctx, t), "lumen_ctx_set_threads", ctx)

    @property
    def backend_requested(self):
        return pystr(lib.lumen_fit_plan_backend_requested(self._plan))

    @property
    def backend_selected(self):
        return pystr(lib.lumen_fit_plan_backend_selected(self._plan))

    @property
    def backend_reason(self):
        return pystr(lib.lumen_fit_plan_backend_reason(self._plan))

    def close(self):
        if self._plan is not None:
            self._destroy(self._plan)
            self._plan = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def execute(self, data, consts=None, r10=None, b1=None):
        """Fits data (n_curves, n_points), float32 (lumen_fit_execute) or float64
        (lumen_fit_execute_f64), C-contiguous. consts: (n_curves, 2) per-curve constants in the
        data's dtype (column 0 fxr's pre-contrast R1 in 1/s, column 1 the vfa B1 scale), or r10= /
        b1= as a scalar or one value per curve."""
        if self._plan is None:
            raise ValueError("execute: the plan is closed")
        data = _check_data(data, self.n_points)
        nc = data.shape[0]
        dt = data.dtype
        c = _consts(consts, r10, b1, nc, dt)
        npub = len(self.param_names)
        nd = len(self.derived_names)
        res = FitResult()
        res.model = self.model
        res.param_names = list(self.param_names)
        res.derived_names = list(self.derived_names)
        res.params = np.empty((nc, npub), dtype=np.float64)
        res.states = np.empty(nc, dtype=np.int32)
        res.derived = np.empty((nc, nd), dtype=np.float64)
        res.chi2 = np.empty(nc, dtype=np.float64)
        res.r2 = np.empty(nc, dtype=np.float64)
        res.iterations = np.empty(nc, dtype=np.int32)
        res.ci_lo = np.empty((nc, npub), dtype=np.float64) if self.confidence else None
        res.ci_hi = np.empty((nc, npub), dtype=np.float64) if self.confidence else None
        res.delay = np.empty(nc, dtype=np.float64) if self.fit_delay else None
        res.bound_mask = np.empty(nc, dtype=np.int32)
        res.fit_param_names = list(self.fit_param_names)
        res.bounds_preset = self.bounds_preset
        box = _FitResultsBox()
        r = box.r
        pd = P(c_double)
        r.params = res.params.ctypes.data_as(pd)
        r.state = res.states.ctypes.data_as(P(c_int32))
        r.derived = res.derived.ctypes.data_as(pd) if nd else None
        r.chi2 = res.chi2.ctypes.data_as(pd)
        r.r2 = res.r2.ctypes.data_as(pd)
        r.iterations = res.iterations.ctypes.data_as(P(c_int32))
        if self.confidence:
            r.ci_lo = res.ci_lo.ctypes.data_as(pd)
            r.ci_hi = res.ci_hi.ctypes.data_as(pd)
        if self.fit_delay:
            r.delay = res.delay.ctypes.data_as(pd)
        r.bound_mask = res.bound_mask.ctypes.data_as(P(c_int32))
        ctx = context()
        self._apply_threads(ctx)
        fn = lib.lumen_fit_execute if dt == np.float32 else lib.lumen_fit_execute_f64
        st = fn(ctx, self._plan, nc, data.ctypes.data, c.ctypes.data if c is not None else None,
                ctypes.byref(box))
        check(st, fn.__name__, ctx)
        res.backend_requested = pystr(r.backend_requested)
        res.backend_selected = pystr(r.backend_selected)
        res.backend_used = pystr(r.backend_used)
        res.reason = pystr(r.reason)
        res.curves_per_tier = {name: int(r.curves_per_tier[i]) for i, name in enumerate(_lib.FIT_TIER_NAMES)}
        res.state_counts = {name: int(r.state_counts[i]) for i, name in enumerate(_lib.FIT_STATE_NAMES)}
        res.at_lower = {name: int(r.at_lower[k]) for k, name in enumerate(self.fit_param_names)}
        res.at_upper = {name: int(r.at_upper[k]) for k, name in enumerate(self.fit_param_names)}
        res.seconds = float(r.seconds)
        res.kernel_seconds = float(r.kernel_seconds)
        return res


def _check_data(data, n_points):
    if not isinstance(data, np.ndarray):
        try:
            data = np.asarray(data, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError("data: expected a 2-D numpy array (n_curves, n_points) of float32 or float64")
    if data.dtype not in (np.float32, np.float64):
        raise TypeError("data: dtype %s is not supported, expected float32 or float64 "
                        "(convert with data.astype(np.float32))" % data.dtype)
    if data.ndim != 2:
        raise ValueError("data: expected a 2-D array (n_curves, n_points), got shape %s%s"
                         % (data.shape, " (one curve: data[None, :])" if data.ndim == 1 else ""))
    if data.shape[1] != n_points:
        raise ValueError("data: %d points per curve, but times has %d samples" % (data.shape[1], n_points))
    if not data.flags.c_contiguous:
        raise ValueError("data: the array is not C-contiguous (row-major); lumen reads it without "
                         "copying: pass np.ascontiguousarray(data)")
    if not data.flags.aligned:
        raise ValueError("data: the array is not aligned; pass np.ascontiguousarray(data)")
    return data


def _consts(consts, r10, b1, nc, dt):
    if consts is not None:
        if r10 is not None or b1 is not None:
            raise ValueError("give either consts or r10= / b1=, not both")
        c = consts if isinstance(consts, np.ndarray) else np.asarray(consts, dtype=dt)
        if c.dtype != dt:
            raise TypeError("consts: dtype %s, expected %s like data" % (c.dtype, np.dtype(dt).name))
        if c.shape != (nc, _NCONSTS):
            raise ValueError("consts: expected shape (%d, %d) (n_curves, [r10, b1]), got %s"
                             % (nc, _NCONSTS, c.shape))
        if not c.flags.c_contiguous:
            raise ValueError("consts: the array is not C-contiguous; pass np.ascontiguousarray(consts)")
        return c
    if r10 is None and b1 is None:
        return None
    c = np.empty((nc, _NCONSTS), dtype=dt)
    c[:, CONST_R10] = 1.0 if r10 is None else np.broadcast_to(np.asarray(r10, dtype=dt), (nc,))
    c[:, CONST_B1] = 1.0 if b1 is None else np.broadcast_to(np.asarray(b1, dtype=dt), (nc,))
    return c


def fit(model, data, times, aif=None, *, consts=None, r10=None, b1=None, **options):
    """Fits every row of data (n_curves, n_points) with model and returns a FitResult.

    lumen.fit("tofts", conc, t_min, aif=cp)                      # DCE: times in minutes, cp in mM
    lumen.fit("tofts", conc, t_s, aif=cp, time_unit="s")         # or say the unit: seconds converted
    lumen.fit("vfa", signal, np.deg2rad([2, 5, 10, 15]), tr=0.005)  # T1: flip angles in radians
    lumen.fit("vfa", signal, [2, 5, 10, 15], tr=0.005, angle_unit="deg")
    Options are FitPlan's (starts, bounds, bounds_preset="physical" or "rocketship", fixed,
    weights, tolerance, max_iterations, backend, precision, conv, fit_delay, ...). Errors raise lumen.LumenError (ValueError for invalid
    arguments) carrying the C library's message."""
    with FitPlan(model, times, aif, **options) as plan:
        return plan.execute(data, consts=consts, r10=r10, b1=b1)
