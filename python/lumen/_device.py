"""Devices, device contexts, health checks and the gpu_safe decorator (include/lumen/device.h,
include/lumen/health.h)."""
import ctypes
import functools
import logging
import warnings

from . import _lib
from ._lib import lib, check, context, cstr, pystr, P, c_int, c_int64, c_void_p

__all__ = ["cuda_available", "cuda_probe", "backends", "devices", "DeviceContext", "gpu_safe",
           "memory_stats"]

_log = logging.getLogger("lumen")

_DEVICE_NAME_MAX = 256   # LUMEN_DEVICE_NAME_MAX
_CHECK_NAME_MAX = 48     # LUMEN_CHECK_NAME_MAX
_CHECK_DETAIL_MAX = 400  # LUMEN_CHECK_DETAIL_MAX
_DEVICE_KINDS = ("cpu", "cuda")  # lumen_device_kind order; names come from lumen_device_format


class _Device(ctypes.Structure):
    _fields_ = [("kind", c_int), ("index", c_int)]


class _DeviceInfo(ctypes.Structure):
    _fields_ = [("device", _Device), ("name", ctypes.c_char * _DEVICE_NAME_MAX),
                ("memory_total", c_int64), ("memory_free", c_int64),
                ("compute_major", c_int), ("compute_minor", c_int), ("multiprocessors", c_int)]


class _MemoryStats(ctypes.Structure):
    _fields_ = [("device", _Device), ("allocated", c_int64), ("free", c_int64), ("total", c_int64)]


class _Check(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * _CHECK_NAME_MAX), ("status", c_int),
                ("detail", ctypes.c_char * _CHECK_DETAIL_MAX)]


def _p(name, restype, *args):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(args)
    return f


_p("lumen_device_parse", c_int, c_void_p, ctypes.c_char_p, P(_Device))
_p("lumen_device_format", c_int, _Device, ctypes.c_char_p, ctypes.c_size_t)
_p("lumen_devices_list", c_int, c_void_p, P(_DeviceInfo), c_int, P(c_int))
_p("lumen_device_ctx_open", c_int, c_void_p, ctypes.c_char_p, ctypes.c_char_p, P(c_void_p))
_p("lumen_device_ctx_device", _Device, c_void_p)
_p("lumen_device_ctx_fell_back", c_int, c_void_p)
_p("lumen_device_ctx_memory", c_int, c_void_p, P(_MemoryStats))
_p("lumen_device_ctx_release_cache", c_int, c_void_p)
_p("lumen_device_ctx_close", None, c_void_p)
_p("lumen_device_memory", c_int, c_void_p, _Device, P(_MemoryStats))
_p("lumen_health_checks", c_int, c_void_p, P(_Check), c_int, P(c_int))


def _device_name(dev):
    buf = ctypes.create_string_buffer(64)
    lib.lumen_device_format(dev, buf, 64)
    return pystr(buf.value)


def _parse_device(text):
    ctx = context()
    d = _Device()
    check(lib.lumen_device_parse(ctx, cstr(text), ctypes.byref(d)), "lumen_device_parse", ctx)
    return d


_probe_logged = False


def cuda_probe():
    """(available, device_count, reason): lumen_cuda_probe. Never raises for a missing GPU.

    A machine without a GPU is normal, not an error: the failed probe is logged once per process
    on the "lumen" logger at INFO level (the library's own ERROR log of it is muted)."""
    global _probe_logged
    ctx = context()
    n = c_int(0)
    buf = ctypes.create_string_buffer(512)
    lib.lumen_ctx_set_log(ctx, _lib.LOG_FN(), None, 0)  # a NULL callback: no log
    try:
        st = lib.lumen_cuda_probe(ctx, ctypes.byref(n), buf, 512)
    finally:
        lib.lumen_ctx_set_log(ctx, _lib._log_cb, None, 1)  # as _lib._Ctx sets it
    lib.lumen_ctx_clear_error(ctx)
    avail = st == 0 and n.value > 0
    reason = pystr(buf.value)
    if not avail and not _probe_logged:
        _probe_logged = True
        _log.info("CUDA not available, lumen runs on the CPU: %s", reason)
    return avail, int(n.value) if st == 0 else 0, reason


def cuda_available():
    """True when this build has CUDA and at least one usable CUDA device (pygpufit's name)."""
    return cuda_probe()[0]


def cuda_built():
    """True when the loaded library contains CUDA code."""
    return bool(lib.lumen_cuda_built())


def _list_all(row_type, cap, list_fn, name):
    """The rows of a library list call list_fn(ctx, rows, capacity, &count), which counts the rows
    that did not fit: called again with room for all of them when cap was too small."""
    ctx = context()
    count = c_int(0)
    while True:
        rows = (row_type * cap)()
        check(list_fn(ctx, rows, cap, ctypes.byref(count)), name, ctx)
        if count.value <= cap:
            return rows[:count.value]
        cap = count.value


def backends():
    """The rows of `lumen backends` from the library: a list of dicts with name, status
    ("PASS", "FAIL", "SKIP") and detail."""
    rows = _list_all(_Check, 64, lib.lumen_health_checks, "lumen_health_checks")
    return [{"name": pystr(r.name), "status": pystr(lib.lumen_check_status_name(r.status)),
             "detail": pystr(r.detail)} for r in rows]


def devices():
    """The CPU and every usable CUDA device: name, memory (bytes), compute capability, SMs/cores."""
    out = []
    for i in _list_all(_DeviceInfo, 16, lib.lumen_devices_list, "lumen_devices_list"):
        out.append({"device": _device_name(i.device), "name": pystr(i.name),
                    "memory_total": int(i.memory_total), "memory_free": int(i.memory_free),
                    "compute_capability": (i.compute_major, i.compute_minor),
                    "multiprocessors": int(i.multiprocessors)})
    return out


def _stats_dict(s):
    return {"device": _device_name(s.device), "allocated": int(s.allocated), "free": int(s.free),
            "total": int(s.total)}


def memory_stats(device="cpu"):
    """Memory of a device without opening a context: allocated (by lumen), free, total (bytes)."""
    ctx = context()
    s = _MemoryStats()
    check(lib.lumen_device_memory(ctx, _parse_device(device), ctypes.byref(s)), "lumen_device_memory", ctx)
    return _stats_dict(s)


class DeviceContext(object):
    """Scopes work to a device and returns its cached memory to the driver when it ends.

    with lumen.DeviceContext("cuda:0") as dev:     # falls back to "cpu" (a logged warning) when
        print(dev.device, dev.memory_stats())     # cuda:0 cannot be used; fallback=None: raise
    """

    def __init__(self, device="cuda:0", fallback="cpu"):
        self.requested = device
        self._h = None
        self._ctxobj = _lib.context_obj()  # the device context keeps using this lumen_ctx
        ctx = self._ctxobj.handle
        h = c_void_p()
        st = lib.lumen_device_ctx_open(ctx, cstr(device), cstr(fallback) if fallback else None,
                                       ctypes.byref(h))
        check(st, "lumen_device_ctx_open", ctx)
        self._h = h
        self._close = lib.lumen_device_ctx_close
        self.device = _device_name(lib.lumen_device_ctx_device(h))
        self.fell_back = bool(lib.lumen_device_ctx_fell_back(h))
        if self.fell_back:
            warnings.warn("lumen.DeviceContext: %s is not usable, using %s" % (device, self.device),
                          RuntimeWarning, stacklevel=2)

    def memory_stats(self):
        """{"device", "allocated", "free", "total"} in bytes (allocated = held by lumen)."""
        self._live()
        s = _MemoryStats()
        check(lib.lumen_device_ctx_memory(self._h, ctypes.byref(s)), "lumen_device_ctx_memory",
              self._ctxobj.handle)
        return _stats_dict(s)

    def release_cache(self):
        """Returns cached device memory (CUDA's stream-ordered pool) to the driver."""
        self._live()
        check(lib.lumen_device_ctx_release_cache(self._h), "lumen_device_ctx_release_cache",
              self._ctxobj.handle)

    empty_cache = release_cache

    @property
    def is_cuda(self):
        return self.device.startswith("cuda")

    def _live(self):
        if self._h is None:
            raise ValueError("DeviceContext is closed")

    def close(self):
        h, self._h = getattr(self, "_h", None), None
        if h is not None:
            self._close(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return "DeviceContext(%r%s)" % (self.device, ", fell back from %r" % self.requested if self.fell_back else "")


# Statuses after which a GPU operation is retried on the CPU (the same set as filter.h's fallback).
_RETRY_STATUSES = ("device_out_of_memory", "device_error", "no_device", "not_built")


def gpu_safe(func=None, *, fallback="cpu", device_arg="device", retry_statuses=_RETRY_STATUSES):
    """Decorator: when the wrapped call fails on a GPU (lumen error with status
    device_out_of_memory, device_error, no_device or not_built), release the device's cached memory and
    run the call again once with device=fallback. Each fallback is logged (logger "lumen") and
    warned. Use as @lumen.gpu_safe or @lumen.gpu_safe(fallback="cpu", device_arg="device")."""

    def wrap(f):
        @functools.wraps(f)
        def inner(*args, **kwargs):
            try:
                return f(*args, **kwargs)
            except _lib.LumenError as exc:
                if exc.status_name not in retry_statuses:
                    raise
                dev = kwargs.get(device_arg)
                if dev is not None and str(dev) == fallback:
                    raise
                if dev is not None and str(dev).startswith("cuda"):
                    try:
                        with DeviceContext(str(dev), fallback=None) as d:
                            d.release_cache()
                    except _lib.LumenError:
                        pass
                msg = "%s failed on %s (%s: %s); rerunning on %s" % (
                    getattr(f, "__name__", "call"), dev or "the default device", exc.status_name,
                    exc.message, fallback)
                _log.warning("%s", msg)
                warnings.warn(msg, RuntimeWarning, stacklevel=2)
                kwargs[device_arg] = fallback
                return f(*args, **kwargs)
        inner.gpu_safe = True
        return inner

    if func is not None and callable(func):
        return wrap(func)
    return wrap
