"""The module layout of medical_image.utils.pairing (placeholders: see _downloader.py) over lumen."""
from .._downloader import pair_inbreast, pair_custom_inbreast, pair_cbis_ddsm  # noqa: F401
