#!/usr/bin/env bash
# Third-party DICOM layouts that lumen once refused (docs/DICOM.md "Checked on third-party
# files"), rebuilt in small files by dicom_thirdparty.py so that no downloaded file is needed:
# one image without ImageOrientationPatient/ImagePositionPatient (pydicom's JPEG2000.dcm,
# charset files) and a multi-frame one without them converted as dcm2niix converts them (rows
# bottom-up, frames as slices, PixelSpacing as pixdim, NIfTI qform/sform code 0, a warning); an
# RT Dose placed by GridFrameOffsetVector (rtdose.dcm; ascending and descending offsets: voxels
# and affine known from the tags), uneven offsets refused; a NumberOfFrames of "1A" (badVR.dcm)
# refused showing the text; a bare data set (no preamble, no meta group) named on the command line
# read as dcm2niix reads it, not in a folder; a deflated file (image_dfl.dcm) read, cut short or
# inflating past --memory-limit refused; pydicom-data's RG1_*.dcm (PixelSpacing 0\0, MONOCHROME1)
# read with spacing 1 and a warning; mlut_18.dcm's ModalityLUTSequence applied (equal to pydicom's
# apply_modality_lut; little and big endian), a short LUTData refused. Packed 1-bit data and per-frame items past
# NumberOfFrames (liver_1frame.dcm) are tests/unit/test_io_dicom.c. Skips (77) when Debian's pydicom/numpy are missing or lumen was
# built without DICOM.
set -u
py=/usr/bin/python3
"$py" -c 'import pydicom, numpy' 2>/dev/null ||
  { echo "Debian python3-pydicom or python3-numpy missing (scripts/setup.sh): skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"
tp="$py $LUMEN_CLI_TESTS/dicom_thirdparty.py"
mkdir in && $tp write in || { echo "FAIL: writing the files"; exit 1; }
if ! "$bin" convert in/nogeom.dcm --out probe --uncompressed > /dev/null 2> probe.err; then
  skip_without_dicom probe.err
fi

for f in nogeom nogeom_mf dose dose_desc bare zerospc mlut mlut_be; do
  "$bin" convert in/$f.dcm --out out_$f --uncompressed > $f.out 2> $f.err
  rc=$?
  check "$f: converted" "[ $rc -eq 0 ] && [ \$(ls out_$f/*.nii | wc -l) -eq 1 ]" || cat $f.err
  check "$f: voxels, spacing and orientation as dcm2niix gives them" "$tp check out_$f/*.nii $f"
done
for f in nogeom nogeom_mf; do
  check "$f: the unknown geometry is a warning naming the file and the tags" \
    "grep -q \"in/$f.dcm': no ImageOrientationPatient (0020,0037) nor ImagePositionPatient (0020,0032)\" $f.err" ||
    cat $f.err
done
check "a bare data set is a warning naming the file" "grep -q \"in/bare.dcm': no Part 10 header\" bare.err" || cat bare.err
mkdir only_bare && cp in/bare.dcm only_bare/
refused "a folder of bare data sets holds no DICOM file (folders take Part 10 files only)" 1 "a folder without a DICOM file" \
  convert only_bare --out out_only_bare
check "an RT Dose's grid is no warning" "! grep -q warning dose.err" || cat dose.err
check "no geometry, one slice: the sidecar invents no SpacingBetweenSlices" \
  "! grep -q SpacingBetweenSlices out_nogeom/*.json && grep -q '\"SpacingBetweenSlices\":.*3' out_nogeom_mf/*.json"
check "the RT Dose's sidecar: SpacingBetweenSlices 5 (the grid)" "grep -q '\"SpacingBetweenSlices\":.*5' out_dose/*.json"

check "PixelSpacing 0\\0 is a warning naming the file and the tag" \
  "grep -q \"in/zerospc.dcm': PixelSpacing (0028,0030) is 0.\\\\0 (unknown): read as absent\" zerospc.err" || cat zerospc.err
refused "a ModalityLUTSequence with fewer LUTData values than entries refused" 1 \
  "mlut_short.dcm': ModalityLUTSequence (0028,3000) LUTData has fewer 16-bit values than LUTDescriptor's entries" \
  convert in/mlut_short.dcm --out out_mlut_short
refused "uneven GridFrameOffsetVector refused" 1 "dose_uneven.dcm': GridFrameOffsetVector (3004,000C) has 3 values unevenly spaced" \
  convert in/dose_uneven.dcm --out out_uneven
refused "NumberOfFrames '1A' refused, its text shown" 1 "badnum.dcm'.*NumberOfFrames value 1 of '1A' is not a finite number" \
  convert in/badnum.dcm --out out_badnum
# Deflated Explicit VR Little Endian (image_dfl.dcm): the pixels as stored; a cut stream refused
"$bin" filter convolve in/dfl.dcm dfl.nii --kernel 1 -q 2> dfl.err
check "deflated: the pixels as written" "$tp raw dfl.nii" || cat dfl.err
refused "deflated, cut short: refused" 1 "dfl_cut.dcm': TransferSyntaxUID 1.2.840.10008.1.2.1.99 (deflated), but the data set" \
  filter convolve in/dfl_cut.dcm dfl_cut.nii --kernel 1
refused "a deflate bomb stops at the memory limit" 1 "dfl_bomb.dcm': the deflated data set inflates past the memory limit" \
  filter convolve in/dfl_bomb.dcm dfl_bomb.nii --kernel 1 --memory-limit 16M
exit $fail
