#!/usr/bin/env bash
# lumen view in a real browser (issue 44): headless Chromium driven over the DevTools protocol
# (tests/cli/view_browser_check.py) opens the viewer on the demo's output, clicks a voxel with the
# mouse, reads the plotted series and the parameter table and checks them against the maps and the
# saved concentration series, moves with the arrow key, picks another map and slice, draws an ROI
# with the mouse and checks its statistics. The screenshot stays in the build folder
# (view_screenshot.png; docs/VIEW.md shows one). Skips (77) without chromium or libmicrohttpd.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
py=/usr/bin/python3
browser=$(command -v chromium || command -v chromium-browser) || { echo "SKIP: no chromium on PATH"; exit 77; }
"$py" -c 'import numpy' 2>/dev/null || { echo "SKIP: $py lacks numpy"; exit 77; }
"$bin" view /nonexistent 2>&1 | grep -q "built without libmicrohttpd" && { echo "SKIP: lumen built without libmicrohttpd"; exit 77; }
if [ -n "${LUMEN_TEST_TMP:-}" ]; then shots=$(dirname "$LUMEN_TEST_TMP"); else shots=$PWD; fi
. "$(dirname "$0")/lib.sh"
demo_phantom
"$bin" dce --dce $P --t1map $T --mask $M --models tofts,etofts --select aic --save-conc --out vout -q 2> dce.err ||
  { cat dce.err; echo "FAIL: lumen dce"; exit 1; }
"$bin" view vout > view.out 2> view.err &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
for _ in $(seq 100); do grep -q '^lumen view: http' view.out && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' view.out)
timeout 180 "$py" "$LUMEN_CLI_TESTS/view_browser_check.py" "$url" --browser "$browser" \
  --screenshot "$shots/view_screenshot.png" --voxel 9,8,1 --roi 6,6,11,11 > page.json 2> page.err; rc=$?
check "the browser drove the page (exit $rc)" "[ $rc -eq 0 ]" || { cat page.json page.err; exit 1; }
"$py" - page.json vout sub-demo > page_checks.txt <<'PYEOF'
import gzip, json, struct, sys
import numpy as np
page, out, prefix = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
def nii(name):
    raw = gzip.open("%s/%s" % (out, name)).read()
    dims = struct.unpack_from("<8h", raw, 40)
    n = int(np.prod(dims[1:dims[0] + 1]))
    return np.frombuffer(raw, "<f4", n, int(struct.unpack_from("<f", raw, 108)[0])).reshape(dims[1:dims[0] + 1][::-1])
bad = 0
def check(name, ok):
    global bad
    print(("ok: " if ok else "FAIL: ") + name)
    bad += 0 if ok else 1
x, y, z = page["voxel"]
check("the click landed on voxel (9, 8, 1)", [x, y, z] == [9, 8, 1])
rows = {(m, p): float(v) for m, p, v, ci in page["table"]}
for (m, p), v in sorted(rows.items()):
    want = float(nii("%s_model-%s_param-%s.nii.gz" % (prefix, m, p))[z, y, x])
    check("table: %s %s %s = its map %.5g" % (m, p, v, want), abs(v - want) <= 1e-4 * abs(want) + 1e-9)
check("table: every parameter of tofts and etofts", len(rows) == 5)
series = {s["label"]: np.array([np.nan if v is None else v for v in s["y"]], float) for s in page["series"]}
conc = nii(prefix + "_desc-conc_dce.nii.gz")[:, z, y, x]
check("plot: the measured dots are the voxel's saved concentration", np.allclose(series["measured"], conc, rtol=1e-6, atol=1e-9))
for m in ("tofts", "etofts"):
    sse = float(nii("%s_model-%s_param-sse.nii.gz" % (prefix, m))[z, y, x])
    r = ((series["measured"] - series[m]) ** 2).sum()
    check("plot: the %s line is its fit (residual sum %.6g = sse map %.6g)" % (m, r, sse), abs(r - sse) <= 1e-3 * sse + 1e-9)
check("arrow right: voxel (10, 8, 1)", page["after_arrow"] == [10, 8, 1])
vp = nii(prefix + "_model-etofts_param-vp.nii.gz")[0].ravel()[:64]
got = np.array([np.nan if v is None else v for v in page["slice"]["v"]], float)
check("another map and slice: etofts vp of slice 0 shown", page["slice"]["z"] == 0 and np.allclose(got, vp, equal_nan=True))
roi = page["roi"]
k = nii(prefix + "_model-etofts_param-Ktrans.nii.gz")[1, 6:12, 6:12]
s = roi["stats"][prefix + "_model-etofts_param-Ktrans.nii.gz"]
check("ROI drawn with the mouse: 36 voxels, etofts Ktrans mean %.5g and median" % s["mean"],
      roi["voxels"] == 36 and abs(s["mean"] - k.mean()) < 1e-6 and abs(s["median"] - np.median(k)) < 1e-6)
check("no error shown on the page", page["errors"] == "")
print("timings: page ready %.3f s, voxel click to plot %.3f s, ROI %.3f s (bench/bench_view.sh measures them)"
      % (page["ready_s"], page["click_s"], page["roi_s"]))
sys.exit(1 if bad else 0)
PYEOF
prc=$?
cat page_checks.txt
check "what the page showed equals the maps and the series" "[ $prc -eq 0 ]"
[ -s "$shots/view_screenshot.png" ] && echo "screenshot: $shots/view_screenshot.png"
exit $fail
