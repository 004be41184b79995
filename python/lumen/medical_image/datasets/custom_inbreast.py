"""The module layout of medical_image.datasets.custom_inbreast (a placeholder: needs the INbreast
data) over lumen."""
from .._datasets import CustomINbreastDataset  # noqa: F401
