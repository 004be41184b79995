"""The module layout of medical_image.utils.annotation (the data.annotation names, as the original
re-exports them) over lumen."""
from .._annotation import Annotation, GeometryType  # noqa: F401
