"""The module layout of medical_image.data.region_of_interest over lumen."""
from .._roi import RegionOfInterest  # noqa: F401
