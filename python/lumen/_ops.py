"""The registry of image operations (include/lumen/ops.h) from Python: every op of the C table with
its names, doc line, kind, output and option descriptors (lumen.op_registry()), and any op run by
name with keyword options (lumen.run_op), which is how ops without a hand-written Python function
(erode, dilate, open, close, white_tophat, ...) appear in the binding on their own.
"""
import ctypes
import math

from . import _lib
from . import _image as _im
from ._lib import lib, check, cstr, pystr, P, c_int, c_double, c_void_p, c_char_p

__all__ = ["op_registry", "op_info", "run_op"]

c_size_t = ctypes.c_size_t
KINDS = ("filter", "segment", "statistic")
OUTPUTS = ("image", "mask", "labels", "varies", "none")
TYPES = ("int", "double", "bool", "enum", "uint64", "double3", "int64_3", "floats", "points")


class _OpOption(ctypes.Structure):  # lumen_op_option
    _fields_ = [("name", c_char_p), ("aliases", c_char_p), ("type", c_int), ("offset", c_size_t),
                ("count_offset", c_size_t), ("min", c_double), ("max", c_double), ("flags", ctypes.c_uint),
                ("enum_names", P(c_char_p)), ("doc", c_char_p)]


class _OpInfo(ctypes.Structure):  # lumen_op_info
    _fields_ = [("name", c_char_p), ("aliases", c_char_p), ("doc", c_char_p), ("kind", c_int), ("output", c_int),
                ("scalar", c_char_p), ("entry", c_char_p), ("opts_size", c_size_t), ("n_options", c_int),
                ("options", P(_OpOption))]


_p = _lib._proto
_p("lumen_op_count", c_int)
_p("lumen_op_at", P(_OpInfo), c_int)
_p("lumen_op_find", P(_OpInfo), c_char_p)
_p("lumen_op_has_cuda", c_int, P(_OpInfo))
_p("lumen_op_option_default_text", c_int, P(_OpInfo), c_int, c_char_p, c_size_t)
_p("lumen_op_option_range_text", None, P(_OpOption), c_char_p, c_size_t)
_p("lumen_op_args_create", c_int, c_void_p, c_char_p, P(c_void_p))
_p("lumen_op_args_free", None, c_void_p)
_p("lumen_op_args_opts", c_void_p, c_void_p)
_p("lumen_op_args_set", c_int, c_void_p, c_void_p, c_char_p, c_char_p)
_p("lumen_op_args_run", c_int, c_void_p, c_void_p, c_void_p, P(c_void_p), P(c_double))


def _words(b):
    return pystr(b).split() if b else []


def _option(info, j):
    o = info.options[j]
    buf = ctypes.create_string_buffer(256)
    lib.lumen_op_option_default_text(ctypes.byref(info), j, buf, 256)
    default = pystr(buf.value)
    lib.lumen_op_option_range_text(ctypes.byref(o), buf, 256)
    names = []
    if o.enum_names:
        k = 0
        while o.enum_names[k] is not None:
            names.append(pystr(o.enum_names[k]))
            k += 1
    return {"name": pystr(o.name), "aliases": _words(o.aliases), "type": TYPES[o.type], "min": o.min, "max": o.max,
            "flags": int(o.flags), "enum_names": names, "default": default, "range": pystr(buf.value),
            "doc": pystr(o.doc)}


def _describe(ptr):
    i = ptr.contents
    return {"name": pystr(i.name), "aliases": _words(i.aliases), "doc": pystr(i.doc), "kind": KINDS[i.kind],
            "output": OUTPUTS[i.output], "scalar": pystr(i.scalar), "entry": pystr(i.entry),
            "cuda": bool(lib.lumen_op_has_cuda(ptr)), "options": [_option(i, j) for j in range(i.n_options)]}


def op_registry():
    """Every op of the C registry in table order: dicts with name, aliases, doc, kind ("filter",
    "segment", "statistic"), output, scalar, entry (the C function), cuda and options (name,
    aliases, type, min, max, enum_names, default, range, doc)."""
    return [_describe(lib.lumen_op_at(k)) for k in range(lib.lumen_op_count())]


def op_info(name):
    """The registry's dict of the op called name or with that alias; None when there is none."""
    ptr = lib.lumen_op_find(cstr(name))
    return _describe(ptr) if ptr else None


def _text(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    if isinstance(v, (list, tuple)):
        return ",".join(_text(x) for x in v)
    return str(v)


class OpArgs(object):
    """A lumen_op_args: the op's options struct filled by name (freed with the object)."""

    def __init__(self, name, ctx, options):
        self.ctx = ctx
        self.handle = c_void_p()
        check(lib.lumen_op_args_create(ctx, cstr(name), ctypes.byref(self.handle)), "lumen_op_args_create", ctx)
        for k, v in options.items():
            if v is None:
                continue
            items = v if k in ("seeds", "seed_point") and v and isinstance(v[0], (list, tuple)) else [v]
            for item in items:
                check(lib.lumen_op_args_set(ctx, self.handle, cstr(k), cstr(_text(item))), "lumen_op_args_set", ctx)

    @property
    def opts(self):
        return lib.lumen_op_args_opts(self.handle)

    def __del__(self):
        h, self.handle = getattr(self, "handle", None), None
        if h:
            try:
                lib.lumen_op_args_free(h)
            except Exception:  # interpreter shutdown
                pass


def run_op(name, image, device=None, precision=None, **options):
    """Runs the registry's op called name (or an alias) on a numpy array with keyword options
    (the C field names or their aliases; lists as sequences; NaN or "auto" for automatic values).
    Returns the result array; an op with a number besides its image (otsu: the threshold, label:
    the count, febds: the threshold, normalize_bits: the bits) returns (array, number); a
    statistic returns its number. Errors raise LumenError with the C message naming the option,
    its value and its range."""
    info = op_info(name)
    if info is None:
        raise _lib.error_for(_lib.status_code("invalid_argument"),
                             "run_op: op %r is unknown, expected one of %s" % (name, ", ".join(
                                 o["name"] for o in op_registry())))
    a = _im._prepare(image)
    ctxobj = _lib.context_obj()
    ctx = ctxobj.handle
    opts = dict(options)
    if device is not None:
        opts["device"] = device
    if precision is not None:
        opts["precision"] = precision
    args = OpArgs(info["name"], ctx, opts)
    img = _im._wrap_host(a, ctx)
    out, value = c_void_p(), c_double()
    try:
        check(lib.lumen_op_args_run(ctx, args.handle, img, ctypes.byref(out), ctypes.byref(value)), info["name"], ctx)
        res = _im._to_numpy(out, a.shape, False, adopt=True) if out.value else None
    finally:
        if out.value:
            lib.lumen_image_free(out)
        lib.lumen_image_free(img)
    if info["output"] == "none":
        return value.value
    return (res, value.value) if info["scalar"] else res
