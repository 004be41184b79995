"""The module layout of medical_image.data.in_memory_image over lumen."""
from .._image import InMemoryImage  # noqa: F401
