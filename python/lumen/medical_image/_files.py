"""PNG and NIfTI files into numpy for the compat layer's Image.from_file.

In order of preference: lumen.read_image (the package's public reader) when the package has it;
lumen's C readers (lumen_png_read, lumen_nifti_read) when the shared library exports them;
else a small reader here: NIfTI-1 (.nii, .nii.gz) with numpy, PNG with Pillow when installed
(the original reads PNG with Pillow too)."""
import ctypes
import gzip
import os
import struct

import numpy as np

from .. import _lib
from .. import _image as _im
from .._lib import lib, check, cstr, P, c_int, c_int64, c_void_p, c_char_p


class _PngReadOpts(ctypes.Structure):
    _fields_ = [("to_float", c_int), ("max_bytes", c_int64)]


_C_READERS = (_lib._proto("lumen_png_read", c_int, c_void_p, c_char_p, P(_PngReadOpts), P(c_void_p), P(c_int),
                           optional=True) is not None and
               _lib._proto("lumen_nifti_read", c_int, c_void_p, c_char_p, c_void_p, P(c_void_p), c_void_p,
                           optional=True) is not None)

# NIfTI-1 datatype codes -> numpy types (the ones medical images use)
_NII_TYPES = {2: "u1", 4: "i2", 8: "i4", 16: "f4", 64: "f8", 256: "i1", 512: "u2", 768: "u4", 1024: "i8", 1280: "u8"}


def _read_nifti1(path):
    """NIfTI-1 single file: voxels as float32 with scl_slope/scl_inter, numpy axis order."""
    opener = gzip.open if str(path).lower().endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 348:
        raise ValueError("%s: not a NIfTI-1 file (%d bytes, header needs 348)" % (path, len(raw)))
    for end in ("<", ">"):
        if struct.unpack(end + "i", raw[:4])[0] == 348:
            break
    else:
        raise ValueError("%s: not a NIfTI-1 file (sizeof_hdr is not 348; NIfTI-2 needs lumen's C reader)" % path)
    dim = struct.unpack(end + "8h", raw[40:56])
    code = struct.unpack(end + "h", raw[70:72])[0]
    vox_offset = int(struct.unpack(end + "f", raw[108:112])[0])
    slope, inter = struct.unpack(end + "2f", raw[112:120])
    if code not in _NII_TYPES:
        raise ValueError("%s: NIfTI datatype %d is not supported here" % (path, code))
    nd = dim[0]
    if not 1 <= nd <= 7:
        raise ValueError("%s: NIfTI dim[0] = %d, expected 1..7" % (path, nd))
    shape = [int(d) for d in dim[1:nd + 1]]
    while len(shape) > 1 and shape[-1] == 1:
        shape.pop()
    dt = np.dtype(end + _NII_TYPES[code])
    n = int(np.prod(shape))
    if len(raw) < vox_offset + n * dt.itemsize:
        raise ValueError("%s: truncated NIfTI data" % path)
    a = np.frombuffer(raw, dt, n, vox_offset).reshape(shape[::-1]).astype(np.float32)
    if slope not in (0.0,) and np.isfinite(slope) and not (slope == 1.0 and inter == 0.0):
        a = a * np.float32(slope) + np.float32(inter)
    return np.ascontiguousarray(a, np.float32)


def _read_png_pillow(path):
    try:
        from PIL import Image as _Pil
    except ImportError:
        raise ImportError("lumen.medical_image: reading PNG needs lumen's C reader (a liblumen.so with the "
                          "io functions) or Pillow; neither is available")
    with _Pil.open(path) as im:
        return np.asarray(np.array(im), np.float32)


def read_array(path):
    """The file's voxels as a float32 numpy array in numpy axis order ((y, x) or (z, y, x));
    PNG values as stored (0..255 or 0..65535), NIfTI with its scl_slope/scl_inter applied."""
    if not os.path.exists(path):
        raise FileNotFoundError("File not found: %s" % path)
    name = str(path).lower()
    if not (name.endswith(".png") or name.endswith(".nii") or name.endswith(".nii.gz")):
        raise ValueError("%s: unsupported file type (expected .png, .nii or .nii.gz)" % path)
    import lumen
    if callable(getattr(lumen, "read_image", None)):
        res = lumen.read_image(str(path))
        res = getattr(res, "pixel_data", getattr(res, "data", res))
        return np.ascontiguousarray(np.asarray(res[0] if isinstance(res, tuple) else res), np.float32)
    if not _C_READERS:
        return _read_png_pillow(path) if name.endswith(".png") else _read_nifti1(path)
    ctxobj = _lib.context_obj()
    ctx = ctxobj.handle
    img = c_void_p()
    if name.endswith(".png"):
        o = _PngReadOpts(1, 0)  # 1: float32 holding the stored integer values (the original's float tensor)
        check(lib.lumen_png_read(ctx, cstr(str(path)), ctypes.byref(o), ctypes.byref(img), None), "lumen_png_read", ctx)
    elif name.endswith(".nii") or name.endswith(".nii.gz"):
        check(lib.lumen_nifti_read(ctx, cstr(str(path)), None, ctypes.byref(img), None), "lumen_nifti_read", ctx)
    else:
        raise ValueError("%s: unsupported file type (expected .png, .nii or .nii.gz)" % path)
    try:
        nd = lib.lumen_image_ndim(img)
        shape = tuple(int(lib.lumen_image_dim(img, i)) for i in reversed(range(nd)))
        return np.asarray(_im._to_numpy(img, shape, False), dtype=np.float32)
    finally:
        lib.lumen_image_free(img)
