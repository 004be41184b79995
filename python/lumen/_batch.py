"""lumen.process_images: a batch of images through one op on one or several devices, over the C
image-batch engine (lumen_batch_run, include/lumen/batch.h; docs/SCALE.md).

    results = lumen.process_images(arrays, "gaussian", sigma=2.0)               # numpy in, numpy out
    lumen.process_images(paths, "febds", devices="cuda:0,cuda:1", outputs=out_paths)

The engine reads ahead on a reader thread under memory_limit, runs one worker thread per device
of `devices` and hands the results back in input order; every result equals the single op
(lumen.gaussian(a, sigma=2.0), lumen.febds(a), ...) on the same device.

Where the work runs: for an op given by name that the C library runs by name (lumen_batch_op_known:
the filters and segmentations of lumen.gaussian ... lumen.normalize_bits, see _C_OPS) the op's
options are built here exactly as the single Python function builds them (its own defaults,
read from its signature), and the compute stays in C: with numpy inputs and no output paths the
whole batch runs inside one ctypes call with the GIL released. File inputs are read, and output
paths written, by Python callbacks (lumen.read_image / lumen.write_image, C readers underneath)
that take the GIL only for the copy. Any other op (a callable, or the name of a Python op the
library does not run by name, such as "grail" or "convolve") runs in a Python compute callback
on the engine's workers: ordering, read-ahead and memory limit as above, the op itself under the
GIL except where it calls into lumen.
"""
import ctypes
import inspect
import os
import sys
import threading

import numpy as np

from . import _lib
from . import _image as _im
from . import _image_ops as _lo
from . import _segment as _seg
from . import _io
from . import _ops
from ._lib import lib, check, cstr, pystr, P, c_int, c_int64, c_double, c_void_p, c_char_p
from ._device import _Device

__all__ = ["process_images", "batch_ops"]

# ---------------------------------------------------------------------------- batch.h mirrors

_MAX_DEVICES = 64  # LUMEN_BATCH_MAX_DEVICES


class _BatchOpts(_lib.CheckedStructure):
    _fields_ = [("devices", c_char_p), ("no_overlap", c_int), ("memory_limit", c_int64), ("threads", c_int),
                ("item_voxels", c_int64)]


READ_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_int64, P(c_void_p))
COMPUTE_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_int64, c_char_p, c_void_p, P(c_void_p), P(c_double))
WRITE_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_int64, c_void_p, c_double)
PROGRESS_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_int64, c_int64, c_int64)


class _Callbacks(_lib.CheckedStructure):
    _fields_ = [("user", c_void_p), ("read", READ_FN), ("inputs", P(c_void_p)), ("compute", COMPUTE_FN),
                ("op", c_char_p), ("op_opts", c_void_p), ("write", WRITE_FN), ("outputs", P(c_void_p)),
                ("values", P(c_double)), ("progress", PROGRESS_FN)]


class _Report(_lib.CheckedStructure):
    _fields_ = [("workers", c_int), ("devices", ctypes.c_char * 1024), ("used", ctypes.c_char * 1024),
                ("fell_back", c_int), ("reason", ctypes.c_char * 256), ("written", c_int64),
                ("failed_item", c_int64), ("per_worker", c_int64 * _MAX_DEVICES), ("wall_s", c_double),
                ("read_s", c_double), ("compute_s", c_double), ("write_s", c_double), ("peak_bytes", c_int64),
                ("item_bytes", c_int64), ("pinned_bytes", c_int64), ("over_limit", c_int), ("pipelined", c_int),
                ("peak_rss", c_int64)]


_p = _lib._proto
_p("lumen_batch_opts_init", None, P(_BatchOpts))
_p("lumen_batch_report_init", None, P(_Report))
_p("lumen_batch_op_known", c_int, c_char_p)
_p("lumen_batch_run", c_int, c_void_p, c_int64, P(_BatchOpts), P(_Callbacks), P(_Report))
_p("lumen_image_create", c_int, c_void_p, c_int, P(c_int64), c_int, _Device, ctypes.c_uint, P(c_void_p))
_p("lumen_image_count", c_int64, c_void_p)


def _new(cls, init):
    return _lib.opts_from_init(cls, init, "include/lumen/batch.h", "python/lumen/_batch.py")


if _new(_Report, "lumen_batch_report_init").failed_item != -1:
    raise ImportError("lumen: lumen_batch_report layout: failed_item not where python/lumen/_batch.py expects it")
_new(_BatchOpts, "lumen_batch_opts_init")

_ST = {name: _lib.status_code(name) for name in ("invalid_argument", "io_error", "invalid_data", "internal_error")}

# ---------------------------------------------------------------------------- ops by name

# the Python op -> (its function, the C name lumen_batch_run takes: the registry's name of it,
# lumen_op_find, so "absolute" is the C "abs" and "gaussian_laplace" answers to "log" too)
def _registry_name(name):
    info = _ops.op_info(name)
    if info is None:
        raise ImportError("lumen: %r is no op of the C registry (include/lumen/ops.h): python/lumen/_batch.py "
                          "and src/filter/op_table.c are out of step" % name)
    return info["name"]


_FILTERS = {n: (fn, _registry_name(n)) for n, fn in (
    ("gaussian", _im.gaussian), ("dog", _im.dog), ("gaussian_laplace", _im.gaussian_laplace),
    ("median", _im.median), ("morphology", _im.morphology), ("otsu", _im.otsu), ("fill_holes", _im.fill_holes),
    ("label", _im.label), ("gamma", _lo.gamma), ("absolute", _lo.absolute), ("contrast", _lo.contrast),
    ("bandpass", _lo.bandpass), ("sauvola", _lo.sauvola), ("local_variance", _lo.local_variance),
    ("variance_binarize", _lo.variance_binarize), ("largest_component", _lo.largest_component))}
_SEGMENTS = {"febds": (_seg.febds, "febds"), "tophat": (_seg.tophat, "tophat"), "kmeans": (_seg.kmeans, "kmeans"),
             "fcm": (_seg.fcm, "fcm"), "pfcm": (_seg.pfcm, "fcm"), "breast_mask": (_seg.breast_mask, "breast_mask"),
             "window": (_seg.window, "window"), "normalize_bits": (_seg.normalize_bits, "normalize_bits")}
for _n in _SEGMENTS:
    _registry_name(_n)
# the ops with a Python function of their own that stays per image in Python (a tuple result,
# or a list or pointer option the hand-built struct would have to keep alive)
_PYTHON_ONLY = ("grail", "convolve", "region_grow")
_HAND_WRITTEN = {c for _f, c in _FILTERS.values()} | set(_SEGMENTS)


def _registry_batch_ops():
    """The registry's image ops that no hand-written Python function covers (erode, dilate, ...):
    their options are set by name (lumen_op_args) and they run in C."""
    out = []
    for info in _ops.op_registry():
        name = info["name"]
        if info["kind"] == "statistic" or name in _HAND_WRITTEN or name in _PYTHON_ONLY:
            continue
        if lib.lumen_batch_op_known(cstr(name)):
            out.append(name)
    return out


_NOT_FIELDS = ("image", "device", "precision", "raw_bits", "return_report")


def batch_ops():
    """The op names process_images runs in C (the others given by name run per image in Python)."""
    names = [n for n in list(_FILTERS) + list(_SEGMENTS)
             if lib.lumen_batch_op_known(cstr(_FILTERS[n][1] if n in _FILTERS else n))]
    return sorted(names + _registry_batch_ops())


def _check_kwargs(name, fn, kwargs):
    sig = inspect.signature(fn).parameters
    bad = sorted(k for k in kwargs if k not in sig or k in ("image", "device", "return_report"))
    if bad:
        takes = ", ".join(p for p in sig if p not in ("image", "device", "return_report"))
        raise TypeError("process_images: op %r takes no %s (it takes %s)" % (name, ", ".join(bad), takes))
    return sig


def _set_field(o, k, v):
    kind = dict(type(o)._fields_)[k]
    setattr(o, k, float(v) if kind is c_double else int(v))


def _filter_opts(name, kwargs, ndim):
    fn, cname = _FILTERS[name]
    sig = _check_kwargs(name, fn, kwargs)
    vals = {k: p.default for k, p in sig.items() if k not in _NOT_FIELDS}  # the Python op's own defaults
    vals.update({k: v for k, v in kwargs.items() if k in vals})
    o = _im._new_opts(cname)
    if name == "morphology":
        _im._morphology_fields(o, vals["op"], vals["element"], vals["size"], vals["radius"], vals["binary"])
        return o
    for k, v in vals.items():
        if k == "sigma" and name == "gaussian":
            _im._sigma_axes(o, v, ndim)
        elif k == "mode":
            o.mode = _im._mode(v)
        elif k == "units":
            o.units = _im._index(v, ("voxels", "mm"), "units")
        elif k == "high_sigma":
            o.high_sigma = 0.0 if v is None else float(v)
        else:
            _set_field(o, k, v)
    return o


def _segment_opts(name, kwargs):
    fn, key = _SEGMENTS[name]
    _check_kwargs(name, fn, kwargs)
    fields = {k: v for k, v in kwargs.items() if k not in _NOT_FIELDS}
    if "method" in fields:
        fields["method"] = _seg._method(fields["method"])
    if "labels" in fields:
        fields["output"] = _seg._output(fields.pop("labels"))
    o = _seg._new_opts(key)
    _seg._set(o, **fields)
    return o


class _Plan(object):
    """What runs: cname and opts (the C op by name), or fn (a Python compute per image)."""

    def __init__(self, op, kwargs, ndim):
        self.cname = self.opts = self.fn = self.args = None
        self.raw_bits = bool(kwargs.get("raw_bits", False))
        self.kind = op if op in ("otsu", "label") else "image"
        if callable(op):
            self.fn, self.kwargs = op, kwargs
            self.kind = "python"
            return
        name = str(op)
        if name in _FILTERS and lib.lumen_batch_op_known(cstr(_FILTERS[name][1])):
            self.opts, self.cname = _filter_opts(name, kwargs, ndim), _FILTERS[name][1]
        elif name in _SEGMENTS and lib.lumen_batch_op_known(cstr(name)):
            self.opts, self.cname = _segment_opts(name, kwargs), name
        elif _ops.op_info(name) is not None and _ops.op_info(name)["name"] in _registry_batch_ops():
            # a registry op without a Python function of its own: its options by name, run in C
            self.cname = _ops.op_info(name)["name"]
            self.raw_bits = False
            opts = {k: v for k, v in kwargs.items() if k not in ("raw_bits",)}
            self.args = _ops.OpArgs(self.cname, _lib.context_obj().handle, opts)
            return
        else:
            fn = getattr(sys.modules[__package__], name, None)  # the public op of that name, per image in Python
            if not callable(fn) or name.startswith("_") or name == "process_images":
                raise ValueError("process_images: op %r is not a lumen image op: expected one of %s, or a callable "
                                 "taking (array, device)" % (op, ", ".join(batch_ops() + ["grail", "convolve", "..."])))
            self.fn, self.kwargs, self.kind = fn, kwargs, "named"
            return
        self.opts.exec.precision = _im._precision(kwargs.get("precision"))
        self.opts.exec.device = None  # each worker's device (or the input's with devices=None)

    def call_python(self, array, device):
        if self.kind == "named":
            return self.fn(array, device=device, **self.kwargs)
        return self.fn(array, device, **self.kwargs) if self.kwargs else self.fn(array, device)


# ---------------------------------------------------------------------------- the run


class _Run(object):
    """The state the callbacks share; exceptions raised in a callback are kept per item."""

    def __init__(self, items, plan, outputs, progress, memory_limit=None):
        self.items, self.plan, self.outputs, self.progress = items, plan, outputs, progress
        self.memory_limit = memory_limit or 0  # bytes; the file readers refuse what needs more
        self.n = len(items)
        self.shapes = [None] * self.n
        self.meta = [None] * self.n
        self.results = [None] * self.n
        self.errors = {}
        self.lock = threading.Lock()
        self.inputs = []  # the prepared arrays the C images wrap (kept alive through the run)

    def fail(self, i, exc, status):
        with self.lock:
            self.errors.setdefault(i, exc)
        return _ST[status]

    # -- read: a new C image owned by the batch, a copy of the array or of the file read
    def read(self, user, ctx, i, out):
        try:
            item = self.items[i]
            meta = None
            if isinstance(item, np.ndarray):
                a = item
            elif callable(item):  # a loader: reads on the engine's reader thread
                a = item()
            else:
                # an image over the limit is refused from its header, before it is decoded (the
                # engine then refuses any item whose charge alone exceeds the limit, as the CLI does)
                a, meta = _io.read_image(os.fspath(item), max_bytes=self.memory_limit)
            a = _im._prepare(a)
            self.shapes[i], self.meta[i] = a.shape, meta
            dims = (c_int64 * a.ndim)(*reversed(a.shape))
            img = c_void_p()
            check(lib.lumen_image_create(ctx, a.ndim, dims, _im._IN_DTYPES[a.dtype], _Device(0, 0), 0,
                                         ctypes.byref(img)), "lumen_image_create", ctx)
            ctypes.memmove(lib.lumen_image_data(img), a.ctypes.data, a.nbytes)
            out[0] = img.value
            return 0
        except BaseException as exc:  # never let an exception cross into C
            return self.fail(i, exc, "io_error")

    # -- compute in Python (callables and ops the library does not run by name)
    def compute(self, user, ctx, i, device, img, out, value):
        try:
            a = _im._to_numpy(c_void_p(img), self.shapes[i] or (), False)
            res = self.plan.call_python(a, pystr(device) if device else None)
            with self.lock:
                self.results[i] = res
            one = c_void_p()  # the engine carries a 1-voxel placeholder; the result stays here
            check(lib.lumen_image_create(ctx, 1, (c_int64 * 1)(1), _im._IN_DTYPES[np.dtype(np.uint8)],
                                         _Device(0, 0), 1, ctypes.byref(one)), "lumen_image_create", ctx)
            out[0] = one.value
            return 0
        except BaseException as exc:
            return self.fail(i, exc, "invalid_data")

    def result_of(self, img, i, value):
        if self.plan.fn is not None:
            return self.results[i]
        arr = _im._to_numpy(c_void_p(img), self.shapes[i] or (), self.plan.raw_bits)
        if self.plan.kind == "otsu":
            return (float(value), arr)
        if self.plan.kind == "label":
            return (arr, int(value))
        return arr

    # -- write: the output path, or keep the result
    def write(self, user, ctx, i, img, value):
        try:
            res = self.result_of(img, i, value)
            if self.outputs is None:
                with self.lock:
                    self.results[i] = res
            else:
                path = self.outputs[i]
                arr = res[1] if self.plan.kind == "otsu" else res[0] if self.plan.kind == "label" else res
                _io.write_image(path, np.asarray(arr), **self.geometry(i, path))
                with self.lock:
                    self.results[i] = None
            return 0
        except BaseException as exc:
            return self.fail(i, exc, "io_error")

    def geometry(self, i, path):
        """A NIfTI output of a NIfTI input keeps its spacing and affine."""
        meta = self.meta[i] or {}
        if meta.get("format") != "nifti" or _io._format_of(path, None, "write_image") != "nifti":
            return {}
        return {k: meta[k] for k in ("spacing", "affine") if meta.get(k) is not None}

    def on_progress(self, user, i, done, n):
        try:
            return 1 if self.progress is not None and self.progress(int(done), int(n)) else 0
        except BaseException as exc:
            self.fail(int(i), exc, "internal_error")
            return 1


def _report_dict(r):
    return {"workers": r.workers, "devices": pystr(r.devices), "used": pystr(r.used), "fell_back": bool(r.fell_back),
            "reason": pystr(r.reason), "written": int(r.written), "failed_item": int(r.failed_item),
            "per_worker": [int(r.per_worker[w]) for w in range(r.workers)], "wall_s": r.wall_s, "read_s": r.read_s,
            "compute_s": r.compute_s, "write_s": r.write_s, "peak_bytes": int(r.peak_bytes),
            "item_bytes": int(r.item_bytes), "pinned_bytes": int(r.pinned_bytes), "over_limit": bool(r.over_limit),
            "pipelined": int(r.pipelined), "peak_rss": int(r.peak_rss)}


def _batch_opts(devices, overlap, memory_limit, threads):
    o = _new(_BatchOpts, "lumen_batch_opts_init")
    o.devices = cstr(devices) if devices is not None else None
    o.no_overlap = 0 if overlap else 1
    if memory_limit is not None:
        if isinstance(memory_limit, bool) or not isinstance(memory_limit, (int, np.integer)) or memory_limit < 0:
            raise ValueError("process_images: memory_limit=%r, expected None or bytes >= 0" % (memory_limit,))
        o.memory_limit = int(memory_limit)
    o.threads = int(threads or 0)
    return o


def process_images(inputs, op, /, devices="auto", outputs=None, overlap=True, memory_limit=None, threads=None,
                   progress=None, return_report=False, **op_kwargs):
    """Runs op on every image of inputs; returns the results in input order.

    inputs: numpy arrays and/or image file paths (PNG, NIfTI, DICOM: lumen.read_image), or
        loaders (functions of no argument returning an array), called on the reader thread.
    op: the name of a lumen image op ("gaussian", "median", "otsu", "febds", "kmeans", ...; its
        keyword arguments in op_kwargs, as for the single call: inputs and op are positional, so
        lumen.morphology's op= is an op keyword here), or a callable op(array, device) returning
        the result (op_kwargs are passed to it too).
    devices: "auto" (every usable CUDA device, else the CPU), None (one worker, the op's own
        default device), "cpu", "cuda:N", "cuda:all", or a list "cuda:0,cuda:1" / "cpu,cpu".
    outputs: None (return the results) or one path per input: each result is written there
        (lumen.write_image; a NIfTI output of a NIfTI input keeps its spacing and affine; an
        existing file is an error) and the paths are returned.
    overlap: read the next images on a reader thread while the workers compute (default).
    memory_limit: bytes the images in flight may hold (input, result, op scratch); None = no limit.
    threads: CPU threads of each worker (None: the cores, shared among CPU workers).
    progress: progress(done, n) after each image; a true return cancels (LumenError "cancelled").
    return_report: also return the run's report (devices, used, per_worker, times, peak_bytes...).

    Each result equals the single op on that image (lumen.gaussian(a, **op_kwargs), ...) on the
    worker's device; for otsu a (threshold, mask) pair and for label (labels, count), as there.
    Errors stop the batch at the failing image as a loop would: its exception is raised (a
    LumenError naming the item for the C library's errors); with outputs, the images before it
    are written.
    """
    items = list(inputs)
    n = len(items)
    if "device" in op_kwargs:
        raise TypeError("process_images: pass devices=..., not device= (each image runs on its worker's device)")
    if outputs is not None:
        outputs = [os.fspath(p) for p in outputs]
        if len(outputs) != n:
            raise ValueError("process_images: %d outputs for %d inputs, expected one path per input" % (len(outputs), n))
    for k, it in enumerate(items):
        if not isinstance(it, (np.ndarray, str, bytes, os.PathLike)) and not callable(it):
            items[k] = np.asarray(it)
    first = next((it for it in items if isinstance(it, np.ndarray)), None)
    ndim = first.ndim if first is not None else len(np.atleast_1d(op_kwargs.get("sigma", 1.0)))
    plan = _Plan(op, op_kwargs, ndim)
    opts = _batch_opts(devices, overlap, memory_limit, threads)
    run = _Run(items, plan, outputs, progress, memory_limit)
    report = _new(_Report, "lumen_batch_report_init")
    if n:
        _execute(run, plan, opts, report)
    rep = _report_dict(report)
    res = list(outputs) if outputs is not None else run.results
    return (res, rep) if return_report else res


def _execute(run, plan, opts, report):
    n = run.n
    cb = _Callbacks()
    keep = []  # ctypes objects that must outlive the call
    arrays_only = plan.fn is None and run.outputs is None and all(isinstance(it, np.ndarray) for it in run.items)
    ctxobj = _lib.context_obj()
    ctx = ctxobj.handle
    wrapped, outs = [], (c_void_p * n)()
    values = (c_double * n)()
    try:
        if arrays_only:  # everything in C: the arrays wrapped, no callback into Python but progress
            for i, it in enumerate(run.items):
                a = _im._prepare(it)
                run.inputs.append(a)
                run.shapes[i] = a.shape
                wrapped.append(_im._wrap_host(a, ctx))
            ins = (c_void_p * n)(*[w.value for w in wrapped])
            cb.inputs, cb.outputs, cb.values = ctypes.cast(ins, P(c_void_p)), ctypes.cast(outs, P(c_void_p)), values
            keep.append(ins)
        else:
            cb.read = READ_FN(run.read)
            cb.write = WRITE_FN(run.write)
            keep += [cb.read, cb.write]
        if plan.fn is not None:
            cb.compute = COMPUTE_FN(run.compute)
            keep.append(cb.compute)
        else:
            cb.op = cstr(plan.cname)
            cb.op_opts = c_void_p(plan.args.opts) if plan.args is not None else ctypes.cast(ctypes.pointer(plan.opts),
                                                                                            c_void_p)
        if run.progress is not None:
            cb.progress = PROGRESS_FN(run.on_progress)
            keep.append(cb.progress)
        st = lib.lumen_batch_run(ctx, n, ctypes.byref(opts), ctypes.byref(cb), ctypes.byref(report))
        if st != 0:
            failed = int(report.failed_item)
            exc = run.errors.get(failed) or (run.errors[min(run.errors)] if run.errors else None)
            if exc is not None:
                lib.lumen_ctx_clear_error(ctx)
                raise exc
            check(st, "lumen_batch_run", ctx)
        if arrays_only:
            for i in range(n):
                run.results[i] = run.result_of(outs[i], i, values[i])
    finally:
        for w in wrapped:
            lib.lumen_image_free(w)
        for i in range(n):
            if outs[i]:
                lib.lumen_image_free(c_void_p(outs[i]))
    del keep
