"""medical_image.utils.image_utils: TensorConverter, ImageExporter, ImageVisualizer and
MathematicalOperations. torch and matplotlib are optional: TensorConverter works on numpy
pixel data too, ImageVisualizer imports matplotlib when called (ImportError naming the extra)."""
import os

import numpy as np

from . import _arrays
from ._errors import ErrorMessages
from ._image import requires_loaded
from ._logging import logger


class TensorConverter(object):

    @staticmethod
    def to_numpy(image):
        """The pixels as a host numpy array."""
        data = image.pixel_data
        if data is None or not (_arrays.is_tensor(data) or isinstance(data, np.ndarray)):
            raise ErrorMessages.invalid_pixel_data()
        return _arrays.to_numpy(data)

    @staticmethod
    def ensure_tensor(image, device=None, dtype=None):
        """The pixels converted to dtype (and, for a torch tensor, moved to device); stored back
        and returned. Without torch the pixels stay numpy (device is ignored)."""
        data = image.pixel_data
        if data is None or not (_arrays.is_tensor(data) or isinstance(data, np.ndarray)):
            raise ErrorMessages.invalid_pixel_data()
        if _arrays.is_tensor(data):
            image._pixels = data.to(device=device or data.device, dtype=dtype or data.dtype)
        elif dtype is not None:
            image._pixels = data.astype(dtype)
        return image.pixel_data


class ImageExporter(object):
    """Writes an image to PNG/JPEG/TIFF beside its file (or dummy_data/sample_saved.*) with Pillow."""

    @staticmethod
    def save_as(image, format="PNG"):
        try:
            from PIL import Image as PILImage
        except ImportError:
            raise ImportError("ImageExporter.save_as needs Pillow (pip install pillow)")
        base = os.path.splitext(image.file_path)[0] if image.file_path is not None else "dummy_data/sample_saved"
        path = "%s.%s" % (base, format.lower())
        a = TensorConverter.to_numpy(image)
        if a.dtype in (np.float32, np.float64):
            a = np.clip(a, 0, 255).astype(np.uint8)
        PILImage.fromarray(np.ascontiguousarray(a)).save(path, format=format)
        logger.info("Image saved as %s", path)
        return path


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("ImageVisualizer needs matplotlib, which lumen does not require: "
                          "pip install matplotlib (the 'plot' extra)")
    return plt


class ImageVisualizer(object):

    @staticmethod
    def show(image, cmap="gray", title=None):
        if image.pixel_data is None:
            raise ErrorMessages.invalid_pixel_data()
        plt = _pyplot()
        plt.imshow(TensorConverter.to_numpy(image), cmap=cmap)
        if title:
            plt.title(title)
        plt.axis("off")
        plt.show()

    @staticmethod
    def compare(before, after, title_before="Before", title_after="After"):
        if before.pixel_data is None or after.pixel_data is None:
            raise ErrorMessages.invalid_pixel_data()
        plt = _pyplot()
        _, axes = plt.subplots(1, 2, figsize=(10, 5))
        for ax, img, title in ((axes[0], before, title_before), (axes[1], after, title_after)):
            ax.imshow(TensorConverter.to_numpy(img), cmap="gray")
            ax.set_title(title)
            ax.axis("off")
        plt.show()


class MathematicalOperations(object):

    @staticmethod
    @requires_loaded
    def abs(image, out):
        from .. import _image_ops
        out.pixel_data = _image_ops.absolute(np.ascontiguousarray(image._array, np.float32))
        return out

    @staticmethod
    def euclidean_distance_sq(Z, V):
        """(c, N) squared distances between the rows of V (c, d) and of Z (N, d); a torch tensor
        when Z is one."""
        z = _arrays.to_numpy(Z).astype(np.float32)
        v = _arrays.to_numpy(V).astype(np.float32)
        d2 = ((v[:, None, :] - z[None, :, :]) ** 2).sum(axis=2)
        return _arrays.to_backend(d2) if _arrays.is_tensor(Z) else d2

    @staticmethod
    @requires_loaded
    def normalize_12bit(image, out):
        """clamp(pixels / 4095, 0, 1) as float32."""
        out.pixel_data = np.clip(np.asarray(image._array, np.float32) / np.float32(4095.0), 0.0, 1.0)
        return out
