"""The module layout of medical_image.algorithms.pfcm over lumen."""
from .._algorithms import PFCMAlgorithm  # noqa: F401
