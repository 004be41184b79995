"""medical_image.datasets: BaseDataset (the sample contract, resizing, COCO JSON export and
import) as in 0.8.2, and the names INbreastDataset, CustomINbreastDataset and CBISDDSMDataset,
which need the INbreast / CBIS-DDSM data on disk (licensed downloads) and PyTorch: constructing
one raises NotImplementedError saying so. BaseDataset derives from torch's Dataset when torch
is installed."""
import abc
import json
import math
from datetime import datetime

import numpy as np

from . import _arrays
from ._annotation import Annotation, GeometryType

try:
    from torch.utils.data import Dataset as _Base
except ImportError:
    _Base = object


class _DatasetMeta(abc.ABCMeta, type(_Base)):
    pass


def _resize_numpy(a, size, mode):
    """(..., H, W) -> (..., h, w): nearest, or bilinear with align_corners=False (torch's)."""
    H, W = a.shape[-2:]
    h, w = size
    if mode == "nearest":
        rows = np.minimum((np.arange(h) * (H / h)).astype(int), H - 1)
        cols = np.minimum((np.arange(w) * (W / w)).astype(int), W - 1)
        return a[..., rows[:, None], cols[None, :]]
    def axis(n_out, n_in):
        x = np.clip((np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5, 0, n_in - 1)
        i0 = np.floor(x).astype(int)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, (x - i0).astype(np.float32)
    r0, r1, fr = axis(h, H)
    c0, c1, fc = axis(w, W)
    a = a.astype(np.float32)
    top = a[..., r0, :] * (1 - fr)[:, None] + a[..., r1, :] * fr[:, None]
    return top[..., c0] * (1 - fc) + top[..., c1] * fc


class BaseDataset(_Base, metaclass=_DatasetMeta):
    """Subclasses fill self._samples in _build_sample_list() and return {"image", "mask" or
    "label", "metadata"} from _load_sample(idx); __getitem__ resizes (target_size) and applies
    transform / target_transform."""

    def __init__(self, root_dir, transform=None, target_transform=None, target_size=None):
        self.root_dir = root_dir
        self.transform, self.target_transform = transform, target_transform
        self.target_size = target_size
        self._samples = []
        self._build_sample_list()

    @abc.abstractmethod
    def _build_sample_list(self):
        ...

    @abc.abstractmethod
    def _load_sample(self, idx):
        ...

    def __len__(self):
        return len(self._samples)

    def __getitem__(self, idx):
        s = self._load_sample(idx)
        image, mask, label = s["image"], s.get("mask"), s.get("label")
        if self.target_size is not None:
            image = self._resize(image, self.target_size)
            if mask is not None:
                mask = self._resize(mask, self.target_size, mode="nearest")
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None and mask is not None:
            mask = self.target_transform(mask)
        out = {"image": image, "metadata": s.get("metadata", {})}
        if mask is not None:
            out["mask"] = mask
        if label is not None:
            out["label"] = label
        return out

    @classmethod
    def download(cls, source, dest, *args, **kwargs):
        from ._downloader import download
        return download(source, dest, *args, **kwargs)

    @staticmethod
    def _resize(tensor, size, mode="bilinear"):
        """(H, W) or (C, H, W) to size (h, w); the input's kind (torch tensor or numpy) is kept."""
        a = _arrays.to_numpy(tensor)
        r = _resize_numpy(a, tuple(size), mode).astype(a.dtype if mode == "nearest" else np.float32)
        return _arrays.to_backend(np.ascontiguousarray(r)) if _arrays.is_tensor(tensor) else r

    @staticmethod
    def _to_chw(tensor):
        """(H, W) -> (1, H, W); (H, W, C) with C in 1, 3, 4 -> (C, H, W); else unchanged."""
        if tensor.ndim == 2:
            return tensor[None]
        if tensor.ndim == 3 and tensor.shape[2] in (1, 3, 4):
            return tensor.permute(2, 0, 1) if _arrays.is_tensor(tensor) else np.transpose(tensor, (2, 0, 1))
        return tensor

    def _get_annotations(self, idx):
        """The annotations of sample idx (none here; datasets with annotations override)."""
        return []

    @staticmethod
    def _annotation_to_coco_segmentation(ann):
        """[[x1, y1, ...]]: polygon vertices, a rectangle's 4 corners, an ellipse as 36 points."""
        if ann.shape is GeometryType.POLYGON:
            return [[v for p in ann.coordinates for v in (p[0], p[1])]]
        if ann.shape is GeometryType.RECTANGLE:
            x0, y0, x1, y1 = ann.coordinates
            return [[x0, y0, x1, y0, x1, y1, x0, y1]]
        if ann.shape is GeometryType.ELLIPSE:
            cx, cy, rx, ry = ann.coordinates
            return [[v for i in range(36) for v in (cx + rx * math.cos(2 * math.pi * i / 36),
                                                     cy + ry * math.sin(2 * math.pi * i / 36))]]
        return []

    def to_coco_json(self, output_path=None, description="Medical Image Dataset"):
        """The dataset as COCO JSON (bbox [x, y, w, h]; each annotation also has "center")."""
        coco = {"info": {"description": description, "version": "1.0",
                         "date_created": datetime.now().isoformat()},
                "licenses": [], "categories": [], "images": [], "annotations": []}
        categories = {}
        for idx in range(len(self)):
            image_id = idx + 1
            s = self._load_sample(idx)
            meta = s.get("metadata", {})
            h, w = s["image"].shape[-2:]
            coco["images"].append({"id": image_id, "width": int(w), "height": int(h),
                                   "file_name": meta.get("file_name", meta.get("case_id", "image_%d" % idx))})
            for ann in self._get_annotations(idx):
                if ann.label not in categories:
                    categories[ann.label] = len(categories) + 1
                    coco["categories"].append({"id": categories[ann.label], "name": ann.label,
                                               "supercategory": "lesion"})
                x0, y0, x1, y1 = ann.get_bounding_box()
                coco["annotations"].append({
                    "id": len(coco["annotations"]) + 1, "image_id": image_id,
                    "category_id": categories[ann.label],
                    "segmentation": self._annotation_to_coco_segmentation(ann),
                    "bbox": [x0, y0, x1 - x0, y1 - y0], "area": float((x1 - x0) * (y1 - y0)),
                    "iscrowd": 0, "center": list(ann.center)})
        if output_path:
            with open(output_path, "w") as f:
                json.dump(coco, f, indent=2)
        return coco

    @classmethod
    def from_coco_json(cls, json_path):
        """{"images": [...], "annotations": {image_id: [Annotation]}, "categories": {id: name}};
        a segmentation becomes a POLYGON, an empty one the bbox as a RECTANGLE."""
        with open(json_path) as f:
            coco = json.load(f)
        names = {c["id"]: c["name"] for c in coco.get("categories", [])}
        by_image = {}
        for a in coco.get("annotations", []):
            seg = a.get("segmentation") or [[]]
            if seg[0]:
                flat = seg[0]
                shape, coords = GeometryType.POLYGON, [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]
            else:
                x, y, w, h = a.get("bbox", [0, 0, 0, 0])
                shape, coords = GeometryType.RECTANGLE, [x, y, x + w, y + h]
            ann = Annotation(shape, coords, names.get(a.get("category_id", -1), "unknown"),
                             metadata={"coco_id": a.get("id")})
            by_image.setdefault(a["image_id"], []).append(ann)
        return {"images": coco.get("images", []), "annotations": by_image, "categories": names}


def _needs_data(name, what):
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "%s is not provided by lumen.medical_image: it needs %s on disk and PyTorch's DataLoader; "
            "install medical-image-std and use medical_image.datasets for it." % (name, what))
    return type(name, (BaseDataset,), {"__init__": __init__, "_build_sample_list": lambda self: None,
                                       "_load_sample": lambda self, idx: None,
                                       "__doc__": "Placeholder: needs %s (see the module docstring)." % what})


INbreastDataset = _needs_data("INbreastDataset", "the INbreast release (DICOM + XML/CSV annotations)")
CustomINbreastDataset = _needs_data("CustomINbreastDataset", "the INbreast release with its segmentation masks")
CBISDDSMDataset = _needs_data("CBISDDSMDataset", "the CBIS-DDSM collection (TCIA download, DICOM + CSV)")
