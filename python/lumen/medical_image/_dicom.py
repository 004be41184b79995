"""medical_image.data.dicom_image.DicomImage over lumen's DICOM reader (lumen.read_image): load()
gives the stored values as pydicom's pixel_array does (lumen's modality LUT and MONOCHROME1
inversion are undone exactly, in the stored integer type), width/height from the header, and
dicom_data: the header as a pydicom Dataset when pydicom is installed, else a DicomHeader with
the same attribute names for what lumen reads."""
import os

import numpy as np

from . import _arrays
from ._image import Image, DicomDataNotLoadedError


class DicomHeader(object):
    """The header fields lumen reports, under pydicom's keywords (Rows, Columns, BitsAllocated,
    BitsStored, PixelRepresentation, PhotometricInterpretation, RescaleSlope, RescaleIntercept,
    WindowCenter, WindowWidth, Modality); used when pydicom is absent."""

    def __init__(self, meta):
        self.Rows, self.Columns = meta.get("rows"), meta.get("columns")
        self.BitsAllocated, self.BitsStored = meta.get("bits_allocated"), meta.get("bits_stored")
        self.PixelRepresentation = meta.get("pixel_representation")
        self.PhotometricInterpretation = meta.get("photometric")
        self.RescaleSlope, self.RescaleIntercept = meta.get("rescale_slope"), meta.get("rescale_intercept")
        self.Modality = meta.get("modality")
        if meta.get("window_center") is not None:
            self.WindowCenter, self.WindowWidth = meta["window_center"], meta["window_width"]


def stored_values(data, meta):
    """lumen's float32 (modality LUT applied, MONOCHROME1 inverted) back to the stored integers,
    in the type pydicom's pixel_array has (u)int8/16/32 by BitsAllocated and PixelRepresentation."""
    slope = float(meta.get("rescale_slope") or 1.0)
    inter = float(meta.get("rescale_intercept") or 0.0)
    bits = int(meta.get("bits_stored") or 16)
    signed = bool(meta.get("pixel_representation"))
    s = (np.asarray(data, np.float64) - inter) / slope
    if meta.get("inverted"):
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        s = lo + hi - s
    alloc = int(meta.get("bits_allocated") or 16)
    dtype = np.dtype("%s%d" % ("int" if signed else "uint", max(8, min(alloc, 32))))
    return np.rint(s).astype(dtype)


def _header(path, meta):
    try:
        import pydicom
    except ImportError:
        return DicomHeader(meta)
    return pydicom.dcmread(path, stop_before_pixels=True)


class DicomImage(Image):
    """A DICOM file read on load() by lumen (also from_array / source_image, as every Image)."""
    _heavy = ("dicom_data",)

    def __init__(self, file_path=None, array=None, width=None, height=None, source_image=None):
        super().__init__(file_path=file_path, array=array, width=width, height=height, source_image=source_image)
        if file_path:
            ext = os.path.splitext(self.file_path)[1].lower()
            if ext != ".dcm":
                raise ValueError("Unsupported file type: %s" % ext)
        self.dicom_data = None

    def load(self):
        """Reads the file: pixel_data the stored values (as pydicom's pixel_array), dicom_data the header."""
        import lumen
        data, meta = lumen.read_image(self.file_path, format="dicom")
        self.pixel_data = stored_values(data, meta)
        self.dicom_data = _header(self.file_path, meta)
        self._width, self._height = meta.get("columns"), meta.get("rows")

    def save(self):
        """Writes the pixels (uint16, MONOCHROME2) to NAME_modified.dcm beside the file (needs pydicom)."""
        if self.dicom_data is None:
            raise DicomDataNotLoadedError("DICOM data not loaded. Call .load() first.")
        import pydicom
        ds = pydicom.dcmread(self.file_path)
        ds.set_pixel_data(np.ascontiguousarray(_arrays.to_numpy(self.pixel_data)).astype(np.uint16), "MONOCHROME2", 16)
        out = os.path.splitext(self.file_path)[0] + "_modified.dcm"
        ds.save_as(out)
        return out

    def __repr__(self):
        status = "loaded" if self.pixel_data is not None else "unloaded"
        return "DicomImage(path='%s', %sx%s, %s)" % (self.file_path, self.width, self.height, status)
