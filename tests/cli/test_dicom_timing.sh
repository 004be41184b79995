#!/usr/bin/env bash
# The frame order and times of real scanners' series (issue 38, docs/DICOM.md "Frame order and
# times"), on series written with pydicom the way the scanners and the QIBA folders write them,
# each against the NIfTI run of the same frames with the times given on the command line:
# - QIBA v6 with an AcquisitionTime in every file and one malformed ('0960.000', as in QIBA's
#   original folder): the same maps as the NIfTI run with --dt 0.5 (the frames by TriggerTime);
# - QIBA v9 / GE style: one AcquisitionTime for every file, no TriggerTime in the first file, the
#   others 6000 ... ms: the maps of the NIfTI run with --dt 6;
# - AcquisitionTime crossing midnight: the frame times continue past 24 h (the maps of the NIfTI
#   run with the same times in its sidecar, and lumen convert's FrameTimesStart);
# - TriggerTime and InstanceNumber in opposite orders: TriggerTime (first in the precedence) wins,
#   a warning names both; nothing to order the frames: the error names every tag and what it held;
# - Philips: the private MRScaleSlope turns the values into the precise ones, (stored x RS + RI) /
#   (RS x SS) with RS changing between dynamics, as dcm2niix's default gives them;
# - one series of two echoes, and a localizer of three orientations: one image per part (_e1, _e2,
#   _i00001 ...) as dcm2niix writes them; lumen dce refuses to stack echoes as frames;
# - two series in one folder: `--series NUMBER` picks by SeriesNumber.
# Skips (77) only when Debian's pydicom/numpy are missing, lumen was built without DICOM (GDCM),
# or the reference data (LUMEN_REFDATA qiba/) are not there.
set -u
. "$(dirname "$0")/lib.sh"
need_dicom_series_inputs
ds="$py -W ignore $LUMEN_CLI_TESTS/dicom_series.py"
common="--t1 1.0 --relaxivity 4.5 -q --no-report"

$ds small small >/dev/null || { echo "FAIL: writing the small series"; exit 1; }
if ! "$bin" convert small --out probe -q 2> probe_err.txt; then
  skip_without_dicom probe_err.txt
fi
same_maps() {  # A B: Ktrans, ve and state of two runs equal voxel for voxel
  local r=0
  for m in Ktrans ve state; do $ds same "$1/lumen_model-tofts_param-$m.nii.gz" "$2/lumen_model-tofts_param-$m.nii.gz" || r=1; done
  return $r
}
sidecar() {  # FILE.json EXPR: the Python expression on the sidecar j is true
  "$py" -c "import json,sys; j=json.load(open('$1')); sys.exit(0 if ($2) else 1)"
}
# series_like_nifti SERIES OUT NIFTI_OUT "RUNS" "SAME" [OPTION...]: lumen dce on the folder SERIES
# (with the options) into OUT: checks RUNS (it runs) and SAME (the maps of the run in NIFTI_OUT)
series_like_nifti() {
  local series=$1 out=$2 nii=$3 runs=$4 same=$5
  shift 5
  "$bin" dce --dce "$series" --out "$out" $common "$@" 2> "$out.err"
  check "$runs" "[ \$? -eq 0 ]" || cat "$out.err"
  check "$same" "same_maps $nii $out"
}
# convert_sidecar SERIES OUT JSON "WHAT" EXPR: lumen convert SERIES into OUT; checks WHAT: the
# Python expression EXPR (no double quotes) on the sidecar OUT/JSON
convert_sidecar() {
  "$bin" convert "$1" --out "$2" -q 2> "$2.err"
  check "$4" "sidecar $2/$3 \"$5\"" || cat "$2.err"
}

# ---------------------------------------------------------------- QIBA v6, one malformed AcquisitionTime
$ds qiba "$q6" v6bad --acquisition-time --malformed-acq 700 >/dev/null || { echo "FAIL: writing v6bad"; exit 1; }
"$bin" dce --dce "$q6" --dt 0.5 --out nii6 $common 2> nii6.err || { cat nii6.err; echo "FAIL: the NIfTI run"; exit 1; }
series_like_nifti v6bad dcm6 nii6 "QIBA v6 with a malformed AcquisitionTime ('0960.000') in one file: lumen dce runs" \
  "v6bad: the maps of the NIfTI run with --dt 0.5"
check "v6bad: the run log names TriggerTime as the frame times' source" \
  "grep -q \"times from the headers' TriggerTime\" dcm6/lumen_runlog.txt"
convert_sidecar v6bad cv6 18_qiba_v6_tofts.json \
  "v6bad: lumen convert: FrameOrder and FrameTimesSource TriggerTime, 1321 times 0 ... 660 s" \
  "j['FrameOrder'] == 'TriggerTime' and j['FrameTimesSource'] == 'TriggerTime' and len(j['FrameTimesStart']) == 1321 and j['FrameTimesStart'][-1] == 660"

# ---------------------------------------------------------------- QIBA v9 / GE style: first TriggerTime missing
$ds qiba "$q6" v9 --every 12 --ge --nifti v9.nii >/dev/null || { echo "FAIL: writing v9"; exit 1; }
"$bin" dce --dce v9.nii --dt 6 --flip-angle 30 --tr 0.005 --out nii9 $common 2> nii9.err || { cat nii9.err; echo "FAIL: v9 NIfTI run"; }
series_like_nifti v9 dcm9 nii9 "GE-style series (one AcquisitionTime, no TriggerTime in the first file): lumen dce runs" \
  "v9: the maps of the NIfTI run with --dt 6"
convert_sidecar v9 cv9 18_qiba_v6_tofts.json \
  "v9: FrameTimesStart 0, 6, 12 ... 660 s from TriggerTime (the first file's taken as 0)" \
  "j['FrameTimesStart'][:3] == [0, 6, 12] and j['FrameTimesStart'][-1] == 660 and 'AcquisitionTime' in j['FrameTimingNote']"

# ---------------------------------------------------------------- AcquisitionTime across midnight
$ds small mid --acquisition-time --start 86395 >/dev/null
"$bin" dce --dce mid.nii --out midnii $common --aif parker 2> midnii.err || cat midnii.err
series_like_nifti mid middcm midnii "AcquisitionTime from 23:59:55 across midnight: lumen dce runs" \
  "midnight: the maps of the NIfTI run with the same frame times" --aif parker
convert_sidecar mid cvmid 7_small.json "midnight: FrameTimesStart 0, 10 ... 190 s (past 24 h, not back to 0)" \
  "j['FrameTimesStart'] == [10.0 * t for t in range(20)] and j['FrameTimesSource'] == 'AcquisitionTime'"

# ---------------------------------------------------------------- sources that disagree, and none
cp -r small flipped && "$py" -W ignore - <<'PYEOF'
import os, pydicom
for f in os.listdir('flipped'):  # InstanceNumber against the TriggerTime order within each slice
    d = pydicom.dcmread('flipped/' + f)
    d.InstanceNumber = 1000 - int(float(d.TriggerTime) / 1000)
    d.save_as('flipped/' + f, write_like_original=False)
PYEOF
"$bin" dce --dce small --out ref_small $common --aif parker 2> ref_small.err || cat ref_small.err
"$bin" dce --dce flipped --out out_flipped $common --aif parker 2> flipped.err
check "TriggerTime and InstanceNumber disagree: TriggerTime's order (the maps of the plain series)" "same_maps ref_small out_flipped"
check "the disagreement is a warning naming both tags" \
  "grep -q 'the DICOM timing tags disagree: frames ordered by TriggerTime; InstanceNumber orders the frames differently' out_flipped/lumen_runlog.txt" ||
  cat flipped.err
cp -r small none && "$py" -W ignore - <<'PYEOF'
import os, pydicom
for f in os.listdir('none'):
    d = pydicom.dcmread('none/' + f)
    del d.TriggerTime
    del d.InstanceNumber
    d.save_as('none/' + f, write_like_original=False)
PYEOF
"$bin" convert none --out out_none 2> none.err
rc=$?
check "no tag orders the frames: refused (exit $rc), naming each tag looked at and what it held" \
  "[ $rc -eq 1 ] && grep -q 'no timing: 20 files at one slice position and no tag orders them' none.err &&
   grep -q 'TriggerTime (0018,1060): absent;' none.err && grep -q 'InstanceNumber (0020,0013): absent;' none.err &&
   grep -q 'TemporalPositionIdentifier (0020,0100): absent;' none.err && [ ! -e out_none/7_small.nii.gz ]" || cat none.err

# ---------------------------------------------------------------- Philips precise scaling
$ds philips ph >/dev/null || echo "FAIL: writing the Philips series"
"$bin" convert ph --out cvph -q 2> cvph.err || cat cvph.err
check "Philips MRScaleSlope: the precise values (stored x RS + RI) / (RS x SS) per dynamic, as dcm2niix gives them" \
  "$ds values cvph/9_philips_dyn.nii.gz ph.npy"
check "Philips: the sidecar says UsePhilipsFloatNotDisplayScaling" \
  "sidecar cvph/9_philips_dyn.json \"j['UsePhilipsFloatNotDisplayScaling'] == 1 and j['FrameOrder'] == 'TriggerTime'\""

# ---------------------------------------------------------------- one series, several parts
# two echoes in one series (EchoNumbers 1 and 2, echo 2's pixels + 1000), and a localizer of three
# orientations in one series: one image per part, named as dcm2niix names them
mkdir me loc && "$py" -W ignore - <<'PYEOF'
import os, pydicom, numpy as np
from pydicom.uid import generate_uid
for f in sorted(os.listdir('small')):
    d = pydicom.dcmread('small/' + f)
    d.EchoNumbers, d.EchoTime = 1, '2.5'
    d.save_as('me/' + f, write_like_original=False)
    d.EchoNumbers, d.EchoTime = 2, '5'
    d.PixelData = (d.pixel_array.astype(np.uint16) + 1000).tobytes()
    d.SOPInstanceUID = d.file_meta.MediaStorageSOPInstanceUID = generate_uid()
    d.InstanceNumber = int(d.InstanceNumber) + 100
    d.save_as('me/e2_' + f, write_like_original=False)
uid = generate_uid()
for k, iop in enumerate([[1, 0, 0, 0, 1, 0], [0, 1, 0, 0, 0, -1], [1, 0, 0, 0, 0, -1]]):
    os.makedirs('loc_part%d' % k)
    for z in range(2):
        d = pydicom.dcmread('small/f000.dcm')
        d.SeriesInstanceUID, d.SeriesNumber, d.SeriesDescription = uid, 1, 'loc'
        d.ImageOrientationPatient = iop
        d.ImagePositionPatient = [5.0 * z * (k == 1), 5.0 * z * (k == 2), 5.0 * z * (k == 0)]
        d.InstanceNumber = 2 * k + z + 1
        d.SOPInstanceUID = d.file_meta.MediaStorageSOPInstanceUID = generate_uid()
        d.save_as('loc/L%d.dcm' % (2 * k + z), write_like_original=False)
        d.save_as('loc_part%d/L%d.dcm' % (k, z), write_like_original=False)
PYEOF
"$bin" convert me --out cvme -q 2> cvme.err || cat cvme.err
check "two echoes in one series: 7_small_e1 and 7_small_e2, echo 2 = echo 1 + 1000 in every voxel" \
  "[ \$(ls cvme | wc -l) -eq 4 ] && $py -c \"import sys; sys.path.insert(0, '$LUMEN_CLI_TESTS'); from dcm2niix_compare import nii; a = nii('cvme/7_small_e1.nii.gz')[0]; b = nii('cvme/7_small_e2.nii.gz')[0]; sys.exit(0 if a.shape == (5, 4, 2, 20) and (b - a == 1000).all() else 1)\""
"$bin" dce --dce me --out out_me $common --aif parker 2> me.err
check "lumen dce on a series of two echoes: refused (exit 1) naming EchoNumbers, never stacked as frames" \
  "[ \$? -eq 1 ] && grep -q 'EchoNumbers (0018,0086) is 2' me.err && grep -q 'several echoes' me.err" || cat me.err
"$bin" convert loc --out cvloc -q 2> cvloc.err || cat cvloc.err
ok=1
for k in 0 1 2; do
  "$bin" convert loc_part$k --out cvpart$k -q 2> /dev/null || ok=0
  $ds same "cvloc/1_loc_i0000$((2 * k + 1)).nii.gz" cvpart$k/1_loc.nii.gz > /dev/null || ok=0
done
check "a localizer of 3 orientations in one series: 1_loc_i00001, _i00003, _i00005, each its own files' image" "[ $ok -eq 1 ]"

# ---------------------------------------------------------------- lumen t1 on a 4-D DICOM folder (issue 40, item 11)
"$bin" t1 --in small --out out_t1_4d -q 2> t1_4d.err
check "t1 --in a 4-D DICOM folder without --flip-angles: exit 1, asks for one value per volume (no sidecar named)" \
  "[ \$? -eq 1 ] && grep -q \"flip angle missing for volume 1 ('small'): give --flip-angles LIST (20 values for the 20 volumes of this 4-D input)\" t1_4d.err && ! grep -q json t1_4d.err" ||
  cat t1_4d.err

# ---------------------------------------------------------------- several series in one folder
mkdir two && cp v9/* two/ && cp small/* two/
"$bin" convert two --list > list.txt 2> list.err
check "--list: both series with number, UID and file count" \
  "grep -qE '^18 .* qiba v6 tofts +111\$' list.txt && grep -qE '^7 .* small +40\$' list.txt" || cat list.txt list.err
"$bin" dce --dce two --series 18 --out pick18 $common 2> pick18.err || cat pick18.err
check "--series NUMBER (SeriesNumber 18) picks the series: the maps of its own folder" "same_maps dcm9 pick18"
"$bin" convert two --series 7 --out cvtwo -q 2> cvtwo.err || cat cvtwo.err
check "convert --series 7: only that series written" "[ -f cvtwo/7_small.nii.gz ] && [ \$(ls cvtwo | wc -l) -eq 2 ]"

exit $fail
