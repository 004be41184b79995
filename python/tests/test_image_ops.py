"""The image ops of _image_ops.py (gamma, absolute, contrast, convolve, bandpass, sauvola,
local_variance, variance_binarize, largest_component, gaussian_batch, gaussian_many, entropy,
mutual_information, variance): against the CLI `lumen filter OP` on the same NIfTI input (bit
for bit: both run the same C op on the same float32 voxels), against scipy.ndimage / numpy
computed independently, and their errors."""
import gzip
import re
import struct
import subprocess

import numpy as np
import pytest

import lumen
from lumen import _image_ops

ndimage = pytest.importorskip("scipy.ndimage")

# An independent NIfTI-1 reader for the CLI's outputs (numpy and struct only, not lumen's reader)
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


def write_nifti(path, a):
    """A NIfTI-1 float32 file of a numpy array (numpy axis order reversed into dim[1..])."""
    a = np.ascontiguousarray(a, np.float32)
    dims = list(a.shape[::-1]) + [1] * (7 - a.ndim)
    hdr = bytearray(348)
    struct.pack_into("<i", hdr, 0, 348)
    struct.pack_into("<8h", hdr, 40, a.ndim, *dims)
    struct.pack_into("<hh", hdr, 70, 16, 32)
    struct.pack_into("<8f", hdr, 76, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    struct.pack_into("<f", hdr, 108, 352.0)
    struct.pack_into("<ff", hdr, 112, 1.0, 0.0)
    hdr[344:348] = b"n+1\0"
    with open(path, "wb") as f:
        f.write(bytes(hdr) + b"\0\0\0\0" + a.tobytes())


def image(shape=(37, 45), seed=3, scale=1000.0):
    return (np.random.default_rng(seed).random(shape) * scale).astype(np.float32)


def cli(lumen_bin, tmp_path, op, a, *args, b=None):
    """Runs lumen filter OP on a (and b) as NIfTI; returns (result array or None, stdout)."""
    src = str(tmp_path / ("in_%s.nii" % op))
    write_nifti(src, a)
    if op in ("entropy", "variance", "mutual_information"):
        files = [src]
        if b is not None:
            other = str(tmp_path / ("in2_%s.nii" % op))
            write_nifti(other, b)
            files.append(other)
        r = subprocess.run([lumen_bin, "filter", op] + files + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        assert r.returncode == 0, r.stderr
        return None, r.stdout
    dst = str(tmp_path / ("out_%s.nii" % op))
    r = subprocess.run([lumen_bin, "filter", op, src, dst] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0 and "FFTW" in r.stderr:
        pytest.skip("the CLI has no FFTW: %s" % r.stderr.strip())
    assert r.returncode == 0, r.stderr
    return _read_nifti1(dst), r.stdout


CLI_CASES = [  # (op, python call, CLI options, result is a mask)
    ("gamma", lambda a: lumen.gamma(a, 1.25, max_value=1000.0), ["--gamma", "1.25", "--max-value", "1000"], False),
    ("abs", lambda a: lumen.absolute(a - 500), None, False),
    ("contrast", lambda a: lumen.contrast(a, 30.0, 7.0), ["--contrast", "30", "--brightness", "7"], False),
    ("convolve", lambda a: lumen.convolve(a, [[1, 2, 0], [0, -1, 3]], mode="nearest"),
     ["--kernel", "1,2,0,0,-1,3", "--kernel-dims", "3,2", "--mode", "nearest"], False),
    ("sauvola", lambda a: lumen.sauvola(a, window=7, k=0.3, r=200.0), ["--window", "7", "--k", "0.3", "--r", "200"], True),
    ("local_variance", lambda a: lumen.local_variance(a, window=5), ["--window", "5"], False),
    ("variance_binarize", lambda a: lumen.variance_binarize(a, window=5, alpha=0.5), ["--window", "5", "--alpha", "0.5"],
     True),
    ("largest_component", lambda a: lumen.largest_component(a > 600), None, True),
    ("bandpass", lambda a: lumen.bandpass(a, d0=8.0, width=10.0, order=2), ["--d0", "8", "--width", "10", "--order", "2"],
     False),
]


@pytest.mark.parametrize("op,call,opts,mask", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_equals_the_cli_bit_for_bit(lumen_bin, tmp_path, op, call, opts, mask):
    a = image()
    try:
        got = call(a)
    except lumen.LumenError as e:
        if op == "bandpass" and e.status_name == "not_built":
            pytest.skip("no FFTW at run time: %s" % e.message)
        raise
    cli_in = {"abs": a - 500, "largest_component": (a > 600).astype(np.float32)}.get(op, a)
    ref, _ = cli(lumen_bin, tmp_path, op, cli_in, *(opts or []))
    assert got.shape == ref.shape
    if mask:
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got != 0, ref != 0)
        assert 0 < np.count_nonzero(got) < got.size
    else:
        np.testing.assert_array_equal(got.astype(np.float32), ref)


def test_statistics_equal_the_cli(lumen_bin, tmp_path):
    a, b = image(seed=1), image(seed=2)
    _, out = cli(lumen_bin, tmp_path, "entropy", a, "--bins", "64")
    assert float(re.search(r"entropy ([-0-9.eE+]+) bits", out).group(1)) == pytest.approx(lumen.entropy(a, 64), rel=1e-9)
    _, out = cli(lumen_bin, tmp_path, "variance", a, "--ddof", "1")
    m = re.search(r"mean ([-0-9.eE+]+) variance ([-0-9.eE+]+)", out)
    mean, var = lumen.variance(a, ddof=1)
    assert (float(m.group(1)), float(m.group(2))) == (pytest.approx(mean, rel=1e-9), pytest.approx(var, rel=1e-9))
    _, out = cli(lumen_bin, tmp_path, "mutual_information", a, "--bins", "32", b=b)
    mi = lumen.mutual_information(a, b, bins=32)
    assert float(re.search(r"mutual information ([-0-9.eE+]+) bits", out).group(1)) == \
        pytest.approx(mi["mutual_information"], rel=1e-9)


def test_point_ops_match_their_formulas():
    a = image() - 100.0
    np.testing.assert_allclose(lumen.gamma(a, 1.25), 4095.0 * np.clip(a / 4095.0, 0, None) ** 1.25, rtol=2e-6, atol=1e-4)
    np.testing.assert_array_equal(lumen.absolute(a), np.abs(a))
    x = image(scale=4000.0)
    want = np.clip(x * (25.0 / (4095 / 2.0) + 1.0) + (5.0 - 25.0), 0, 4095)  # max > 255: bins 4095
    np.testing.assert_allclose(lumen.contrast(x, 25.0, 5.0), want, rtol=1e-6, atol=1e-3)


@pytest.mark.parametrize("mode", ["reflect", "nearest", "mirror", "wrap", "constant"])
def test_convolve_and_correlate_match_scipy(mode):
    a = image((29, 33)).astype(np.float64)
    k = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, 1.0], [2.0, 0.0, -1.0]])
    np.testing.assert_allclose(lumen.convolve(a, k, mode=mode, cval=7.0),
                               ndimage.convolve(a, k, mode=mode, cval=7.0), rtol=1e-5, atol=1e-2)
    np.testing.assert_allclose(lumen.convolve(a, k, mode=mode, cval=7.0, correlate=True),
                               ndimage.correlate(a, k, mode=mode, cval=7.0), rtol=1e-5, atol=1e-2)
    v = image((6, 20, 18))
    k3 = np.arange(12, dtype=np.float64).reshape(2, 3, 2) - 5
    np.testing.assert_allclose(lumen.convolve(v, k3, mode=mode), ndimage.convolve(v.astype(np.float64), k3, mode=mode),
                               rtol=1e-5, atol=5e-2)


def test_local_variance_sauvola_and_binarize_match_numpy():
    a = image((40, 31)).astype(np.float64)
    m = ndimage.uniform_filter(a, 5, mode="mirror")
    var = ndimage.uniform_filter(a * a, 5, mode="mirror") - m * m
    np.testing.assert_allclose(lumen.local_variance(a, 5), var, rtol=1e-4, atol=1e-2)
    want = (var ** 2 >= 0.7 * a.var() ** 2)
    got = lumen.variance_binarize(a, 5, alpha=0.7)
    assert np.count_nonzero(got.astype(bool) != want) <= 2  # float32 output vs float64 at the boundary
    mw = ndimage.uniform_filter(a, 9, mode="mirror")
    sw = np.sqrt(np.maximum(ndimage.uniform_filter(a * a, 9, mode="mirror") - mw * mw, 0))
    t = mw * (1 + 0.2 * (sw / 300.0 - 1))
    np.testing.assert_allclose(lumen.sauvola(a, 9, k=0.2, r=300.0, output_threshold=True), t, rtol=1e-4, atol=1e-2)
    mask = lumen.sauvola(a, 9, k=0.2, r=300.0, foreground=7)
    assert set(np.unique(mask)) <= {0, 7}
    assert np.count_nonzero((mask == 7) != (a > t)) <= 2


def test_largest_component_matches_scipy_label():
    a = np.zeros((30, 40), np.uint8)
    a[2:6, 2:6] = 1      # 16
    a[10:20, 10:13] = 1  # 30: the largest
    a[25:28, 30:39] = 1  # 27
    lab, n = ndimage.label(a)
    sizes = np.bincount(lab.ravel())[1:]
    np.testing.assert_array_equal(lumen.largest_component(a), (lab == 1 + np.argmax(sizes)).astype(np.uint8))
    assert not lumen.largest_component(np.zeros((5, 5), np.uint8)).any()


def test_gaussian_batch_and_many_equal_per_image_and_scipy():
    stack = image((3, 24, 28))
    per = np.stack([lumen.gaussian(s, 1.5) for s in stack])
    np.testing.assert_array_equal(lumen.gaussian_batch(stack, 1.5), per)
    np.testing.assert_allclose(per[1], ndimage.gaussian_filter(stack[1].astype(np.float64), 1.5, mode="nearest"),
                               rtol=1e-5, atol=1e-3)
    many = lumen.gaussian_many([stack[0], stack[2]], 1.5)
    np.testing.assert_array_equal(many[0], per[0])
    np.testing.assert_array_equal(many[1], per[2])
    assert lumen.gaussian_many([]) == []
    with pytest.raises(lumen.LumenError):
        lumen.gaussian_many([stack[0], stack[0, :10]], 1.5)


def test_statistics_match_numpy():
    a = image((20, 25)).astype(np.float64)
    mean, var = lumen.variance(a)
    assert mean == pytest.approx(a.mean(), rel=1e-6) and var == pytest.approx(a.var(), rel=1e-5)
    assert lumen.variance(a, ddof=1)[1] == pytest.approx(a.var(ddof=1), rel=1e-5)
    h, _ = np.histogram(a.astype(np.float32), bins=50, range=(float(a.min()), float(a.max())))
    p = h[h > 0] / h.sum()
    assert lumen.entropy(a, 50) == pytest.approx(-(p * np.log2(p)).sum(), rel=1e-9)
    levels = np.repeat(np.arange(8.0), 10)
    assert lumen.entropy(levels, 0) == pytest.approx(3.0, rel=1e-12)
    mi = lumen.mutual_information(levels, levels, bins=8)
    assert mi["mutual_information"] == pytest.approx(3.0, rel=1e-12) and mi["joint_entropy"] == pytest.approx(3.0)


def test_precision_report_and_errors():
    a = image()
    half, rep = lumen.gamma(a, 1.1, precision="half", return_report=True)
    assert rep["precision"] == "half" and rep["op"] and half.dtype == np.float32
    np.testing.assert_array_equal(half, lumen.gamma(a, 1.1).astype(np.float16).astype(np.float32))
    bits = lumen.absolute(a, precision="bfloat16", raw_bits=True)
    assert bits.dtype == np.uint16
    with pytest.raises(lumen.LumenError) as e:
        lumen.sauvola(a, window=4)
    assert "window" in str(e.value)
    with pytest.raises(ValueError):
        lumen.convolve(a, np.ones((2, 2, 2, 2)))
    with pytest.raises(lumen.LumenError):
        lumen.mutual_information(a, a[:10])


def test_new_mirrors_are_registered_with_their_c_defaults():
    for op in ("gamma", "abs", "contrast", "convolve", "bandpass", "sauvola", "local_variance", "stats"):
        assert op in _image_ops._NEW_OPTS
    o = _image_ops._new_opts("sauvola")
    assert (o.window, o.k, o.r, o.foreground) == (15, 0.5, 128.0, 255)
    assert _image_ops._new_opts("bandpass").order == 3
