"""lumen.medical_image against medical-image-std itself on a synthetic mammogram-like image.

Imported by test_medical_image_compat.py (when medical_image is importable in the test's
interpreter), or run as a script with an interpreter that has it (LUMEN_MIS_PYTHON, e.g. a
venv with torch CPU + medical-image-std): prints one JSON object {op: agreement}, where
agreement is {"max_abs": ..., "max_rel": ...} for float results (max_rel relative to the
original's largest magnitude) and {"dice": ..., "differ": n} for masks."""
import json
import sys

import numpy as np


def synthetic_mammogram(h=192, w=160, seed=7):
    """12-bit-like breast: a half ellipse of tissue falling off towards the skin line, texture,
    a few bright microcalcification-sized spots and a dark background, integer values."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = np.sqrt(((y - h / 2) / (0.45 * h)) ** 2 + (x / (0.8 * w)) ** 2)
    tissue = np.clip(1.0 - r, 0, None) ** 0.5 * 2200.0
    texture = rng.normal(0, 60, (h, w))
    img = np.where(r < 1.0, 600 + tissue + texture, 30 + rng.normal(0, 5, (h, w)))
    for cy, cx in rng.integers([20, 10], [h - 20, int(0.6 * w)], size=(12, 2)):
        img[cy - 1:cy + 2, cx - 1:cx + 2] += 900
    return np.clip(np.round(img), 0, 4095).astype(np.float32)


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def _float_agreement(a, b):
    a, b = np.asarray(_np(a)), np.asarray(_np(b))
    if not (np.iscomplexobj(a) or np.iscomplexobj(b)):
        a, b = a.astype(np.float64), b.astype(np.float64)
    if a.shape != b.shape:
        return {"shape": [list(a.shape), list(b.shape)]}
    d = np.abs(a - b)
    scale = max(float(np.abs(a).max()), 1e-30)
    return {"max_abs": float(d.max()), "max_rel": float(d.max() / scale)}


def _mask_agreement(a, b):
    a, b = _np(a) != 0, _np(b) != 0
    if a.shape != b.shape:
        return {"shape": [list(a.shape), list(b.shape)]}
    s = int(a.sum() + b.sum())
    dice = 1.0 if s == 0 else 2.0 * int((a & b).sum()) / s
    return {"dice": dice, "differ": int((a != b).sum())}


def compare():
    import medical_image as mi
    import lumen.medical_image as lm

    img = synthetic_mammogram()
    norm = img / 4095.0
    small = np.round(img / 64.0)        # integer levels for the metrics
    res = {}

    def both(name, fn, arr, kind="float", **kw):
        o_in, l_in = mi.InMemoryImage(array=arr.copy()), lm.Image.from_array(arr.copy())
        o_out, l_out = o_in.clone(), l_in.clone()
        getattr(getattr(mi, fn[0]), fn[1])(o_in, o_out, **kw)
        getattr(getattr(lm, fn[0]), fn[1])(l_in, l_out, **kw)
        agree = _mask_agreement if kind == "mask" else _float_agreement
        res[name] = agree(o_out.pixel_data, l_out.pixel_data)
        res[name]["dtype"] = [str(_np(o_out.pixel_data).dtype), str(l_out.pixel_data.dtype)]

    both("gaussian_filter", ("Filters", "gaussian_filter"), img, sigma=2.0)
    both("median_filter", ("Filters", "median_filter"), img, size=5)
    both("convolution", ("Filters", "convolution"), img,
         kernel=np.array([[0, -1, 0], [-1, 5, -2], [0, -1, 0]], np.float32))
    both("difference_of_gaussian", ("Filters", "difference_of_gaussian"), img, low_sigma=1.0)
    both("laplacian_of_gaussian", ("Filters", "laplacian_of_gaussian"), img, sigma=2.0)
    both("gamma_correction", ("Filters", "gamma_correction"), img, gamma=1.25)
    both("contrast_adjust", ("Filters", "contrast_adjust"), img, contrast=40.0, brightness=10.0)
    both("butterworth_kernel", ("Filters", "butterworth_kernel"), img)
    both("otsu_threshold", ("Threshold", "otsu_threshold"), img, kind="mask")
    both("sauvola_threshold", ("Threshold", "sauvola_threshold"), img, kind="mask", window_size=15)
    both("binarize", ("Threshold", "binarize"), img, kind="mask", alpha=1.0)
    both("erosion", ("MorphologyOperations", "erosion"), norm, radius=3)
    both("dilation", ("MorphologyOperations", "dilation"), norm, radius=3)
    both("white_top_hat", ("MorphologyOperations", "white_top_hat"), norm, radius=4)
    both("morphology_closing", ("MorphologyOperations", "morphology_closing"), (img > 1500).astype(np.float32),
         kind="mask", kernel_size=7)
    both("region_fill", ("MorphologyOperations", "region_fill"), (img > 1500).astype(np.float32), kind="mask")
    both("local_variance", ("Metrics", "local_variance"), img, kernel=5)
    both("fft", ("FrequencyOperations", "fft"), img)
    o_v, l_v = mi.InMemoryImage(array=img.copy()), lm.Image.from_array(img.copy())
    o_out, l_out = o_v.clone(), l_v.clone()
    mi.Metrics.variance(o_v, o_out)
    lm.Metrics.variance(l_v, l_out)
    res["variance"] = _float_agreement(o_out.pixel_data, l_out.pixel_data)
    a, b = small, np.round(np.flipud(small) / 2)
    for name in ("entropy", "joint_entropy", "mutual_information"):
        args_o = [mi.InMemoryImage(array=a)] + ([mi.InMemoryImage(array=b)] if name != "entropy" else [])
        args_l = [lm.Image.from_array(a)] + ([lm.Image.from_array(b)] if name != "entropy" else [])
        vo, vl = getattr(mi.Metrics, name)(*args_o), getattr(lm.Metrics, name)(*args_l)
        res[name] = {"original": vo, "lumen": vl, "max_abs": abs(vo - vl)}
    batch = np.stack([img, norm * 4095.0])[:, None]
    import torch
    res["gaussian_filter_batch"] = _float_agreement(mi.Filters.gaussian_filter_batch(torch.from_numpy(batch), 2.0),
                                                    lm.Filters.gaussian_filter_batch(torch.from_numpy(batch), 2.0))
    # a torch tensor given to the compat Image (copied to numpy float32)
    t = torch.from_numpy(img.astype(np.int16))
    res["from_array_torch"] = _float_agreement(mi.InMemoryImage(array=t).pixel_data, lm.Image.from_array(t).pixel_data)
    return res


if __name__ == "__main__":
    print(json.dumps(compare()))
    sys.exit(0)
