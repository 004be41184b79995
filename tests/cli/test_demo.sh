#!/usr/bin/env bash
# lumen demo curves: exits 0, prints a row per truth with the fitted medians within tolerance of the truth,
# the backend line per model, and runs quickly.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
. "$(dirname "$0")/lib.sh"

start=$(date +%s)
"$bin" demo curves > out.txt 2> err.txt; rc=$?
end=$(date +%s)
cat out.txt
check "demo exits 0" "[ $rc -eq 0 ]"
check "no error output" "[ ! -s err.txt ]"
check "runs in a few seconds" "[ $((end - start)) -le 20 ]"
for m in tofts etofts patlak; do
  check "$m rows present" "[ \$(grep -c '^$m ' out.txt) -ge 6 ]"
  check "$m backend line" "grep -qE '^# $m: [0-9]+ curves, backend requested auto, selected [a-z_]+, used [a-z_+]+ .*fits/s$' out.txt"
done
# every row: fitted median within 10 % + 0.01 of the truth (ve/vp: 0.02 absolute), all converged
check "recovered values within tolerance" "awk '
  \$1 ~ /^(tofts|etofts|patlak)\$/ {
    for (j = 2; j <= 4; j++) { if (\$j == \"-\") continue; t = \$j; f = \$(j + 3); d = f - t; if (d < 0) d = -d;
      tol = (j == 2) ? 0.01 + 0.1 * t : 0.02; if (!(d <= tol)) { print \"bad row: \" \$0; bad = 1 } }
    split(\$8, c, \"/\"); if (c[1] != c[2]) { print \"not all converged: \" \$0; bad = 1 } }
  END { exit bad }' out.txt"
"$bin" demo curves --help > help.txt; rc=$?
check "demo --help" "[ $rc -eq 0 ] && grep -q replicates help.txt"
"$bin" demo curves --bogus > /dev/null 2>&1; rc=$?
check "demo unknown option -> 2" "[ $rc -eq 2 ]"

# lumen demo (the full pipeline on the built-in phantom): table, report, accuracy of etofts
"$bin" demo --out "$tmp/demo" > pipe.txt 2> perr.txt; rc=$?
cat pipe.txt
check "pipeline demo exits 0" "[ $rc -eq 0 ]"
check "pipeline demo writes the report" "[ -s '$tmp/demo/report.html' ] && grep -q 'report: .*report.html' pipe.txt"
check "pipeline demo has 24 truth rows" "[ \$(grep -cE '^[01] +0\.[0-9]+ +0\.[0-9]+ +0\.0[28] +\\|' pipe.txt) -eq 24 ]"
# etofts patch medians: Ktrans within 8 % + 0.005, ve within 8 % + 0.01, vp within 0.01
check "pipeline demo recovers the truth (etofts)" "awk '
  \$1 ~ /^[01]\$/ && \$5 == \"|\" { n++; d = \$6 - \$2; if (d < 0) d = -d; if (d > 0.08 * \$2 + 0.005) { print \"bad Ktrans: \" \$0; bad = 1 }
    d = \$7 - \$3; if (d < 0) d = -d; if (d > 0.08 * \$3 + 0.01) { print \"bad ve: \" \$0; bad = 1 }
    d = \$8 - \$4; if (d < 0) d = -d; if (d > 0.01) { print \"bad vp: \" \$0; bad = 1 } }
  END { exit bad || n != 24 }' pipe.txt"
check "run log: no doubled word in the T1 line ('T1 T1 map')" "! grep -q 'T1 T1' '$tmp/demo/sub-demo_runlog.txt' && grep -q \"T1 map '\" '$tmp/demo/sub-demo_runlog.txt'"
check "run log: fits/s after an untimed warm-up" "[ \$(grep -c 'fits/s (after an untimed warm-up fit)' '$tmp/demo/sub-demo_runlog.txt') -eq 2 ] && grep -qE '\"warmup_curves_untimed\":[[:space:]]*64' '$tmp/demo/sub-demo_runlog.json'"
check "demo says how fits/s is timed" "grep -q 'untimed warm-up fit' pipe.txt && grep -q '^# fits/s: .*untimed warm-up fit of 64 curves per model' out.txt"
check "the demo's T1 map is BIDS *_T1map" "[ -f '$tmp/demo/sub-demo_T1map.nii.gz' ] && [ ! -e '$tmp/demo/sub-demo_T1w-map.nii.gz' ]"
check "pipeline demo backend lines" "grep -qE '^# etofts: backend requested auto, selected [a-z_]+, used [a-z_+]+' pipe.txt"
exit $fail
