"""The module layout of medical_image.algorithms.FEBDS over lumen."""
from .._algorithms import FebdsAlgorithm  # noqa: F401
