"""The module layout of medical_image.algorithms.algorithm over lumen."""
from .._algorithms import Algorithm  # noqa: F401
