"""The module layout of medical_image.utils.image_utils over lumen."""
from .._image_utils import TensorConverter, ImageExporter, ImageVisualizer, MathematicalOperations  # noqa: F401
