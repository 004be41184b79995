"""The module layout of medical_image.process.frequency over lumen."""
from .._process import FrequencyOperations  # noqa: F401
