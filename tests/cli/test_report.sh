#!/usr/bin/env bash
# The report of lumen dce (issue 17 items 7-10): inline SVG plots with numbered axes and units
# (AIF, histograms, measured and fitted curves at the 10th/50th/90th percentile voxels, checked
# against the maps), figure PNGs in colour that stand alone (viridis with a colour bar, NaN in a
# colour of its own, categorical state and best-model maps), and the warnings section at the top
# (unit corrections, voxels at a bound or failed). The browser check is test_report_browser.sh.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
ins() { python3 "$here/report_inspect.py" "$@"; }

"$bin" dce-demo --out demo -q > /dev/null 2> err.txt || { cat err.txt; echo "FAIL: dce-demo"; exit 1; }
R=demo/report.html
# ---- 9. warnings first: before the stage summaries, with the unit correction and the bound
line_of() { grep -n -m1 -- "$1" $R | cut -d: -f1; }
check "warnings section before the stage summaries" \
  "[ -n \"\$(line_of '<h2 id=\"warnings\">Warnings')\" ] && [ \$(line_of '<h2 id=\"warnings\">Warnings') -lt \$(line_of '<h2>Stage summaries') ]"
check "the demo's T1 map is in seconds (BIDS): its own run has no unit correction (issue 39 item 8)" \
  "! grep -q 'unit correction' $R && grep -q 'in s (detected: median 1.2 s' demo/sub-demo_runlog.json"
# the same T1 map in ms: read as ms, and the report says so among the warnings
python3 - <<'PY'
import gzip, struct
raw = bytearray(gzip.open("demo/sub-demo_T1map.nii.gz").read())
off, dtype = int(struct.unpack_from("<f", raw, 108)[0]), struct.unpack_from("<h", raw, 70)[0]
assert dtype == 16, dtype  # float32
n = (len(raw) - off) // 4
vals = struct.unpack_from("<%df" % n, raw, off)
struct.pack_into("<%df" % n, raw, off, *[v * 1000 for v in vals])
gzip.open("t1ms.nii.gz", "wb").write(bytes(raw))
PY
"$bin" dce --dce demo/sub-demo_dce.nii.gz --t1map t1ms.nii.gz --mask demo/sub-demo_mask.nii.gz --models tofts --out ms -q \
  > /dev/null 2> ms.err
check "warning: a T1 map in ms read as ms (a unit correction)" \
  "grep -q '<li><b class=.sev1.>check</b> unit correction: T1 map .*read as milliseconds' ms/report.html" || cat ms.err
check "warning: tofts voxels at a bound, with the count" "grep -Eq '<li><b class=.sev1.>check</b> tofts: [0-9]+ of 864 voxels rest on a bound' $R"
check "stage lines wrap (pre-wrap)" "grep -q 'pre{[^}]*white-space:pre-wrap' $R"
# ---- 7. SVG plots with numbered axes and units
check "AIF plot: inline SVG with both axis titles and its legend" \
  "grep -q '<title>AIF (auto:detected-vessels) and mean tissue curve</title>' $R && grep -q '>time from the first frame (min)</text>' $R && grep -q '>concentration (mM)</text>' $R && grep -q '>AIF: plasma Cp</text>' $R"
check "histograms: inline SVG per figured map, y axis 'voxels'" \
  "[ \$(grep -o '>voxels</text>' $R | wc -l) -ge 10 ] && grep -q '<title>etofts Ktrans (1/min)</title>' $R"
check "fitted curves: one plot per model (tofts, etofts)" \
  "grep -q '<title>tofts: measured (dots) and fitted (line)' $R && grep -q '<title>etofts: measured (dots) and fitted (line)' $R"
ins curves $R demo sub-demo > out.txt 2>&1; rc=$?
cat out.txt
check "fitted curves: the labelled voxels are the p10/p50/p90 voxels of the Ktrans map, values agree" "[ $rc -eq 0 ]"
# ---- 8./10. figure PNGs: colour, scaled, colour bar, categorical maps
K=demo/figures/sub-demo_model-etofts_param-Ktrans.png
read -r w h ct < <(ins png-info $K)
check "Ktrans figure: RGB (colour type $ct), 2 slices of 32x24 scaled x8 ($w x $h)" "[ \"$ct\" = 2 ] && [ $w -ge 520 ] && [ $h -ge 200 ]"
check "Ktrans figure: viridis colour bar ends and the outside-mask grey" "ins png-has $K 68,1,84 253,231,37 236,236,236"
nan0=$(ins png-count $K 228,26,28)
check "Ktrans figure: the NaN colour only in its legend swatch ($nan0 pixels; no failed voxel in the demo)" \
  "[ \"$nan0\" -gt 0 ] && [ \"$nan0\" -le 80 ]"  # the swatch: 10 x 8 inside its frame
check "tofts state figure: converged green and at_bound yellow" \
  "ins png-has demo/figures/sub-demo_model-tofts_param-state.png 0,158,115 240,228,66"
check "etofts state figure: no at_bound" "ins png-lacks demo/figures/sub-demo_model-etofts_param-state.png 240,228,66"
check "best model figure: the etofts category colour, no viridis" \
  "ins png-has demo/figures/sub-demo_model-best_param-model.png 230,159,0 && ins png-lacks demo/figures/sub-demo_model-best_param-model.png 253,231,37"
check "AIF figure PNG: RGB" "[ \"\$(ins png-info demo/figures/sub-demo_aif.png | cut -d' ' -f3)\" = 2 ]"
check "report: categorical legend table for the state map" "grep -q '7 at_bound</td>' $R"

# ---- issue 39 item 9: windows of the converged voxels, at-bound voxels hatched, categorical maps
# without a scale, tick labels that differ, warnings by severity, the backend reason once
AV=demo/figures/sub-demo_aif_voxels.png
nav=$(ins png-count $AV 228,26,28)
check "the AIF's voxels over the baseline image: 72 vessel voxels x 64 pixels in red ($nav), linked in the report (issue 39 item 1)" \
  "[ \"$nav\" = 4608 ] && grep -q 'src=\"./figures/sub-demo_aif_voxels.png\"' $R"
check "tofts Ktrans: window of the converged voxels, the at-bound count in the table" \
  "grep -Eq '<td>[0-9.e-]+ \.\. [0-9.e-]+ \(converged\)</td><td>[0-9.e-]+</td><td>864 \([0-9]+ at a bound\)</td>' $R"
TK=demo/figures/sub-demo_model-tofts_param-Ktrans.png
hatch_t=$(ins png-count $TK 20,20,20); hatch_e=$(ins png-count $K 20,20,20)
check "tofts Ktrans figure: at-bound voxels hatched ($hatch_t hatch pixels; etofts, none at a bound: $hatch_e)" \
  "[ \"$hatch_t\" -gt 100 ] && [ \"$hatch_e\" -eq 0 ]"
check "best-model map: 'categories' in the table, no window, no unit '1'" \
  "grep -q 'sub-demo_model-best_param-model.nii.gz</a></td><td>-</td><td>categories</td>' $R"
python3 - "$R" > ticks.txt <<'PYEOF'
import re, sys
html = open(sys.argv[1]).read()
bad = []
for svg in re.findall(r'<svg.*?</svg>', html, re.S):
    title = re.search(r'<title>(.*?)</title>', svg)
    xt = re.findall(r'<text x="[0-9.]+" y="232.0" text-anchor="middle">([^<]*)</text>', svg)
    if len(xt) != len(set(xt)):
        bad.append((title.group(1) if title else '?', xt))
print(bad or 'all tick labels distinct')
sys.exit(1 if bad else 0)
PYEOF
trc=$?
check "every histogram's tick labels differ (r2 read '1 1 1 1 1')" "[ $trc -eq 0 ]" || cat ticks.txt
check "the backend's reason once: the second model's stage line says 'the reason above'" \
  "[ \$(grep -c 'used cpu (the reason above)' demo/sub-demo_runlog.txt) -eq 1 ]"
"$bin" dce --dce demo/sub-demo_dce.nii.gz --t1map demo/sub-demo_T1map.nii.gz --mask demo/sub-demo_mask.nii.gz \
  --input-type concentration --models tofts -q --out sev 2> /dev/null
check "warnings by severity: 'results unreliable' and the AIF fallback critical, listed before the bound warning" \
  "grep -q '<li><b class=.sev0.>critical</b> results unreliable' sev/report.html && grep -q '<li><b class=.sev0.>critical</b> AIF auto: no usable vessel' sev/report.html && [ \$(grep -n 'class=.sev0.>critical' sev/report.html | head -1 | cut -d: -f1) -lt \$(grep -n 'class=.sev1.>check' sev/report.html | head -1 | cut -d: -f1) ]"

# ---- the same on a QIBA v6 run (third-party data: 500 of 4000 tofts voxels at a bound)
q6=${LUMEN_REFDATA:-${LUMEN_REFDATA_DEFAULT:-}}/qiba/v6_tofts/q6_dce.nii.gz
if [ -f "$q6" ]; then
  "$bin" dce --dce "$q6" --relaxivity 4.5 --dt 0.5 --t1 1 --models tofts -q --out q6r > /dev/null 2> q6.err
  Q=q6r/report.html
  check "QIBA v6 report: tofts Ktrans window of the converged voxels, at-bound count" \
    "grep -Eq '<td>[0-9.e-]+ \.\. [0-9.e-]+ \(converged\)</td><td>[0-9.e-]+</td><td>[0-9]+ \([0-9]+ at a bound\)</td>' $Q" || cat q6.err
  qh=$(ins png-count q6r/figures/lumen_model-tofts_param-Ktrans.png 20,20,20)
  check "QIBA v6 Ktrans figure: at-bound voxels hatched ($qh pixels)" "[ \"$qh\" -gt 100 ]"
  python3 - "$Q" > q6ticks.txt <<'PYEOF'
import re, sys
html = open(sys.argv[1]).read()
bad = [re.findall(r'y="232.0" text-anchor="middle">([^<]*)<', svg) for svg in re.findall(r'<svg.*?</svg>', html, re.S)]
bad = [t for t in bad if len(t) != len(set(t))]
print(bad or 'all tick labels distinct')
sys.exit(1 if bad else 0)
PYEOF
  qrc=$?
  check "QIBA v6 report: every histogram's tick labels differ" "[ $qrc -eq 0 ]" || cat q6ticks.txt
else
  echo "note: reference data qiba/v6_tofts not found: the QIBA report checks did not run"
fi

# ---- a voxel that fails: NaN in the mask gets its colour, the warnings say so
ins nifti-set demo/sub-demo_T1map.nii.gz bad_T1.nii.gz 5,3,0 0 || { echo "FAIL: nifti-set"; exit 1; }
"$bin" dce --dce demo/sub-demo_dce.nii.gz --t1map bad_T1.nii.gz --mask demo/sub-demo_mask.nii.gz --models etofts \
  --aif parker -q --out bad 2> err.txt; rc=$?
check "dce with one T1 = 0 voxel: exit 0" "[ $rc -eq 0 ]" || cat err.txt
check "warning: the T1 <= 0 voxel, and 1 failed voxel" \
  "grep -q '<li><b class=.sev1.>check</b> T1 map .*1 voxels inside the mask have T1 &lt;= 0' bad/report.html && grep -q '<li><b class=.sev1.>check</b> etofts: 1 of 864 fitted voxels failed' bad/report.html"
nan1=$(ins png-count bad/figures/sub-demo_model-etofts_param-Ktrans.png 228,26,28)
check "Ktrans figure: the failed voxel in the NaN colour (8x8 pixels more: $nan0 -> $nan1)" "[ \"$nan1\" = \$((nan0 + 64)) ]"
check "state figure: the invalid_input colour" "ins png-has bad/figures/sub-demo_model-etofts_param-state.png 213,94,0"
exit $fail
