"""The module layout of medical_image.process.mammography over lumen."""
from .._algorithms import MammographyPreprocessing  # noqa: F401
