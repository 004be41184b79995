"""lumen.read_image / write_image (PNG, NIfTI) against files made and parsed byte by byte here:
a PNG encoder/decoder over zlib (all five row filters) and the NIfTI-1/2 header layout with struct,
so the references share no code with libpng or nifti_clib."""
import ctypes
import gzip
import os
import shutil
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

import lumen

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.environ.get("LUMEN_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))

# ---------------------------------------------------------------------------- PNG by hand


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_bytes(a):
    """Grey PNG of a uint8/uint16 array, every row with filter type 0 (none)."""
    depth = 16 if a.dtype == np.uint16 else 8
    h, w = a.shape
    rows = a.astype(">u2" if depth == 16 else "u1").tobytes()
    stride = w * depth // 8
    raw = b"".join(b"\0" + rows[r * stride:(r + 1) * stride] for r in range(h))
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, 0, 0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(raw)) + _chunk(b"IEND", b""))


def png_decode(data):
    """(array, bit_depth) of a non-interlaced grey PNG: chunks, zlib and the five row filters."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(kind + body) & 0xFFFFFFFF
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, colour, _, _, interlace = hdr
    assert colour == 0 and interlace == 0 and depth in (8, 16)
    bpp = depth // 8
    stride = w * bpp
    raw = zlib.decompress(idat)
    out = bytearray()
    prev = bytearray(stride)
    for r in range(h):
        f, line = raw[r * (stride + 1)], bytearray(raw[r * (stride + 1) + 1:(r + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            else:
                assert f == 0, "unknown PNG filter %d" % f
        out += line
        prev = line
    return np.frombuffer(bytes(out), ">u2" if depth == 16 else "u1").reshape(h, w), depth


# ---------------------------------------------------------------------------- NIfTI by hand

_NIFTI_DT = {np.dtype(np.uint8): 2, np.dtype(np.int16): 4, np.dtype(np.int32): 8, np.dtype(np.float32): 16,
             np.dtype(np.float64): 64, np.dtype(np.uint16): 512}


def nifti1_bytes(a, pixdim=None, srow=None, slope=0.0, inter=0.0, descrip=b""):
    """A NIfTI-1 single file (.nii) of a numpy array in lumen's axis order: a[z, y, x] is voxel (x, y, z)."""
    dims = list(reversed(a.shape))
    h = bytearray(352)
    struct.pack_into("<i", h, 0, 348)
    struct.pack_into("<8h", h, 40, len(dims), *(dims + [1] * (7 - len(dims))))
    struct.pack_into("<hh", h, 70, _NIFTI_DT[a.dtype], 8 * a.dtype.itemsize)
    pd = [1.0] + list(pixdim or [1.0] * len(dims))
    struct.pack_into("<8f", h, 76, *(pd + [1.0] * (8 - len(pd))))
    struct.pack_into("<fff", h, 108, 352.0, slope, inter)
    struct.pack_into("<B", h, 123, 2 | 8)             # xyzt_units: mm, s
    h[148:148 + len(descrip)] = descrip
    if srow is not None:
        struct.pack_into("<hh", h, 252, 0, 1)           # qform_code 0, sform_code 1
        struct.pack_into("<12f", h, 280, *np.asarray(srow, np.float64)[:3].ravel())
    h[344:348] = b"n+1\0"
    return bytes(h) + a.astype(a.dtype.newbyteorder("<")).tobytes()


def nifti_parse(path):
    """(header dict, data array in lumen's numpy order) of a NIfTI-1 or -2 file, gzip or not."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    size, = struct.unpack_from("<i", data, 0)
    code = {v: k for k, v in _NIFTI_DT.items()}
    if size == 348:
        ndim, *dims = struct.unpack_from("<8h", data, 40)
        dt, bitpix = struct.unpack_from("<hh", data, 70)
        pixdim = struct.unpack_from("<8f", data, 76)
        vox, slope, inter = struct.unpack_from("<fff", data, 108)
        descrip = data[148:228].split(b"\0")[0]
        qcode, scode = struct.unpack_from("<hh", data, 252)
        srow = struct.unpack_from("<12f", data, 280)
        magic = data[344:348]
    else:
        assert size == 540
        magic = data[4:12]
        dt, bitpix = struct.unpack_from("<hh", data, 12)
        ndim, *dims = struct.unpack_from("<8q", data, 16)
        pixdim = struct.unpack_from("<8d", data, 104)
        vox, = struct.unpack_from("<q", data, 168)
        slope, inter = struct.unpack_from("<dd", data, 176)
        descrip = data[240:320].split(b"\0")[0]
        qcode, scode = struct.unpack_from("<ii", data, 344)
        srow = struct.unpack_from("<12d", data, 400)
    shape = tuple(reversed(dims[:ndim]))
    dtype = code[dt].newbyteorder("<")
    n = int(np.prod(shape))
    arr = np.frombuffer(data, dtype, count=n, offset=int(vox)).reshape(shape)
    return {"sizeof_hdr": size, "magic": magic, "datatype": dt, "bitpix": bitpix, "pixdim": pixdim,
            "scl_slope": slope, "scl_inter": inter, "descrip": descrip, "qform_code": qcode,
            "sform_code": scode, "srow": np.array(srow).reshape(3, 4)}, arr


# ---------------------------------------------------------------------------- PNG


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_png_read_of_a_hand_made_file(tmp_path, dtype):
    rng = np.random.default_rng(1)
    a = rng.integers(0, np.iinfo(dtype).max + 1, size=(13, 29), dtype=dtype)
    p = tmp_path / "x.png"
    p.write_bytes(png_bytes(a))
    arr, meta = lumen.read_image(p)
    assert arr.dtype == dtype and arr.shape == (13, 29)
    np.testing.assert_array_equal(arr, a)
    assert meta["format"] == "png" and meta["bit_depth"] == 8 * np.dtype(dtype).itemsize
    assert meta["shape"] == (13, 29) and meta["dtype"] == np.dtype(dtype).name and meta["spacing"] == (1.0, 1.0)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_png_write_decoded_independently(tmp_path, dtype):
    yy, xx = np.mgrid[0:40, 0:57]
    a = ((xx * 37 + yy * 11) % (np.iinfo(dtype).max + 1)).astype(dtype)  # filters get used by libpng
    p = tmp_path / "w.png"
    lumen.write_image(p, a)
    ref, depth = png_decode(p.read_bytes())
    assert depth == 8 * np.dtype(dtype).itemsize
    np.testing.assert_array_equal(ref, a)
    back, meta = lumen.read_image(p)
    np.testing.assert_array_equal(back, a)
    assert meta["bit_depth"] == depth


def test_png_float_clip_minmax_and_range(tmp_path):
    f = np.array([[-3.0, 0.4, 0.6, 254.5, 300.0, np.nan]], np.float32)
    lumen.write_image(tmp_path / "c.png", f)
    np.testing.assert_array_equal(png_decode((tmp_path / "c.png").read_bytes())[0], [[0, 0, 1, 254, 255, 0]])
    g = np.array([[10.0, 20.0, 30.0]], np.float64)
    lumen.write_image(tmp_path / "m.png", g, scaling="minmax", bit_depth=16)
    ref, depth = png_decode((tmp_path / "m.png").read_bytes())
    assert depth == 16
    np.testing.assert_array_equal(ref, [[0, 32768, 65535]])  # (v - 10) / 20 * 65535, rounded
    lumen.write_image(tmp_path / "r.png", g, lo=15.0, hi=25.0)
    np.testing.assert_array_equal(png_decode((tmp_path / "r.png").read_bytes())[0], [[0, 128, 255]])


def test_png_read_is_a_view_of_the_c_image(tmp_path):
    p = tmp_path / "v.png"
    p.write_bytes(png_bytes(np.arange(6, dtype=np.uint8).reshape(2, 3)))
    arr, _ = lumen.read_image(p)
    owner = arr
    while isinstance(owner, np.ndarray):
        owner = owner.base
    assert not arr.flags.owndata and isinstance(owner, ctypes.Array)     # numpy over the C buffer
    arr[0, 0] = 9                                                        # writable, caller's now
    view = arr[1]
    del arr
    np.testing.assert_array_equal(view, [3, 4, 5])                       # memory kept alive by views


# ---------------------------------------------------------------------------- NIfTI


@pytest.mark.parametrize("name", ["v.nii", "v.nii.gz"])
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.uint8, np.float64])
def test_nifti_write_parsed_by_hand(tmp_path, name, dtype):
    rng = np.random.default_rng(2)
    a = (rng.normal(size=(5, 6, 7)) * 50).astype(dtype)
    aff = np.array([[0, 0, -1.5, 10.0], [0, 2.0, 0, -20.0], [3.0, 0, 0, 5.0], [0, 0, 0, 1]])
    p = tmp_path / name
    lumen.write_image(p, a, spacing=(3.0, 2.0, 1.5), affine=aff, description="lumen test")
    hdr, data = nifti_parse(p)
    assert hdr["sizeof_hdr"] == 348 and hdr["magic"] == b"n+1\0"
    assert hdr["datatype"] == _NIFTI_DT[np.dtype(dtype)] and hdr["bitpix"] == 8 * np.dtype(dtype).itemsize
    assert data.shape == a.shape and data.dtype.newbyteorder("=") == np.dtype(dtype)
    np.testing.assert_array_equal(data, a)
    assert hdr["pixdim"][1:4] == (1.5, 2.0, 3.0)               # x, y, z: numpy order reversed
    assert hdr["sform_code"] == 1 and hdr["descrip"] == b"lumen test"
    np.testing.assert_allclose(hdr["srow"], aff[:3], rtol=0, atol=1e-6)
    back, meta = lumen.read_image(p)
    np.testing.assert_array_equal(back, a)
    assert back.dtype == dtype and meta["shape"] == a.shape and meta["spacing"] == (3.0, 2.0, 1.5)
    np.testing.assert_allclose(meta["affine"], aff, atol=1e-6)
    assert meta["affine_source"] == "sform" and meta["description"] == "lumen test"
    assert meta["compressed"] == name.endswith(".gz") and meta["version"] == 1


def test_nifti_read_of_a_hand_made_file_scaling_and_affine(tmp_path):
    a = np.arange(2 * 3 * 4, dtype=np.int16).reshape(2, 3, 4) - 7
    srow = [[0.0, -0.8, 0.0, 90.0], [0.9, 0.0, 0.0, -126.0], [0.0, 0.0, 2.5, -72.0]]
    p = tmp_path / "s.nii"
    p.write_bytes(nifti1_bytes(a, pixdim=[0.9, 0.8, 2.5], srow=srow, slope=2.0, inter=-5.0, descrip=b"hand"))
    arr, meta = lumen.read_image(p)            # the header asks for scaling: float32, scaled
    assert arr.dtype == np.float32 and meta["scaled"] and meta["stored_dtype"] == "int16"
    np.testing.assert_array_equal(arr, a * 2.0 - 5.0)
    raw, meta_raw = lumen.read_image(p, apply_scaling=False)
    assert raw.dtype == np.int16 and not meta_raw["scaled"]
    np.testing.assert_array_equal(raw, a)
    assert (meta_raw["scl_slope"], meta_raw["scl_inter"]) == (2.0, -5.0)
    np.testing.assert_allclose(meta["affine"][:3], srow, atol=1e-6)
    assert meta["spacing"] == pytest.approx((2.5, 0.8, 0.9)) and meta["description"] == "hand"
    assert meta["datatype"] == 4 and meta["space_unit"] == 2 and meta["time_unit"] == 8


def test_nifti_unscaled_file_keeps_its_type(tmp_path):
    a = np.arange(24, dtype=np.uint16).reshape(2, 3, 4) * 1000
    p = tmp_path / "u.nii"
    p.write_bytes(nifti1_bytes(a))
    arr, meta = lumen.read_image(p)
    assert arr.dtype == np.uint16 and not meta["scaled"] and meta["affine_source"] == "pixdim"
    np.testing.assert_array_equal(arr, a)
    f, m = lumen.read_image(p, apply_scaling=True)
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f, a.astype(np.float32))


def test_nifti_4d_and_nifti2_and_meta_round_trip(tmp_path):
    a = np.random.default_rng(3).random((3, 2, 4, 5)).astype(np.float32)     # t, z, y, x
    p1 = tmp_path / "a.nii.gz"
    lumen.write_image(p1, a, spacing=(2.5, 3.0, 1.0, 1.0), version=2, intent_name="Ktrans")
    hdr, data = nifti_parse(p1)
    assert hdr["sizeof_hdr"] == 540 and hdr["magic"][:3] == b"n+2"
    np.testing.assert_array_equal(data, a)
    arr, meta = lumen.read_image(p1)
    assert meta["version"] == 2 and meta["intent_name"] == "Ktrans" and meta["shape"] == (3, 2, 4, 5)
    p2 = tmp_path / "b.nii"
    lumen.write_image(p2, arr * 2, **meta)       # read_image's meta is accepted as it is
    arr2, meta2 = lumen.read_image(p2)
    np.testing.assert_array_equal(arr2, a * 2)
    for k in ("spacing", "version", "intent_name", "intent_code", "description", "sform_code"):
        assert meta2[k] == meta[k], k
    np.testing.assert_array_equal(meta2["affine"], meta["affine"])


def test_write_accepts_non_contiguous_and_bool(tmp_path):
    a = np.arange(60, dtype=np.float32).reshape(6, 10)[:, ::2]
    lumen.write_image(tmp_path / "nc.nii", a)
    np.testing.assert_array_equal(nifti_parse(tmp_path / "nc.nii")[1], a)
    m = np.array([[True, False], [False, True]])
    lumen.write_image(tmp_path / "m.png", m)
    np.testing.assert_array_equal(png_decode((tmp_path / "m.png").read_bytes())[0], m.astype(np.uint8))


# ---------------------------------------------------------------------------- errors


def test_read_errors_carry_the_c_message(tmp_path):
    with pytest.raises(lumen.LumenError) as e:
        lumen.read_image(tmp_path / "missing.nii.gz")
    assert "missing.nii.gz" in str(e.value) and e.value.status_name == "io_error"
    bad = tmp_path / "cut.png"
    bad.write_bytes(png_bytes(np.zeros((8, 8), np.uint8))[:40])
    with pytest.raises(lumen.LumenError) as e:
        lumen.read_image(bad)
    assert "cut.png" in str(e.value)
    cut = tmp_path / "cut.nii"
    cut.write_bytes(nifti1_bytes(np.zeros((4, 4, 4), np.float32))[:400])
    with pytest.raises(lumen.LumenError) as e:
        lumen.read_image(cut)
    assert "cut.nii" in str(e.value) and e.value.status_name == "format_error"
    (tmp_path / "dir.nii").mkdir()
    with pytest.raises(lumen.LumenError, match="folder"):
        lumen.read_image(tmp_path / "dir.nii")


def test_read_refuses_over_max_bytes(tmp_path):
    p = tmp_path / "big.nii"
    p.write_bytes(nifti1_bytes(np.zeros((8, 8, 8), np.float32)))
    with pytest.raises(lumen.LumenError) as e:
        lumen.read_image(p, max_bytes=1000)
    assert e.value.status_name == "out_of_memory"


def test_write_refuses_to_replace_unless_overwrite(tmp_path):
    p = tmp_path / "o.png"
    lumen.write_image(p, np.full((2, 2), 7, np.uint8))
    before = p.read_bytes()
    with pytest.raises(lumen.LumenError, match="exists"):
        lumen.write_image(p, np.zeros((2, 2), np.uint8))
    assert p.read_bytes() == before
    lumen.write_image(p, np.zeros((2, 2), np.uint8), overwrite=True)
    np.testing.assert_array_equal(lumen.read_image(p)[0], 0)
    assert sorted(os.listdir(tmp_path)) == ["o.png"]          # no temporaries left


def test_argument_errors_before_c(tmp_path):
    a = np.zeros((3, 3), np.float32)
    with pytest.raises(ValueError, match="cannot tell the format"):
        lumen.write_image(tmp_path / "x.tif", a)
    with pytest.raises(ValueError, match="cannot tell the format"):
        lumen.read_image(tmp_path / "x.jpg")
    with pytest.raises(ValueError, match="format="):
        lumen.read_image(tmp_path / "x.png", format="tiff")
    with pytest.raises(ValueError, match="PNG stores no voxel spacing"):
        lumen.write_image(tmp_path / "x.png", a, spacing=(2, 1))
    with pytest.raises(ValueError, match="png cannot store description"):
        lumen.write_image(tmp_path / "x.png", a, description="no")
    with pytest.raises(ValueError, match="cannot store bit_depth"):
        lumen.write_image(tmp_path / "x.nii", a, bit_depth=8)
    with pytest.raises(ValueError, match="spacing has 3 values"):
        lumen.write_image(tmp_path / "x.nii", a, spacing=(1, 2, 3))
    with pytest.raises(ValueError, match="scaling='range' needs lo"):
        lumen.write_image(tmp_path / "x.png", a, scaling="range")
    with pytest.raises(TypeError, match="complex128"):
        lumen.write_image(tmp_path / "x.nii", a.astype(complex))
    with pytest.raises(lumen.LumenInvalidArgument, match="spacing"):
        lumen.write_image(tmp_path / "x.nii", a, spacing=(0, 1))
    with pytest.raises(lumen.LumenError, match="intent_name"):
        lumen.write_image(tmp_path / "x.nii", a, intent_name="a name longer than fifteen")
    assert os.listdir(tmp_path) == []                            # nothing written on any error
    assert lumen.image_formats() == {"png": [".png"], "nifti": [".nii", ".nii.gz"], "dicom": [".dcm"]}


# ---------------------------------------------------------------------------- layouts


# the io.h mirrors, field by field with every other mirrored struct: test_struct_layout.py


# ---------------------------------------------------------------------------- DICOM (read only)
# pydicom's own test files (Debian python3-pydicom), decoded by pydicom as the reference


def _pydicom():
    pydicom = pytest.importorskip("pydicom")
    from pydicom.pixel_data_handlers.util import apply_modality_lut
    return pydicom, apply_modality_lut


@pytest.mark.parametrize("name", ["CT_small.dcm", "MR_small.dcm", "MR_small_implicit.dcm", "MR_small_bigendian.dcm",
                                  "MR_small_RLE.dcm", "MR_small_jp2klossless.dcm", "rtdose_1frame.dcm"])
def test_read_dicom_equals_pydicom(name):
    pydicom, lut = _pydicom()
    from pydicom.data import get_testdata_file
    path = get_testdata_file(name)
    a, meta = lumen.read_image(path)
    ds = pydicom.dcmread(path)
    ref = lut(ds.pixel_array, ds).astype(np.float32)
    assert meta["format"] == "dicom" and a.dtype == np.float32
    np.testing.assert_array_equal(a, ref.reshape(a.shape))
    assert meta["rows"] == ds.Rows and meta["columns"] == ds.Columns
    ps = [float(v) for v in getattr(ds, "PixelSpacing", [1, 1])]
    assert meta["spacing"][-2:] == pytest.approx((ps[0], ps[1]))  # (row spacing, column spacing)
    assert meta["transfer_syntax"] == str(ds.file_meta.TransferSyntaxUID)


def test_read_dicom_monochrome1_is_inverted_and_found_by_signature(tmp_path):
    pydicom, lut = _pydicom()
    from pydicom.data import get_testdata_file
    ds = pydicom.dcmread(get_testdata_file("MR_small.dcm"))
    ds.PhotometricInterpretation = "MONOCHROME1"
    path = tmp_path / "mono1"  # no .dcm: known by the DICM signature
    ds.save_as(str(path))
    a, meta = lumen.read_image(path)
    stored = ds.pixel_array.astype(np.float64)
    lo, hi = (-(1 << (ds.BitsStored - 1)), (1 << (ds.BitsStored - 1)) - 1) if ds.PixelRepresentation else \
        (0, (1 << ds.BitsStored) - 1)
    assert meta["inverted"] and meta["photometric"] == "MONOCHROME1"
    np.testing.assert_array_equal(a, (lo + hi - stored).astype(np.float32))


def test_dicom_errors(tmp_path):
    bad = tmp_path / "not.dcm"
    bad.write_bytes(b"\0" * 200)
    with pytest.raises(lumen.LumenError) as e:
        lumen.read_image(bad)
    assert "not.dcm" in str(e.value)
    with pytest.raises(ValueError):
        lumen.write_image(tmp_path / "out.dcm", np.zeros((4, 4), np.float32))
    assert not (tmp_path / "out.dcm").exists()
    pydicom, _ = _pydicom()
    from pydicom.data import get_testdata_file
    with pytest.raises(ValueError):
        lumen.read_image(get_testdata_file("CT_small.dcm"), apply_scaling=False)


def test_dicom_series_without_geometry_and_rt_dose_grid(tmp_path):
    """One file without orientation/position: dcm2niix's voxel order, the spacing as affine,
    meta["geometry_unknown"]; an RT Dose's frames are slices GridFrameOffsetVector apart
    (docs/DICOM.md "No geometry", "Multi-frame")."""
    pytest.importorskip("pydicom")
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "cli"))
    try:
        import dicom_thirdparty as tp
    finally:
        sys.path.pop(0)
    tp.write(str(tmp_path))
    (tmp_path / "one").mkdir()
    os.replace(tmp_path / "nogeom.dcm", tmp_path / "one" / "nogeom.dcm")
    a, meta = lumen.read_image(tmp_path / "one")
    assert meta["geometry_unknown"] is True
    np.testing.assert_array_equal(a, tp.NOGEOM[None, ::-1, :].astype(np.float32))
    np.testing.assert_allclose(np.asarray(meta["affine"]), np.diag([2.26, 2.26, 1, 1]), atol=1e-6)
    a, meta = lumen.read_image([tmp_path / "dose.dcm"])
    assert meta["geometry_unknown"] is False
    np.testing.assert_array_equal(a, tp.DOSE[:, ::-1, :].astype(np.float32))
    assert abs(np.asarray(meta["affine"])[2, 2] - 5) < 1e-9  # the grid's 5 mm, not 1


def _hooks_built(build):
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            return "LUMEN_TEST_HOOKS:BOOL=ON" in f.read()
    except OSError:
        return False


def test_compressed_dicom_never_aborts_a_threaded_interpreter(build_dir):
    """Issue 40 item 1: after any other lumen call the interpreter has threads (OpenMP's), where a
    fork is unsafe; the decode then runs in lumen's helper program, so a decoder that aborts (the
    test hook makes it abort, as GDCM's assert does on a malformed JPEG) is an exception, never the
    end of the interpreter."""
    pydicom = pytest.importorskip("pydicom")
    from pydicom.data import get_testdata_file
    path = get_testdata_file("MR_small_RLE.dcm")
    code = r'''
import os, sys, threading, numpy as np, lumen
lumen.gaussian(np.ones((256, 256), np.float32), 2.0)
stop = threading.Event()
threading.Thread(target=stop.wait, daemon=True).start()  # threads even on a one-core machine
with open("/proc/self/status") as f:
    threads = int([l for l in f if l.startswith("Threads:")][0].split()[1])
a, meta = lumen.read_image(sys.argv[1])
print("threads", threads, "isolated", meta["decoded_in_child_process"], "sum", float(a.sum()))
os.environ["LUMEN_TEST_DICOM_CHILD_ABORT"] = "1"
try:
    lumen.read_image(sys.argv[1])
    print("read")
except Exception as e:
    print("raised", e)
'''
    r = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    first, second = r.stdout.splitlines()[:2]
    words = first.split()
    assert int(words[1]) > 1, first  # the interpreter had threads when it read
    assert words[3] == "True", first
    ds = pydicom.dcmread(path)
    assert float(words[5]) == pytest.approx(float(ds.pixel_array.astype(np.float64).sum()), rel=1e-6)
    if _hooks_built(build_dir):
        assert second.startswith("raised") and "decoder aborted" in second and path in second, second
    else:
        assert second == "read", second
