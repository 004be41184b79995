"""The module layout of medical_image.utils.device over lumen."""
from .._device import (Device, resolve_device, Precision, set_default_precision, get_default_precision,
                       get_dtype, DeviceContext, gpu_safe, check_gpu_budget, estimate_image_bytes)
from .._pipeline import AsyncGPUPipeline, MultiGPUAlgorithm  # noqa: F401
