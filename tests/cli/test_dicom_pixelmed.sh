#!/usr/bin/env bash
# Legacy Converted Enhanced MR images written by a third-party converter, PixelMed's
# MultiFrameImageFactory (Debian pixelmed-apps, Java), the way a PACS turns classic series into
# one multi-frame file each: (1) the real GE 3T DWI of ../shared/data/dicom_ge/In/01_Ax_DWI_TENSOR_R2
# converts to dcm2niix's Ref (voxels, volume order, affine; tests/cli/dcm2niix_compare.py) with
# the sidecar's Manufacturer, field strength, EchoTime and SeriesNumber of the classic files;
# (2) the QIBA v6 Tofts series (written per frame by dicom_series.py, TriggerTime per frame),
# converted by PixelMed, which keeps TriggerTime, RepetitionTime and FlipAngle in the Unassigned
# Per-Frame / Shared Converted Attributes sequences, gives `lumen dce` maps equal voxel for voxel to
# those of the classic series, with the times from TriggerTime. test_dicom_series.sh checks the
# same layout written by dicom_series.py, which needs no Java.
# Skips (77) without java and /usr/share/java/pixelmed.jar (apt install pixelmed-apps), Debian's
# pydicom/numpy, the reference data, or DICOM support.
set -u
jar=/usr/share/java/pixelmed.jar
command -v java > /dev/null && [ -f "$jar" ] ||
  { echo "PixelMed (Debian pixelmed-apps: java and $jar) not installed: skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"
need_dicom_series_inputs
ge=${LUMEN_REFDATA:-${LUMEN_REFDATA_DEFAULT:-}}/dicom_ge
[ -d "$ge/In/01_Ax_DWI_TENSOR_R2" ] || { echo "reference data dicom_ge/ not found (LUMEN_REFDATA): skipped"; exit 77; }
ds="$py $LUMEN_CLI_TESTS/dicom_series.py"
pixelmed() { mkdir "$2" && java -Xmx1g -cp "$jar" com.pixelmed.dicom.MultiFrameImageFactory "$1" "$2" > "$2.log" 2>&1; }

# ---------------------------------------------------------------- (1) the GE DWI
cp -r "$ge/In/01_Ax_DWI_TENSOR_R2" dwi
check "PixelMed: the GE DWI as one Legacy Converted Enhanced MR file" \
  "pixelmed dwi dwi_lc && [ \$(ls dwi_lc | wc -l) -eq 1 ]" || cat dwi_lc.log
"$bin" convert dwi_lc --out cv_lc > cv_lc.out 2> cv_lc.err
rc=$?
[ $rc -ne 0 ] && skip_without_dicom cv_lc.err
check "the Legacy Converted DWI: converted" "[ $rc -eq 0 ]" || cat cv_lc.err
check "the Legacy Converted DWI equals dcm2niix's Ref of the classic files (voxels, volume order, affine)" \
  "$py $LUMEN_CLI_TESTS/dcm2niix_compare.py same cv_lc/1_Ax_DWI_TENSOR_R2.nii.gz $ge/Ref/Ax_DWI_TENSOR_R2_1.nii > cmp_lc.txt" ||
  cat cmp_lc.txt
"$bin" convert dwi --out cv_classic -q 2> cv_classic.err || cat cv_classic.err
check "its sidecar: Manufacturer, model, field strength, protocol, SeriesNumber and EchoTime those of the classic files" \
  "$py -c \"
import json, sys
a = json.load(open('cv_classic/1_Ax_DWI_TENSOR_R2.json')); b = json.load(open('cv_lc/1_Ax_DWI_TENSOR_R2.json'))
keys = ['Manufacturer', 'ManufacturersModelName', 'MagneticFieldStrength', 'ProtocolName', 'SeriesNumber', 'EchoTime', 'RepetitionTime']
bad = [k for k in keys if k not in b or b[k] != a.get(k)]
print('  differ:', {k: (a.get(k), b.get(k)) for k in bad}) if bad else None
sys.exit(1 if bad else 0)\""

# ---------------------------------------------------------------- (2) a DCE series
$ds qiba "$q6" q6 > /dev/null || { echo "FAIL: writing the QIBA series"; exit 1; }
check "PixelMed: the QIBA v6 series (1321 frames) as one Legacy Converted Enhanced MR file" \
  "pixelmed q6 q6_lc && [ \$(ls q6_lc | wc -l) -eq 1 ]" || cat q6_lc.log
common="--t1 1.0 --relaxivity 4.5 -q --no-report --aif parker"
"$bin" dce --dce q6 --out d_classic $common 2> d_classic.err || cat d_classic.err
"$bin" dce --dce q6_lc --out d_lc $common 2> d_lc.err || cat d_lc.err
for m in Ktrans ve; do
  check "Legacy Converted DCE: $m equals the classic series' (values and affine)" \
    "$ds same d_classic/lumen_model-tofts_param-$m.nii.gz d_lc/lumen_model-tofts_param-$m.nii.gz"
done
check "Legacy Converted DCE: frame times from TriggerTime, FA and TR from the shared attributes (run log)" \
  "grep -q \"times from the headers' TriggerTime\" d_lc/lumen_runlog.txt &&
   grep -q \"FA 30 deg (DICOM headers 'q6_lc' FlipAngle), TR 0.005 s (DICOM headers 'q6_lc' RepetitionTime)\" d_lc/lumen_runlog.txt" ||
  cat d_lc/lumen_runlog.txt
exit $fail
