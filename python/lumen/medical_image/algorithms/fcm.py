"""The module layout of medical_image.algorithms.fcm over lumen."""
from .._algorithms import FCMAlgorithm  # noqa: F401
