#!/usr/bin/env python3
"""GRAIL automatic windowing: lumen.grail against medical-image-std's GrailWindowAlgorithm on the
same synthetic 12-bit mammogram, in one process (a benchmark, not a test).

    LUMEN_LIBRARY=build/liblumen.so PYTHONPATH=python VENV/bin/python bench/bench_grail_peers.py [size ...]

VENV: a venv with torch and medical-image-std (pip install medical-image-std). Prints, per size,
each tool's window (a, b), its time (best of --repeats), lumen's metric of both windows, and
lumen with quantize=0 (the reference's unrounded metric)."""
import argparse
import time

import numpy as np


def mammogram(n, seed=3):
    """n x n, 12-bit: half-ellipse breast, smooth fibroglandular texture, noise, calcifications."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:n, 0:n].astype(float)
    r = np.hypot(x / (0.85 * n), (y - n / 2) / (0.46 * n))
    t = np.sqrt(np.clip(1 - r * r, 0, None))
    f = np.fft.fftfreq(n)
    tex = np.real(np.fft.ifft2(np.fft.fft2(rng.normal(size=(n, n))) *
                               np.exp(-(f[:, None] ** 2 + f[None, :] ** 2) / (2 * 0.03 ** 2))))
    tex /= tex.std()
    v = 150 + 1700 * (1 - np.exp(-5 * t)) + 250 * tex * (t > 0) + rng.normal(0, 12, (n, n))
    for k in range(12):
        cx, cy, cr = rng.uniform(0.1, 0.6) * n, rng.uniform(0.25, 0.75) * n, rng.uniform(1, 4)
        v[np.hypot(x - cx, y - cy) <= cr] += 400
    return np.clip(np.round(v), 0, 4095).astype(np.float32)


def best_of(fn, repeats):
    best, out = None, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sizes", nargs="*", type=int, default=[256, 512])
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    import lumen
    try:
        import torch
        from medical_image.algorithms.dicom_window import GrailWindowAlgorithm
        from medical_image.data.in_memory_image import InMemoryImage
        torch.set_num_threads(max(1, torch.get_num_threads()))
    except ImportError as e:
        raise SystemExit("medical-image-std / torch not importable (%s): install them in a venv" % e)
    print("# GRAIL: lumen %s vs medical-image-std, torch %s (%d threads), lumen threads = context default"
          % (lumen.version(), torch.__version__, torch.get_num_threads()))
    print("| size | tool | a | b | seconds | lumen metric (quantised) |")
    print("|---|---|---|---|---|---|")
    for n in args.sizes:
        img = mammogram(n)

        def mis():
            algo = GrailWindowAlgorithm(device="cpu")
            src = InMemoryImage(array=img.copy())
            out = InMemoryImage(array=np.zeros_like(img))
            algo(src, out)
            return algo.grail_a, algo.grail_b

        t_m, (ma, mb) = best_of(mis, args.repeats)
        t_l, (_, la, lb) = best_of(lambda: lumen.grail(img), args.repeats)
        t_q, (_, qa, qb) = best_of(lambda: lumen.grail(img, quantize=0), args.repeats)
        for tool, a, b, t in (("medical-image-std", ma, mb, t_m), ("lumen (quantize 1, default)", la, lb, t_l),
                              ("lumen quantize 0 (reference metric)", qa, qb, t_q)):
            print("| %d | %s | %.6g | %.6g | %.2f | %.4f |" % (n, tool, a, b, t, lumen.grail_metric(img, a, b)))


if __name__ == "__main__":
    main()
