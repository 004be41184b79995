#!/usr/bin/env bash
# Issue 18's reading benchmark: a synthetic 4096 x 3328 16-bit mammogram written as DICOM
# (explicit VR little endian with pydicom; JPEG 2000, JPEG-LS and RLE with GDCM's gdcmconv when
# Debian's libgdcm-tools is installed) and as 16-bit PNG (lumen), the same pixels; then
# bench_io_read times lumen_dicom_read against lumen_png_read, alternating, in one process.
# usage: scripts/bench_mammo_read.sh [BUILD_DIR=build] [WORK_DIR]    (needs /usr/bin/python3 with pydicom)
set -eu
build=${1:-build}
work=${2:-$(mktemp -d)}
mkdir -p "$work"
/usr/bin/python3 - "$work" "$build" <<'PY'
import os, sys
import numpy as np
import pydicom
from pydicom.dataset import FileDataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, generate_uid
work, build = sys.argv[1], sys.argv[2]
h, w = 4096, 3328
yy, xx = np.mgrid[0:h, 0:w]
img = (2000 + 1500 * np.exp(-((xx - 800) ** 2 + (yy - 2048) ** 2) / 2e6)
       + np.random.RandomState(0).rand(h, w) * 40).astype(np.uint16)
img[:, 2600:] = 0  # the background beside the breast
meta = FileMetaDataset()
meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.1.2"  # digital mammography
meta.MediaStorageSOPInstanceUID = generate_uid()
meta.TransferSyntaxUID = ExplicitVRLittleEndian
ds = FileDataset(os.path.join(work, "mammo.dcm"), {}, file_meta=meta, preamble=b"\0" * 128)
ds.SOPClassUID, ds.SOPInstanceUID, ds.Modality = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID, "MG"
ds.Rows, ds.Columns, ds.SamplesPerPixel, ds.PhotometricInterpretation = h, w, 1, "MONOCHROME2"
ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 0
ds.ImagerPixelSpacing = [0.07, 0.07]
ds.PixelData = img.tobytes()
ds.is_little_endian, ds.is_implicit_VR = True, False
ds.save_as(os.path.join(work, "mammo.dcm"), write_like_original=False)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(build)), "python"))
os.environ.setdefault("LUMEN_LIBRARY", os.path.join(os.path.abspath(build), "liblumen.so"))
import lumen
lumen.write_image(os.path.join(work, "mammo.png"), img, overwrite=True)
PY
files=("$work/mammo.dcm")
if command -v gdcmconv >/dev/null 2>&1; then
  for c in j2k jpegls rle; do gdcmconv --$c "$work/mammo.dcm" "$work/mammo_$c.dcm" && files+=("$work/mammo_$c.dcm"); done
else
  echo "(gdcmconv not found: Debian libgdcm-tools makes the compressed variants)"
fi
for f in "${files[@]}"; do
  echo "== $(basename "$f") ($(du -h "$f" | cut -f1)) vs mammo.png ($(du -h "$work/mammo.png" | cut -f1))"
  "$build/bench/bench_io_read" "$f" "$work/mammo.png" 5
done
[ -n "${KEEP:-}" ] || rm -rf "$work"
