"""The module layout of medical_image.data.png_image over lumen."""
from .._image import PNGImage  # noqa: F401
