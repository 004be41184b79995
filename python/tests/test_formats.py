"""Format detection through the C library's table (lumen_image_probe): content first, the name as a
hint; read_image equals the format's own reader whatever the name."""
import os
import shutil

import numpy as np
import pytest

import lumen
from lumen import _io


def test_image_formats_come_from_the_library():
    rows = _io._table()
    assert [name for name, _ in rows] == ["png", "nifti", "dicom"]  # the folder row has no suffix
    assert lumen.image_formats() == {"png": [".png"], "nifti": [".nii", ".nii.gz"], "dicom": [".dcm"]}


def test_content_decides_over_the_name(tmp_path):
    a = (np.arange(35, dtype=np.uint8) * 7).reshape(5, 7)
    lumen.write_image(tmp_path / "a.png", a)
    shutil.copy(tmp_path / "a.png", tmp_path / "a_named.nii")
    shutil.copy(tmp_path / "a.png", tmp_path / "no_suffix")
    for name in ("a_named.nii", "no_suffix"):
        b, meta = lumen.read_image(tmp_path / name)
        assert meta["format"] == "png"
        np.testing.assert_array_equal(a, b)
    v = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    lumen.write_image(tmp_path / "v.nii.gz", v)
    shutil.copy(tmp_path / "v.nii.gz", tmp_path / "v_named.png")
    b, meta = lumen.read_image(tmp_path / "v_named.png")
    assert meta["format"] == "nifti" and meta["compressed"]
    np.testing.assert_array_equal(v, b)


def test_unknown_content_and_name(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("not an image\n")
    with pytest.raises(ValueError, match="cannot tell the format.*starts with the text 'not an image '"):
        lumen.read_image(p)
    e = tmp_path / "empty.png"   # named like a PNG: the PNG reader's error, naming the file
    e.write_bytes(b"")
    with pytest.raises(lumen.LumenError, match="empty.png"):
        lumen.read_image(e)


def test_third_party_png_equals_named_any_way(tmp_path):
    # a PNG written by another tool (scipy's test image, Debian python3-scipy)
    scipy_ndimage = pytest.importorskip("scipy.ndimage")
    src = os.path.join(os.path.dirname(scipy_ndimage.__file__), "tests", "dots.png")
    if not os.path.exists(src):
        pytest.skip("scipy's dots.png is not installed")
    a, meta = lumen.read_image(src)
    assert meta["format"] == "png" and a.ndim == 2 and a.size > 0
    shutil.copy(src, tmp_path / "dots.dcm")
    b, meta2 = lumen.read_image(tmp_path / "dots.dcm")
    assert meta2["format"] == "png"
    np.testing.assert_array_equal(a, b)
