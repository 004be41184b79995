"""Loading liblumen, the ctypes prototypes of the public C API, errors and per-thread contexts.

Nothing here retypes an enum value of the library: names and counts are read from the C
functions (lumen_model_name, lumen_fit_state_name, ...). Only the layouts of the C structs are
written out (ctypes needs them); lumen_fit_options is checked against lumen_fit_options_init's
defaults when the library is loaded, so a drifted header is caught at import, not by a crash.
"""
import ctypes
import ctypes.util
import operator
import glob
import logging
import os
import sys
import threading

__all__ = ["lib", "library_path", "LumenError", "check", "context", "cstr", "pystr"]

_log = logging.getLogger("lumen")
_log.addHandler(logging.NullHandler())  # the library's log messages reach Python logging; silent by default

# ---------------------------------------------------------------------------- loading


def _candidates():
    """(path, where) pairs to try. LUMEN_LIBRARY, when set, is a developer's explicit choice: it wins
    over the library inside the package and is the only one tried, so a wrong path fails loudly
    instead of silently loading another build."""
    names = ["liblumen.so", "liblumen.so.0", "liblumen.dylib"]
    env = os.environ.get("LUMEN_LIBRARY")
    if env:
        if os.path.isdir(env):
            for n in names:
                yield os.path.join(env, n), "LUMEN_LIBRARY"
        else:
            yield env, "LUMEN_LIBRARY"
        return
    here = os.path.dirname(os.path.abspath(__file__))
    beside = [os.path.join(here, n) for n in names]
    beside += sorted(glob.glob(os.path.join(here, "liblumen.so.*")))
    for p in beside:
        if os.path.isfile(p):
            yield p, "beside the package"
    found = ctypes.util.find_library("lumen")
    if found:
        yield found, "system library path"
    for n in names:
        yield n, "system library path"


def _load():
    # OpenMP's idle threads sleep rather than spin (docs/BENCHMARKS.md "shared cores"): libgomp
    # reads OMP_WAIT_POLICY when it is loaded, which liblumen does now, unless the process loaded
    # it before; a value the user set wins. Other OpenMP libraries loaded later see it too.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    tried = []
    for path, where in _candidates():
        try:
            handle = ctypes.CDLL(path)
        except OSError as exc:
            tried.append("%s (%s): %s" % (path, where, exc))
            continue
        if not hasattr(handle, "lumen_fit_plan_create"):
            tried.append("%s (%s): not a lumen library (no lumen_fit_plan_create)" % (path, where))
            continue
        return handle, path, where
    if os.environ.get("LUMEN_LIBRARY"):
        hint = ("LUMEN_LIBRARY is set, so only it was tried: point it at a liblumen.so (file or folder), "
                "or unset it to use the library inside the package.")
    else:
        hint = ("Looked beside the package and on the system library path. Install with `pip install .` "
                "at the lumen repository root (builds the library into the package), run ./install.sh, "
                "or set LUMEN_LIBRARY=/path/to/build/liblumen.so.")
    raise ImportError("lumen: cannot load the shared library liblumen.so.\n  "
                      + "\n  ".join(tried or ["nothing found"]) + "\n" + hint)


lib, _path, _where = _load()


def library_path():
    """The file the binding loaded, and where it was found."""
    return _path


def library_source():
    return _where


# ---------------------------------------------------------------------------- helpers

c_int = ctypes.c_int
c_int32 = ctypes.c_int32
c_int64 = ctypes.c_int64
c_double = ctypes.c_double
c_float = ctypes.c_float
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
c_size_t = ctypes.c_size_t
P = ctypes.POINTER


def cstr(s):
    if s is None:
        return None
    if isinstance(s, bytes):
        return s
    return str(s).encode("utf-8")


def pystr(b):
    if b is None:
        return None
    if isinstance(b, (bytes, bytearray)):
        return bytes(b).split(b"\0", 1)[0].decode("utf-8", "replace")
    return str(b)


def _proto(name, restype, *argtypes, optional=False):
    try:
        f = getattr(lib, name)
    except AttributeError:
        if optional:
            return None
        raise ImportError("lumen: %s does not export %s (library and binding out of step?)" % (_path, name))
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


# ---------------------------------------------------------------------------- core prototypes

_proto("lumen_status_string", c_char_p, c_int)
_proto("lumen_status_name", c_char_p, c_int)
_proto("lumen_ctx_create", c_int, P(c_void_p))
_proto("lumen_ctx_destroy", None, c_void_p)
_proto("lumen_ctx_last_error", c_char_p, c_void_p)
_proto("lumen_ctx_last_status", c_int, c_void_p)
_proto("lumen_ctx_clear_error", None, c_void_p)
LOG_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_char_p)
_proto("lumen_ctx_set_log", c_int, c_void_p, LOG_FN, c_void_p, c_int)
_proto("lumen_ctx_set_threads", c_int, c_void_p, c_int)
_proto("lumen_ctx_set_cpu_simd", c_int, c_void_p, c_int)
_proto("lumen_ctx_threads", c_int, c_void_p)
_proto("lumen_ctx_set_default_device", c_int, c_void_p, c_char_p)
_proto("lumen_ctx_set_default_precision", c_int, c_void_p, c_int)
_proto("lumen_version", c_char_p)
_proto("lumen_build_info", c_char_p)

# precision.h
_proto("lumen_dtype_name", c_char_p, c_int)
_proto("lumen_dtype_parse", c_int, c_char_p, P(c_int))
_proto("lumen_dtype_size", c_size_t, c_int)
_proto("lumen_precision_name", c_char_p, c_int)
_proto("lumen_precision_parse", c_int, c_char_p, P(c_int))
_proto("lumen_precision_dtype", c_int, c_int)

# models.h, fit_state.h, fit.h
_proto("lumen_model_name", c_char_p, c_int)
_proto("lumen_model_parse", c_int, c_char_p, P(c_int))
_proto("lumen_model_param_count", c_int, c_int)
_proto("lumen_model_flags_of", c_int, c_int)
_proto("lumen_model_param_name", c_char_p, c_int, c_int)
_proto("lumen_model_param_unit", c_char_p, c_int, c_int)
_proto("lumen_model_param_defaults", c_int, c_int, c_int, P(c_double), P(c_double), P(c_double))
_proto("lumen_model_param_defaults_preset", c_int, c_int, c_int, c_int, P(c_double), P(c_double), P(c_double))
_proto("lumen_fit_state_name", c_char_p, c_int)
_proto("lumen_fit_state_has_values", c_int, c_int)
_proto("lumen_fit_bounds_preset_name", c_char_p, c_int)
_proto("lumen_fit_tier_name", c_char_p, c_int)
_proto("lumen_fit_backend_parse", c_int, c_void_p, c_char_p, c_int, c_char_p, c_size_t)
_proto("lumen_fit_precision_name", c_char_p, c_int)
_proto("lumen_fit_conv_name", c_char_p, c_int)
_proto("lumen_fit_param_count", c_int, c_int)
_proto("lumen_fit_param_name", c_char_p, c_int, c_int)
_proto("lumen_fit_derived_count", c_int, c_int)
_proto("lumen_fit_derived_name", c_char_p, c_int, c_int)
_proto("lumen_fit_derived_unit", c_char_p, c_int, c_int)
_proto("lumen_fit_options_init", None, c_void_p)
_proto("lumen_fit_plan_create", c_int, c_void_p, c_void_p, c_int, P(c_double), P(c_double), P(c_void_p))
_proto("lumen_fit_plan_destroy", None, c_void_p)
_proto("lumen_fit_plan_backend_requested", c_char_p, c_void_p)
_proto("lumen_fit_plan_backend_selected", c_char_p, c_void_p)
_proto("lumen_fit_plan_backend_reason", c_char_p, c_void_p)
_proto("lumen_fit_execute", c_int, c_void_p, c_void_p, c_int64, c_void_p, c_void_p, c_void_p)
_proto("lumen_fit_execute_f64", c_int, c_void_p, c_void_p, c_int64, c_void_p, c_void_p, c_void_p)

# aif.h
_proto("lumen_aif_name", c_char_p, c_int)
_proto("lumen_aif_parse", c_int, c_char_p, P(c_int))
_proto("lumen_aif_options_init", None, c_void_p)
_proto("lumen_aif_population", c_int, c_void_p, c_void_p, c_int64, P(c_double), P(c_double))

# device.h, health.h
_proto("lumen_cuda_built", c_int)
_proto("lumen_cuda_probe", c_int, c_void_p, P(c_int), c_char_p, c_size_t)
_proto("lumen_cuda_versions", c_int, c_void_p, P(c_int), P(c_int))
_proto("lumen_check_status_name", c_char_p, c_int)


# ---------------------------------------------------------------------------- enum reading


_INT_CODES = "bBhHiIlLqQ"


class CheckedStructure(ctypes.Structure):
    """A ctypes Structure whose integer fields refuse a value outside their C type's range with an
    OverflowError naming the field and the range: plain ctypes wraps it silently (size=2**32+3
    was size=3, bins=2**40 was bins=0)."""

    def __setattr__(self, name, value):
        for fname, ftype in type(self)._fields_:
            if fname != name:
                continue
            code = getattr(ftype, "_type_", None)
            if isinstance(code, str) and code in _INT_CODES and not isinstance(value, bool):
                try:
                    v = operator.index(value)
                except TypeError:
                    break  # not an integer: ctypes says what is wrong
                bits = 8 * ctypes.sizeof(ftype)
                lo, hi = ((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if code.islower()
                          else (0, (1 << bits) - 1))
                if not lo <= v <= hi:
                    raise OverflowError("%s=%d is out of range: expected %d..%d" % (name, v, lo, hi))
            break
        super().__setattr__(name, value)


def opts_from_init(cls, init, header, mirror):
    """An options struct as the C function init (lumen_X_opts_init) fills it, in a buffer with a
    canary tail: a C struct grown past the binding's mirror cls is an ImportError naming the
    header and the mirror module, not a silent overwrite."""
    canary, slack = 0xA5, 256
    n = ctypes.sizeof(cls)
    buf = bytearray([canary]) * (n + slack)
    opts = cls.from_buffer(buf)
    getattr(lib, init)(ctypes.byref(opts))
    if any(b != canary for b in buf[n:]):
        raise ImportError("lumen: %s wrote past the binding's %d-byte mirror of its struct: "
                          "%s and %s are out of step" % (init, n, header, mirror))
    return opts


def enum_names(fn, limit=256):
    """Names fn(0), fn(1), ... up to the first "unknown" (or NULL): the C enum, read from C."""
    out = []
    for i in range(limit):
        s = fn(i)
        if s is None:
            break
        s = s.decode()
        if s in ("unknown", "unknown status"):
            break
        out.append(s)
    return out


STATUS_NAMES = enum_names(lib.lumen_status_name)
FIT_STATE_NAMES = enum_names(lib.lumen_fit_state_name)
FIT_TIER_NAMES = enum_names(lib.lumen_fit_tier_name)
FIT_BOUNDS_PRESET_NAMES = enum_names(lib.lumen_fit_bounds_preset_name)
CHECK_STATUS_NAMES = enum_names(lib.lumen_check_status_name)


def status_code(name):
    """The numeric lumen_status of a name such as "invalid_argument" (read from the library)."""
    return STATUS_NAMES.index(name)


# ---------------------------------------------------------------------------- errors


class LumenError(RuntimeError):
    """A lumen call failed. .status (int), .status_name ("invalid_argument", ...) and .message
    (the C library's lumen_ctx_last_error text) describe it."""

    def __init__(self, status, message, function=None):
        self.status = int(status)
        self.status_name = pystr(lib.lumen_status_name(self.status))
        self.message = message or pystr(lib.lumen_status_string(self.status))
        self.function = function
        RuntimeError.__init__(self, "%s [%s]" % (self.message, self.status_name))


class LumenInvalidArgument(LumenError, ValueError):
    """LUMEN_ERR_INVALID_ARGUMENT: also a ValueError."""


class LumenDeviceError(LumenError):
    """No device, device out of memory, CUDA error or CUDA not built."""


class LumenMemoryError(LumenError, MemoryError):
    """Host or device out of memory."""


_DEVICE_STATUSES = {"no_device", "device_error", "not_built", "device_out_of_memory"}


def error_for(status, message, function=None):
    name = pystr(lib.lumen_status_name(int(status)))
    if name == "invalid_argument":
        cls = LumenInvalidArgument
    elif name in ("out_of_memory",):
        cls = LumenMemoryError
    elif name in _DEVICE_STATUSES:
        cls = LumenDeviceError
    else:
        cls = LumenError
    return cls(status, message, function)


# ---------------------------------------------------------------------------- contexts

_LOG_LEVELS = [logging.ERROR, logging.WARNING, logging.INFO, logging.DEBUG]


@LOG_FN
def _log_cb(user, level, message):  # called from C, possibly from worker threads
    try:
        pylevel = _LOG_LEVELS[level] if 0 <= level < len(_LOG_LEVELS) else logging.INFO
        _log.log(pylevel, "%s", pystr(message))
    except Exception:  # never let an exception cross into C
        pass


# lumen_cpu_simd (context.h) by the names LUMEN_SIMD takes
_CPU_SIMD = {"auto": 0, "off": 1, "scalar": 1, "0": 1, "avx2": 2, "avx512": 3}


class _Ctx(object):
    """One lumen_ctx. The binding keeps one per Python thread (error messages are per context)."""

    def __init__(self):
        h = c_void_p()
        st = lib.lumen_ctx_create(ctypes.byref(h))
        if st != 0:
            raise error_for(st, "lumen_ctx_create failed", "lumen_ctx_create")
        self.handle = h
        # log WARNING and above to the "lumen" logger (level WARNING = 1, read from context.h's order)
        lib.lumen_ctx_set_log(h, _log_cb, None, 1)
        # LUMEN_SIMD=off|avx2|avx512|auto caps the CPU vector instructions, as for the command line
        simd = os.environ.get("LUMEN_SIMD", "")
        if simd:
            if simd not in _CPU_SIMD:
                raise ValueError("LUMEN_SIMD is %r in the environment, expected off, avx2, avx512 or auto" % simd)
            lib.lumen_ctx_set_cpu_simd(h, _CPU_SIMD[simd])

    def __del__(self):
        h = getattr(self, "handle", None)
        if h is not None and lib is not None:
            try:
                lib.lumen_ctx_destroy(h)
            except Exception:
                pass
            self.handle = None


_tls = threading.local()


def context_obj():
    """This thread's context object (keep a reference to it to keep its lumen_ctx alive)."""
    c = getattr(_tls, "ctx", None)
    if c is None:
        c = _tls.ctx = _Ctx()
    return c


def context():
    """This thread's lumen_ctx handle."""
    return context_obj().handle


def check(status, function, ctx=None):
    """Raises the LumenError of a failed call, carrying the context's last-error message."""
    if status == 0:
        return
    msg = ""
    if ctx is not None:
        msg = pystr(lib.lumen_ctx_last_error(ctx)) or ""
        lib.lumen_ctx_clear_error(ctx)
    if not msg:
        msg = "%s: %s" % (function, pystr(lib.lumen_status_string(status)))
    raise error_for(status, msg, function)


def version():
    """The C library's version string."""
    return pystr(lib.lumen_version())


def build_info():
    """One line describing what the loaded library was built with."""
    return pystr(lib.lumen_build_info())
