"""The module layout of medical_image.process.filters over lumen."""
from .._process import Filters  # noqa: F401
