"""ctypes bindings of lumen's fused host primitives (include/lumen/filter.h, "fused host
primitives"; src/filter/cpu_scale_clamp.c, cpu_otsu_linspace.c, cpu_fcm_values.c,
cpu_butterworth.c), which the compat layer runs in place of several numpy passes: one threaded C
pass each, on float32 arrays.

available() is False when the loaded library predates them (has_bits_detect() and
has_butterworth() for the two added later); the callers then keep their numpy or lumen._segment
paths."""
import ctypes
from ctypes import POINTER, byref, c_double, c_int, c_int64, c_uint64, c_void_p

import numpy as np

from .._lib import lib, check, context_obj
from .._device import _Device
from .._image import _dtype_code


class _FcmValuesResult(ctypes.Structure):
    """lumen_fcm_values_result"""
    _fields_ = [("applicable", c_int), ("min", c_double), ("max", c_double), ("k", c_int),
                ("centers", c_double * 16), ("iterations", c_int), ("converged", c_int)]


def _bind(name, *argtypes):
    f = getattr(lib, name, None)
    if f is not None:
        f.restype = c_int
        f.argtypes = list(argtypes)
    return f


_range = _bind("lumen_filter_finite_range", c_void_p, c_void_p, POINTER(c_double), POINTER(c_double),
               POINTER(c_int64), POINTER(c_int))
_scale_clamp = _bind("lumen_filter_scale_clamp", c_void_p, c_void_p, c_double, c_double, c_double, c_void_p)
_otsu = _bind("lumen_filter_otsu_linspace", c_void_p, c_void_p, c_void_p, POINTER(c_double))
_fcm = _bind("lumen_filter_fcm_values", c_void_p, c_void_p, c_int, c_double, c_int, c_double, c_uint64,
             POINTER(c_int64), c_int64, POINTER(_FcmValuesResult))
_bits_detect = _bind("lumen_filter_normalize_bits_detect", c_void_p, c_void_p, c_double, c_void_p, POINTER(c_int))
_butterworth = _bind("lumen_filter_butterworth_kernel", c_void_p, c_int64, c_int64, c_double, c_double, c_int,
                     c_void_p)
_CODES = {np.dtype(np.float32): _dtype_code("float32"), np.dtype(np.uint8): _dtype_code("uint8")}
FCM_MAX_VALUES = 1 << 16  # integer data spanning more values take lumen_segment_fcm


def available():
    return None not in (_range, _scale_clamp, _otsu, _fcm)


def has_bits_detect():
    return available() and _bits_detect is not None


def has_butterworth():
    return available() and _butterworth is not None


class _Wrapped(object):
    """Host lumen_images over C-contiguous float32 / uint8 arrays (flat: the primitives are per
    voxel), freed on exit; the arrays must outlive the block."""

    def __init__(self, *arrays):
        self.ctx = context_obj().handle
        self.images = []
        self._arrays = arrays

    def __enter__(self):
        for a in self._arrays:
            img = c_void_p()
            dims = (c_int64 * 1)(a.size)
            try:
                check(lib.lumen_image_wrap(self.ctx, c_void_p(a.ctypes.data), 1, dims, _CODES[a.dtype], _Device(0, 0),
                                           byref(img)), "lumen_image_wrap", self.ctx)
            except Exception:
                self.__exit__(None, None, None)
                raise
            self.images.append(img)
        return self

    def __exit__(self, *exc):
        for img in self.images:
            lib.lumen_image_free(img)
        self.images = []
        return False


def _f32(a):
    return np.ascontiguousarray(a, np.float32)


def finite_range(a):
    """(min, max, finite count, integral) of the finite values of a (float32 view or copy)."""
    a = _f32(a)
    lo, hi, n, integral = c_double(), c_double(), c_int64(), c_int()
    with _Wrapped(a) as w:
        check(_range(w.ctx, w.images[0], byref(lo), byref(hi), byref(n), byref(integral)),
              "lumen_filter_finite_range", w.ctx)
    return lo.value, hi.value, n.value, bool(integral.value)


def scale_clamp(a, offset, scale, out_max):
    """clamp((a - offset) * scale, 0, 1) * out_max in float64, rounded to float32 (lumen.window's
    and lumen.normalize_bits' map): a new float32 array of a's shape."""
    a = _f32(a)
    out = np.empty(a.shape, np.float32)
    with _Wrapped(a, out) as w:
        check(_scale_clamp(w.ctx, w.images[0], float(offset), float(scale), float(out_max), w.images[1]),
              "lumen_filter_scale_clamp", w.ctx)
    return out


def normalize_bits_detect(a, out_max):
    """(clamp(a / (2^bits - 1), 0, 1) * out_max as scale_clamp gives it, bits) with bits 8 / 12 /
    16 from a's maximum (numpy's: NaN or +Inf give 16), the maximum found in the map's own pass."""
    a = _f32(a)
    out = np.empty(a.shape, np.float32)
    bits = c_int()
    with _Wrapped(a, out) as w:
        check(_bits_detect(w.ctx, w.images[0], float(out_max), w.images[1], byref(bits)),
              "lumen_filter_normalize_bits_detect", w.ctx)
    return out, bits.value


def butterworth_kernel(height, width, d0, w, order):
    """medical-image-std's Filters.butterworth_kernel: a new (height, width) float32 array."""
    out = np.empty((int(height), int(width)), np.float32)
    with _Wrapped(out) as wr:
        check(_butterworth(wr.ctx, int(height), int(width), float(d0), float(w), int(order), wr.images[0]),
              "lumen_filter_butterworth_kernel", wr.ctx)
    return out


def otsu_linspace(a, mask=True):
    """(threshold, uint8 mask of a > threshold or None): medical-image-std's Otsu."""
    a = _f32(a)
    m = np.empty(a.shape, np.uint8) if mask else None
    t = c_double()
    with _Wrapped(*((a, m) if mask else (a,))) as w:
        check(_otsu(w.ctx, w.images[0], w.images[1] if mask else None, byref(t)), "lumen_filter_otsu_linspace", w.ctx)
    return t.value, m


def fcm_values(a, c, m, max_iterations, tolerance, seed):
    """lumen_segment_fcm on the value counts of integer-valued a: (centres ascending, counts of
    the values lo .. hi, lo, iterations, converged), or None when a is not integer-valued and
    finite within FCM_MAX_VALUES values."""
    a = _f32(a)
    counts = np.zeros(FCM_MAX_VALUES, np.int64)
    r = _FcmValuesResult()
    with _Wrapped(a) as w:
        check(_fcm(w.ctx, w.images[0], int(c), float(m), int(max_iterations), float(tolerance), int(seed),
                   counts.ctypes.data_as(POINTER(c_int64)), counts.size, byref(r)), "lumen_filter_fcm_values", w.ctx)
    if not r.applicable:
        return None
    lo, hi = int(r.min), int(r.max)
    return (np.array(r.centers[:r.k], np.float64), counts[:hi - lo + 1], lo, int(r.iterations), bool(r.converged))
