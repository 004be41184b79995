"""lumen.medical_image: the medical_image (PyPI medical-image-std) API over lumen, so code written
for it switches by changing the import:

    from lumen.medical_image import Image, Filters, Threshold   # was: from medical_image import ...
    img = Image.from_file("mammo.png"); out = img.clone()
    Filters.gaussian_filter(img, out, sigma=2.0)                # out.pixel_data: numpy float32

pixel_data is a numpy array (the original holds a torch tensor; torch tensors are accepted as
input when torch is installed, and torch is never required). Calls, defaults, output dtypes
and value ranges follow the original, including where lumen's own defaults differ (see
docs/BINDINGS.md, "lumen.medical_image"); every op honours set_default_precision and runs on
the image's device (Image.to) with lumen's CPU fallback.

Also here: the algorithm classes (FEBDS, top-hat, k-means, FCM, PFCM, SBRG, breast mask, DICOM and
GRAIL windows, bit-depth normalisation), MammographyPreprocessing, AsyncGPUPipeline and
MultiGPUAlgorithm; Image.from_file reads PNG, NIfTI and DICOM. Out of scope: deep-learning
segmentation, datasets and annotations.
"""
from ._device import (Device, resolve_device, Precision, set_default_precision, get_default_precision, get_dtype,
                      DeviceContext, gpu_safe, check_gpu_budget, estimate_image_bytes)
from ._image import Image, InMemoryImage, PNGImage, DicomDataNotLoadedError, requires_loaded
from ._process import Filters, Threshold, MorphologyOperations, Metrics, FrequencyOperations

__all__ = ["Image", "InMemoryImage", "PNGImage", "DicomDataNotLoadedError", "requires_loaded",
           "Filters", "Threshold", "MorphologyOperations", "Metrics", "FrequencyOperations",
           "Device", "resolve_device", "Precision", "set_default_precision", "get_default_precision", "get_dtype",
           "DeviceContext", "gpu_safe", "check_gpu_budget", "estimate_image_bytes"]
# the algorithm classes, MammographyPreprocessing, AsyncGPUPipeline and MultiGPUAlgorithm
from ._algorithms import (Algorithm, FebdsAlgorithm, TopHatAlgorithm, KMeansAlgorithm, FCMAlgorithm, PFCMAlgorithm,
                          SbrgAlgorithm, BreastMaskAlgorithm, DicomWindowAlgorithm, BitDepthNormAlgorithm,
                          GrailWindowAlgorithm, MammographyPreprocessing)
from ._pipeline import AsyncGPUPipeline, MultiGPUAlgorithm

__all__ += ["Algorithm", "FebdsAlgorithm", "TopHatAlgorithm", "KMeansAlgorithm", "FCMAlgorithm", "PFCMAlgorithm",
            "SbrgAlgorithm", "BreastMaskAlgorithm", "DicomWindowAlgorithm", "BitDepthNormAlgorithm",
            "GrailWindowAlgorithm", "MammographyPreprocessing", "AsyncGPUPipeline", "MultiGPUAlgorithm"]
