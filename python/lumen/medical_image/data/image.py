"""The module layout of medical_image.data.image over lumen."""
from .._image import Image, requires_loaded, image_from_json, DicomDataNotLoadedError  # noqa: F401
