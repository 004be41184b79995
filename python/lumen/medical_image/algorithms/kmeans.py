"""The module layout of medical_image.algorithms.kmeans over lumen."""
from .._algorithms import KMeansAlgorithm  # noqa: F401
