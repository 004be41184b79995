"""The private static helpers of medical_image.process.mammography.MammographyPreprocessing that
the original's tests call directly (_otsu_binary, _largest_connected_component,
_intensity_window, _build_gabor_bank), on lumen's ops; results keep the input's array kind."""
import math

import numpy as np

from . import _arrays
from .. import _image_ops as _lo


def _like(result, x):
    return _arrays.to_backend(result) if _arrays.is_tensor(x) else result


def otsu_binary(img, device):
    """uint8 0/1: img > the original's Otsu threshold (256 / 4096 bins, linspace bin centres)."""
    from ._process import _otsu_original
    a = np.ascontiguousarray(_arrays.to_numpy(img), np.float32)
    return _like((a > np.float32(_otsu_original(a, str(device)))).astype(np.uint8), img)


def largest_connected_component(mask, device):
    """uint8: the largest 4-connected component of mask != 0 (the mask itself when it is empty)."""
    m = _arrays.to_numpy(mask) != 0
    if not m.any():
        return mask
    return _like(_lo.largest_component(m, connectivity=1, device=str(device)).astype(np.uint8), mask)


def intensity_window(img, a, b):
    """clamp((img - a) / (b - a), 0, 1) * 255 (a span <= 0 counts as 1)."""
    span = b - a if b - a > 0 else 1.0
    x = _arrays.to_numpy(img).astype(np.float32)
    return _like(np.clip((x - np.float32(a)) / np.float32(span), 0.0, 1.0) * np.float32(255.0), img)


def build_gabor_bank(n_scales, n_orientations, device=None):
    """n_scales x n_orientations real Gabor kernels: f_m = 0.25 / sqrt(2)^m, sigma = 1 / (2 f_m),
    odd size ceil(6 sigma), theta_n = n pi / n_orientations (the bank GRAIL's metric uses)."""
    bank = []
    for m in range(n_scales):
        f = 0.25 / math.sqrt(2) ** m
        sigma = 1.0 / (2.0 * f)
        half = int(math.ceil(6 * sigma)) // 2
        y, x = np.mgrid[-half:half + 1, -half:half + 1].astype(np.float32)
        envelope = np.exp(-(x ** 2 + y ** 2) / np.float32(2 * sigma ** 2))
        for n in range(n_orientations):
            t = n * math.pi / n_orientations
            k = envelope * np.cos(np.float32(2 * math.pi * f) * (x * np.float32(math.sin(t)) + y * np.float32(math.cos(t))))
            bank.append(_arrays.to_backend(k.astype(np.float32)))
    return bank
