"""pygpufit / pycpufit compatible entry points on lumen, so code written for ROCKETSHIP's Gpufit
fork switches by changing an import:

    import pygpufit.gpufit as gf            ->   import lumen.gpufit_compat as gf
    parameters, states, chi_squares, number_iterations, execution_time = gf.fit_constrained(
        data, None, gf.ModelID.TOFTS, initial_parameters, constraints=constraints,
        constraint_types=constraint_types, tolerance=1e-4, max_number_iterations=25,
        parameters_to_fit=None, estimator_id=gf.EstimatorID.LSE, user_info=user_info)

Arguments and results have pygpufit's shapes and types: data (n_fits, n_points) float32,
weights None or like data, initial_parameters (n_fits, n_parameters) float32, constraints
(n_fits, 2 n_parameters) float32 as (lo, hi) pairs, constraint_types (n_parameters,) int32,
parameters_to_fit (n_parameters,) int32 (0 = held at its initial value), user_info float32.

user_info (ROCKETSHIP's DCE layout): the n_points sample TIMES IN MINUTES followed by the
n_points PLASMA AIF values (mM), 2 n_points float32 values shared by every fit; or
n_fits x 2 n_points values (one such block per fit). lumen passes them to lumen_fit_plan_create
as x and cp.

Models: PATLAK (Ktrans, vp), TOFTS (Ktrans, ve), TOFTS_EXTENDED (Ktrans, ve, vp) and
TWO_COMPARTMENT_EXCHANGE in the fork's (E, ve, vp, Fp) parameterisation (E = Ktrans / Fp, which
is also lumen's fit parameterisation of 2cxm). TISSUE_UPTAKE and T1_FA_EXPONENTIAL raise: use
lumen.fit("2cum" / "vfa") for them. Differences from Gpufit, all documented in docs/BINDINGS.md:
- the convolution is Gpufit's trapezoid rule (conv="trapezoid") unless conv="exact" is given;
- fits sharing initial parameters, constraints, weights and user_info are fitted by one lumen
  plan; lumen's bounds and starts are per plan, so distinct rows make one plan each;
- states are lumen's (fit_states()): 0 converged, 1 max iterations, 2 singular as in Gpufit,
  then lumen's own (invalid input, start out of bounds, not finite, not fitted); lumen's
  at_bound (converged with a parameter on one of its constraints, values kept) is reported as
  0 converged, as Gpufit reports such fits;
- only the LSE estimator exists; FREE constraint sides are unbounded.
Extra keyword arguments: backend ("auto", "cuda", "cpu", "standard", ROCKETSHIP aliases),
conv, precision ("float32" / "float64").
"""
import time

import numpy as np

from . import _fit
from ._device import cuda_available as _cuda_available
from ._lib import LumenError

__all__ = ["ModelID", "EstimatorID", "ConstraintType", "Status", "FitState", "fit", "fit_constrained",
           "cuda_available", "get_last_error", "fit_state_name", "GpufitCompatError"]


_AT_BOUND = _fit.fit_states().index("at_bound")


class GpufitCompatError(RuntimeError):
    """Raised for arguments pygpufit would reject (it raises RuntimeError too)."""


class ModelID:
    """pygpufit's model numbers (ROCKETSHIP's Gpufit fork); only the DCE ones are served."""
    PATLAK = 17
    TOFTS = 18
    TOFTS_EXTENDED = 19
    TISSUE_UPTAKE = 20
    TWO_COMPARTMENT_EXCHANGE = 21
    T1_FA_EXPONENTIAL = 22


# Gpufit model number -> lumen model name (resolved through lumen_model_parse).
_MODELS = {ModelID.PATLAK: "patlak", ModelID.TOFTS: "tofts", ModelID.TOFTS_EXTENDED: "etofts",
           ModelID.TWO_COMPARTMENT_EXCHANGE: "2cxm"}
_UNSERVED = {ModelID.TISSUE_UPTAKE: "TISSUE_UPTAKE (use lumen.fit('2cum', ...): Ktrans, Fp, Tp)",
             ModelID.T1_FA_EXPONENTIAL: "T1_FA_EXPONENTIAL (use lumen.fit('vfa', ...))"}


class EstimatorID:
    LSE = 0
    MLE = 1


class ConstraintType:
    FREE = 0
    LOWER = 1
    UPPER = 2
    LOWER_UPPER = 3


class Status:
    Ok = 0
    Error = -1


class FitState:
    CONVERGED = 0
    MAX_ITERATION = 1
    SINGULAR_HESSIAN = 2


_last_error = ""


def get_last_error():
    """The message of the last failed call (pygpufit's name)."""
    return _last_error


def cuda_available():
    """True when lumen can use a CUDA device (pygpufit's name)."""
    return _cuda_available()


def fit_state_name(state):
    names = _fit.fit_states()
    s = int(state)
    return names[s] if 0 <= s < len(names) else "unknown"


def _fail(msg):
    global _last_error
    _last_error = msg
    raise GpufitCompatError(msg)


def _array(name, a, ndim, dtypes):
    if not isinstance(a, np.ndarray):
        _fail("%s: expected a numpy array" % name)
    if a.dtype not in dtypes:
        _fail("type of %s is not %s (got %s)" % (name, " or ".join(np.dtype(d).name for d in dtypes), a.dtype))
    if a.ndim != ndim:
        _fail("%s is not %d-dimensional (shape %s)" % (name, ndim, a.shape))
    if not a.flags.c_contiguous:
        _fail("Memory layout of %s array mismatch (not C-contiguous; use np.ascontiguousarray)" % name)
    return a


def fit(data, weights, model_id, initial_parameters, tolerance=None, max_number_iterations=None,
        parameters_to_fit=None, estimator_id=None, user_info=None, **lumen_options):
    """pygpufit.fit: fit_constrained without constraints."""
    return fit_constrained(data, weights, model_id, initial_parameters, constraints=None,
                           constraint_types=None, tolerance=tolerance,
                           max_number_iterations=max_number_iterations,
                           parameters_to_fit=parameters_to_fit, estimator_id=estimator_id,
                           user_info=user_info, **lumen_options)


def fit_constrained(data, weights, model_id, initial_parameters, constraints=None, constraint_types=None,
                    tolerance=None, max_number_iterations=None, parameters_to_fit=None,
                    estimator_id=None, user_info=None, backend="auto", conv="trapezoid",
                    precision=None, **_ignored):
    """pygpufit.fit_constrained on lumen. Returns (parameters float32 (n_fits, n_parameters),
    states int32, chi_squares float32, number_iterations int32, execution_time seconds)."""
    global _last_error
    t0 = time.perf_counter()
    data = _array("data", data, 2, (np.float32, np.float64))
    n_fits, n_points = data.shape
    if model_id in _UNSERVED:
        _fail("model %s is not served by lumen.gpufit_compat: %s" % (model_id, _UNSERVED[model_id]))
    if model_id not in _MODELS:
        _fail("Invalid model ID %r, use an attribute of ModelID (served: %s)"
              % (model_id, ", ".join("%s=%d" % (k, v) for k, v in vars(ModelID).items()
                                     if not k.startswith("_") and v in _MODELS)))
    model = _MODELS[model_id]
    info = _fit.model_info(model)
    n_par = len(info["fit_params"])
    ip = _array("initial_parameters", initial_parameters, 2, (np.float32, np.float64))
    if ip.shape != (n_fits, n_par):
        _fail("initial_parameters: expected shape (%d, %d) for %s (%s), got %s"
              % (n_fits, n_par, model, ", ".join(info["fit_params"]), ip.shape))
    if weights is not None:
        weights = _array("weights", weights, 2, (np.float32, np.float64))
        if weights.shape != data.shape:
            _fail("dimension mismatch between data and weights")
    if constraints is not None:
        constraints = _array("constraints", constraints, 2, (np.float32, np.float64))
        if constraints.shape != (n_fits, 2 * n_par):
            _fail("constraints array has invalid shape %s, expected (%d, %d)"
                  % (constraints.shape, n_fits, 2 * n_par))
    if constraint_types is None:
        constraint_types = np.full(n_par, ConstraintType.FREE, dtype=np.int32)
    constraint_types = np.asarray(constraint_types)
    if constraint_types.shape != (n_par,):
        _fail("constraint_types should have length of number of parameters (%d)" % n_par)
    if not np.all(np.isin(constraint_types, (0, 1, 2, 3))):
        _fail("Invalid constraint type, use an attribute of ConstraintType")
    if constraints is None and np.any(constraint_types != ConstraintType.FREE):
        _fail("constraint_types ask for bounds but constraints is None")
    if parameters_to_fit is None:
        parameters_to_fit = np.ones(n_par, dtype=np.int32)
    parameters_to_fit = np.asarray(parameters_to_fit)
    if parameters_to_fit.shape != (n_par,):
        _fail("dimension mismatch in number of parameters between initial_parameters and parameters_to_fit")
    if estimator_id not in (None, EstimatorID.LSE):
        _fail("estimator %r is not served: lumen fits least squares (EstimatorID.LSE) only" % (estimator_id,))
    if user_info is None:
        _fail("user_info is required for %s: the n_points times (minutes) then the n_points AIF values"
              % model)
    ui = np.asarray(user_info).ravel()
    if ui.size == 2 * n_points:
        ui_rows = None
    elif ui.size == 2 * n_points * n_fits:
        ui_rows = ui.reshape(n_fits, 2 * n_points)
    else:
        _fail("user_info has %d values, expected 2 x n_points = %d (times in minutes, then the AIF) "
              "or n_fits x 2 x n_points" % (ui.size, 2 * n_points))
    tolerance = 1e-4 if tolerance is None else float(tolerance)
    max_number_iterations = 25 if max_number_iterations is None else int(max_number_iterations)

    # group fits that share every per-fit input; each group is one lumen plan
    keys = [ip.astype(np.float64)]
    if constraints is not None:
        keys.append(constraints.astype(np.float64))
    if weights is not None:
        keys.append(weights.astype(np.float64))
    if ui_rows is not None:
        keys.append(ui_rows.astype(np.float64))
    key = np.concatenate(keys, axis=1)
    if n_fits == 0:
        groups = []
    elif np.all(key == key[0]) or np.array_equal(key, key[:1].repeat(n_fits, 0), equal_nan=True):
        groups = [(None, 0)]
    else:
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        groups = [(np.nonzero(inverse == g)[0], int(first[g])) for g in range(len(first))]

    parameters = np.zeros((n_fits, n_par), dtype=np.float32)
    states = np.zeros(n_fits, dtype=np.int32)
    chi_squares = np.zeros(n_fits, dtype=np.float32)
    number_iterations = np.zeros(n_fits, dtype=np.int32)
    try:
        for idx, row in groups:
            u = ui_rows[row] if ui_rows is not None else ui
            times = np.asarray(u[:n_points], dtype=np.float64)
            aif = np.asarray(u[n_points:], dtype=np.float64)
            bounds = []
            for k in range(n_par):
                ct = int(constraint_types[k])
                lo = float(constraints[row, 2 * k]) if ct in (1, 3) else -np.inf
                hi = float(constraints[row, 2 * k + 1]) if ct in (2, 3) else np.inf
                bounds.append((lo, hi))
            starts = []
            for k in range(n_par):
                s = float(ip[row, k])
                lo, hi = bounds[k]
                starts.append(min(max(s, lo), hi) if np.isfinite(s) else None)  # Gpufit projects into the box
            fixed = [0 if int(v) else 1 for v in parameters_to_fit]
            w = weights[row] if weights is not None else None
            plan = _fit.FitPlan(model, times, aif, starts=starts, bounds=bounds, fixed=fixed, weights=w,
                                tolerance=tolerance, max_iterations=max_number_iterations,
                                backend=backend, conv=conv, precision=precision, confidence=False)
            with plan:
                d = data if idx is None else np.ascontiguousarray(data[idx])
                res = plan.execute(d)
            p = res.params
            if model == "2cxm":  # the fork's (E, ve, vp, Fp): E is lumen's derived value "E"
                p = p.copy()
                p[:, 0] = res["E"]
            sel = slice(None) if idx is None else idx
            parameters[sel] = p
            states[sel] = np.where(res.states == _AT_BOUND, 0, res.states)  # Gpufit: converged
            chi_squares[sel] = res.chi2
            number_iterations[sel] = res.iterations
    except LumenError as exc:
        _last_error = exc.message
        raise
    _last_error = ""
    return parameters, states, chi_squares, number_iterations, time.perf_counter() - t0
