#!/usr/bin/env bash
# One vocabulary (issue 17): every alias of a shared option gives byte-identical outputs to its
# name in lumen dce, t1 and fit; the shared --help lines (src/cli/cli_vocabulary.c) are identical
# across the three commands and show each default; exit codes mean one thing everywhere
# (0 success, 1 input or data error, 2 usage error). Inputs: the demo phantom (lumen dce-demo).
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
. "$(dirname "$0")/lib.sh"

demo_phantom
dce=(dce --dce $P --t1map $T --mask $M --aif parker --models tofts --no-report -q)
t1=(t1 --in $T $T $T --mask $M --no-report -q --allow-failures)

# same_maps NAME DIR_A DIR_B: both runs wrote the same NIfTI files, byte for byte
same_maps() {
  local n=0 bad=0 f
  for f in "$2"/*.nii.gz; do
    [ -e "$f" ] || continue
    n=$((n + 1))
    cmp -s "$f" "$3/$(basename "$f")" || bad=1
  done
  check "$1: identical maps ($n files)" "[ $n -gt 0 ] && [ $bad -eq 0 ]"
}
# alias NAME MAIN_DIR ARGS...: runs lumen ARGS --out DIR and compares DIR with MAIN_DIR
k=0
alias_run() {
  local name=$1 ref=$2; shift 2
  k=$((k + 1))
  "$bin" "$@" --out "a$k" 2> err.txt; local rc=$?
  check "$name: exit 0 (got $rc)" "[ $rc -eq 0 ]" || cat err.txt
  same_maps "$name" "$ref" "a$k"
}

# ---- dce
"$bin" "${dce[@]}" --flip-angle 20 --aif-delay 30 --out d0 2> err.txt || { cat err.txt; echo "FAIL: dce"; exit 1; }
alias_run "dce --flip-angles (one value) = --flip-angle" d0 "${dce[@]}" --flip-angles 20 --aif-delay 30
alias_run "dce --flip-angle=20 --aif-delay=30" d0 "${dce[@]}" --flip-angle=20 --aif-delay=30
alias_run "dce --injection-time = --aif-delay" d0 "${dce[@]}" --flip-angle 20 --injection-time 30
"$bin" "${dce[@]}" --flip-angles 25 --injection-time 20 --out d3 2> err.txt
check "dce: another --flip-angles / --injection-time value changes the maps (the alias is used)" \
  "! cmp -s d0/sub-demo_model-tofts_param-Ktrans.nii.gz d3/sub-demo_model-tofts_param-Ktrans.nii.gz"
"$bin" "${dce[@]}" --flip-angle 20 --aif-delay 30 --out d1 --quiet --tolerance 1e-6 --max-iterations 200 \
  --bounds-preset physical --backend auto --precision float32 --conv exact --threads 0 2> err.txt
same_maps "dce: the defaults given explicitly, --quiet for -q" d0 d1
"$bin" "${dce[@]}" --bounds Ktrans=0:1,ve=0.001:1 --start Ktrans=0.1,ve=0.2 --out d2 2> err.txt || cat err.txt
alias_run "dce: --bounds/--start repeated = comma lists" d2 "${dce[@]}" --bounds Ktrans=0:1 --bounds ve=0.001:1 \
  --start Ktrans=0.1 --start ve=0.2

# ---- t1: VFA and IR on the demo's T1 map as each input (constant curves: failures allowed)
"$bin" "${t1[@]}" --flip-angles 2,10,20 --tr 0.005 --out v0 2> err.txt || cat err.txt
alias_run "t1 --flip-angle LIST = --flip-angles" v0 "${t1[@]}" --flip-angle 2,10,20 --tr 0.005
alias_run "t1 --threads 1 (same maps as all cores)" v0 "${t1[@]}" --flip-angles 2,10,20 --tr 0.005 --threads 1
"$bin" "${t1[@]}" --flip-angles 2,10,20 --tr 0.005 --start T1=1 --out v1 2> err.txt
check "t1 --start: exit 0" "[ $? -eq 0 ]" || cat err.txt
"$bin" "${t1[@]}" --method ir --inversion-times 0.1,0.5,2 --out i0 2> err.txt || cat err.txt
alias_run "t1 --ti = --inversion-times" i0 "${t1[@]}" --method ir --ti 0.1,0.5,2
alias_run "t1 --times = --inversion-times (ir)" i0 "${t1[@]}" --method ir --times 0.1,0.5,2

# ---- fit
awk 'BEGIN { for (i = 0; i <= 30; i++) printf "%g\n", i * 6 }' > times.txt
awk 'BEGIN { for (i = 0; i <= 30; i++) printf "%s%.6g", (i ? " " : ""), 0.3 * (1 - exp(-i * 0.05)); print "" }' > curves.txt
echo "0.5 0.9 1.1 1.0" > vfa.txt
echo "-0.6 0.1 0.7 0.95" > ir.txt
printf '0.1\n0.5\n1\n3\n' > ti.txt
same_csv() { # NAME REF ARGS...
  local name=$1 ref=$2; shift 2
  "$bin" fit "$@" > b.csv 2> err.txt; local rc=$?
  check "$name: exit 0 and the same CSV" "[ $rc -eq 0 ] && cmp -s $ref b.csv" || cat err.txt
}
tofts=(--model tofts --times times.txt --aif parker --curves curves.txt)
"$bin" fit "${tofts[@]}" --aif-delay 12 --bounds Ktrans=0:1,ve=0.001:1 --start Ktrans=0.1,ve=0.2 -q > f0.csv
check "fit --bounds Ktrans=0:1,ve=0.001:1 (comma form)" "[ \$(wc -l < f0.csv) -eq 2 ]"
same_csv "fit --injection-time = --aif-delay, repeated = comma lists" f0.csv "${tofts[@]}" --injection-time 12 \
  --bounds Ktrans=0:1 --bounds ve=0.001:1 --start Ktrans=0.1 --start=ve=0.2 --quiet
"$bin" fit "${tofts[@]}" --fix ve=0.2,Ktrans=0.1 -q > f1.csv
check "fit --fix comma list holds both" "[ \"\$(sed -n 2p f1.csv | cut -d, -f1,2)\" = '0.1,0.2' ]"
"$bin" fit --model vfa --flip-angles 2,10,20,30 --tr 0.005 --curves vfa.txt -q > f2.csv
same_csv "fit --flip-angle = --flip-angles" f2.csv --model vfa --flip-angle 2,10,20,30 --tr 0.005 --curves vfa.txt -q
"$bin" fit --model ir --inversion-times 0.1,0.5,1,3 --curves ir.txt -q > f3.csv
same_csv "fit --ti = --inversion-times" f3.csv --model ir --ti 0.1,0.5,1,3 --curves ir.txt -q
same_csv "fit --times FILE = --inversion-times (ir)" f3.csv --model ir --times ti.txt --curves ir.txt -q
same_csv "fit --inversion-times FILE" f3.csv --model ir --inversion-times ti.txt --curves ir.txt -v -q

# ---- help: the shared lines are the same in every command and show the defaults
"$bin" dce --help > h_dce.txt && "$bin" t1 --help > h_t1.txt && "$bin" fit --help > h_fit.txt
check "--help exits 0 for dce, t1, fit" "[ -s h_dce.txt ] && [ -s h_t1.txt ] && [ -s h_fit.txt ]"
# block OPTION FILE: the option's line in the shared section and its continuation lines
block() { awk -v o="$1" '/^shared options/ { s = 1 } /^exit status/ { s = 0 }
  s && /^  -/ { p = ($1 == o) } s && p' "$2"; }
flat() { block "$1" "$2" | tr '\n' ' ' | tr -s ' '; }  # one line, for phrases that wrap
exits() { sed -n '/^exit status (every command)/,$p' "$1"; }
for o in --flip-angles --tr --backend --force-cpu --precision --tolerance --max-iterations --start --bounds \
         --bounds-preset --fix --threads --memory-limit --overwrite --quiet --verbose; do
  block $o h_dce.txt > b1; block $o h_t1.txt > b2; block $o h_fit.txt > b3
  check "help $o: the same lines in dce, t1 and fit, with its default" \
    "[ -s b1 ] && cmp -s b1 b2 && cmp -s b1 b3 && grep -q 'Default:' b1" || { cat b1 b2 b3; }
done
for o in --aif-delay --hematocrit --conv --fit-delay; do
  block $o h_dce.txt > b1; block $o h_fit.txt > b3
  check "help $o: the same lines in dce and fit, with its default" "[ -s b1 ] && cmp -s b1 b3 && grep -q 'Default:' b1"
done
block --inversion-times h_t1.txt > b2; block --inversion-times h_fit.txt > b3
check "help --inversion-times: the same lines in t1 and fit" "[ -s b2 ] && cmp -s b2 b3 && grep -q 'Also: --ti' b2"
check "help: aliases named (--flip-angle, --injection-time, -q)" \
  "flat --flip-angles h_t1.txt | grep -q 'Also: --flip-angle' && flat --aif-delay h_fit.txt | grep -q 'Also: --injection-time' && flat --quiet h_dce.txt | grep -q 'Also: -q'"
exits h_dce.txt > x1; exits h_t1.txt > x2; exits h_fit.txt > x3
check "help: the same exit status text everywhere (0, 1 data, 2 usage)" \
  "[ -s x1 ] && cmp -s x1 x2 && cmp -s x1 x3 && grep -q '1 input or data error' x1 && grep -q '2 usage error' x1"

# ---- exit codes: 2 usage (nothing written), 1 input or data
code() { # NAME WANT REGEX ARGS...
  local name=$1 want=$2 re=$3; shift 3
  "$bin" "$@" > /dev/null 2> err.txt; local rc=$?
  check "$name: exit $want (got $rc), /$re/" "[ $rc -eq $want ] && grep -Eq -- \"$re\" err.txt" || cat err.txt
}
echo "not an image" > bad.nii.gz
echo "1 2 x" > bad.txt
code "dce --models etoft" 2 "etoft" "${dce[@]}" --models etoft --out e1
code "dce --tr -0.005" 2 "--tr" "${dce[@]}" --tr -0.005 --out e2
code "t1 --tr -0.005" 2 "--tr" "${t1[@]}" --tr -0.005 --out e3
code "fit --tr -0.005" 2 "TR -0.005" fit --model vfa --flip-angles 2,10,20,30 --tr -0.005 --curves vfa.txt
code "fit --model etoft" 2 "etoft" fit --model etoft --times times.txt --aif parker --curves curves.txt
code "dce --backend gpu" 2 "backend 'gpu'" "${dce[@]}" --backend gpu --out e4
code "fit --backend gpu" 2 "backend 'gpu'" fit "${tofts[@]}" --backend gpu
code "fit --bounds lo > hi" 2 "bounds of ve" fit "${tofts[@]}" --bounds Ktrans=0:1,ve=0.5:0.4
code "fit --bounds without LO:HI" 2 "--bounds 've=1': expected NAME=LO:HI" fit "${tofts[@]}" --bounds Ktrans=0:1,ve=1
code "dce --fix (not in the pipeline)" 2 "--fix 've=0.3': lumen dce cannot hold a parameter fixed" "${dce[@]}" --fix ve=0.3 --out e5
code "t1 --fix (not in the pipeline)" 2 "lumen t1 cannot hold" "${t1[@]}" --fix T1=1 --out e6
code "a switch with a value" 2 "--overwrite takes no value" "${dce[@]}" --overwrite=1 --out e7
code "fit: a switch with a value" 2 "--quiet takes no value" fit "${tofts[@]}" --quiet=yes
code "t1 --flip-angles without a value" 2 "--flip-angles needs a DEG,..." "${t1[@]}" --out e8 --flip-angles
code "dce: bad data file" 1 "bad.nii.gz" dce --dce bad.nii.gz --t1map $T --out e9 -q
code "t1: bad data file" 1 "bad.nii.gz" t1 --in bad.nii.gz bad.nii.gz --flip-angles 2,10 --tr 0.005 --out e10 -q
code "fit: bad data file" 1 "bad.txt" fit --model tofts --times times.txt --aif parker --curves bad.txt
for d in e1 e2 e3 e4 e5 e6 e7 e8; do
  check "usage error $d: nothing written" "[ -z \"\$(ls -A $d 2>/dev/null)\" ]"
done
exit $fail
