"""The module layout of medical_image.algorithms.breast_mask over lumen."""
from .._algorithms import BreastMaskAlgorithm  # noqa: F401
