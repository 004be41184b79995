#!/usr/bin/env python3
"""Writes the golden files of lumen's filter tests (tests/golden/filter/) with scipy.ndimage,
scikit-image and numpy: small inputs and the reference outputs, raw little-endian arrays in C order
(numpy shape (z, y, x) = lumen x fastest), plus scalars.txt ("name value" lines).

Run with a Python that has scipy and scikit-image (Debian: apt-get install python3-scipy
python3-skimage; then /usr/bin/python3 scripts/make_filter_golden.py). Deterministic: the inputs come
from a seeded generator, so rerunning gives identical files. The test (tests/unit/test_filter_golden.c)
knows the names and shapes listed in MANIFEST below; keep the two in step.
"""
import os
import sys

import numpy as np
import scipy
import scipy.ndimage as ndi
import skimage
from skimage import filters, morphology, measure

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden", "filter")
H2, W2 = 32, 40          # 2-D images: numpy (y, x)
D3, H3, W3 = 12, 14, 16  # 3-D images: numpy (z, y, x)


def natural(shape, rng):
    """Smooth blobs plus fine texture plus noise, in [0, 1]: natural-image-like statistics."""
    base = ndi.gaussian_filter(rng.standard_normal(shape), 3.0, mode="wrap")
    base = (base - base.min()) / (base.max() - base.min())
    tex = ndi.gaussian_filter(rng.standard_normal(shape), 0.8, mode="wrap")
    img = 0.7 * base + 0.15 * (tex - tex.min()) / (tex.max() - tex.min()) + 0.05 * rng.random(shape)
    return np.clip(img, 0, 1).astype(np.float32)


def blobs(shape, rng, frac=0.45):
    img = ndi.gaussian_filter(rng.standard_normal(shape), 1.5, mode="wrap")
    return img > np.quantile(img, 1 - frac)


scalars = {}


def save(name, arr):
    arr = np.ascontiguousarray(arr)
    if arr.dtype == np.bool_:
        arr = arr.astype(np.uint8)
    assert arr.dtype in (np.float32, np.uint8, np.int32), (name, arr.dtype)
    arr.astype(arr.dtype.newbyteorder("<")).tofile(os.path.join(OUT, name + ".bin"))


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20240607)
    a2 = natural((H2, W2), rng)
    a3 = natural((D3, H3, W3), rng)
    b2 = blobs((H2, W2), rng)
    # holes: a ring and a filled square with a hole touching nothing
    b2[5:12, 5:12] = True
    b2[7:10, 7:10] = False
    b2[20:27, 28:35] = True
    b2[22:25, 30:33] = False
    b2[23, 31] = True
    b3 = blobs((D3, H3, W3), rng, 0.5)
    b3[3:9, 3:9, 3:9] = True
    b3[5:7, 5:7, 5:7] = False
    save("in2d", a2)
    save("in3d", a3)
    save("bin2d", b2)
    save("bin3d", b3)

    # Gaussian, every boundary mode (scipy 'wrap' == 'grid-wrap' for filters)
    for mode in ["reflect", "nearest", "constant", "wrap", "mirror"]:
        save("gauss2d_" + mode, ndi.gaussian_filter(a2, 1.5, mode=mode, cval=0.25, truncate=4.0))
        save("gauss3d_" + mode, ndi.gaussian_filter(a3, 1.2, mode=mode, cval=0.25, truncate=4.0))
    # anisotropic (sigma x = 2.0, y = 0.8) and a radius beyond the image (repeated reflection)
    save("gauss2d_aniso", ndi.gaussian_filter(a2, (0.8, 2.0), mode="reflect"))
    save("gauss2d_big", ndi.gaussian_filter(a2, 12.0, mode="reflect"))
    save("gauss2d_bigmirror", ndi.gaussian_filter(a2, 12.0, mode="mirror"))
    save("gauss2d_bigwrap", ndi.gaussian_filter(a2, 12.0, mode="wrap"))

    # DoG (skimage: mode nearest, high = 1.6 low), LoG (scipy)
    save("dog2d", filters.difference_of_gaussians(a2, 1.0))
    save("dog3d", filters.difference_of_gaussians(a3, 1.0, 2.0))
    save("log2d_reflect", ndi.gaussian_laplace(a2, 2.0, mode="reflect"))
    save("log2d_nearest", ndi.gaussian_laplace(a2, 1.3, mode="nearest"))
    save("log3d_reflect", ndi.gaussian_laplace(a3, 1.5, mode="reflect"))

    # median
    save("median2d_3", ndi.median_filter(a2, size=3, mode="reflect"))
    save("median2d_5", ndi.median_filter(a2, size=5, mode="reflect"))
    save("median2d_5_nearest", ndi.median_filter(a2, size=5, mode="nearest"))
    save("median2d_5_constant", ndi.median_filter(a2, size=5, mode="constant", cval=0.5))
    save("median2d_7_mirror", ndi.median_filter(a2, size=7, mode="mirror"))
    save("median2d_13", ndi.median_filter(a2, size=13, mode="reflect"))
    save("median3d_3", ndi.median_filter(a3, size=3, mode="reflect"))
    save("median3d_5_wrap", ndi.median_filter(a3, size=5, mode="wrap"))

    # convolution: even-sized kernel (origin rule), correlation, 3-D
    k2 = rng.standard_normal((3, 4)).astype(np.float32)  # numpy (ky, kx)
    k3 = rng.standard_normal((3, 3, 3)).astype(np.float32)
    save("kernel2d", k2)
    save("kernel3d", k3)
    save("convolve2d_reflect", ndi.convolve(a2, k2, mode="reflect"))
    save("convolve2d_wrap", ndi.convolve(a2, k2, mode="wrap"))
    save("correlate2d_constant", ndi.correlate(a2, k2, mode="constant", cval=0.0))
    save("convolve3d_nearest", ndi.convolve(a3, k3, mode="nearest"))

    # grey morphology (skimage)
    for fname, f in [("erode", morphology.erosion), ("dilate", morphology.dilation), ("open", morphology.opening),
                     ("close", morphology.closing), ("tophat", morphology.white_tophat)]:
        save("grey2d_%s_disk2" % fname, f(a2, morphology.disk(2)))
        save("grey2d_%s_square5" % fname, f(a2, morphology.square(5)))
        save("grey3d_%s_ball1" % fname, f(a3, morphology.ball(1)))
    # binary morphology (skimage)
    for fname, f in [("erode", morphology.binary_erosion), ("dilate", morphology.binary_dilation),
                     ("open", morphology.binary_opening), ("close", morphology.binary_closing)]:
        save("bin2d_%s_disk2" % fname, f(b2, morphology.disk(2)))
        save("bin2d_%s_square3" % fname, f(b2, morphology.square(3)))
        save("bin3d_%s_ball1" % fname, f(b3, morphology.ball(1)))

    # Otsu (float semantics), thresholds as exact values
    scalars["otsu2d_256"] = filters.threshold_otsu(a2, nbins=256)
    scalars["otsu3d_256"] = filters.threshold_otsu(a3, nbins=256)
    scalars["otsu2d_64"] = filters.threshold_otsu(a2, nbins=64)
    a12 = (a2 * 4000.0 + 17.0).astype(np.float32)
    save("in2d_12bit", a12)
    scalars["otsu2d12_4096"] = filters.threshold_otsu(a12, nbins=4096)

    # hole filling, labelling
    save("fill2d", ndi.binary_fill_holes(b2))
    save("fill2d_full", ndi.binary_fill_holes(b2, structure=np.ones((3, 3))))
    save("fill3d", ndi.binary_fill_holes(b3))
    for conn in (1, 2):
        lab, n = ndi.label(b2, structure=ndi.generate_binary_structure(2, conn))
        save("label2d_c%d" % conn, lab.astype(np.int32))
        scalars["label2d_c%d" % conn] = n
    for conn in (1, 3):
        lab, n = ndi.label(b3, structure=ndi.generate_binary_structure(3, conn))
        save("label3d_c%d" % conn, lab.astype(np.int32))
        scalars["label3d_c%d" % conn] = n

    # Sauvola threshold map (skimage), local variance (mirror borders, float64 reference)
    save("sauvola2d", filters.threshold_sauvola(a2, window_size=15, k=0.2, r=0.5))
    save("sauvola3d", filters.threshold_sauvola(a3, window_size=5, k=0.3, r=0.4))
    x = a2.astype(np.float64)
    lv = ndi.uniform_filter(x * x, 5, mode="mirror") - ndi.uniform_filter(x, 5, mode="mirror") ** 2
    save("localvar2d", np.maximum(lv, 0).astype(np.float32))

    # Butterworth band-pass, centred on the zero frequency (d0 6, w 4, n 2)
    def bandpass(img, d0, w, n):
        F = np.fft.rfftn(img.astype(np.float64))
        grids = np.meshgrid(*[np.abs(np.fft.fftfreq(s) * s) for s in img.shape[:-1]],
                            np.arange(img.shape[-1] // 2 + 1), indexing="ij")
        D = np.sqrt(sum(g.astype(np.float64) ** 2 for g in grids))
        with np.errstate(divide="ignore", invalid="ignore"):
            Hm = 1.0 / (1.0 + ((D ** 2 - d0 ** 2) / (8.0 * w * D)) ** (2 * n))
        Hm[D == 0] = 0.0
        return np.fft.irfftn(F * Hm, s=img.shape).astype(np.float32)
    save("bandpass2d", bandpass(a2, 6.0, 4.0, 2))
    save("bandpass3d", bandpass(a3, 3.0, 2.0, 3))

    # entropy, mutual information, variance
    q = np.round(a2 * 15).astype(np.float32)
    save("in2d_q", q)
    scalars["entropy_distinct_q"] = measure.shannon_entropy(q)
    cnt, _ = np.histogram(a2, bins=256)
    p = cnt[cnt > 0] / a2.size
    scalars["entropy_hist256"] = float(-(p * np.log2(p)).sum())
    b_img = (a2 * a2 + 0.1 * rng.random(a2.shape)).astype(np.float32)
    save("in2d_b", b_img)
    nb = 32
    ea = np.histogram_bin_edges(a2, bins=nb)
    eb = np.histogram_bin_edges(b_img, bins=nb)
    ia = np.clip(np.digitize(a2, ea[1:-1]), 0, nb - 1)
    ib = np.clip(np.digitize(b_img, eb[1:-1]), 0, nb - 1)
    joint = np.zeros((nb, nb))
    np.add.at(joint, (ia.ravel(), ib.ravel()), 1)

    def ent(c):
        c = c[c > 0] / c.sum()
        return float(-(c * np.log2(c)).sum())
    scalars["mi32"] = ent(joint.sum(1)) + ent(joint.sum(0)) - ent(joint)
    scalars["mi32_joint"] = ent(joint)
    scalars["var2d"] = float(np.var(a2.astype(np.float64)))
    scalars["mean2d"] = float(np.mean(a2.astype(np.float64)))

    with open(os.path.join(OUT, "scalars.txt"), "w") as f:
        f.write("# made by scripts/make_filter_golden.py with scipy %s, scikit-image %s, numpy %s\n"
                % (scipy.__version__, skimage.__version__, np.__version__))
        for k, v in scalars.items():
            f.write("%s %s\n" % (k, repr(float(v))))
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print("wrote %d files, %d bytes, to %s" % (len(os.listdir(OUT)), total, os.path.normpath(OUT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
