#!/usr/bin/env bash
# lumen fit: CSV columns and values on curves with a known answer, backends, and bad input.
# The AIF is a ramp cp(t) = t (mM, t in min), for which Tofts has the closed form
#   Ct(t) = Ktrans (t/kep - (1 - exp(-kep t))/kep^2),
# exact under lumen's default convolution (exact for a piecewise-linear AIF).
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
. "$(dirname "$0")/lib.sh"

awk 'BEGIN { for (i = 0; i <= 60; i++) printf "%g\n", i * 6 }' > times.txt      # seconds
awk 'BEGIN { for (i = 0; i <= 60; i++) printf "%.12g\n", i * 0.1 }' > aif.txt    # cp = t (min)
tofts() { awk -v K="$1" -v ve="$2" 'BEGIN { k = K / ve; for (i = 0; i <= 60; i++) { t = i * 0.1;
  printf "%s%.12g", (i ? ", " : ""), K * (t / k - (1 - exp(-k * t)) / (k * k)) } printf "\n" }'; }
{ echo "# two Tofts curves"; tofts 0.2 0.4; echo; tofts 0.05 0.1; } > curves.txt

"$bin" fit --model tofts --times times.txt --aif aif.txt --curves curves.txt --out fit.csv 2>err.txt; rc=$?
check "tofts fit exits 0" "[ $rc -eq 0 ]"
check "output renamed into place, no temporary left" "[ -f fit.csv ] && [ -z \"\$(ls | grep tmp)\" ]"
check "header" "[ \"\$(head -1 fit.csv)\" = 'Ktrans,ve,kep,sse,r2,state,iterations,Ktrans_cilo,Ktrans_cihi,ve_cilo,ve_cihi' ]"
check "one row per curve" "[ \$(wc -l < fit.csv) -eq 3 ]"
close() { awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= r * (b < 0 ? -b : b)) }'; }
row1=$(sed -n 2p fit.csv); row2=$(sed -n 3p fit.csv)
f() { echo "$1" | cut -d, -f"$2"; }
check "curve 1 Ktrans 0.2" "close $(f "$row1" 1) 0.2 1e-4"
check "curve 1 ve 0.4" "close $(f "$row1" 2) 0.4 1e-4"
check "curve 1 kep 0.5" "close $(f "$row1" 3) 0.5 1e-4"
check "curve 1 state 0" "[ $(f "$row1" 6) -eq 0 ]"
check "curve 1 r2 ~ 1" "close $(f "$row1" 5) 1 1e-6"
check "curve 1 CI brackets the estimate, narrow" \
  "awk -v p=$(f "$row1" 1) -v lo=$(f "$row1" 8) -v hi=$(f "$row1" 9) 'BEGIN{exit !(lo <= p && p <= hi && hi - lo < 1e-3)}'"
check "curve 2 Ktrans 0.05" "close $(f "$row2" 1) 0.05 1e-4"
check "curve 2 ve 0.1" "close $(f "$row2" 2) 0.1 1e-4"
check "summary line with backend fields and fits/s" \
  "grep -qE '^lumen fit: tofts, 2 curves x 61 samples: backend requested auto, selected [a-z_]+, used [a-z_+]+ .*fits/s$' err.txt"

"$bin" fit --model tofts --times times.txt --aif aif.txt --curves curves.txt --backend cpu_single -q > out.csv 2>err.txt; rc=$?
check "stdout output, -q silences the summary" "[ $rc -eq 0 ] && [ ! -s err.txt ] && [ \$(wc -l < out.csv) -eq 3 ]"

"$bin" fit --model tofts --times times.txt --aif aif.txt --curves curves.txt --backend pure_cpu --out std.csv 2>err.txt; rc=$?
if grep -q "standard selected" err.txt; then
  check "ROCKETSHIP alias pure_cpu -> standard" "[ $rc -eq 0 ] && grep -q 'requested standard, selected standard, used standard' err.txt"
  check "standard: curve 1 Ktrans 0.2" "close $(sed -n 2p std.csv | cut -d, -f1) 0.2 1e-4"
else
  check "pure_cpu without GSL falls through and says why" "[ $rc -eq 0 ] && grep -q 'standard: not built' err.txt"
fi

"$bin" fit --model tofts --times times.txt --aif aif.txt --curves curves.txt --fit-delay --bounds delay=0:0.2 --out d.csv 2>/dev/null; rc=$?
# the delay must be a number within 1e-3 min of the true 0 (an empty or missing field fails)
check "--fit-delay adds a delay column (min) near 0" \
  "[ $rc -eq 0 ] && head -1 d.csv | grep -q '^Ktrans,ve,kep,delay,sse' && sed -n 2p d.csv | cut -d, -f4 | grep -Eq '^-?[0-9.]+(e-?[0-9]+)?$' && awk -v d=\$(sed -n 2p d.csv | cut -d, -f4) 'BEGIN{exit !(d < 1e-3 && d > -1e-3)}'"

"$bin" fit --model tofts --times times.txt --aif aif.txt --curves curves.txt --fix ve=0.4 --out fx.csv 2>/dev/null; rc=$?
check "--fix holds ve" "[ $rc -eq 0 ] && close \$(sed -n 2p fx.csv | cut -d, -f2) 0.4 1e-12"

# VFA: S = M0 sin a (1 - E1)/(1 - cos a E1), T1 = 1.2 s, M0 = 1000, TR = 5 ms
awk 'BEGIN { pi = atan2(0, -1); E = exp(-0.005 / 1.2); n = split("2,5,10,15,20,30", fa, ",");
  for (i = 1; i <= n; i++) { a = fa[i] * pi / 180; printf "%s%.12g", (i > 1 ? " " : ""), 1000 * sin(a) * (1 - E) / (1 - cos(a) * E) } printf "\n" }' > vfa.txt
"$bin" fit --model vfa --flip-angles 2,5,10,15,20,30 --tr 0.005 --curves vfa.txt --out vfa.csv 2>/dev/null; rc=$?
check "vfa header" "[ $rc -eq 0 ] && head -1 vfa.csv | grep -q '^T1,M0,R1,sse,r2,state,iterations,T1_cilo'"
check "vfa T1 1.2 s" "close \$(sed -n 2p vfa.csv | cut -d, -f1) 1.2 1e-4"
"$bin" fit --model vfa-linear --flip-angles 2,5,10,15,20,30 --tr 0.005 --curves vfa.txt --out vl.csv 2>/dev/null; rc=$?
check "vfa-linear T1 1.2 s" "[ $rc -eq 0 ] && close \$(sed -n 2p vl.csv | cut -d, -f1) 1.2 1e-4"

# population AIF, times in minutes
awk 'BEGIN { for (i = 0; i < 80; i++) printf "%g\n", i / 12 }' > tmin.txt
awk 'BEGIN { for (i = 0; i < 80; i++) printf "%s0.1", (i ? "," : ""); printf "\n" }' > flat.txt
"$bin" fit --model patlak --times tmin.txt --time-unit min --aif parker --hematocrit 0.42 --aif-delay 1 --curves flat.txt --out p.csv 2>/dev/null; rc=$?
check "patlak with --aif parker runs" "[ $rc -eq 0 ] && head -1 p.csv | grep -q '^Ktrans,vp,sse,r2,state'"

"$bin" fit --help > help.txt; rc=$?
check "--help exits 0 and documents the options" "[ $rc -eq 0 ] && grep -q -- '--curves' help.txt && grep -q -- '--bounds NAME=LO:HI' help.txt && grep -q 'CSV columns' help.txt && grep -q -- '--overwrite' help.txt"

# ---------------------------------------------------------------- bad input
expect() { # name, expected exit, grep pattern, args...
  local name=$1 want=$2 pat=$3; shift 3
  "$bin" fit "$@" >/dev/null 2>err.txt; local rc=$?
  check "$name (exit $want, message)" "[ $rc -eq $want ] && grep -qi -- \"$pat\" err.txt"
}
base=(--times times.txt --aif aif.txt)
expect "missing --model" 2 "--model is required" "${base[@]}" --curves curves.txt
expect "unknown model" 2 "unknown" --model toft "${base[@]}" --curves curves.txt
expect "missing --curves" 2 "--curves FILE is required" --model tofts "${base[@]}"
expect "missing AIF" 2 "needs --aif" --model tofts --times times.txt --curves curves.txt
expect "nonexistent curves file" 1 "--curves: cannot open 'nope.txt': No such file" --model tofts "${base[@]}" --curves nope.txt
{ tofts 0.2 0.4; echo "0.1, 0.2, 0.3"; } > short.txt
expect "curve with the wrong length" 1 "short.txt' line 2 has 3 values, expected 61" --model tofts "${base[@]}" --curves short.txt
{ tofts 0.2 0.4 | sed 's/, /, abc, /'; } > text.txt
expect "non-numeric value" 1 "--curves: text.txt:1:[0-9]*: 'abc' is not a number" --model tofts "${base[@]}" --curves text.txt
awk 'BEGIN { for (i = 0; i <= 60; i++) printf "%g\n", (i == 30 ? 174 : i * 6) }' > badtimes.txt
expect "non-increasing times" 1 "increase" --model tofts --times badtimes.txt --aif aif.txt --curves curves.txt
head -30 aif.txt > shortaif.txt
expect "AIF length mismatch" 1 "holds 30 values but --times has 61" --model tofts --times times.txt --aif shortaif.txt --curves curves.txt
expect "bounds lo > hi" 2 "bounds of ve" --model tofts "${base[@]}" --curves curves.txt --bounds ve=0.5:0.4
expect "start outside bounds" 2 "start of Ktrans" --model tofts "${base[@]}" --curves curves.txt --start Ktrans=6
expect "unknown parameter" 2 "no parameter 'kt'" --model tofts "${base[@]}" --curves curves.txt --start kt=0.1
expect "unknown backend" 2 "backend 'gpu'" --model tofts "${base[@]}" --curves curves.txt --backend gpu
expect "bad number" 2 "--tolerance 'x'" --model tofts "${base[@]}" --curves curves.txt --tolerance x
expect "unknown option" 2 "unknown option '--bogus'" --model tofts --bogus
expect "vfa without TR" 2 "needs --flip-angles" --model vfa --flip-angles 2,5,10 --curves vfa.txt
{ tofts 0.2 0.4 | sed 's/, [^,]*/, nan/3'; echo "$(tofts 0 0.4 | sed 's/[^,]*/0/g')"; } > nan.txt
"$bin" fit --model tofts "${base[@]}" --curves nan.txt --out nan.csv 2>/dev/null; rc=$?
check "NaN sample and all-zero curve: exit 0, state 3, NaN parameters" \
  "[ $rc -eq 0 ] && [ \"\$(sed -n 2p nan.csv | cut -d, -f1,6)\" = 'nan,3' ] && [ \"\$(sed -n 3p nan.csv | cut -d, -f1,6)\" = 'nan,3' ]"
check "failed runs leave no output file" "[ ! -e bad.csv ]"

# --out is never replaced without --overwrite (tests/cli/test_hostile_io.sh has the hostile cases)
cp fit.csv fit_before.csv
"$bin" fit --model tofts "${base[@]}" --curves nan.txt --out fit.csv 2>err.txt; rc=$?
check "existing --out refused without --overwrite, kept" \
  "[ $rc -eq 1 ] && grep -q -- \"--out 'fit.csv' exists: not replaced without --overwrite\" err.txt && cmp -s fit.csv fit_before.csv"
"$bin" fit --model tofts "${base[@]}" --curves nan.txt --out fit.csv --overwrite 2>/dev/null; rc=$?
check "--overwrite replaces it" "[ $rc -eq 0 ] && cmp -s fit.csv nan.csv"

exit $fail
