"""Siemens mosaic files for tests/cli/test_dicom_ge.sh, written with pydicom from a real GE series
(dcm_qa_ge's epiRT, one file per slice): each volume's slices become the tiles of one file, as a
Siemens EPI writes it: ImageType MOSAIC, NumberOfImagesInMosaic (0019,100A) under the creator
"SIEMENS MR HEADER", a CSA image header (0029,1010) with SliceNormalVector, and the
ImagePositionPatient of the whole mosaic (the first tile's corner moved back by half the mosaic's
extra size), so that a reader must undo it as dcm2niix does.

  make_mosaic.py SRC_FOLDER OUT_FOLDER [--descending]
      --descending: the tiles in descending slice order, the CSA normal negated and the position
      that of the last slice (a series acquired head to foot)."""
import os, struct, sys
import numpy as np
import pydicom
from pydicom.dataset import Dataset


def csa(items):
    """A CSA header "SV10": items is [(name, [text values])]."""
    out = b'SV10\x04\x03\x02\x01' + struct.pack('<II', len(items), 77)
    for name, values in items:
        out += name.encode().ljust(64, b'\0') + struct.pack('<i4siii', len(values), b'FD\0\0', 3, len(values), 77)
        for v in values:
            data = v.encode() + b'\0'
            out += struct.pack('<4i', len(data), len(data), 77, len(data)) + data.ljust((len(data) + 3) // 4 * 4, b'\0')
    return out


def main():
    src, out = sys.argv[1], sys.argv[2]
    descending = '--descending' in sys.argv
    files = [pydicom.dcmread(os.path.join(src, f)) for f in sorted(os.listdir(src))]
    files.sort(key=lambda d: int(d.InstanceNumber))
    iop = np.array([float(v) for v in files[0].ImageOrientationPatient])
    normal = np.cross(iop[:3], iop[3:])
    positions = sorted({tuple(float(v) for v in d.ImagePositionPatient) for d in files}, key=lambda p: np.dot(p, normal))
    nz = len(positions)
    volumes = len(files) // nz
    side = int(np.ceil(np.sqrt(nz)))
    rows, cols = int(files[0].Rows), int(files[0].Columns)
    dr, dc = (float(v) for v in files[0].PixelSpacing)
    os.makedirs(out, exist_ok=True)
    for v in range(volumes):
        by_pos = {tuple(float(x) for x in d.ImagePositionPatient): d for d in files[v * nz:(v + 1) * nz]}
        order = list(reversed(positions)) if descending else positions
        mosaic = np.zeros((side * rows, side * cols), dtype=files[0].pixel_array.dtype)
        for j, p in enumerate(order):
            r, c = divmod(j, side)
            mosaic[r * rows:(r + 1) * rows, c * cols:(c + 1) * cols] = by_pos[p].pixel_array
        ds = by_pos[order[0]].copy()
        first = np.array(order[0])
        fx, fy = (side * cols - cols) / 2, (side * rows - rows) / 2
        ipp = first - fx * dc * iop[:3] - fy * dr * iop[3:]
        ds.ImagePositionPatient = [f'{x:.6f}' for x in ipp]
        ds.Rows, ds.Columns = mosaic.shape
        ds.PixelData = mosaic.tobytes()
        ds.ImageType = ['ORIGINAL', 'PRIMARY', 'M', 'ND', 'MOSAIC']
        ds.Manufacturer = 'SIEMENS'
        ds.InstanceNumber = v + 1
        ds.SOPInstanceUID = pydicom.uid.generate_uid()
        ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
        ds.add_new(0x00190010, 'LO', 'SIEMENS MR HEADER')
        ds.add_new(0x0019100A, 'US', nz)
        n = -normal if descending else normal
        ds.add_new(0x00290010, 'LO', 'SIEMENS CSA HEADER')
        ds.add_new(0x00291010, 'OB', csa([('NumberOfImagesInMosaic', [str(nz)]),
                                          ('SliceNormalVector', ['%.8f' % x for x in n])]))
        ds.save_as(os.path.join(out, 'MR%04d.dcm' % (v + 1)), write_like_original=False)


if __name__ == '__main__':
    main()
