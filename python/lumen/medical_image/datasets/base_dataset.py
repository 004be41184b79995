"""The module layout of medical_image.datasets.base_dataset over lumen."""
from .._datasets import BaseDataset  # noqa: F401
