"""medical_image.algorithms and medical_image.process.mammography over lumen: the segmentation
algorithm classes (constructor arguments and defaults of the original) and
MammographyPreprocessing. Each class is callable as algo(image, output) and
algo.apply_batch(images, outputs) and runs lumen's C implementations (lumen._segment, or the
compat ops of _process.py where the original's convention is not the C algorithm's; see
docs/BINDINGS.md, "Algorithm classes, mammography preprocessing, pipelines")."""
import numpy as np

from .. import _device as _ldev
from .. import _segment as _seg
from .. import _image_ops as _lo
from ._device import Device, Precision, get_default_precision, resolve_device, _precision
from ._image import InMemoryImage, DicomDataNotLoadedError, requires_loaded
from ._process import Filters, Threshold, MorphologyOperations, FrequencyOperations, _plane
from . import _fast

_CONVENTIONS = ("original", "lumen")


def _default_device():
    """The original's default ("cuda" when available, else "cpu"), with lumen's CUDA probe."""
    return Device("cuda") if _ldev.cuda_available() else Device("cpu")


def _convention(value):
    if value not in _CONVENTIONS:
        raise ValueError("convention=%r: expected one of %s" % (value, ", ".join(_CONVENTIONS)))
    return value


def _data(image):
    if getattr(image, "pixel_data", None) is None:
        raise DicomDataNotLoadedError("Image pixel_data is None. Call .load() first.")
    return np.asarray(image._array, np.float32)


def _finite_positive(v):
    try:
        return bool(np.isfinite(float(v)) and float(v) > 0)
    except (TypeError, ValueError):
        return False


def _host_fast(dev):
    """The fused C primitives (_fast.py) serve CPU calls at full precision (others take lumen's
    device-aware ops, which store half / bfloat16 results)."""
    return dev == "cpu" and _precision() == "full" and _fast.available()


class Algorithm(object):
    """Base class (medical_image.algorithms.algorithm.Algorithm): device None = "cuda" when lumen
    sees a usable CUDA device, else "cpu"; precision None = get_default_precision() at call time
    (the original's autocast becomes lumen's storage precision)."""

    def __init__(self, device=None, precision=None):
        self.device = Device(device) if device is not None else _default_device()
        self.precision = precision

    def _precision(self):
        p = self.precision if self.precision is not None else get_default_precision()
        return Precision(p.value if isinstance(p, Precision) else p).value

    def _dev(self, image):
        return str(resolve_device(image, explicit=self.device))

    def apply(self, image, output):
        raise NotImplementedError

    def __call__(self, image, output):
        self.apply(image, output)
        return output

    def apply_batch(self, images, outputs):
        """Loops over apply(), as the original's default."""
        for img, out in zip(images, outputs):
            self.apply(img, out)
        return outputs

    def __repr__(self):
        p = self.precision if self.precision is not None else get_default_precision()
        return "%s(device='%s', precision=%s)" % (self.__class__.__name__, self.device,
                                                  getattr(p, "name", str(p).upper()))


class FebdsAlgorithm(Algorithm):
    """FEBDS (Lopez & Urcid 2016): method "dog" | "log" | "fft" (required, as the original).

    convention="original" (default): the original's pipeline step by step over the compat ops
    (each a lumen C op with the original's conventions: DoG 1.7/2.0 or LoG 2.0 with replicate
    borders, |.|, median 5 with mirror borders, gamma 1.25, Otsu with linspace bin centres or the
    unbiased-variance binarisation for fft, zero-padded 7x7 closing, hole filling); float32 0/1.
    convention="lumen": one lumen_segment_febds call with the original's parameter values
    (fft_pad=0); uint8 0/1, bit for bit lumen.febds(...)."""

    def __init__(self, method, device="cpu", convention="original", precision=None):
        super().__init__(device=device, precision=precision)
        if method not in _seg.febds_methods():
            raise ValueError("method=%r: expected one of %s" % (method, ", ".join(_seg.febds_methods())))
        self.method = method
        self.convention = _convention(convention)

    def apply(self, image, output):
        dev = self._dev(image)
        if self.convention == "lumen":
            a = _plane(_data(image))
            output.pixel_data = _seg.febds(a, method=self.method, fft_pad=0, device=dev, precision=self._precision())
            return output
        if self.method == "dog":
            Filters.difference_of_gaussian(image, output, low_sigma=1.7, high_sigma=2.0, device=dev)
        elif self.method == "log":
            Filters.laplacian_of_gaussian(image, output, sigma=2.0, device=dev)
        else:
            FrequencyOperations.fft(image, output, device=dev)
            kernel = InMemoryImage(array=np.zeros(np.shape(output._array), np.float32))
            Filters.butterworth_kernel(output, kernel, device=dev)
            output.pixel_data = output._array * kernel._array
            FrequencyOperations.inverse_fft(output, output, device=dev)
        # the original's abs is torch.abs(x.float()): a complex x (fft) loses its imaginary part first
        enhanced = np.ascontiguousarray(np.real(output._array), np.float32)
        output.pixel_data = _lo.absolute(enhanced, device=dev, precision=self._precision())
        Filters.median_filter(output, output, size=5, device=dev)
        Filters.gamma_correction(output, output, gamma=1.25, device=dev)
        if self.method == "fft":
            Threshold.binarize(output, output, alpha=1, device=dev)
        else:
            Threshold.otsu_threshold(output, output, device=dev)
        MorphologyOperations.morphology_closing(output, output, device=dev)
        MorphologyOperations.region_fill(output, output, device=dev)
        return output


class TopHatAlgorithm(Algorithm):
    """White top-hat, radius 4. convention="original": MorphologyOperations.white_top_hat (the
    original's zero-padded (2r+1) square window); "lumen": lumen.tophat (a disk, outside pixels
    ignored)."""

    def __init__(self, radius=4, device="cpu", convention="original", precision=None):
        super().__init__(device=device, precision=precision)
        self.radius = radius
        self.convention = _convention(convention)

    def apply(self, image, output):
        dev = self._dev(image)
        if self.convention == "lumen":
            output.pixel_data = _seg.tophat(_plane(_data(image)), radius=self.radius, device=dev,
                                            precision=self._precision())
            return output
        return MorphologyOperations.white_top_hat(image, output, radius=self.radius, device=dev)


def _quantized(centers, labels):
    vals = np.asarray(centers, np.float32)
    mx = vals.max()
    if mx > 0:
        vals = vals / mx
    return vals[labels]


def _sq_dist(z, centers):
    return (z[None, :] - np.asarray(centers, np.float64)[:, None]) ** 2  # (c, N)


def _fcm_membership(d2, m):
    inv = (d2 + 1e-10) ** (-1.0 / (m - 1.0))
    return inv / (inv.sum(axis=0, keepdims=True) + 1e-10)


class _Clustering(Algorithm):
    """Shared by k-means, FCM and PFCM: one lumen._segment call with labels=True, the original's
    result attributes filled from lumen's centres (labels are lumen's: darkest cluster first)."""

    def _cluster(self, fn, image, **kw):
        a = _plane(_data(image))
        labels, rep = fn(a, labels=True, device=self._dev(image), precision=self._precision(), return_report=True,
                         **kw)
        cl = rep["clusters"]
        self.centroids = np.asarray(cl["centers"], np.float32)[:, None]
        self.labels = labels.astype(np.int64)
        self.n_iter, self.converged = cl["iterations"], cl["converged"]
        self.quantized = _quantized(cl["centers"], self.labels)
        self.mc_label = int(np.argmax(self.centroids[:, 0]))
        self.stats = [{"id": i, "centroid": float(cl["centers"][i]), "pixels": int(cl["sizes"][i]),
                       "is_mc": i == self.mc_label} for i in range(cl["k"])]
        return a

    def _mc_mask(self):
        return (self.quantized == self.quantized.max()).astype(np.float32)


class KMeansAlgorithm(_Clustering):
    """k-means on intensities (k-means++ seeding): output the float32 mask of the brightest cluster.
    After apply: centroids (k, 1), labels (H, W), quantized, n_iter, converged, stats, mc_label."""

    def __init__(self, k=2, max_iter=100, tol=1e-4, random_state=42, device="cpu", precision=None):
        super().__init__(device=device, precision=precision)
        self.k, self.max_iter, self.tol, self.random_state = k, max_iter, tol, random_state
        self.centroids = self.labels = self.quantized = self.stats = None
        self.n_iter, self.converged, self.mc_label = 0, False, -1

    def apply(self, image, output):
        self._cluster(_seg.kmeans, image, k=self.k, max_iterations=self.max_iter, tolerance=self.tol,
                      seed=self.random_state)
        output.pixel_data = self._mc_mask()
        return output


class FCMAlgorithm(_Clustering):
    """Fuzzy c-means: output the float32 mask of the brightest cluster (hard assignment). After
    apply as KMeansAlgorithm, plus membership (c, N), recomputed from the final centres with the
    original's formula."""

    def __init__(self, c=2, m=2.0, max_iter=100, tol=1e-3, random_state=42, device="cpu", precision=None):
        super().__init__(device=device, precision=precision)
        self.c, self.m, self.max_iter, self.tol, self.random_state = c, m, max_iter, tol, random_state
        self.centroids = self.membership = self.labels = self.quantized = self.stats = None
        self.n_iter, self.converged, self.mc_label = 0, False, -1

    def apply(self, image, output):
        if self._dev(image) == "cpu" and _fast.available():
            a = _plane(_data(image))
            res = _fast.fcm_values(a, self.c, self.m, self.max_iter, self.tol, self.random_state)
            if res is not None:
                return self._from_values(a, res, output)
        a = self._cluster(_seg.fcm, image, c=self.c, m=self.m, max_iterations=self.max_iter, tolerance=self.tol,
                          seed=self.random_state)
        z = a.reshape(-1).astype(np.float64)
        self.membership = _fcm_membership(_sq_dist(z, self.centroids[:, 0]), self.m).astype(np.float32)
        output.pixel_data = self._mc_mask()
        return output

    def _from_values(self, a, res, output):
        """The results from lumen_filter_fcm_values (integer data): every per-voxel quantity is a
        function of the value, so it is computed once per value (the same float64 formulas as
        the per-voxel path) and gathered through the voxels' value indices."""
        centers, counts, lo, self.n_iter, self.converged = res
        k = centers.size
        vals = np.arange(lo, lo + counts.size, dtype=np.float64)
        lab = np.argmin(np.abs(vals[None, :] - centers[:, None]), axis=0)  # nearest; ties: the lower
        present = counts > 0
        self.centroids = centers.astype(np.float32)[:, None]
        self.mc_label = int(np.argmax(self.centroids[:, 0]))
        sizes = np.bincount(lab[present], weights=counts[present], minlength=k).astype(np.int64)
        self.stats = [{"id": i, "centroid": float(centers[i]), "pixels": int(sizes[i]), "is_mc": i == self.mc_label}
                      for i in range(k)]
        idx = a.astype(np.intp)
        idx -= lo
        self.labels = lab.astype(np.int64)[idx]
        q = _quantized(centers, lab)
        self.quantized = q[idx]
        mask = (q == q[present].max()).astype(np.float32)
        u = _fcm_membership(_sq_dist(vals, self.centroids[:, 0]), self.m).astype(np.float32)
        self.membership = u[:, idx.reshape(-1)]
        output.pixel_data = mask[idx]
        return output


class PFCMAlgorithm(_Clustering):
    """Possibilistic fuzzy c-means: output the float32 mask of pixels atypical of every cluster
    (max typicality < tau) outside the darkest cluster. fcm_max_iter is accepted; lumen's FCM
    warm start uses max_iter as well. typicality, T_max_map, membership and gamma are recomputed
    from the final centres with the original's formulas."""

    def __init__(self, c=2, m=2.0, eta=2.0, a=1.0, b=4.0, tau=0.04, max_iter=100, tol=1e-3, fcm_max_iter=100,
                 random_state=42, device="cpu", precision=None):
        super().__init__(device=device, precision=precision)
        self.c, self.m, self.eta, self.a, self.b, self.tau = c, m, eta, a, b, tau
        self.max_iter, self.tol, self.fcm_max_iter, self.random_state = max_iter, tol, fcm_max_iter, random_state
        self.typicality = self.T_max_map = self.centroids = self.membership = None
        self.labels = self.quantized = self.gamma = self.stats = None
        self.n_iter, self.converged, self.mc_label = 0, False, -1

    def apply(self, image, output):
        kw = dict(c=self.c, m=self.m, max_iterations=self.max_iter, tolerance=self.tol, seed=self.random_state,
                  eta=self.eta, a=self.a, b=self.b, tau=self.tau)
        img = self._cluster(_seg.pfcm, image, **kw)
        mask = _seg.pfcm(img, device=self._dev(image), precision=self._precision(), **kw)
        z = img.reshape(-1).astype(np.float64)
        d2 = _sq_dist(z, self.centroids[:, 0])
        u = _fcm_membership(d2, self.m)
        um = u ** self.m
        g = (um * d2).sum(axis=1) / (um.sum(axis=1) + 1e-10)
        t = 1.0 / (1.0 + ((self.b / (g[:, None] + 1e-10)) * d2 + 1e-10) ** (1.0 / (self.eta - 1.0)))
        self.membership, self.gamma, self.typicality = u.astype(np.float32), g.astype(np.float32), t.astype(np.float32)
        self.T_max_map = self.typicality.max(axis=0).reshape(img.shape)
        output.pixel_data = mask.astype(np.float32)
        return output


# skimage.filters.sobel's kernels (correlation, scipy 'reflect' borders): smoothing [1, 2, 1] across, [1, 0, -1] along
_SOBEL_H = np.array([[1, 2, 1], [0, 0, 0], [-1, -2, -1]], np.float32)


class SbrgAlgorithm(Algorithm):
    """Seed-based region growing (Malek et al. 2010), the original's pipeline over lumen ops:
    the region {x >= t}, t the mean of the regional maxima (8-connected), is lumen.region_grow
    with full connectivity and no smoothing (every component of {x >= t} holds a regional maximum,
    so growing from the maxima gives exactly the thresholded set); then, as the original, the mask
    of non-zero Sobel gradient of that region (lumen.convolve, reflect borders) dilated and eroded
    with radius 2 (the compat ops: zero-padded 5x5 squares); float32 0/1. lumen counts each
    regional-maximum plateau once in t; the original perturbs plateau values at random (seed 42)
    and keeps the pixels that win their 3x3 neighbourhood."""

    def __init__(self, device=None, precision=None):
        super().__init__(device=device, precision=precision)

    def apply(self, image, output):
        dev = self._dev(image)
        a = _plane(_data(image))
        region = _seg.region_grow(a, connectivity=0, smooth_radius=0, device=dev).astype(np.float32)
        gy = _lo.convolve(region, _SOBEL_H, mode="reflect", correlate=True, device=dev)
        gx = _lo.convolve(region, np.ascontiguousarray(_SOBEL_H.T), mode="reflect", correlate=True, device=dev)
        edges = InMemoryImage(array=((gx != 0) | (gy != 0)).astype(np.float32))
        dilated = edges.clone()
        MorphologyOperations.dilation(edges, dilated, radius=2, device=dev)
        MorphologyOperations.erosion(dilated, output, radius=2, device=dev)
        output.pixel_data = (np.asarray(output._array) > 0).astype(np.float32)
        return output


class MammographyPreprocessing(object):
    """medical_image.process.mammography.MammographyPreprocessing over lumen (static methods)."""

    @staticmethod
    @requires_loaded
    def breast_mask(image, output=None, device=None):
        """uint8 0/1: the original's Otsu (256 / 4096 bins, linspace bin centres) then the largest
        4-connected component (lumen.largest_component; scipy.ndimage.label's default)."""
        dev = str(resolve_device(image, explicit=device))
        otsu = Threshold.otsu_threshold(image, None, device=dev)._array
        mask = _lo.largest_component(otsu, connectivity=1, device=dev)  # uint8 already
        return _result(output, mask)

    @staticmethod
    @requires_loaded
    def apply_breast_mask(image, output=None, device=None):
        """The image times its breast mask (float32)."""
        mask = MammographyPreprocessing.breast_mask(image, device=device)._array
        masked = _data(image) * mask.astype(np.float32)
        return _result(output, masked)

    @staticmethod
    @requires_loaded
    def dicom_window(image, output=None, window_center=None, window_width=None, device=None):
        """clamp((x - (WC - WW/2)) / WW, 0, 1) * 255 (lumen.window); WC/WW: the arguments, else
        image.dicom_data's WindowCenter/WindowWidth, else the data's middle and range."""
        a = _data(image)
        wc, ww = MammographyPreprocessing._resolve_wc_ww(image, window_center, window_width, a)
        dev = str(resolve_device(image, explicit=device))
        if _host_fast(dev):  # lumen.window's map in one threaded pass (lumen_segment_window's values)
            if wc is None:  # the data's middle and range (finite voxels), as lumen.window
                lo, hi, _, _ = _fast.finite_range(a)
                wc, ww = 0.5 * (lo + hi), (hi - lo if hi > lo else 1.0)
            if _finite_positive(ww) and np.isfinite(wc):
                return _result(output, _fast.scale_clamp(a, wc - 0.5 * ww, 1.0 / ww, 255.0))
        res = _seg.window(a, center=wc, width=ww, out_max=255.0, device=dev, precision=_precision())
        return _result(output, res)

    @staticmethod
    @requires_loaded
    def grail_window(image, output=None, n_scales=3, n_orientations=6, delta=300, k_max=3, device=None):
        """GRAIL automatic windowing (lumen.grail, Albiol et al. 2017) with the original's
        unrounded metric (quantize=0; lumen's default rounds the display to 256 levels): float32
        in [0, 255]; output.grail_a / grail_b hold the window found."""
        a = _plane(_data(image))
        res, lo, hi = _seg.grail(a, n_scales=n_scales, n_orientations=n_orientations, delta=delta, k_max=k_max,
                                 quantize=0, out_max=255.0, device=str(resolve_device(image, explicit=device)),
                                 precision=_precision())
        output = _result(output, res)
        output.grail_a, output.grail_b = float(lo), float(hi)
        return output

    @staticmethod
    @requires_loaded
    def normalize_bit_depth(image, output=None, bits_stored=None, target_max=255.0, device=None):
        """clamp(x / (2^bits - 1), 0, 1) * target_max (lumen.normalize_bits); bits: the argument,
        else image.dicom_data.BitsStored, else 8 / 12 / 16 from the maximum."""
        a = _data(image)
        dev = str(resolve_device(image, explicit=device))
        if bits_stored is None:
            bits_stored = MammographyPreprocessing._header_bits_stored(image)
        if bits_stored is None and _host_fast(dev) and _fast.has_bits_detect() and _finite_positive(target_max):
            # the maximum found in the map's own pass (the bit depth guessed from a sample first)
            return _result(output, _fast.normalize_bits_detect(a, float(target_max))[0])
        if bits_stored is None:
            bits_stored = MammographyPreprocessing._detect_bits_stored(image, a if _host_fast(dev) else None)
        if _host_fast(dev) and isinstance(bits_stored, int) and 1 <= bits_stored <= 32 and _finite_positive(target_max):
            # lumen.normalize_bits' map in one threaded pass (lumen_segment_normalize_bits' values)
            return _result(output, _fast.scale_clamp(a, 0.0, 1.0 / (2.0 ** bits_stored - 1.0), float(target_max)))
        res = _seg.normalize_bits(a, bits=bits_stored, target=target_max, device=dev, precision=_precision())
        return _result(output, res)

    @staticmethod
    def _resolve_wc_ww(image, wc, ww, img):
        if wc is not None and ww is not None:
            return float(wc), float(ww)
        dicom = getattr(image, "dicom_data", None)
        if dicom is not None:
            try:
                hwc, hww = dicom.WindowCenter, dicom.WindowWidth
                hwc = hwc[0] if isinstance(hwc, (list, tuple)) or type(hwc).__name__ == "MultiValue" else hwc
                hww = hww[0] if isinstance(hww, (list, tuple)) or type(hww).__name__ == "MultiValue" else hww
                return float(hwc), float(hww)
            except (AttributeError, TypeError):
                pass
        return None, None  # lumen.window: the data's middle and range (the original's fallback)

    @staticmethod
    def _header_bits_stored(image):
        """image.dicom_data.BitsStored, None when there is none."""
        dicom = getattr(image, "dicom_data", None)
        if dicom is not None:
            try:
                return int(dicom.BitsStored)
            except (AttributeError, TypeError):
                pass
        return None

    @staticmethod
    def _detect_bits_stored(image, f32=None):
        """f32: image's float32 data, whose maximum lumen then finds in one threaded pass (numpy's
        when a value is not finite: NaN or Inf give 16, as the original's max)."""
        bits = MammographyPreprocessing._header_bits_stored(image)
        if bits is not None:
            return bits
        peak = None
        if f32 is not None:
            _, hi, finite, _ = _fast.finite_range(f32)
            peak = hi if finite == f32.size else None
        if peak is None:
            peak = float(np.max(image._array))  # as the original: 8 / 12 / 16 from the maximum
        return 8 if peak <= 255 else 12 if peak <= 4095 else 16


from . import _mammo_helpers  # noqa: E402

MammographyPreprocessing._otsu_binary = staticmethod(_mammo_helpers.otsu_binary)
MammographyPreprocessing._largest_connected_component = staticmethod(_mammo_helpers.largest_connected_component)
MammographyPreprocessing._intensity_window = staticmethod(_mammo_helpers.intensity_window)
MammographyPreprocessing._build_gabor_bank = staticmethod(_mammo_helpers.build_gabor_bank)


def _result(output, data):
    """Sets output.pixel_data (a new InMemoryImage when output is None), keeping data's dtype."""
    if output is None:
        output = InMemoryImage(array=np.zeros((1, 1), np.float32))
    output.pixel_data = data
    return output


class BreastMaskAlgorithm(Algorithm):
    """Breast region: mask_only=True the uint8 mask, else the masked image (float32)."""

    def __init__(self, mask_only=False, device=None, precision=None):
        super().__init__(device=device, precision=precision)
        self.mask_only = mask_only

    def apply(self, image, output):
        if self.mask_only:
            return MammographyPreprocessing.breast_mask(image, output, device=self.device)
        return MammographyPreprocessing.apply_breast_mask(image, output, device=self.device)


class DicomWindowAlgorithm(Algorithm):
    """DICOM WC/WW windowing to [0, 255]."""

    def __init__(self, window_center=None, window_width=None, device=None, precision=None):
        super().__init__(device=device, precision=precision)
        self.window_center, self.window_width = window_center, window_width

    def apply(self, image, output):
        return MammographyPreprocessing.dicom_window(image, output, window_center=self.window_center,
                                                     window_width=self.window_width, device=self.device)


class BitDepthNormAlgorithm(Algorithm):
    """[0, 2^bits - 1] -> [0, target_max]."""

    def __init__(self, bits_stored=None, target_max=255.0, device=None, precision=None):
        super().__init__(device=device, precision=precision)
        self.bits_stored, self.target_max = bits_stored, target_max

    def apply(self, image, output):
        return MammographyPreprocessing.normalize_bit_depth(image, output, bits_stored=self.bits_stored,
                                                            target_max=self.target_max, device=self.device)


class GrailWindowAlgorithm(Algorithm):
    """GRAIL automatic windowing; grail_a / grail_b are set by apply()."""

    def __init__(self, n_scales=3, n_orientations=6, delta=300, k_max=3, device=None, precision=None):
        super().__init__(device=device, precision=precision)
        self.n_scales, self.n_orientations, self.delta, self.k_max = n_scales, n_orientations, delta, k_max
        self.grail_a = self.grail_b = None

    def apply(self, image, output):
        res = MammographyPreprocessing.grail_window(image, output, n_scales=self.n_scales,
                                                    n_orientations=self.n_orientations, delta=self.delta,
                                                    k_max=self.k_max, device=self.device)
        self.grail_a, self.grail_b = res.grail_a, res.grail_b
        return output
