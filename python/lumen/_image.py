"""Image operations on numpy arrays (include/lumen/filter.h, include/lumen/image.h).

Each function wraps the numpy input with lumen_image_wrap (no copy of a C-contiguous array),
fills the op's options struct with the C library's own lumen_OP_opts_init() defaults, sets
only what the caller passed, calls lumen_filter_OP and copies the result image into a new
numpy array (the C image is then freed).

Axis order: numpy arrays are C-ordered, lumen images have dims[0] fastest (x), so a numpy
array of shape (z, y, x) is the lumen image with dims (x, y, z): the same memory, no copy.
Per-axis values given here (sigma as a sequence) follow the numpy axis order.

Layouts: the ctypes Structures below mirror filter.h field by field. They are checked when
this module is imported: every options struct is initialised by its C _init() function inside
a larger buffer whose tail is filled with a canary (the C init memsets sizeof(struct) bytes,
so a C struct larger than its mirror overwrites the canary), and the documented defaults
must land in the mirrored fields. python/tests/test_image.py also asserts the x86-64 sizes.
"""
import ctypes

import numpy as np

from . import _lib
from ._lib import lib, check, cstr, pystr, P, c_int, c_int64, c_double, c_void_p, c_char_p
from ._device import _Device, _device_name

__all__ = ["gaussian", "dog", "gaussian_laplace", "median", "morphology", "otsu", "fill_holes",
           "label", "boundary_modes", "filter_ops"]

# ---------------------------------------------------------------------------- struct mirrors

_REASON_MAX = 256                 # LUMEN_FILTER_REASON_MAX
_PRECISION_DEFAULT = -1           # LUMEN_FILTER_PRECISION_DEFAULT
# lumen_morph_op and lumen_element orders (filter.h has no name functions for them)
MORPH_OPS = ("erode", "dilate", "open", "close", "tophat")
ELEMENTS = ("disk", "square", "ball", "cube")


class _Report(_lib.CheckedStructure):
    _fields_ = [("op", ctypes.c_char * 32), ("requested", _Device), ("used", _Device),
                ("fell_back", c_int), ("device_status", c_int), ("precision", c_int),
                ("reason", ctypes.c_char * _REASON_MAX), ("seconds", c_double)]


class _Exec(_lib.CheckedStructure):
    _fields_ = [("device", c_char_p), ("precision", c_int), ("report", P(_Report))]


class _GaussianOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("sigma", c_double), ("sigma_axis", c_double * 3), ("units", c_int),
                ("truncate", c_double), ("mode", c_int), ("cval", c_double), ("spatial_dims", c_int)]


class _DogOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("low_sigma", c_double), ("high_sigma", c_double), ("units", c_int),
                ("truncate", c_double), ("mode", c_int), ("cval", c_double), ("spatial_dims", c_int)]


class _LaplaceOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("sigma", c_double), ("units", c_int), ("truncate", c_double),
                ("mode", c_int), ("cval", c_double), ("spatial_dims", c_int), ("discrete", c_int)]


class _MedianOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("size", c_int), ("mode", c_int), ("cval", c_double),
                ("spatial_dims", c_int)]


class _OtsuOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("bins", c_int)]


class _MorphOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("op", c_int), ("element", c_int), ("radius", c_int), ("size", c_int),
                ("binary", c_int)]


class _RegionOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("connectivity", c_int), ("spatial_dims", c_int)]


def _p(name, restype, *args):
    return _lib._proto(name, restype, *args)


_p("lumen_image_wrap", c_int, c_void_p, c_void_p, c_int, P(c_int64), c_int, _Device, P(c_void_p))
_p("lumen_image_free", None, c_void_p)
_p("lumen_image_ndim", c_int, c_void_p)
_p("lumen_image_dim", c_int64, c_void_p, c_int)
_p("lumen_image_dtype", c_int, c_void_p)
_p("lumen_image_device", _Device, c_void_p)
_p("lumen_image_nbytes", c_int64, c_void_p)
_p("lumen_image_data", c_void_p, c_void_p)
_p("lumen_filter_exec_init", None, P(_Exec))
_p("lumen_boundary_name", c_char_p, c_int)
_p("lumen_boundary_parse", c_int, c_char_p, P(c_int))
_p("lumen_filter_op_count", c_int)
_p("lumen_filter_op_name", c_char_p, c_int)
_p("lumen_filter_op_has_cuda", c_int, c_char_p)
_p("lumen_convert_f16_to_f32", c_int, c_void_p, c_void_p, c_int64)
_p("lumen_convert_bf16_to_f32", c_int, c_void_p, c_void_p, c_int64)

_OPTS = {  # op -> (mirror, init function name, filter function name, {field: default} to verify)
    "gaussian": (_GaussianOpts, "lumen_gaussian_opts_init", "lumen_filter_gaussian",
                 {"sigma": 1.0, "truncate": 4.0, "mode": 1, "spatial_dims": 0}),
    "dog": (_DogOpts, "lumen_dog_opts_init", "lumen_filter_dog",
            {"low_sigma": 1.0, "high_sigma": 0.0, "truncate": 4.0, "mode": 1}),
    "gaussian_laplace": (_LaplaceOpts, "lumen_laplace_opts_init", "lumen_filter_gaussian_laplace",
                         {"sigma": 2.0, "truncate": 4.0, "mode": 0, "discrete": 0}),
    "median": (_MedianOpts, "lumen_median_opts_init", "lumen_filter_median", {"size": 3, "mode": 0}),
    "otsu": (_OtsuOpts, "lumen_otsu_opts_init", "lumen_filter_otsu", {"bins": 0}),
    "morphology": (_MorphOpts, "lumen_morph_opts_init", "lumen_filter_morphology",
                   {"op": 0, "element": 0, "radius": 4, "size": 7, "binary": 0}),
    "fill_holes": (_RegionOpts, "lumen_region_opts_init", "lumen_filter_fill_holes", {"connectivity": 1}),
    "label": (_RegionOpts, "lumen_region_opts_init", "lumen_filter_label", {"connectivity": 1}),
}

def _new_opts(op):
    """The options as lumen_..._opts_init() fills them (checked against overrunning the mirror)."""
    return _lib.opts_from_init(_OPTS[op][0], _OPTS[op][1], "include/lumen/filter.h", "python/lumen/_image.py")


def _verify_layouts():
    for op, (cls, init, fn, defaults) in _OPTS.items():
        _p(init, None, P(cls))
        o = _new_opts(op)
        e = o.exec
        if e.device is not None or e.precision != _PRECISION_DEFAULT or bool(e.report):
            raise ImportError("lumen: %s: lumen_filter_exec defaults not where the binding expects" % init)
        for k, v in defaults.items():
            if getattr(o, k) != v:
                raise ImportError("lumen: %s: field %s is %r, expected default %r: filter.h and "
                                  "python/lumen/_image.py are out of step" % (init, k, getattr(o, k), v))
    e = _Exec()
    lib.lumen_filter_exec_init(ctypes.byref(e))
    if e.precision != _PRECISION_DEFAULT:
        raise ImportError("lumen: lumen_filter_exec layout mismatch")


_verify_layouts()
_p("lumen_filter_gaussian", c_int, c_void_p, c_void_p, P(_GaussianOpts), P(c_void_p))
_p("lumen_filter_dog", c_int, c_void_p, c_void_p, P(_DogOpts), P(c_void_p))
_p("lumen_filter_gaussian_laplace", c_int, c_void_p, c_void_p, P(_LaplaceOpts), P(c_void_p))
_p("lumen_filter_median", c_int, c_void_p, c_void_p, P(_MedianOpts), P(c_void_p))
_p("lumen_filter_otsu", c_int, c_void_p, c_void_p, P(_OtsuOpts), P(c_double), P(c_void_p))
_p("lumen_filter_morphology", c_int, c_void_p, c_void_p, P(_MorphOpts), P(c_void_p))
_p("lumen_filter_fill_holes", c_int, c_void_p, c_void_p, P(_RegionOpts), P(c_void_p))
_p("lumen_filter_label", c_int, c_void_p, c_void_p, P(_RegionOpts), P(c_void_p), P(c_int64))

# ---------------------------------------------------------------------------- dtypes, names


def _dtype_code(name):
    v = c_int()
    if lib.lumen_dtype_parse(cstr(name), ctypes.byref(v)) != 0:
        raise ImportError("lumen: the library does not know dtype %s" % name)
    return v.value


_IN_DTYPES = {np.dtype(np.float32): _dtype_code("float32"), np.dtype(np.float64): _dtype_code("float64"),
              np.dtype(np.uint8): _dtype_code("uint8"), np.dtype(np.uint16): _dtype_code("uint16")}
_F16 = _dtype_code("float16")
_BF16 = _dtype_code("bfloat16")
_OUT_DTYPES = {_dtype_code(n): np.dtype(n) for n in
               ("float32", "float64", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64")}


def boundary_modes():
    """Boundary mode names in lumen_boundary order, read from the library."""
    return _lib.enum_names(lib.lumen_boundary_name, limit=32)


def filter_ops():
    """{op name: has a CUDA kernel} for every op the library dispatches."""
    out = {}
    for i in range(lib.lumen_filter_op_count()):
        n = lib.lumen_filter_op_name(i)
        if n is not None:
            out[pystr(n)] = bool(lib.lumen_filter_op_has_cuda(n))
    return out


def _mode(mode):
    v = c_int()
    if lib.lumen_boundary_parse(cstr(mode), ctypes.byref(v)) != 0:
        raise ValueError("mode=%r: expected one of %s" % (mode, ", ".join(boundary_modes())))
    return v.value


_PRECISION_ALIASES = {"float32": "full", "float16": "half", "fp16": "half", "bf16": "bfloat16"}


def _precision(precision):
    if precision is None:
        return _PRECISION_DEFAULT
    if isinstance(precision, int) and not isinstance(precision, bool):
        return precision
    name = _PRECISION_ALIASES.get(str(precision), str(precision))
    v = c_int()
    if lib.lumen_precision_parse(cstr(name), ctypes.byref(v)) != 0:
        raise ValueError("precision=%r: expected None, 'full' ('float32'), 'half' ('float16') or "
                         "'bfloat16'" % (precision,))
    return v.value


def _index(value, names, what):
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return names.index(str(value))
    except ValueError:
        raise ValueError("%s=%r: expected one of %s" % (what, value, ", ".join(names)))


# ---------------------------------------------------------------------------- the call


def _prepare(image):
    a = np.asarray(image)
    if a.dtype == np.bool_:
        a = a.view(np.uint8)
    if a.dtype not in _IN_DTYPES:
        raise TypeError("image dtype %s: expected float32, float64, uint8 or uint16 (or bool)" % a.dtype)
    if not 1 <= a.ndim <= 4:
        raise ValueError("image of %d dimensions: expected 2-D or 3-D (1-D to 4-D accepted)" % a.ndim)
    return np.ascontiguousarray(a)


def _wrap_host(a, ctx):
    """A lumen_image over the prepared (C-contiguous) array a, no copy; the caller frees it."""
    dims = (c_int64 * a.ndim)(*reversed(a.shape))
    img = c_void_p()
    check(lib.lumen_image_wrap(ctx, c_void_p(a.ctypes.data), a.ndim, dims, _IN_DTYPES[a.dtype],
                               _Device(0, 0), ctypes.byref(img)), "lumen_image_wrap", ctx)
    return img


class _AdoptedImage(object):
    """A host lumen_image whose buffer a numpy array views (a zero-copy result): the array holds
    this object as its base, and the image is freed when the array goes."""

    def __init__(self, handle, shape, dtype, data):
        self._handle = handle
        self.__array_interface__ = {"shape": tuple(int(d) for d in shape), "typestr": np.dtype(dtype).str,
                                    "data": (data, False), "version": 3}

    def __del__(self):
        h, self._handle = self._handle, None
        if h:
            try:
                lib.lumen_image_free(c_void_p(h))
            except Exception:  # interpreter shutdown: the library may be gone already
                pass


def _to_numpy(img, shape, raw_bits, adopt=False):
    """The result image img as a numpy array of shape (when the sizes agree). adopt=True: a plain
    host result is not copied: the array views its buffer and owns it (img.value is set to None,
    so the caller's cleanup leaves it alone); otherwise the data are copied."""
    dt = lib.lumen_image_dtype(img)
    nd = lib.lumen_image_ndim(img)
    dims = [lib.lumen_image_dim(img, i) for i in range(nd)]
    out_shape = tuple(int(d) for d in reversed(dims))
    if int(np.prod(out_shape)) == int(np.prod(shape)):
        out_shape = shape
    n = int(np.prod(out_shape))
    src = lib.lumen_image_data(img)
    dev = lib.lumen_image_device(img)
    if dev.kind != 0:
        raise _lib.LumenError(_lib.status_code("invalid_argument"),
                              "result image is on %s, not on the host" % _device_name(dev))
    if dt in (_F16, _BF16):
        bits = np.empty(out_shape, np.uint16)
        ctypes.memmove(bits.ctypes.data, src, n * 2)
        if raw_bits:
            return bits
        out = np.empty(out_shape, np.float32)
        conv = lib.lumen_convert_f16_to_f32 if dt == _F16 else lib.lumen_convert_bf16_to_f32
        st = conv(bits.ctypes.data, out.ctypes.data, n)
        check(st, conv.__name__)
        return out
    if dt not in _OUT_DTYPES:
        raise _lib.LumenError(_lib.status_code("invalid_argument"),
                              "result dtype %s is not supported by the binding" % pystr(lib.lumen_dtype_name(dt)))
    if adopt and n and src:
        owner = _AdoptedImage(img.value, out_shape, _OUT_DTYPES[dt], src)
        img.value = None
        return np.asarray(owner)
    out = np.empty(out_shape, _OUT_DTYPES[dt])
    if n:
        ctypes.memmove(out.ctypes.data, src, out.nbytes)
    return out


def _report_dict(r):
    return {"op": pystr(r.op), "requested": _device_name(r.requested), "device": _device_name(r.used),
            "fell_back": bool(r.fell_back), "device_status": pystr(lib.lumen_status_name(r.device_status)),
            "precision": pystr(lib.lumen_precision_name(r.precision)), "reason": pystr(r.reason),
            "seconds": float(r.seconds)}


def _run(op, image, opts, device, precision, outputs, raw_bits=False):
    """Wraps image, calls lumen_filter_OP(ctx, in, opts, *outputs) and returns (images, report)."""
    a = _prepare(image)
    ctxobj = _lib.context_obj()
    ctx = ctxobj.handle
    img = _wrap_host(a, ctx)
    report = _Report()
    dev = cstr(device) if device is not None else None
    opts.exec.device = dev
    opts.exec.precision = _precision(precision)
    opts.exec.report = ctypes.pointer(report)
    fn = getattr(lib, _OPTS[op][2])
    outs = [c_void_p() for _ in range(outputs)]
    try:
        extra = []
        if op == "otsu":
            thr = c_double()
            args = [ctypes.byref(thr), ctypes.byref(outs[0])]
            extra.append(thr)
        elif op == "label":
            count = c_int64()
            args = [ctypes.byref(outs[0]), ctypes.byref(count)]
            extra.append(count)
        else:
            args = [ctypes.byref(outs[0])]
        st = fn(ctx, img, ctypes.byref(opts), *args)
        check(st, _OPTS[op][2], ctx)
        results = [_to_numpy(o, a.shape, raw_bits, adopt=True) for o in outs]
        return results, [e.value for e in extra], _report_dict(report)
    finally:
        for o in outs:
            if o.value:
                lib.lumen_image_free(o)
        lib.lumen_image_free(img)


def _finish(result, report, return_report):
    return (result, report) if return_report else result


def _sigma_axes(opts, sigma, ndim):
    """A scalar sigma -> opts.sigma; a per-axis sequence in numpy order -> sigma_axis (x first)."""
    s = np.atleast_1d(np.asarray(sigma, dtype=np.float64))
    if s.size == 1:
        opts.sigma = float(s[0])
        return
    if s.size != ndim or ndim > 3:
        raise ValueError("sigma: a scalar or one value per axis (%d) of a <= 3-D image" % ndim)
    for i, v in enumerate(s[::-1]):
        if not v > 0:
            raise ValueError("sigma: every per-axis value must be > 0")
        opts.sigma_axis[i] = float(v)
    opts.sigma = float(s.min())


# ---------------------------------------------------------------------------- public ops

_DOC_COMMON = """
    device: None (the input's device: the CPU for a numpy array), "cpu", "cuda" or "cuda:N".
        A CUDA op that cannot run there reruns on the CPU (report["fell_back"], ["reason"]).
    precision: None (the context default), "full"/"float32", "half"/"float16", "bfloat16":
        the storage type of float outputs. float16/bfloat16 results are returned as float32
        arrays (exactly the stored values), or as the uint16 bit patterns with raw_bits=True.
    return_report: also return the filter report, a dict with op, requested, device (used),
        fell_back, device_status, precision, reason and seconds.
"""


def gaussian(image, sigma=1.0, mode="nearest", truncate=4.0, cval=0.0, spatial_dims=0, units="voxels",
             device=None, precision=None, raw_bits=False, return_report=False):
    """Gaussian filter (lumen_filter_gaussian; scipy.ndimage.gaussian_filter with the radius
    int(truncate * sigma + 0.5)). sigma: a scalar or one per numpy axis. mode: "reflect",
    "nearest" (default), "constant" (cval), "wrap", "mirror". spatial_dims=2 on a 3-D array
    filters each a[i] independently."""
    a = _prepare(image)
    o = _new_opts("gaussian")
    _sigma_axes(o, sigma, a.ndim)
    o.mode, o.truncate, o.cval, o.spatial_dims = _mode(mode), float(truncate), float(cval), int(spatial_dims)
    o.units = _index(units, ("voxels", "mm"), "units")
    (res,), _, rep = _run("gaussian", a, o, device, precision, 1, raw_bits)
    return _finish(res, rep, return_report)


def dog(image, low_sigma=1.0, high_sigma=None, mode="nearest", truncate=4.0, cval=0.0, spatial_dims=0,
        device=None, precision=None, raw_bits=False, return_report=False):
    """Difference of Gaussians G_low - G_high (skimage.filters.difference_of_gaussians);
    high_sigma None = 1.6 * low_sigma."""
    o = _new_opts("dog")
    o.low_sigma = float(low_sigma)
    o.high_sigma = 0.0 if high_sigma is None else float(high_sigma)
    o.mode, o.truncate, o.cval, o.spatial_dims = _mode(mode), float(truncate), float(cval), int(spatial_dims)
    (res,), _, rep = _run("dog", image, o, device, precision, 1, raw_bits)
    return _finish(res, rep, return_report)


def gaussian_laplace(image, sigma=2.0, mode="reflect", truncate=4.0, cval=0.0, spatial_dims=0,
                     discrete=False, device=None, precision=None, raw_bits=False, return_report=False):
    """Laplacian of Gaussian (scipy.ndimage.gaussian_laplace; discrete=True: Gaussian then the
    discrete Laplacian, the reference framework's form)."""
    o = _new_opts("gaussian_laplace")
    o.sigma = float(sigma)
    o.mode, o.truncate, o.cval, o.spatial_dims = _mode(mode), float(truncate), float(cval), int(spatial_dims)
    o.discrete = int(bool(discrete))
    (res,), _, rep = _run("gaussian_laplace", image, o, device, precision, 1, raw_bits)
    return _finish(res, rep, return_report)


def median(image, size=3, mode="reflect", cval=0.0, spatial_dims=0, device=None, precision=None,
           raw_bits=False, return_report=False):
    """Median filter over a size^ndim window (scipy.ndimage.median_filter); size odd >= 1."""
    o = _new_opts("median")
    o.size, o.mode, o.cval, o.spatial_dims = int(size), _mode(mode), float(cval), int(spatial_dims)
    (res,), _, rep = _run("median", image, o, device, precision, 1, raw_bits)
    return _finish(res, rep, return_report)


def _morphology_fields(o, op, element, size, radius, binary):
    """lumen.morphology's rules for op, element, size and radius into its options o (also used by
    process_images): size=N with a round element (disk, ball) is its radius."""
    o.op = _index(op, MORPH_OPS, "op")
    o.element = _index(element, ELEMENTS, "element")
    if radius is not None:
        o.radius = int(radius)
    if size is not None:
        if o.element in (0, 2) and radius is None:
            o.radius = int(size)
        else:
            o.size = int(size)
    o.binary = int(bool(binary))


def morphology(image, op="erode", element="disk", size=None, radius=None, binary=False, device=None,
               precision=None, raw_bits=False, return_report=False):
    """Grey (float output) or binary (uint8 0/1) morphology: op in erode, dilate, open, close,
    tophat; element in disk, ball (radius; default 4) or square, cube (odd size; default 7).
    size=N with a disk/ball element is taken as its radius."""
    o = _new_opts("morphology")
    _morphology_fields(o, op, element, size, radius, binary)
    (res,), _, rep = _run("morphology", image, o, device, precision, 1, raw_bits)
    return _finish(res, rep, return_report)


def otsu(image, bins=0, device=None, precision=None, return_report=False):
    """Otsu threshold (skimage.filters.threshold_otsu over a bins histogram of [min, max];
    bins=0: 256 when the data lie in [0, 255], else 4096). Returns (threshold, mask), mask the
    uint8 array (image > threshold); with return_report=True (threshold, mask, report)."""
    o = _new_opts("otsu")
    o.bins = int(bins)
    (mask,), (thr,), rep = _run("otsu", image, o, device, precision, 1)
    return (thr, mask, rep) if return_report else (thr, mask)


def fill_holes(image, connectivity=1, spatial_dims=0, device=None, return_report=False):
    """scipy.ndimage.binary_fill_holes: uint8 0/1 (image != 0 is foreground)."""
    o = _new_opts("fill_holes")
    o.connectivity, o.spatial_dims = int(connectivity), int(spatial_dims)
    (res,), _, rep = _run("fill_holes", image, o, device, None, 1)
    return _finish(res, rep, return_report)


def label(image, connectivity=1, spatial_dims=0, device=None, return_report=False):
    """scipy.ndimage.label: returns (labels int32, count); with return_report=True
    (labels, count, report). Labels are numbered in lumen's raster order (x fastest, which is
    numpy's C order)."""
    o = _new_opts("label")
    o.connectivity, o.spatial_dims = int(connectivity), int(spatial_dims)
    (res,), (count,), rep = _run("label", image, o, device, None, 1)
    return (res, int(count), rep) if return_report else (res, int(count))


for _f in (gaussian, dog, gaussian_laplace, median, morphology):
    _f.__doc__ += _DOC_COMMON
