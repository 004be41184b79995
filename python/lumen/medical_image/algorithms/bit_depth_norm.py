"""The module layout of medical_image.algorithms.bit_depth_norm over lumen."""
from .._algorithms import BitDepthNormAlgorithm  # noqa: F401
