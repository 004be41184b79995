"""The module layout of medical_image.data.dicom_image over lumen."""
from .._dicom import DicomImage, DicomHeader  # noqa: F401
