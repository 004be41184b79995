"""The module layout of medical_image.utils.mask_utils (placeholders: see _downloader.py) over lumen."""
from .._downloader import parse_inbreast_xml, xml_to_binary_mask, load_tif_mask, stack_dicom_masks  # noqa: F401
