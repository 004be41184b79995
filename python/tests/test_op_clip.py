"""clip, the one-file op of src/filter/ops/clip.c, from Python without a line of binding of its own:
lumen.run_op and lumen.process_images find it by name, and its values are numpy.clip's on float32
bit for bit (NaN kept, or replaced by nan_value; -0 against a bound of 0; bounds rounded to
float32)."""
import numpy as np
import pytest

import lumen


def _data():
    rng = np.random.RandomState(41)
    a = (rng.randn(33, 47) * 50).astype(np.float32)
    a.flat[[0, 5, 17]] = [np.nan, -0.0, np.inf]
    a.flat[[30, 31, 32]] = [-np.inf, 0.0, np.float32(-1e-45)]
    return a


def _same_bits(a, b):
    assert a.dtype == b.dtype == np.float32 and a.shape == b.shape
    nan = np.isnan(a)
    assert np.array_equal(nan, np.isnan(b))
    assert np.array_equal(a[~nan].view(np.uint32), b[~nan].view(np.uint32))


def test_in_the_registry():
    info = lumen.op_info("clamp")
    assert info["name"] == "clip" and info["kind"] == "filter" and info["output"] == "image"
    assert info["entry"] is None and not info["cuda"]
    assert [o["name"] for o in info["options"]] == ["lo", "hi", "nan_value"]
    assert all(o["default"] == "auto" for o in info["options"])
    assert "clip" in lumen.batch_ops()


@pytest.mark.parametrize("lo,hi", [(0.0, 3.5), (-20.0, 20.0), (0.1, None), (None, 0.0), (None, None), (2.0, 2.0)])
def test_run_op_equals_numpy_clip(lo, hi):
    a = _data()
    out = lumen.run_op("clip", a, lo=lo, hi=hi, device="cpu")
    want = np.clip(a, -np.inf if lo is None else np.float32(lo), np.inf if hi is None else np.float32(hi))
    _same_bits(out, want.astype(np.float32))


def test_nan_value_and_aliases():
    a = _data()
    out = lumen.run_op("clamp", a, min=-1, max=1, nan=-7)
    want = np.where(np.isnan(a), np.float32(-7), np.clip(a, np.float32(-1), np.float32(1))).astype(np.float32)
    _same_bits(out, want)


def test_integer_input_gives_float():
    a = np.array([[0, 10, 200, 255]], dtype=np.uint8)
    out = lumen.run_op("clip", a, lo=10.5, hi=199.5)
    assert out.dtype == np.float32
    assert out.tolist() == [[10.5, 10.5, 199.5, 199.5]]


def test_process_images_equals_one_call():
    arrays = [_data() * k for k in (1, 2, 3)]
    res = lumen.process_images(arrays, "clip", devices="cpu", lo=-30, hi=40)
    assert len(res) == 3
    for a, r in zip(arrays, res):
        _same_bits(r, np.clip(a, np.float32(-30), np.float32(40)))


def test_errors_name_the_option():
    a = _data()
    with pytest.raises(lumen.LumenError, match=r"clip: lo is 5, expected <= hi \(2\)"):
        lumen.run_op("clip", a, lo=5, hi=2)
    with pytest.raises(lumen.LumenError, match="clip: lo is inf"):
        lumen.run_op("clip", a, lo=float("inf"))
