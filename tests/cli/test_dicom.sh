#!/usr/bin/env bash
# DICOM input (docs/DICOM.md): pydicom's own test files (explicit, implicit and big-endian
# syntax, RLE, JPEG-LS lossless, JPEG 2000 lossless, signed and rescaled CT, multi-frame RT dose,
# a MONOCHROME1 variant) decode through `lumen filter` to pydicom's pixels after its modality LUT;
# the Gaussian equals scipy's; --units mm uses PixelSpacing; a folder of one image is an input;
# a deflated file equals its uncompressed original; a non-DICOM file, a truncated file, an unsupported transfer syntax (MPEG-2), a lying Rows, a folder of two
# images: one message, exit non-zero, nothing written.
# Skips (77) only when lumen was built without DICOM (GDCM) or Debian's pydicom/scipy are missing.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
py=/usr/bin/python3
"$py" -c 'import pydicom, numpy, scipy.ndimage' 2>/dev/null ||
  { echo "Debian python3-pydicom, python3-numpy or python3-scipy missing (scripts/setup.sh): skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"
ref="$LUMEN_CLI_TESTS/dicom_reference.py"

"$py" "$ref" files . || { echo "FAIL: copying pydicom's test files"; exit 1; }
if ! "$bin" filter convolve MR_small.dcm probe.nii --kernel 1 -q 2> probe_err.txt; then
  skip_without_dicom probe_err.txt
  cat probe_err.txt; echo "FAIL: reading MR_small.dcm"; exit 1
fi

# pixels: convolve with the kernel [1] writes the image as read (float32 NIfTI)
for f in CT_small MR_small MR_small_implicit MR_small_bigendian MR_small_RLE MR_small_jpeg_ls_lossless \
         MR_small_jp2klossless rtdose rtdose_rle MR_small_mono1; do
  "$bin" filter convolve $f.dcm $f.nii --kernel 1 -v 2> $f.err || { cat $f.err; echo "FAIL: $f read"; fail=1; continue; }
  check "$f: pixels equal pydicom's after the modality LUT" "'$py' '$ref' compare $f.dcm $f.nii" || cat $f.err
done
check "MONOCHROME1 inversion is stated in the log" "grep -q 'MONOCHROME1: values inverted' MR_small_mono1.err"
check "a compressed file decodes in a child process (single-threaded CLI)" \
  "grep -q 'decoded in a child process' MR_small_jp2klossless.err"

# lumen filter gaussian (defaults) equals scipy.ndimage.gaussian_filter on pydicom's pixels
for f in CT_small MR_small_jp2klossless rtdose; do
  "$bin" filter gaussian $f.dcm g_$f.nii -q 2> g.err || cat g.err
  check "$f: gaussian equals scipy" "'$py' '$ref' compare $f.dcm g_$f.nii gaussian"
done

# --units mm: CT_small's PixelSpacing is 0.661468 mm, so 1.322936 mm is 2 pixels
"$bin" filter gaussian CT_small.dcm mm.nii --sigma 1.322936 --units mm -q &&
  "$bin" filter gaussian CT_small.dcm px.nii --sigma 2 -q
check "--units mm uses PixelSpacing" "cmp -s mm.nii px.nii"

# a folder holding one DICOM image is that image; lumen segment reads DICOM too
mkdir one && cp MR_small_RLE.dcm one/image
"$bin" filter convolve one folder.nii --kernel 1 -q 2> f.err
check "a folder of one DICOM file reads as that file" "cmp -s folder.nii MR_small_RLE.nii" || cat f.err
"$bin" segment kmeans CT_small.dcm seg.nii -q 2> s.err
check "lumen segment takes a .dcm" "[ -s seg.nii ]" || cat s.err
mkdir -p bids/sub-01/anat && cp CT_small.dcm bids/sub-01/anat/sub-01_CT.dcm
"$bin" batch filter --bids bids --out deriv -q -- convolve --kernel 1 > b.out 2>&1
check "lumen batch --bids finds a .dcm and writes NIfTI" \
  "'$py' '$ref' compare CT_small.dcm deriv/sub-01/sub-01_CT_desc-convolve.nii.gz" || cat b.out
"$bin" filter --help | grep -q '\.dcm' && "$bin" segment --help | grep -q '\.dcm'
check "filter and segment --help name .dcm" "[ \$? -eq 0 ]"

# lumen segment window on a DICOM input without --center/--width uses the file's WindowCenter /
# WindowWidth: the same output as giving them, unlike the data-range default of a file without them
"$py" - <<'PYEOF'
import pydicom
ds = pydicom.dcmread('CT_small.dcm')
ds.WindowCenter, ds.WindowWidth = [40, 400], [350, 1500]  # two windows: the first is used
ds.save_as('ct_win.dcm')
for name in ('WindowCenter', 'WindowWidth'):
    delattr(ds, name)
ds.save_as('ct_nowin.dcm')
PYEOF
"$bin" segment window ct_win.dcm w_file.nii -v 2> w.err &&
  "$bin" segment window ct_win.dcm w_given.nii --center 40 --width 350 2>/dev/null &&
  "$bin" segment window ct_nowin.dcm w_range.nii 2>/dev/null
check "segment window takes a DICOM file's own window (= --center 40 --width 350), logged with -v" \
  "cmp -s w_file.nii w_given.nii && ! cmp -s w_file.nii w_range.nii && grep -q 'WindowCenter 40, WindowWidth 350' w.err" ||
  cat w.err

# errors: one message naming the file, exit non-zero, nothing written
refused() {  # ID INPUT WORDS: lumen filter refuses INPUT with a message holding WORDS
  local out="out_$1.nii"
  "$bin" filter convolve "$2" "$out" --kernel 1 -q 2> "err_$1.txt"
  local rc=$?
  check "$1: refused (exit $rc), one message naming the file and '$3', nothing written" \
    "[ $rc -ne 0 ] && [ ! -e $out ] && [ \$(wc -l < err_$1.txt) -eq 1 ] && grep -qF '$2' err_$1.txt && grep -qF '$3' err_$1.txt" ||
    cat "err_$1.txt"
}
printf 'not a DICOM file, just text\n%.0s' {1..20} > text.dcm
refused non-dicom text.dcm "is not a DICOM file"
head -c 5000 MR_small.dcm > truncated.dcm
refused truncated truncated.dcm "truncated"
"$py" - <<'PYEOF'
import pydicom
from pydicom.encaps import encapsulate
from pydicom.uid import DeflatedExplicitVRLittleEndian, MPEG2MPML
ds = pydicom.dcmread('MR_small.dcm')
ds.file_meta.TransferSyntaxUID = DeflatedExplicitVRLittleEndian  # read: inflated in memory
ds.save_as('deflated.dcm')
ds = pydicom.dcmread('MR_small.dcm')
ds.file_meta.TransferSyntaxUID = MPEG2MPML  # a valid file, not readable here
ds.PixelData = encapsulate([ds.PixelData])
ds.save_as('mpeg2.dcm', write_like_original=False)
PYEOF
"$bin" filter convolve deflated.dcm deflated.nii --kernel 1 -q 2> deflated.err
check "a deflated file (1.2.840.10008.1.2.1.99) reads as the same file uncompressed" "cmp -s deflated.nii MR_small.nii" ||
  cat deflated.err
refused unsupported-syntax mpeg2.dcm "TransferSyntaxUID 1.2.840.10008.1.2.4.100 is not supported"
"$py" "$ref" lie MR_small.dcm lie_native.dcm && "$py" "$ref" lie MR_small_jp2klossless.dcm lie_j2k.dcm
refused rows-lie-native lie_native.dcm "PixelData has 8192 bytes, expected 16384"
refused rows-lie-j2k lie_j2k.dcm "expected Columns 64 x Rows 128"
mkdir two && cp MR_small.dcm CT_small.dcm two/
refused two-images two "holds several series"

exit $fail
