"""Image files (include/lumen/io.h): lumen.read_image for PNG, NIfTI and DICOM, lumen.write_image
for PNG and NIfTI.

The C library reads and writes; this module only wraps. read_image returns a numpy view of the
image the C reader allocated (no copy: the lumen_image is freed when the last array using its
memory is gone). write_image wraps the caller's array with lumen_image_wrap (no copy when it is
C-contiguous) and calls the C writer, which is atomic and refuses to replace an existing file
unless overwrite=True.

Axis order as everywhere in the binding: a numpy array of shape (z, y, x) is the lumen image with
dims (x, y, z). A PNG reads as (height, width), row 0 the top row; a NIfTI volume as (t,) z, y, x,
i.e. the transpose of nibabel's array. Per-axis metadata (shape, spacing) follow the numpy axes;
the affine is NIfTI's voxel (i, j, k) -> world matrix, i indexing the LAST numpy axis.

Formats are decided by the C library's format table (lumen_image_probe: the content first, the
name as a hint; lumen_image_format_of_name for the file to write), or given with format=; a new
format is one more row of the table (src/io/image_formats.c) and of _FORMATS here (its Python
reader and writer).
"""
import ctypes
import json
import os
import weakref

import numpy as np

from . import _lib
from ._lib import lib, check, cstr, pystr, P, c_int, c_int64, c_double, c_void_p, c_char_p
from ._device import _Device

__all__ = ["read_image", "write_image", "image_formats"]

# ---------------------------------------------------------------------------- io.h mirrors
# No _init() functions exist for these structs (zero = defaults); test_io.py compares their sizes
# with the C compiler's.


class _NiftiReadOpts(ctypes.Structure):
    _fields_ = [("keep_type", c_int), ("max_bytes", c_int64)]


class _NiftiInfo(ctypes.Structure):
    _fields_ = [("version", c_int), ("compressed", c_int), ("swapped", c_int), ("ndim", c_int),
                ("dims", c_int64 * 4), ("datatype", c_int), ("stored_dtype", c_int),
                ("scl_slope", c_double), ("scl_inter", c_double), ("scaled", c_int),
                ("qform_code", c_int), ("sform_code", c_int), ("affine_source", c_char_p),
                ("affine", c_double * 16), ("pixdim", c_double * 8), ("space_unit", c_int),
                ("time_unit", c_int), ("time_step", c_double), ("time_step_s", c_double),
                ("toffset", c_double), ("intent_code", c_int), ("intent_name", ctypes.c_char * 17),
                ("descrip", ctypes.c_char * 81), ("cal_min", c_double), ("cal_max", c_double),
                ("vox_offset", c_int64)]


class _NiftiWriteOpts(ctypes.Structure):
    _fields_ = [("overwrite", c_int), ("version", c_int), ("intent_code", c_int),
                ("intent_name", c_char_p), ("description", c_char_p), ("sform_code", c_int),
                ("qform_code", c_int), ("space_unit", c_int), ("time_unit", c_int),
                ("toffset", c_double), ("cal_min", c_double), ("cal_max", c_double),
                ("compress_level", c_int)]


class _PngReadOpts(ctypes.Structure):
    _fields_ = [("to_float", c_int), ("max_bytes", c_int64)]


class _PngWriteOpts(ctypes.Structure):
    _fields_ = [("bit_depth", c_int), ("scaling", c_int), ("lo", c_double), ("hi", c_double),
                ("overwrite", c_int)]


class _DicomReadOpts(ctypes.Structure):
    _fields_ = [("max_bytes", c_int64)]


class _DicomInfo(ctypes.Structure):
    _fields_ = [("rows", c_int64), ("columns", c_int64), ("frames", c_int64), ("samples_per_pixel", c_int),
                ("bits_allocated", c_int), ("bits_stored", c_int), ("high_bit", c_int),
                ("pixel_representation", c_int), ("photometric", ctypes.c_char * 17), ("inverted", c_int),
                ("rescale_slope", c_double), ("rescale_intercept", c_double), ("has_rescale", c_int),
                ("spacing", c_double * 2), ("spacing_source", c_char_p), ("has_window", c_int),
                ("window_center", c_double), ("window_width", c_double), ("modality", ctypes.c_char * 17),
                ("transfer_syntax", ctypes.c_char * 65), ("isolated", c_int)]


class _DicomSeriesOpts(ctypes.Structure):
    _fields_ = [("max_bytes", c_int64), ("series_uid", c_char_p), ("headers_only", c_int)]


class _DicomSeriesInfo(ctypes.Structure):
    _fields_ = [("series_uid", ctypes.c_char * 65), ("series_description", ctypes.c_char * 65),
                ("files", c_int64), ("slices", c_int64), ("frames", c_int64), ("affine", c_double * 16),
                ("spacing", c_double * 3), ("frame_times_s", P(c_double)), ("frame_order", c_char_p),
                ("frame_time_source", c_char_p), ("flip_angle_deg", c_double), ("repetition_time_s", c_double),
                ("volume_time_s", c_double), ("timing_note", ctypes.c_char * 512), ("mosaic", c_int), ("series_number", c_int64),
                ("echo_time_s", c_double), ("inversion_time_s", c_double), ("field_strength_t", c_double),
                ("slice_thickness_mm", c_double), ("modality", ctypes.c_char * 17),
                ("manufacturer", ctypes.c_char * 65), ("model_name", ctypes.c_char * 65),
                ("protocol_name", ctypes.c_char * 65), ("image_type", ctypes.c_char * 97),
                ("acquisition_time", ctypes.c_char * 20), ("columns", c_int64), ("rows", c_int64),
                ("timing_disagree", c_int), ("philips_float_scaling", c_int),
                ("stored_integers", c_int), ("stored_signed", c_int), ("stored_bits", c_int),
                ("geometry_unknown", c_int), ("lossy_files", c_int64)]


class _FormatInfo(ctypes.Structure):
    _fields_ = [("format", c_int), ("name", c_char_p), ("description", c_char_p), ("suffixes", c_char_p),
                ("holds", ctypes.c_uint), ("can_write", c_int), ("by_content", c_int), ("suffix_length", c_int)]


PNG_SCALINGS = ("clip", "minmax", "range")  # lumen_png_scaling order (io.h has no name function)


def _p(name, restype, *args):
    # optional: a liblumen.so built without the I/O module (no nifti_clib/cJSON) has none of them
    return _lib._proto(name, restype, *args, optional=True)


_HAVE_IO = all(f is not None for f in (
    _p("lumen_nifti_read", c_int, c_void_p, c_char_p, P(_NiftiReadOpts), P(c_void_p), P(_NiftiInfo)),
    _p("lumen_nifti_read_header", c_int, c_void_p, c_char_p, P(_NiftiReadOpts), P(_NiftiInfo)),
    _p("lumen_nifti_write", c_int, c_void_p, c_char_p, c_void_p, P(_NiftiWriteOpts)),
    _p("lumen_png_read", c_int, c_void_p, c_char_p, P(_PngReadOpts), P(c_void_p), P(c_int)),
    _p("lumen_png_write", c_int, c_void_p, c_char_p, c_void_p, P(_PngWriteOpts))))
# the format table (include/lumen/io.h "image formats"): every format decision is the library's
_HAVE_FORMATS = all(f is not None for f in (
    _p("lumen_image_format_count", c_int),
    _p("lumen_image_format_get", c_int, c_int, P(_FormatInfo)),
    _p("lumen_image_format_of_name", c_int, c_char_p, P(_FormatInfo)),
    _p("lumen_image_probe", c_int, c_void_p, c_char_p, P(_FormatInfo))))
# DICOM: in every liblumen.so with the I/O module (a build without GDCM answers "not built")
_HAVE_DICOM = all(f is not None for f in (
    _p("lumen_dicom_read", c_int, c_void_p, c_char_p, P(_DicomReadOpts), P(c_void_p), P(_DicomInfo)),))
# DICOM series (folders): the same reader as lumen dce/t1/convert, and convert's sidecar
_HAVE_DICOM_SERIES = all(f is not None for f in (
    _p("lumen_dicom_series_read", c_int, c_void_p, P(c_char_p), c_int, P(_DicomSeriesOpts), P(c_void_p),
       P(_DicomSeriesInfo)),
    _p("lumen_dicom_series_info_clear", None, P(_DicomSeriesInfo)),
    _p("lumen_dicom_series_sidecar", c_int, c_void_p, P(_DicomSeriesInfo), P(c_void_p)),
    _p("lumen_json_to_text", c_int, c_void_p, c_void_p, P(c_void_p)),
    _p("lumen_json_free", None, c_void_p)))
_lib._proto("lumen_image_set_spacing", c_int, c_void_p, c_void_p, P(c_double), c_int)
_lib._proto("lumen_image_get_spacing", c_int, c_void_p, P(c_double), c_int)
_lib._proto("lumen_image_set_affine", c_int, c_void_p, c_void_p, P(c_double))
_lib._proto("lumen_image_get_affine", c_int, c_void_p, P(c_double))
# (lumen_image_wrap/free/ndim/dim/dtype/nbytes/data are declared by _image.py, imported first)


def _dtype_code(name):
    v = c_int()
    if lib.lumen_dtype_parse(cstr(name), ctypes.byref(v)) != 0:
        raise ImportError("lumen: the library does not know dtype %s" % name)
    return v.value


_NUMPY_OF = {_dtype_code(n): np.dtype(n) for n in
             ("float32", "float64", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
              "float16")}  # lumen float16 is IEEE binary16, numpy's float16
_CODE_OF = {dt: code for code, dt in _NUMPY_OF.items()}


def _require_io(fn):
    if not _HAVE_IO:
        raise _lib.error_for(_lib.status_code("not_built"),
                             "%s: %s was built without the I/O module (nifti_clib, cJSON, zlib, "
                             "xxHash not found at build time): no PNG or NIfTI" % (fn, _lib.library_path()), fn)


# ---------------------------------------------------------------------------- C image <-> numpy


def _view(img):
    """A numpy array over the host image's memory; frees the image when no array uses it any more."""
    try:
        code = lib.lumen_image_dtype(img)
        if code not in _NUMPY_OF:
            raise _lib.LumenError(_lib.status_code("unsupported"),
                                  "image dtype %s has no numpy type" % pystr(lib.lumen_dtype_name(code)))
        nd = lib.lumen_image_ndim(img)
        shape = tuple(int(lib.lumen_image_dim(img, i)) for i in reversed(range(nd)))
        nbytes = int(lib.lumen_image_nbytes(img))
        buf = (ctypes.c_char * nbytes).from_address(lib.lumen_image_data(img))
    except BaseException:
        lib.lumen_image_free(img)
        raise
    weakref.finalize(buf, lib.lumen_image_free, c_void_p(img.value))
    return np.frombuffer(buf, dtype=_NUMPY_OF[code]).reshape(shape)


def _geometry(img, ndim):
    sp = (c_double * 4)()
    aff = (c_double * 16)()
    lib.lumen_image_get_spacing(img, sp, ndim)
    lib.lumen_image_get_affine(img, aff)
    return tuple(float(v) for v in reversed(sp[:ndim])), np.array(aff[:], dtype=np.float64).reshape(4, 4)


def _wrap(array, ctx, fn):
    a = np.asarray(array)
    if a.dtype == np.bool_:
        a = a.view(np.uint8)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))  # the C library takes native byte order
    if a.dtype not in _CODE_OF:
        raise TypeError("%s: array dtype %s: expected one of %s (or bool)"
                        % (fn, a.dtype, ", ".join(sorted(str(d) for d in _CODE_OF))))
    if not 1 <= a.ndim <= 4:
        raise ValueError("%s: array of %d dimensions, expected 1 to 4" % (fn, a.ndim))
    if a.size == 0:
        raise ValueError("%s: array of shape %s is empty" % (fn, a.shape))
    a = np.ascontiguousarray(a)  # no copy when already C-contiguous
    dims = (c_int64 * a.ndim)(*reversed(a.shape))
    img = c_void_p()
    check(lib.lumen_image_wrap(ctx, c_void_p(a.ctypes.data), a.ndim, dims, _CODE_OF[a.dtype],
                               _Device(0, 0), ctypes.byref(img)), "lumen_image_wrap", ctx)
    return a, img


def _set_geometry(img, a, spacing, affine, ctx, fn):
    if spacing is not None:
        s = np.asarray(spacing, dtype=np.float64).ravel()
        if s.size != a.ndim:
            raise ValueError("%s: spacing has %d values, expected one per axis of the %d-D array (numpy order)"
                             % (fn, s.size, a.ndim))
        check(lib.lumen_image_set_spacing(ctx, img, (c_double * a.ndim)(*s[::-1]), a.ndim),
              "lumen_image_set_spacing", ctx)
    if affine is not None:
        m = np.asarray(affine, dtype=np.float64)
        if m.shape != (4, 4):
            raise ValueError("%s: affine of shape %s, expected (4, 4)" % (fn, m.shape))
        check(lib.lumen_image_set_affine(ctx, img, (c_double * 16)(*m.ravel())), "lumen_image_set_affine", ctx)


# ---------------------------------------------------------------------------- NIfTI


def _nifti_meta(info, spacing, affine, arr):
    return {"format": "nifti", "shape": arr.shape, "dtype": str(arr.dtype), "spacing": spacing,
            "affine": affine, "affine_source": pystr(info.affine_source), "version": info.version,
            "compressed": bool(info.compressed), "datatype": info.datatype,
            "stored_dtype": pystr(lib.lumen_dtype_name(info.stored_dtype)),
            "scl_slope": info.scl_slope, "scl_inter": info.scl_inter, "scaled": bool(info.scaled),
            "qform_code": info.qform_code, "sform_code": info.sform_code,
            "pixdim": tuple(info.pixdim), "space_unit": info.space_unit, "time_unit": info.time_unit,
            "time_step": info.time_step, "time_step_s": info.time_step_s, "toffset": info.toffset,
            "intent_code": info.intent_code, "intent_name": pystr(info.intent_name),
            "description": pystr(info.descrip), "cal_min": info.cal_min, "cal_max": info.cal_max}


def _asks_scaling(info):
    return info.scl_slope != 0 and (info.scl_slope != 1 or info.scl_inter != 0)


def _read_nifti(path, ctx, apply_scaling, max_bytes):
    opts = _NiftiReadOpts(keep_type=1, max_bytes=max_bytes)
    info = _NiftiInfo()
    if apply_scaling is None:  # the values the file means: scaled when it asks for a slope/intercept
        check(lib.lumen_nifti_read_header(ctx, cstr(path), ctypes.byref(opts), ctypes.byref(info)),
              "lumen_nifti_read_header", ctx)
        apply_scaling = _asks_scaling(info)
    opts.keep_type = 0 if apply_scaling else 1
    img = c_void_p()
    check(lib.lumen_nifti_read(ctx, cstr(path), ctypes.byref(opts), ctypes.byref(img), ctypes.byref(info)),
          "lumen_nifti_read", ctx)
    nd = lib.lumen_image_ndim(img)
    spacing, affine = _geometry(img, nd)
    arr = _view(img)
    return arr, _nifti_meta(info, spacing, affine, arr)


_NIFTI_KEYS = {"overwrite", "version", "intent_code", "intent_name", "description", "sform_code",
               "qform_code", "space_unit", "time_unit", "toffset", "cal_min", "cal_max", "compress_level"}


def _write_nifti(path, a, img, meta, ctx):
    o = _NiftiWriteOpts()
    keep = []  # the C strings must outlive the call
    for k, v in meta.items():
        if k in ("intent_name", "description"):
            b = cstr(v) if v else None
            keep.append(b)
            setattr(o, k, b)
        elif k in ("toffset", "cal_min", "cal_max"):
            setattr(o, k, float(v))
        else:
            setattr(o, k, int(v))
    check(lib.lumen_nifti_write(ctx, cstr(path), img, ctypes.byref(o)), "lumen_nifti_write", ctx)


# ---------------------------------------------------------------------------- PNG


def _read_png(path, ctx, apply_scaling, max_bytes):
    if apply_scaling:
        raise ValueError("read_image: apply_scaling is for NIfTI; a PNG holds its values as they are")
    opts = _PngReadOpts(to_float=0, max_bytes=max_bytes)
    img = c_void_p()
    bits = c_int()
    check(lib.lumen_png_read(ctx, cstr(path), ctypes.byref(opts), ctypes.byref(img), ctypes.byref(bits)),
          "lumen_png_read", ctx)
    spacing, _ = _geometry(img, lib.lumen_image_ndim(img))
    arr = _view(img)
    return arr, {"format": "png", "shape": arr.shape, "dtype": str(arr.dtype), "spacing": spacing,
                 "bit_depth": bits.value}


_PNG_KEYS = {"overwrite", "bit_depth", "scaling", "lo", "hi"}


def _write_png(path, a, img, meta, ctx):
    o = _PngWriteOpts()
    o.overwrite = int(bool(meta.get("overwrite", False)))
    bd = meta.get("bit_depth")
    o.bit_depth = 0 if bd is None else int(bd)
    scaling = meta.get("scaling")
    if scaling is None:
        scaling = "range" if ("lo" in meta or "hi" in meta) else "clip"
    if scaling not in PNG_SCALINGS:
        raise ValueError("write_image: scaling=%r, expected one of %s" % (scaling, ", ".join(PNG_SCALINGS)))
    o.scaling = PNG_SCALINGS.index(scaling)
    if scaling == "range":
        if "lo" not in meta or "hi" not in meta:
            raise ValueError("write_image: scaling='range' needs lo= and hi= (the window mapped to 0..2^bits-1)")
        o.lo, o.hi = float(meta["lo"]), float(meta["hi"])
    check(lib.lumen_png_write(ctx, cstr(path), img, ctypes.byref(o)), "lumen_png_write", ctx)


# ---------------------------------------------------------------------------- DICOM


def _dicom_preamble(what, apply_scaling, have, reader):
    """DICOM is always read through its modality LUT, by a library built with the reader."""
    if apply_scaling is False:
        raise ValueError("read_image: a DICOM %s is always read through its modality LUT "
                         "(RescaleSlope/Intercept); apply_scaling=False is for NIfTI" % what)
    if not have:
        raise _lib.error_for(_lib.status_code("not_built"), "read_image: %s has no %s"
                             % (_lib.library_path(), reader), "read_image")


def _read_dicom(path, ctx, apply_scaling, max_bytes):
    _dicom_preamble("image", apply_scaling, _HAVE_DICOM, "DICOM reader")
    opts = _DicomReadOpts(max_bytes=max_bytes)
    info = _DicomInfo()
    img = c_void_p()
    check(lib.lumen_dicom_read(ctx, cstr(path), ctypes.byref(opts), ctypes.byref(img), ctypes.byref(info)),
          "lumen_dicom_read", ctx)
    spacing, _ = _geometry(img, lib.lumen_image_ndim(img))
    arr = _view(img)
    return arr, {"format": "dicom", "shape": arr.shape, "dtype": str(arr.dtype), "spacing": spacing,
                 "rows": info.rows, "columns": info.columns, "frames": info.frames,
                 "bits_allocated": info.bits_allocated, "bits_stored": info.bits_stored,
                 "high_bit": info.high_bit, "pixel_representation": info.pixel_representation,
                 "photometric": pystr(info.photometric), "inverted": bool(info.inverted),
                 "rescale_slope": info.rescale_slope, "rescale_intercept": info.rescale_intercept,
                 "has_rescale": bool(info.has_rescale), "spacing_source": pystr(info.spacing_source),
                 "window_center": info.window_center if info.has_window else None,
                 "window_width": info.window_width if info.has_window else None,
                 "modality": pystr(info.modality), "transfer_syntax": pystr(info.transfer_syntax),
                 "decoded_in_child_process": bool(info.isolated)}


# lumen_json_to_text's text is malloc'd by liblumen, freed with the C library's free()
_libc_free = ctypes.CDLL(None).free
_libc_free.argtypes = [c_void_p]
_libc_free.restype = None


def _sidecar(ctx, info):
    """The BIDS sidecar lumen convert writes for this series, as a dict."""
    js = c_void_p()
    check(lib.lumen_dicom_series_sidecar(ctx, ctypes.byref(info), ctypes.byref(js)), "lumen_dicom_series_sidecar", ctx)
    text = c_void_p()
    try:
        check(lib.lumen_json_to_text(ctx, js, ctypes.byref(text)), "lumen_json_to_text", ctx)
        try:
            return json.loads(ctypes.string_at(text).decode("utf-8"))
        finally:
            _libc_free(text)
    finally:
        lib.lumen_json_free(js)


def _read_dicom_series(paths, ctx, apply_scaling, max_bytes, series):
    _dicom_preamble("series", apply_scaling, _HAVE_DICOM_SERIES, "DICOM series reader")
    arr_paths = (c_char_p * len(paths))(*[cstr(p) for p in paths])
    opts = _DicomSeriesOpts(max_bytes=max_bytes, series_uid=cstr(series) if series is not None else None)
    info = _DicomSeriesInfo()
    img = c_void_p()
    check(lib.lumen_dicom_series_read(ctx, arr_paths, len(paths), ctypes.byref(opts), ctypes.byref(img),
                                      ctypes.byref(info)), "lumen_dicom_series_read", ctx)
    try:
        spacing, affine = _geometry(img, lib.lumen_image_ndim(img))
        arr = _view(img)
        times = [info.frame_times_s[i] for i in range(info.frames)] if info.frame_times_s else None
        meta = {"format": "dicom_series", "shape": arr.shape, "dtype": str(arr.dtype), "spacing": spacing,
                "affine": affine, "series_uid": pystr(info.series_uid),
                "series_description": pystr(info.series_description),
                "series_number": info.series_number if info.series_number >= 0 else None,
                "files": info.files, "slices": info.slices, "frames": info.frames,
                "frame_times_s": times, "frame_order": pystr(info.frame_order),
                "frame_time_source": pystr(info.frame_time_source), "timing_note": pystr(info.timing_note),
                "flip_angle_deg": info.flip_angle_deg, "repetition_time_s": info.repetition_time_s,
                "echo_time_s": info.echo_time_s, "mosaic": info.mosaic or None,
                "modality": pystr(info.modality), "manufacturer": pystr(info.manufacturer),
                "geometry_unknown": bool(info.geometry_unknown), "lossy_files": int(info.lossy_files),
                "sidecar": _sidecar(ctx, info)}
        for k in ("flip_angle_deg", "repetition_time_s", "echo_time_s"):
            if meta[k] != meta[k]:
                meta[k] = None
        return arr, meta
    finally:
        lib.lumen_dicom_series_info_clear(ctypes.byref(info))


def _write_dicom(path, a, img, meta, ctx):
    raise ValueError("write_image: lumen reads DICOM but does not write it: write NIfTI or PNG")


# ---------------------------------------------------------------------------- dispatch

# the library's format name -> (reader, writer, keys the writer takes); its suffixes come from the
# library's table (image_formats()).
_FORMATS = {
    "png": (_read_png, _write_png, _PNG_KEYS),
    "nifti": (_read_nifti, _write_nifti, _NIFTI_KEYS),
    "dicom": (_read_dicom, _write_dicom, set()),
}
# keys read_image returns that describe the file read and are not written (so that
# write_image(path, array, **meta) accepts read_image's meta)
_DESCRIPTIVE = {"format", "shape", "dtype", "affine_source", "compressed", "datatype", "stored_dtype",
                "scl_slope", "scl_inter", "scaled", "pixdim", "time_step", "time_step_s"}


def _table():
    """The library's rows: [(name, [suffixes])], in its order."""
    rows = []
    for k in range(lib.lumen_image_format_count()):
        f = _FormatInfo()
        if lib.lumen_image_format_get(k, ctypes.byref(f)) == 0 and f.suffixes:
            rows.append((pystr(f.name), pystr(f.suffixes).split()))
    return rows


def image_formats():
    """{format name: file name endings} that read_image and write_image handle (the C library's
    format table; a folder of DICOM files is read too, as a series). {} when the library was built
    without the I/O module."""
    if not _HAVE_FORMATS:
        return {}
    return {name: sfx for name, sfx in _table() if name in _FORMATS}


def _format_of(path, fmt, fn):
    if fmt is not None:
        if fmt not in _FORMATS:
            raise ValueError("%s: format=%r, expected one of %s" % (fn, fmt, ", ".join(_FORMATS)))
        return fmt
    _require_io(fn)
    if not _HAVE_FORMATS:
        raise _lib.error_for(_lib.status_code("not_built"), "%s: %s has no image format table (lumen_image_probe): "
                             "give format=" % (fn, _lib.library_path()), fn)
    expected = ", ".join(e for name, sfx in _table() if name in _FORMATS for e in sfx)
    info = _FormatInfo()
    if fn == "read_image":  # the content first, the name where the content tells nothing
        ctx = _lib.context_obj().handle
        st = lib.lumen_image_probe(ctx, cstr(path), ctypes.byref(info))
        if st != 0 and lib.lumen_image_format_of_name(cstr(path), None) != 0:
            check(st, "lumen_image_probe", ctx)  # named like an image: the library's error (missing file, ...)
        if st != 0:
            raise ValueError("%s: cannot tell the format of '%s': %s (or format=%s)"
                             % (fn, path, pystr(lib.lumen_ctx_last_error(ctx)), "/".join(repr(k) for k in _FORMATS)))
    else:
        lib.lumen_image_format_of_name(cstr(path), ctypes.byref(info))
    name = pystr(info.name) if info.format else None
    if name not in _FORMATS:
        raise ValueError("%s: cannot tell the format of '%s' from its name: expected %s (or format=%s)"
                         % (fn, path, expected, "/".join(repr(k) for k in _FORMATS)))
    return name


def read_image(path, *, format=None, apply_scaling=None, max_bytes=0, series=None):
    """Reads a PNG, NIfTI or DICOM file: returns (array, meta).

    array: numpy, no copy of what the C reader allocated. PNG: (height, width) uint8 or uint16
    (colour becomes Rec. 709 luminance, alpha is dropped). NIfTI: (t, z, y, x) / (z, y, x) / ...
    in the stored type, or float32 with the file's scl_slope/scl_inter applied: apply_scaling=None
    (default) scales exactly when the header asks for a slope/intercept other than 1/0, True
    always returns scaled float32, False keeps the stored values (meta says the slope and intercept).
    meta: "format", "shape", "dtype", "spacing" (one per numpy axis); PNG: "bit_depth" (8, 16);
    NIfTI: "affine" (4x4 voxel -> world), "affine_source", "version", "datatype", "pixdim",
    "scl_slope", "scl_inter", "scaled", "qform_code", "sform_code", units, "intent_code",
    "intent_name", "description", "cal_min", "cal_max", "toffset", "time_step(_s)".
    DICOM (.dcm, or any file with the DICOM signature; docs/DICOM.md): float32 (rows, columns) or
    (frames, rows, columns) after the modality LUT, MONOCHROME1 inverted; meta: "rows", "columns",
    "frames", "bits_*", "photometric", "inverted", "rescale_slope/intercept", "spacing_source",
    "window_center"/"window_width" (None when absent), "modality", "transfer_syntax",
    "decoded_in_child_process".
    DICOM series (a folder, or a list of DICOM files; docs/DICOM.md): the same reader and the same
    array as `lumen convert` and `lumen dce --dce FOLDER`: float32 (frames, slices, y, x) or
    (slices, y, x) in dcm2niix's voxel order; series= picks one series by SeriesInstanceUID or
    SeriesNumber when there are several. meta: "affine" (4x4, NIfTI RAS), "spacing", "series_uid",
    "series_description", "series_number", "files", "slices", "frames", "frame_times_s" (list, s
    from the first frame, or None), "frame_order", "frame_time_source", "timing_note",
    "flip_angle_deg", "repetition_time_s", "echo_time_s", "mosaic", "modality", "manufacturer",
    "geometry_unknown" (True: one file without ImageOrientationPatient/ImagePositionPatient, the
    affine is the spacing only; docs/DICOM.md "No geometry"), "lossy_files" (files lossy compressed:
    their values are not the scanner's), and "sidecar": the BIDS JSON dict
    that lumen convert writes beside the NIfTI.
    max_bytes: the largest image to allocate (0: the library's default, min(16 GiB, memory)).
    Errors: lumen.LumenError with the C library's message naming the file and the field.
    """
    fn = "read_image"
    if isinstance(path, (list, tuple)) or os.path.isdir(os.fspath(path)):
        if format not in (None, "dicom", "dicom_series"):
            raise ValueError("%s: a folder or a list of files is a DICOM series; format=%r" % (fn, format))
        paths = [os.fspath(p) for p in path] if isinstance(path, (list, tuple)) else [os.fspath(path)]
        if not paths:
            raise ValueError("%s: an empty list of files" % fn)
        _require_io(fn)
        return _read_dicom_series(paths, _lib.context_obj().handle, apply_scaling, int(max_bytes), series)
    if series is not None:
        raise ValueError("%s: series= is for a DICOM folder or a list of DICOM files" % fn)
    path = os.fspath(path)
    fmt = _format_of(path, format, fn)
    _require_io(fn)
    ctxobj = _lib.context_obj()
    return _FORMATS[fmt][0](path, ctxobj.handle, apply_scaling, int(max_bytes))


def write_image(path, array, *, format=None, spacing=None, affine=None, **meta):
    """Writes array as PNG or NIfTI (atomically; an existing file is replaced only with overwrite=True).

    The array is handed to C without a copy when C-contiguous. Accepts the meta dict of read_image
    (write_image(p, a, **meta)): its descriptive keys (format, shape, dtype, scl_*, pixdim, ...)
    are ignored. Keys:
      both:  overwrite=False; spacing (one per numpy axis; PNG: only all ones, PNG stores none)
      NIfTI: affine (4x4, voxel (i = last numpy axis) -> world; default: the spacing on the
             diagonal), version (1 or 2), description, intent_name, intent_code, sform_code,
             qform_code, space_unit, time_unit, toffset, cal_min, cal_max, compress_level (.nii.gz).
             Stored in the array's dtype (float16 is stored as float32).
      PNG:   bit_depth (8 or 16; default 16 for 16-bit and wider integers, else 8),
             scaling ("clip": rounded and clipped, default; "minmax"; "range" with lo=, hi=).
    A key the format cannot store raises ValueError (e.g. an affine for PNG).
    """
    fn = "write_image"
    path = os.fspath(path)
    fmt = _format_of(path, format, fn)
    _require_io(fn)
    keys = _FORMATS[fmt][2]
    meta = {k: v for k, v in meta.items() if k not in _DESCRIPTIVE}
    extra = sorted(k for k in meta if k not in keys)
    if extra:
        raise ValueError("%s: %s cannot store %s (it takes %s)"
                         % (fn, fmt, ", ".join(extra), ", ".join(sorted(keys | {"spacing", "affine"}))))
    if fmt == "png":
        if spacing is not None and any(float(s) != 1.0 for s in np.ravel(spacing)):
            raise ValueError("%s: PNG stores no voxel spacing (got %s): write NIfTI to keep it" % (fn, spacing))
        if affine is not None and not np.array_equal(np.asarray(affine, dtype=np.float64), np.eye(4)):
            raise ValueError("%s: PNG stores no affine: write NIfTI to keep it" % fn)
        spacing = affine = None
    ctxobj = _lib.context_obj()
    ctx = ctxobj.handle
    a, img = _wrap(array, ctx, fn)
    try:
        _set_geometry(img, a, spacing, affine, ctx, fn)
        _FORMATS[fmt][1](path, a, img, meta, ctx)
    finally:
        lib.lumen_image_free(img)
