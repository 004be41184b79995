#!/usr/bin/env bash
# lumen's CPU Gaussian against scipy.ndimage.gaussian_filter measured in the same run (issue 6's
# speed item): sigma 2, mode reflect, truncate 4.0, float32, on a 4096x3328 image and a 256^3 volume.
# scipy: best of --scipy-reps (default 3) with Debian's /usr/bin/python3; then bench_filter
# --only gaussian with those times, which prints lumen's time, GB/s and the ratio. The load average
# is printed before and after (the machine may be shared; compare only figures from one run).
#   bash bench/bench_filter_vs_scipy.sh [BUILD_DIR] [--reps N] [--scipy-reps N] [--threads T]
set -euo pipefail
build="build"
if [ "$#" -gt 0 ] && [ "${1#--}" = "$1" ]; then build="$1"; shift; fi
reps=5 sreps=3 threads=0
while [ "$#" -gt 0 ]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --scipy-reps) sreps="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    *) echo "usage: $0 [BUILD_DIR] [--reps N] [--scipy-reps N] [--threads T]" >&2; exit 2 ;;
  esac
done
bin="$build/bench/bench_filter"
py=/usr/bin/python3
[ -x "$bin" ] || { echo "$0: $bin not found; build first" >&2; exit 1; }
"$py" -c 'import scipy.ndimage' 2>/dev/null || { echo "$0: $py has no scipy (apt install python3-scipy)" >&2; exit 1; }
echo "load before: $(uptime)"
times=$("$py" - "$sreps" <<'PY'
import sys, time
import numpy as np
from scipy import ndimage
reps = int(sys.argv[1])
def best(a):
    t = 1e30
    for _ in range(reps):
        t0 = time.perf_counter()
        ndimage.gaussian_filter(a, 2.0, mode="reflect", truncate=4.0)
        t = min(t, time.perf_counter() - t0)
    return t
i = np.arange(4096 * 3328, dtype=np.uint64)
x, y = i % 4096, i // 4096
a = (1000 + (x + y) % 2048).astype(np.float32) + ((i * 2654435761) % (1 << 32) % 97).astype(np.float32)
a = a.reshape(3328, 4096)
b = ((np.arange(256 ** 3, dtype=np.uint64) * 2654435761) % (1 << 32) % 4096).astype(np.float32).reshape(256, 256, 256)
print("%.4f %.4f" % (best(a), best(b)))
PY
)
set -- $times
echo "scipy $("$py" -c 'import scipy; print(scipy.__version__)') gaussian_filter, best of $sreps: 2-D $1 s, 3-D $2 s"
"$bin" --only gaussian --reps "$reps" --threads "$threads" --scipy-2d "$1" --scipy-3d "$2"
echo "load after: $(uptime)"
