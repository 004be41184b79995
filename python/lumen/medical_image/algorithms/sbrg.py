"""The module layout of medical_image.algorithms.sbrg over lumen."""
from .._algorithms import SbrgAlgorithm  # noqa: F401
