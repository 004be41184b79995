"""The module layout of medical_image.algorithms.custom_algorithm over lumen."""
from .._custom import CustomAlgorithm  # noqa: F401
