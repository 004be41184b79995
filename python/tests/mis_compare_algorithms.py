"""lumen.medical_image's algorithm classes and MammographyPreprocessing against medical-image-std
itself on the synthetic mammogram of mis_compare.py.

Imported by test_medical_image_algorithms.py (when medical_image is importable there), or run as
a script by an interpreter that has it (LUMEN_MIS_PYTHON): prints one JSON object {name:
agreement}, masks as {"dice", "differ"}, float images as {"max_abs", "max_rel"}, numbers (the
GRAIL window, cluster centres) as {"original", "lumen"}."""
import json
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mis_compare import synthetic_mammogram, _float_agreement, _mask_agreement, _np  # noqa: E402

# name -> (class name, constructor keywords, kind of output)
CASES = [
    ("febds_dog", "FebdsAlgorithm", {"method": "dog"}, "mask"),
    ("febds_log", "FebdsAlgorithm", {"method": "log"}, "mask"),
    ("febds_fft", "FebdsAlgorithm", {"method": "fft"}, "mask"),
    ("tophat", "TopHatAlgorithm", {"radius": 4}, "float"),
    ("kmeans", "KMeansAlgorithm", {}, "mask"),
    ("fcm", "FCMAlgorithm", {}, "mask"),
    ("pfcm", "PFCMAlgorithm", {}, "mask"),
    ("sbrg", "SbrgAlgorithm", {}, "mask"),
    ("breast_mask", "BreastMaskAlgorithm", {"mask_only": True}, "mask"),
    ("breast_masked", "BreastMaskAlgorithm", {}, "float"),
    ("dicom_window", "DicomWindowAlgorithm", {}, "float"),
    ("dicom_window_wcww", "DicomWindowAlgorithm", {"window_center": 1500, "window_width": 2000}, "float"),
    ("bit_depth_norm", "BitDepthNormAlgorithm", {}, "float"),
    ("grail", "GrailWindowAlgorithm", {}, "float"),
]


def inputs():
    """The 12-bit synthetic mammogram (160 x 128, small enough for the original's GRAIL) and its
    [0, 1] normalisation (what the top-hat is documented for)."""
    img = synthetic_mammogram(160, 128)
    return img, img / np.float32(4095.0)


def compare():
    import medical_image as mi
    import medical_image.algorithms as moa
    import lumen.medical_image as lm

    img, norm = inputs()
    res = {}
    for name, cls, kw, kind in CASES:
        arr = norm if name == "tophat" else img
        o_in, l_in = mi.InMemoryImage(array=arr.copy()), lm.Image.from_array(arr.copy())
        o_out, l_out = o_in.clone(), l_in.clone()
        o_algo = getattr(moa, cls)(device="cpu", **kw)
        l_algo = getattr(lm, cls)(device="cpu", **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            o_algo(o_in, o_out)
        l_algo(l_in, l_out)
        agree = _mask_agreement if kind == "mask" else _float_agreement
        res[name] = agree(o_out.pixel_data, l_out.pixel_data)
        if name == "grail":
            res[name]["window"] = {"original": [o_algo.grail_a, o_algo.grail_b], "lumen": [l_algo.grail_a, l_algo.grail_b]}
        if name in ("kmeans", "fcm", "pfcm"):
            res[name]["centers"] = {"original": sorted(float(c) for c in _np(o_algo.centroids)[:, 0]),
                                    "lumen": sorted(float(c) for c in l_algo.centroids[:, 0])}
    mp_o, mp_l = mi.process.mammography.MammographyPreprocessing, lm.MammographyPreprocessing
    o = mp_o.normalize_bit_depth(mi.InMemoryImage(array=img.copy()), bits_stored=12, target_max=1.0)
    l = mp_l.normalize_bit_depth(lm.Image.from_array(img.copy()), bits_stored=12, target_max=1.0)
    res["normalize_bit_depth_12"] = _float_agreement(o.pixel_data, l.pixel_data)
    return res


if __name__ == "__main__":
    print(json.dumps(compare()))
    sys.exit(0)
