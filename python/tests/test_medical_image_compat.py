"""lumen.medical_image (the medical_image API over lumen): every public class and function called,
results equal to lumen's own functions with the original's conventions applied independently
here (numpy padding, the original's formulas), and, when medical-image-std is available (in
this interpreter, or in the one LUMEN_MIS_PYTHON names), agreement with the original itself on
a synthetic mammogram (mis_compare.py); otherwise that check is a reported skip."""
import importlib.util
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import lumen
import lumen.medical_image as lm
from lumen.medical_image import (Image, InMemoryImage, PNGImage, Filters, Threshold, MorphologyOperations, Metrics,
                                 FrequencyOperations, DeviceContext, Precision, set_default_precision,
                                 get_default_precision, get_dtype, gpu_safe, resolve_device, check_gpu_budget,
                                 estimate_image_bytes, DicomDataNotLoadedError)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mis_compare import synthetic_mammogram  # noqa: E402
from test_image_ops import write_nifti  # noqa: E402


@pytest.fixture
def mammo():
    return Image.from_array(synthetic_mammogram(96, 80))


@pytest.fixture(autouse=True)
def full_precision():
    set_default_precision(Precision.FULL)
    yield
    set_default_precision(Precision.FULL)


def run(op, image, *args, **kw):
    out = image.clone()
    res = op(image, out, *args, **kw)
    assert res is out
    return out.pixel_data


# ---------------------------------------------------------------------------- Image


def test_image_construction_devices_and_files(tmp_path):
    a = np.arange(12, dtype=np.uint16).reshape(3, 4)
    img = Image.from_array(a)
    assert img.pixel_data.dtype == np.float32 and (img.width, img.height) == (4, 3)
    assert img.device == "cpu" and img.device.type == "cpu" and img.device.index is None
    c = img.clone()
    c.pixel_data[0, 0] = 99
    assert img.pixel_data[0, 0] == 0
    assert img.to("cuda:1") is img and img.device.type == "cuda" and img.device.index == 1
    assert img.pin_memory() is img
    assert Image.empty(5, 6).width == 5 and Image.from_image(img).pixel_data[2, 3] == 11
    assert isinstance(InMemoryImage(array=a), Image)
    with pytest.raises(TypeError):
        Image.from_array([1, 2, 3])
    torch = pytest.importorskip("torch") if importlib.util.find_spec("torch") else None
    if torch is not None:
        assert Image.from_array(torch.ones(2, 3)).pixel_data.shape == (2, 3)
    vol = synthetic_mammogram(48, 40)[None].repeat(3, axis=0)
    write_nifti(str(tmp_path / "v.nii"), vol)
    np.testing.assert_array_equal(Image.from_file(str(tmp_path / "v.nii")).pixel_data, vol)
    with pytest.raises(FileNotFoundError):
        Image.from_file(str(tmp_path / "missing.png"))
    with pytest.raises(ValueError):
        PNGImage(str(tmp_path / "v.nii"))


def test_png_from_file_reads_the_stored_values(tmp_path, lumen_bin):
    # a PNG written by lumen's CLI from a NIfTI of known integers (values 0..255 clip unchanged)
    a = (np.arange(30 * 20) % 256).reshape(20, 30).astype(np.float32)
    write_nifti(str(tmp_path / "a.nii"), a)
    r = subprocess.run([lumen_bin, "filter", "abs", str(tmp_path / "a.nii"), str(tmp_path / "a.png")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert r.returncode == 0, r.stderr
    img = PNGImage(str(tmp_path / "a.png"))
    assert img.pixel_data is None
    img.load()
    np.testing.assert_array_equal(img.pixel_data, a)
    np.testing.assert_array_equal(Image.from_file(str(tmp_path / "a.png")).pixel_data, a)


def test_unloaded_image_is_refused():
    with pytest.raises(DicomDataNotLoadedError):
        Filters.gaussian_filter(Image.empty(4, 4), Image.from_array(np.zeros((4, 4))), 1.0)


# ---------------------------------------------------------------------------- Filters


def test_gaussian_filter_equals_scipy_nearest(mammo):
    """Issue 19's acceptance: Filters.gaussian_filter(img, out, sigma=2.0) equals scipy with the
    original's nearest borders to 1e-5 relative (of the image's largest value)."""
    ndimage = pytest.importorskip("scipy.ndimage")
    a = mammo.pixel_data.astype(np.float64)
    want = ndimage.gaussian_filter(a, 2.0, mode="nearest")
    got = run(Filters.gaussian_filter, mammo, 2.0)
    assert np.max(np.abs(got - want)) <= 1e-5 * np.max(np.abs(want))


def test_filters_equal_lumen_with_the_originals_conventions(mammo):
    a = mammo.pixel_data
    np.testing.assert_array_equal(run(Filters.gaussian_filter, mammo, 2.0), lumen.gaussian(a, 2.0, mode="nearest"))
    np.testing.assert_array_equal(run(Filters.median_filter, mammo, 5), lumen.median(a, 5, mode="mirror"))
    k = np.array([[0, 1, 0], [2, -3, 1], [0, 1, 0]], np.float32)
    np.testing.assert_array_equal(run(Filters.convolution, mammo, k),
                                  lumen.convolve(a, k, mode="constant", correlate=True))
    # the original's convolution: zero pad, correlate (independent numpy computation)
    p = np.pad(a.astype(np.float64), 1)
    want = sum(k[i, j] * p[i:i + a.shape[0], j:j + a.shape[1]] for i in range(3) for j in range(3))
    np.testing.assert_allclose(run(Filters.convolution, mammo, k), want, rtol=1e-5, atol=1e-2)
    np.testing.assert_array_equal(run(Filters.difference_of_gaussian, mammo, 1.0), lumen.dog(a, 1.0, 1.6))
    np.testing.assert_array_equal(run(Filters.difference_of_gaussian, mammo, 1.0, 1.0), np.zeros_like(a))
    with pytest.raises(ValueError):
        run(Filters.difference_of_gaussian, mammo, 2.0, 1.0)
    log = run(Filters.laplacian_of_gaussian, mammo, 2.0)
    assert log.shape == (1,) + a.shape  # the original's squeeze(0) of a (1, 1, H, W) result
    g = np.pad(lumen.gaussian(a, 2.0, mode="nearest").astype(np.float64), 1, mode="reflect")
    lap = g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:] - 4 * g[1:-1, 1:-1]
    np.testing.assert_allclose(log[0], lap, rtol=1e-4, atol=2e-3)
    np.testing.assert_allclose(run(Filters.gamma_correction, mammo, 1.25), (a / 4095.0) ** 1.25 * 4095.0, rtol=2e-6)
    b = np.clip(np.trunc(a) * (40.0 / (4095 / 2.0) + 1.0) + (10.0 - 40.0), 0, 4095)
    np.testing.assert_allclose(run(Filters.contrast_adjust, mammo, 40.0, 10.0), b, rtol=1e-6, atol=1e-3)
    with pytest.raises(ValueError):
        run(Filters.median_filter, mammo, 4)


def test_butterworth_kernel_and_batch(mammo):
    h = run(Filters.butterworth_kernel, mammo)
    assert h.shape == mammo.pixel_data.shape and h.dtype == np.float32
    assert h[mammo.height // 2, mammo.width // 2] == 0.0  # D = 0
    d = np.hypot(np.arange(mammo.width) - mammo.width / 2, 0)
    row = 1 / (1 + ((d ** 2 - 21 ** 2) / np.where(d == 0, 1e-6, 8 * 32 * d)) ** 6)
    np.testing.assert_allclose(h[mammo.height // 2], row, rtol=1e-5, atol=1e-6)
    batch = np.stack([mammo.pixel_data, mammo.pixel_data[::-1].copy()])[:, None]
    out = Filters.gaussian_filter_batch(batch, 1.5)
    assert out.shape == batch.shape
    np.testing.assert_array_equal(out[1, 0], lumen.gaussian(batch[1, 0], 1.5))


def test_default_precision_is_honoured(mammo):
    set_default_precision(Precision.HALF)
    assert get_default_precision() is Precision.HALF and get_dtype() == np.float16
    half = run(Filters.gaussian_filter, mammo, 2.0)
    np.testing.assert_array_equal(half, lumen.gaussian(mammo.pixel_data, 2.0, precision="half"))
    assert not np.array_equal(half, lumen.gaussian(mammo.pixel_data, 2.0))
    set_default_precision("bfloat16")
    assert get_default_precision() is Precision.BFLOAT16


# ---------------------------------------------------------------------------- Threshold


def test_otsu_uses_the_originals_bin_centres(mammo):
    a = mammo.pixel_data
    mask = Threshold.otsu_threshold(mammo).pixel_data
    assert mask.dtype == np.uint8
    # independent: the original's histogram and linspace centres in numpy
    lo, hi = float(a.min()), float(a.max())
    hist, _ = np.histogram(a, 4096, (lo, hi))
    c = np.linspace(lo, hi, 4096)
    w1 = np.cumsum(hist)
    w2 = hist.sum() - w1
    m1 = np.cumsum(hist * c) / np.maximum(w1, 1e-6)
    m2 = ((hist * c).sum() - np.cumsum(hist * c)) / np.maximum(w2, 1e-6)
    t = c[np.argmax(w1 * w2 * (m1 - m2) ** 2)]
    np.testing.assert_array_equal(mask, (a > np.float32(t)).astype(np.uint8))
    out = Image.from_array(np.zeros(1))
    assert Threshold.otsu_threshold(mammo, out) is out


def test_sauvola_and_binarize(mammo):
    a = mammo.pixel_data.astype(np.float64)
    with pytest.raises(ValueError):
        Threshold.sauvola_threshold(mammo)  # the original's default window 10 is even
    m = Threshold.sauvola_threshold(mammo, window_size=11, k=0.3).pixel_data
    ndimage = pytest.importorskip("scipy.ndimage")
    mean = ndimage.uniform_filter(a, 11, mode="nearest")
    sd = np.sqrt(np.maximum(ndimage.uniform_filter(a * a, 11, mode="nearest") - mean ** 2, 0))
    want = np.where(a > mean * (1 + 0.3 * (sd / 128 - 1)), 255, 0)
    assert m.dtype == np.uint8 and np.count_nonzero(m != want) <= 3
    b = run(Threshold.binarize, mammo, 1.0)
    lv = ndimage.uniform_filter(a * a, 5, mode="mirror") - ndimage.uniform_filter(a, 5, mode="mirror") ** 2
    want = ((lv * 25 / 24) ** 2 >= a.var(ddof=1) ** 2)
    assert b.dtype == np.uint8 and np.count_nonzero(b.astype(bool) != want) <= 3


# ---------------------------------------------------------------------------- morphology


def test_morphology_zero_padded_square(mammo):
    a = mammo.pixel_data / 4095.0
    img = Image.from_array(a)
    r = 3
    p = np.pad(a, r)
    win = np.lib.stride_tricks.sliding_window_view(p, (2 * r + 1, 2 * r + 1))
    ero, dil = win.min(axis=(-1, -2)), win.max(axis=(-1, -2))
    np.testing.assert_array_equal(run(MorphologyOperations.erosion, img, radius=r), ero)
    np.testing.assert_array_equal(run(MorphologyOperations.dilation, img, radius=r), dil)
    p2 = np.pad(ero, r)
    opened = np.lib.stride_tricks.sliding_window_view(p2, (2 * r + 1,) * 2).max(axis=(-1, -2))
    np.testing.assert_array_equal(run(MorphologyOperations.white_top_hat, img, radius=r), np.maximum(a - opened, 0))
    mask = Image.from_array((mammo.pixel_data > 1500).astype(np.float32))
    closed = run(MorphologyOperations.morphology_closing, mask, kernel_size=5)
    pd = np.lib.stride_tricks.sliding_window_view(np.pad(mask.pixel_data, 2), (5, 5)).max(axis=(-1, -2))
    pe = np.lib.stride_tricks.sliding_window_view(np.pad(pd, 2), (5, 5)).min(axis=(-1, -2))
    assert closed.dtype == np.int64
    np.testing.assert_array_equal(closed, pe.astype(np.int64))
    ring = np.zeros((9, 9), np.float32)
    ring[2:7, 2:7] = 1
    ring[4, 4] = 0
    filled = ring.copy()
    filled[4, 4] = 1
    np.testing.assert_array_equal(run(MorphologyOperations.region_fill, Image.from_array(ring)), filled)
    assert MorphologyOperations._disk_footprint(2).sum() == 13


# ---------------------------------------------------------------------------- metrics, frequency


def test_metrics(mammo):
    a = np.round(mammo.pixel_data / 256.0)
    img, other = Image.from_array(a), Image.from_array(np.round(a[::-1] / 2))
    vals, counts = np.unique(a, return_counts=True)
    p = counts / counts.sum()
    assert Metrics.entropy(img) == round(float(-(p * np.log2(p)).sum()), 4)
    b = np.round(a[::-1] / 2)
    pairs = np.unique(a.ravel() * (b.max() - b.min() + 1) + b.ravel(), return_counts=True)[1] / a.size
    assert Metrics.joint_entropy(img, other) == round(float(-(pairs * np.log2(pairs)).sum()), 4)
    mi = Metrics.mutual_information(img, other)
    assert mi == pytest.approx(Metrics.entropy(img) + Metrics.entropy(other) - Metrics.joint_entropy(img, other))
    lv = run(Metrics.local_variance, mammo, 5)
    np.testing.assert_allclose(lv, lumen.local_variance(mammo.pixel_data, 5) * (25 / 24), rtol=1e-6)
    with pytest.raises(ValueError):
        run(Metrics.local_variance, mammo, (3, 5))
    v = run(Metrics.variance, mammo)
    assert v.shape == () and v == pytest.approx(mammo.pixel_data.astype(np.float64).var(ddof=1), rel=1e-6)


def test_frequency(mammo):
    f = run(FrequencyOperations.fft, mammo)
    assert f.dtype == np.complex64
    np.testing.assert_allclose(f, np.fft.fft2(mammo.pixel_data), rtol=1e-5, atol=1e-1)
    back = run(FrequencyOperations.inverse_fft, _complex_image(f))
    np.testing.assert_allclose(back.real, mammo.pixel_data, atol=1e-2)


def _complex_image(f):
    img = Image.empty()
    img.pixel_data = f
    return img


# ---------------------------------------------------------------------------- devices


def test_devices_budget_and_gpu_safe(mammo):
    assert resolve_device() == "cpu" and resolve_device(mammo, explicit="cuda:0") == "cuda:0"
    assert resolve_device(Image.empty(), mammo.clone().to("cuda")) == "cuda"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with DeviceContext("cuda") as ctx:
            stats = ctx.memory_stats()
            if ctx.device.type == "cpu":
                assert stats == {"device": "cpu"}
            else:
                assert set(stats) == {"device", "allocated_gb", "free_gb", "total_gb"}
    with DeviceContext("cpu") as ctx:
        assert ctx.device == "cpu" and ctx.memory_stats() == {"device": "cpu"}
    assert check_gpu_budget(1 << 60, None) and check_gpu_budget(1 << 60, "cpu")
    if not lumen.cuda_available():
        with pytest.raises(lumen.LumenError):
            check_gpu_budget(1, "cuda:0")
    assert estimate_image_bytes(mammo) == mammo.pixel_data.nbytes
    assert estimate_image_bytes(Image.empty(10, 20)) == 800 and estimate_image_bytes(object()) == 0
    calls = []

    @gpu_safe
    def op(image, device=None):
        calls.append(str(device))
        if device.type != "cpu":
            raise RuntimeError("Found no NVIDIA driver on your system")
        return "ran on %s" % device

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert op(mammo, device="cuda:0") == "ran on cpu" and calls == ["cuda:0", "cpu"]

    @gpu_safe
    def bad(image, device=None):
        raise ValueError("not a device problem")

    with pytest.raises(ValueError):
        bad(mammo, device="cuda")
    # a real lumen op on an unusable device: lumen's own fallback reruns on the CPU
    out = Filters.gaussian_filter(mammo.clone().to("cuda:0"), mammo.clone(), 1.0)
    np.testing.assert_array_equal(out.pixel_data, lumen.gaussian(mammo.pixel_data, 1.0))


def test_public_names_exist():
    for name in lm.__all__:
        assert getattr(lm, name) is not None, name


# ---------------------------------------------------------------------------- the original


def _original_results():
    if importlib.util.find_spec("medical_image") is not None and importlib.util.find_spec("torch") is not None:
        import mis_compare
        return mis_compare.compare()
    py = os.environ.get("LUMEN_MIS_PYTHON")
    if not py:
        pytest.skip("medical-image-std is not importable here and LUMEN_MIS_PYTHON (an interpreter with torch + "
                    "medical-image-std) is not set: no comparison with the original")
    env = dict(os.environ)
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(lumen.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH")) if p)
    r = subprocess.run([py, os.path.join(os.path.dirname(os.path.abspath(__file__)), "mis_compare.py")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_agrees_with_medical_image_std_on_a_synthetic_mammogram():
    res = _original_results()
    print(json.dumps(res, indent=1))
    for op, agree in res.items():
        assert "shape" not in agree, (op, agree)
        if "dice" in agree:
            assert agree["dice"] >= 0.999 and agree["differ"] <= 3, (op, agree)
        elif "original" in agree:
            assert agree["max_abs"] <= 1e-4, (op, agree)
        else:
            assert agree["max_rel"] <= 2e-4, (op, agree)
        if "dtype" in agree:
            assert agree["dtype"][0] == agree["dtype"][1], (op, agree)
