"""lumen segmentation from Python (lumen.febds, kmeans, ..., grail) against `lumen segment` on the
same NIfTI input (bit for bit), the library's defaults, errors with the C message, 3-D slices,
the CUDA fallback and the GRAIL window."""
import inspect
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import lumen
from lumen import _segment

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.environ.get("LUMEN_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "cli"))
from imagefiles import nii_read, nii_write  # noqa: E402  (the CLI tests' NIfTI writer/reader)


def mammogram(h=72, w=64, seed=4):
    """12-bit synthetic mammogram: half-ellipse breast, smooth texture, noise, calcifications."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(float)
    r = np.hypot(x / (0.85 * w), (y - h / 2) / (0.46 * h))
    t = np.sqrt(np.clip(1 - r * r, 0, None))
    tex = sum(np.sin(rng.uniform(-.3, .3) * x + rng.uniform(-.3, .3) * y + rng.uniform(0, 6.3)) for _ in range(6))
    v = 150 + 1700 * (1 - np.exp(-5 * t)) + 60 * tex * (t > 0) + rng.normal(0, 12, (h, w))
    for cx, cy, cr in [(20, 20, 2), (35, 40, 3), (18, 52, 2), (40, 25, 1)]:
        v[np.hypot(x - cx, y - cy) <= cr] += 400
    return np.clip(np.round(v), 0, 4095).astype(np.float32)


IMG = mammogram()


@pytest.fixture(scope="module")
def nifti_in(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("seg") / "mammo.nii")
    nii_write(p, [IMG.shape[1], IMG.shape[0]], [float(v) for v in IMG.ravel()])
    return p


def cli(lumen_bin, algo, src, args, tmpdir, verbose=False):
    out = os.path.join(str(tmpdir), "out_%s.nii" % algo)
    cmd = [lumen_bin, "segment", algo, src, out, "--overwrite"] + list(args) + (["-v"] if verbose else ["-q"])
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert r.returncode == 0, " ".join(cmd) + "\n" + r.stderr
    dims, dt, vals = nii_read(out)
    arr = np.array(vals, dtype={2: np.uint8, 16: np.float32}[dt]).reshape(dims[::-1])
    return arr, r.stderr


SEED = (30, 22)  # (row, col) in numpy order; the CLI's --seed-point is X,Y = col,row

CASES = [  # (id, CLI algorithm, CLI options, Python call)
    ("febds", "febds", [], lambda a: lumen.febds(a)),
    ("febds_log", "febds", ["--method", "log"], lambda a: lumen.febds(a, method="log")),
    ("febds_fft", "febds", ["--method", "fft", "--fft-d0", "12", "--fft-width", "3"],
     lambda a: lumen.febds(a, method="fft", fft_d0=12, fft_width=3)),
    ("tophat", "tophat", [], lambda a: lumen.tophat(a)),
    ("tophat_mask", "tophat", ["--mask", "--radius", "3"], lambda a: lumen.tophat(a, output_mask=True, radius=3)),
    ("kmeans", "kmeans", [], lambda a: lumen.kmeans(a)),
    ("kmeans_labels", "kmeans", ["--k", "3", "--labels"], lambda a: lumen.kmeans(a, k=3, labels=True)),
    ("fcm", "fcm", ["--m", "1.5"], lambda a: lumen.fcm(a, m=1.5)),
    ("pfcm", "pfcm", [], lambda a: lumen.pfcm(a)),
    ("region_grow", "region_grow", [], lambda a: lumen.region_grow(a)),
    ("region_grow_seed", "region_grow", ["--seed-point", "%d,%d" % (SEED[1], SEED[0]), "--smooth-radius", "1"],
     lambda a: lumen.region_grow(a, seeds=[SEED], smooth_radius=1)),
    ("breast_mask", "breast_mask", [], lambda a: lumen.breast_mask(a)),
    ("window", "window", [], lambda a: lumen.window(a)),
    ("window_cw", "window", ["--center", "1000", "--width", "800"], lambda a: lumen.window(a, center=1000, width=800)),
    ("normalize_bits", "normalize_bits", [], lambda a: lumen.normalize_bits(a)),
    ("normalize_bits16", "normalize_bits", ["--bits", "16", "--target", "1"],
     lambda a: lumen.normalize_bits(a, bits=16, target=1)),
    ("grail_small", "grail", ["--n-scales", "2", "--n-orientations", "3", "--k-max", "2"],
     lambda a: lumen.grail(a, n_scales=2, n_orientations=3, k_max=2)[0]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_equals_cli(case, lumen_bin, nifti_in, tmp_path):
    _, algo, args, call = case
    want, _ = cli(lumen_bin, algo, nifti_in, args, tmp_path)
    got = call(IMG)
    assert got.shape == IMG.shape
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    if got.dtype == np.uint8 and "labels" not in case[0]:
        assert set(np.unique(got)) <= {0, 1}


def test_grail_window_equals_cli(lumen_bin, nifti_in, tmp_path):
    """Default options: the same image and the same (a, b) as the CLI logs with -v."""
    out, a, b, rep = lumen.grail(IMG, return_report=True)
    want, err = cli(lumen_bin, "grail", nifti_in, [], tmp_path, verbose=True)
    np.testing.assert_array_equal(out, want)
    m = re.search(r"window a = ([-0-9.e+]+), b = ([-0-9.e+]+)", err)
    assert m, err
    assert float(m.group(1)) == pytest.approx(a, rel=1e-9, abs=1e-9)
    assert float(m.group(2)) == pytest.approx(b, rel=1e-9, abs=1e-9)
    g = rep["grail"]
    assert (g["a"], g["b"], g["bits"], g["delta"]) == (a, b, 12, 300.0)
    assert a < b and g["evaluations"] > 10
    # the output is linear windowing with the returned bounds, and the metric is the one reported
    lin = np.clip((IMG.astype(np.float64) - a) / (b - a), 0, 1) * 255
    np.testing.assert_allclose(out, lin, atol=1e-3)
    np.testing.assert_array_equal(out, lumen.window(IMG, center=(a + b) / 2, width=b - a))
    assert lumen.grail_metric(IMG, a, b) == g["metric"]
    # the window found is at least as good as the full range and a narrow one
    assert g["metric"] >= lumen.grail_metric(IMG, IMG.min(), IMG.max())
    assert g["metric"] >= lumen.grail_metric(IMG, 1000, 1500)


def test_defaults_come_from_the_library():
    """No default is retyped in Python: every option keyword is None, and None keeps init's value."""
    for name in _segment.__all__:
        fn = getattr(lumen, name)
        for p in inspect.signature(fn).parameters.values():
            if p.name in ("image", "a", "b", "seeds"):
                continue
            assert p.default in (None, False), (name, p.name, p.default)
    o = _segment._new_opts("febds")
    _segment._set(o, median_size=None, gamma=None)
    assert (o.median_size, o.gamma, o.gamma_max, o.closing_size) == (5, 1.25, 4095.0, 7)
    g = _segment._new_opts("grail")
    assert (g.n_scales, g.n_orientations, g.delta, g.k_max, g.steps, g.bins, g.quantize) == (3, 6, 0.0, 3, 5, 256, 1)
    assert lumen.febds_methods() == ["dog", "log", "fft"]
    assert lumen.segment_algorithms()[-1] == "grail" and "normalize_bits" in lumen.segment_algorithms()


def test_reports_and_extra_outputs():
    mask, rep = lumen.febds(IMG, return_report=True)
    assert rep["op"] == "febds" and rep["device"] == "cpu" and np.isfinite(rep["threshold"])
    lab, rep = lumen.kmeans(IMG, k=3, labels=True, return_report=True)
    c = rep["clusters"]
    assert c["k"] == 3 and c["centers"] == sorted(c["centers"]) and sum(c["sizes"]) == IMG.size
    np.testing.assert_array_equal(np.bincount(lab.ravel(), minlength=3), c["sizes"])
    _, rep = lumen.normalize_bits(IMG, return_report=True)
    assert rep["bits"] == 12
    _, rep = lumen.fcm(IMG, return_report=True)
    assert rep["clusters"]["converged"]


def test_3d_is_per_slice():
    vol = np.stack([IMG, IMG[::-1].copy()])
    m3 = lumen.febds(vol)
    np.testing.assert_array_equal(m3[0], lumen.febds(IMG))
    np.testing.assert_array_equal(m3[1], lumen.febds(IMG[::-1].copy()))
    t3 = lumen.tophat(vol)
    np.testing.assert_array_equal(t3[1], lumen.tophat(IMG[::-1].copy()))


def test_cuda_request_falls_back_cleanly():
    """Host-only algorithms asked for CUDA run on the CPU and say so; the result is the CPU's."""
    for fn in (lumen.kmeans, lumen.window):
        got, rep = fn(IMG, device="cuda", return_report=True)
        assert rep["fell_back"] and rep["device"] == "cpu" and rep["reason"]
        np.testing.assert_array_equal(got, fn(IMG))
    out, a, b, rep = lumen.grail(IMG, n_scales=1, n_orientations=2, device="cuda", return_report=True)
    assert rep["fell_back"] and "grail" in rep["reason"]
    np.testing.assert_array_equal(out, lumen.grail(IMG, n_scales=1, n_orientations=2)[0])


def test_half_precision_output():
    full = lumen.window(IMG)
    half = lumen.window(IMG, precision="half")
    assert half.dtype == np.float32
    np.testing.assert_array_equal(half, full.astype(np.float16).astype(np.float32))


ERRORS = [  # (call, words of the C message)
    (lambda: lumen.febds(IMG, median_size=4), "median_size is 4"),
    (lambda: lumen.febds(IMG, method="sobel"), "dog, log, fft"),
    (lambda: lumen.tophat(IMG, radius=0), "radius"),
    (lambda: lumen.kmeans(IMG, k=1), "k is 1"),
    (lambda: lumen.fcm(IMG, m=1.0), "m is 1"),
    (lambda: lumen.pfcm(IMG, tau=0), "tau"),
    (lambda: lumen.region_grow(IMG, connectivity=5), "connectivity"),
    (lambda: lumen.breast_mask(IMG, connectivity=3), "connectivity"),
    (lambda: lumen.window(IMG, width=-1), "width is -1"),
    (lambda: lumen.normalize_bits(IMG, bits=40), "bits is 40"),
    (lambda: lumen.grail(IMG, n_scales=0), "n_scales is 0"),
    (lambda: lumen.grail(np.stack([IMG, IMG])), "2-D"),
    (lambda: lumen.grail(np.full((8, 8), 7, np.float32)), "constant"),
    (lambda: lumen.grail_metric(IMG, 100, 100), "window"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_carry_the_c_message(i):
    call, words = ERRORS[i]
    with pytest.raises(lumen.LumenInvalidArgument) as e:
        call()
    assert words in str(e.value)
    assert isinstance(e.value, ValueError)


def test_bad_python_arguments():
    with pytest.raises(ValueError, match="seeds"):
        lumen.region_grow(IMG, seeds=[(1, 2, 3)])
    with pytest.raises(TypeError, match="k="):
        lumen.kmeans(IMG, k=2.5)
    with pytest.raises(ValueError, match="seed"):
        lumen.kmeans(IMG, seed=-1)
