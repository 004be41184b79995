"""medical_image.data.annotation: GeometryType and Annotation (a labelled rectangle, ellipse or
polygon with metadata, its centre, bounding box, padded ROI and dict form), as in 0.8.2."""
import copy
import enum


class GeometryType(enum.Enum):
    """RECTANGLE [x_min, y_min, x_max, y_max], ELLIPSE [cx, cy, rx, ry], POLYGON [(x, y), ...];
    BOUNDING_BOX is another name for RECTANGLE."""
    RECTANGLE = 1
    ELLIPSE = 2
    POLYGON = 3
    BOUNDING_BOX = 1


_RULES = {GeometryType.RECTANGLE: (lambda c: len(c) == 4, "Rectangle must be [x_min, y_min, x_max, y_max]"),
          GeometryType.ELLIPSE: (lambda c: len(c) == 4, "Ellipse must be [cx, cy, rx, ry]"),
          GeometryType.POLYGON: (lambda c: len(c) >= 3, "Polygon must be a list of >= 3 (x, y) points")}


class Annotation(object):
    """shape (GeometryType), coordinates, label, metadata (dict) and the derived center (cx, cy)."""

    def __init__(self, shape, coordinates, label, metadata=None):
        self.shape = shape
        self.coordinates = coordinates
        self.label = label
        self.metadata = metadata or {}
        rule = _RULES.get(shape)
        if rule is not None and not (isinstance(coordinates, list) and rule[0](coordinates)):
            raise ValueError(rule[1])
        self.center = self._center()

    def _center(self):
        c = self.coordinates
        if self.shape is GeometryType.RECTANGLE:
            return ((c[0] + c[2]) / 2.0, (c[1] + c[3]) / 2.0)
        if self.shape is GeometryType.ELLIPSE:
            return (float(c[0]), float(c[1]))
        if self.shape is GeometryType.POLYGON:
            return (sum(p[0] for p in c) / len(c), sum(p[1] for p in c) / len(c))
        return (0.0, 0.0)

    def get_bounding_box(self):
        """[x_min, y_min, x_max, y_max] around the shape (an ellipse's truncated to ints)."""
        c = self.coordinates
        if self.shape is GeometryType.RECTANGLE:
            return list(c)
        if self.shape is GeometryType.ELLIPSE:
            return [int(c[0] - c[2]), int(c[1] - c[3]), int(c[0] + c[2]), int(c[1] + c[3])]
        if self.shape is GeometryType.POLYGON:
            xs, ys = [p[0] for p in c], [p[1] for p in c]
            return [min(xs), min(ys), max(xs), max(ys)]
        raise ValueError("Unsupported shape: %s" % (self.shape,))

    def get_roi(self, padding=0, roi_type="bbox", image_shape=None):
        """The bounding box grown by padding on each side, clamped to image_shape (h, w) when
        given: {"type": roi_type, "coordinates": [x0, y0, x1, y1]} for "bbox"/"rectangle", or
        {"type": "ellipse", "coordinates": {"center": (cx, cy), "radii": (rx, ry)}}."""
        x0, y0, x1, y1 = self.get_bounding_box()
        x0, y0, x1, y1 = x0 - padding, y0 - padding, x1 + padding, y1 + padding
        if image_shape is not None:
            h, w = image_shape
            x0, y0, x1, y1 = max(0, x0), max(0, y0), min(w, x1), min(h, y1)
        if roi_type in ("bbox", "rectangle"):
            return {"type": roi_type, "coordinates": [x0, y0, x1, y1]}
        if roi_type == "ellipse":
            return {"type": "ellipse", "coordinates": {"center": ((x0 + x1) / 2.0, (y0 + y1) / 2.0),
                                                       "radii": ((x1 - x0) / 2.0, (y1 - y0) / 2.0)}}
        raise ValueError("Unknown roi_type: %s. Use 'bbox', 'rectangle', or 'ellipse'" % roi_type)

    def copy(self):
        return Annotation(self.shape, copy.deepcopy(self.coordinates), self.label, copy.deepcopy(self.metadata))

    def to_dict(self):
        """JSON-ready: shape (name), coordinates (polygon points as lists), label, center,
        bounding_box, metadata."""
        coords = [list(p) for p in self.coordinates] if self.shape is GeometryType.POLYGON else self.coordinates
        return {"shape": self.shape.name, "coordinates": coords, "label": self.label,
                "center": list(self.center), "bounding_box": self.get_bounding_box(), "metadata": self.metadata}

    @classmethod
    def from_dict(cls, data):
        shape = GeometryType[data["shape"]]
        coords = data["coordinates"]
        if shape is GeometryType.POLYGON:
            coords = [tuple(p) for p in coords]
        return cls(shape, coords, data["label"], data.get("metadata", {}))

    def __repr__(self):
        return "Annotation(label=%s, geometry=%s, center=%s, metadata=%s)" % (
            self.label, self.shape.name, self.center, self.metadata)
