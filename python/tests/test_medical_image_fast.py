"""lumen.medical_image's fused C paths (_fast.py: lumen_filter_scale_clamp, _otsu_linspace,
_fcm_values, _normalize_bits_detect, _butterworth_kernel) against the paths they replace (the
compat layer with _fast switched off: numpy and lumen._segment), on integer-valued and
fractional data; the Butterworth kernel against the original's formula in numpy float32 and the
bit-depth map against its float64 formula; and the ctypes mirror of lumen_fcm_values_result
against the C compiler."""
import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import lumen.medical_image as lm
from lumen.medical_image import _fast

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _mammo(h=300, w=260, seed=3):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    body = ((x / w) ** 2 + ((y - h / 2) / (h / 2)) ** 2) < 0.8
    a = np.where(body, 900 + 600 * np.sin(x / 17.0) * np.cos(y / 23.0) + rng.normal(0, 60, (h, w)), 0)
    a[rng.integers(0, h, 20), rng.integers(0, w, 20)] = 3500
    return np.clip(np.round(a), 0, 4095).astype(np.float32)


@pytest.fixture(params=["integers", "fractions"])
def data(request):
    a = _mammo()
    return a if request.param == "integers" else a * np.float32(0.731) + np.float32(0.25)


def _without_fast(monkeypatch, fn):
    monkeypatch.setattr(_fast, "available", lambda: False)
    try:
        return fn()
    finally:
        monkeypatch.undo()


def test_otsu_same_mask_as_the_numpy_path(data, monkeypatch):
    assert _fast.available()
    run = lambda: lm.Threshold.otsu_threshold(lm.Image.from_array(data)).pixel_data  # noqa: E731
    fast = np.asarray(run())
    slow = np.asarray(_without_fast(monkeypatch, run))
    assert fast.dtype == np.uint8 and np.array_equal(fast, slow) and 0 < fast.sum() < fast.size


def test_fcm_same_results_as_the_per_voxel_path(data, monkeypatch):
    def run():
        algo = lm.FCMAlgorithm()
        out = lm.Image.from_array(data).clone()
        algo(lm.Image.from_array(data), out)
        return algo, np.asarray(out._array)
    fa, fout = run()
    sa, sout = _without_fast(monkeypatch, run)
    assert np.array_equal(fout, sout) and fout.dtype == np.float32 and 0 < fout.sum() < fout.size
    assert np.array_equal(fa.labels, sa.labels) and fa.labels.dtype == np.int64
    assert (fa.n_iter, fa.converged, fa.mc_label) == (sa.n_iter, sa.converged, sa.mc_label)
    np.testing.assert_allclose(fa.centroids, sa.centroids, rtol=1e-6)
    np.testing.assert_allclose(fa.quantized, sa.quantized, rtol=1e-6)
    np.testing.assert_allclose(fa.membership, sa.membership, rtol=1e-5, atol=1e-7)
    assert [s["pixels"] for s in fa.stats] == [s["pixels"] for s in sa.stats]


def test_window_and_bit_depth_same_as_the_lumen_ops(data, monkeypatch):
    img = lm.Image.from_array(data)
    algos = [lm.DicomWindowAlgorithm(), lm.DicomWindowAlgorithm(window_center=1200, window_width=900),
             lm.BitDepthNormAlgorithm(), lm.BitDepthNormAlgorithm(bits_stored=14, target_max=1.0)]
    for algo in algos:
        fast = np.asarray(algo(img, img.clone())._array)
        slow = np.asarray(_without_fast(monkeypatch, lambda: algo(img, img.clone()))._array)
        assert fast.dtype == np.float32 and np.array_equal(fast, slow), algo
    # and the formula itself, in float64
    lo, hi = float(data.min()), float(data.max())
    got = np.asarray(algos[0](img, img.clone())._array)
    np.testing.assert_allclose(got, np.clip((data - lo) / (hi - lo), 0, 1) * 255, rtol=1e-6, atol=1e-4)


def test_non_finite_data_do_not_crash():
    a = _mammo(40, 30)
    a[3, 4], a[5, 6] = np.nan, np.inf
    img = lm.Image.from_array(a)
    m = np.asarray(lm.Threshold.otsu_threshold(img).pixel_data)
    assert m.shape == a.shape and m[3, 4] == 0 and m[5, 6] == 1
    w = np.asarray(lm.DicomWindowAlgorithm()(img, img.clone())._array)
    assert np.isnan(w[3, 4]) and w[5, 6] == 255
    with pytest.raises(Exception):  # lumen_segment_fcm names the non-finite voxel
        lm.FCMAlgorithm()(img, img.clone())


def test_fcm_values_result_layout(tmp_path):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to measure the struct")
    cls = _fast._FcmValuesResult
    lines = ['printf("%zu\\n", sizeof(lumen_fcm_values_result));']
    want = [str(ctypes.sizeof(cls))]
    for name, _ in cls._fields_:
        lines.append('printf("%%zu %%zu\\n", offsetof(lumen_fcm_values_result, %s), '
                     'sizeof(((lumen_fcm_values_result *)0)->%s));' % (name, name))
        want.append("%d %d" % (getattr(cls, name).offset, getattr(cls, name).size))
    src = tmp_path / "layout.c"
    src.write_text('#include <stddef.h>\n#include <stdio.h>\n#include "lumen/filter.h"\nint main(void) {\n%s\nreturn 0;\n}\n'
                   % "\n".join(lines))
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c11", "-I", os.path.join(REPO, "include"), str(src), "-o", str(exe)], check=True)
    assert subprocess.run([str(exe)], stdout=subprocess.PIPE, universal_newlines=True,
                          check=True).stdout.split("\n")[:len(want)] == want


def _butterworth_numpy(h, w, d0, width, n):
    """medical-image-std's Filters.butterworth_kernel, its torch steps in numpy float32."""
    uu = np.arange(w, dtype=np.float32)[None, :] - np.float32(w / 2)
    vv = np.arange(h, dtype=np.float32)[:, None] - np.float32(h / 2)
    d = np.sqrt(uu ** 2 + vv ** 2)
    band = d ** 2 - np.float32(d0 ** 2)
    cutoff = np.float32(8 * width) * d
    cutoff = np.where(cutoff == 0, np.float32(1e-6), cutoff)
    with np.errstate(over="ignore"):
        return np.float32(1.0) / (np.float32(1) + (band / cutoff) ** np.float32(2 * n))


@pytest.mark.parametrize("h,w,d0,width,n", [
    (2048, 1664, 21, 32, 3), (301, 257, 21, 32, 3), (64, 64, 0, 32, 3), (64, 48, 21, 32, 1),
    (50, 61, 12.5, 7.5, 6), (40, 37, 5, 4, 12), (3, 5, 1.5, 0.3, 2)])
def test_butterworth_kernel_against_the_original_formula(h, w, d0, width, n, monkeypatch):
    assert _fast.has_butterworth()
    img = lm.Image.from_array(np.zeros((h, w), np.float32))
    got = np.asarray(lm.Filters.butterworth_kernel(img, img.clone(), D_0=d0, W=width, n=n).pixel_data)
    ref = _butterworth_numpy(h, w, d0, width, n)
    assert got.dtype == np.float32 and got.shape == (h, w)
    # float32 steps as the original's; only the power differs (products in float64 vs powf)
    np.testing.assert_allclose(got, ref, rtol=0, atol=2e-7 * n)
    # the numpy path it replaced agrees too
    monkeypatch.setattr(_fast, "has_butterworth", lambda: False)
    slow = np.asarray(lm.Filters.butterworth_kernel(img, img.clone(), D_0=d0, W=width, n=n).pixel_data)
    np.testing.assert_allclose(got, slow, rtol=0, atol=2e-7 * n)


def test_butterworth_kernel_orders_the_c_kernel_does_not_take():
    img = lm.Image.from_array(np.zeros((30, 20), np.float32))
    for n in (0, 2.5, 65):  # the numpy path, as the original computes them
        got = np.asarray(lm.Filters.butterworth_kernel(img, img.clone(), n=n).pixel_data)
        with np.errstate(invalid="ignore"):
            ref = _butterworth_numpy(30, 20, 21, 32, n)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("peak,bits", [(250, 8), (3000, 12), (60000, 16), (np.inf, 16), (np.nan, 16)])
def test_bit_depth_detected_in_the_map_pass(peak, bits):
    assert _fast.has_bits_detect()
    a = np.minimum(_mammo(), 200).astype(np.float32)  # 8-bit data: the sample guesses 8
    a[151, 77] = peak  # one voxel the sample of every n / 1024-th voxel misses
    img = lm.Image.from_array(a)
    got = np.asarray(lm.BitDepthNormAlgorithm(target_max=255.0)(img, img.clone())._array)
    with np.errstate(invalid="ignore"):
        ref = (np.clip(a.astype(np.float64) * (1.0 / (2.0 ** bits - 1)), 0, 1) * 255.0).astype(np.float32)
    assert got.dtype == np.float32 and np.array_equal(got, ref, equal_nan=True)
    out, used = _fast.normalize_bits_detect(a, 255.0)
    assert used == bits and np.array_equal(out, got, equal_nan=True)
