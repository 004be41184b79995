"""The rest of include/lumen/filter.h on numpy arrays: point ops (gamma, absolute, contrast),
convolution, the Butterworth band-pass, Sauvola, local variance and its binarisation, the
largest component, the Gaussian over a batch or a list of images, and the statistics
(entropy, mutual information, mean/variance).

Same conventions as _image.py (whose helpers this module uses): options come from the C
lumen_OP_opts_init() (the mirrors below are checked against them at import, canary and
defaults), only what the caller passes is set, numpy axis order is reversed lumen order,
errors are LumenError with the C message, device/precision/raw_bits/return_report as there.
"""
import ctypes

import numpy as np

from . import _lib
from . import _image as _im
from ._lib import lib, check, cstr, P, c_int, c_int64, c_double, c_void_p
from ._image import _Exec, _RegionOpts, _new_opts, _prepare, _to_numpy, _report_dict, _precision, _mode

__all__ = ["gaussian_batch", "gaussian_many", "gamma", "absolute", "contrast", "convolve", "bandpass",
           "sauvola", "local_variance", "variance_binarize", "largest_component", "entropy",
           "mutual_information", "variance"]


class _GammaOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("gamma", c_double), ("max_value", c_double)]


class _AbsOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec)]


class _ContrastOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("contrast", c_double), ("brightness", c_double), ("bins", c_int)]


class _ConvolveOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("kernel", c_void_p), ("kernel_ndim", c_int), ("kernel_dims", c_int64 * 3),
                ("mode", c_int), ("cval", c_double), ("correlate", c_int), ("spatial_dims", c_int)]


class _BandpassOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("d0", c_double), ("width", c_double), ("order", c_int),
                ("spatial_dims", c_int)]


class _SauvolaOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("window", c_int), ("k", c_double), ("r", c_double),
                ("output_threshold", c_int), ("foreground", c_int), ("spatial_dims", c_int)]


class _LocalVarianceOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("window", c_int), ("mode", c_int), ("cval", c_double), ("alpha", c_double),
                ("spatial_dims", c_int)]


class _StatsOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("bins", c_int), ("ddof", c_int)]


class _MiResult(_lib.CheckedStructure):
    _fields_ = [("mutual_information", c_double), ("entropy_a", c_double), ("entropy_b", c_double),
                ("joint_entropy", c_double)]


# op -> (mirror, init, C function, {field: documented default}); registered beside _image's ops
_NEW_OPTS = {
    "gaussian_batch": (_im._GaussianOpts, "lumen_gaussian_opts_init", "lumen_filter_gaussian_batch",
                       {"sigma": 1.0, "truncate": 4.0, "mode": 1}),
    "gamma": (_GammaOpts, "lumen_gamma_opts_init", "lumen_filter_gamma", {"gamma": 1.0, "max_value": 4095.0}),
    "abs": (_AbsOpts, "lumen_abs_opts_init", "lumen_filter_abs", {}),
    "contrast": (_ContrastOpts, "lumen_contrast_opts_init", "lumen_filter_contrast",
                 {"contrast": 0.0, "brightness": 0.0, "bins": 0}),
    "convolve": (_ConvolveOpts, "lumen_convolve_opts_init", "lumen_filter_convolve",
                 {"mode": 0, "cval": 0.0, "correlate": 0, "spatial_dims": 0}),
    "bandpass": (_BandpassOpts, "lumen_bandpass_opts_init", "lumen_filter_bandpass",
                 {"d0": 21.0, "width": 32.0, "order": 3}),
    "sauvola": (_SauvolaOpts, "lumen_sauvola_opts_init", "lumen_filter_sauvola",
                {"window": 15, "k": 0.5, "r": 128.0, "output_threshold": 0, "foreground": 255}),
    "local_variance": (_LocalVarianceOpts, "lumen_local_variance_opts_init", "lumen_filter_local_variance",
                       {"window": 5, "mode": 4, "alpha": 1.0}),
    "variance_binarize": (_LocalVarianceOpts, "lumen_local_variance_opts_init",
                          "lumen_filter_variance_binarize", {"window": 5, "mode": 4, "alpha": 1.0}),
    "largest_component": (_RegionOpts, "lumen_region_opts_init", "lumen_filter_largest_component",
                          {"connectivity": 1}),
    "stats": (_StatsOpts, "lumen_stats_opts_init", None, {"bins": 256, "ddof": 0}),
}
_im._OPTS.update(_NEW_OPTS)
for _op in _NEW_OPTS:
    _cls, _init = _NEW_OPTS[_op][0], _NEW_OPTS[_op][1]
    _im._p(_init, None, P(_cls))
_im._verify_layouts()

_IMG_OUT = P(c_void_p)
for _op, (_cls, _init, _fn, _d) in _NEW_OPTS.items():
    if _fn is not None:
        _im._p(_fn, c_int, c_void_p, c_void_p, P(_cls), _IMG_OUT)
_im._p("lumen_filter_gaussian_many", c_int, c_void_p, c_int64, P(c_void_p), P(_im._GaussianOpts), P(c_void_p))
_im._p("lumen_filter_entropy", c_int, c_void_p, c_void_p, P(_StatsOpts), P(c_double))
_im._p("lumen_filter_mutual_information", c_int, c_void_p, c_void_p, c_void_p, P(_StatsOpts), P(_MiResult))
_im._p("lumen_filter_variance", c_int, c_void_p, c_void_p, P(_StatsOpts), P(c_double), P(c_double))


# ---------------------------------------------------------------------------- the calls


class _Wrapped(object):
    """numpy arrays wrapped as lumen images (no copy) for the length of a with block."""

    def __init__(self, arrays):
        self.arrays = [_prepare(a) for a in arrays]
        self.ctxobj = _lib.context_obj()
        self.ctx = self.ctxobj.handle
        self.images = []

    def __enter__(self):
        try:
            for a in self.arrays:
                self.images.append(_im._wrap_host(a, self.ctx))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for img in self.images:
            lib.lumen_image_free(img)
        self.images = []
        return False


def _exec(opts, device, precision, report):
    opts.exec.device = cstr(device) if device is not None else None
    opts.exec.precision = _precision(precision)
    opts.exec.report = ctypes.pointer(report)


def _image_op(op, image, opts, device, precision, raw_bits, return_report):
    """lumen_filter_OP(ctx, in, opts, &out) -> the numpy result (and the report)."""
    report = _im._Report()
    _exec(opts, device, precision, report)
    fn_name = _NEW_OPTS[op][2]
    with _Wrapped([image]) as w:
        out = c_void_p()
        try:
            check(getattr(lib, fn_name)(w.ctx, w.images[0], ctypes.byref(opts), ctypes.byref(out)), fn_name, w.ctx)
            res = _to_numpy(out, w.arrays[0].shape, raw_bits, adopt=True)
        finally:
            if out.value:
                lib.lumen_image_free(out)
    rep = _report_dict(report)
    return (res, rep) if return_report else res


def _opts(op, **fields):
    o = _new_opts(op)
    for k, v in fields.items():
        setattr(o, k, v)
    return o


# ---------------------------------------------------------------------------- public ops


def gaussian_batch(images, sigma=1.0, mode="nearest", truncate=4.0, cval=0.0, units="voxels", device=None,
                   precision=None, raw_bits=False, return_report=False):
    """lumen_filter_gaussian_batch: a (n, y, x) or (m, n, y, x) array as a batch of 2-D images,
    each filtered over its last two axes (equal to lumen.gaussian on every slice). sigma: a
    scalar or (sigma_y, sigma_x)."""
    o = _new_opts("gaussian_batch")
    _im._sigma_axes(o, sigma, 2)
    o.mode, o.truncate, o.cval = _mode(mode), float(truncate), float(cval)
    o.units = _im._index(units, ("voxels", "mm"), "units")
    return _image_op("gaussian_batch", images, o, device, precision, raw_bits, return_report)


def gaussian_many(images, sigma=1.0, mode="nearest", truncate=4.0, cval=0.0, spatial_dims=0, device=None,
                  precision=None, raw_bits=False, return_report=False):
    """lumen_filter_gaussian_many: a list of separate arrays of one shape and dtype, filtered in
    one call; returns the list of results (all or nothing: an error raises, no partial list)."""
    arrays = list(images)
    if not arrays:
        return ([], None) if return_report else []
    o = _new_opts("gaussian")
    _im._sigma_axes(o, sigma, np.ndim(arrays[0]))
    o.mode, o.truncate, o.cval, o.spatial_dims = _mode(mode), float(truncate), float(cval), int(spatial_dims)
    report = _im._Report()
    _exec(o, device, precision, report)
    n = len(arrays)
    with _Wrapped(arrays) as w:
        ins = (c_void_p * n)(*[i.value for i in w.images])
        outs = (c_void_p * n)()
        try:
            check(lib.lumen_filter_gaussian_many(w.ctx, n, ins, ctypes.byref(o), outs),
                  "lumen_filter_gaussian_many", w.ctx)
            res = [_to_numpy(c_void_p(outs[i]), w.arrays[i].shape, raw_bits) for i in range(n)]
        finally:
            for i in range(n):
                if outs[i]:
                    lib.lumen_image_free(c_void_p(outs[i]))
    rep = _report_dict(report)
    return (res, rep) if return_report else res


def gamma(image, gamma=1.0, max_value=4095.0, device=None, precision=None, raw_bits=False, return_report=False):
    """lumen_filter_gamma: max_value * clamp(x / max_value, 0, inf) ** gamma (12-bit data by default)."""
    o = _opts("gamma", gamma=float(gamma), max_value=float(max_value))
    return _image_op("gamma", image, o, device, precision, raw_bits, return_report)


def absolute(image, device=None, precision=None, raw_bits=False, return_report=False):
    """lumen_filter_abs: |x| as a float image (NaN stays NaN)."""
    return _image_op("abs", image, _opts("abs"), device, precision, raw_bits, return_report)


def contrast(image, contrast=0.0, brightness=0.0, bins=0, device=None, precision=None, raw_bits=False,
             return_report=False):
    """lumen_filter_contrast: clamp(a x + b, 0, bins), a = contrast / (bins / 2) + 1,
    b = brightness - contrast; bins 0 = 255 when max <= 255 else 4095."""
    o = _opts("contrast", contrast=float(contrast), brightness=float(brightness), bins=int(bins))
    return _image_op("contrast", image, o, device, precision, raw_bits, return_report)


def convolve(image, kernel, mode="reflect", cval=0.0, correlate=False, spatial_dims=0, device=None,
             precision=None, raw_bits=False, return_report=False):
    """lumen_filter_convolve: scipy.ndimage.convolve (correlate=True: scipy.ndimage.correlate)
    with a 1-D to 3-D kernel in numpy axis order (the kernel's last axis runs along x)."""
    k = np.ascontiguousarray(np.asarray(kernel, dtype=np.float32))
    if not 1 <= k.ndim <= 3:
        raise ValueError("kernel of %d dimensions: expected 1-D to 3-D" % k.ndim)
    o = _opts("convolve", mode=_mode(mode), cval=float(cval), correlate=int(bool(correlate)),
              spatial_dims=int(spatial_dims))
    o.kernel = k.ctypes.data
    o.kernel_ndim = k.ndim
    for i, d in enumerate(reversed(k.shape)):
        o.kernel_dims[i] = int(d)
    res = _image_op("convolve", image, o, device, precision, raw_bits, return_report)
    del k  # kept alive through the call above
    return res


def bandpass(image, d0=21.0, width=32.0, order=3, spatial_dims=0, device=None, precision=None, raw_bits=False,
             return_report=False):
    """lumen_filter_bandpass: Butterworth band-pass H = 1 / (1 + ((D^2 - d0^2) / (8 width D))^(2 order))
    on the image's FFT (FFTW at run time: LumenError not_built without it)."""
    o = _opts("bandpass", d0=float(d0), width=float(width), order=int(order), spatial_dims=int(spatial_dims))
    return _image_op("bandpass", image, o, device, precision, raw_bits, return_report)


def sauvola(image, window=15, k=0.5, r=128.0, output_threshold=False, foreground=255, spatial_dims=0,
            device=None, precision=None, raw_bits=False, return_report=False):
    """lumen_filter_sauvola: T = m (1 + k (s / r - 1)) over an odd window (mirror borders);
    returns the uint8 mask (image > T) * foreground, or the float map T with output_threshold."""
    o = _opts("sauvola", window=int(window), k=float(k), r=float(r), output_threshold=int(bool(output_threshold)),
              foreground=int(foreground), spatial_dims=int(spatial_dims))
    return _image_op("sauvola", image, o, device, precision, raw_bits, return_report)


def local_variance(image, window=5, mode="mirror", cval=0.0, spatial_dims=0, device=None, precision=None,
                   raw_bits=False, return_report=False):
    """lumen_filter_local_variance: population variance over an odd window (float64 sums)."""
    o = _opts("local_variance", window=int(window), mode=_mode(mode), cval=float(cval), spatial_dims=int(spatial_dims))
    return _image_op("local_variance", image, o, device, precision, raw_bits, return_report)


def variance_binarize(image, window=5, alpha=1.0, mode="mirror", cval=0.0, spatial_dims=0, device=None,
                      return_report=False):
    """lumen_filter_variance_binarize: uint8 (lv^2 >= alpha gv^2), lv the local and gv the global
    population variance."""
    o = _opts("variance_binarize", window=int(window), alpha=float(alpha), mode=_mode(mode), cval=float(cval),
              spatial_dims=int(spatial_dims))
    return _image_op("variance_binarize", image, o, device, None, False, return_report)


def largest_component(image, connectivity=1, spatial_dims=0, device=None, return_report=False):
    """lumen_filter_largest_component: uint8 0/1 mask of the largest connected component of
    image != 0 (ties: the lowest label; all 0 when empty)."""
    o = _opts("largest_component", connectivity=int(connectivity), spatial_dims=int(spatial_dims))
    return _image_op("largest_component", image, o, device, None, False, return_report)


def _stats(bins, ddof, device):
    o = _new_opts("stats")
    if bins is not None:
        o.bins = int(bins)
    o.ddof = int(ddof)
    report = _im._Report()
    _exec(o, device, None, report)
    return o, report


def entropy(image, bins=256, device=None):
    """lumen_filter_entropy: Shannon entropy in bits of a bins histogram over [min, max]
    (bins=0: one bin per distinct value, skimage.measure.shannon_entropy)."""
    o, _ = _stats(bins, 0, device)
    v = c_double()
    with _Wrapped([image]) as w:
        check(lib.lumen_filter_entropy(w.ctx, w.images[0], ctypes.byref(o), ctypes.byref(v)),
              "lumen_filter_entropy", w.ctx)
    return v.value


def mutual_information(a, b, bins=256, device=None):
    """lumen_filter_mutual_information: a dict with mutual_information, entropy_a, entropy_b,
    joint_entropy (bits) from a bins x bins joint histogram; a and b of one voxel count."""
    o, _ = _stats(bins, 0, device)
    r = _MiResult()
    with _Wrapped([a, b]) as w:
        check(lib.lumen_filter_mutual_information(w.ctx, w.images[0], w.images[1], ctypes.byref(o), ctypes.byref(r)),
              "lumen_filter_mutual_information", w.ctx)
    return {k: getattr(r, k) for k, _t in _MiResult._fields_}


def variance(image, ddof=0, device=None):
    """lumen_filter_variance: (mean, variance) of every voxel, float64 sums; ddof 0 or 1."""
    o, _ = _stats(None, ddof, device)
    m, v = c_double(), c_double()
    with _Wrapped([image]) as w:
        check(lib.lumen_filter_variance(w.ctx, w.images[0], ctypes.byref(o), ctypes.byref(m), ctypes.byref(v)),
              "lumen_filter_variance", w.ctx)
    return m.value, v.value


for _f in (gaussian_batch, gaussian_many, gamma, absolute, contrast, convolve, bandpass, sauvola, local_variance):
    _f.__doc__ += _im._DOC_COMMON
