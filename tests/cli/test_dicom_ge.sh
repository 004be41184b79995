#!/usr/bin/env bash
# Real scanner DICOM against dcm2niix (issue 38): every series of the GE data in
# ../shared/data/dicom_ge/In (classic files of a GE 3T: fMRI time series with one AcquisitionTime
# for a whole series and no TriggerTime, interleaved and multiband slice orders, group delays, and
# a 2-slice x 7-volume oblique DWI in one folder), converted by `lumen convert`, equals the NIfTI
# dcm2niix wrote in Ref/: the same shape, every voxel equal, the volumes in the same order (after
# bringing both to one orientation, tests/cli/dcm2niix_compare.py, numpy only), the affines within
# 1e-3 mm, and pixdim[4] and the sidecar's RepetitionTime equal to Ref's RepetitionTime (with GE's
# group delay). The same GE volumes written as Siemens mosaics (tests/cli/make_mosaic.py: tiles,
# NumberOfImagesInMosaic, a CSA header, the mosaic's position), ascending and descending, give
# dcm2niix's Ref too. lumen.read_image(FOLDER) in Python returns convert's array, affine and sidecar.
# Skips (77) when the reference data are absent, lumen has no DICOM (GDCM), or Debian's numpy is missing.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
py=/usr/bin/python3
ge=${LUMEN_REFDATA:-${LUMEN_REFDATA_DEFAULT:-}}/dicom_ge
[ -d "$ge/In" ] && [ -d "$ge/Ref" ] || { echo "reference data dicom_ge/ not found (LUMEN_REFDATA): skipped"; exit 77; }
"$py" -c 'import numpy' 2>/dev/null || { echo "Debian python3-numpy missing (scripts/setup.sh): skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"
cmp_ref="$py $LUMEN_CLI_TESTS/dcm2niix_compare.py same"

"$bin" convert "$ge/In" --out cv > convert.out 2> convert.err
rc=$?
[ $rc -ne 0 ] && skip_without_dicom convert.err
check "lumen convert dicom_ge/In: exit 0, 8 of 8 series" "[ $rc -eq 0 ] && grep -q '^8 of 8 series converted' convert.out" ||
  cat convert.out convert.err
# lumen's name -> dcm2niix's Ref name (Ref: DESCRIPTION_SERIESNUMBER)
while read -r ours ref; do
  check "$ours equals dcm2niix's $ref (voxels, volume order, affine, RepetitionTime)" \
    "$cmp_ref cv/$ours.nii.gz $ge/Ref/$ref.nii $ge/Ref/$ref.json > cmp_$ours.txt" || cat "cmp_$ours.txt"
done <<'EOF'
1_Ax_DWI_TENSOR_R2 Ax_DWI_TENSOR_R2_1
2_epiRT_IntAsc_GD0 epiRT_IntAsc_GD0_2
2_epiRT_IntAsc_GD3s epiRT_IntAsc_GD3s_2
3_epiRT_IntAsc_GD33 epiRT_IntAsc_GD33_3
4_epiRT_IntAsc_GD55 epiRT_IntAsc_GD55_4
5_epiRT_IntAscHB3_GD0 epiRT_IntAscHB3_GD0_5
6_epiRT_IntDesHB3_GD33 epiRT_IntDesHB3_GD33_6
7_epiRT_IntDesHB3_GD55 epiRT_IntDesHB3_GD55_7
EOF
check "the GE fMRI's sidecar: frames by InstanceNumber, AcquisitionTime named as one value for several frames, no FrameTimesStart" \
  "$py -c \"import json,sys; j=json.load(open('cv/2_epiRT_IntAsc_GD0.json')); sys.exit(0 if j['FrameOrder'] == 'InstanceNumber' and 'not by AcquisitionTime: one value' in j['FrameTimingNote'] and 'FrameTimesStart' not in j and j['FlipAngle'] == 80 and j['Manufacturer'] == 'GE MEDICAL SYSTEMS' else 1)\""
check "GE group delay: RepetitionTime 5 s (2 s TR + 3 s delay), RepetitionTimeExcitation 2 s" \
  "$py -c \"import json,sys; j=json.load(open('cv/2_epiRT_IntAsc_GD3s.json')); sys.exit(0 if j['RepetitionTime'] == 5 and j['RepetitionTimeExcitation'] == 2 else 1)\""

# the same folder twice gives no new output without --overwrite; one series by number; --uncompressed
"$bin" convert "$ge/In" --out cv -q 2> again.err
check "a second convert into the same folder: refused for existing outputs (exit 1)" "[ \$? -eq 1 ] && grep -q 'exists' again.err" || cat again.err
"$bin" convert "$ge/In/SliceTimingRT" --series 5 --uncompressed --out one -q 2> one.err || cat one.err
check "--series 5 --uncompressed: one .nii and its sidecar" "[ -f one/5_epiRT_IntAscHB3_GD0.nii ] && [ \$(ls one | wc -l) -eq 2 ]"
check "the .nii equals dcm2niix's Ref" "$cmp_ref one/5_epiRT_IntAscHB3_GD0.nii $ge/Ref/epiRT_IntAscHB3_GD0_5.nii > cmp_one.txt" || cat cmp_one.txt

# ---------------------------------------------------------------- lumen filter on a series folder
mkdir vol1 && for i in $(seq -w 1 32); do cp "$ge/In/SliceTimingRT/2_epiRT_IntAsc_GD0/00$i.dcm" vol1/; done
"$bin" convert vol1 --out cvvol1 -q 2> cvvol1.err || cat cvvol1.err
"$bin" filter gaussian vol1 f_dicom.nii --sigma 1.5 -q 2> f_dicom.err || cat f_dicom.err
"$bin" filter gaussian cvvol1/2_epiRT_IntAsc_GD0.nii.gz f_nifti.nii --sigma 1.5 -q 2> f_nifti.err || cat f_nifti.err
check "lumen filter on a DICOM series folder (one volume): the result of the same filter on its converted NIfTI" \
  "$cmp_ref f_dicom.nii f_nifti.nii > cmp_filter.txt" || cat cmp_filter.txt
"$bin" filter gaussian "$ge/In/01_Ax_DWI_TENSOR_R2" f_dwi.nii -q 2> f_dwi.err
check "lumen filter on a series of 7 volumes: refused as a 4-D NIfTI is (exit 1), pointing to lumen convert" \
  "[ \$? -eq 1 ] && grep -q 'a series of 7 volumes (a 4-D image), expected a 2-D or 3-D image' f_dwi.err && [ ! -e f_dwi.nii ]" ||
  cat f_dwi.err

# ---------------------------------------------------------------- Siemens mosaic made of the GE volumes
if "$py" -c 'import pydicom' 2>/dev/null; then
  for order in ascending descending; do
    "$py" -W ignore "$LUMEN_CLI_TESTS/make_mosaic.py" "$ge/In/SliceTimingRT/2_epiRT_IntAsc_GD0" "mos_$order" \
      $([ $order = descending ] && echo --descending) || echo "FAIL: make_mosaic $order"
    "$bin" convert "mos_$order" --out "cv_$order" -q 2> "mos_$order.err" || cat "mos_$order.err"
    check "Siemens mosaic ($order tiles, CSA SliceNormalVector): dcm2niix's Ref of the slices" \
      "$cmp_ref cv_$order/2_epiRT_IntAsc_GD0.nii.gz $ge/Ref/epiRT_IntAsc_GD0_2.nii > cmp_$order.txt" || cat "cmp_$order.txt"
  done
  # hostile mosaics: a tile count the mosaic's size cannot hold; a CSA header of random bytes and
  # lengths past its end (ignored: the tiles then ascend along the cross product)
  cp -r mos_ascending mos_bad && cp -r mos_ascending mos_csa && "$py" -W ignore - <<'PYEOF'
import os, random, struct, pydicom
random.seed(3)
for f in sorted(os.listdir('mos_bad')):
    d = pydicom.dcmread('mos_bad/' + f)
    d[0x0019100A].value = 37
    d.save_as('mos_bad/' + f, write_like_original=False)
for i, f in enumerate(sorted(os.listdir('mos_csa'))):
    d = pydicom.dcmread('mos_csa/' + f)
    junk = bytes(random.randrange(256) for _ in range(300))
    if i == 1:  # a plausible header whose item claims 2^31 values / bytes
        junk = b'SV10\x04\x03\x02\x01' + struct.pack('<II', 1, 77) + b'SliceNormalVector'.ljust(64, b'\0') + \
               struct.pack('<i4siii', 3, b'FD\0\0', 3, 2**31 - 1, 77) + struct.pack('<4i', 2**31 - 1, 2**31 - 1, 77, 1)
    d[0x00291010].value = junk
    d.save_as('mos_csa/' + f, write_like_original=False)
PYEOF
  "$bin" convert mos_bad --out cv_bad -q 2> mos_bad.err
  check "a mosaic of 37 images in 384 x 384: refused (exit 1) naming NumberOfImagesInMosaic" \
    "[ \$? -eq 1 ] && grep -q 'a mosaic of 37 images (NumberOfImagesInMosaic, 0019,100A) needs Rows and Columns divisible by 7' mos_bad.err" ||
    cat mos_bad.err
  "$bin" convert mos_csa --out cv_csa -q 2> mos_csa.err
  check "malformed CSA headers are ignored: the mosaics still give dcm2niix's Ref" \
    "$cmp_ref cv_csa/2_epiRT_IntAsc_GD0.nii.gz $ge/Ref/epiRT_IntAsc_GD0_2.nii > cmp_csa.txt" || cat cmp_csa.txt mos_csa.err
else
  echo "note: Debian python3-pydicom missing: the mosaic checks did not run"
fi

# ---------------------------------------------------------------- Python: lumen.read_image(FOLDER)
lib=$(dirname "$bin")/liblumen.so
if [ -f "$lib" ] && ldd "$lib" 2>/dev/null | grep -q libasan; then
  echo "note: liblumen.so is built with -fsanitize=address (not loadable into Python): the Python check did not run"
elif [ -f "$lib" ]; then
  LUMEN_LIBRARY="$lib" PYTHONPATH="${LUMEN_SOURCE_DIR:-$LUMEN_CLI_TESTS/../..}/python" "$py" - "$ge" > py.out 2>&1 <<'PYEOF'
import json, sys
import numpy as np
sys.path.insert(0, __import__('os').environ['LUMEN_CLI_TESTS'])
from dcm2niix_compare import nii
import lumen
ge = sys.argv[1]
a, meta = lumen.read_image(ge + '/In/01_Ax_DWI_TENSOR_R2')
ref, A, pix = nii('cv/1_Ax_DWI_TENSOR_R2.nii.gz')
side = json.load(open('cv/1_Ax_DWI_TENSOR_R2.json'))
ok = a.shape == (7, 2, 256, 256) and np.array_equal(a, ref.transpose()) and np.allclose(meta['affine'], A, atol=1e-4)
ok = ok and meta['frame_order'] == 'InstanceNumber' and meta['frames'] == 7 and meta['sidecar'] == side
try:
    lumen.read_image(ge + '/In/SliceTimingRT')
    ok = False
except lumen.LumenError as e:
    ok = ok and 'several series' in str(e)
b, m2 = lumen.read_image(ge + '/In/SliceTimingRT', series='3')
ok = ok and b.shape == (3, 32, 64, 64) and m2['series_number'] == 3
print('python ok' if ok else 'python FAILED: %s %s' % (a.shape, {k: meta[k] for k in ('frame_order', 'frames')}))
PYEOF
  check "lumen.read_image(FOLDER): convert's array, affine and sidecar; several series refused; series='3' picks" \
    "grep -q 'python ok' py.out" || cat py.out
else
  echo "note: no liblumen.so beside $bin: the Python check did not run"
fi

# lumen dce on a GE series without relaxivity and frame times: both missing values in one message
# whose hints name DICOM attributes, never a sidecar (issue 39 item 6)
"$bin" dce --dce "$ge/In/SliceTimingRT/2_epiRT_IntAsc_GD0" --out dce_missing --t1 1 -q > dm.out 2> dm.err; rc=$?
check "dce on a GE folder: relaxivity and frame times missing, one message naming DICOM attributes" \
  "[ \$rc -ne 0 ] && grep -q 'lacks 2 required values: relaxivity: .*DICOM has no relaxivity attribute: ContrastBolusAgent (0018,0010).*; frame times: give --dt SECONDS (no TriggerTime (0018,1060)' dm.err && ! grep -q '[.]json' dm.err" ||
  cat dm.err

exit $fail