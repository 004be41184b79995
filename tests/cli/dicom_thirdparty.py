"""Minimal DICOM files shaped like the third-party files lumen once refused or mishandled
(pydicom's and nibabel's test data, docs/DICOM.md "Checked on third-party files"), written here
with pydicom so that tests/cli/test_dicom_thirdparty.sh runs without them; and the checks of
lumen convert's NIfTI against values known from the written pixels.

  write DIR                 writes DIR/nogeom.dcm (a 4 x 3 NM image without orientation or
                            position, PixelSpacing 2.26, like JPEG2000.dcm), DIR/nogeom_mf.dcm
                            (the same, 2 frames, SpacingBetweenSlices 3), DIR/dose.dcm (an RT Dose
                            of 3 frames of 2 x 2, uint32, GridFrameOffsetVector 0\\5\\10 like
                            rtdose.dcm), DIR/dose_desc.dcm (offsets 0\\-5\\-10), DIR/dose_uneven.dcm
                            (0\\5\\11), DIR/badnum.dcm (NumberOfFrames "1A", like badVR.dcm),
                            DIR/dfl.dcm (nogeom's pixels, Deflated Explicit VR Little Endian, like
                            image_dfl.dcm), DIR/dfl_cut.dcm (its last 8 bytes cut), DIR/dfl_bomb.dcm
                            (64 MiB of zeros deflated to 64 KiB), DIR/bare.dcm
                            (nogeom's pixels with a geometry as a bare implicit VR data set: no
                            preamble, no meta group), DIR/zerospc.dcm (nogeom's pixels as a 15-bit
                            MONOCHROME1 CR with PixelSpacing 0\\0, like RG1_UNCI.dcm), DIR/mlut.dcm
                            (a 12-bit signed image with a ModalityLUTSequence of 64 entries from
                            -20, like mlut_18.dcm, and a RescaleSlope the LUT overrides),
                            DIR/mlut_short.dcm (its LUTDescriptor says 65 entries), DIR/mlut_be.dcm
                            (mlut.dcm in explicit VR big endian)
  check NII NAME            NII equals what lumen must write for NAME (one of the above; mlut and
                            mlut_be read in/NAME.dcm for pydicom's apply_modality_lut)
  raw NII                   NII holds nogeom's pixels as stored (lumen filter's row order)
"""
import struct, sys, zlib
import numpy as np
import pydicom
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.uid import DeflatedExplicitVRLittleEndian, ExplicitVRLittleEndian, generate_uid

NOGEOM = np.arange(12, dtype=np.uint16).reshape(3, 4) * 7 + 1          # rows x columns
NOGEOM_MF = np.stack([NOGEOM, NOGEOM + 100])                            # frames x rows x columns
DOSE = (np.arange(12, dtype=np.uint32).reshape(3, 2, 2) + 1) * 1000003  # frames x rows x columns
POS = [189.43125, 199.43125, -761.87]
MLUT = (1000 + 37 * np.arange(64) + np.arange(64) ** 2 * 5).astype('<u2')  # entries for -20..43
MLUT_STORED = NOGEOM.astype('<i2') - 30  # -29..48: below and past the table (clamped)


def base(sop_class, rows, cols, bits, frames=None):
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = sop_class
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    d = Dataset()
    d.file_meta = meta
    d.is_little_endian, d.is_implicit_VR = True, False
    d.SOPClassUID, d.SOPInstanceUID = sop_class, meta.MediaStorageSOPInstanceUID
    d.SeriesInstanceUID, d.SeriesNumber = generate_uid(), 1
    d.SamplesPerPixel, d.PhotometricInterpretation = 1, 'MONOCHROME2'
    d.Rows, d.Columns = rows, cols
    d.BitsAllocated = d.BitsStored = bits
    d.HighBit, d.PixelRepresentation = bits - 1, 0
    if frames:
        d.NumberOfFrames = frames
    return d


def write(dirname):
    d = base('1.2.840.10008.5.1.4.1.1.20', 3, 4, 16)  # NM
    d.Modality, d.PixelSpacing = 'NM', [2.26, 2.26]
    d.PixelData = NOGEOM.tobytes()
    d.save_as(f'{dirname}/nogeom.dcm', write_like_original=False)
    d = base('1.2.840.10008.5.1.4.1.1.20', 3, 4, 16, 2)
    d.Modality, d.PixelSpacing, d.SpacingBetweenSlices = 'NM', [2.26, 2.26], 3
    d.PixelData = NOGEOM_MF.tobytes()
    d.save_as(f'{dirname}/nogeom_mf.dcm', write_like_original=False)
    for name, grid in (('dose', [0, 5, 10]), ('dose_desc', [0, -5, -10]), ('dose_uneven', [0, 5, 11])):
        d = base('1.2.840.10008.5.1.4.1.1.481.2', 2, 2, 32, 3)  # RT Dose
        d.Modality = 'RTDOSE'
        d.ImagePositionPatient, d.ImageOrientationPatient = POS, [1, 0, 0, 0, 1, 0]
        d.PixelSpacing, d.GridFrameOffsetVector = [10, 10], grid
        d.FrameIncrementPointer = 0x3004000C
        d.PixelData = DOSE.tobytes()
        d.save_as(f'{dirname}/{name}.dcm', write_like_original=False)
    d = base('1.2.840.10008.5.1.4.1.1.481.2', 3, 4, 16)
    d.Modality, d.PixelData = 'RTDOSE', NOGEOM.tobytes()
    d = base('1.2.840.10008.5.1.4.1.1.7', 3, 4, 16)  # deflated, like image_dfl.dcm
    d.PixelData = NOGEOM.tobytes()
    d.file_meta.TransferSyntaxUID = DeflatedExplicitVRLittleEndian
    d.save_as(f'{dirname}/dfl.dcm', write_like_original=False)
    b = open(f'{dirname}/dfl.dcm', 'rb').read()
    assert NOGEOM.tobytes() not in b  # pydicom deflated it
    open(f'{dirname}/dfl_cut.dcm', 'wb').write(b[:-8])
    meta_end = 132  # a deflate bomb: dfl.dcm's meta group, then 64 MiB of zeros deflated (64 KiB)
    while b[meta_end:meta_end + 2] == b'\x02\x00':
        long_vr = b[meta_end + 4:meta_end + 6] in (b'OB', b'OW', b'UN', b'SQ', b'UT', b'UC', b'UR')
        n = int.from_bytes(b[meta_end + 8:meta_end + 12] if long_vr else b[meta_end + 6:meta_end + 8], 'little')
        meta_end += (12 if long_vr else 8) + n
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    open(f'{dirname}/dfl_bomb.dcm', 'wb').write(b[:meta_end] + z.compress(bytes(64 << 20)) + z.flush())
    d = base('1.2.840.10008.5.1.4.1.1.4', 3, 4, 16)  # a bare implicit VR data set (no preamble, no meta)
    d.Modality, d.PixelData = 'MR', NOGEOM.tobytes()
    d.ImagePositionPatient, d.ImageOrientationPatient = [-10, 20, 30], [1, 0, 0, 0, 1, 0]
    d.PixelSpacing, d.SliceThickness = [0.5, 0.25], 2
    del d.file_meta
    d.preamble = None
    d.is_little_endian, d.is_implicit_VR = True, True
    d.save_as(f'{dirname}/bare.dcm', write_like_original=True)
    assert open(f'{dirname}/bare.dcm', 'rb').read(2) == b'\x08\x00'
    d = base('1.2.840.10008.5.1.4.1.1.1', 3, 4, 16)  # CR, PixelSpacing 0\\0, MONOCHROME1 (RG1_UNCI.dcm)
    d.Modality, d.PhotometricInterpretation, d.PixelSpacing = 'CR', 'MONOCHROME1', [0, 0]
    d.BitsStored, d.HighBit, d.PixelData = 15, 14, NOGEOM.tobytes()
    d.save_as(f'{dirname}/zerospc.dcm', write_like_original=False)
    for name, entries, e in (('mlut', 64, '<'), ('mlut_short', 65, '<'), ('mlut_be', 64, '>')):
        d = base('1.2.840.10008.5.1.4.1.1.7', 3, 4, 16)  # a LUT modality transform (mlut_18.dcm)
        d.BitsStored, d.HighBit, d.PixelRepresentation = 12, 11, 1
        d.RescaleSlope, d.RescaleIntercept = 3, 7  # the LUT wins (PS3.3 C.11.1: not both; pydicom's order)
        lut = Dataset()
        lut.LUTDescriptor, lut.ModalityLUTType = [entries, -20, 16], 'US'
        lut.LUTData = MLUT.astype(e + 'u2').tobytes()  # OW; mlut_short: one entry short
        d.ModalityLUTSequence = [lut]
        d.PixelData = MLUT_STORED.astype(e + 'i2').tobytes()
        if e == '>':  # explicit VR big endian (emri_small_big_endian.dcm's syntax): OW values as written
            d.file_meta.TransferSyntaxUID = '1.2.840.10008.1.2.2'
            d.is_little_endian = False
        d.save_as(f'{dirname}/{name}.dcm', write_like_original=False)
    d = base('1.2.840.10008.5.1.4.1.1.481.2', 3, 4, 16)
    d.Modality, d.PixelData = 'RTDOSE', NOGEOM.tobytes()
    d.NumberOfFrames = 99
    d.save_as(f'{dirname}/badnum.dcm', write_like_original=False)
    b = open(f'{dirname}/badnum.dcm', 'rb').read()  # pydicom refuses to write "1A": patched in
    el = b'\x28\x00\x08\x00IS\x02\x00'
    assert b.count(el + b'99') == 1
    open(f'{dirname}/badnum.dcm', 'wb').write(b.replace(el + b'99', el + b'1A'))


def nii(path):
    """(dims, voxels (z, y, x) float64, pixdim[1:4], qform_code, sform_code, sform 3x4) of a .nii."""
    b = open(path, 'rb').read()
    dim = struct.unpack_from('<8h', b, 40)
    dt = struct.unpack_from('<h', b, 70)[0]
    pix = struct.unpack_from('<8f', b, 76)
    off = int(struct.unpack_from('<f', b, 108)[0])
    slope, inter = struct.unpack_from('<2f', b, 112)
    qcode, scode = struct.unpack_from('<2h', b, 252)
    sform = np.array(struct.unpack_from('<12f', b, 280)).reshape(3, 4)
    types = {2: np.uint8, 4: np.int16, 16: np.float32, 512: np.uint16, 8: np.int32, 768: np.uint32}
    dims = dim[1:1 + dim[0]]
    v = np.frombuffer(b, types[dt], int(np.prod(dims)), off).astype(np.float64)
    if slope not in (0.0,) and np.isfinite(slope):
        v = v * slope + inter
    return list(dims), v.reshape(dims[::-1]), pix[1:4], qcode, scode, sform


def check(path, name):
    dims, v, pix, qcode, scode, sform = nii(path)
    if name == 'bare':  # dcm2niix's layout and affine for its tags
        want = NOGEOM[None, ::-1, :].astype(np.float64)
        A = np.array([[-0.25, 0, 0, 10], [0, 0.5, 0, -21], [0, 0, 2, 30]], float)
        ok = (dims[:3] == [4, 3, 1] and np.array_equal(v.reshape(want.shape), want)
              and np.allclose(sform, A, atol=1e-4) and scode > 0)
    elif name in ('mlut', 'mlut_be'):  # pydicom's apply_modality_lut of the stored values, rows bottom-up
        from pydicom.pixel_data_handlers.util import apply_modality_lut
        d = pydicom.dcmread(f'in/{name}.dcm')
        want = apply_modality_lut(d.pixel_array, d).astype(np.float64)[None, ::-1, :]
        clamp = MLUT[np.clip(MLUT_STORED.astype(int) + 20, 0, 63)]  # the same by hand
        ok = (dims[:3] == [4, 3, 1] and np.array_equal(v.reshape(want.shape), want)
              and np.array_equal(want[0, ::-1], clamp) and qcode == 0 and scode == 0)
    elif name == 'zerospc':  # MONOCHROME1 inverted over the 15-bit range, spacing 1 (0\\0 is unknown)
        want = (32767 - NOGEOM)[None, ::-1, :].astype(np.float64)
        ok = (dims[:3] == [4, 3, 1] and np.array_equal(v.reshape(want.shape), want)
              and np.allclose(pix, [1, 1, 1]) and qcode == 0 and scode == 0)
    elif name in ('nogeom', 'nogeom_mf'):
        src = NOGEOM[None] if name == 'nogeom' else NOGEOM_MF
        want = src[:, ::-1, :].astype(np.float64)  # dcm2niix's rows bottom-up; frames as slices
        zstep = 1.0 if name == 'nogeom' else 3.0
        ok = (dims[:3] == [4, 3, src.shape[0]] and np.array_equal(v.reshape(want.shape), want)
              and np.allclose(pix, [2.26, 2.26, zstep], atol=1e-6) and qcode == 0 and scode == 0)
    else:
        desc = name == 'dose_desc'
        want = DOSE[::-1] if desc else DOSE          # slices ascending along the normal (+z)
        want = want[:, ::-1, :].astype(np.float64)   # rows bottom-up
        # dcm2niix's affine for the tags (LPS -> RAS, rows flipped); z of the first slice: the
        # lowest frame (-761.87 - 10 when the offsets descend); the slice step 5 mm from the grid
        z0 = POS[2] - (10 if desc else 0)
        A = np.array([[-10, 0, 0, -POS[0]], [0, 10, 0, -(POS[1] + 10)], [0, 0, 5, z0]], float)
        ok = (dims[:3] == [2, 2, 3] and np.array_equal(v.reshape(want.shape), want)
              and np.allclose(sform, A, atol=1e-3) and qcode > 0 and scode > 0)
    if not ok:
        print(f'{name}: dims {dims} pixdim {pix} codes {qcode}/{scode}\nsform {sform}\nvoxels {v.ravel()[:8]}')
    return 0 if ok else 1


if __name__ == '__main__':
    if sys.argv[1] == 'write':
        write(sys.argv[2])
        sys.exit(0)
    if sys.argv[1] == 'raw':
        dims, v = nii(sys.argv[2])[:2]
        sys.exit(0 if dims[:2] == [4, 3] and np.array_equal(v.reshape(3, 4), NOGEOM.astype(np.float64)) else 1)
    sys.exit(check(sys.argv[2], sys.argv[3]))
