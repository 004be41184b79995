#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets into fuzz/corpus/<target>/ (standard library only).
The files are in the repository; rerun this after changing it. The first byte of the nifti, png
and table seeds selects reader options (see fuzz_*.c)."""
import gzip, os, struct, sys, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'scripts'))
import make_bad_inputs as bad_inputs  # its NIfTI-2 writer  # noqa: E402

def put(target, name, data):
    d = os.path.join(HERE, 'corpus', target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)

def nifti1(dims, datatype=16, bitpix=32, data=None, endian='<', vox_offset=352.0, scl=(0.0, 0.0),
           sform=1, qform=0, pixdim=None, magic=b'n+1\0'):
    hdr = bytearray(348)
    struct.pack_into(endian + 'i', hdr, 0, 348)
    d = [len(dims)] + list(dims) + [1] * (7 - len(dims))
    struct.pack_into(endian + '8h', hdr, 40, *d)
    struct.pack_into(endian + 'hh', hdr, 70, datatype, bitpix)
    pd = pixdim or [1.0] + [2.0] * 7
    struct.pack_into(endian + '8f', hdr, 76, *pd)
    struct.pack_into(endian + 'f', hdr, 108, vox_offset)
    struct.pack_into(endian + 'ff', hdr, 112, *scl)
    struct.pack_into(endian + 'B', hdr, 123, 10)
    struct.pack_into(endian + 'hh', hdr, 252, qform, sform)
    struct.pack_into(endian + '12f', hdr, 280, 2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0)
    hdr[344:348] = magic
    if data is None:
        n = 1
        for x in dims: n *= x
        data = bytes((i * 7) & 0xFF for i in range(n * bitpix // 8))
    return bytes(hdr) + b'\0' * 4 + data

def nifti2(dims, datatype=16, bitpix=32):
    n = 1
    for x in dims: n *= x
    return bad_inputs.nifti2(dims, datatype, bitpix, bytes((i * 3) & 0xFF for i in range(n * bitpix // 8)), qform=1)

def png(width, height, bit_depth=8, color_type=0, rows=None):
    def chunk(t, b):
        return struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t + b) & 0xffffffff)
    ch = {0: 1, 2: 3, 4: 2, 6: 4, 3: 1}[color_type]
    rowbytes = (width * ch * bit_depth + 7) // 8
    raw = b''.join(b'\0' + bytes(((x + y) * 13) & 0xFF for x in range(rowbytes)) for y in range(height))
    out = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', width, height, bit_depth, color_type, 0, 0, 0))
    if color_type == 3:
        out += chunk(b'PLTE', bytes(range(48)))
    return out + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')

def main():
    # nifti: first byte = options (bit 0: name .nii.gz, bit 1: keep_type, bit 2: header only)
    put('nifti', 'f32_3d.nii', b'\0' + nifti1((4, 3, 2)))
    put('nifti', 'f32_4d.nii.gz', b'\1' + gzip.compress(nifti1((3, 2, 2, 5))))
    put('nifti', 'i16_scaled.nii', b'\0' + nifti1((4, 4), datatype=4, bitpix=16, scl=(2.0, 1.0)))
    put('nifti', 'u8_keep.nii', b'\2' + nifti1((5, 3), datatype=2, bitpix=8))
    put('nifti', 'f64_be.nii', b'\0' + nifti1((2, 2, 2), datatype=64, bitpix=64, endian='>'))
    put('nifti', 'i64_qform.nii', b'\0' + nifti1((3, 3), datatype=1024, bitpix=64, sform=0, qform=1))
    put('nifti', 'header_only.nii', b'\4' + nifti1((8, 8, 8)))
    put('nifti', 'nifti2.nii', b'\0' + nifti2((3, 2, 2)))
    put('nifti', 'huge_dims.nii', b'\0' + nifti1((1000, 1000, 1000, 1000), data=b''))
    put('nifti', 'truncated.nii.gz', b'\1' + gzip.compress(nifti1((4, 4, 4)))[:-20])
    # json (sidecars)
    put('json', 'sidecar.json', b'{"FlipAngle": 20, "RepetitionTime": 0.005, "EchoTime": [0.001, 0.002],\n'
        b' "FrameTimesStart": [0, 5, 10, 15], "ContrastAgentRelaxivity": 4.5}\n')
    put('json', 'acqtime.json', b'{"AcquisitionTime": ["10:00:00.5", "10:00:05.25"], "InversionTime": 1.2,'
        b' "nested": {"a": [1, {"b": null}], "c": true}, "s": "x\\u00e9\\n"}')
    put('json', 'wrongtype.json', b'{"FlipAngle": "30", "RepetitionTime": [], "AcquisitionTime": "12:00:00"}')
    put('json', 'bad.json', b'{"FlipAngle": 30,\n "RepetitionTime": .4}')
    # table: first byte = options (bit 0: ragged, bit 1: header)
    put('table', 'curve.txt', b'\0# t c\n0 0.1\n5 0.2\r\n10 0.35\n')
    put('table', 'aif.csv', b'\2time,cp\n0, 0\n1.5 ; 2.5\n3e0,\tnan\n')
    put('table', 'ragged.txt', b'\1\xef\xbb\xbf1 2 3\n4\n# c\n\n5 6\n')
    put('table', 'bad.txt', b'\0 1,,2\n3 oops\n1e999\n')
    # png: first byte = to_float mode
    put('png', 'grey8.png', b'\0' + png(5, 4))
    put('png', 'grey16.png', b'\1' + png(3, 3, bit_depth=16))
    put('png', 'rgb.png', b'\2' + png(4, 2, color_type=2))
    put('png', 'palette.png', b'\0' + png(4, 4, color_type=3))
    put('png', 'grey1.png', b'\0' + png(9, 2, bit_depth=1))
    put('png', 'rgba16.png', b'\1' + png(2, 2, bit_depth=16, color_type=6))
    # config (lumen keys and ROCKETSHIP dce_preferences.txt)
    put('config', 'lumen.txt', b'# lumen\nrelaxivity = 4.5\nhematocrit = "0.42";\nmodels = tofts,etofts\n'
        b'bounds = Ktrans=0:5,ve=0.001:1\nstart = Ktrans=0.1\nbackend = cpu\nblood-t1 = 1.6 % comment\n')
    put('config', 'rocketship.txt', b'force_cpu = 1\ngpu_tolerance = 1e-6\ngpu_max_n_iterations = 200\n'
        b'voxel_lower_limit_ktrans = 0\nvoxel_upper_limit_ve_tofts = 1\nvoxel_initial_value_vp_ex_tofts = 0.02\n'
        b'voxel_MaxIter = 50\nvoxel_TolFun = 1e-8\nfxr_fw = 0.8\nacceleration_backend = gpufit\naif_type = 3\n'
        b'unknown_key = 5\n')
    put('config', 'bad.txt', b'\xef\xbb\xbfrelaxivity\n= 3\nhematocrit = abc\n')


def dicom_seeds():
    """fuzz_dicom seeds: small test files of pydicom (Debian python3-pydicom), one per transfer
    syntax lumen decodes; byte 0 picks the decode path (0: a forked child, 1: in-process).
    They are pydicom's files, so they are not committed (.gitignore): fuzz/run.sh writes them
    with --dicom-only when fuzz/corpus/dicom is missing."""
    try:
        from pydicom.data import get_testdata_file
    except ImportError:
        print('make_corpus.py: pydicom not found, fuzz/corpus/dicom not written', file=sys.stderr)
        return
    for name in ['MR_small.dcm', 'MR_small_implicit.dcm', 'MR_small_bigendian.dcm', 'MR_small_RLE.dcm',
                 'MR_small_jpeg_ls_lossless.dcm', 'MR_small_jp2klossless.dcm', 'rtdose_1frame.dcm',
                 'rtdose_rle_1frame.dcm']:
        with open(get_testdata_file(name), 'rb') as f:
            put('dicom', name, b'\1' + f.read())
    with open(get_testdata_file('MR_small.dcm'), 'rb') as f:
        put('dicom', 'MR_small_fork.dcm', b'\0' + f.read())
    put('dicom', 'enhanced_mr.dcm', b'\1' + enhanced_mr())
    put('dicom', 'mosaic_mr.dcm', b'\1' + mosaic_mr())
    put('dicom', 'legacy_mr_implicit.dcm', b'\1' + legacy_mr_implicit())
    put('dicom', 'jpegls_split_frames.dcm', b'\1' + jpegls_split_frames(get_testdata_file))


def mr_dataset(sop_class, sop_instance):
    """A pydicom Dataset of that SOP class and instance, with its file meta (explicit VR little endian)."""
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = sop_class
    meta.MediaStorageSOPInstanceUID = sop_instance
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID, ds.SOPInstanceUID = sop_class, sop_instance
    return ds


def item(**kw):
    """A pydicom Dataset (a sequence item) with these elements."""
    from pydicom.dataset import Dataset
    d = Dataset()
    for k, v in kw.items():
        setattr(d, k, v)
    return d


def dicom_bytes(ds):
    """The bytes of ds as a file, explicit VR little endian."""
    import io
    ds.is_little_endian, ds.is_implicit_VR = True, False
    out = io.BytesIO()
    ds.save_as(out, write_like_original=False)
    return out.getvalue()


def mosaic_mr():
    """A small Siemens-style mosaic written with pydicom (4 tiles of 2 x 2 in 4 x 4): ImageType MOSAIC,
    NumberOfImagesInMosaic under "SIEMENS MR HEADER", a CSA image header "SV10" with
    NumberOfImagesInMosaic and SliceNormalVector, GE's group delay under GEMS_PARM_01, and the
    timing tags of a series (the private values lumen parses, for the fuzzer to mutate)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'cli'))
    from make_mosaic import csa  # the CSA header writer of the mosaic tests
    ds = mr_dataset('1.2.840.10008.5.1.4.1.1.4', '1.2.3.4.7')
    ds.ImageType = ['ORIGINAL', 'PRIMARY', 'M', 'MOSAIC']
    ds.AcquisitionDate, ds.AcquisitionTime, ds.AcquisitionDateTime = '20260101', '235959.5', '20260101235959.5'
    ds.Modality, ds.Manufacturer, ds.SeriesInstanceUID, ds.SeriesNumber = 'MR', 'SIEMENS', '1.2.3.4.8', 3
    ds.TriggerTime, ds.InstanceNumber, ds.TemporalPositionIdentifier = '0', 1, 1
    ds.add_new(0x00190010, 'LO', 'SIEMENS MR HEADER')
    ds.add_new(0x0019100A, 'US', 4)
    ds.ImagePositionPatient, ds.ImageOrientationPatient = [0, 0, 0], [1, 0, 0, 0, 1, 0]
    ds.add_new(0x00290010, 'LO', 'SIEMENS CSA HEADER')
    ds.add_new(0x00291010, 'OB', csa([('NumberOfImagesInMosaic', ['4']), ('SliceNormalVector', ['0', '0', '-1'])]))
    ds.add_new(0x00430010, 'LO', 'GEMS_PARM_01')
    ds.add_new(0x0043107C, 'FL', 3.0)
    ds.add_new(0x00541300, 'DS', '0')
    ds.Rows, ds.Columns, ds.PixelSpacing, ds.SpacingBetweenSlices = 4, 4, [1, 1], 2
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, 'MONOCHROME2'
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 0
    ds.PixelData = bytes(range(32))
    return dicom_bytes(ds)


def enhanced_mr():
    """A small Enhanced MR Image Storage file written with pydicom: 2 frames of 3 x 2, shared and
    per-frame functional groups (position, orientation, pixel measures, frame content with
    TemporalPositionIndex and FrameAcquisitionDateTime, trigger delay, MR timing, rescale)."""
    ds = mr_dataset('1.2.840.10008.5.1.4.1.1.4.1', '1.2.3.4.5')
    ds.Modality, ds.SeriesInstanceUID = 'MR', '1.2.3.4.6'
    ds.NumberOfFrames, ds.Rows, ds.Columns = 2, 2, 3
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, 'MONOCHROME2'
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
    shared = item(PlaneOrientationSequence=[item(ImageOrientationPatient=[1, 0, 0, 0, 1, 0])],
                  PixelMeasuresSequence=[item(PixelSpacing=[0.5, 0.75], SliceThickness=2)],
                  MRTimingAndRelatedParametersSequence=[item(RepetitionTime=5, FlipAngle=30)],
                  PixelValueTransformationSequence=[item(RescaleSlope=2, RescaleIntercept=-3, RescaleType='US')])
    ds.SharedFunctionalGroupsSequence = [shared]
    ds.PerFrameFunctionalGroupsSequence = [
        item(PlanePositionSequence=[item(ImagePositionPatient=[0, 0, 0])],
             FrameContentSequence=[item(TemporalPositionIndex=k + 1,
                                        FrameAcquisitionDateTime='2026010112000%d.500000+0100' % k)],
             CardiacSynchronizationSequence=[item(NominalCardiacTriggerDelayTime=250.0 * k)])
        for k in range(2)]
    ds.PerFrameFunctionalGroupsSequence[1].PixelValueTransformationSequence = [
        item(RescaleSlope=0.5, RescaleIntercept=1, RescaleType='US')]
    ds.PixelData = bytes(range(24))
    return dicom_bytes(ds)


def legacy_mr_implicit():
    """A Legacy Converted Enhanced MR file in implicit VR, its sequences of defined length (as
    gdcmconv --implicit writes them): TriggerTime per frame and RepetitionTime, FlipAngle, EchoTime
    shared in the Unassigned Converted Attributes sequences (dicom_frames.c)."""
    from pydicom.uid import ImplicitVRLittleEndian
    import io
    ds = mr_dataset('1.2.840.10008.5.1.4.1.1.4.4', '1.2.3.4.9')
    ds.file_meta.TransferSyntaxUID = ImplicitVRLittleEndian
    ds.Modality, ds.SeriesInstanceUID, ds.Manufacturer = 'MR', '1.2.3.4.10', 'X'
    ds.NumberOfFrames, ds.Rows, ds.Columns = 2, 2, 3
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, 'MONOCHROME2'
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 0
    ds.SharedFunctionalGroupsSequence = [item(
        PlaneOrientationSequence=[item(ImageOrientationPatient=[1, 0, 0, 0, 1, 0])],
        PixelMeasuresSequence=[item(PixelSpacing=[0.5, 0.75], SliceThickness=2)],
        UnassignedSharedConvertedAttributesSequence=[item(RepetitionTime='5', FlipAngle='30', EchoTime='2')])]
    ds.PerFrameFunctionalGroupsSequence = [
        item(PlanePositionSequence=[item(ImagePositionPatient=[0, 0, 0])],
             UnassignedPerFrameConvertedAttributesSequence=[item(TriggerTime=str(500 * k), InstanceNumber=str(k + 1))])
        for k in range(2)]
    ds.PixelData = bytes(range(24))
    ds.is_little_endian, ds.is_implicit_VR = True, True
    out = io.BytesIO()
    ds.save_as(out, write_like_original=False)
    return out.getvalue()


def jpegls_split_frames(get_testdata_file):
    """pydicom's JPEG-LS MR_small as a 2-frame image whose frames span 3 fragments each, without a
    basic offset table (dicom_frame_start.h)."""
    import io
    import pydicom
    from pydicom.encaps import encapsulate, generate_pixel_data_frame
    ds = pydicom.dcmread(get_testdata_file('MR_small_jpeg_ls_lossless.dcm'))
    frame = next(generate_pixel_data_frame(ds.PixelData, 1))
    ds.NumberOfFrames = 2
    ds.PixelData = encapsulate([frame, frame], fragments_per_frame=3, has_bot=False)
    out = io.BytesIO()
    ds.save_as(out, write_like_original=True)
    return out.getvalue()


if __name__ == '__main__':
    if sys.argv[1:] != ['--dicom-only']:
        main()
    dicom_seeds()
