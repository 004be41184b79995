"""lumen.process_images (the C image-batch engine, lumen_batch_run): every result equals the single
op on that image, for numpy arrays and for files, for ops the library runs by name (filters,
segmentations, tuple results) and for callables and Python-only ops; outputs= writes the files;
device lists, overlap and the memory limit change nothing; errors stop the batch like a loop;
the medical_image pipeline classes run their lumen C algorithms through it with unchanged results."""
import os
import warnings

import numpy as np
import pytest

import lumen
from lumen import _batch
from lumen.medical_image import (Image, FebdsAlgorithm, TopHatAlgorithm, KMeansAlgorithm, DicomWindowAlgorithm,
                                 BitDepthNormAlgorithm, AsyncGPUPipeline, MultiGPUAlgorithm)
from lumen.medical_image import _pipeline

N = 5


def _images(n=N, shape=(48, 56), seed=3):
    rng = np.random.default_rng(seed)
    out = []
    yy, xx = np.mgrid[:shape[0], :shape[1]]
    for i in range(n):
        blob = ((yy - 20 - i) ** 2 + (xx - 25) ** 2 < 30) * 120.0
        out.append((rng.random(shape) * 100 + blob).astype(np.float32))
    return out


def _same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        return
    assert a == b


# op, kwargs, the single call
CASES = [
    ("gaussian", {"sigma": 2.0, "mode": "reflect"}, lambda a: lumen.gaussian(a, sigma=2.0, mode="reflect")),
    ("gaussian", {"sigma": (1.0, 2.5)}, lambda a: lumen.gaussian(a, sigma=(1.0, 2.5))),
    ("dog", {"low_sigma": 1.2}, lambda a: lumen.dog(a, low_sigma=1.2)),
    ("gaussian_laplace", {"sigma": 1.5, "discrete": True}, lambda a: lumen.gaussian_laplace(a, sigma=1.5, discrete=True)),
    ("median", {"size": 5}, lambda a: lumen.median(a, size=5)),
    ("morphology", {"op": "close", "size": 3}, lambda a: lumen.morphology(a, op="close", size=3)),
    ("gamma", {"gamma": 1.25, "max_value": 255.0}, lambda a: lumen.gamma(a, gamma=1.25, max_value=255.0)),
    ("absolute", {}, lambda a: lumen.absolute(a - 50)),
    ("sauvola", {"window": 7}, lambda a: lumen.sauvola(a, window=7)),
    ("otsu", {}, lambda a: lumen.otsu(a)),
    ("label", {"connectivity": 2}, lambda a: lumen.label(a > 150, connectivity=2)),
    ("febds", {"method": "log"}, lambda a: lumen.febds(a, method="log")),
    ("febds", {}, lambda a: lumen.febds(a)),
    ("kmeans", {"k": 3}, lambda a: lumen.kmeans(a, k=3)),
    ("tophat", {"radius": 2}, lambda a: lumen.tophat(a, radius=2)),
    ("window", {"center": 80.0, "width": 100.0}, lambda a: lumen.window(a, center=80.0, width=100.0)),
    ("normalize_bits", {"bits": 8}, lambda a: lumen.normalize_bits(a, bits=8)),
    ("gaussian", {"sigma": 1.0, "precision": "half"}, lambda a: lumen.gaussian(a, sigma=1.0, precision="half")),
    ("gaussian", {"sigma": 1.0, "precision": "bfloat16", "raw_bits": True},
     lambda a: lumen.gaussian(a, sigma=1.0, precision="bfloat16", raw_bits=True)),
]


def _inputs_for(op, images):
    if op == "absolute":
        return [a - 50 for a in images]
    if op == "label":
        return [a > 150 for a in images]
    return images


@pytest.mark.parametrize("op,kw,single", CASES, ids=["%s-%d" % (c[0], i) for i, c in enumerate(CASES)])
def test_arrays_equal_single_op(op, kw, single):
    images = _images()
    want = [single(a) for a in images]
    inputs = _inputs_for(op, images)
    assert op in _batch.batch_ops()  # runs in C
    runs = [(None, True, None), ("cpu,cpu", True, 1), ("cpu", False, 1), ("cpu,cpu", False, None)]
    if not lumen.cuda_available():  # "auto" is the CPU here; on a GPU it would compare GPU with CPU results
        runs.append(("auto", True, None))
    one = None  # the charge of one item (first run, no limit): room for exactly one, one at a time
    for devices, overlap, limit in runs:
        got, rep = lumen.process_images(inputs, op, devices=devices, overlap=overlap,
                                        memory_limit=one if limit else None, return_report=True, **kw)
        one = one or rep["item_bytes"]
        assert len(got) == N and rep["written"] == N and rep["failed_item"] == -1
        assert sum(rep["per_worker"]) == N
        if devices == "cpu,cpu":
            assert rep["devices"] == "cpu,cpu" and rep["workers"] == 2
        for w, g in zip(want, got):
            _same(w, g)


def test_callables_and_python_ops_equal_single():
    images = _images()
    got = lumen.process_images(images, lambda a, device: lumen.median(a, size=3, device=device) * 2, devices="cpu,cpu")
    for a, g in zip(images, got):
        _same(lumen.median(a, size=3) * 2, g)
    seen = []
    got = lumen.process_images(images, lambda a, device, scale: (seen.append(device), a * scale)[1], devices="cpu",
                               scale=3.0)
    assert seen == ["cpu"] * N
    for a, g in zip(images, got):
        _same(a * 3.0, g)
    k = np.ones((3, 3), np.float32) / 9
    for a, g in zip(images, lumen.process_images(images, "convolve", devices="cpu,cpu", kernel=k)):
        _same(lumen.convolve(a, k), g)
    for a, g in zip(images, lumen.process_images(images, "grail", n_scales=2)):
        _same(lumen.grail(a, n_scales=2), g)  # (windowed, a, b) as the single call


def _write_files(tmp_path, images):
    png = [str(tmp_path / ("in%d.png" % i)) for i in range(N)]
    nii = [str(tmp_path / ("in%d.nii.gz" % i)) for i in range(N)]
    for i, a in enumerate(images):
        lumen.write_image(png[i], np.clip(a, 0, 255).astype(np.uint8))
        lumen.write_image(nii[i], a, spacing=(0.5, 0.7), affine=np.diag([0.7, 0.5, 1.0, 1.0]))
    return png, nii


def test_files_equal_single_op(tmp_path):
    images = _images()
    png, nii = _write_files(tmp_path, images)
    for paths in (png, nii, [png[0], images[1], nii[2], png[3], images[4]]):
        for op, kw, fn in [("gaussian", {"sigma": 1.5}, lambda a: lumen.gaussian(a, sigma=1.5)),
                           ("febds", {}, lumen.febds), ("otsu", {}, lumen.otsu)]:
            got = lumen.process_images(paths, op, devices="cpu,cpu", **kw)
            for p, g in zip(paths, got):
                a = p if isinstance(p, np.ndarray) else lumen.read_image(p)[0]
                _same(fn(a), g)


def test_outputs_written(tmp_path):
    images = _images()
    png, nii = _write_files(tmp_path, images)
    out_nii = [str(tmp_path / ("g%d.nii" % i)) for i in range(N)]
    assert lumen.process_images(nii, "gaussian", outputs=out_nii, sigma=2.0) == out_nii
    for src, dst in zip(nii, out_nii):
        a, meta_in = lumen.read_image(src)
        b, meta = lumen.read_image(dst)
        _same(lumen.gaussian(a, sigma=2.0), b)
        assert np.allclose(meta["spacing"], meta_in["spacing"]) and np.allclose(meta["affine"], meta_in["affine"])
    out_png = [str(tmp_path / ("m%d.png" % i)) for i in range(N)]
    lumen.process_images(png, "febds", outputs=out_png, devices="cpu,cpu", overlap=False)
    for src, dst in zip(png, out_png):
        want = lumen.febds(lumen.read_image(src)[0])
        _same(want, lumen.read_image(dst)[0])
    with pytest.raises(lumen.LumenError):  # an existing output is not replaced
        lumen.process_images(png[:1], "febds", outputs=out_png[:1])


def test_errors(tmp_path):
    images = _images()
    with pytest.raises(ValueError, match="not a lumen image op"):
        lumen.process_images(images, "sharpen")
    with pytest.raises(TypeError, match="takes no sigmaa"):
        lumen.process_images(images, "gaussian", sigmaa=2)
    with pytest.raises(TypeError, match="devices="):
        lumen.process_images(images, "gaussian", device="cpu")
    with pytest.raises(lumen.LumenInvalidArgument, match="opts.devices.*gpu:7"):
        lumen.process_images(images, "gaussian", devices="gpu:7")
    with pytest.raises(ValueError, match="memory_limit"):
        lumen.process_images(images, "gaussian", memory_limit=-1)
    with pytest.raises(ValueError, match="one path per input"):
        lumen.process_images(images, "gaussian", outputs=["a.nii"])
    with pytest.raises(lumen.LumenInvalidArgument):  # the op's own check, naming the item
        lumen.process_images(images, "median", size=4)
    assert lumen.process_images([], "gaussian") == []
    # a failing item stops the batch: the ones before it are written, none after it
    png, _ = _write_files(tmp_path, images)
    paths = png[:2] + [str(tmp_path / "missing.png")] + png[3:]
    outs = [str(tmp_path / ("o%d.png" % i)) for i in range(N)]
    one = lumen.process_images(png[:1], "otsu", return_report=True)[1]["item_bytes"]
    with pytest.raises(lumen.LumenError):
        lumen.process_images(paths, "otsu", outputs=outs, memory_limit=one)
    assert [os.path.exists(o) for o in outs] == [True, True, False, False, False]

    def boom(a, device):
        if a[0, 0] == images[1][0, 0]:
            raise RuntimeError("boom at 1")
        return a

    with pytest.raises(RuntimeError, match="boom at 1"):
        lumen.process_images(images, boom)
    one = lumen.process_images(images[:1], "gaussian", return_report=True)[1]["item_bytes"]
    with pytest.raises(lumen.LumenError, match="cancelled"):
        lumen.process_images(images, "gaussian", memory_limit=one, progress=lambda done, n: done >= 2)
    calls = []
    lumen.process_images(images, "gaussian", progress=lambda done, n: calls.append((done, n)))
    assert calls[0] == (0, N) and calls[-1] == (N, N)


# ---------------------------------------------------------------------------- medical_image


def _mammos():
    return [np.ascontiguousarray(a * 10) for a in _images(4, (64, 72), seed=7)]


MAPPED = [lambda: FebdsAlgorithm("dog", convention="lumen"), lambda: FebdsAlgorithm("log", convention="lumen"),
          lambda: TopHatAlgorithm(radius=2, convention="lumen"),
          lambda: DicomWindowAlgorithm(window_center=500, window_width=800, device="cpu"),
          lambda: BitDepthNormAlgorithm(bits_stored=12, device="cpu")]


def _single(algo, a):
    img = Image.from_array(a)
    out = img.clone()
    algo(img, out)
    return out.pixel_data


@pytest.mark.parametrize("make", MAPPED, ids=["febds-dog", "febds-log", "tophat", "window", "bits"])
def test_pipeline_classes_use_the_engine(make, tmp_path, monkeypatch):
    arrays = _mammos()
    algo = make()
    assert _pipeline._lumen_op(algo) is not None
    calls = []
    real = _pipeline._run_c
    monkeypatch.setattr(_pipeline, "_run_c", lambda *a: calls.append(a[2]) or real(*a))
    paths = []
    for i, a in enumerate(arrays):
        paths.append(str(tmp_path / ("m%d.nii" % i)))
        lumen.write_image(paths[-1], a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pipe = AsyncGPUPipeline(device="cpu")
        multi = MultiGPUAlgorithm(algorithm_class=type(algo), gpu_ids=None, **_ctor_args(algo))
    items = [paths[0], Image.from_array(arrays[1]), paths[2], Image.from_array(arrays[3])]
    res = pipe.process_images(items, algo)
    assert [r.file_path for r in res] == [paths[0], None, paths[2], None]
    for r, a in zip(res, arrays):
        _same(_single(algo, a), r.pixel_data)
    imgs = [Image.from_array(a) for a in arrays]
    outs = [i.clone() for i in imgs]
    assert multi.apply_batch(imgs, outs) == outs
    per_device = next(iter(multi.algorithms.values()))  # on the device multi uses
    for o, a in zip(outs, arrays):
        _same(_single(per_device, a), o.pixel_data)
    assert len(calls) == 2  # both through the C engine


def _ctor_args(algo):
    if isinstance(algo, FebdsAlgorithm):
        return {"method": algo.method, "convention": "lumen"}
    if isinstance(algo, TopHatAlgorithm):
        return {"radius": algo.radius, "convention": "lumen"}
    if isinstance(algo, DicomWindowAlgorithm):
        return {"window_center": algo.window_center, "window_width": algo.window_width}
    return {"bits_stored": algo.bits_stored}


def test_other_algorithms_keep_the_python_path():
    assert _pipeline._lumen_op(TopHatAlgorithm(radius=2)) is None  # convention "original"
    assert _pipeline._lumen_op(KMeansAlgorithm(k=2)) is None
    assert _pipeline._lumen_op(DicomWindowAlgorithm()) is None  # the window comes from each file
    assert _pipeline._lumen_op(BitDepthNormAlgorithm()) is None
    assert _pipeline._lumen_op(lambda img, out: out) is None

    class Mine(FebdsAlgorithm):
        def apply(self, image, output):
            output.pixel_data = np.zeros(1)
            return output

    assert _pipeline._lumen_op(Mine("dog", convention="lumen")) is None


def test_memory_limit_refuses_an_image_over_it(tmp_path):
    """Issue 40 item 14: one rule with the CLI: an image that alone needs more than memory_limit is
    refused (a file from its header, before it is decoded: a 20000 x 20000 PNG of 390 KB took 3.5 GB),
    naming what it needs and the limit; under the limit it runs."""
    import struct
    import zlib

    def ch(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)

    w = h = 20000
    co = zlib.compressobj(9)
    row = b"\x00" * (w + 1)
    idat = b"".join(co.compress(row) for _ in range(h)) + co.flush()
    big = tmp_path / "big.png"
    big.write_bytes(b"\x89PNG\r\n\x1a\n" + ch(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                    + ch(b"IDAT", idat) + ch(b"IEND", b""))
    with pytest.raises(lumen.LumenMemoryError, match=r"big.png.*needs 400000000 bytes, over the memory limit of 67108864"):
        lumen.process_images([str(big)], "gaussian", memory_limit=64 << 20)
    a = np.zeros((2000, 2000), np.float32)  # an array: the engine's charge (input, copy, result, scratch)
    with pytest.raises(lumen.LumenMemoryError, match=r"item 0 \(4000000 voxels\) needs about \d+ MiB .*over the memory "
                                                     r"limit of 16 MiB"):
        lumen.process_images([a], "gaussian", memory_limit=16 << 20)
    got = lumen.process_images([a], "gaussian", memory_limit=1 << 30)
    assert got[0].shape == a.shape
