"""The module layout of medical_image.utils.downloader (a placeholder: see _downloader.py) over lumen."""
from .._downloader import download  # noqa: F401
