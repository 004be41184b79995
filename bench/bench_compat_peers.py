#!/usr/bin/env python3
"""lumen.medical_image (the compat layer over lumen) against medical-image-std itself: the same
calls on the same synthetic mammograms, timed in one process (a benchmark, not a test; issue 19).

    LUMEN_LIBRARY=build/liblumen.so PYTHONPATH=python VENV/bin/python bench/bench_compat_peers.py \\
        [--sizes 512x416,1024x832] [--repeats 3] [--skip-slow-above PIXELS] [--only SUBSTR,...] [--clock cpu]

VENV: torch + medical-image-std (`make bench-peers` makes build-peers/venv). Both run on the CPU
(device "cpu"): torch with its default threads, lumen with its context default (all cores).
Per op and size: the best-of-repeats seconds of each, the ratio original / lumen, and how the
outputs agree (Dice for masks, max relative difference for images), so a fast wrong answer
shows. Ops the original takes minutes for (GRAIL, PFCM, SBRG on large images) run only up to
--skip-slow-above pixels. --only keeps the ops whose name contains one of the substrings (e.g.
--only otsu,BreastMask). Where scipy is importable, a second table times lumen.label /
lumen.largest_component against scipy.ndimage.label (+ bincount / argmax) on each size's Otsu
mask and on a random mask of density 0.5 (4-connectivity, scipy's default). --clock cpu times
the CPU seconds of the process (time.process_time: every thread's, the waits for a core left out)
instead of the wall clock: on a loaded machine it shows how much work each side does."""
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


_clock = time.perf_counter


def best_of(fn, repeats):
    best = None
    for _ in range(repeats):
        t0 = _clock()
        fn()
        dt = _clock() - t0
        best = dt if best is None else min(best, dt)
    return best


def row(name, size, t_o, t_l, agree):
    a = ("Dice %.4f" % agree["dice"]) if "dice" in agree else \
        ("max rel %.1e" % agree["max_rel"]) if "max_rel" in agree else str(agree)
    print("| %s | %s | %.4f | %.4f | %.1fx | %s |" % (name, size, t_o, t_l, t_o / t_l, a))
    sys.stdout.flush()


def label_table(sizes, repeats):
    """lumen's labelling against scipy.ndimage.label (same labels; the largest component as
    scipy users write it: label, bincount, argmax, compare)."""
    try:
        import scipy.ndimage as ndi
    except ImportError:
        print("\n(scipy not importable: no labelling table)")
        return
    import lumen
    import lumen._image_ops as lo

    def sp_largest(m):
        lab, _ = ndi.label(m)
        c = np.bincount(lab.ravel())
        c[0] = 0
        return (lab == c.argmax()).view(np.uint8)

    print("\n| labelling | size | mask | scipy s | lumen s | speed-up | same result |")
    print("|---|---|---|---:|---:|---:|---|")
    for size in sizes.split(","):
        h, w = (int(v) for v in size.split("x"))
        img = synthetic_mammogram(h, w)
        masks = [("Otsu", (img > np.float32(lumen.otsu(img)[0])).view(np.uint8)),
                 ("random 0.5", (np.random.default_rng(0).random((h, w)) < 0.5).view(np.uint8))]
        for mname, m in masks:
            t_s = best_of(lambda: ndi.label(m), repeats)
            t_l = best_of(lambda: lumen.label(m, connectivity=1), repeats)
            same = bool((ndi.label(m)[0] == lumen.label(m, connectivity=1)[0]).all())
            print("| label | %s | %s | %.4f | %.4f | %.1fx | %s |" % (size, mname, t_s, t_l, t_s / t_l, same))
            t_s = best_of(lambda: sp_largest(m), repeats)
            t_l = best_of(lambda: lo.largest_component(m, connectivity=1), repeats)
            same = bool((sp_largest(m) == lo.largest_component(m, connectivity=1)).all())
            print("| largest component | %s | %s | %.4f | %.4f | %.1fx | %s |" % (size, mname, t_s, t_l, t_s / t_l, same))
            sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="512x416,1024x832")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-slow-above", type=int, default=60000)
    ap.add_argument("--only", default="", help="comma-separated substrings of the op names to keep")
    ap.add_argument("--no-label-table", action="store_true")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall: time.perf_counter; cpu: time.process_time (all threads' CPU seconds)")
    args = ap.parse_args()
    global _clock
    _clock = time.process_time if args.clock == "cpu" else time.perf_counter
    only = [v.lower() for v in args.only.split(",") if v]

    def keep(name):
        return not only or any(v in name.lower() for v in only)
    import lumen
    import lumen.medical_image as lm
    try:
        import torch
        import medical_image as mi
        import medical_image.algorithms as moa
    except ImportError as e:
        raise SystemExit("medical-image-std / torch not importable (%s): make bench-peers" % e)
    print("# lumen.medical_image (lumen %s) vs medical-image-std, torch %s (%d threads), %d CPU cores; "
          "best of %d, %s clock; synthetic 12-bit mammograms (python/tests/mis_compare.py)"
          % (lumen.version(), torch.__version__, torch.get_num_threads(), os.cpu_count(), args.repeats, args.clock))
    print("| op | size | medical-image-std s | lumen.medical_image s | speed-up | agreement |")
    print("|---|---|---:|---:|---:|---|")
    for size in args.sizes.split(","):
        h, w = (int(v) for v in size.split("x"))
        img = synthetic_mammogram(h, w)
        for name, kind, call in FUNCS:
            if not keep(name):
                continue
            o_in, l_in = mi.InMemoryImage(array=img.copy()), lm.Image.from_array(img.copy())
            o_out, l_out = o_in.clone(), l_in.clone()
            t_o = best_of(lambda: call(mi, o_in, o_out), args.repeats)
            t_l = best_of(lambda: call(lm, l_in, l_out), args.repeats)
            agree = (_mask_agreement if kind == "mask" else _float_agreement)(o_out.pixel_data, l_out.pixel_data)
            row(name, size, t_o, t_l, agree)
        for name, cls, kw, kind, slow in ALGOS:
            if (slow and h * w > args.skip_slow_above) or not keep(name):
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
    if not args.no_label_table:
        label_table(args.sizes, max(args.repeats, 3))


if __name__ == "__main__":
    main()
