"""DICOM series for tests/cli/test_dicom_series.sh, written with pydicom (Debian python3-pydicom),
and the checks of lumen's outputs against references computed here, independently of lumen:

  qiba NII DIR [--uid U] [--desc D] [--fa DEG] [--every K] [--ge] [--acquisition-time]
       [--malformed-acq N] [--nifti PATH]
                                      one DICOM file per frame of a 4-D NIfTI (QIBA v6 Tofts):
                                      the NIfTI is dcm2niix's conversion (rows flipped), so DICOM row r
                                      is NIfTI y = ny-1-r; IPP/IOP/PixelSpacing/SliceThickness from its
                                      sform, TriggerTime = frame x 500 ms, TR 5 ms, FA 30 deg
  small DIR [--oblique] [--acquisition-time [--start S]] [--nonuniform]
                                      2 slices x 20 frames of 5 x 4 pixels (Tofts curves that differ in
                                      every voxel), and the same data as DIR.nii in dcm2niix's layout
                                      with a sidecar DIR.json (FlipAngle, TR, FrameTimesStart)
  retag FILE KEY=VALUE...             changes tags of one file (ImageOrientationPatient=a\\b\\..., ...)
  philips DIR                         a Philips-style series with MRScaleSlope; DIR.npy its precise values
  values NII NPY                      NII's voxels equal NPY's array (t, z, y, x)
  enhanced SRC OUT.dcm [--uid U] [--slice Z] [--items N] [--drop K] [--no-groups] [--legacy]
                                      ONE Enhanced MR Image Storage file (all slices x frames) of SRC:
                                      a qiba NIfTI (per-frame PlanePosition, TemporalPositionIndex,
                                      FrameAcquisitionDateTime; shared orientation, pixel measures, MR
                                      timing, rescale 0.5/-100), or DIR.nii written by `small` (per-frame
                                      NominalCardiacTriggerDelayTime and a rescale that differs between
                                      frames, slices in reverse order); frames written out of order.
                                      --slice Z: only slice Z; --items N: N more (or fewer) per-frame items than NumberOfFrames;
                                      --drop K: frame K left out (a missing frame); --no-groups: a plain
                                      multi-frame MR file without functional groups; --legacy: a Legacy
                                      Converted Enhanced MR file (TriggerTime, TR, FA, TE in the
                                      Unassigned Converted Attributes sequences, as PixelMed writes it)
  pixels DCM NII                      NII (lumen's read of DCM) equals pydicom's pixel_array x each
                                      frame's RescaleSlope + RescaleIntercept from its functional groups
  affine DIR MAP.nii.gz               the map's sform equals the affine dcm2niix gives for the series'
                                      tags (computed here from the tags, dcm2niix's rules)
  same A.nii.gz B.nii.gz              equal voxel values (NaN = NaN) and equal sform
  sform NII                           prints the sform (one row per line)
"""
import gzip, os, struct, sys
import numpy as np
import pydicom
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

MR_STORAGE = '1.2.840.10008.5.1.4.1.1.4'


def nii(path):
    """(dims, float64 voxels in NIfTI order x fastest, sform 4x4) of a single-file NIfTI-1."""
    d = (gzip.open if path.endswith('.gz') else open)(path, 'rb').read()
    dim = struct.unpack_from('<8h', d, 40)
    dt = struct.unpack_from('<h', d, 70)[0]
    off = int(struct.unpack_from('<f', d, 108)[0])
    slope, inter = struct.unpack_from('<ff', d, 112)
    dims = list(dim[1:1 + dim[0]])
    n = int(np.prod(dims))
    v = np.frombuffer(d, dtype={2: '<u1', 4: '<i2', 16: '<f4', 512: '<u2', 64: '<f8'}[dt], count=n,
                      offset=off).astype(np.float64)
    if slope not in (0, 1) or inter != 0:
        v = v * (slope or 1) + inter
    A = np.eye(4)
    for r, o in enumerate((280, 296, 312)):
        A[r] = struct.unpack_from('<4f', d, o)
    return dims, v.reshape(list(reversed(dims))), A


def nii_write(path, vol, A, dt_s):
    """vol (t, z, y, x) float32 as NIfTI-1 with sform/qform code 1 and sform A."""
    dims = list(reversed(vol.shape))
    hdr = bytearray(348)
    struct.pack_into('<i', hdr, 0, 348)
    struct.pack_into('<8h', hdr, 40, len(dims), *dims, *([1] * (7 - len(dims))))
    struct.pack_into('<hh', hdr, 70, 16, 32)
    sp = [np.linalg.norm(A[:3, k]) for k in range(3)]
    struct.pack_into('<8f', hdr, 76, 1, sp[0], sp[1], sp[2], dt_s, 1, 1, 1)
    struct.pack_into('<f', hdr, 108, 352)
    struct.pack_into('<f', hdr, 112, 1)
    hdr[123] = 2 | 8  # mm, s
    struct.pack_into('<hh', hdr, 252, 0, 1)  # qform 0, sform 1
    for r, o in enumerate((280, 296, 312)):
        struct.pack_into('<4f', hdr, o, *A[r])
    hdr[344:348] = b'n+1\x00'
    open(path, 'wb').write(bytes(hdr) + b'\x00' * 4 + vol.astype('<f4').tobytes())


def tm(seconds):
    """seconds of the day as a DICOM TM HHMMSS.FFFFFF"""
    h, rem = divmod(seconds, 3600)
    m, sec = divmod(rem, 60)
    return f'{int(h):02d}{int(m):02d}{sec:09.6f}'


def write_frame(path, pixels, uid, desc, ipp, iop, spacing, thickness, trigger_ms, number, instance, fa=30,
                acquisition_s=None, acquisition_text=None):
    """trigger_ms None: no TriggerTime; acquisition_s: AcquisitionTime instead of TriggerTime;
    acquisition_text: an AcquisitionTime written as it is, besides TriggerTime."""
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = MR_STORAGE
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID = MR_STORAGE
    ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
    ds.Modality = 'MR'
    ds.SeriesInstanceUID = uid
    ds.SeriesDescription = desc
    ds.SeriesNumber = number
    ds.InstanceNumber = instance
    ds.ImagePositionPatient = [f'{x:.6f}' for x in ipp]
    ds.ImageOrientationPatient = [f'{x:.6f}' for x in iop]
    ds.PixelSpacing = [f'{spacing[0]:g}', f'{spacing[1]:g}']  # row spacing \ column spacing
    ds.SliceThickness = f'{thickness:g}'
    if acquisition_s is None:
        if trigger_ms is not None:
            ds.TriggerTime = f'{trigger_ms:g}'
        if acquisition_text is not None:
            ds.AcquisitionTime = acquisition_text
    else:  # AcquisitionTime HHMMSS.FFFFFF instead
        ds.AcquisitionTime = tm(acquisition_s % 86400)
    ds.RepetitionTime = '5'
    ds.FlipAngle = f'{fa:g}'
    ds.Rows, ds.Columns = pixels.shape
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = 'MONOCHROME2'
    ds.BitsAllocated = ds.BitsStored = 16
    ds.HighBit = 15
    ds.PixelRepresentation = 0
    ds.PixelData = pixels.astype('<u2').tobytes()
    ds.is_little_endian, ds.is_implicit_VR = True, False
    ds.save_as(path, write_like_original=False)


def cmd_qiba(args):
    src, out = args[0], args[1]
    uid = args[args.index('--uid') + 1] if '--uid' in args else generate_uid()
    desc = args[args.index('--desc') + 1] if '--desc' in args else 'qiba v6 tofts'
    fa = float(args[args.index('--fa') + 1]) if '--fa' in args else 30
    dims, vol, A = nii(src)
    if len(dims) == 3:  # one volume (a VFA flip angle)
        dims, vol = dims + [1], vol[np.newaxis]
    nx, ny, nz, nt = dims
    os.makedirs(out, exist_ok=True)
    # dcm2niix's NIfTI (RAS, rows flipped) back to DICOM: LPS, first row = NIfTI y = ny-1
    lps = np.diag([-1, -1, 1, 1]) @ A
    ipp = (lps @ np.array([0, ny - 1, 0, 1]))[:3]
    row_dir = lps[:3, 0] / np.linalg.norm(lps[:3, 0])
    col_dir = -lps[:3, 1] / np.linalg.norm(lps[:3, 1])
    spacing = (np.linalg.norm(lps[:3, 1]), np.linalg.norm(lps[:3, 0]))
    # --every K: frames 0, K, 2K, ... only (their TriggerTime 500 ms x frame); --ge: as a GE scanner
    # (and QIBA v9) write it: one AcquisitionTime for every file, no TriggerTime in the first;
    # --acquisition-time: also an AcquisitionTime per frame (from 10:00:00), --malformed-acq N:
    # file N's is '0960.000' (as in QIBA's original v6 folder); --nifti PATH: the frames written, as
    # NIfTI (dcm2niix layout) for the reference run
    every = int(args[args.index('--every') + 1]) if '--every' in args else 1
    ge = '--ge' in args
    bad = int(args[args.index('--malformed-acq') + 1]) if '--malformed-acq' in args else -1
    frames = list(range(0, nt, every))
    for k, t in enumerate(frames):
        px = vol[t, 0][::-1, :]  # DICOM rows top-down
        acq = '101500' if ge else tm(36000 + 0.5 * t) if '--acquisition-time' in args else None
        if k == bad:
            acq = '0960.000'
        write_frame(os.path.join(out, f'IM{k:05d}.dcm'), px, uid, desc, ipp, list(row_dir) + list(col_dir), spacing,
                    np.linalg.norm(lps[:3, 2]), None if ge and k == 0 else 500.0 * t, 18, k + 1, fa,
                    acquisition_text=acq)
    if '--nifti' in args:
        nii_write(args[args.index('--nifti') + 1], vol[frames].astype(np.float32), A, 0.5 * every)
    print(uid)


def tofts(ktrans, ve, t_min):
    """Tofts tissue curve (mM) for a Parker-like biexponential plasma AIF, closed form enough for a test."""
    cp = 5.0 * (np.exp(-0.5 * np.clip(t_min - 0.5, 0, None)) - np.exp(-6 * np.clip(t_min - 0.5, 0, None)))
    dt = t_min[1] - t_min[0]
    kep = ktrans / ve
    return ktrans * np.convolve(cp, np.exp(-kep * t_min))[:len(t_min)] * dt


def cmd_small(args):
    """2 slices x 20 frames of 5 x 4: signal of SPGR (FA 30, TR 5 ms, T1 1 s, r1 4.5) from Tofts curves."""
    out = args[0]
    oblique = '--oblique' in args
    by_acquisition = '--acquisition-time' in args  # AcquisitionTime from 09:54:00 instead of TriggerTime
    start = float(args[args.index('--start') + 1]) if '--start' in args else 35640.0  # its first, s of the day
    # --nonuniform: 10 s frames, then 15 s from frame 10 on (stated in a sidecar for the NIfTI)
    times = [10.0 * t + (5.0 * (t - 10) if '--nonuniform' in args and t > 10 else 0) for t in range(20)]
    nx, ny, nz, nt = 5, 4, 2, 20
    t_min = np.arange(nt) * 10 / 60.0
    vol = np.zeros((nt, nz, ny, nx))  # dcm2niix layout: y = 0 the last DICOM row
    fa, tr, r10 = np.deg2rad(30), 0.005, 1.0
    for z in range(nz):
        for y in range(ny):
            for x in range(nx):
                c = tofts(0.05 + 0.02 * x + 0.01 * y + 0.1 * z, 0.2 + 0.05 * y + 0.1 * z, t_min)
                r1 = r10 + 4.5 * c
                e = np.exp(-tr * r1)
                vol[:, z, y, x] = np.round(1000 * np.sin(fa) * (1 - e) / (1 - np.cos(fa) * e) / 0.0865 * 10)
    if oblique:  # rotated 30 degrees about the LPS x axis, then 20 about z
        a, b = np.deg2rad(30), np.deg2rad(20)
        rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
        rz = np.array([[np.cos(b), -np.sin(b), 0], [np.sin(b), np.cos(b), 0], [0, 0, 1]])
        R = rz @ rx
    else:
        R = np.eye(3)
    row_dir, col_dir = R[:, 0], R[:, 1]
    normal = np.cross(row_dir, col_dir)
    spacing = (1.5, 0.8)  # row spacing (y), column spacing (x)
    step = 3.0
    origin = np.array([-10.0, 20.0, 5.0])
    uid = generate_uid()
    os.makedirs(out, exist_ok=True)
    k = 0
    # written in the reverse slice order, so that lumen has to sort them
    for z in reversed(range(nz)):
        for t in range(nt):
            ipp = origin + z * step * normal
            px = vol[t, z][::-1, :]
            write_frame(os.path.join(out, f'f{k:03d}.dcm'), px, uid, 'small', ipp, list(row_dir) + list(col_dir),
                        spacing, 2.0, 1000.0 * times[t], 7, k + 1,
                        acquisition_s=start + times[t] if by_acquisition else None)
            k += 1
    nii_write(out + '.nii', vol, tags_affine(out), 10.0)
    with open(out + '.json', 'w') as f:
        f.write('{"FlipAngle": 30, "RepetitionTime": 0.005, "FrameTimesStart": [%s]}\n' % ', '.join(map(str, times)))


def cmd_philips(args):
    """Philips-style classic series: 2 slices x 3 dynamics of 4 x 3, TemporalPositionIdentifier and
    TriggerTime, RescaleSlope/Intercept that change between dynamics and the private MRScaleSlope
    (2005,100E, FL) under "Philips MR Imaging DD 001"; DIR.npy: the precise values dcm2niix gives,
    (stored x RS + RI) / (RS x SS), as (t, z, y, x) in dcm2niix's layout (rows flipped)."""
    out = args[0]
    os.makedirs(out, exist_ok=True)
    uid = generate_uid()
    rng = np.random.default_rng(5)
    want = np.zeros((3, 2, 3, 4))
    k = 0
    for z in range(2):
        for t in range(3):
            px = rng.integers(0, 4000, size=(3, 4)).astype(np.uint16)
            rs, ri, ss = 1.5 + 0.25 * t, -20.0 + t, 0.03125
            path = os.path.join(out, f'IM{k:04d}.dcm')
            write_frame(path, px, uid, 'philips dyn', [0, 0, 4.0 * z], [1, 0, 0, 0, 1, 0], (1.0, 1.0), 4.0,
                        2000.0 * t, 9, k + 1)
            ds = pydicom.dcmread(path)
            ds.Manufacturer = 'Philips Medical Systems'
            ds.TemporalPositionIdentifier = t + 1
            ds.RescaleSlope, ds.RescaleIntercept = f'{rs:g}', f'{ri:g}'
            ds.add_new(0x20050010, 'LO', 'Philips MR Imaging DD 001')
            ds.add_new(0x2005100E, 'FL', ss)
            ds.save_as(path, write_like_original=False)
            want[t, z] = ((px.astype(np.float64) * rs + ri) / (rs * ss))[::-1, :]
            k += 1
    np.save(out + '.npy', want)


def cmd_values(args):
    """NII's voxels equal (1e-4 relative) the array of NPY, (t, z, y, x)."""
    _, v, _ = nii(args[0])
    want = np.load(args[1])
    if v.shape != want.shape or not np.allclose(v, want, rtol=1e-4, atol=1e-4):
        print(f'{args[0]}: shape {v.shape} vs {want.shape}, max difference '
              f'{np.abs(v - want).max() if v.shape == want.shape else "-"}')
        return 1
    return 0


ENHANCED_MR = '1.2.840.10008.5.1.4.1.1.4.1'
LEGACY_MR = '1.2.840.10008.5.1.4.1.1.4.4'  # Legacy Converted Enhanced MR Image Storage


def item(**kw):
    d = Dataset()
    for k, v in kw.items():
        setattr(d, k, v)
    return d


def frame_rescale(ds, k):
    """(slope, intercept) of frame k: per-frame PixelValueTransformation, else shared, else (1, 0)."""
    for groups in (ds.PerFrameFunctionalGroupsSequence[k], ds.SharedFunctionalGroupsSequence[0]):
        if 'PixelValueTransformationSequence' in groups:
            p = groups.PixelValueTransformationSequence[0]
            return float(p.RescaleSlope), float(p.RescaleIntercept)
    return 1.0, 0.0


def write_enhanced(path, frames, uid, desc, iop, spacing, thickness, shared_rescale, n_items=0, groups=True,
                   legacy=False):
    """frames: dicts with px (DICOM rows top-down, values after the modality LUT), ipp and any of
    tpi, acq (DT string), trigger_ms, rescale (slope, intercept). Stored = (value - intercept) / slope,
    exact in uint16 (checked). legacy: a Legacy Converted Enhanced MR image (PS3.3 C.7.6.16.2.25,
    as PixelMed's MultiFrameImageFactory writes one from a classic series): TriggerTime and
    InstanceNumber per frame, RepetitionTime, FlipAngle and EchoTime shared, in the Unassigned
    Per-Frame / Shared Converted Attributes sequences under their classic names."""
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = (LEGACY_MR if legacy else ENHANCED_MR) if groups else MR_STORAGE
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID = meta.MediaStorageSOPClassUID
    ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
    ds.Modality = 'MR'
    ds.SeriesInstanceUID = uid
    ds.SeriesDescription = desc
    ds.SeriesNumber = 21
    ds.InstanceNumber = 1
    ds.NumberOfFrames = len(frames)
    ds.Rows, ds.Columns = frames[0]['px'].shape
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = 'MONOCHROME2'
    ds.BitsAllocated = ds.BitsStored = 16
    ds.HighBit = 15
    ds.PixelRepresentation = 0
    stored = []
    for f in frames:
        slope, inter = f.get('rescale', shared_rescale)
        s = (f['px'] - inter) / slope
        if not (np.all(s == np.round(s)) and s.min() >= 0 and s.max() <= 65535):
            raise SystemExit(f'rescale {slope}/{inter} does not store the values exactly in uint16')
        stored.append(s.astype('<u2'))
    ds.PixelData = np.stack(stored).tobytes()
    if groups:
        shared = Dataset()
        shared.PlaneOrientationSequence = [item(ImageOrientationPatient=[f'{x:.6f}' for x in iop])]
        shared.PixelMeasuresSequence = [item(PixelSpacing=[f'{spacing[0]:g}', f'{spacing[1]:g}'],
                                             SliceThickness=f'{thickness:g}')]
        if legacy:
            ds.Manufacturer, ds.MagneticFieldStrength = 'LegacyConverter', '3'
            shared.UnassignedSharedConvertedAttributesSequence = [item(RepetitionTime='5', FlipAngle='30',
                                                                       EchoTime='2.5')]
        else:
            shared.MRTimingAndRelatedParametersSequence = [item(RepetitionTime='5', FlipAngle='30')]
        if shared_rescale != (1, 0):
            shared.PixelValueTransformationSequence = [item(RescaleSlope=f'{shared_rescale[0]:g}',
                                                            RescaleIntercept=f'{shared_rescale[1]:g}',
                                                            RescaleType='US')]
        ds.SharedFunctionalGroupsSequence = [shared]
        per = []
        for f in frames:
            it = Dataset()
            it.PlanePositionSequence = [item(ImagePositionPatient=[f'{x:.6f}' for x in f['ipp']])]
            fc = Dataset()
            if 'tpi' in f:
                fc.TemporalPositionIndex = f['tpi']
            if 'acq' in f:
                fc.FrameAcquisitionDateTime = f['acq']
            it.FrameContentSequence = [fc]
            if 'trigger_ms' in f and legacy:
                it.UnassignedPerFrameConvertedAttributesSequence = [
                    item(TriggerTime=f'{f["trigger_ms"]:g}', InstanceNumber=str(len(per) + 1))]
            elif 'trigger_ms' in f:
                it.CardiacSynchronizationSequence = [item(NominalCardiacTriggerDelayTime=f['trigger_ms'])]
            if 'rescale' in f:
                it.PixelValueTransformationSequence = [item(RescaleSlope=f'{f["rescale"][0]:g}',
                                                            RescaleIntercept=f'{f["rescale"][1]:g}',
                                                            RescaleType='US')]
            per.append(it)
        if n_items < 0:
            per = per[:n_items]
        per += [per[-1]] * max(n_items, 0)
        ds.PerFrameFunctionalGroupsSequence = per
    ds.is_little_endian, ds.is_implicit_VR = True, False
    ds.save_as(path, write_like_original=False)


def cmd_enhanced(args):
    import datetime
    src, out = args[0], args[1]
    uid = args[args.index('--uid') + 1] if '--uid' in args else generate_uid()
    n_items = int(args[args.index('--items') + 1]) if '--items' in args else 0
    drop = int(args[args.index('--drop') + 1]) if '--drop' in args else -1
    only = int(args[args.index('--slice') + 1]) if '--slice' in args else None
    dims, vol, A = nii(src)
    if len(dims) == 3:
        dims, vol = dims + [1], vol[np.newaxis]
    nx, ny, nz, nt = dims
    lps = np.diag([-1, -1, 1, 1]) @ A  # dcm2niix's layout back to DICOM, as cmd_qiba does
    row_dir = lps[:3, 0] / np.linalg.norm(lps[:3, 0])
    col_dir = -lps[:3, 1] / np.linalg.norm(lps[:3, 1])
    spacing = (np.linalg.norm(lps[:3, 1]), np.linalg.norm(lps[:3, 0]))
    qiba = src.endswith('.nii.gz')
    if not qiba:  # the small series' frame times, from its sidecar
        import json
        times = json.load(open(src[:-4] + '.json'))['FrameTimesStart']
    start = datetime.datetime(2026, 1, 1, 11, 59, 30)
    frames = []
    for z in reversed(range(nz)):  # slices in reverse order, frames interleaved: lumen has to sort
        if only is not None and z != only:
            continue
        for t in list(range(0, nt, 2)) + list(range(1, nt, 2)):
            f = {'px': vol[t, z][::-1, :], 'ipp': (lps @ np.array([0, ny - 1, z, 1]))[:3]}
            if qiba:  # frames 0.5 s apart (--dt 0.5 of the NIfTI run), crossing minutes
                f['tpi'] = t + 1
                f['acq'] = (start + datetime.timedelta(seconds=0.5 * t)).strftime('%Y%m%d%H%M%S.%f')
            else:  # the sidecar's frame times, as trigger delays; each frame its own rescale
                f['trigger_ms'] = 1000.0 * times[t]
                f['rescale'] = ((1.0, 0.0), (0.5, -10.0), (0.25, 5.0))[(t + z) % 3]
            if len(frames) != drop:
                frames.append(f)
            else:
                drop = -2
    if os.path.dirname(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
    write_enhanced(out, frames, uid, 'enhanced', list(row_dir) + list(col_dir), spacing, np.linalg.norm(lps[:3, 2]),
                   (0.5, -100.0), n_items, '--no-groups' not in args, '--legacy' in args)
    print(uid)


def cmd_pixels(args):
    ds = pydicom.dcmread(args[0])
    px = ds.pixel_array.astype(np.float64)
    want = np.stack([px[k] * s + i for k, (s, i) in enumerate(frame_rescale(ds, k) for k in range(px.shape[0]))])
    dims, got, _ = nii(args[1])
    if list(got.shape) != list(want.shape) or not np.array_equal(got, want.astype(np.float32)):
        print(f'lumen read {dims}, pydicom {want.shape}; first values {got.ravel()[:4]} vs {want.ravel()[:4]}')
        return 1
    if len({frame_rescale(ds, k) for k in range(px.shape[0])}) < 2:
        print('the frames do not have different rescale values')
        return 1
    return 0


def cmd_retag(args):
    ds = pydicom.dcmread(args[0])
    for kv in args[1:]:
        key, value = kv.split('=', 1)
        setattr(ds, key, value.split('\\') if '\\' in value else value)
    ds.save_as(args[0], write_like_original=False)


def tags_affine(folder):
    """dcm2niix's NIfTI affine of a single-frame series, from the tags alone: LPS voxel->world with
    x along the row cosines (column spacing), y along the column cosines (row spacing), slices
    sorted along the normal with the step from the first and last positions (one slice: the normal
    x SliceThickness); then rows flipped (dcm2niix's default) and LPS -> RAS (x, y negated)."""
    dss = [pydicom.dcmread(os.path.join(folder, f), stop_before_pixels=True)
           for f in sorted(os.listdir(folder)) if not f.startswith('.')]
    iop = np.array([float(v) for v in dss[0].ImageOrientationPatient])
    r, c = iop[:3], iop[3:]
    n = np.cross(r, c)
    pos = sorted({tuple(round(float(v), 6) for v in d.ImagePositionPatient) for d in dss},
                 key=lambda p: np.dot(p, n))
    p0 = np.array(pos[0])
    dr, dc = (float(v) for v in dss[0].PixelSpacing)
    colk = (np.array(pos[-1]) - p0) / (len(pos) - 1) if len(pos) > 1 else n * float(dss[0].SliceThickness)
    M = np.eye(4)
    M[:3, 0], M[:3, 1], M[:3, 2], M[:3, 3] = r * dc, c * dr, colk, p0
    rows = int(dss[0].Rows)
    flip = np.eye(4)
    flip[1, 1], flip[1, 3] = -1, rows - 1
    return np.diag([-1, -1, 1, 1]) @ M @ flip


def cmd_affine(args):
    want = tags_affine(args[0])
    _, _, got = nii(args[1])
    if not np.allclose(got, want, atol=1e-3):
        print(f'sform of {args[1]}:\n{got}\nexpected (dcm2niix from the tags):\n{want}')
        return 1
    return 0


def cmd_same(args):
    da, va, aa = nii(args[0])
    db, vb, ab = nii(args[1])
    if da != db:
        print(f'dims {da} != {db}')
        return 1
    bad = ~((va == vb) | (np.isnan(va) & np.isnan(vb)))
    if bad.any():
        i = np.argwhere(bad)[0]
        print(f'{bad.sum()} voxels differ, first {tuple(i)}: {va[tuple(i)]} vs {vb[tuple(i)]}')
        return 1
    if not np.allclose(aa, ab, atol=1e-4):
        print(f'sform differs:\n{aa}\n{ab}')
        return 1
    finite = np.isfinite(va).sum()
    if finite == 0:
        print('no finite value in the maps')
        return 1
    return 0


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == 'sform':
        print(nii(args[0])[2])
        return 0
    return {'qiba': cmd_qiba, 'small': cmd_small, 'retag': cmd_retag, 'affine': cmd_affine,
            'philips': cmd_philips, 'values': cmd_values,
            'same': cmd_same, 'enhanced': cmd_enhanced, 'pixels': cmd_pixels}[cmd](args) or 0


if __name__ == '__main__':
    sys.exit(main())
