#!/usr/bin/env bash
# --memory-limit SIZE of lumen dce, t1 and fit (docs/RELIABILITY.md): an input whose voxel buffer
# (NIfTI: dims x type from the header) or file (text tables) exceeds the limit is refused before
# it is read, exit 1, with a message naming the file, the bytes it needs and the limit; nothing
# is written under the output names. Inputs within the limit run as without it. Bad sizes are
# usage errors (exit 2). The inputs come from scripts/make_bad_inputs.py: good_dce.nii.gz is
# 4x4x2x24 float32 (3072 bytes), good_vol.nii.gz 4x4x2 (128 bytes).
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 > /dev/null || { echo "python3 not found: skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"
python3 "$here/../../scripts/make_bad_inputs.py" . > /dev/null || { echo "FAIL: make_bad_inputs.py"; exit 1; }
n=0
# run NAME WANT_RC REGEX OUTPUT -- lumen args: exit status WANT_RC, stderr matches REGEX; for a
# refusal (WANT_RC != 0) OUTPUT (folder or file) must not exist afterwards
run() {
  local name=$1 want=$2 re=$3 out=$4; shift 4
  n=$((n + 1))
  rm -rf "$out"
  "$bin" "$@" > out.txt 2> err.txt; local rc=$?
  local ok=1
  [ $rc -eq "$want" ] || ok=0
  [ -z "$re" ] || grep -qE -- "$re" err.txt || ok=0
  if [ "$want" -ne 0 ] && [ -e "$out" ]; then ok=0; fi
  if [ $ok -eq 1 ]; then echo "ok: $name"; else echo "FAIL: $name (exit $rc, want $want)"; sed 's/^/    /' err.txt; fail=1; fi
}
T=(--t1map good_t1.nii.gz)
VFA=(--method vfa --in good_vol.nii.gz good_vol.nii.gz good_vol.nii.gz --flip-angles 2,10,20 --tr 0.005)
FIT=(--model tofts --times good_times.txt --aif good_aif.txt)

# ---- lumen dce
run "dce: series of 3072 bytes over 2K" 1 \
  "DCE series refused: .*'good_dce.nii.gz': header dims 4x4x2x24 .* need 3072 bytes, over the memory limit of 2048 bytes" \
  o dce --dce good_dce.nii.gz "${T[@]}" --out o -q --memory-limit 2K
# every input is checked, not only the series: onevox.nii.gz (4x4x2x1, 128 bytes) fits 2K, the
# 3072-byte good_dce.nii.gz given as T1 map / mask / ROI does not
run "dce: T1 map over the limit" 1 \
  "T1 map refused: .*'good_dce.nii.gz'.* need 3072 bytes, over the memory limit of 2048 bytes" \
  o dce --dce onevox.nii.gz --t1map good_dce.nii.gz --out o -q --memory-limit 2K
run "dce: mask over the limit" 1 "mask refused: .*'good_dce.nii.gz'.* over the memory limit of 2048 bytes" \
  o dce --dce onevox.nii.gz --t1 1.4 --mask good_dce.nii.gz --out o -q --memory-limit 2K
run "dce: B1 map over the limit" 1 "B1 map refused: .*'good_dce.nii.gz'.* over the memory limit of 2048 bytes" \
  o dce --dce onevox.nii.gz --t1 1.4 --b1 good_dce.nii.gz --out o -q --memory-limit 2K
run "dce: AIF ROI over the limit" 1 "AIF ROI refused: .*'good_dce.nii.gz'.* over the memory limit of 2048 bytes" \
  o dce --dce onevox.nii.gz --t1 1.4 --aif roi:good_dce.nii.gz --out o -q --memory-limit 2K
run "dce: VFA series over the limit" 1 "VFA series refused: .*'good_dce.nii.gz'" \
  o dce --dce onevox.nii.gz --vfa good_vol.nii.gz good_dce.nii.gz --out o -q --memory-limit 2K
run "dce: AIF file over the limit" 1 \
  "AIF file refused: 'good_aif.txt' has [0-9]+ bytes, over the memory limit of 129 bytes" \
  o dce --dce onevox.nii.gz --t1 1.4 --aif file:good_aif.txt --out o -q --memory-limit 129
run "dce: header claiming 10^15 voxels against 4G" 1 \
  "'huge15.nii': .*1000000000000000 voxels of float32\) need 4000000000000000 bytes, over the memory limit of [0-9]+ bytes" \
  o dce --dce huge15.nii "${T[@]}" --out o -q --memory-limit 4G
run "dce --shard 0/2: the limit holds for a shard too" 1 "DCE series refused: .*over the memory limit of 2048 bytes" \
  o dce --dce good_dce.nii.gz "${T[@]}" --out o -q --shard 0/2 --memory-limit 2K
run "dce: within the limit (1M) it runs" 0 "" o dce --dce good_dce.nii.gz "${T[@]}" --out o -q --memory-limit 1M
[ -f o/lumen_model-tofts_param-Ktrans.nii.gz ] && [ -f o/lumen_runlog.json ] && echo "ok: dce within the limit wrote its maps" ||
  { echo "FAIL: dce within the limit wrote no maps"; fail=1; }
run "dce: the limit is read from --memory-limit=3072 bytes exactly (series fits)" 0 "" o \
  dce --dce good_dce.nii.gz --t1 1.4 --out o -q --memory-limit 3072

# ---- lumen t1
run "t1: input of 128 bytes over 64" 1 "input refused: .*'good_vol.nii.gz'.* need 128 bytes, over the memory limit of 64 bytes" \
  o t1 "${VFA[@]}" --out o -q --memory-limit 64
run "t1: within the limit (1K) it runs" 0 "" o t1 "${VFA[@]}" --out o -q --memory-limit 1K
[ -f o/lumen_T1map.nii.gz ] && echo "ok: t1 within the limit wrote its map" || { echo "FAIL: t1 within the limit"; fail=1; }

# ---- lumen fit
size=$(wc -c < good_curves.txt)
run "fit: curves file over the limit" 1 \
  "--memory-limit: --curves file 'good_curves.txt' has $size bytes, over the memory limit of 200 bytes" \
  o.csv fit "${FIT[@]}" --curves good_curves.txt --out o.csv --memory-limit 200 -q
run "fit: times file over the limit" 1 "--memory-limit: --times file 'good_times.txt' has [0-9]+ bytes, over the memory limit of 16 bytes" \
  o.csv fit "${FIT[@]}" --curves good_curves.txt --out o.csv --memory-limit 16 -q
run "fit: within the limit (1M) it runs" 0 "" o.csv fit "${FIT[@]}" --curves good_curves.txt --out o.csv --memory-limit 1M -q
[ "$(wc -l < o.csv)" -eq 4 ] && echo "ok: fit within the limit wrote 3 rows" || { echo "FAIL: fit within the limit"; fail=1; }
run "fit: --memory-limit=SIZE form" 1 "over the memory limit of 200 bytes" \
  o.csv fit "${FIT[@]}" --curves good_curves.txt --out o.csv --memory-limit=200 -q

# ---- sizes that are not sizes: usage errors, nothing written
for bad in abc -5 0 inf nan 1e30G 12Q " 5M" 0x10; do
  run "dce: --memory-limit '$bad'" 2 "--memory-limit '$bad': expected a size" o dce --dce good_dce.nii.gz "${T[@]}" --out o -q --memory-limit "$bad"
done
run "t1: --memory-limit without a value" 2 "--memory-limit needs a SIZE" o t1 "${VFA[@]}" --out o -q --memory-limit
run "fit: --memory-limit 1e999" 2 "--memory-limit '1e999': expected a size" o.csv fit "${FIT[@]}" --curves good_curves.txt --out o.csv --memory-limit 1e999
# the suffixes: 1.5K = 1536 bytes, 1KiB = 1024, 1MB = 1048576
run "dce: 1.5K is 1536 bytes" 1 "over the memory limit of 1536 bytes" o dce --dce good_dce.nii.gz "${T[@]}" --out o -q --memory-limit 1.5K
run "dce: 2KiB is 2048 bytes" 1 "over the memory limit of 2048 bytes" o dce --dce good_dce.nii.gz "${T[@]}" --out o -q --memory-limit 2KiB
run "fit: 0.1KB is 102 bytes" 1 "over the memory limit of 102 bytes" o.csv fit "${FIT[@]}" --curves good_curves.txt --out o.csv --memory-limit 0.1KB

"$bin" dce --help | grep -q -- "--memory-limit SIZE" && "$bin" t1 --help | grep -q -- "--memory-limit SIZE" &&
  "$bin" fit --help | grep -q -- "--memory-limit SIZE" && echo "ok: --help of dce, t1, fit documents --memory-limit" ||
  { echo "FAIL: --help lacks --memory-limit"; fail=1; }
echo "memory-limit cases: $n"
exit $fail
