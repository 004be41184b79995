"""PNG, NIfTI and DICOM (what lumen.read_image reads) into numpy for the compat layer's
Image.from_file: lumen.read_image, values as float32 in numpy axis order."""
import os

import numpy as np


def read_array(path):
    """The file's voxels as a float32 numpy array in numpy axis order ((y, x) or (z, y, x));
    PNG values as stored (0..255 or 0..65535), NIfTI with its scl_slope/scl_inter applied, DICOM
    through its modality LUT (MONOCHROME1 inverted)."""
    if not os.path.exists(path):
        raise FileNotFoundError("File not found: %s" % path)
    import lumen  # PNG, NIfTI, DICOM (by name or signature); anything else: ValueError
    data, _meta = lumen.read_image(str(path))
    return np.ascontiguousarray(np.asarray(data), np.float32)
