"""The module layout of medical_image.algorithms.top_hat over lumen."""
from .._algorithms import TopHatAlgorithm  # noqa: F401
