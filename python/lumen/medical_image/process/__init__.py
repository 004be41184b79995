"""The package layout of medical_image.process over lumen."""
from .filters import Filters
from .morphology import MorphologyOperations
from .threshold import Threshold
from .frequency import FrequencyOperations
from .metrics import Metrics
from .mammography import MammographyPreprocessing

__all__ = ["Filters", "MorphologyOperations", "Threshold", "FrequencyOperations", "Metrics",
           "MammographyPreprocessing"]
