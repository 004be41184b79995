"""The module layout of medical_image.process.threshold over lumen."""
from .._process import Threshold  # noqa: F401
