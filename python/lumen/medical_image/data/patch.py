"""The module layout of medical_image.data.patch over lumen."""
from .._patch import Patch, PatchGrid  # noqa: F401
