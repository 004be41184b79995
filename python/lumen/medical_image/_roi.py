"""medical_image.data.region_of_interest.RegionOfInterest: crops an image to a bounding box
[x_min, y_min, x_max, y_max], a polygon [(a, b), ...] (a the row, b the column, as the
original reads them) or a boolean mask (pixels outside the shape zeroed, cropped to its
bounding box); from_center and normalize as in 0.8.2."""
import numpy as np

from . import _arrays
from ._annotation import GeometryType


def polygon_mask(rows, cols, shape):
    """Pixels whose centres lie inside the polygon (even-odd rule), plus its vertices."""
    rows, cols = np.asarray(rows, np.float64), np.asarray(cols, np.float64)
    rr, cc = np.mgrid[0:shape[0], 0:shape[1]]
    inside = np.zeros(shape, bool)
    n = len(rows)
    for i in range(n):
        r0, c0, r1, c1 = rows[i], cols[i], rows[(i + 1) % n], cols[(i + 1) % n]
        crosses = (r0 > rr) != (r1 > rr)
        with np.errstate(divide="ignore", invalid="ignore"):
            at = c0 + (rr - r0) * (c1 - c0) / (r1 - r0)
        inside ^= crosses & (cc < at)
    for r, c in zip(rows.astype(int), cols.astype(int)):
        if 0 <= r < shape[0] and 0 <= c < shape[1]:
            inside[r, c] = True
    return inside


class RegionOfInterest(object):
    """image, coordinates, annotation_type (GeometryType.BOUNDING_BOX, POLYGON, or MASK: a numpy array)."""

    def __init__(self, image, coordinates):
        self.image = image
        self.coordinates = coordinates
        self.annotation_type = self._determine_annotation_type()

    @classmethod
    def from_center(cls, image, cx, cy, half_size):
        """A square box of half_size around (row cx, column cy), clamped to the image."""
        if image.pixel_data is None:
            image.load()
        h, w = image.pixel_data.shape[:2]
        return cls(image, [max(0, cy - half_size), max(0, cx - half_size),
                           min(w, cy + half_size + 1), min(h, cx + half_size + 1)])

    def _determine_annotation_type(self):
        c = self.coordinates
        if isinstance(c, list):
            if len(c) == 4 and all(isinstance(v, int) for v in c):
                return GeometryType.BOUNDING_BOX
            if all(isinstance(p, tuple) and len(p) == 2 for p in c):
                return GeometryType.POLYGON
        if isinstance(c, np.ndarray):
            return "MASK"
        raise ValueError("Unsupported ROI coordinates format.")

    def load(self):
        """A clone of the image holding the cropped float32 pixels."""
        if self.image.pixel_data is None:
            self.image.load()
        a = _arrays.to_numpy(self.image.pixel_data)
        if self.annotation_type is GeometryType.BOUNDING_BOX:
            x0, y0, x1, y1 = self.coordinates
            crop = a[y0:y1, x0:x1]
        else:
            if self.annotation_type is GeometryType.POLYGON:
                rows, cols = zip(*self.coordinates)
                mask = polygon_mask(rows, cols, a.shape[:2])
            else:
                mask = self.coordinates.astype(bool)
            ys, xs = np.nonzero(mask)
            crop = (a * mask)[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
        out = self.image.clone()
        out.pixel_data = np.ascontiguousarray(crop, np.float32)
        return out

    @staticmethod
    def normalize(image, divisor=4095.0):
        """In place: clamp(pixels / divisor, 0, 1) as float32; returns the image."""
        a = _arrays.to_numpy(image.pixel_data).astype(np.float32) / np.float32(divisor)
        image.pixel_data = np.clip(a, 0.0, 1.0)
        return image
