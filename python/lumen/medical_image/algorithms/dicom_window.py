"""The module layout of medical_image.algorithms.dicom_window over lumen."""
from .._algorithms import DicomWindowAlgorithm, GrailWindowAlgorithm  # noqa: F401
