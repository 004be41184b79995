"""medical_image.data.Image over numpy: pixel_data is a float32 numpy array (the original holds
a float32 torch tensor); a torch tensor given to from_array is copied to the host as numpy.

Image is concrete here (the original's is abstract): Image.from_file reads PNG or NIfTI at
once through lumen's readers; load() is then a no-op. to(device) records the device the ops
run on (lumen moves the data per op); pin_memory() is a no-op (lumen pins its own staging
buffers)."""
import copy
import os

import numpy as np

from ._device import Device
from ._files import read_array


class DicomDataNotLoadedError(ValueError):
    """An Image without pixel data given to an op (the original's error of the same name)."""


def _as_float32(array):
    if hasattr(array, "detach") and hasattr(array, "cpu"):  # a torch tensor, without importing torch
        array = array.detach().cpu().float().numpy()
    if not isinstance(array, np.ndarray):
        raise TypeError("array must be a NumPy array or a PyTorch tensor")
    return np.ascontiguousarray(array, dtype=np.float32)


class Image(object):
    """An image: pixel_data (numpy float32, or None before loading), width, height, device."""

    def __init__(self, file_path=None, array=None, width=None, height=None, source_image=None):
        self.file_path = None
        self._width, self._height = width, height
        self.pixel_data = None
        self._device = Device("cpu")
        self.annotations = None
        if file_path is not None:
            if not os.path.exists(file_path):
                raise FileNotFoundError("File not found: %s" % file_path)
            self.file_path = file_path
        elif array is not None:
            self.pixel_data = _as_float32(array)
        elif source_image is not None:
            self.file_path = source_image.file_path
            self._width, self._height = source_image._width, source_image._height
            if source_image.pixel_data is not None:
                self.pixel_data = np.array(source_image.pixel_data, copy=True)
            self.annotations = copy.deepcopy(source_image.annotations)

    @property
    def width(self):
        return int(self.pixel_data.shape[-1]) if self.pixel_data is not None else self._width

    @width.setter
    def width(self, value):
        self._width = value

    @property
    def height(self):
        return int(self.pixel_data.shape[-2]) if self.pixel_data is not None else self._height

    @height.setter
    def height(self, value):
        self._height = value

    @property
    def device(self):
        return self._device

    def to(self, device):
        """Records the device ops on this image run on ("cpu", "cuda", "cuda:N"); returns self."""
        self._device = Device(device)
        return self

    def pin_memory(self):
        """No-op (numpy host memory; lumen stages device copies itself); returns self."""
        return self

    def ensure_loaded(self):
        if self.pixel_data is None:
            raise DicomDataNotLoadedError("Call .load() first")
        return self

    def load(self):
        """Reads the file (PNG, NIfTI) when the pixels are not loaded yet; returns None."""
        if self.pixel_data is None and self.file_path is not None:
            self.pixel_data = read_array(self.file_path)

    def save(self):
        """Not provided: write results with lumen's writers (lumen.write_image where available)."""
        raise NotImplementedError("lumen.medical_image.Image.save: use lumen's image writers")

    def clone(self):
        new = self.__class__.__new__(self.__class__)
        new.file_path = self.file_path
        new._width, new._height, new._device = self._width, self._height, self._device
        new.pixel_data = None if self.pixel_data is None else np.array(self.pixel_data, copy=True)
        new.annotations = copy.deepcopy(self.annotations)
        return new

    @classmethod
    def from_file(cls, file_path):
        """Reads a PNG (.png: the stored values as float32) or NIfTI (.nii, .nii.gz) file now
        (the original defers reading to load())."""
        img = cls(file_path=file_path)
        img.load()
        return img

    @classmethod
    def from_image(cls, other_image):
        return cls(source_image=other_image)

    @classmethod
    def from_array(cls, array):
        return cls(array=array)

    @classmethod
    def empty(cls, width=None, height=None):
        return cls(width=width, height=height)

    def __repr__(self):
        status = "loaded" if self.pixel_data is not None else "unloaded"
        return "%s(path='%s', %sx%s, %s, device=%s)" % (self.__class__.__name__, self.file_path, self.width,
                                                       self.height, status, self.device)


class InMemoryImage(Image):
    """An Image without a file (the original's InMemoryImage)."""


class PNGImage(Image):
    """An Image read from a .png file on load()."""

    def __init__(self, file_path):
        super().__init__(file_path=file_path)
        if os.path.splitext(self.file_path)[1].lower() != ".png":
            raise ValueError("Unsupported file type: %s" % os.path.splitext(self.file_path)[1])


def requires_loaded(func):
    """Raises DicomDataNotLoadedError when an Image argument has no pixel data."""
    import functools

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, Image) and a.pixel_data is None:
                raise DicomDataNotLoadedError("%s: Image pixel_data is None. Call .load() first." % func.__name__)
        return func(*args, **kwargs)

    return wrapper
