"""The module layout of medical_image.utils.logging over lumen."""
from .._logging import logger, configure_logging  # noqa: F401
