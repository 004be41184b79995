"""Overhead of the Python binding over the C API on N Tofts fits (default 10^6).

The C API's own time is lumen_fit_execute's wall time (FitResult.seconds, measured in C); the
binding's time is the wall time of lumen.fit() around it (argument checks, plan creation,
output allocation, ctypes calls). Prints both and the overhead in percent.

    LUMEN_LIBRARY=build/liblumen.so PYTHONPATH=python python3 python/benchmarks/bench_overhead.py [N] [backend]
"""
import sys
import time

import numpy as np

import lumen

n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 1000000
backend = sys.argv[2] if len(sys.argv) > 2 else "auto"
t = np.arange(61) * 0.1
cp = t.copy()
rng = np.random.default_rng(0)
K = rng.uniform(0.02, 0.4, n)[:, None]
ve = rng.uniform(0.1, 0.6, n)[:, None]
k = K / ve
data = (K * (t / k - (1 - np.exp(-k * t)) / (k * k)) + rng.normal(0, 0.01, (n, t.size))).astype(np.float32)

lumen.fit("tofts", data[:1000], t, aif=cp, backend=backend)  # warm up (threads, pages)
best = None
for rep in range(3):
    t0 = time.perf_counter()
    res = lumen.fit("tofts", data, t, aif=cp, backend=backend)
    wall = time.perf_counter() - t0
    over = (wall - res.seconds) / res.seconds * 100
    print("run %d: %d Tofts fits, backend used %s: C execute %.3f s (%.0f fits/s), lumen.fit %.3f s, "
          "overhead %.2f %%" % (rep + 1, n, res.backend_used, res.seconds, n / res.seconds, wall, over))
    best = over if best is None else min(best, over)
print("binding overhead (best of 3): %.2f %%" % best)
