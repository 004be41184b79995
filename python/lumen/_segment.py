"""Segmentation algorithms on numpy arrays (include/lumen/segment.h): FEBDS, white top-hat,
k-means, fuzzy and possibilistic c-means, region growing, breast mask, DICOM windowing, bit-depth
normalisation and GRAIL automatic windowing.

Each function fills the algorithm's options struct with the C library's lumen_ALGO_opts_init()
(every keyword left at None keeps the library's default: nothing is retyped here), wraps the
numpy input without a copy (lumen_image_wrap; numpy (z, y, x) = lumen dims (x, y, z)), calls
lumen_segment_ALGO and returns a new numpy array. Masks are uint8 0/1, labels uint8 0..k-1, maps
float32 (float16/bfloat16 storage returned as float32). Errors raise lumen.LumenError (also a
ValueError for invalid arguments) with the C message. return_report=True also returns the
report dict of lumen._image (op, requested, device, fell_back, reason, precision, seconds) plus
the algorithm's extra outputs (threshold, clusters, bits, the GRAIL window).
"""
import ctypes

import numpy as np

from . import _lib
from ._lib import lib, check, cstr, P, c_int, c_int64, c_double, c_void_p
from ._image import (_Exec, _Report, _prepare, _wrap_host, _to_numpy, _report_dict, _precision,
                     _PRECISION_DEFAULT)

__all__ = ["febds", "tophat", "kmeans", "fcm", "pfcm", "region_grow", "breast_mask", "window",
           "normalize_bits", "grail", "grail_metric", "febds_methods", "segment_algorithms"]

_CLUSTER_MAX = 16  # LUMEN_CLUSTER_MAX
c_uint64 = ctypes.c_uint64

# ---------------------------------------------------------------------------- struct mirrors


class _FebdsOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("method", c_int), ("dog_low_sigma", c_double), ("dog_high_sigma", c_double),
                ("log_sigma", c_double), ("fft_d0", c_double), ("fft_width", c_double), ("fft_order", c_int),
                ("fft_pad", c_int), ("median_size", c_int), ("gamma", c_double), ("gamma_max", c_double),
                ("variance_alpha", c_double), ("variance_window", c_int), ("otsu_bins", c_int),
                ("closing_size", c_int), ("fill_holes", c_int), ("spatial_dims", c_int)]


class _TophatOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("radius", c_int), ("output_mask", c_int), ("spatial_dims", c_int)]


class _ClusterResult(_lib.CheckedStructure):
    _fields_ = [("k", c_int), ("centers", c_double * _CLUSTER_MAX), ("sizes", c_int64 * _CLUSTER_MAX),
                ("iterations", c_int), ("converged", c_int), ("objective", c_double)]


class _KmeansOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("k", c_int), ("max_iterations", c_int), ("tolerance", c_double),
                ("seed", c_uint64), ("output", c_int)]


class _FcmOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("c", c_int), ("m", c_double), ("max_iterations", c_int),
                ("tolerance", c_double), ("seed", c_uint64), ("output", c_int), ("eta", c_double),
                ("a", c_double), ("b", c_double), ("tau", c_double)]


class _RegionGrowOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("seeds", P(c_int64)), ("n_seeds", c_int64), ("threshold", c_double),
                ("max_gradient", c_double), ("connectivity", c_int), ("smooth_radius", c_int)]


class _BreastMaskOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("otsu_bins", c_int), ("connectivity", c_int), ("fill_holes", c_int),
                ("spatial_dims", c_int)]


class _WindowOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("center", c_double), ("width", c_double), ("out_max", c_double)]


class _BitsOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("bits", c_int), ("target", c_double)]


class _GrailOpts(_lib.CheckedStructure):
    _fields_ = [("exec", _Exec), ("n_scales", c_int), ("n_orientations", c_int), ("delta", c_double),
                ("k_max", c_int), ("steps", c_int), ("bins", c_int), ("quantize", c_int), ("out_max", c_double)]


class _GrailResult(_lib.CheckedStructure):
    _fields_ = [("a", c_double), ("b", c_double), ("metric", c_double), ("delta", c_double), ("bits", c_int),
                ("evaluations", c_int)]


def _p(name, restype, *args):
    return _lib._proto(name, restype, *args)


# algo -> (mirror, init function, {field: documented default} checked at import)
_OPTS = {
    "febds": (_FebdsOpts, "lumen_febds_opts_init", {"dog_low_sigma": 1.7, "median_size": 5, "fill_holes": 1}),
    "tophat": (_TophatOpts, "lumen_tophat_opts_init", {"radius": 4}),
    "kmeans": (_KmeansOpts, "lumen_kmeans_opts_init", {"k": 2, "max_iterations": 100, "seed": 42}),
    "fcm": (_FcmOpts, "lumen_fcm_opts_init", {"c": 2, "m": 2.0, "seed": 42, "tau": 0.04}),
    "region_grow": (_RegionGrowOpts, "lumen_region_grow_opts_init", {"n_seeds": 0, "smooth_radius": 2}),
    "breast_mask": (_BreastMaskOpts, "lumen_breast_mask_opts_init", {"connectivity": 1}),
    "window": (_WindowOpts, "lumen_window_opts_init", {"out_max": 255.0}),
    "normalize_bits": (_BitsOpts, "lumen_bits_opts_init", {"bits": 0, "target": 255.0}),
    "grail": (_GrailOpts, "lumen_grail_opts_init", {"n_scales": 3, "n_orientations": 6, "k_max": 3,
                                                     "steps": 5, "bins": 256, "quantize": 1, "out_max": 255.0}),
}

def _new_opts(algo):
    """The options as lumen_..._opts_init() fills them (checked against overrunning the mirror)."""
    return _lib.opts_from_init(_OPTS[algo][0], _OPTS[algo][1], "include/lumen/segment.h", "python/lumen/_segment.py")


def _verify_layouts():
    for algo, (cls, init, defaults) in _OPTS.items():
        _p(init, None, P(cls))
        o = _new_opts(algo)
        if o.exec.device is not None or o.exec.precision != _PRECISION_DEFAULT or bool(o.exec.report):
            raise ImportError("lumen: %s: lumen_filter_exec defaults not where the binding expects" % init)
        for k, v in defaults.items():
            if getattr(o, k) != v:
                raise ImportError("lumen: %s: field %s is %r, expected default %r: segment.h and "
                                  "python/lumen/_segment.py are out of step" % (init, k, getattr(o, k), v))


_verify_layouts()
_IMG = c_void_p
_p("lumen_segment_febds", c_int, c_void_p, _IMG, P(_FebdsOpts), P(c_void_p), P(c_double))
_p("lumen_segment_tophat", c_int, c_void_p, _IMG, P(_TophatOpts), P(c_void_p))
_p("lumen_segment_kmeans", c_int, c_void_p, _IMG, P(_KmeansOpts), P(c_void_p), P(_ClusterResult))
_p("lumen_segment_fcm", c_int, c_void_p, _IMG, P(_FcmOpts), P(c_void_p), P(_ClusterResult))
_p("lumen_segment_pfcm", c_int, c_void_p, _IMG, P(_FcmOpts), P(c_void_p), P(_ClusterResult))
_p("lumen_segment_region_grow", c_int, c_void_p, _IMG, P(_RegionGrowOpts), P(c_void_p))
_p("lumen_segment_breast_mask", c_int, c_void_p, _IMG, P(_BreastMaskOpts), P(c_void_p))
_p("lumen_segment_window", c_int, c_void_p, _IMG, P(_WindowOpts), P(c_void_p))
_p("lumen_segment_normalize_bits", c_int, c_void_p, _IMG, P(_BitsOpts), P(c_void_p), P(c_int))
_p("lumen_segment_grail", c_int, c_void_p, _IMG, P(_GrailOpts), P(c_void_p), P(_GrailResult))
_p("lumen_segment_grail_metric", c_int, c_void_p, _IMG, P(_GrailOpts), c_double, c_double, P(c_double))
_p("lumen_febds_method_name", ctypes.c_char_p, c_int)
_p("lumen_febds_method_parse", c_int, c_void_p, ctypes.c_char_p, P(c_int))
_p("lumen_segment_algo_name", ctypes.c_char_p, c_int)


def febds_methods():
    """FEBDS method names in lumen_febds_method order ("dog", "log", "fft"), read from the library."""
    return _lib.enum_names(lib.lumen_febds_method_name, limit=16)


def segment_algorithms():
    """Algorithm names in lumen_segment_algo order, read from the library."""
    return _lib.enum_names(lib.lumen_segment_algo_name, limit=64)


# ---------------------------------------------------------------------------- the call


def _set(opts, **fields):
    """Sets the fields given (not None) on top of the library's defaults."""
    for k, v in fields.items():
        if v is None:
            continue
        kind = dict(opts._fields_)[k]
        if kind is c_double:
            v = float(v)
        elif kind in (c_int, c_int64, c_uint64):
            if isinstance(v, bool):
                v = int(v)
            if not isinstance(v, (int, np.integer)):
                raise TypeError("%s=%r: expected an integer" % (k, v))
            v = int(v)
            if kind is c_uint64 and not 0 <= v < 2 ** 64:
                raise ValueError("%s=%r: expected an integer from 0 to 2^64-1" % (k, v))
        setattr(opts, k, v)


def _call(fn_name, image, opts, device, precision, extra=()):
    """Wraps image, calls fn(ctx, in, opts, &out, *extra) and returns (array, report dict)."""
    a = _prepare(image)
    ctx = _lib.context_obj().handle
    img = _wrap_host(a, ctx)
    report = _Report()
    opts.exec.device = cstr(device) if device is not None else None
    opts.exec.precision = _precision(precision)
    opts.exec.report = ctypes.pointer(report)
    out = c_void_p()
    try:
        st = getattr(lib, fn_name)(ctx, img, ctypes.byref(opts), ctypes.byref(out), *extra)
        check(st, fn_name, ctx)
        return _to_numpy(out, a.shape, False, adopt=True), _report_dict(report)
    finally:
        if out.value:
            lib.lumen_image_free(out)
        lib.lumen_image_free(img)


def _finish(result, report, return_report):
    return (result, report) if return_report else result


def _clusters(r):
    k = int(r.k)
    return {"k": k, "centers": [float(c) for c in r.centers[:k]], "sizes": [int(s) for s in r.sizes[:k]],
            "iterations": int(r.iterations), "converged": bool(r.converged), "objective": float(r.objective)}


def _method(method):
    if method is None:
        return None
    if isinstance(method, int) and not isinstance(method, bool):
        return method
    v = c_int()
    if lib.lumen_febds_method_parse(None, cstr(str(method)), ctypes.byref(v)) != 0:
        raise _lib.error_for(_lib.status_code("invalid_argument"),
                             "method=%r: expected one of %s" % (method, ", ".join(febds_methods())))
    return v.value


def _output(labels):
    return None if labels is None else (1 if labels else 0)  # LUMEN_CLUSTER_LABELS / MASK


_COMMON = """
    device: None (the input's: the CPU for numpy), "cpu", "cuda", "cuda:N"; steps without a CUDA
        kernel, or a failed device, run on the CPU (report["fell_back"], report["reason"]).
    precision: None (the context default), "full", "half", "bfloat16": storage of float
        intermediates and float results (returned as float32).
    return_report: also return the report dict (see the module docstring).
    Every other keyword left at None keeps the C library's default (docs/SEGMENTATION.md).
"""

# ---------------------------------------------------------------------------- algorithms


def febds(image, method=None, dog_low_sigma=None, dog_high_sigma=None, log_sigma=None, fft_d0=None,
          fft_width=None, fft_order=None, fft_pad=None, median_size=None, gamma=None, gamma_max=None,
          variance_alpha=None, variance_window=None, otsu_bins=None, closing_size=None, fill_holes=None,
          spatial_dims=None, device=None, precision=None, return_report=False):
    """FEBDS microcalcification mask (lumen_segment_febds): method "dog" (default), "log" or "fft";
    uint8 0/1. report["threshold"]: the Otsu threshold of the last slice (NaN for fft)."""
    o = _new_opts("febds")
    _set(o, method=_method(method), dog_low_sigma=dog_low_sigma, dog_high_sigma=dog_high_sigma,
         log_sigma=log_sigma, fft_d0=fft_d0, fft_width=fft_width, fft_order=fft_order, fft_pad=fft_pad,
         median_size=median_size, gamma=gamma, gamma_max=gamma_max, variance_alpha=variance_alpha,
         variance_window=variance_window, otsu_bins=otsu_bins, closing_size=closing_size,
         fill_holes=fill_holes, spatial_dims=spatial_dims)
    thr = c_double()
    res, rep = _call("lumen_segment_febds", image, o, device, precision, (ctypes.byref(thr),))
    rep["threshold"] = float(thr.value)
    return _finish(res, rep, return_report)


def tophat(image, radius=None, output_mask=None, spatial_dims=None, device=None, precision=None,
           return_report=False):
    """White top-hat max(I - open(I), 0) with a disk (ball with spatial_dims=3) of radius (4):
    the float map, or with output_mask=True the uint8 Otsu mask of the map."""
    o = _new_opts("tophat")
    _set(o, radius=radius, output_mask=output_mask, spatial_dims=spatial_dims)
    res, rep = _call("lumen_segment_tophat", image, o, device, precision)
    return _finish(res, rep, return_report)


def kmeans(image, k=None, max_iterations=None, tolerance=None, seed=None, labels=None, device=None,
           precision=None, return_report=False):
    """k-means on intensities (k-means++ seeding): the brightest-cluster mask, or with labels=True
    the labels 0..k-1 (darkest first). report["clusters"]: k, centers, sizes, iterations,
    converged, objective."""
    o = _new_opts("kmeans")
    _set(o, k=k, max_iterations=max_iterations, tolerance=tolerance, seed=seed, output=_output(labels))
    r = _ClusterResult()
    res, rep = _call("lumen_segment_kmeans", image, o, device, precision, (ctypes.byref(r),))
    rep["clusters"] = _clusters(r)
    return _finish(res, rep, return_report)


def _fuzzy(fn, image, c, m, max_iterations, tolerance, seed, labels, eta, a, b, tau, device, precision,
           return_report):
    o = _new_opts("fcm")
    _set(o, c=c, m=m, max_iterations=max_iterations, tolerance=tolerance, seed=seed, output=_output(labels),
         eta=eta, a=a, b=b, tau=tau)
    r = _ClusterResult()
    res, rep = _call(fn, image, o, device, precision, (ctypes.byref(r),))
    rep["clusters"] = _clusters(r)
    return _finish(res, rep, return_report)


def fcm(image, c=None, m=None, max_iterations=None, tolerance=None, seed=None, labels=None, device=None,
        precision=None, return_report=False):
    """Fuzzy c-means on intensities: the brightest-cluster mask (hard assignment), or labels."""
    return _fuzzy("lumen_segment_fcm", image, c, m, max_iterations, tolerance, seed, labels, None, None, None,
                  None, device, precision, return_report)


def pfcm(image, c=None, m=None, max_iterations=None, tolerance=None, seed=None, labels=None, eta=None, a=None,
         b=None, tau=None, device=None, precision=None, return_report=False):
    """Possibilistic fuzzy c-means: the mask of voxels atypical of every cluster (max typicality
    < tau) and not in the darkest one, or the labels."""
    return _fuzzy("lumen_segment_pfcm", image, c, m, max_iterations, tolerance, seed, labels, eta, a, b, tau,
                  device, precision, return_report)


def region_grow(image, seeds=None, threshold=None, max_gradient=None, connectivity=None, smooth_radius=None,
                device=None, precision=None, return_report=False):
    """Seeded region growing: uint8 0/1. seeds: None (the regional maxima) or a sequence of voxel
    indices in numpy order ((row, col) or (z, row, col))."""
    a = _prepare(image)
    o = _new_opts("region_grow")
    _set(o, threshold=threshold, max_gradient=max_gradient, connectivity=connectivity,
         smooth_radius=smooth_radius)
    keep = None
    if seeds is not None:
        s = np.asarray(seeds, dtype=np.int64)
        if s.ndim == 1:
            s = s[None, :]
        if s.ndim != 2 or s.shape[1] != a.ndim:
            raise ValueError("seeds: expected a sequence of %d-element voxel indices (numpy order)" % a.ndim)
        keep = np.ascontiguousarray(s[:, ::-1])  # lumen order: x first
        o.seeds = keep.ctypes.data_as(P(c_int64))
        o.n_seeds = keep.shape[0]
    res, rep = _call("lumen_segment_region_grow", a, o, device, precision)
    del keep
    return _finish(res, rep, return_report)


def breast_mask(image, otsu_bins=None, connectivity=None, fill_holes=None, spatial_dims=None, device=None,
                precision=None, return_report=False):
    """Otsu threshold, then the largest connected component: uint8 0/1."""
    o = _new_opts("breast_mask")
    _set(o, otsu_bins=otsu_bins, connectivity=connectivity, fill_holes=fill_holes, spatial_dims=spatial_dims)
    res, rep = _call("lumen_segment_breast_mask", image, o, device, precision)
    return _finish(res, rep, return_report)


def window(image, center=None, width=None, out_max=None, device=None, precision=None, return_report=False):
    """DICOM window clamp((x - (C - W/2)) / W, 0, 1) * out_max; center/width None = the data's
    middle and range."""
    o = _new_opts("window")
    _set(o, center=center, width=width, out_max=out_max)
    res, rep = _call("lumen_segment_window", image, o, device, precision)
    return _finish(res, rep, return_report)


def normalize_bits(image, bits=None, target=None, device=None, precision=None, return_report=False):
    """clamp(x / (2^bits - 1), 0, 1) * target; bits None = inferred (8/12/16 from the maximum).
    report["bits"]: the bit depth used."""
    o = _new_opts("normalize_bits")
    _set(o, bits=bits, target=target)
    used = c_int()
    res, rep = _call("lumen_segment_normalize_bits", image, o, device, precision, (ctypes.byref(used),))
    rep["bits"] = int(used.value)
    return _finish(res, rep, return_report)


def _grail_opts(n_scales, n_orientations, delta, k_max, steps, bins, quantize, out_max):
    o = _new_opts("grail")
    _set(o, n_scales=n_scales, n_orientations=n_orientations, delta=delta, k_max=k_max, steps=steps, bins=bins,
         quantize=quantize, out_max=out_max)
    return o


def grail(image, n_scales=None, n_orientations=None, delta=None, k_max=None, steps=None, bins=None, quantize=None,
          out_max=None, device=None, precision=None, return_report=False):
    """GRAIL automatic windowing (Albiol et al. 2017) of a 2-D image: returns (windowed, a, b), the
    float image clamp((x - a) / (b - a), 0, 1) * out_max and the window found; with
    return_report=True (windowed, a, b, report), report["grail"] = a, b, metric, delta, bits,
    evaluations. CPU only (a CUDA request runs on the CPU, report["fell_back"])."""
    o = _grail_opts(n_scales, n_orientations, delta, k_max, steps, bins, quantize, out_max)
    r = _GrailResult()
    res, rep = _call("lumen_segment_grail", image, o, device, precision, (ctypes.byref(r),))
    rep["grail"] = {"a": r.a, "b": r.b, "metric": r.metric, "delta": r.delta, "bits": int(r.bits),
                    "evaluations": int(r.evaluations)}
    return (res, r.a, r.b, rep) if return_report else (res, r.a, r.b)


def grail_metric(image, a, b, n_scales=None, n_orientations=None, bins=None, quantize=None, out_max=None):
    """The GRAIL metric (bits) of the window [a, b] of a 2-D image."""
    o = _grail_opts(n_scales, n_orientations, None, None, None, bins, quantize, out_max)
    arr = _prepare(image)
    ctx = _lib.context_obj().handle
    img = _wrap_host(arr, ctx)
    m = c_double()
    try:
        check(lib.lumen_segment_grail_metric(ctx, img, ctypes.byref(o), float(a), float(b), ctypes.byref(m)),
              "lumen_segment_grail_metric", ctx)
    finally:
        lib.lumen_image_free(img)
    return float(m.value)


for _f in (febds, tophat, kmeans, fcm, pfcm, region_grow, breast_mask, window, normalize_bits, grail):
    _f.__doc__ += _COMMON
