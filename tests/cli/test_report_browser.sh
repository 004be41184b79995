#!/usr/bin/env bash
# The HTML report in a real browser (issue 17): report.html of lumen dce-demo and of lumen t1 is
# rendered in headless Chromium by report_browser_check.py (Chrome DevTools Protocol over a
# pipe): every <img> loaded and there is one, every inline <svg> has a non-zero size, no uncaught
# exception, console.error or error log entry (a missing figure is one). A full-page screenshot
# of each report is kept for review: BUILD/tests/report_screenshot.png (and
# report_screenshot_t1.png). The checker must be able to fail: a copy of the demo report with a
# missing <img>, a zero-size <svg> and a throwing <script> is rejected, naming each. Skips (77)
# only when no chromium / chromium-browser is installed (scripts/setup.sh installs it); a browser
# that does not start is a failure.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
here=$(cd "$(dirname "$0")" && pwd)
checker=$here/report_browser_check.py
browser=$(command -v chromium || command -v chromium-browser) || {
  echo "SKIP: no chromium or chromium-browser on PATH (scripts/setup.sh installs chromium)"; exit 77; }
# screenshots outlive the scratch folder: BUILD/tests under ctest, else the current folder
if [ -n "${LUMEN_TEST_TMP:-}" ]; then shots=$(dirname "$LUMEN_TEST_TMP"); else shots=$PWD; fi
mkdir -p "$shots" && shots=$(cd "$shots" && pwd)
. "$here/lib.sh"
py=$(command -v python3) || { echo "FAIL: python3 not found"; exit 1; }
# one run of the checker: browse NAME REPORT SCREENSHOT (output in out.txt, exit status in $rc)
browse() {
  timeout 120 "$py" "$checker" --browser "$browser" --timeout 60 "$2" ${3:+--screenshot "$3"} > out.txt 2>&1
  rc=$?
  sed 's/^/  | /' out.txt
}

# ---- lumen dce-demo: the DCE report
"$bin" dce-demo --out demo -q > demo.txt 2> err.txt; rc=$?
check "dce-demo exits 0 and writes report.html" "[ $rc -eq 0 ] && [ -s demo/report.html ]" || { cat err.txt; exit 1; }
rm -f "$shots/report_screenshot.png"
browse dce demo/report.html "$shots/report_screenshot.png"
check "dce report: the browser check passes (exit $rc)" "[ $rc -eq 0 ]"
nsvg=$(sed -n 's/.* \([0-9]*\) <svg> (\([0-9]*\) with a non-zero size).*/\1 \2/p' out.txt | head -1)
check "dce report: the inline SVG plots (AIF, fitted curves, histograms) rendered: $nsvg" \
  "set -- \$nsvg; [ \"\${1:-0}\" -ge 3 ] && [ \"\$1\" = \"\${2:-}\" ]"
check "dce report: a PNG screenshot written" "[ \"\$(head -c 4 '$shots/report_screenshot.png' 2>/dev/null | tail -c 3)\" = PNG ]"
[ -s "$shots/report_screenshot.png" ] && echo "screenshot: $shots/report_screenshot.png"

# ---- a QIBA v6 run (third-party data): its report renders too (the hatched maps, the AIF voxels)
q6=${LUMEN_REFDATA:-${LUMEN_REFDATA_DEFAULT:-}}/qiba/v6_tofts/q6_dce.nii.gz
if [ -f "$q6" ]; then
  "$bin" dce --dce "$q6" --relaxivity 4.5 --dt 0.5 --t1 1 --models tofts,etofts -q --out q6r > /dev/null 2> q6.err
  browse qiba q6r/report.html "$shots/report_screenshot_qiba.png"
  check "QIBA v6 report: the browser check passes (exit $rc)" "[ $rc -eq 0 ]" || cat q6.err
else
  echo "note: reference data qiba/v6_tofts not found: the QIBA report was not browsed"
fi

# ---- the checker rejects a broken page: a missing figure and a throwing inline script
mkdir broken && cp -R demo/report.html demo/figures broken/
bad='<img src="figures/missing-on-purpose.png" alt="missing"><svg id="empty-on-purpose" width="0" height="0"></svg>'
bad+='<script>throw new Error('"'"'x'"'"')</script>'
if grep -q '</body>' broken/report.html; then
  sed -i "s#</body>#$bad</body>#" broken/report.html
else
  printf '%s\n' "$bad" >> broken/report.html
fi
check "broken copy prepared" "grep -q missing-on-purpose broken/report.html"
browse broken broken/report.html
check "broken report: rejected with findings (exit 1, got $rc)" "[ $rc -eq 1 ]"
check "broken report: names the image that did not load" \
  "grep -q '^FAIL: .*<img> .*missing-on-purpose.png.* did not load' out.txt"
check "broken report: names the failed resource load (console error)" \
  "grep -q '^FAIL: .*console error.*missing-on-purpose.png' out.txt"
check "broken report: names the uncaught exception" "grep -q '^FAIL: .*uncaught exception: Error: x' out.txt"
check "broken report: names the zero-size <svg>" "grep -q '^FAIL: .*<svg> .*empty-on-purpose.* zero rendered size' out.txt"

# ---- lumen t1 (VFA on the demo's T1 map as each input; constant curves: failures allowed)
T=demo/sub-demo_T1map.nii.gz
"$bin" t1 --in $T $T $T --mask demo/sub-demo_mask.nii.gz --flip-angles 2,10,20 --tr 0.005 \
  --allow-failures -q --out t1 > /dev/null 2> err.txt; rc=$?
check "t1 exits 0 and writes report.html" "[ $rc -eq 0 ] && [ -s t1/report.html ]" || cat err.txt
if [ -s t1/report.html ]; then
  rm -f "$shots/report_screenshot_t1.png"
  browse t1 t1/report.html "$shots/report_screenshot_t1.png"
  check "t1 report: the browser check passes (exit $rc)" "[ $rc -eq 0 ] && [ -s '$shots/report_screenshot_t1.png' ]"
  [ -s "$shots/report_screenshot_t1.png" ] && echo "screenshot: $shots/report_screenshot_t1.png"
fi
exit $fail
