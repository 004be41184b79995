"""The module layout of medical_image.algorithms.deep_segmentation (a placeholder: lumen has no
deep-learning segmentation) over lumen."""
from .._deep import DeepSegmentationAlgorithm, DEFAULT_MODEL_SERVER_URL  # noqa: F401
