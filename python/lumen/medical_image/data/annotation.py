"""The module layout of medical_image.data.annotation over lumen."""
from .._annotation import Annotation, GeometryType  # noqa: F401
