"""The package layout of medical_image.data over lumen."""
from .annotation import Annotation, GeometryType
from .image import Image, requires_loaded, image_from_json
from .dicom_image import DicomImage
from .png_image import PNGImage
from .in_memory_image import InMemoryImage
from .patch import PatchGrid, Patch
from .region_of_interest import RegionOfInterest

__all__ = ["Annotation", "GeometryType", "Image", "requires_loaded", "image_from_json", "DicomImage",
           "PNGImage", "InMemoryImage", "PatchGrid", "Patch", "RegionOfInterest"]
