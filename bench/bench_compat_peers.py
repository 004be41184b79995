#!/usr/bin/env python3
"""lumen.medical_image (the compat layer over lumen) against medical-image-std itself: the same
calls on the same synthetic mammograms, timed in one process (a benchmark, not a test; issue 19).

    LUMEN_LIBRARY=build/liblumen.so PYTHONPATH=python VENV/bin/python bench/bench_compat_peers.py \\
        [--sizes 512x416,1024x832] [--repeats 3] [--skip-slow-above PIXELS]

VENV: torch + medical-image-std (`make bench-peers` makes build-peers/venv). Both run on the CPU
(device "cpu"): torch with its default threads, lumen with its context default (all cores).
Per op and size: the best-of-repeats seconds of each, the ratio original / lumen, and how the
outputs agree (Dice for masks, max relative difference for images), so a fast wrong answer
shows. Ops the original takes minutes for (GRAIL, PFCM, SBRG on large images) run only up to
--skip-slow-above pixels."""
import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tests"))
from mis_compare import synthetic_mammogram, _float_agreement, _mask_agreement  # noqa: E402

# (name, kind, call) where call(module, image_class, src, dst) runs the op on either library
FUNCS = [
    ("Filters.gaussian_filter sigma 2", "float", lambda m, s, d: m.Filters.gaussian_filter(s, d, sigma=2.0)),
    ("Filters.median_filter 5", "float", lambda m, s, d: m.Filters.median_filter(s, d, size=5)),
    ("Filters.difference_of_gaussian", "float", lambda m, s, d: m.Filters.difference_of_gaussian(s, d, low_sigma=1.0)),
    ("Filters.laplacian_of_gaussian 2", "float", lambda m, s, d: m.Filters.laplacian_of_gaussian(s, d, sigma=2.0)),
    ("Filters.butterworth_kernel", "float", lambda m, s, d: m.Filters.butterworth_kernel(s, d)),
    ("Threshold.otsu_threshold", "mask", lambda m, s, d: m.Threshold.otsu_threshold(s, d)),
    ("Threshold.sauvola_threshold 15", "mask", lambda m, s, d: m.Threshold.sauvola_threshold(s, d, window_size=15)),
    ("Metrics.local_variance 5", "float", lambda m, s, d: m.Metrics.local_variance(s, d, kernel=5)),
]
# (name, class, constructor keywords, kind, slow in the original)
ALGOS = [
    ("FebdsAlgorithm dog", "FebdsAlgorithm", {"method": "dog"}, "mask", False),
    ("FebdsAlgorithm log", "FebdsAlgorithm", {"method": "log"}, "mask", False),
    ("FebdsAlgorithm fft", "FebdsAlgorithm", {"method": "fft"}, "mask", False),
    ("TopHatAlgorithm r4", "TopHatAlgorithm", {"radius": 4}, "float", False),
    ("KMeansAlgorithm", "KMeansAlgorithm", {}, "mask", False),
    ("FCMAlgorithm", "FCMAlgorithm", {}, "mask", False),
    ("PFCMAlgorithm", "PFCMAlgorithm", {}, "mask", True),
    ("SbrgAlgorithm", "SbrgAlgorithm", {}, "mask", True),
    ("BreastMaskAlgorithm", "BreastMaskAlgorithm", {"mask_only": True}, "mask", False),
    ("DicomWindowAlgorithm", "DicomWindowAlgorithm", {}, "float", False),
    ("BitDepthNormAlgorithm", "BitDepthNormAlgorithm", {}, "float", False),
    ("GrailWindowAlgorithm", "GrailWindowAlgorithm", {}, "float", True),
]


def best_of(fn, repeats):
    best = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return best


def row(name, size, t_o, t_l, agree):
    a = ("Dice %.4f" % agree["dice"]) if "dice" in agree else \
        ("max rel %.1e" % agree["max_rel"]) if "max_rel" in agree else str(agree)
    print("| %s | %s | %.4f | %.4f | %.1fx | %s |" % (name, size, t_o, t_l, t_o / t_l, a))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="512x416,1024x832")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-slow-above", type=int, default=60000)
    args = ap.parse_args()
    import lumen
    import lumen.medical_image as lm
    try:
        import torch
        import medical_image as mi
        import medical_image.algorithms as moa
    except ImportError as e:
        raise SystemExit("medical-image-std / torch not importable (%s): make bench-peers" % e)
    print("# lumen.medical_image (lumen %s) vs medical-image-std, torch %s (%d threads), %d CPU cores; "
          "best of %d; synthetic 12-bit mammograms (python/tests/mis_compare.py)"
          % (lumen.version(), torch.__version__, torch.get_num_threads(), os.cpu_count(), args.repeats))
    print("| op | size | medical-image-std s | lumen.medical_image s | speed-up | agreement |")
    print("|---|---|---:|---:|---:|---|")
    for size in args.sizes.split(","):
        h, w = (int(v) for v in size.split("x"))
        img = synthetic_mammogram(h, w)
        for name, kind, call in FUNCS:
            o_in, l_in = mi.InMemoryImage(array=img.copy()), lm.Image.from_array(img.copy())
            o_out, l_out = o_in.clone(), l_in.clone()
            t_o = best_of(lambda: call(mi, o_in, o_out), args.repeats)
            t_l = best_of(lambda: call(lm, l_in, l_out), args.repeats)
            agree = (_mask_agreement if kind == "mask" else _float_agreement)(o_out.pixel_data, l_out.pixel_data)
            row(name, size, t_o, t_l, agree)
        for name, cls, kw, kind, slow in ALGOS:
            if slow and h * w > args.skip_slow_above:
                continue
            arr = img / np.float32(4095.0) if cls == "TopHatAlgorithm" else img
            o_in, l_in = mi.InMemoryImage(array=arr.copy()), lm.Image.from_array(arr.copy())
            o_out, l_out = o_in.clone(), l_in.clone()
            o_algo, l_algo = getattr(moa, cls)(device="cpu", **kw), getattr(lm, cls)(device="cpu", **kw)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t_o = best_of(lambda: o_algo(o_in, o_out), 1 if slow else args.repeats)
            t_l = best_of(lambda: l_algo(l_in, l_out), 1 if slow else args.repeats)
            agree = (_mask_agreement if kind == "mask" else _float_agreement)(o_out.pixel_data, l_out.pixel_data)
            row(name, size, t_o, t_l, agree)


if __name__ == "__main__":
    main()
