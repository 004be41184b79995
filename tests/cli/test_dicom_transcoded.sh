#!/usr/bin/env bash
# A real scanner series in the transfer syntaxes a PACS or an anonymiser hands back, written by a
# third-party tool (GDCM's gdcmconv), not by lumen or its tests: the GE 3T DWI of
# ../shared/data/dicom_ge/In/01_Ax_DWI_TENSOR_R2 (14 classic files, int16) transcoded file by file
# to implicit VR, deflate, RLE, JPEG lossless (process 14), JPEG-LS lossless and JPEG 2000
# lossless, and each compressed one again with its frame split over several fragments
# (gdcmconv --split). Every conversion is byte for byte the conversion of the uncompressed files
# (NIfTI and sidecar), which itself equals dcm2niix's Ref (tests/cli/dcm2niix_compare.py). RLE
# allows one fragment per frame (DICOM PS3.5 A.4.2); a split single frame is read as one with a
# warning, as DCMTK and pydicom read it. JPEG-LS near-lossless with an allowed error of 2: every
# voxel within 2 of the original, and a warning that the values are not the scanner's. gdcmconv --jpeg --lossy writes 16-bit lossy (SOF1) frames, which
# ITU-T T.81 does not allow and which GDCM decodes to -32768/32767: refused, naming the precision.
# A multi-frame enhanced file (written by dicom_series.py) compressed by gdcmconv and re-encapsulated by
# pydicom with every frame in 3 fragments (with and without a basic offset table): read as the
# uncompressed file; the same RLE file is refused (PS3.5 A.4.2), saying why; the enhanced file in
# implicit VR (gdcmconv --implicit, pydicom), whose sequences have defined lengths: the same NIfTI.
# The series de-identified by gdcmanon (PS3.15 basic profile): the same NIfTI.
# Skips (77) without gdcmconv (Debian libgdcm-tools), the reference data, numpy or DICOM support;
# fails without Debian's pydicom (setup.sh installs it with gdcmconv).
set -u
py=/usr/bin/python3
ge=${LUMEN_REFDATA:-${LUMEN_REFDATA_DEFAULT:-}}/dicom_ge
[ -d "$ge/In/01_Ax_DWI_TENSOR_R2" ] || { echo "reference data dicom_ge/ not found (LUMEN_REFDATA): skipped"; exit 77; }
command -v gdcmconv > /dev/null || { echo "gdcmconv missing (Debian libgdcm-tools, scripts/setup.sh): skipped"; exit 77; }
"$py" -c 'import numpy' 2>/dev/null || { echo "Debian python3-numpy missing (scripts/setup.sh): skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"
src=$ge/In/01_Ax_DWI_TENSOR_R2
name=1_Ax_DWI_TENSOR_R2

# transcode NAME GDCMCONV-OPTIONS... [FROM]: every file of FROM (default: the original series) into in_NAME
transcode() {
  local to=$1 from=$src
  shift
  case ${!#} in in_*) from=${!#}; set -- "${@:1:$#-1}" ;; esac
  mkdir "in_$to" || return 1
  for f in "$from"/*; do
    gdcmconv --quiet "$@" "$f" "in_$to/$(basename "$f")" > /dev/null 2>&1 || { echo "  gdcmconv $* $f failed"; return 1; }
  done
}
convert_ok() {  # convert_ok NAME: lumen convert in_NAME --out out_NAME, uncompressed
  "$bin" convert "in_$1" --out "out_$1" --uncompressed > "$1.out" 2> "$1.err"
}

check "gdcmconv --raw: the uncompressed files written" "transcode raw --raw"
convert_ok raw
rc=$?
[ $rc -ne 0 ] && skip_without_dicom raw.err
check "uncompressed: converted" "[ $rc -eq 0 ] && [ -f out_raw/$name.nii ]" || cat raw.err
check "uncompressed: equals dcm2niix's Ref (voxels, volume order, affine)" \
  "$py $LUMEN_CLI_TESTS/dcm2niix_compare.py same out_raw/$name.nii $ge/Ref/Ax_DWI_TENSOR_R2_1.nii > cmp_raw.txt" ||
  cat cmp_raw.txt

lossless=(implicit:--implicit deflated:--deflated rle:--rle jpeg:--jpeg jpegls:--jpegls j2k:--j2k)
for spec in "${lossless[@]}"; do
  t=${spec%%:*} opt=${spec#*:}
  transcode "$t" "$opt" || { check "gdcmconv $opt" false; continue; }
  convert_ok "$t"
  check "$t ($opt): converted" "[ $? -eq 0 ]" || cat "$t.err"
  check "$t: NIfTI and sidecar byte for byte those of the uncompressed files" \
    "cmp out_raw/$name.nii out_$t/$name.nii && cmp out_raw/$name.json out_$t/$name.json"
done
for t in rle jpeg jpegls j2k; do  # every frame in fragments of at most 3000 bytes
  transcode "${t}_split" --split 3000 "in_$t" || { check "gdcmconv --split 3000 in_$t" false; continue; }
  check "${t}_split: the frames are split (more than 3 fragments in the first file)" \
    "$py -c \"import pydicom,sys; d=pydicom.dcmread('in_${t}_split/i22.MRDC.1'); sys.exit(0 if d.PixelData.count(b'\\xfe\\xff\\x00\\xe0') > 4 else 1)\""
  convert_ok "${t}_split"
  check "${t}_split: converted" "[ $? -eq 0 ]" || cat "${t}_split.err"
  check "${t}_split: NIfTI and sidecar those of the uncompressed files" \
    "cmp out_raw/$name.nii out_${t}_split/$name.nii && cmp out_raw/$name.json out_${t}_split/$name.json"
done
check "rle_split: a warning per file naming the fragments and PS3.5 A.4.2" \
  "[ \$(grep -c \"its RLE frame is split over [0-9]* fragments (DICOM PS3.5 A.4.2 wants one\" rle_split.err) -eq 14 ]" ||
  cat rle_split.err
check "the lossless ones: no warning" "! grep -q warning implicit.err deflated.err rle.err jpeg.err jpegls.err j2k.err"

# JPEG-LS near-lossless, allowed error 2: within 2 of the original, and not all equal (it is lossy)
transcode jpegls_e2 --jpegls --lossy -e 2
convert_ok jpegls_e2
check "JPEG-LS near-lossless (error 2): converted" "[ $? -eq 0 ]" || cat jpegls_e2.err
check "JPEG-LS near-lossless: one warning for the series that its 14 files' values are not the scanner's" \
  "grep -q \"'in_jpegls_e2/i[0-9]*.MRDC.[0-9]*': 14 of the 14 files of its series are lossy compressed (LossyImageCompression (0028,2110) 01\" jpegls_e2.err &&
   [ \$(grep -c 'lossy compressed' jpegls_e2.err) -eq 1 ]" || cat jpegls_e2.err
"$bin" filter convolve in_jpegls_e2/i22.MRDC.1 one_lossy.nii --kernel 1 -q 2> one_lossy.err
check "JPEG-LS near-lossless, one file read alone: the warning names the file and LossyImageCompression" \
  "grep -q \"i22.MRDC.1': lossy compressed (LossyImageCompression (0028,2110) is 01): its values differ from the scanner's\" one_lossy.err" ||
  cat one_lossy.err
check "JPEG-LS near-lossless: every voxel within 2 of the original, some differ" \
  "$py -c \"
import sys; sys.path.insert(0, '$LUMEN_CLI_TESTS'); import dcm2niix_compare as c, numpy as np
a = c.nii('out_raw/$name.nii')[0]; b = c.nii('out_jpegls_e2/$name.nii')[0]
d = np.abs(a - b); print('  max |difference|', d.max(), 'voxels differing', int((d > 0).sum()))
sys.exit(0 if a.shape == b.shape and d.max() <= 2 and d.max() > 0 else 1)\""

# ---------------------------------------------------------------- de-identified by GDCM's gdcmanon
# (PS3.15 Basic Application Level Confidentiality Profile: new UIDs, names and dates removed or
# replaced, the private tags kept): the same voxels and affine as the original series
if command -v gdcmanon > /dev/null && command -v openssl > /dev/null; then
  openssl req -x509 -newkey rsa:2048 -keyout anon_key.pem -out anon_cert.pem -days 1 -nodes -subj /CN=lumen-test \
    > /dev/null 2>&1 && gdcmanon -e -r -c anon_cert.pem -i "$src" -o in_anon > anon.log 2>&1 ||
    { check "gdcmanon: the series de-identified" false; cat anon.log; }
  "$bin" convert in_anon --out out_anon --uncompressed > anon.out 2> anon.err
  check "de-identified (gdcmanon -e): converted, NIfTI voxels and header those of the original" \
    "[ $? -eq 0 ] && cmp out_raw/$name.nii out_anon/*.nii" || cat anon.err
else
  echo "note: gdcmanon or openssl missing: the de-identified series was not checked"
fi

# ---------------------------------------------------------------- multi-frame, frames over several fragments
# an enhanced MR file (dicom_series.py: 2 slices x 20 frames) compressed by gdcmconv (one fragment per
# frame), then re-encapsulated by pydicom's encapsulate with each frame in 3 fragments, with and without
# a basic offset table (PS3.5 A.4 allows it; DCMTK's dcmcjpls/dcmcjpeg +fs and PACS that cap the
# fragment size write it): read as the uncompressed file. RLE forbids it (A.4.2): refused, saying so.
"$py" -c 'import pydicom' 2>/dev/null || { echo "FAIL: Debian python3-pydicom missing (scripts/setup.sh)"; exit 1; }
ds="$py $LUMEN_CLI_TESTS/dicom_series.py"
$ds small small --oblique > /dev/null && $ds enhanced small.nii mf.dcm > /dev/null || echo "FAIL: writing mf.dcm"
"$bin" convert mf.dcm --out out_mf --uncompressed -q 2> mf.err || cat mf.err
split3() {  # split3 IN OUT BOT: every frame of IN in 3 fragments (BOT 1: with a basic offset table)
  "$py" -c "
import sys, pydicom
from pydicom.encaps import encapsulate, generate_pixel_data_frame
d = pydicom.dcmread(sys.argv[1])
frames = list(generate_pixel_data_frame(d.PixelData, int(d.NumberOfFrames)))
d.PixelData = encapsulate(frames, fragments_per_frame=3, has_bot=sys.argv[3] == '1')
d.save_as(sys.argv[2])" "$@"
}
for t in jpegls jpeg; do  # (gdcmconv --j2k crashes on these 4 x 5 frames; split J2K frames: above)
  gdcmconv --quiet --$t mf.dcm mf_$t.dcm > /dev/null 2>&1 || { check "gdcmconv --$t mf.dcm" false; continue; }
  for bot in 1 0; do
    n=mf_${t}_split$bot
    split3 mf_$t.dcm $n.dcm $bot || { check "pydicom: $n.dcm written" false; continue; }
    "$bin" convert $n.dcm --out out_$n --uncompressed > $n.out 2> $n.err
    check "$t, 40 frames in 120 fragments ($([ $bot = 1 ] && echo with || echo without) offset table): converted" "[ $? -eq 0 ]" ||
      cat $n.err
    check "$n: NIfTI that of the uncompressed file" "cmp out_mf/*.nii out_$n/*.nii"
  done
done
# implicit VR names no VR: the functional group sequences, of defined length as gdcmconv --implicit
# and pydicom write them, are known by their tags (as by pydicom's and DCMTK's dictionaries)
gdcmconv --quiet --implicit mf.dcm mf_implicit.dcm > /dev/null 2>&1 || check "gdcmconv --implicit mf.dcm" false
"$py" -c "
import sys, pydicom
d = pydicom.dcmread('mf.dcm')
d.file_meta.TransferSyntaxUID = pydicom.uid.ImplicitVRLittleEndian
d.is_implicit_VR, d.is_little_endian = True, True
d.save_as('mf_implicit_pd.dcm')"
for n in mf_implicit mf_implicit_pd; do
  "$bin" convert $n.dcm --out out_$n --uncompressed -q 2> $n.err
  check "$n: the enhanced file in implicit VR (sequences of defined length): NIfTI that of the explicit file" \
    "cmp out_mf/*.nii out_$n/*.nii" || cat $n.err
done
gdcmconv --quiet --rle mf.dcm mf_rle.dcm > /dev/null 2>&1 && split3 mf_rle.dcm mf_rle_split.dcm 1
"$bin" convert mf_rle_split.dcm --out out_mf_rle_split > mf_rle_split.out 2> mf_rle_split.err
check "multi-frame RLE with frames over several fragments: refused (exit 1), naming PS3.5 A.4.2" \
  "[ $? -eq 1 ] && grep -q \"mf_rle_split.dcm': malformed RLE pixel data .*PS3.5 A.4.2 forbids: lumen reads split RLE frames of single-frame images only\" mf_rle_split.err" ||
  cat mf_rle_split.err

# a lossy DCE series in `lumen dce`: the run log (and report) keep the warning
mkdir small_lossy && for f in small/*; do gdcmconv --quiet --jpegls --lossy -e 1 "$f" "small_lossy/$(basename "$f")" > /dev/null 2>&1; done
"$bin" dce --dce small_lossy --out d_lossy --t1 1.0 --relaxivity 4.5 -q --no-report --aif parker 2> d_lossy.err
check "lumen dce on a lossy series: maps written, the run log names 40 of 40 lossy files" \
  "[ -s d_lossy/lumen_model-tofts_param-Ktrans.nii.gz ] &&
   grep -q \"DCE series 'small_lossy': 40 of 40 DICOM files are lossy compressed\" d_lossy/lumen_runlog.txt" ||
  cat d_lossy.err

# 16-bit lossy JPEG (SOF1, precision 16): refused before any decoder runs
transcode jpeg16 --jpeg --lossy
"$bin" convert in_jpeg16 --out out_jpeg16 > jpeg16.out 2> jpeg16.err
check "16-bit lossy JPEG: nothing converted (exit 1), nothing written" "[ $? -eq 1 ] && [ ! -e out_jpeg16/$name.nii.gz ]"
check "16-bit lossy JPEG: the message names the file, the precision and what T.81 allows" \
  "grep -q \"in_jpeg16/i22.MRDC.1': frame 1: JPEG stream: precision 16 bits in a lossy DCT frame (SOF1), where ITU-T T.81 allows 8 or 12 bits\" jpeg16.err" ||
  cat jpeg16.err
exit $fail
