"""The module layout of medical_image.process.morphology over lumen."""
from .._process import MorphologyOperations  # noqa: F401
