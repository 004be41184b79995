"""medical_image.algorithms.deep_segmentation.DeepSegmentationAlgorithm over lumen: a trained
segmentation network (any torch module giving one logit channel) run by sliding windows over an
image, its probabilities thresholded to a 0/1 mask and the mask's connected components turned
into Annotations, as medical-image-std 0.8.2 does.

Needs PyTorch (the network); without it the constructor raises ImportError naming it. The image
processing around the network is lumen's: the breast mask that bounds inference
(MammographyPreprocessing.breast_mask: Otsu and lumen.largest_component), the lesion components
(lumen.label, 4-connected as scipy.ndimage.label), and here, in numpy: CLAHE (OpenCV's
createCLAHE(2.0, (8, 8)) on 8-bit data, the transform the served models were trained with),
the blending window and the lesion contours (marching squares at level 0.5, as
skimage.measure.find_contours). Checkpoints (.pt with model_state_dict and config) also need
segmentation-models-pytorch, ONNX inference needs onnxruntime, and the model server needs the
network."""
import logging
import os
import re
import urllib.request

import numpy as np

from .. import _image as _limg
from . import _arrays
from ._algorithms import Algorithm, MammographyPreprocessing
from ._annotation import Annotation, GeometryType
from ._device import Device, Precision
from ._image import InMemoryImage

logger = logging.getLogger("medical_image")

DEFAULT_BATCH_PIXELS = 8 * 512 * 512  # pixels per forward call (patches per batch = this / ps^2)
DEFAULT_MODEL_SERVER_URL = "https://mcdmodels.ptm.tn/"
DEFAULT_CACHE_DIR = os.path.join(os.path.expanduser("~"), ".cache", "medical-std", "models")

KNOWN_ARCHITECTURES = {"unet", "attention_unet", "unetpp", "deeplabv3p"}
KNOWN_LOSSES = {"bce_dice", "focal_dice", "topk_bce_dice", "focal_tversky"}
KNOWN_DATASETS = {"inbreast", "cbis_ddsm_new"}

# <architecture>_<loss>_<patch size>_<dataset>[_clahe]: the model server's folder names.
_NAME = re.compile(r"^(%s)_(%s)_([0-9]+)_(%s)(_clahe)?$" % (
    "|".join(sorted(KNOWN_ARCHITECTURES, key=len, reverse=True)),
    "|".join(sorted(KNOWN_LOSSES, key=len, reverse=True)),
    "|".join(sorted(KNOWN_DATASETS))))

_NO_TORCH = ("DeepSegmentationAlgorithm needs PyTorch to run its network: pip install torch "
             "(lumen.medical_image itself does not need it)")


def _torch():
    try:
        import torch
    except ImportError as exc:
        raise ImportError(_NO_TORCH) from exc
    return torch


def _parse_model_name(name):
    """The metadata in a model server folder name, or None when it is not one."""
    m = _NAME.match(name)
    if m is None:
        return None
    return {"name": name, "architecture": m.group(1), "loss": m.group(2), "patch_size": int(m.group(3)),
            "dataset": m.group(4), "uses_clahe": m.group(5) is not None}


class _OnnxModel(object):
    """An onnxruntime session called like the torch module it was exported from (logits out)."""

    def __init__(self, path, providers=None, threads=0):
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise ImportError("onnx_path needs onnxruntime: pip install onnxruntime") from exc
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            opts.intra_op_num_threads = int(threads)
        self.session = ort.InferenceSession(path, opts, providers=providers or ["CPUExecutionProvider"])
        self.input_name = self.session.get_inputs()[0].name

    def __call__(self, x):
        torch = _torch()
        arr = np.ascontiguousarray(x.detach().cpu().numpy(), np.float32)
        return torch.from_numpy(self.session.run(None, {self.input_name: arr})[0])

    def to(self, *args, **kwargs):
        return self

    def eval(self):
        return self


# ---------------------------------------------------------------------------------------------
# CLAHE (OpenCV's algorithm on 8-bit data: tile histograms clipped at clip_limit * tile area / 256,
# the excess spread evenly then one by one, per-tile LUTs blended bilinearly between tile centres)
# ---------------------------------------------------------------------------------------------

def _clahe_u8(img, clip_limit=2.0, tiles=(8, 8)):
    """CLAHE of a uint8 (H, W) image with tiles = (rows, columns) of tiles; returns uint8."""
    h, w = img.shape
    ty, tx = int(tiles[0]), int(tiles[1])
    src = img
    if h % ty or w % tx:  # extend bottom / right by reflection (no edge repeat) to whole tiles
        ph, pw = (ty - h % ty) % ty, (tx - w % tx) % tx
        src = np.pad(img, ((0, ph), (0, pw)), mode="reflect")
    th, tw = src.shape[0] // ty, src.shape[1] // tx
    area = th * tw
    limit = max(int(clip_limit * area / 256.0), 1) if clip_limit > 0 else 0
    tiles_px = src[:ty * th, :tx * tw].reshape(ty, th, tx, tw).transpose(0, 2, 1, 3).reshape(ty * tx, area)
    luts = np.empty((ty * tx, 256), np.uint8)
    scale = np.float32(255.0 / area)
    for t in range(ty * tx):
        hist = np.bincount(tiles_px[t], minlength=256).astype(np.int64)
        if limit > 0:
            excess = int(np.maximum(hist - limit, 0).sum())
            np.minimum(hist, limit, out=hist)
            batch, residual = divmod(excess, 256)
            hist += batch
            if residual:
                step = max(256 // residual, 1)
                idx = np.arange(0, 256, step)[:residual]
                hist[idx] += 1
        cdf = np.cumsum(hist).astype(np.float32) * scale
        luts[t] = np.clip(np.rint(cdf), 0, 255).astype(np.uint8)
    luts = luts.reshape(ty, tx, 256).astype(np.float32)
    # bilinear weights between the tile centres (float32, as OpenCV)
    yf = np.arange(h, dtype=np.float32) * np.float32(1.0 / th) - np.float32(0.5)
    xf = np.arange(w, dtype=np.float32) * np.float32(1.0 / tw) - np.float32(0.5)
    y1 = np.floor(yf).astype(np.int64)
    x1 = np.floor(xf).astype(np.int64)
    ya = (yf - y1).astype(np.float32)[:, None]
    xa = (xf - x1).astype(np.float32)[None, :]
    y2, x2 = np.minimum(y1 + 1, ty - 1), np.minimum(x1 + 1, tx - 1)
    y1, x1 = np.maximum(y1, 0), np.maximum(x1, 0)
    v = img.astype(np.int64)
    Y1, Y2, X1, X2 = y1[:, None], y2[:, None], x1[None, :], x2[None, :]
    top = luts[Y1, X1, v] * (1 - xa) + luts[Y1, X2, v] * xa
    bottom = luts[Y2, X1, v] * (1 - xa) + luts[Y2, X2, v] * xa
    res = top * (1 - ya) + bottom * ya
    return np.clip(np.rint(res), 0, 255).astype(np.uint8)


# ---------------------------------------------------------------------------------------------
# Contours: marching squares at level 0.5 on a 0/1 array (high corners face-connected only, so a
# diagonal pair of lesion pixels is two contours, as find_contours' fully_connected="low")
# ---------------------------------------------------------------------------------------------

# corner bits: 1 top-left, 2 top-right, 4 bottom-right, 8 bottom-left; edges: T, R, B, L
_EDGE = {"T": (0, 1), "R": (1, 2), "B": (2, 1), "L": (1, 0)}  # doubled (row, col) offsets in a cell
_SEGMENTS = {1: ("LT",), 2: ("TR",), 3: ("LR",), 4: ("RB",), 5: ("LT", "RB"), 6: ("TB",), 7: ("LB",),
             8: ("BL",), 9: ("TB",), 10: ("TR", "BL"), 11: ("RB",), 12: ("LR",), 13: ("TR",), 14: ("LT",)}


def _contours(a):
    """The level-0.5 contours of a 0/1 (H, W) array: lists of (row, col) float points, closed
    ones ending with their first point."""
    a = (np.asarray(a) > 0).astype(np.uint8)
    if a.shape[0] < 2 or a.shape[1] < 2:
        return []
    case = a[:-1, :-1] + 2 * a[:-1, 1:] + 4 * a[1:, 1:] + 8 * a[1:, :-1]
    adj = {}
    for cval, segs in _SEGMENTS.items():
        rr, cc = np.nonzero(case == cval)
        for e0, e1 in segs:
            d0, d1 = _EDGE[e0], _EDGE[e1]
            for r, c in zip((2 * rr).tolist(), (2 * cc).tolist()):
                p, q = (r + d0[0], c + d0[1]), (r + d1[0], c + d1[1])
                adj.setdefault(p, []).append(q)
                adj.setdefault(q, []).append(p)
    seen, out = set(), []

    def walk(start):
        path, cur = [start], start
        seen.add(start)
        while True:
            nxt = [n for n in adj[cur] if n not in seen]
            if not nxt:
                if len(path) > 2 and start in adj[cur]:
                    path.append(start)
                return path
            cur = nxt[0]
            seen.add(cur)
            path.append(cur)

    for p in sorted(adj):  # open chains (they start at the array's border) first, from an end
        if p not in seen and len(adj[p]) == 1:
            out.append(walk(p))
    for p in sorted(adj):
        if p not in seen:
            out.append(walk(p))
    return [[(r / 2.0, c / 2.0) for r, c in path] for path in out]


def _blend_window(ps, blend):
    """Per-pixel weights of a patch when overlaps are averaged: ones ("uniform"), or a separable
    Gaussian (sigma ps / 8) about the patch centre floored at a tenth of its peak ("gaussian")."""
    if blend == "uniform":
        return np.ones((ps, ps), np.float32)
    d = np.arange(ps, dtype=np.float32) - np.float32((ps - 1) / 2.0)
    g = np.exp(-(d * d) / np.float32(2.0 * (ps / 8.0) ** 2)).astype(np.float32)
    win = np.outer(g, g).astype(np.float32)
    return np.maximum(win, win.max() * np.float32(0.1))


class DeepSegmentationAlgorithm(Algorithm):
    """A trained segmentation network as an Algorithm (medical-image-std 0.8.2's arguments and
    defaults). Give model (a torch module: (N, 1, ps, ps) in [0, 1] -> (N, 1, ps, ps) logits) or
    checkpoint_path (a training checkpoint; needs segmentation-models-pytorch).

    apply(image, output): the image (scaled to [0, 1] by its maximum when that exceeds 1) is
    cropped to its breast's bounding box plus breast_margin (crop_to_breast; lumen's breast
    mask), optionally CLAHE'd (use_clahe), tiled in patch_size windows every stride pixels
    (stride_ratio * patch_size when given; the last window of a row / column moved back to end at
    the border, each distinct window once, windows with no breast pixel skipped when
    skip_background_patches), run in batches of about batch_pixels pixels, and the sigmoid
    probabilities averaged over the overlaps (blend "gaussian" or "uniform" weights). Then:
    probability_map (H, W) float32 tensor, output.pixel_data the 0/1 float mask
    (probability > threshold), output.annotations one "microcalcification" Annotation per
    4-connected component of at least min_lesion_area pixels (POLYGON: its longest contour,
    metadata confidence (mean probability), area, bbox [x0, y0, x1, y1]), lesion_count,
    breast_bbox (y0, x0, y1, x1) or None, patches_inferred, patches_skipped."""

    def __init__(self, checkpoint_path=None, model=None, use_clahe=False, patch_size=512, stride=None,
                 threshold=0.5, min_lesion_area=4, device=None, precision=Precision.FULL, crop_to_breast=True,
                 breast_margin=30, skip_background_patches=True, stride_ratio=None, blend="gaussian",
                 batch_pixels=DEFAULT_BATCH_PIXELS, channels_last=False, compile_model=False, onnx_path=None,
                 onnx_providers=None):
        torch = _torch()
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        super(DeepSegmentationAlgorithm, self).__init__(device=device, precision=precision)
        if checkpoint_path is None and model is None:
            raise ValueError("Provide either checkpoint_path or model")
        if blend not in ("gaussian", "uniform"):
            raise ValueError("blend must be 'gaussian' or 'uniform', got %r" % (blend,))
        self.patch_size = int(patch_size)
        self.stride = stride or self.patch_size // 2
        self.threshold = threshold
        self.min_lesion_area = min_lesion_area
        self.use_clahe = use_clahe
        self.crop_to_breast = crop_to_breast
        self.breast_margin = breast_margin
        self.skip_background_patches = skip_background_patches
        self.blend = blend
        self.batch_pixels = batch_pixels
        self._explicit_stride = stride is not None
        self._stride_ratio_override = stride_ratio
        self._model_name = None
        if checkpoint_path is not None:
            self._load_from_checkpoint(checkpoint_path)
        else:
            self.model = model.to(str(self.device))
            self.model.eval()
        if stride_ratio is not None:
            self.stride = max(1, int(self.patch_size * stride_ratio))
        self.channels_last = bool(channels_last) and onnx_path is None
        if self.channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        if compile_model and onnx_path is None:
            self.model = torch.compile(self.model)
        if onnx_path is not None:  # the checkpoint (if any) still gave patch size, threshold, CLAHE
            self.model = _OnnxModel(onnx_path, providers=onnx_providers)
        self.probability_map = None
        self.lesion_count = 0
        self.breast_bbox = None
        self.patches_inferred = 0
        self.patches_skipped = 0

    # -- models: the model server, checkpoints, ONNX ------------------------------------------

    @classmethod
    def list_available_models(cls, server_url=None):
        """The model server's models (its folder listing): dicts with name, architecture, loss,
        patch_size, dataset, uses_clahe and url."""
        url = (server_url or DEFAULT_MODEL_SERVER_URL).rstrip("/") + "/"
        with urllib.request.urlopen(url, timeout=30) as resp:
            html = resp.read().decode("utf-8", "replace")
        models = []
        for href in re.findall(r'href="([^"]+/)"', html):
            info = _parse_model_name(href.rstrip("/"))
            if info is not None:
                info["url"] = url + info["name"] + "/"
                models.append(info)
        return models

    @classmethod
    def from_pretrained(cls, model_name, server_url=None, cache_dir=None, device=None, precision=Precision.FULL,
                        force_download=False, **kwargs):
        """Downloads <server>/<model_name>/best_model.pt into cache_dir/<model_name>/ (unless it
        is there already) and loads it; other keyword arguments go to the constructor."""
        base = (server_url or DEFAULT_MODEL_SERVER_URL).rstrip("/")
        local = os.path.join(cache_dir or DEFAULT_CACHE_DIR, model_name, "best_model.pt")
        if force_download or not os.path.exists(local):
            os.makedirs(os.path.dirname(local), exist_ok=True)
            url = "%s/%s/best_model.pt" % (base, model_name)
            logger.info("Downloading %s -> %s", url, local)
            tmp = local + ".part"
            with urllib.request.urlopen(url, timeout=120) as resp, open(tmp, "wb") as f:
                while True:
                    chunk = resp.read(1 << 16)
                    if not chunk:
                        break
                    f.write(chunk)
            os.replace(tmp, local)
        algo = cls(checkpoint_path=local, device=device, precision=precision, **kwargs)
        algo._model_name = model_name
        return algo

    @property
    def model_info(self):
        """from_pretrained's model name parsed (architecture, loss, ...), else None."""
        return None if self._model_name is None else _parse_model_name(self._model_name)

    def export_onnx(self, path, opset=17):
        """Writes the torch model as ONNX (input "input" (N, 1, ps, ps), output "logits", the batch
        axis dynamic); returns path."""
        if isinstance(self.model, _OnnxModel):
            raise ValueError("This instance already runs ONNX; export from a torch one.")
        torch = _torch()
        dummy = torch.zeros(1, 1, self.patch_size, self.patch_size, device=str(self.device))
        torch.onnx.export(self.model, dummy, path, input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, opset_version=opset)
        return path

    def _load_from_checkpoint(self, checkpoint_path):
        """A training checkpoint: {"model_state_dict": ..., "config": {"model": {name, encoder,
        in_channels}, "preprocessing": {clahe}, "patching": {patch_size}, "inference": {threshold,
        min_lesion_area, stride_ratio}}}; the config sets those unless given to the constructor
        (stride) or stride_ratio overrides."""
        torch = _torch()
        ckpt = torch.load(checkpoint_path, map_location=str(self.device), weights_only=False)
        config = ckpt.get("config", {}) or {}
        self.use_clahe = bool((config.get("preprocessing") or {}).get("clahe", False))
        patching = config.get("patching") or {}
        if patching.get("patch_size"):
            self.patch_size = int(patching["patch_size"])
        inference = config.get("inference") or {}
        if inference.get("threshold"):
            self.threshold = inference["threshold"]
        if inference.get("min_lesion_area"):
            self.min_lesion_area = inference["min_lesion_area"]
        if not self._explicit_stride and self._stride_ratio_override is None:
            self.stride = max(1, int(self.patch_size * inference.get("stride_ratio", 0.5)))
        try:
            import segmentation_models_pytorch as smp
        except ImportError as exc:
            raise ImportError("loading a checkpoint builds its network with segmentation-models-pytorch: "
                              "pip install segmentation-models-pytorch (or pass model=<torch module>)") from exc
        mcfg = config.get("model") or {}
        name = mcfg.get("name", "unet")
        common = dict(encoder_name=mcfg.get("encoder", "resnet34"), encoder_weights=None,
                      in_channels=mcfg.get("in_channels", 1), classes=1, activation=None)
        builders = {"unet": lambda: smp.Unet(**common),
                    "attention_unet": lambda: smp.Unet(decoder_attention_type="scse", **common),
                    "unetpp": lambda: smp.UnetPlusPlus(**common),
                    "deeplabv3p": lambda: smp.DeepLabV3Plus(**common)}
        if name not in builders:
            raise ValueError("Unknown model: %s" % name)
        self.model = builders[name]()
        self.model.load_state_dict(ckpt["model_state_dict"])
        self.model.to(str(self.device))
        self.model.eval()

    # -- the algorithm -------------------------------------------------------------------------

    def apply(self, image, output):
        torch = _torch()
        img = np.asarray(_arrays.to_numpy(image.pixel_data), dtype=np.float32)
        if img.ndim == 3:
            img = img.reshape(img.shape[-2:]) if img.shape[0] == 1 else img[0]
        full_shape = img.shape
        peak = float(img.max()) if img.size else 0.0
        if peak > 1.0:
            img = img / np.float32(peak)
        mask = self._breast_mask(img) if self.crop_to_breast else None
        bbox = self._mask_bbox(mask, full_shape) if mask is not None else None
        self.breast_bbox = bbox
        if bbox is not None:
            y0, x0, y1, x1 = bbox
            img, mask = img[y0:y1, x0:x1], mask[y0:y1, x0:x1]
        if self.use_clahe:  # after the crop: CLAHE is tile-local, the air would shift every tile
            img = self._apply_clahe(img)
        prob = self._infer_patches(torch.from_numpy(np.ascontiguousarray(img, np.float32)),
                                   mask if self.skip_background_patches else None)
        prob = _arrays.to_numpy(prob)
        if bbox is not None:
            full = np.zeros(full_shape, np.float32)
            full[bbox[0]:bbox[2], bbox[1]:bbox[3]] = prob
            prob = full
        prob = np.ascontiguousarray(prob, np.float32)
        self.probability_map = torch.from_numpy(prob)
        binary = (prob > self.threshold).astype(np.float32)
        anns = self._extract_annotations(binary, prob, self.min_lesion_area)
        self.lesion_count = len(anns)
        output.pixel_data = binary
        output.annotations = []
        for ann in anns:
            output.add_annotation(ann)
        return output

    def _autocast(self, torch):
        p = self.precision.value if isinstance(self.precision, Precision) else self.precision
        dtype = {"half": torch.float16, "bfloat16": torch.bfloat16}.get(str(p).lower())
        if dtype is None or isinstance(self.model, _OnnxModel):
            return None
        return torch.autocast(device_type=Device(self.device).type, dtype=dtype)

    def _infer_patches(self, image, breast_mask=None):
        """Sliding-window probabilities of an (H, W) image (tensor or array; breast_mask: skip the
        windows with no mask pixel): an (H, W) float32 tensor. Images smaller than a patch are
        zero-padded to one."""
        torch = _torch()
        img = np.ascontiguousarray(_arrays.to_numpy(image), np.float32)
        h, w = img.shape
        ps = self.patch_size
        if h < ps or w < ps:
            img = np.pad(img, ((0, max(0, ps - h)), (0, max(0, ps - w))))
            if breast_mask is not None:
                breast_mask = np.pad(_arrays.to_numpy(breast_mask), ((0, max(0, ps - h)), (0, max(0, ps - w))))
        ph, pw = img.shape
        ys, xs = self._patch_positions(ph, pw, ps, self.stride, breast_mask)
        self.patches_inferred = len(ys)
        acc = np.zeros((ph, pw), np.float32)
        wsum = np.zeros((ph, pw), np.float32)
        if len(ys):
            window = _blend_window(ps, self.blend)
            per_batch = max(1, int(self.batch_pixels) // (ps * ps))
            dev = str(self.device)
            with torch.inference_mode():
                for i in range(0, len(ys), per_batch):
                    by, bx = ys[i:i + per_batch], xs[i:i + per_batch]
                    batch = np.stack([img[y:y + ps, x:x + ps] for y, x in zip(by, bx)])
                    inp = torch.from_numpy(batch).unsqueeze(1).to(dev)
                    if self.channels_last:
                        inp = inp.contiguous(memory_format=torch.channels_last)
                    ctx = self._autocast(torch)
                    if ctx is None:
                        logits = self.model(inp)
                    else:
                        with ctx:
                            logits = self.model(inp)
                    probs = torch.sigmoid(logits.float()).reshape(len(by), ps, ps).cpu().numpy()
                    for k in range(len(by)):
                        y, x = int(by[k]), int(bx[k])
                        acc[y:y + ps, x:x + ps] += probs[k] * window
                        wsum[y:y + ps, x:x + ps] += window
            acc /= np.maximum(wsum, np.float32(1e-8))
        return torch.from_numpy(np.ascontiguousarray(acc[:h, :w]))

    def _patch_positions(self, h, w, ps, stride, breast_mask=None):
        """Top-left corners (ys, xs int arrays) of the windows: every stride, clamped to end at the
        border, each distinct corner once; with breast_mask only windows holding a mask pixel."""
        ry = np.unique(np.minimum(np.arange(0, h, stride), h - ps))
        rx = np.unique(np.minimum(np.arange(0, w, stride), w - ps))
        gy, gx = np.meshgrid(ry, rx, indexing="ij")
        gy, gx = gy.ravel(), gx.ravel()
        if breast_mask is None:
            self.patches_skipped = 0
            return gy, gx
        m = (np.asarray(_arrays.to_numpy(breast_mask)) > 0).astype(np.int64)
        sat = np.zeros((h + 1, w + 1), np.int64)  # summed-area table
        sat[1:, 1:] = m.cumsum(0).cumsum(1)
        covered = sat[gy + ps, gx + ps] - sat[gy, gx + ps] - sat[gy + ps, gx] + sat[gy, gx]
        keep = covered > 0
        self.patches_skipped = int((~keep).sum())
        return gy[keep], gx[keep]

    def _blend_window(self, ps):
        return _torch().from_numpy(_blend_window(ps, self.blend))

    @staticmethod
    def _apply_clahe(image, clip_limit=2.0, grid_size=8):
        """CLAHE as the models were trained with (OpenCV createCLAHE(clip_limit, (grid_size,
        grid_size)): grid_size tiles a side) on the image scaled to [0, 255] by its min and max and
        truncated to 8 bits; the result / 255 as float32 (a tensor when given one)."""
        a = np.asarray(_arrays.to_numpy(image), dtype=np.float32)
        lo, hi = float(a.min()), float(a.max())
        norm = (a - lo) / (hi - lo) if hi - lo > 0 else np.zeros_like(a)
        out = _clahe_u8((norm * 255).astype(np.uint8), clip_limit, (grid_size, grid_size))
        out = out.astype(np.float32) / np.float32(255.0)
        return _torch().from_numpy(out) if _arrays.is_tensor(image) else out

    def _breast_mask(self, image):
        """lumen's breast mask (Otsu, largest 4-connected component) of an (H, W) array, or None
        when it cannot be computed (inference then covers the whole frame)."""
        try:
            out = MammographyPreprocessing.breast_mask(InMemoryImage(array=np.asarray(image, np.float32)),
                                                       device="cpu")
            m = np.asarray(out._array)
            return m.reshape(m.shape[-2:]) if m.ndim == 3 else m
        except Exception as exc:  # the mask only narrows inference: fall back to the whole frame
            logger.warning("Breast mask failed, using the full frame: %s", exc)
            return None

    def _mask_bbox(self, mask, shape):
        """(y0, x0, y1, x1) around the mask's pixels, grown by breast_margin and clipped to shape;
        None for an empty mask."""
        rows, cols = np.nonzero(np.asarray(_arrays.to_numpy(mask)) > 0)
        if rows.size == 0:
            return None
        h, w = shape
        m = int(self.breast_margin)
        bbox = (max(0, int(rows.min()) - m), max(0, int(cols.min()) - m),
                min(h, int(rows.max()) + 1 + m), min(w, int(cols.max()) + 1 + m))
        return bbox if bbox[2] > bbox[0] and bbox[3] > bbox[1] else None

    @staticmethod
    def _extract_annotations(binary_mask, prob_map, min_lesion_area=4):
        """One Annotation per 4-connected component of the mask with at least min_lesion_area
        pixels, in label order (lumen.label: raster order of first pixels)."""
        mask = (np.asarray(_arrays.to_numpy(binary_mask)) > 0).astype(np.uint8)
        prob = np.asarray(_arrays.to_numpy(prob_map), np.float32)
        labels, count = _limg.label(mask, connectivity=1)
        if count == 0:
            return []
        flat = labels.ravel()
        order = np.argsort(flat, kind="stable")
        starts = np.searchsorted(flat[order], np.arange(1, count + 2))
        h, w = mask.shape
        anns = []
        for i in range(count):
            pix = order[starts[i]:starts[i + 1]]
            area = int(pix.size)
            if area < min_lesion_area:
                continue
            ys, xs = pix // w, pix % w
            y0, y1, x0, x1 = int(ys.min()), int(ys.max()), int(xs.min()), int(xs.max())
            confidence = float(prob.ravel()[pix].mean())
            # the component alone, with a one-pixel frame of background where the image has room
            cy0, cx0 = max(0, y0 - 1), max(0, x0 - 1)
            crop = (labels[cy0:min(h, y1 + 2), cx0:min(w, x1 + 2)] == i + 1).astype(np.uint8)
            contours = _contours(crop)
            if not contours:
                continue
            longest = max(contours, key=len)
            pts = [(int(round(c + cx0)), int(round(r + cy0))) for r, c in longest]
            if len(pts) < 3:
                anns.append(Annotation(shape=GeometryType.RECTANGLE, coordinates=[x0, y0, x1, y1],
                                       label="microcalcification", metadata={"confidence": confidence, "area": area}))
            else:
                anns.append(Annotation(shape=GeometryType.POLYGON, coordinates=pts, label="microcalcification",
                                       metadata={"confidence": confidence, "area": area, "bbox": [x0, y0, x1, y1]}))
        return anns
