"""medical_image.process over lumen: Filters, Threshold, MorphologyOperations, Metrics,
FrequencyOperations. Each op takes (image, output, ...) as the original, runs lumen on the
resolved device at the default precision (get_default_precision), sets output.pixel_data
(numpy, or a torch tensor when torch is installed: _arrays.py) and returns output.

Where lumen's own default differs, the original's convention is kept (docs/BINDINGS.md):
median borders (mirror, PyTorch 'reflect'), the LoG form (Gaussian with edge borders, then the
4-neighbour Laplacian with mirror borders; its (1, H, W) result shape), Otsu's bin centres
(linspace(min, max, bins)), Sauvola's edge borders, unbiased (n - 1) local/global variances,
and the zero padding of erosion, dilation, closing and top-hat (a square window of 2r + 1,
as the original's max-pooling, not the disk its docstring names)."""
import ctypes

import numpy as np

from .. import _image as _li
from .. import _image_ops as _lo
from .._lib import lib, check
from ._device import resolve_device, _precision
from ._image import InMemoryImage, requires_loaded
from . import _fast


def _dev(image, device, *more):
    return str(resolve_device(image, *more, explicit=device))


def _plane(a):
    """The original's 2-D ops squeeze leading axes of size 1."""
    a = np.asarray(a)
    while a.ndim > 2 and a.shape[0] == 1:
        a = a[0]
    return a


def _sdims(a):
    return 2 if a.ndim > 2 else 0


def _set(output, data):
    output.pixel_data = data
    return output


class Filters(object):

    @staticmethod
    @requires_loaded
    def convolution(image, output, kernel, device=None):
        """Correlation with zero borders (the original's F.conv2d after a zero pad; odd kernels)."""
        k = np.asarray(kernel.detach().cpu().numpy() if hasattr(kernel, "detach") else kernel, np.float32)
        res = _lo.convolve(image._array, k, mode="constant", cval=0.0, correlate=True,
                           device=_dev(image, device), precision=_precision())
        return _set(output, res)

    @staticmethod
    @requires_loaded
    def gaussian_filter(image, output, sigma, device=None, truncate=4.0):
        """Gaussian with edge-replicated borders (the original's 'replicate'), radius int(truncate sigma + 0.5)."""
        a = image._array
        res = _li.gaussian(a, float(sigma), mode="nearest", truncate=truncate, spatial_dims=_sdims(a),
                           device=_dev(image, device), precision=_precision())
        return _set(output, res)

    @staticmethod
    @requires_loaded
    def median_filter(image, output, size, device=None):
        """Median over size x size with mirror borders (PyTorch 'reflect'; lumen's default is scipy's reflect)."""
        if size % 2 == 0:
            raise ValueError("Median filter size must be odd")
        a = image._array
        res = _li.median(a, int(size), mode="mirror", spatial_dims=_sdims(a), device=_dev(image, device),
                         precision=_precision())
        return _set(output, res)

    @staticmethod
    @requires_loaded
    def butterworth_kernel(image, output, D_0=21, W=32, n=3, device=None):
        """The band-pass transfer function itself (height x width, float32, centred at (W/2, H/2)),
        as the original returns it. lumen.bandpass applies the same H to an image."""
        h, w = image.height, image.width
        order = float(n)
        if _fast.has_butterworth() and order.is_integer() and 1 <= order <= 64 and \
                all(np.isfinite(v) and abs(v) <= 1e18 for v in (float(D_0), float(W))):
            # one threaded C pass in the original's float32 steps (lumen_filter_butterworth_kernel)
            return _set(output, _fast.butterworth_kernel(h, w, D_0, W, int(order)))
        # float32 throughout, broadcast rows and columns, in-place where possible (no meshgrid)
        dv2 = ((np.arange(h, dtype=np.float32) - np.float32(h / 2)) ** 2)[:, None]
        du2 = ((np.arange(w, dtype=np.float32) - np.float32(w / 2)) ** 2)[None, :]
        d2 = dv2 + du2
        cutoff = np.sqrt(d2)
        cutoff *= np.float32(8 * W)
        cutoff[cutoff == 0] = np.float32(1e-6)
        r = d2
        r -= np.float32(D_0) ** 2
        r /= cutoff
        with np.errstate(over="ignore"):  # D = 0: (band / 1e-6)^(2n) overflows to inf, H = 0 as the original's
            if float(n).is_integer() and 1 <= n <= 16:  # r^(2n) by products, not pow
                r *= r
                p = r.copy()
                for _ in range(int(n) - 1):
                    p *= r
            else:
                p = r ** np.float32(2 * n)
            p += np.float32(1)
            np.reciprocal(p, out=p)
            return _set(output, p)

    @staticmethod
    @requires_loaded
    def difference_of_gaussian(image, output, low_sigma, high_sigma=None, device=None, truncate=4.0):
        """G_low - G_high with edge borders; high_sigma None = 1.6 low_sigma."""
        if low_sigma <= 0:
            raise ValueError("low_sigma must be > 0")
        if high_sigma is None:
            high_sigma = low_sigma * 1.6
        if high_sigma < low_sigma:
            raise ValueError("high_sigma must be >= low_sigma")
        a = image._array
        if high_sigma == low_sigma:
            return _set(output, np.zeros(a.shape, np.float32))
        res = _li.dog(a, float(low_sigma), float(high_sigma), mode="nearest", truncate=truncate,
                      spatial_dims=_sdims(a), device=_dev(image, device), precision=_precision())
        return _set(output, res)

    @staticmethod
    @requires_loaded
    def laplacian_of_gaussian(image, output, sigma, device=None):
        """The original's form: Gaussian (edge borders), then the 4-neighbour Laplacian with mirror
        borders (lumen's discrete=True); a 2-D image gives a (1, H, W) result, as the original."""
        a = image._array
        res = _li.gaussian_laplace(a, float(sigma), mode="nearest", discrete=True, spatial_dims=_sdims(a),
                                   device=_dev(image, device), precision=_precision())
        return _set(output, res[np.newaxis] if res.ndim == 2 else res)

    @staticmethod
    @requires_loaded
    def gamma_correction(image, output, gamma, device=None):
        """4095 (x / 4095) ** gamma (values below 0 are clamped to 0 by lumen)."""
        res = _lo.gamma(image._array, float(gamma), max_value=4095.0, device=_dev(image, device),
                        precision=_precision())
        return _set(output, res)

    @staticmethod
    @requires_loaded
    def contrast_adjust(image, output, contrast, brightness, device=None):
        """clamp(a x + b, 0, bins) on the values truncated to integers (as the original's int32)."""
        x = np.trunc(image._array).astype(np.float32)
        res = _lo.contrast(x, float(contrast), float(brightness), bins=0, device=_dev(image, device),
                           precision=_precision())
        return _set(output, res)

    @staticmethod
    def gaussian_filter_batch(images, sigma, device=None, truncate=4.0):
        """A (B, C, H, W) batch (numpy or torch) -> the filtered (B, C, H, W) float32 batch, a
        torch tensor on the input's device when given one."""
        a = images.detach().cpu().float().numpy() if hasattr(images, "detach") else np.asarray(images, np.float32)
        shape = a.shape
        flat = np.ascontiguousarray(a.reshape((-1,) + shape[-2:]), np.float32)
        dev = str(resolve_device(explicit=device)) if device is not None else None
        res = _lo.gaussian_batch(flat, float(sigma), mode="nearest", truncate=truncate, device=dev,
                                 precision=_precision())
        res = res.reshape(shape)
        if hasattr(images, "detach"):
            import torch  # the input is a tensor, so torch is there
            return torch.from_numpy(np.ascontiguousarray(res)).to(images.device)
        return res


def _otsu_value(a, bins, device):
    """lumen_filter_otsu's threshold alone (no mask image: the caller thresholds at the original's
    bin centre, not at lumen's)."""
    o = _li._new_opts("otsu")
    o.bins = int(bins)
    _lo._exec(o, device, None, _li._Report())
    with _lo._Wrapped([a]) as w:
        t = ctypes.c_double()
        check(lib.lumen_filter_otsu(w.ctx, w.images[0], ctypes.byref(o), ctypes.byref(t), None),
              "lumen_filter_otsu", w.ctx)
    return t.value


def _otsu_original(a, device):
    """The original's Otsu: bins 256 when max <= 255 else 4096 over [min, max], the threshold the
    bin centre linspace(min, max, bins)[i]. The histogram index i is lumen's (whose centres are
    min + (i + 0.5) (max - min) / bins; both centre sets are affine in i, so the between-class
    variance has the same argmax)."""
    lo, hi = float(a.min()), float(a.max())
    bins = 256 if hi <= 255 else 4096
    if hi == lo:
        return lo
    t = _otsu_value(a, bins, device)
    i = int(round((t - lo) / ((hi - lo) / bins) - 0.5))
    i = min(max(i, 0), bins - 1)
    return float(np.linspace(lo, hi, bins, dtype=np.float32)[i])


def _greater_u8(a, t):
    """uint8 0/1 of a > t: numpy's bool result viewed as bytes (no second pass)."""
    return np.greater(a, np.float32(t)).view(np.uint8)


class Threshold(object):

    @staticmethod
    @requires_loaded
    def otsu_threshold(image, output=None, device=None):
        """uint8 mask image > t, t the original's Otsu threshold (its bin centres)."""
        a = np.asarray(image._array, np.float32)
        dev = _dev(image, device)
        if dev == "cpu" and _fast.available():  # range, histogram and mask: three threaded C passes
            _, mask = _fast.otsu_linspace(a)
        else:
            mask = _greater_u8(a, _otsu_original(a, dev))
        if output is None:
            return _mask_image(mask)
        return _set(output, mask)

    @staticmethod
    @requires_loaded
    def sauvola_threshold(image, output=None, window_size=10, k=0.5, r=128, device=None):
        """uint8 0/255 mask image > m (1 + k (s / r - 1)) over window_size (odd; the default 10 is
        rejected as by the original) with edge-replicated borders (the original's; lumen's
        sauvola mirrors: the image is edge-padded here and the border cropped)."""
        if window_size % 2 == 0:
            raise ValueError("Window size must be an odd integer.")
        a = _plane(image._array)
        p = window_size // 2
        padded = np.pad(a, p, mode="edge")
        m = _lo.sauvola(padded, window=window_size, k=k, r=float(r), foreground=255, device=_dev(image, device))
        mask = np.ascontiguousarray(m[p:p + a.shape[0], p:p + a.shape[1]])
        if output is None:
            return _mask_image(mask)
        return _set(output, mask)

    @staticmethod
    @requires_loaded
    def binarize(image, output, alpha, device=None):
        """uint8 (lv^2 >= alpha gv^2) with the original's unbiased (n - 1) variances: lv over a
        5 x 5 window with mirror borders, gv of the whole image."""
        lv = Metrics.local_variance(image, _scratch(), 5, device=device)._array
        gv = Metrics.variance(image, _scratch(), device=device)._array
        return _set(output, (lv.astype(np.float32) ** 2 >= np.float32(alpha) * gv ** 2).astype(np.uint8))


def _scratch():
    return InMemoryImage(array=np.empty(0, np.float32))


def _mask_image(mask):
    img = InMemoryImage()
    img.pixel_data = mask  # keeps uint8, as the original's tensor does
    return img


def _pad_zero_op(a, op, radius, device):
    """Grey erosion/dilation with a (2r + 1)^2 square and zero outside the image (the original's
    zero-padded max-pooling): the image is zero-padded by r, lumen's op (which ignores pixels
    outside its input) runs, the pad is cropped."""
    a = _plane(a)
    if a.ndim != 2:
        raise ValueError("Expected 2D image, got shape %s" % (a.shape,))
    r = int(radius)
    if r == 0:
        return np.asarray(a, np.float32).copy()
    padded = np.pad(np.asarray(a, np.float32), r, mode="constant")
    res = _li.morphology(padded, op, element="square", size=2 * r + 1, device=device, precision=_precision())
    return np.ascontiguousarray(res[r:r + a.shape[0], r:r + a.shape[1]])


class MorphologyOperations(object):

    @staticmethod
    @requires_loaded
    def morphology_closing(image, output, kernel_size=7, device=None):
        """Dilation then erosion with a kernel_size square, zero padding each time; int64 result
        (truncated, as the original's .to(torch.int64))."""
        dev = _dev(image, device)
        d = _pad_zero_op(image._array, "dilate", kernel_size // 2, dev)
        e = _pad_zero_op(d, "erode", kernel_size // 2, dev)
        return _set(output, np.trunc(e).astype(np.int64))

    @staticmethod
    @requires_loaded
    def region_fill(image, output, device=None):
        """scipy.ndimage.binary_fill_holes of image != 0 (lumen.fill_holes), float32 0/1."""
        res = _li.fill_holes(np.asarray(image._array) != 0, device=_dev(image, device))
        return _set(output, res.astype(np.float32))

    @staticmethod
    def _disk_footprint(radius, device=None):
        y, x = np.meshgrid(np.arange(2 * radius + 1) - radius, np.arange(2 * radius + 1) - radius, indexing="ij")
        return (x ** 2 + y ** 2 <= radius ** 2).astype(np.float32)

    @staticmethod
    @requires_loaded
    def erosion(image, output, radius=4, device=None):
        return _set(output, _pad_zero_op(image._array, "erode", radius, _dev(image, device)))

    @staticmethod
    @requires_loaded
    def dilation(image, output, radius=4, device=None):
        return _set(output, _pad_zero_op(image._array, "dilate", radius, _dev(image, device)))

    @staticmethod
    @requires_loaded
    def white_top_hat(image, output, radius=4, device=None):
        """max(I - dilation(erosion(I)), 0), both zero-padded (the original's opening)."""
        dev = _dev(image, device)
        a = _plane(np.asarray(image._array, np.float32))
        opened = _pad_zero_op(_pad_zero_op(a, "erode", radius, dev), "dilate", radius, dev)
        return _set(output, np.maximum(a - opened, np.float32(0)))


class Metrics(object):

    @staticmethod
    @requires_loaded
    def entropy(image, decimals=4, device=None):
        """Shannon entropy (bits) of an int(max - min + 1)-bin histogram over [min, max], rounded."""
        a = np.asarray(image._array, np.float32)
        bins = int(float(a.max()) - float(a.min()) + 1)
        return round(_lo.entropy(a, bins=bins, device=_dev(image, device)), decimals)

    @staticmethod
    @requires_loaded
    def joint_entropy(image1, image2, decimals=4, device=None):
        """Entropy of the pair codes a * bins_b + b kept within [0, bins_a bins_b - 1] (the original's
        histogram: one bin per pair for integer images whose minimum is 0), rounded."""
        a = np.asarray(image1._array, np.float64).ravel()
        b = np.asarray(image2._array, np.float64).ravel()
        bins_a = int(a.max() - a.min() + 1)
        bins_b = int(b.max() - b.min() + 1)
        codes = a * bins_b + b
        codes = codes[(codes >= 0) & (codes <= bins_a * bins_b - 1)]
        return round(_lo.entropy(codes, bins=0, device=_dev(image1, device, image2)), decimals)

    @staticmethod
    @requires_loaded
    def mutual_information(image1, image2, decimals=4, device=None):
        return (Metrics.entropy(image1, decimals, device) + Metrics.entropy(image2, decimals, device)
                - Metrics.joint_entropy(image1, image2, decimals, device))

    @staticmethod
    @requires_loaded
    def local_variance(image, output, kernel, device=None):
        """Unbiased (n - 1) variance over a kernel x kernel window, mirror borders (lumen's
        population local variance times n / (n - 1)); square odd windows only."""
        if not isinstance(kernel, int):
            kh, kw = kernel
            if kh != kw:
                raise ValueError("local_variance: kernel %r: lumen computes square windows only" % (kernel,))
            kernel = kh
        a = _plane(image._array)
        n = kernel * kernel
        lv = _lo.local_variance(a, window=kernel, mode="mirror", device=_dev(image, device), precision=_precision())
        return _set(output, (lv * np.float32(n / (n - 1) if n > 1 else np.nan)).astype(np.float32))

    @staticmethod
    @requires_loaded
    def variance(image, output, device=None):
        """Unbiased (n - 1) variance of the whole image as a 0-d float32 array."""
        _, v = _lo.variance(image._array, ddof=1, device=_dev(image, device))
        return _set(output, np.array(v, dtype=np.float32))


class FrequencyOperations(object):
    """numpy.fft (lumen's C API has no complex FFT of its own): complex64, as the original's torch.fft."""

    @staticmethod
    @requires_loaded
    def fft(image, output, device=None):
        return _set(output, np.fft.fft2(np.asarray(image._array, np.float32)).astype(np.complex64))

    @staticmethod
    @requires_loaded
    def inverse_fft(image, output, device=None):
        return _set(output, np.fft.ifft2(np.asarray(image._array)).astype(np.complex64))
