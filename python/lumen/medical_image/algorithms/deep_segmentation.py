"""The module layout of medical_image.algorithms.deep_segmentation over lumen:
DeepSegmentationAlgorithm (a torch segmentation model run by sliding windows; needs torch) and
the model server's constants."""
from .._deep import (DeepSegmentationAlgorithm, DEFAULT_MODEL_SERVER_URL, DEFAULT_CACHE_DIR,  # noqa: F401
                     DEFAULT_BATCH_PIXELS, KNOWN_ARCHITECTURES, KNOWN_LOSSES, KNOWN_DATASETS)
