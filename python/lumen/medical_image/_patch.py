"""medical_image.data.patch: Patch and PatchGrid. An image is split row-major into patches of
(patch_h, patch_w), zero-padded at the bottom and right when the size does not divide; the
layout (H, W), (C, H, W) or (H, W, C) is inferred as the original does. Patch pixels are held
like Image.pixel_data (_arrays.py)."""
import numpy as np

from . import _arrays


def _layout(shape):
    if len(shape) == 2:
        return "HW"
    if len(shape) == 3:
        if shape[0] in (1, 3, 4):
            return "CHW"
        if shape[2] in (1, 3, 4):
            return "HWC"
    raise ValueError("Cannot determine channel layout for shape %s" % (tuple(shape),))


def _hw_axes(layout):
    return {"HW": (0, 1), "CHW": (1, 2), "HWC": (0, 1)}[layout]


def _window(a, layout, r, c, h, w):
    """a[rows r:r+h, cols c:c+w] in the given layout."""
    index = [slice(None)] * a.ndim
    ay, ax = _hw_axes(layout)
    index[ay], index[ax] = slice(r, r + h), slice(c, c + w)
    return tuple(index)


class Patch(object):
    """One tile: parent image, grid indices (row_idx, col_idx), the top-left pixel (row_offset,
    col_offset; also x and y), pixel_data and is_padded."""

    def __init__(self, parent, row_idx, col_idx, x, y, pixel_data, is_padded=False):
        self.parent = parent
        self.row_idx, self.col_idx = row_idx, col_idx
        self.row_offset, self.col_offset = x, y
        self.pixel_data = pixel_data
        self.is_padded = is_padded

    @property
    def x(self):
        return self.row_offset

    @property
    def y(self):
        return self.col_offset

    @property
    def height(self):
        return int(self.pixel_data.shape[-2])

    @property
    def width(self):
        return int(self.pixel_data.shape[-1])

    def grid_id(self):
        return self.row_idx, self.col_idx

    def pixel_position(self):
        return self.x, self.y

    def to_numpy(self):
        return _arrays.to_numpy(self.pixel_data)

    def to_image(self):
        """A clone of the parent holding only this patch's pixels (file_path None)."""
        img = self.parent.clone()
        img.pixel_data = _arrays.clone(self.pixel_data)
        img.file_path = None
        return img

    def load(self):
        """Deprecated name of to_image()."""
        return self.to_image()

    def __repr__(self):
        return "Patch[%d,%d] (%d,%d) size=%dx%d" % (self.row_idx, self.col_idx, self.x, self.y, self.width, self.height)


class PatchGrid(object):
    """patches (row-major list), grid[row][col], patch_h, patch_w, pad_bottom, pad_right."""

    def __init__(self, parent_image, patch_size):
        self.parent = parent_image
        if isinstance(patch_size, int):
            patch_size = (patch_size, patch_size)
        self.patch_h, self.patch_w = int(patch_size[0]), int(patch_size[1])
        self.patches, self.grid = [], []
        self.pad_bottom = self.pad_right = 0
        self._split()

    @classmethod
    def from_image(cls, image, patch_size):
        """Loads the image first when its pixels are not loaded."""
        if image.pixel_data is None:
            image.load()
        return cls(image, patch_size)

    def _split(self):
        a = _arrays.to_numpy(self.parent.pixel_data)
        layout = _layout(a.shape)
        ay, ax = _hw_axes(layout)
        h, w = a.shape[ay], a.shape[ax]
        self.pad_bottom = (-h) % self.patch_h
        self.pad_right = (-w) % self.patch_w
        if self.pad_bottom or self.pad_right:
            pad = [(0, 0)] * a.ndim
            pad[ay], pad[ax] = (0, self.pad_bottom), (0, self.pad_right)
            a = np.pad(a, pad, mode="constant")
        rows, cols = a.shape[ay] // self.patch_h, a.shape[ax] // self.patch_w
        for r in range(rows):
            row = []
            for c in range(cols):
                y0, x0 = r * self.patch_h, c * self.patch_w
                tile = np.array(a[_window(a, layout, y0, x0, self.patch_h, self.patch_w)], copy=True)
                padded = (r == rows - 1 and self.pad_bottom > 0) or (c == cols - 1 and self.pad_right > 0)
                p = Patch(self.parent, r, c, y0, x0, _arrays.to_backend(tile), padded)
                row.append(p)
                self.patches.append(p)
            self.grid.append(row)

    def reconstruct(self):
        """The patches reassembled without the padding, in the parent's layout and array kind."""
        first = _arrays.to_numpy(self.patches[0].pixel_data)
        layout = _layout(first.shape)
        ay, ax = _hw_axes(layout)
        shape = list(first.shape)
        shape[ay], shape[ax] = len(self.grid) * self.patch_h, len(self.grid[0]) * self.patch_w
        out = np.empty(shape, first.dtype)
        for p in self.patches:
            tile = _arrays.to_numpy(p.pixel_data)
            out[_window(out, layout, p.x, p.y, tile.shape[ay], tile.shape[ax])] = tile
        keep = _window(out, layout, 0, 0, shape[ay] - self.pad_bottom, shape[ax] - self.pad_right)
        return _arrays.to_backend(np.ascontiguousarray(out[keep]))

    def to_image(self):
        """A clone of the parent holding the reassembled pixels."""
        img = self.parent.clone()
        img.pixel_data = self.reconstruct()
        return img
