"""Prepares medical-image-std 0.8.2's own test suite to run against lumen.medical_image and against
the original (tests/compat/run_medical_image_suite.sh calls it; nothing here is the original's code).

    python3 mis_suite_prepare.py WHEEL WORK

WORK/original/medical_image: the wheel's package, tests included, unmodified.
WORK/lumen/mis_tests: the wheel's tests with their imports rewritten:
    medical_image.tests  -> mis_tests             (the tests' own helper modules)
    medical_image        -> lumen.medical_image   (every other import of the package)
Both tests/dummy_data folders get sample.dcm, a synthetic 512 x 512 12-bit MONOCHROME2 DICOM (the
suite downloads a Siemens sample from the web when it is absent; this machine may be offline)."""
import os
import re
import sys
import zipfile

import numpy as np


def rewrite(text):
    text = re.sub(r"\bmedical_image\.tests\b", "mis_tests", text)
    return re.sub(r"(?<![\w.])medical_image\b", "lumen.medical_image", text)


def write_dicom(path):
    import pydicom
    from pydicom.dataset import FileDataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid, SecondaryCaptureImageStorage
    rng = np.random.RandomState(7)
    y, x = np.mgrid[0:512, 0:512].astype(np.float32)
    breast = ((x / 380.0) ** 2 + ((y - 256) / 240.0) ** 2 < 1.0).astype(np.float32)
    img = breast * (1400 + 900 * np.exp(-((x - 150) ** 2 + (y - 250) ** 2) / 9000.0))
    img += rng.normal(0, 40, img.shape).astype(np.float32) * breast
    for cy, cx in [(200, 120), (300, 160), (260, 90), (330, 220), (180, 200)]:
        img[cy - 2:cy + 2, cx - 2:cx + 2] = 3800
    px = np.clip(img, 0, 4095).astype(np.uint16)
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = SecondaryCaptureImageStorage
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = FileDataset(path, {}, file_meta=meta, preamble=b"\0" * 128)
    ds.SOPClassUID, ds.SOPInstanceUID = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID
    ds.Modality, ds.PatientName, ds.PatientID = "MG", "Synthetic^Phantom", "0"
    ds.Rows, ds.Columns = px.shape
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
    ds.WindowCenter, ds.WindowWidth = 2048, 4096
    ds.PixelData = px.tobytes()
    ds.save_as(path, **({"enforce_file_format": True} if pydicom.__version__ >= "3" else {"write_like_original": False}))


def main(wheel, work):
    orig = os.path.join(work, "original")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(orig, [n for n in z.namelist() if n.startswith("medical_image/")])
    src = os.path.join(orig, "medical_image", "tests")
    dst = os.path.join(work, "lumen", "mis_tests")
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(src)):
        if name.endswith(".py"):
            with open(os.path.join(src, name)) as f:
                text = f.read()
            with open(os.path.join(dst, name), "w") as f:
                f.write(rewrite(text))
    for tests in (src, dst):
        os.makedirs(os.path.join(tests, "dummy_data"), exist_ok=True)
        write_dicom(os.path.join(tests, "dummy_data", "sample.dcm"))
    print("prepared: %s (original) and %s (imports rewritten)" % (src, dst))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
