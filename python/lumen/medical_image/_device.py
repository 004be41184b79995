"""medical_image.utils.device over lumen: resolve_device, Precision, the default precision,
DeviceContext, gpu_safe, check_gpu_budget, estimate_image_bytes.

Devices are lumen device names ("cpu", "cuda:0") held in Device, a str with the .type and
.index of a torch.device, so code that tests `device.type != "cpu"` keeps working without
torch."""
import enum
import functools
import logging
import threading

import numpy as np

from .. import _device as _ldev
from .. import _lib

_log = logging.getLogger("lumen.medical_image")


class Device(str):
    """A device name ("cpu", "cuda", "cuda:1") with torch.device's .type and .index."""

    def __new__(cls, name="cpu"):
        if not isinstance(name, str):  # a torch.device, or anything whose str() is a device name
            name = str(name)
        name = name.strip().lower() or "cpu"
        return str.__new__(cls, name)

    def __eq__(self, other):
        """Also equal to the torch.device of the same name (cuda and cuda:0 stay distinct, as in torch)."""
        if not isinstance(other, str) and hasattr(other, "type") and hasattr(other, "index"):
            other = str(other)
        return str.__eq__(self, other)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = str.__hash__

    @property
    def type(self):
        return self.split(":", 1)[0]

    @property
    def index(self):
        parts = self.split(":", 1)
        return int(parts[1]) if len(parts) == 2 and parts[1].isdigit() else None


def resolve_device(*images, explicit=None):
    """The explicit device, else the device of the first loaded image, else the CPU."""
    if explicit is not None:
        return Device(explicit)
    for img in images:
        if getattr(img, "pixel_data", None) is not None:
            return Device(getattr(img, "device", "cpu"))
    return Device("cpu")


class Precision(enum.Enum):
    """Storage precision of float results: lumen's precision names (the original holds torch dtypes)."""
    FULL = "full"
    HALF = "half"
    BFLOAT16 = "bfloat16"


_default_precision = Precision.FULL
_precision_lock = threading.Lock()


def set_default_precision(precision):
    """Sets the precision every compat op stores its float results in (unlike the original, whose
    filters always compute float32, every op here honours it)."""
    global _default_precision
    p = Precision(precision.value if isinstance(precision, Precision) else precision)
    with _precision_lock:
        _default_precision = p


def get_default_precision():
    with _precision_lock:
        return _default_precision


def get_dtype():
    """The default precision's dtype: torch's (float32, float16, bfloat16) when pixel data is held
    as torch tensors (_arrays.py), else numpy's (bfloat16, which numpy lacks, as float32 holding
    bfloat16-rounded values)."""
    from ._arrays import torch_module
    torch = torch_module()
    if torch is not None:
        return {Precision.FULL: torch.float32, Precision.HALF: torch.float16,
                Precision.BFLOAT16: torch.bfloat16}[get_default_precision()]
    return {Precision.FULL: np.dtype(np.float32), Precision.HALF: np.dtype(np.float16),
            Precision.BFLOAT16: np.dtype(np.float32)}[get_default_precision()]


def _precision():
    return get_default_precision().value


class DeviceContext(object):
    """with DeviceContext("cuda") as ctx: ctx.device, ctx.memory_stats(). Falls back to `fallback`
    (a warning) when the device cannot be used, as the original; memory_stats() has the
    original's keys ({"device": "cpu"} on the CPU; allocated_gb, free_gb, total_gb on a GPU)."""

    def __init__(self, device="cuda", fallback="cpu", verbose=False):
        self.primary = Device(device)
        self.fallback = Device(fallback)
        self.verbose = verbose
        self._ctx = _ldev.DeviceContext(str(self.primary), fallback=str(self.fallback))
        self.active_device = Device(self._ctx.device)

    def __enter__(self):
        if self.verbose and self.active_device.type == "cuda":
            s = self._ctx.memory_stats()
            _log.info("GPU memory: %.1f / %.1f GB free", s["free"] / 1e9, s["total"] / 1e9)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if self.active_device.type == "cuda":
            self._ctx.release_cache()
        if exc_type is not None and issubclass(exc_type, _lib.LumenMemoryError):
            self.active_device = self.fallback
        self._ctx.close()
        return False

    @property
    def device(self):
        return self.active_device

    def memory_stats(self):
        if self.active_device.type != "cuda":
            return {"device": "cpu"}
        s = self._ctx.memory_stats()
        return {"device": str(self.active_device), "allocated_gb": s["allocated"] / 1e9,
                "free_gb": s["free"] / 1e9, "total_gb": s["total"] / 1e9}


def _is_device_failure(exc):
    if isinstance(exc, _lib.LumenError):
        return exc.status_name in ("device_out_of_memory", "device_error", "no_device", "not_built")
    msg = str(exc).lower()
    return isinstance(exc, (RuntimeError, MemoryError)) and any(
        w in msg for w in ("cuda", "nvidia", "driver", "out of memory", "device"))


def gpu_safe(func):
    """Decorator: resolves the device as the original does and, when the call fails on a
    non-CPU device for a device reason (a lumen device/no-device/not-built/out-of-memory error,
    or a RuntimeError naming CUDA, NVIDIA, a driver or out of memory), reruns it once on the
    CPU with a logged warning. Unlike the original it also falls back on "no NVIDIA driver"."""

    @functools.wraps(func)
    def wrapper(*args, device=None, **kwargs):
        device = resolve_device(*[a for a in args if hasattr(a, "pixel_data")], explicit=device)
        try:
            return func(*args, device=device, **kwargs)
        except Exception as e:
            if device.type == "cpu" or not _is_device_failure(e):
                raise
            _log.warning("%s: device failure on %s, retrying on CPU: %s", func.__name__, device, e)
            return func(*args, device=Device("cpu"), **kwargs)

    return wrapper


def check_gpu_budget(required_bytes, device=None):
    """True when `device` is not a CUDA device or has at least required_bytes free."""
    if device is None or Device(device).type != "cuda":
        return True
    return _ldev.memory_stats(str(Device(device)))["free"] >= required_bytes


def estimate_image_bytes(image, dtype=np.float32):
    """Bytes of the image's pixel data, else width * height * itemsize(dtype), else 0."""
    data = getattr(image, "pixel_data", None)
    if data is not None:
        return int(np.asarray(data).nbytes) if not hasattr(data, "element_size") else \
            int(data.nelement() * data.element_size())
    w, h = getattr(image, "width", None), getattr(image, "height", None)
    if w and h:
        try:
            size = np.dtype(dtype).itemsize
        except TypeError:  # a torch dtype
            size = int(getattr(dtype, "itemsize", 4))
        return int(w) * int(h) * size
    return 0
