"""How pixel data is held: the original (medical_image 0.8.2) holds torch tensors. Here
Image.pixel_data is a CPU torch tensor when torch is importable and a numpy array otherwise;
LUMEN_MEDICAL_IMAGE_ARRAYS=numpy (or torch) forces one. Whatever is held, lumen computes on numpy
views of it (no copy for CPU tensors) and the results are stored back in the same kind."""
import os

import numpy as np

_torch = None
_checked = False


def torch_module():
    """The torch module when the backend is torch, else None (imported once, lazily)."""
    global _torch, _checked
    if not _checked:
        choice = os.environ.get("LUMEN_MEDICAL_IMAGE_ARRAYS", "auto").strip().lower()
        if choice != "numpy":
            try:
                import torch as _t
                _torch = _t
            except ImportError:
                if choice == "torch":
                    raise ImportError("LUMEN_MEDICAL_IMAGE_ARRAYS=torch but torch is not installed "
                                      "(pip install torch)")
        _checked = True
    return _torch


def is_tensor(x):
    """True for a torch tensor (tested without importing torch)."""
    return hasattr(x, "detach") and hasattr(x, "cpu") and hasattr(x, "numpy")


def to_numpy(x):
    """A numpy view (CPU tensor, array) or copy (device tensor, sequence) of x; None stays None."""
    if x is None:
        return None
    if is_tensor(x):
        t = x.detach()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.cpu().numpy()
    return np.asarray(x)


def to_backend(x):
    """x as the backend holds pixel data: a torch tensor (numpy shares memory) or a numpy array."""
    if x is None:
        return None
    torch = torch_module()
    if torch is None:
        return to_numpy(x)
    if isinstance(x, torch.Tensor):
        return x
    a = np.asarray(x)
    if a.dtype.byteorder not in ("=", "|") or not a.flags.writeable or a.strides and min(a.strides) < 0:
        a = np.array(a, dtype=a.dtype.newbyteorder("="), copy=True)
    return torch.from_numpy(np.ascontiguousarray(a))


_LUMEN_TYPES = {np.dtype(t) for t in (np.float32, np.float64, np.uint8, np.uint16, np.bool_, np.complex64,
                                       np.complex128)}


def for_lumen(a):
    """a, or a float32 copy when lumen's ops do not take its type (int16, int32, float16, ...)."""
    if a is None or a.dtype in _LUMEN_TYPES:
        return a
    return a.astype(np.float32)


def clone(x):
    """An independent copy of pixel data of either kind."""
    if x is None:
        return None
    return x.clone() if is_tensor(x) else np.array(x, copy=True)


def as_float32(x):
    """x as float32 pixel data of the backend's kind (the original's .float())."""
    torch = torch_module()
    if torch is not None and isinstance(x, torch.Tensor):
        return x.float()
    return to_backend(np.ascontiguousarray(to_numpy(x), dtype=np.float32))
