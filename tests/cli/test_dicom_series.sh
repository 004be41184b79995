#!/usr/bin/env bash
# DICOM series as the DCE input (docs/DICOM.md "Series"): the QIBA v6 Tofts phantom written with
# pydicom as one DICOM file per frame (TriggerTime per frame, RepetitionTime in ms, FlipAngle,
# 50 x 80) gives with `lumen dce --dce FOLDER` and no --dt/--tr/--flip-angle the same maps, voxel
# for voxel, as the NIfTI run of the same data (dcm2niix's conversion, --dt 0.5), and maps whose
# affine is the one dcm2niix gives for the tags (computed in dicom_series.py from the tags alone;
# it also equals the sform of the qiba NIfTI, which dcm2niix wrote); an oblique 2-slice series
# written in reverse slice order gives the maps of the same data as NIfTI in dcm2niix's layout;
# the run log names the header fields used and an explicit --tr/--flip-angle/--dt wins; a folder
# of two series is refused listing both; `lumen t1 --in` with six DICOM folders of the QIBA v4 VFA
# set equals the NIfTI run, --series picks one; a missing frame, a file with another
# orientation, no timing: one message naming the file and the field, nothing written.
# Enhanced MR (multi-frame, functional groups): the QIBA v6 data as ONE Enhanced MR Image Storage
# file (per-frame position, TemporalPositionIndex, FrameAcquisitionDateTime; shared orientation,
# pixel measures, MR timing, rescale 0.5/-100), alone and in a folder, gives the NIfTI run's maps;
# the oblique 2-slice data as one enhanced file (slices reversed, frames interleaved, trigger
# delays, a rescale that differs between frames) and as two files of one series (one per slice)
# give the classic series' maps; lumen_dicom_read (`lumen filter`) of it applies each frame's
# rescale (pydicom's pixel_array x slope + intercept); the oblique data as a Legacy Converted Enhanced
# file (TriggerTime, TR, FA, TE under their classic names in the Unassigned Converted Attributes
# sequences) gives the classic maps and a sidecar with the top-level and shared values; per-frame items != NumberOfFrames, a
# missing frame and a multi-frame file without functional groups are refused.
# Skips (77) only when Debian's pydicom/numpy are missing, lumen was built without DICOM (GDCM),
# or the reference data (LUMEN_REFDATA qiba/) are not there.
set -u
. "$(dirname "$0")/lib.sh"
need_dicom_series_inputs
ds="$py $LUMEN_CLI_TESTS/dicom_series.py"
common="--t1 1.0 --relaxivity 4.5 -q --no-report"

$ds small small --oblique || { echo "FAIL: writing the small series"; exit 1; }
if ! "$bin" dce --dce small --out probe $common --aif parker 2> probe_err.txt; then
  skip_without_dicom probe_err.txt
fi

# ---------------------------------------------------------------- QIBA v6 Tofts, one file per frame
uid1=$($ds qiba "$q6" s1 --uid 1.2.826.0.1.3680043.2.1125.1 --desc "dyn one") ||
  { echo "FAIL: writing the QIBA DICOM series"; exit 1; }
check "1321 DICOM files written" "[ \$(ls s1 | wc -l) -eq 1321 ]"
"$bin" dce --dce "$q6" --out nii --dt 0.5 $common 2> nii.err || { cat nii.err; echo "FAIL: the NIfTI run"; exit 1; }
"$bin" dce --dce s1 --out dcm $common 2> dcm.err
check "lumen dce --dce FOLDER without --dt/--tr/--flip-angle runs" "[ \$? -eq 0 ]" || cat dcm.err
for m in Ktrans ve kep sse r2 state; do
  check "map $m equals the NIfTI run's (values and affine)" \
    "$ds same nii/lumen_model-tofts_param-$m.nii.gz dcm/lumen_model-tofts_param-$m.nii.gz"
done
check "the maps' affine is dcm2niix's for the DICOM tags" "$ds affine s1 dcm/lumen_model-tofts_param-Ktrans.nii.gz"
check "... and the qiba NIfTI's sform (dcm2niix's own)" \
  "[ \"\$($ds sform '$q6')\" = \"\$($ds sform nii/lumen_model-tofts_param-Ktrans.nii.gz)\" ]"
check "the run log names the header fields used" \
  "grep -q \"times from the headers' TriggerTime\" dcm/lumen_runlog.txt &&
   grep -q \"FA 30 deg (DICOM headers 's1' FlipAngle), TR 0.005 s (DICOM headers 's1' RepetitionTime)\" dcm/lumen_runlog.txt" ||
  grep "read:\|stage A" dcm/lumen_runlog.txt

# explicit values win, and the run log says so
"$bin" dce --dce s1 --out over $common --tr 0.006 --flip-angle 25 --dt 0.4 2> over.err
check "--tr/--flip-angle/--dt win over the headers (run log)" \
  "grep -q 'times from --dt 0.4 s' over/lumen_runlog.txt && grep -q 'FA 25 deg (--flip-angle), TR 0.006 s (--tr)' over/lumen_runlog.txt" ||
  { cat over.err; grep "read:\|stage A" over/lumen_runlog.txt; }

# ---------------------------------------------------------------- QIBA v6 Tofts as ONE enhanced MR file
$ds enhanced "$q6" q6enh.dcm --uid 1.2.826.0.1.3680043.2.1125.7 > /dev/null || { echo "FAIL: writing the enhanced file"; exit 1; }
"$bin" dce --dce q6enh.dcm --out enh $common 2> enh.err
check "lumen dce --dce ENHANCED.dcm (one file, 1321 frames) without --dt/--tr/--flip-angle runs" "[ \$? -eq 0 ]" || cat enh.err
for m in Ktrans ve kep sse r2 state; do
  check "enhanced file: map $m equals the NIfTI run's (values and affine)" \
    "$ds same nii/lumen_model-tofts_param-$m.nii.gz enh/lumen_model-tofts_param-$m.nii.gz"
done
check "enhanced file: Ktrans equals the classic series run's (values and affine)" \
  "$ds same dcm/lumen_model-tofts_param-Ktrans.nii.gz enh/lumen_model-tofts_param-Ktrans.nii.gz"
check "enhanced file: the run log names FrameAcquisitionDateTime, FlipAngle and RepetitionTime" \
  "grep -q \"times from the headers' FrameAcquisitionDateTime\" enh/lumen_runlog.txt &&
   grep -q \"FA 30 deg (DICOM headers 'q6enh.dcm' FlipAngle), TR 0.005 s (DICOM headers 'q6enh.dcm' RepetitionTime)\" enh/lumen_runlog.txt" ||
  grep "read:\|stage A" enh/lumen_runlog.txt
mkdir enhdir && cp q6enh.dcm enhdir/
"$bin" dce --dce enhdir --out enhd $common 2> enhd.err || cat enhd.err
check "a folder holding the enhanced file: the same maps" \
  "$ds same enh/lumen_model-tofts_param-Ktrans.nii.gz enhd/lumen_model-tofts_param-Ktrans.nii.gz"

# ---------------------------------------------------------------- lumen t1 --in DICOM folders (QIBA v4 VFA)
v4=$(dirname "$q6")/../v4_etm_vfa
for a in 3 6 9 15 24 35; do $ds qiba "$v4/q4_vfa_fa$a.nii.gz" vfa$a --fa $a > /dev/null || echo "FAIL: writing vfa$a"; done
"$bin" t1 --in "$v4"/q4_vfa_fa{3,6,9,15,24,35}.nii.gz --out t1n -q --no-report 2> t1n.err || cat t1n.err
"$bin" t1 --in vfa3 vfa6 vfa9 vfa15 vfa24 vfa35 --out t1d -q --no-report 2> t1d.err || cat t1d.err
"$bin" t1 --in vfa3 vfa6 vfa9 vfa15 vfa24 vfa35 --out t1mem -q --no-report --memory-limit 1K 2> t1mem.err
rc=$?
check "t1 --in DICOM folders: --memory-limit refused from the headers (exit $rc), nothing written" \
  "[ $rc -ne 0 ] && grep -qF -- '--memory-limit: input refused' t1mem.err && [ ! -e t1mem ]" || cat t1mem.err
for m in T1map M0map model-vfa_param-r2; do
  check "t1 --in 6 DICOM folders (FlipAngle, TR from the headers): $m equals the NIfTI run's" \
    "$ds same t1n/lumen_$m.nii.gz t1d/lumen_$m.nii.gz"
done

# ---------------------------------------------------------------- an oblique 2-slice series
"$bin" dce --dce small --out smd $common --aif parker 2> smd.err || cat smd.err
"$bin" dce --dce small.nii --out smn $common --aif parker --dt 10 --tr 0.005 --flip-angle 30 2> smn.err || cat smn.err
check "oblique 2 slices (files in reverse slice order): Ktrans equals the NIfTI run's in dcm2niix's layout" \
  "$ds same smn/lumen_model-tofts_param-Ktrans.nii.gz smd/lumen_model-tofts_param-Ktrans.nii.gz"
check "oblique 2 slices: affine is dcm2niix's for the tags" "$ds affine small smd/lumen_model-tofts_param-Ktrans.nii.gz"

# the same as enhanced MR: one file (slices reversed, frames interleaved, NominalCardiacTriggerDelayTime,
# each frame its own PixelValueTransformation), and two files of one series (one slice each) in a folder
$ds enhanced small.nii senh.dcm > /dev/null || echo "FAIL: writing senh.dcm"
"$bin" dce --dce senh.dcm --out sme $common --aif parker 2> sme.err || cat sme.err
check "oblique 2 slices as one enhanced file: Ktrans equals the classic series' (values and affine)" \
  "$ds same smd/lumen_model-tofts_param-Ktrans.nii.gz sme/lumen_model-tofts_param-Ktrans.nii.gz &&
   grep -q \"times from the headers' NominalCardiacTriggerDelayTime\" sme/lumen_runlog.txt"
$ds enhanced small.nii senh2/z1.dcm --slice 1 --uid 1.2.826.0.1.3680043.2.1125.8 > /dev/null &&
  $ds enhanced small.nii senh2/z0.dcm --slice 0 --uid 1.2.826.0.1.3680043.2.1125.8 > /dev/null || echo "FAIL: writing senh2"
"$bin" dce --dce senh2 --out sm2 $common --aif parker 2> sm2.err || cat sm2.err
check "two enhanced files of one series (a slice each): the same Ktrans" \
  "$ds same smd/lumen_model-tofts_param-Ktrans.nii.gz sm2/lumen_model-tofts_param-Ktrans.nii.gz"
# the same as a Legacy Converted Enhanced MR file (what PACS and PixelMed's converter make of a classic
# series): TriggerTime per frame, RepetitionTime/FlipAngle/EchoTime shared, all in the Unassigned
# Converted Attributes sequences, Manufacturer and MagneticFieldStrength at the top level
$ds enhanced small.nii slegacy.dcm --legacy > /dev/null || echo "FAIL: writing slegacy.dcm"
"$bin" dce --dce slegacy.dcm --out sml $common --aif parker 2> sml.err || cat sml.err
check "Legacy Converted Enhanced: Ktrans equals the classic series' (values and affine), times from TriggerTime" \
  "$ds same smd/lumen_model-tofts_param-Ktrans.nii.gz sml/lumen_model-tofts_param-Ktrans.nii.gz &&
   grep -q \"times from the headers' TriggerTime\" sml/lumen_runlog.txt &&
   grep -q \"FA 30 deg (DICOM headers 'slegacy.dcm' FlipAngle), TR 0.005 s\" sml/lumen_runlog.txt" || cat sml/lumen_runlog.txt
"$bin" convert slegacy.dcm --out slegacy_cv -q 2> slegacy_cv.err || cat slegacy_cv.err
check "Legacy Converted Enhanced: the sidecar has EchoTime (shared), Manufacturer, MagneticFieldStrength, SeriesNumber (top level)" \
  "$py -c \"import json,glob,sys; j=json.load(open(glob.glob('slegacy_cv/*.json')[0])); sys.exit(0 if j['EchoTime'] == 0.0025 and j['Manufacturer'] == 'LegacyConverter' and j['MagneticFieldStrength'] == 3 and j['SeriesNumber'] == 21 and j['FrameOrder'] == 'TriggerTime' else 1)\"" ||
  cat slegacy_cv/*.json
"$bin" filter convolve senh.dcm senh_read.nii --kernel 1 -q 2> senh_read.err || cat senh_read.err
check "lumen_dicom_read of the enhanced file applies each frame's rescale (pydicom pixel_array x slope + intercept)" \
  "$ds pixels senh.dcm senh_read.nii"

# frame times from AcquisitionTime, non-uniform: the same maps as the NIfTI with those times in its sidecar
$ds small nonu --oblique --acquisition-time --nonuniform || echo "FAIL: writing nonu"
"$bin" dce --dce nonu --out nud $common --aif parker 2> nud.err || cat nud.err
"$bin" dce --dce nonu.nii --out nun $common --aif parker 2> nun.err || cat nun.err
check "non-uniform AcquisitionTime frames: Ktrans equals the NIfTI run with FrameTimesStart" \
  "$ds same nun/lumen_model-tofts_param-Ktrans.nii.gz nud/lumen_model-tofts_param-Ktrans.nii.gz &&
   grep -q \"times from the headers' AcquisitionTime\" nud/lumen_runlog.txt"
check "... and differs from the uniform run (the times matter)" \
  "! $ds same smd/lumen_model-tofts_param-Ktrans.nii.gz nud/lumen_model-tofts_param-Ktrans.nii.gz > /dev/null"

# ---------------------------------------------------------------- errors
refused() {  # ID WORDS... : the last run (rc, $1.err, out_$1) refused with a message holding each WORD
  local id=$1 rc=$2; shift 2
  local ok="[ $rc -ne 0 ] && [ ! -e out_$id/lumen_model-tofts_param-Ktrans.nii.gz ]"
  for w in "$@"; do ok="$ok && grep -qF -- '$w' $id.err"; done
  check "$id: refused (exit $rc) naming $*; no map written" "$ok" || cat "$id.err"
}
# two series in one folder: both listed; --series picks one
mkdir two && cp s1/* two/ && $ds small other >/dev/null && cp other/f00[0-4].dcm two/
uid2=$("$py" -c "import pydicom; print(pydicom.dcmread('other/f000.dcm').SeriesInstanceUID)")
"$bin" dce --dce two --out out_two $common 2> two.err
refused two $? "holds several series" "$uid1" '"dyn one"  1321 files' "$uid2" '"small"  5 files'
"$bin" dce --dce two --series "$uid1" --out pick $common 2> pick.err || cat pick.err
check "--series UID picks one series: the same maps as its own folder" \
  "$ds same dcm/lumen_model-tofts_param-Ktrans.nii.gz pick/lumen_model-tofts_param-Ktrans.nii.gz"
"$bin" dce --dce two --series 1.2.3.999 --out out_nouid $common 2> nouid.err
refused nouid $? "no file of series 1.2.3.999"
# --memory-limit holds for DICOM inputs: the series' size from its headers (1321 images of 50 x 80
# float32 = 21 MB) is refused before any pixel is read and before the output folder is made
"$bin" dce --dce s1 --out out_memlim $common --memory-limit 10M 2> memlim.err
refused memlim $? "--memory-limit: DCE series refused" "'s1'" "1321 images of 50 x 80 need more than the memory limit"
check "memlim: no output folder" "[ ! -e out_memlim ]"
"$bin" dce --dce two --series "$uid1" --out out_memlim2 $common --memory-limit 10M 2> memlim2.err
refused memlim2 $? "--memory-limit: DCE series refused" "1321 images"
"$bin" dce --dce s1 --out out_memok $common --memory-limit 2G 2> memok.err || cat memok.err
check "--memory-limit above the series' size: the same maps" \
  "$ds same dcm/lumen_model-tofts_param-Ktrans.nii.gz out_memok/lumen_model-tofts_param-Ktrans.nii.gz"
# a missing frame: one file of the second slice gone
cp -r small missing && rm missing/f030.dcm
"$bin" dce --dce missing --out out_missing $common --aif parker 2> missing.err
refused missing $? "missing/f0" "missing frame" "has 19 files, other slices 20"
# a file with another orientation
cp -r small orient && $ds retag orient/f005.dcm 'ImageOrientationPatient=1\0\0\0\0\1'
"$bin" dce --dce orient --out out_orient $common --aif parker 2> orient.err
refused orient $? "orient/f005.dcm" "inconsistent geometry: ImageOrientationPatient (0020,0037)"
# another pixel spacing
cp -r small spacing && $ds retag spacing/f011.dcm 'PixelSpacing=1.5\0.9'
"$bin" dce --dce spacing --out out_spacing $common --aif parker 2> spacing.err
refused spacing $? "spacing/f011.dcm" "inconsistent geometry: PixelSpacing (0028,0030)"
# no timing: every TriggerTime removed, frames cannot be ordered
cp -r small notime && "$py" - <<'PYEOF'
import os, pydicom
for f in os.listdir('notime'):
    d = pydicom.dcmread('notime/' + f)
    del d.TriggerTime
    d.save_as('notime/' + f, write_like_original=False)
PYEOF
"$bin" dce --dce notime --out out_notime $common --aif parker 2> notime.err
refused notime $? "no timing" "TriggerTime (0018,1060)"
# frames that do not line up across slices: the first slice's frame 5 shifted by 2 s
cp -r small shifted && $ds retag shifted/f025.dcm 'TriggerTime=52000'
"$bin" dce --dce shifted --out out_shifted $common --aif parker 2> shifted.err
refused shifted $? "shifted/f005.dcm" "frame 5" "shifted/f025.dcm" "do not line up"
# one file with another flip angle: refused, never averaged
cp -r small fa && $ds retag fa/f010.dcm 'FlipAngle=25'
"$bin" dce --dce fa --out out_fa $common --aif parker 2> fa.err
refused fa $? "fa/f010.dcm" "FlipAngle (0018,1314)" "one series has one flip angle"
# enhanced: per-frame items one fewer than NumberOfFrames; a frame missing at one slice; a
# multi-frame file without functional groups
$ds enhanced small.nii enh_items.dcm --items -1 > /dev/null
"$bin" dce --dce enh_items.dcm --out out_enh_items $common --aif parker 2> enh_items.err
refused enh_items $? "enh_items.dcm" "PerFrameFunctionalGroupsSequence (5200,9230) has 39 items, expected NumberOfFrames (0028,0008) = 40"
$ds enhanced small.nii enh_missing.dcm --drop 25 > /dev/null
"$bin" dce --dce enh_missing.dcm --out out_enh_missing $common --aif parker 2> enh_missing.err
refused enh_missing $? "enh_missing.dcm frame" "missing frame" "has 19 frames, other slices 20"
$ds enhanced small.nii enh_plain.dcm --no-groups > /dev/null
"$bin" dce --dce enh_plain.dcm --out out_enh_plain $common --aif parker 2> enh_plain.err
# no orientation either: its 40 frames read as slices of unknown geometry, as dcm2niix reads it (a
# warning says so, tests/cli/test_dicom_thirdparty.sh); not the 4-D series lumen dce needs
refused enh_plain $? "enh_plain.dcm" "is 3-D (5x4x40x1): expected a 4-D series"
# with an orientation and a position but neither functional groups nor GridFrameOffsetVector: refused
"$py" - <<'PYEOF'
import pydicom
d = pydicom.dcmread('enh_plain.dcm')
d.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
d.ImagePositionPatient = [0, 0, 0]
d.save_as('enh_plain_iop.dcm')
PYEOF
"$bin" dce --dce enh_plain_iop.dcm --out out_enh_plain_iop $common --aif parker 2> enh_plain_iop.err
refused enh_plain_iop $? "enh_plain_iop.dcm" "NumberOfFrames is 40" "no PerFrameFunctionalGroupsSequence (5200,9230) nor GridFrameOffsetVector"
# --series with a NIfTI series
"$bin" dce --dce "$q6" --series 1.2.3 --dt 0.5 --out out_niiseries $common 2> niiseries.err
refused niiseries $? "--series 1.2.3" "is not a DICOM folder or file"

exit $fail
