"""medical_image.data.image.Image over lumen: pixel_data is held as _arrays.py says (a CPU torch
tensor when torch is installed, else numpy; the original always holds a torch tensor); arrays
given to from_array become float32, as the original's .float().

Image is concrete here (the original's is abstract): Image.from_file reads PNG or NIfTI at
once through lumen's readers; load() is then a no-op. to(device) records the device the ops
run on (lumen moves the data per op); pin_memory() is a no-op (lumen pins its own staging
buffers)."""
import copy
import json
import os

import numpy as np

from ._device import Device
from ._files import read_array
from . import _arrays
from ._annotation import Annotation


class DicomDataNotLoadedError(ValueError):
    """An Image without pixel data given to an op (the original's error of the same name)."""


def _as_float32(array):
    if not (_arrays.is_tensor(array) or isinstance(array, np.ndarray)):
        raise TypeError("array must be a NumPy array or a PyTorch tensor")
    return _arrays.as_float32(array)


class Image(object):
    """An image: pixel_data (numpy float32, or None before loading), width, height, device."""

    def __init__(self, file_path=None, array=None, width=None, height=None, source_image=None):
        self.file_path = None
        self._width, self._height = width, height
        self._pixels = None
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
            self._pixels = _arrays.to_backend(_arrays.clone(source_image.pixel_data))
            self.annotations = [a.copy() for a in source_image.annotations] if source_image.annotations else None

    @property
    def pixel_data(self):
        """The pixels: a torch tensor when torch is installed, else a numpy array (or None)."""
        return self._pixels

    @pixel_data.setter
    def pixel_data(self, value):
        self._pixels = _arrays.to_backend(value)

    @property
    def _array(self):
        """A numpy view of pixel_data (what lumen computes on: float32 when lumen does not take
        the stored type), or None."""
        return _arrays.for_lumen(_arrays.to_numpy(self._pixels))

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
        """Pins a torch tensor's memory where torch can (a CUDA build); numpy stays as it is
        (lumen stages its own device copies). Returns self."""
        if _arrays.is_tensor(self._pixels) and not self._pixels.is_pinned():
            try:
                self._pixels = self._pixels.pin_memory()
            except RuntimeError:  # torch without a CUDA driver cannot pin
                pass
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
        new._pixels = _arrays.clone(self._pixels)
        new.annotations = [a.copy() for a in self.annotations] if self.annotations else None
        for heavy in ("dicom_data", "_pil_image"):  # as the original: the heavy objects stay behind
            if hasattr(self, heavy):
                setattr(new, heavy, None)
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

    def add_annotation(self, annotation):
        if self.annotations is None:
            self.annotations = []
        self.annotations.append(annotation)

    def remove_annotation(self, index):
        if self.annotations is None or not -len(self.annotations) <= index < len(self.annotations):
            raise IndexError("Annotation index %s out of range" % index)
        return self.annotations.pop(index)

    def to_json(self, file_path=None):
        """The image's path, size, class name and annotations (no pixels) as JSON; also written
        to file_path when given."""
        text = json.dumps({"file_path": self.file_path, "width": self.width, "height": self.height,
                           "image_type": type(self).__name__,
                           "annotations": [a.to_dict() for a in (self.annotations or [])]}, indent=2)
        if file_path:
            with open(file_path, "w") as f:
                f.write(text)
        return text

    @classmethod
    def from_json(cls, json_input):
        """An image of this class from to_json's text or a file holding it (pixels not loaded;
        a file_path that no longer exists is dropped)."""
        data = _json_data(json_input)
        path = data.get("file_path")
        img = cls.__new__(cls)
        Image.__init__(img, file_path=path if path and os.path.exists(path) else None,
                       width=data.get("width"), height=data.get("height"))
        for heavy in cls._heavy:
            setattr(img, heavy, None)
        if data.get("annotations"):
            img.annotations = [Annotation.from_dict(a) for a in data["annotations"]]
        return img

    _heavy = ()  # attributes a subclass holds its decoder's objects in (None until load())

    def display_info(self):
        """Logs the path, pixel type and shape, size and annotation count (logger "medical_image")."""
        from ._logging import logger
        logger.info("=== Image Info ===")
        logger.info("File: %s", os.path.basename(self.file_path) if self.file_path else "<None>")
        if self.pixel_data is not None:
            logger.info("Pixel Data: Loaded, %s, shape %s, device %s", self.pixel_data.dtype,
                        tuple(self.pixel_data.shape), self.device)
        else:
            logger.info("Pixel Data: Not loaded")
        logger.info("Width: %s  Height: %s", self.width, self.height)
        logger.info("Annotations: %s", "%d items" % len(self.annotations) if self.annotations else "None")

    def __repr__(self):
        status = "loaded" if self.pixel_data is not None else "unloaded"
        return "%s(path='%s', %sx%s, %s, device=%s)" % (self.__class__.__name__, self.file_path, self.width,
                                                       self.height, status, self.device)


def _json_data(json_input):
    if os.path.isfile(json_input):
        with open(json_input) as f:
            return json.load(f)
    return json.loads(json_input)


def image_from_json(json_input):
    """The Image subclass named by the JSON's image_type (DicomImage, PNGImage, else InMemoryImage)."""
    from ._dicom import DicomImage
    kinds = {"DicomImage": DicomImage, "PNGImage": PNGImage, "InMemoryImage": InMemoryImage}
    return kinds.get(_json_data(json_input).get("image_type"), InMemoryImage).from_json(json_input)


class InMemoryImage(Image):
    """An Image without a file (the original's InMemoryImage)."""


class PNGImage(Image):
    """An Image read from a .png file on load() (lumen's PNG reader: colour becomes luminance;
    the original keeps Pillow's (H, W, 3))."""
    _heavy = ("_pil_image",)

    def __init__(self, file_path):
        super().__init__(file_path=file_path)
        if os.path.splitext(self.file_path)[1].lower() != ".png":
            raise ValueError("Unsupported file type: %s" % os.path.splitext(self.file_path)[1])
        self._pil_image = None


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
