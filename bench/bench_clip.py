#!/usr/bin/env python3
"""clip (the one-file op of src/filter/ops/clip.c) against numpy.clip and against lumen's table op
abs (same dispatcher path: float32 staging, output allocation, a one-pass kernel), on one float32
image, best of REPEATS. The ratios are what to compare (a shared machine's absolute times drift).
    LUMEN_LIBRARY=build/liblumen.so PYTHONPATH=python python3 bench/bench_clip.py [SIDE] [REPEATS]
"""
import sys
import time

import numpy as np

import lumen


def best(fn, repeats):
    t = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def main():
    side = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    a = (np.random.RandomState(1).randn(side, side) * 100).astype(np.float32)
    assert np.array_equal(lumen.run_op("clip", a, lo=-50, hi=50), np.clip(a, np.float32(-50), np.float32(50)))
    t_clip = best(lambda: lumen.run_op("clip", a, lo=-50, hi=50, device="cpu"), repeats)
    t_abs = best(lambda: lumen.run_op("abs", a, device="cpu"), repeats)
    t_np = best(lambda: np.clip(a, np.float32(-50), np.float32(50)), repeats)
    print("image %d x %d float32, best of %d" % (side, side, repeats))
    print("lumen clip (one-file op)  %8.2f ms" % (1e3 * t_clip))
    print("lumen abs  (table op)     %8.2f ms   clip / abs   = %.2f" % (1e3 * t_abs, t_clip / t_abs))
    print("numpy.clip                %8.2f ms   clip / numpy = %.2f" % (1e3 * t_np, t_clip / t_np))


if __name__ == "__main__":
    main()
