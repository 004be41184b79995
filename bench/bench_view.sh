#!/usr/bin/env bash
# lumen view's speed (issue 44: page ready <= 1 s, a voxel click to a drawn plot <= 100 ms, an ROI
# of 10,000 voxels <= 1 s): the server's answer times for OUTDIR (a finished `lumen dce ...
# --save-conc` folder; scripts/bench_dce.sh makes the 2.1 M-voxel one, add --save-conc) and, with
# chromium, the page's own times (tests/cli/view_browser_check.py). Timings are printed, never asserted.
#   bash bench/bench_view.sh BUILD_DIR OUTDIR [X,Y,Z]
set -euo pipefail
build=${1:?BUILD_DIR}; out=${2:?OUTDIR}; vox=${3:-}
here=$(cd "$(dirname "$0")/.." && pwd)
pid=
start_server() { # a fresh server (nothing read yet); sets pid and url
  [ -z "$pid" ] || { kill "$pid"; wait "$pid" 2>/dev/null || true; }
  : > /tmp/bench_view.$$
  "$build/lumen" view "$out" > /tmp/bench_view.$$ 2>&1 &
  pid=$!
  for _ in $(seq 600); do grep -q '^lumen view: http' /tmp/bench_view.$$ && break; sleep 0.1; done
  url=$(grep -o 'http://[^ ]*' /tmp/bench_view.$$)
}
trap 'kill $pid 2>/dev/null; rm -f /tmp/bench_view.$$' EXIT
start_server
python3 - "$url" "$vox" <<'PY'
import json, sys, time, urllib.request
url, vox = sys.argv[1].rstrip("/"), sys.argv[2]
def t(path, n=1):
    best = 1e9
    for _ in range(n):
        t0 = time.perf_counter()
        with urllib.request.urlopen(url + path, timeout=600) as r:
            body = r.read()
        best = min(best, time.perf_counter() - t0)
    return best, body
dt, body = t("/api/info")
info = json.loads(body)
nx, ny, nz, nt = info["dims"]
x, y, z = (int(v) for v in vox.split(",")) if vox else (nx // 2, ny // 2, nz // 2)
k = next(m["file"] for m in info["maps"] if m["param"] == "Ktrans" and m["model"] != "best")
print("grid %d x %d x %d, %d frames, %d maps" % (nx, ny, nz, nt, len(info["maps"])))
print("%-44s %8.1f ms" % ("info", dt * 1e3))
print("%-44s %8.1f ms" % ("first slice of %s (reads the map)" % k, t("/api/slice?map=%s&z=%d" % (k, z))[0] * 1e3))
print("%-44s %8.1f ms" % ("first voxel (reads every map and the series)", t("/api/voxel?x=%d&y=%d&z=%d" % (x, y, z))[0] * 1e3))
print("%-44s %8.1f ms" % ("a voxel (best of 10)", t("/api/voxel?x=%d&y=%d&z=%d" % (x + 1, y, z), 10)[0] * 1e3))
w = min(100, nx); h = min(100, ny)
print("%-44s %8.1f ms" % ("ROI of %d voxels (best of 3)" % (w * h), t("/api/roi?x0=0&y0=0&x1=%d&y1=%d&z=%d" % (w - 1, h - 1, z), 3)[0] * 1e3))
PY
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$browser" ]; then
  start_server # the page's first click reads as a user's first click does
  other=$(python3 -c 'import json,sys,urllib.request; m=[x for x in json.load(urllib.request.urlopen(sys.argv[1]+"/api/info"))["maps"] if x["model"]!="best" and x["param"] not in ("Ktrans","state","model")]; print(m[0]["model"]+" "+m[0]["param"])' "${url%/}")
  python3 "$here/tests/cli/view_browser_check.py" "$url" --browser "$browser" ${vox:+--voxel $vox} --roi 0,0,99,99 --other-map "$other" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print("page (chromium): ready %.0f ms, voxel click to plot %.0f ms, ROI %.0f ms" % (1e3*d["ready_s"], 1e3*d["click_s"], 1e3*d["roi_s"]))'
fi
