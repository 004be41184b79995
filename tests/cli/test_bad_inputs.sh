#!/usr/bin/env bash
# The bad-input matrix (docs/RELIABILITY.md): scripts/make_bad_inputs.py writes one small broken
# file per case; lumen dce / t1 / fit / filter must each exit non-zero, say which file is wrong
# and what is wrong with it, and leave nothing under the final output names (not even a
# temporary file). A valid control run of each command comes first.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 > /dev/null || { echo "python3 not found: skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"
python3 "$here/../../scripts/make_bad_inputs.py" . || { echo "FAIL: make_bad_inputs.py"; exit 1; }
n=0
# case NAME REGEX OUTPUT -- lumen args: non-zero exit, stderr matches REGEX, OUTPUT (a folder or
# a file) holds no file afterwards
case_() {
  local name=$1 re=$2 out=$3; shift 3
  n=$((n + 1))
  rm -rf "$out"
  "$bin" "$@" > out.txt 2> err.txt; local rc=$?
  local left=""
  if [ -d "$out" ]; then left=$(find "$out" -type f | head -3); elif [ -e "$out" ]; then left=$out; fi
  if [ $rc -ne 0 ] && grep -qE -- "$re" err.txt && [ -z "$left" ]; then
    echo "ok: $name"
  else
    echo "FAIL: $name (exit $rc, left: '${left}')"; sed 's/^/    /' err.txt; fail=1
  fi
}
# tofts_case NAME REGEX OPTION FILE: case_ of `lumen fit --model tofts` on the good curves, times
# and AIF, with the table of OPTION (--curves, --times or --aif) replaced by FILE. The cases below
# are lines NAME|REGEX|OPTION|FILE read by a loop.
tofts_case() {
  local curves=good_curves.txt times=good_times.txt aif=good_aif.txt
  case $3 in --curves) curves=$4 ;; --times) times=$4 ;; --aif) aif=$4 ;; esac
  case_ "$1" "$2" o.csv fit --model tofts --curves "$curves" --times "$times" --aif "$aif" --out o.csv
}
G="--t1map good_t1.nii.gz"

# ---- controls: the good inputs work
"$bin" dce --dce good_dce.nii.gz $G --out ctl_dce -q 2> err.txt
check "control: dce on the good series" "[ -f ctl_dce/lumen_model-tofts_param-Ktrans.nii.gz ]" || cat err.txt
"$bin" t1 --method vfa --in good_vol.nii.gz good_vol.nii.gz good_vol.nii.gz --flip-angles 2,10,20 --tr 0.005 --out ctl_t1 -q 2> err.txt
check "control: t1" "[ -f ctl_t1/lumen_T1map.nii.gz ]" || cat err.txt
"$bin" fit --model tofts --curves good_curves.txt --times good_times.txt --aif good_aif.txt --out ctl_fit.csv 2> err.txt
check "control: fit" "[ -s ctl_fit.csv ]" || cat err.txt
"$bin" filter gaussian good.png ctl_filter.png > /dev/null 2> err.txt
check "control: filter" "[ -s ctl_filter.png ]" || cat err.txt

# ---- NIfTI files as the DCE series, a T1 map, a t1 input and a filter input
nifti_cases=(
  "trunc.nii.gz|truncated \(gzip: unexpected end of file\)"
  "trunc.nii|is truncated: header .* needs 3072 bytes"
  "empty.nii.gz|has 0 bytes, too short for a NIfTI header"
  "notnifti.nii|sizeof_hdr is .*not a NIfTI file"
  "badmagic.nii|header field magic"
  "huge.nii|1000x1000x1000x1000 .* over the memory limit"
  "huge15.nii|1000000000000000 voxels .* over the memory limit"
  "overflow.nii|the voxel count overflows int64"
  "negdim.nii|dim\[3\] is -7"
  "zerodim.nii|dim\[2\] is 0"
  "dim0.nii|dim\[0\] is 9"
  "badbitpix.nii|bitpix is 8, expected 32"
  "badtype.nii|datatype is 999"
  "complex.nii|datatype is 32 \(complex64\)"
  "bigoffset.nii|vox_offset is 1e\+30"
  "nanoffset.nii|vox_offset is nan"
  "missing.nii.gz|(file not found|No such file)"
)
for c in "${nifti_cases[@]}"; do
  f=${c%%|*}; re=${c#*|}
  case_ "dce --dce $f" "'$f'.*$re|$re.*'$f'|$f: .*$re" o_dce dce --dce "$f" $G --out o_dce -q
  case_ "dce --t1map $f" "$f.*$re" o_t1map dce --dce good_dce.nii.gz --t1map "$f" --out o_t1map -q
  case_ "dce --mask $f" "$f.*$re" o_mask dce --dce good_dce.nii.gz $G --mask "$f" --out o_mask -q
  case_ "t1 --in $f" "$f.*$re" o_t1 t1 --method vfa --in good_vol.nii.gz "$f" good_vol.nii.gz --flip-angles 2,10,20 --tr 0.005 --out o_t1 -q
  case_ "filter $f" "$f.*$re" o_filter.nii.gz filter gaussian "$f" o_filter.nii.gz
done

# ---- series that read but are wrong for lumen dce
case_ "dce: a frame of NaN" "'nanframe.nii.gz': frame 7 of 24 has no finite value" o dce --dce nanframe.nii.gz $G --out o -q
case_ "dce: 3-D series" "'dims3d.nii.gz' is 3-D .*expected a 4-D series" o dce --dce dims3d.nii.gz $G --out o -q
case_ "dce: a single frame" "'onevox.nii.gz' is 4-D \(4x4x2x1\): expected .*at least 3 frames" o dce --dce onevox.nii.gz $G --out o -q
case_ "dce: T1 map on another grid" "T1 map 'smallgrid.nii.gz' is on another grid" o dce --dce good_dce.nii.gz --t1map smallgrid.nii.gz --out o -q
case_ "dce: mask on another grid" "mask 'smallgrid.nii.gz' is on another grid" o dce --dce good_dce.nii.gz $G --mask smallgrid.nii.gz --out o -q
case_ "dce: ROI on another grid" "smallgrid.nii.gz.*another grid" o dce --dce good_dce.nii.gz $G --aif roi:smallgrid.nii.gz --out o -q
# ---- sidecars
case_ "dce: sidecar not JSON" "badjson/dce.json:2:20: bad JSON" o dce --dce badjson/dce.nii.gz $G --out o -q
case_ "dce: sidecar FlipAngle a string" "wrongjson/dce.json: key \"FlipAngle\" is not a number" o dce --dce wrongjson/dce.nii.gz $G --out o -q
case_ "dce: sidecar a JSON array" "arrayjson/dce.json: expected a JSON object" o dce --dce arrayjson/dce.nii.gz $G --out o -q
# ---- config files
case_ "dce: config line without =" "badconfig.txt:2: expected 'key = value'" o dce --config badconfig.txt --dce good_dce.nii.gz $G --out o -q
case_ "dce: config value not a number" "badconfig2.txt:1: relaxivity = 'abc' is not a number" o dce --config badconfig2.txt --dce good_dce.nii.gz $G --out o -q
case_ "dce: config value out of range" "badconfig3.txt:1: hematocrit = 7: expected a fraction 0\.\.0\.7 \(0\.45 for adults\); in percent\? give 0\.07" o dce --config badconfig3.txt --dce good_dce.nii.gz $G --out o -q
case_ "dce: config line too long" "longline.txt:1: line longer than 4094 characters" o dce --config longline.txt --dce good_dce.nii.gz $G --out o -q
case_ "dce: config missing" "config: cannot open 'nope.txt': No such file" o dce --config nope.txt --dce good_dce.nii.gz $G --out o -q
# ---- AIF and curve tables
case_ "dce: AIF table with a word" "badaif.txt:3:1: 'oops' is not a number" o dce --dce good_dce.nii.gz $G --aif file:badaif.txt --out o -q
case_ "dce: AIF table empty" "emptyaif.txt.*(no rows|no numbers|empty)" o dce --dce good_dce.nii.gz $G --aif file:emptyaif.txt --out o -q
# lumen fit reads its tables with the library's reader (lumen_read_table): FILE:LINE:COLUMN
while IFS='|' read -r name re opt file; do tofts_case "$name" "$re" "$opt" "$file" < /dev/null; done <<'CASES'
fit: AIF table with a word|--aif: badaif.txt:3:1: 'oops' is not a number|--aif|badaif.txt
fit: AIF table empty|--aif: emptyaif.txt: no numbers found|--aif|emptyaif.txt
fit: AIF with nan|--aif file 'nanaif.txt' line 6, value 1: nan, expected a finite number|--aif|nanaif.txt
fit: AIF with 1e999|--aif: hugenum.txt:5:1: '1e999' is out of the range of a double|--aif|hugenum.txt
fit: ragged curves|raggedcurves.txt' line 1 has 3 values, expected 24|--curves|raggedcurves.txt
fit: curves with a NUL byte|--curves: nulcurves.txt:2:3: a NUL byte|--curves|nulcurves.txt
fit: curves with a word|--curves: wordcurves.txt:2:3: 'oops' is not a number|--curves|wordcurves.txt
fit: curves with 1e999|--curves: hugecurves.txt:3:1: '1e999' is out of the range of a double|--curves|hugecurves.txt
fit: curves with -inf|--curves file 'infcurves.txt' line 2, value 1: -inf, expected a finite number or nan|--curves|infcurves.txt
fit: curves empty|--curves: emptycurves.txt: no numbers found|--curves|emptycurves.txt
fit: times with 1e999|--times: hugenum.txt:5:1: '1e999' is out of the range of a double|--times|hugenum.txt
fit: times with inf|--times file 'inftimes.txt' line 3, value 1: inf, expected a finite number|--times|inftimes.txt
fit: times with an empty field|--times: emptyfield.txt:1:3: empty field|--times|emptyfield.txt
CASES
case_ "fit: flip angles file with a word" "--flip-angles: badflip.txt:3:1: 'fifteen' is not a number" o.csv fit --model vfa --flip-angles badflip.txt --tr 0.005 --curves good_curves.txt --out o.csv
case_ "fit: flip angles list with 1e999" "--flip-angles list:1:3: '1e999' is out of the range of a double" o.csv fit --model vfa --flip-angles 2,1e999,10 --tr 0.005 --curves good_curves.txt --out o.csv
case_ "fit: inversion times list with inf" "--ti '0.1,inf,2': value 2 is inf, expected a finite number" o.csv fit --model ir --ti 0.1,inf,2 --curves good_curves.txt --out o.csv
while IFS='|' read -r name re opt file; do tofts_case "$name" "$re" "$opt" "$file" < /dev/null; done <<'CASES'
fit: curves missing|--curves: cannot open 'missing.txt': No such file|--curves|missing.txt
fit: times missing|--times: cannot open 'missing.txt': No such file|--times|missing.txt
CASES
# ---- PNG inputs of lumen filter
case_ "filter: truncated PNG" "'trunc.png' is truncated or corrupt" o.png filter gaussian trunc.png o.png
case_ "filter: PNG with a bad CRC" "'badcrc.png' is truncated or corrupt: IHDR: CRC error" o.png filter gaussian badcrc.png o.png
case_ "filter: PNG of 2000000 x 2000000" "'hugepng.png'" o.png filter gaussian hugepng.png o.png
case_ "filter: not a PNG" "'notpng.png' is not a PNG file" o.png filter gaussian notpng.png o.png
# ---- outputs that cannot be written
: > afile
case_ "dce: output folder under a file" "output folder 'afile/sub'" afile/sub dce --dce good_dce.nii.gz $G --out afile/sub -q
case_ "dce: output folder in /proc" "output folder '/proc/lumen-bad-inputs'" /proc/lumen-bad-inputs dce --dce good_dce.nii.gz $G --out /proc/lumen-bad-inputs -q
case_ "fit: output in a missing folder" "nofolder/o.csv" nofolder fit --model tofts --curves good_curves.txt --times good_times.txt --aif good_aif.txt --out nofolder/o.csv
case_ "filter: output in a missing folder" "nofolder/o.png" nofolder filter gaussian good.png nofolder/o.png
if [ "$(id -u)" -ne 0 ]; then   # root writes into read-only folders
  mkdir ro && chmod 555 ro
  case_ "dce: read-only output folder" "'ro/out'|ro/out" ro/out dce --dce good_dce.nii.gz $G --out ro/out -q
  case_ "filter: read-only output folder" "ro/o.png" ro filter gaussian good.png ro/o.png
fi
echo "bad-input cases: $n"
exit $fail
