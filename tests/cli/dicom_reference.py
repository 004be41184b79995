"""Independent reference of tests/cli/test_dicom.sh: pixels of DICOM files as pydicom (Debian
python3-pydicom) decodes them, after its modality LUT (apply_modality_lut), and scipy's Gaussian.
Run with /usr/bin/python3 (Debian numpy/scipy/pydicom).
  dicom_reference.py files DIR            copies pydicom's test files into DIR and writes the
                                          MONOCHROME1 variant of MR_small
  dicom_reference.py compare NAME.dcm OUT.nii [gaussian]
                                          1 when lumen's NIfTI output equals the reference
  dicom_reference.py lie IN.dcm OUT.dcm   a copy of IN whose Rows claim twice as many rows"""
import os, shutil, sys
import numpy as np
import pydicom
from pydicom.data import get_testdata_file
from pydicom.pixel_data_handlers.util import apply_modality_lut

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from imagefiles import nii_read  # noqa: E402

FILES = ['CT_small.dcm', 'MR_small.dcm', 'MR_small_implicit.dcm', 'MR_small_bigendian.dcm', 'MR_small_RLE.dcm',
         'MR_small_jpeg_ls_lossless.dcm', 'MR_small_jp2klossless.dcm', 'rtdose.dcm', 'rtdose_rle.dcm']


def reference(path):
    """float32 pixels after the modality LUT (MONOCHROME1 inverted over the stored range), as
    (frames, rows, columns) or (rows, columns)."""
    ds = pydicom.dcmread(path)
    try:
        px = ds.pixel_array
    except Exception:
        # pydicom here has no JPEG-LS decoder (CharPyLS/pylibjpeg are not in Debian): the lossless
        # file holds exactly the pixels of MR_small.dcm (pydicom's test data README)
        assert os.path.basename(path) == 'MR_small_jpeg_ls_lossless.dcm', path
        px = pydicom.dcmread(get_testdata_file('MR_small.dcm')).pixel_array
    v = np.asarray(apply_modality_lut(px, ds), dtype=np.float64)
    if ds.PhotometricInterpretation == 'MONOCHROME1':
        b = int(ds.BitsStored)
        lo, hi = (-(1 << (b - 1)), (1 << (b - 1)) - 1) if ds.PixelRepresentation == 1 else (0, (1 << b) - 1)
        m = apply_modality_lut(np.array([lo, hi], dtype=np.float64), ds)
        v = (m[0] + m[1]) - v
    return v


def compare(dcm, nii, op):
    ref = reference(dcm)
    dims, _, vals = nii_read(nii)
    got = np.array(vals, dtype=np.float32).reshape(dims[::-1])
    if got.shape != ref.shape:
        print('shape', got.shape, 'expected', ref.shape)
        return False
    if op == 'gaussian':  # lumen's defaults (docs/FILTERS.md): sigma 1, truncate 4, mode nearest
        from scipy.ndimage import gaussian_filter
        ref = gaussian_filter(ref, sigma=1.0, mode='nearest', truncate=4.0)
        tol = 1e-5 * max(1.0, float(np.abs(ref).max()))
        err = float(np.abs(got - ref).max())
        print('%s gaussian: max |lumen - scipy| = %.3g (tolerance %.3g)' % (os.path.basename(dcm), err, tol))
        return err <= tol
    ok = np.array_equal(got, np.float32(ref))
    print('%s: %s pixels equal to pydicom: %s' % (os.path.basename(dcm), 'x'.join(map(str, ref.shape)), ok))
    return ok


def main():
    if sys.argv[1] == 'files':
        out = sys.argv[2]
        for f in FILES:
            shutil.copy(get_testdata_file(f), os.path.join(out, f))
        ds = pydicom.dcmread(get_testdata_file('MR_small.dcm'))
        ds.PhotometricInterpretation = 'MONOCHROME1'
        ds.save_as(os.path.join(out, 'MR_small_mono1.dcm'))
        return 0
    if sys.argv[1] == 'lie':
        ds = pydicom.dcmread(sys.argv[2])
        ds.Rows = ds.Rows * 2
        ds.save_as(sys.argv[3])
        return 0
    return 0 if compare(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else '') else 1


if __name__ == '__main__':
    sys.exit(main())
