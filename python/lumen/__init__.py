"""lumen: DCE-MRI pharmacokinetic and T1 fitting, device contexts and image filters on the CPU or
a CUDA GPU, through ctypes over the lumen shared library (liblumen.so) and numpy.

    import lumen
    res = lumen.fit("tofts", conc, t_min, aif=cp)   # conc: (n_curves, n_points) float32/float64
    res.params, res.states, res.chi2, res.iterations, res.ci_lo, res.ci_hi, res.backend_used
    lumen.cuda_available(); lumen.backends()
    with lumen.DeviceContext("cuda:0") as dev: dev.memory_stats()
    smooth = lumen.gaussian(img, 2.0, device="cuda:0", precision="half")  # numpy in, numpy out
    masks = lumen.process_images(paths, "febds", devices="cuda:0,cuda:1")  # a batch over devices
    arr, meta = lumen.read_image("t1.nii.gz"); lumen.write_image("out.png", arr[0], bit_depth=16)

The library is $LUMEN_LIBRARY when that is set (a developer's build; only it is tried), else the
one inside this package (`pip install .` at the repository root builds it in; install.sh copies
it in), else one on the system library path; lumen.library_path() tells which. Errors raise
lumen.LumenError (a ValueError too for invalid arguments) with the C library's message.
Enum values (models, states, tiers, statuses) are read from the library. See docs/BINDINGS.md.
"""
from ._lib import (LumenError, LumenInvalidArgument, LumenDeviceError, LumenMemoryError,
                   library_path, library_source, version, build_info)
from ._fit import (FitPlan, FitResult, fit, models, model_info, fit_states, fit_tiers,
                   bounds_presets, population_aif, parse_backend, CONST_R10, CONST_B1)
from ._device import (cuda_available, cuda_probe, cuda_built, backends, devices, memory_stats,
                      DeviceContext, gpu_safe)
from ._image import (gaussian, dog, gaussian_laplace, median, morphology, otsu, fill_holes, label,
                     boundary_modes, filter_ops)
from ._io import read_image, write_image, image_formats
from ._image_ops import (gaussian_batch, gaussian_many, gamma, absolute, contrast, convolve, bandpass,
                         sauvola, local_variance, variance_binarize, largest_component, entropy,
                         mutual_information, variance)
from ._segment import (febds, tophat, kmeans, fcm, pfcm, region_grow, breast_mask, window,
                       normalize_bits, grail, grail_metric, febds_methods, segment_algorithms)
from ._batch import process_images, batch_ops
from ._ops import op_registry, op_info, run_op
from . import _lib as _l


def statuses():
    """lumen_status names in numeric order ("ok", "invalid_argument", ...), read from the library."""
    return list(_l.STATUS_NAMES)


__version__ = "0.1.0"

__all__ = ["LumenError", "LumenInvalidArgument", "LumenDeviceError", "LumenMemoryError",
           "library_path", "library_source", "version", "build_info", "statuses",
           "FitPlan", "FitResult", "fit", "models", "model_info", "fit_states", "fit_tiers",
           "bounds_presets", "population_aif", "parse_backend", "CONST_R10", "CONST_B1",
           "cuda_available", "cuda_probe", "cuda_built", "backends", "devices", "memory_stats",
           "DeviceContext", "gpu_safe",
           "gaussian", "dog", "gaussian_laplace", "median", "morphology", "otsu", "fill_holes", "label",
           "boundary_modes", "filter_ops", "read_image", "write_image", "image_formats"]
__all__ += ["gaussian_batch", "gaussian_many", "gamma", "absolute", "contrast", "convolve", "bandpass",
            "sauvola", "local_variance", "variance_binarize", "largest_component", "entropy",
            "mutual_information", "variance"]
__all__ += ["febds", "tophat", "kmeans", "fcm", "pfcm", "region_grow", "breast_mask", "window",
            "normalize_bits", "grail", "grail_metric", "febds_methods", "segment_algorithms"]
__all__ += ["process_images", "batch_ops", "op_registry", "op_info", "run_op"]
