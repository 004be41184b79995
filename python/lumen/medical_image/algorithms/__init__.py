"""The package layout of medical_image.algorithms over lumen."""
from .algorithm import Algorithm
from .FEBDS import FebdsAlgorithm
from .fcm import FCMAlgorithm
from .pfcm import PFCMAlgorithm
from .top_hat import TopHatAlgorithm
from .kmeans import KMeansAlgorithm
from .breast_mask import BreastMaskAlgorithm
from .dicom_window import DicomWindowAlgorithm, GrailWindowAlgorithm
from .bit_depth_norm import BitDepthNormAlgorithm
from .sbrg import SbrgAlgorithm
from .deep_segmentation import DeepSegmentationAlgorithm

__all__ = ["Algorithm", "FebdsAlgorithm", "FCMAlgorithm", "PFCMAlgorithm", "TopHatAlgorithm",
           "KMeansAlgorithm", "BreastMaskAlgorithm", "DicomWindowAlgorithm", "GrailWindowAlgorithm",
           "BitDepthNormAlgorithm", "SbrgAlgorithm", "DeepSegmentationAlgorithm"]
