"""lumen image operations (lumen.gaussian, median, otsu, ...) against independent numpy
computations, option defaults in the struct mirrors (their layouts: test_struct_layout.py), precision
outputs, device fallback and errors."""

import numpy as np
import pytest

import lumen
from lumen import _image

_PAD = {"nearest": "edge", "reflect": "symmetric", "mirror": "reflect", "wrap": "wrap", "constant": "constant"}


def rng_image(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).random(shape).astype(dtype)


def np_gaussian(a, sigma, mode="nearest", truncate=4.0):
    """Separable Gaussian in float64: radius int(truncate * sigma + 0.5), numpy padding."""
    out = np.asarray(a, np.float64)
    sig = np.broadcast_to(np.asarray(sigma, np.float64), (out.ndim,))
    for ax in range(out.ndim):
        s = sig[ax]
        r = int(truncate * s + 0.5)
        x = np.arange(-r, r + 1)
        w = np.exp(-0.5 * x * x / (s * s))
        w /= w.sum()
        pad = [(0, 0)] * out.ndim
        pad[ax] = (r, r)
        p = np.pad(out, pad, mode=_PAD[mode])
        acc = np.zeros_like(out)
        for k in range(2 * r + 1):
            sl = [slice(None)] * out.ndim
            sl[ax] = slice(k, k + out.shape[ax])
            acc += w[k] * p[tuple(sl)]
        out = acc
    return out


def windows(a, size, mode):
    r = size // 2
    p = np.pad(a, r, mode=_PAD[mode])
    return np.lib.stride_tricks.sliding_window_view(p, (size,) * a.ndim)


def np_otsu(a, bins):
    hist, edges = np.histogram(a.ravel(), bins=bins, range=(float(a.min()), float(a.max())))
    hist = hist.astype(np.float64)
    centers = (edges[:-1] + edges[1:]) / 2
    w1 = np.cumsum(hist)
    w2 = np.cumsum(hist[::-1])[::-1]
    m1 = np.cumsum(hist * centers) / np.maximum(w1, 1e-300)
    m2 = (np.cumsum((hist * centers)[::-1]) / np.maximum(w2[::-1], 1e-300))[::-1]
    var12 = w1[:-1] * w2[1:] * (m1[:-1] - m2[1:]) ** 2
    return centers[np.argmax(var12)]


# ---------------------------------------------------------------------------- layouts


def test_init_defaults_land_in_the_mirrored_fields():
    g = _image._new_opts("gaussian")
    assert (g.sigma, g.truncate, g.mode, list(g.sigma_axis)) == (1.0, 4.0, 1, [0.0, 0.0, 0.0])
    assert g.exec.precision == -1 and not g.exec.device and not g.exec.report
    m = _image._new_opts("morphology")
    assert (m.radius, m.size, m.binary) == (4, 7, 0)


def test_names_read_from_the_library():
    assert lumen.boundary_modes() == ["reflect", "nearest", "constant", "wrap", "mirror"]
    ops = lumen.filter_ops()
    for op in ("gaussian", "dog", "gaussian_laplace", "median", "otsu", "morphology", "fill_holes", "label"):
        assert op in ops


# ---------------------------------------------------------------------------- Gaussian family


@pytest.mark.parametrize("mode", ["nearest", "reflect", "mirror", "wrap", "constant"])
def test_gaussian_2d_matches_numpy(mode):
    a = rng_image((23, 31))
    got = lumen.gaussian(a, 1.7, mode=mode)
    assert got.dtype == np.float32 and got.shape == a.shape
    np.testing.assert_allclose(got, np_gaussian(a, 1.7, mode), rtol=1e-5, atol=2e-6)


def test_gaussian_3d_truncate_and_per_axis_sigma():
    a = rng_image((7, 12, 15), seed=3)
    np.testing.assert_allclose(lumen.gaussian(a, 1.2, truncate=2.5), np_gaussian(a, 1.2, truncate=2.5),
                               rtol=1e-5, atol=2e-6)
    b = rng_image((20, 26), seed=4)
    np.testing.assert_allclose(lumen.gaussian(b, (0.8, 2.0)), np_gaussian(b, (0.8, 2.0)), rtol=1e-5, atol=2e-6)


def test_gaussian_spatial_dims_2_is_per_slice():
    a = rng_image((4, 16, 18), seed=5)
    got = lumen.gaussian(a, 1.5, spatial_dims=2)
    for i in range(a.shape[0]):
        np.testing.assert_array_equal(got[i], lumen.gaussian(a[i], 1.5))


@pytest.mark.parametrize("dtype", [np.float64, np.uint8, np.uint16])
def test_input_dtypes_read_as_float32(dtype):
    a = (rng_image((15, 17), seed=6) * 200).astype(dtype)
    got = lumen.gaussian(a, 1.0)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, lumen.gaussian(a.astype(np.float32), 1.0))
    np.testing.assert_allclose(got, np_gaussian(a.astype(np.float32), 1.0), rtol=1e-5, atol=1e-4)


def test_non_contiguous_input():
    a = rng_image((30, 40), seed=7)
    v = a[::2, 1::3]
    np.testing.assert_array_equal(lumen.gaussian(v, 1.0), lumen.gaussian(np.ascontiguousarray(v), 1.0))


def test_dog_and_laplace():
    a = rng_image((24, 24), seed=8)
    d = lumen.dog(a, 1.0)
    np.testing.assert_allclose(d, np_gaussian(a, 1.0) - np_gaussian(a, 1.6), rtol=1e-4, atol=1e-5)
    d2 = lumen.dog(a, 1.0, 3.0, mode="reflect")
    np.testing.assert_allclose(d2, np_gaussian(a, 1.0, "reflect") - np_gaussian(a, 3.0, "reflect"),
                               rtol=1e-4, atol=1e-5)
    lap = lumen.gaussian_laplace(a, 2.0)
    assert lap.shape == a.shape and lap.dtype == np.float32 and np.all(np.isfinite(lap))
    # a constant image has a (nearly: the truncated kernel's sum is not exactly 0) zero Laplacian
    np.testing.assert_allclose(lumen.gaussian_laplace(np.full((16, 16), 3.0, np.float32), 1.5), 0, atol=1e-3)
    scipy_nd = pytest.importorskip("scipy.ndimage")
    np.testing.assert_allclose(lap, scipy_nd.gaussian_laplace(a.astype(np.float64), 2.0), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- precision


def test_half_and_bfloat16_outputs():
    a = rng_image((20, 22), seed=9)
    full = lumen.gaussian(a, 1.3)
    half, rep = lumen.gaussian(a, 1.3, precision="half", return_report=True)
    assert rep["precision"] == "half" and half.dtype == np.float32
    assert np.all(half == half.astype(np.float16).astype(np.float32))  # values are float16's
    np.testing.assert_allclose(half, full, rtol=1e-3, atol=1e-3)
    bits = lumen.gaussian(a, 1.3, precision="float16", raw_bits=True)
    assert bits.dtype == np.uint16
    np.testing.assert_array_equal(bits.view(np.float16).astype(np.float32), half)
    bf = lumen.gaussian(a, 1.3, precision="bfloat16")
    bfbits = lumen.gaussian(a, 1.3, precision="bfloat16", raw_bits=True)
    np.testing.assert_array_equal((bfbits.astype(np.uint32) << 16).view(np.float32), bf)
    np.testing.assert_allclose(bf, full, rtol=1e-2, atol=1e-2)


# ---------------------------------------------------------------------------- rank, thresholds


@pytest.mark.parametrize("size,mode", [(3, "reflect"), (5, "nearest"), (3, "mirror")])
def test_median_matches_numpy_sort(size, mode):
    a = rng_image((9, 11), seed=10)
    got = lumen.median(a, size, mode=mode)
    w = windows(a, size, mode).reshape(a.shape + (-1,))
    want = np.sort(w, axis=-1)[..., w.shape[-1] // 2]
    np.testing.assert_array_equal(got, want)


def test_median_3d():
    a = rng_image((5, 6, 7), seed=11)
    w = windows(a, 3, "reflect").reshape(a.shape + (-1,))
    np.testing.assert_array_equal(lumen.median(a, 3), np.sort(w, axis=-1)[..., 13])


@pytest.mark.parametrize("bins", [256, 64])
def test_otsu_matches_numpy(bins):
    rng = np.random.default_rng(12)
    a = np.concatenate([rng.normal(50, 8, 600), rng.normal(150, 12, 400)]).reshape(25, 40).astype(np.float32)
    thr, mask = lumen.otsu(a, bins=bins)
    want = np_otsu(a, bins)
    assert abs(thr - want) <= 1e-4 * abs(want)
    assert mask.dtype == np.uint8 and mask.shape == a.shape
    np.testing.assert_array_equal(mask, (a > thr).astype(np.uint8))
    thr2, mask2, rep = lumen.otsu(a, bins=bins, return_report=True)
    assert thr2 == thr and rep["op"] == "otsu" and rep["device"] == "cpu"


# ---------------------------------------------------------------------------- morphology, regions


def test_morphology_binary_and_grey():
    a = np.zeros((12, 12), np.uint8)
    a[3:9, 2:10] = 1
    er = lumen.morphology(a, "erode", "square", 3, binary=True)
    assert er.dtype == np.uint8
    want = np.zeros_like(a)
    want[4:8, 3:9] = 1
    np.testing.assert_array_equal(er, want)
    dil = lumen.morphology(a, "dilate", "square", 3, binary=True)
    want = np.zeros_like(a)
    want[2:10, 1:11] = 1
    np.testing.assert_array_equal(dil, want)
    g = rng_image((14, 15), seed=13)
    gd = lumen.morphology(g, "dilate", "square", size=3)
    w = np.lib.stride_tricks.sliding_window_view(g, (3, 3)).max(axis=(-1, -2))
    np.testing.assert_array_equal(gd[1:-1, 1:-1], w)
    ge = lumen.morphology(g, op="erode", element="disk", radius=1)
    cross = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], bool)
    wv = np.lib.stride_tricks.sliding_window_view(g, (3, 3))
    np.testing.assert_array_equal(ge[1:-1, 1:-1], np.where(cross, wv, np.inf).min(axis=(-1, -2)))
    th = lumen.morphology(g, "tophat", "disk", radius=2)
    assert np.all(th >= 0)


def test_fill_holes_and_label():
    a = np.zeros((10, 12), bool)
    a[1:6, 1:6] = True
    a[3, 3] = False            # a hole
    a[7:9, 8:11] = True        # a second component
    a[0, 11] = True            # a third, alone in row 0
    filled = lumen.fill_holes(a)
    assert filled.dtype == np.uint8
    want = a.copy()
    want[3, 3] = True
    np.testing.assert_array_equal(filled, want.astype(np.uint8))
    labels, count = lumen.label(a)
    assert labels.dtype == np.int32 and count == 3
    # raster order (numpy C order): the pixel at [0, 11] is met first, then the block at [1, 1]
    assert labels[0, 11] == 1 and labels[1, 1] == 2 and labels[7, 8] == 3
    assert set(np.unique(labels[a])) == {1, 2, 3} and np.all(labels[~a] == 0)
    d = np.zeros((5, 5), np.uint8)
    d[1, 1] = d[2, 2] = 1
    assert lumen.label(d)[1] == 2 and lumen.label(d, connectivity=2)[1] == 1
    scipy_nd = pytest.importorskip("scipy.ndimage")
    b = rng_image((30, 30), seed=14) > 0.6
    np.testing.assert_array_equal(lumen.label(b)[0], scipy_nd.label(b)[0])
    np.testing.assert_array_equal(lumen.fill_holes(b), scipy_nd.binary_fill_holes(b).astype(np.uint8))


# ---------------------------------------------------------------------------- devices, errors


def test_report_and_cuda_fallback():
    a = rng_image((16, 16), seed=15)
    cpu, rep = lumen.gaussian(a, 1.0, device="cpu", return_report=True)
    assert rep["device"] == "cpu" and rep["fell_back"] is False and rep["reason"] == ""
    assert rep["op"] == "gaussian" and rep["seconds"] >= 0
    if lumen.cuda_available() and lumen.filter_ops()["gaussian"]:
        pytest.skip("a usable CUDA device: no fallback to observe")
    got, rep = lumen.gaussian(a, 1.0, device="cuda:0", return_report=True)
    assert rep["requested"] == "cuda:0" and rep["device"] == "cpu"
    assert rep["fell_back"] is True and rep["reason"] and rep["device_status"] != "ok"
    np.testing.assert_array_equal(got, cpu)
    m, count, rep = lumen.label(a > 0.5, device="cuda:0", return_report=True)
    assert rep["device"] == "cpu" and (rep["fell_back"] or not lumen.cuda_available())


def test_errors_carry_the_c_message():
    a = rng_image((8, 8))
    with pytest.raises(lumen.LumenError) as ei:
        lumen.gaussian(a, -1.0)
    assert ei.value.status_name == "invalid_argument"
    assert "lumen_filter_gaussian" in ei.value.message and "sigma" in ei.value.message
    assert isinstance(ei.value, ValueError)
    with pytest.raises(lumen.LumenError) as ei:
        lumen.median(a, 4)
    assert "size" in ei.value.message
    with pytest.raises(lumen.LumenError):
        lumen.gaussian(a, 1.0, device="tpu:3")
    with pytest.raises(ValueError):
        lumen.gaussian(a, 1.0, mode="bogus")
    with pytest.raises(ValueError):
        lumen.gaussian(a, 1.0, precision="float8")
    with pytest.raises(ValueError):
        lumen.morphology(a, "explode")
    with pytest.raises(TypeError):
        lumen.gaussian(a.astype(np.int32), 1.0)
    # the context is clean afterwards
    np.testing.assert_allclose(lumen.gaussian(a, 1.0), np_gaussian(a, 1.0), rtol=1e-5, atol=2e-6)


def test_integer_arguments_beyond_c_refused():
    # issue 40 item 8: ctypes wrapped them silently (size=2**32+3 was size=3, bins=2**40 was bins=0)
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    with pytest.raises(OverflowError, match=r"size=4294967299 is out of range: expected -2147483648\.\.2147483647"):
        lumen.median(a, size=2**32 + 3)
    with pytest.raises(OverflowError, match=r"size=2147483651 is out of range"):
        lumen.median(a, size=2**31 + 3)
    with pytest.raises(OverflowError, match=r"bins=1099511627776 is out of range"):
        lumen.entropy(a, bins=2**40)
    assert lumen.median(a, size=3).shape == (8, 8)  # in range: unchanged
