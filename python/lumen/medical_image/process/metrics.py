"""The module layout of medical_image.process.metrics over lumen."""
from .._process import Metrics  # noqa: F401
