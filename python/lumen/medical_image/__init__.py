"""lumen.medical_image: the medical_image (PyPI medical-image-std) API over lumen, so code written
for it switches by changing the import:

    from lumen.medical_image import Image, Filters, Threshold   # was: from medical_image import ...
    img = Image.from_file("mammo.png"); out = img.clone()
    Filters.gaussian_filter(img, out, sigma=2.0)                # out.pixel_data: numpy float32

or, with the original's module layout (docs/MEDICAL_IMAGE.md):

    from lumen.medical_image.data.dicom_image import DicomImage    # was: from medical_image.data...
    from lumen.medical_image.process.filters import Filters

pixel_data is a CPU torch tensor when torch is installed (as the original's) and a numpy array
otherwise (LUMEN_MEDICAL_IMAGE_ARRAYS=numpy|torch forces one; torch is never required); lumen
computes on numpy views of it. Calls, defaults, output dtypes
and value ranges follow the original, including where lumen's own defaults differ (see
docs/BINDINGS.md, "lumen.medical_image"); every op honours set_default_precision and runs on
the image's device (Image.to) with lumen's CPU fallback.

Also here: the algorithm classes (FEBDS, top-hat, k-means, FCM, PFCM, SBRG, breast mask, DICOM and
GRAIL windows, bit-depth normalisation), MammographyPreprocessing, AsyncGPUPipeline and
MultiGPUAlgorithm; Image.from_file reads PNG, NIfTI and DICOM; DicomImage, PatchGrid,
RegionOfInterest, Annotation, image JSON, BaseDataset's COCO export; DeepSegmentationAlgorithm
(a torch model run by sliding windows; needs torch). Names only (they raise NotImplementedError
saying what they need): the INbreast / CBIS-DDSM datasets with their download, pairing and mask
helpers (the data).
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
# the rest of the original's top-level names, and its subpackages
from ._dicom import DicomImage
from ._image import image_from_json
from ._patch import PatchGrid, Patch
from ._roi import RegionOfInterest
from ._annotation import Annotation, GeometryType
from ._image_utils import TensorConverter, ImageExporter, ImageVisualizer, MathematicalOperations
from ._deep import DeepSegmentationAlgorithm
from . import data, process, algorithms, utils, datasets  # noqa: E402,F401

__all__ += ["DicomImage", "image_from_json", "PatchGrid", "Patch", "RegionOfInterest", "Annotation", "GeometryType",
            "TensorConverter", "ImageExporter", "ImageVisualizer", "MathematicalOperations",
            "DeepSegmentationAlgorithm"]
__version__ = "0.8.2"  # the medical-image-std release this layer mirrors
