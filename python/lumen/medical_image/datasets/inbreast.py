"""The module layout of medical_image.datasets.inbreast (a placeholder: needs the INbreast data)
over lumen."""
from .._datasets import INbreastDataset  # noqa: F401
