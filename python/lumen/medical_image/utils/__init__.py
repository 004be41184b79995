"""The package layout of medical_image.utils (image_utils is imported from its module, as in the
original) over lumen."""
from .annotation import Annotation, GeometryType
from .logging import logger, configure_logging
from .device import (resolve_device, Precision, set_default_precision, get_default_precision, get_dtype,
                     DeviceContext, gpu_safe, AsyncGPUPipeline, MultiGPUAlgorithm)

__all__ = ["Annotation", "GeometryType", "logger", "configure_logging", "resolve_device", "Precision",
           "set_default_precision", "get_default_precision", "get_dtype", "DeviceContext", "gpu_safe",
           "AsyncGPUPipeline", "MultiGPUAlgorithm"]
