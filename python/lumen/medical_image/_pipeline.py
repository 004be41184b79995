"""medical_image.utils.device's AsyncGPUPipeline and MultiGPUAlgorithm over lumen.

The C engine: when the algorithm is one lumen C op (FebdsAlgorithm and TopHatAlgorithm with
convention="lumen", DicomWindowAlgorithm with window_center and window_width given,
BitDepthNormAlgorithm with bits_stored given; _lumen_op says which), both classes run it through
lumen.process_images (lumen_batch_run, include/lumen/batch.h): a reader thread loads image i+1
while C workers compute, one worker per device, CUDA workers pipelining their transfers through
pinned double buffers, results in input order and equal to the algorithm called per image. Any
other algorithm (or a subclass overriding apply) takes the Python-thread path described below.

Python-thread path. What overlaps: AsyncGPUPipeline reads/loads image i+1 (files through
lumen.read_image, or the copy of a loaded image) on a reader thread while image i is computed; lumen's ctypes calls
release the GIL, so reading and compute really run at the same time. What does not: lumen
copies each op's data to and from the device synchronously inside the op (there are no CUDA
streams in the Python API), so host-device transfers do not overlap compute, and on a CPU-only
machine both the reading and the compute use the CPU (the compute already uses every core), so
the gain is only the time the reader waits on the disk. Unlike the original, neither class
raises without CUDA: both run on the CPU and say so in a warning (logger lumen.medical_image)."""
import concurrent.futures
import logging
import warnings

import numpy as np

from .. import _batch
from .. import _device as _ldev
from ._device import Device, _precision
from ._image import Image, DicomDataNotLoadedError
from ._process import _plane

_log = logging.getLogger("lumen.medical_image")


def _cuda_ids():
    return [Device(d["device"]).index or 0 for d in _ldev.devices() if d["device"].startswith("cuda")]


def _say_cpu(what, why):
    msg = "%s: %s; running on the CPU" % (what, why)
    _log.warning(msg)
    warnings.warn(msg, RuntimeWarning, stacklevel=3)


def _pixels(image):
    """The algorithm classes' input (their _data): the pixels as float32, loaded or an error."""
    if getattr(image, "pixel_data", None) is None:
        raise DicomDataNotLoadedError("Image pixel_data is None. Call .load() first.")
    return np.asarray(image._array, np.float32)


def _lumen_op(algorithm):
    """(op, op kwargs, input function) when algorithm's apply is exactly one lumen C op with
    options that do not depend on the image, the same call its apply makes; else None."""
    from . import _algorithms as A
    kind = type(algorithm)
    plane = lambda img: _plane(_pixels(img))  # noqa: E731
    if kind is A.FebdsAlgorithm and algorithm.convention == "lumen":
        return "febds", {"method": algorithm.method, "fft_pad": 0, "precision": algorithm._precision()}, plane
    if kind is A.TopHatAlgorithm and algorithm.convention == "lumen":
        return "tophat", {"radius": algorithm.radius, "precision": algorithm._precision()}, plane
    if kind is A.DicomWindowAlgorithm and algorithm.window_center is not None and algorithm.window_width is not None:
        return "window", {"center": float(algorithm.window_center), "width": float(algorithm.window_width),
                          "out_max": 255.0, "precision": _precision()}, _pixels
    if kind is A.BitDepthNormAlgorithm and algorithm.bits_stored is not None:
        return "normalize_bits", {"bits": algorithm.bits_stored, "target": algorithm.target_max,
                                  "precision": _precision()}, _pixels
    return None


def _run_c(mapped, images, devices):
    """The results of the mapped op on images (zero-argument loaders, run on the engine's reader)."""
    op, kwargs, _ = mapped
    return _batch.process_images(images, op, devices=devices, **kwargs)


class AsyncGPUPipeline(object):
    """process_images(images, algorithm): one output per image, in order; images are Image
    objects (loaded or not) or file paths (PNG, NIfTI). device "cuda" without a usable CUDA
    device runs on the CPU (a warning; the original raises RuntimeError)."""

    def __init__(self, device="cuda"):
        self.device = Device(device)
        if self.device.type == "cuda" and not _ldev.cuda_available():
            _say_cpu("AsyncGPUPipeline", "no usable CUDA device (lumen.cuda_probe: %s)" % _ldev.cuda_probe()[2])
            self.device = Device("cpu")
        self.asynchronous = "reading overlaps compute (reader thread)"

    @staticmethod
    def _read(item):
        """The reader thread's work: an input Image for the compute, never the caller's object."""
        if isinstance(item, Image):
            img = item.clone()
        else:
            img = Image(file_path=str(item))
        img.load()
        img.ensure_loaded()
        return img

    def process_images(self, images, algorithm):
        items = list(images)
        results = []
        if not items:
            return results
        mapped = _lumen_op(algorithm)
        if mapped is not None:
            return self._process_c(items, algorithm, mapped)
        with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="lumen-reader") as pool:
            pending = pool.submit(self._read, items[0])
            for i in range(len(items)):
                img = pending.result()
                if i + 1 < len(items):
                    pending = pool.submit(self._read, items[i + 1])  # read the next while computing this one
                img.to(self.device)
                out = img.clone()
                algorithm(img, out)
                results.append(out)
        return results

    def _process_c(self, items, algorithm, mapped):
        """The C engine: the reader thread loads each item (as _read) and hands its pixels to C."""
        loaded = [None] * len(items)

        def loader(i):
            def load():
                loaded[i] = self._read(items[i])
                return mapped[2](loaded[i])
            return load

        arrays = _run_c(mapped, [loader(i) for i in range(len(items))], str(algorithm._dev(None)))
        results = []
        for img, arr in zip(loaded, arrays):
            img.to(self.device)
            out = img.clone()
            out.pixel_data = arr
            results.append(out)
        return results


class MultiGPUAlgorithm(object):
    """MultiGPUAlgorithm(algorithm_class=..., gpu_ids=None, **kwargs): one algorithm instance per
    device (algorithm_class(device="cuda:N", **kwargs)), images dealt round-robin, one thread
    per device. gpu_ids None = every CUDA device lumen sees; without any (or with ids lumen does
    not see) it runs one CPU instance and warns. The original's name algorithm_cls is accepted."""

    def __init__(self, algorithm_class=None, gpu_ids=None, algorithm_cls=None, **kwargs):
        cls = algorithm_class if algorithm_class is not None else algorithm_cls
        if cls is None:
            raise TypeError("MultiGPUAlgorithm: algorithm_class is required")
        seen = _cuda_ids()
        if gpu_ids is None:
            gpu_ids = seen
        missing = [g for g in gpu_ids if g not in seen]
        if not gpu_ids or missing:
            why = "no usable CUDA device" if not seen else "CUDA devices %s not found (lumen sees %s)" % (missing, seen)
            _say_cpu("MultiGPUAlgorithm", why)
            self.gpu_ids, self.devices = [], [Device("cpu")]
        else:
            self.gpu_ids = list(gpu_ids)
            self.devices = [Device("cuda:%d" % g) for g in self.gpu_ids]
        self.algorithms = {str(d): cls(device=str(d), **kwargs) for d in self.devices}

    def apply_batch(self, images, outputs):
        """Image i runs on device i mod n (the original's round robin); returns outputs in order."""
        pairs = list(zip(images, outputs))
        n = len(self.devices)
        mapped = _lumen_op(self.algorithms[str(self.devices[0])])
        if mapped is not None and pairs:  # the C engine: one worker per device
            for k, (img, out) in enumerate(pairs):
                img.to(self.devices[k % n])  # the devices the round robin names, as below
                out.to(self.devices[k % n])
            loaders = [(lambda img=img: mapped[2](img)) for img, _ in pairs]
            arrays = _run_c(mapped, loaders, ",".join(str(d) for d in self.devices))
            for (_, out), arr in zip(pairs, arrays):
                out.pixel_data = arr
            return [out for _, out in pairs]

        def run_device(k):
            dev = self.devices[k]
            algo = self.algorithms[str(dev)]
            for img, out in pairs[k::n]:
                img.to(dev)
                out.to(dev)
                algo.apply(img, out)

        if n == 1:
            run_device(0)
        else:
            with concurrent.futures.ThreadPoolExecutor(max_workers=n, thread_name_prefix="lumen-gpu") as pool:
                for f in [pool.submit(run_device, k) for k in range(n)]:
                    f.result()
        return [out for _, out in pairs]
