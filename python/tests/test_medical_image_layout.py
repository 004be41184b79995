"""lumen.medical_image's module layout (medical-image-std 0.8.2's: data, process, algorithms,
utils, datasets) and the data-layer classes behind it: import paths, DicomImage against pydicom,
PatchGrid, Annotation / RegionOfInterest, image JSON, COCO export. No network, no torch needed
(with torch installed pixel_data is a tensor; the checks go through numpy either way)."""
import importlib
import json

import numpy as np
import pytest

import lumen.medical_image as mi
from lumen.medical_image import _arrays

LAYOUT = {
    "data": ["Image", "DicomImage", "PNGImage", "InMemoryImage", "PatchGrid", "Patch", "RegionOfInterest",
             "Annotation", "GeometryType", "requires_loaded", "image_from_json"],
    "data.image": ["Image", "requires_loaded", "image_from_json"], "data.dicom_image": ["DicomImage"],
    "data.png_image": ["PNGImage"], "data.in_memory_image": ["InMemoryImage"], "data.patch": ["Patch", "PatchGrid"],
    "data.region_of_interest": ["RegionOfInterest"], "data.annotation": ["Annotation", "GeometryType"],
    "process": ["Filters", "MorphologyOperations", "Threshold", "FrequencyOperations", "Metrics",
                "MammographyPreprocessing"],
    "process.filters": ["Filters"], "process.morphology": ["MorphologyOperations"],
    "process.threshold": ["Threshold"], "process.frequency": ["FrequencyOperations"],
    "process.metrics": ["Metrics"], "process.mammography": ["MammographyPreprocessing"],
    "algorithms": ["Algorithm", "FebdsAlgorithm", "FCMAlgorithm", "PFCMAlgorithm", "TopHatAlgorithm",
                   "KMeansAlgorithm", "BreastMaskAlgorithm", "DicomWindowAlgorithm", "GrailWindowAlgorithm",
                   "BitDepthNormAlgorithm", "SbrgAlgorithm", "DeepSegmentationAlgorithm"],
    "algorithms.algorithm": ["Algorithm"], "algorithms.FEBDS": ["FebdsAlgorithm"], "algorithms.fcm": ["FCMAlgorithm"],
    "algorithms.pfcm": ["PFCMAlgorithm"], "algorithms.top_hat": ["TopHatAlgorithm"],
    "algorithms.kmeans": ["KMeansAlgorithm"], "algorithms.breast_mask": ["BreastMaskAlgorithm"],
    "algorithms.dicom_window": ["DicomWindowAlgorithm", "GrailWindowAlgorithm"],
    "algorithms.bit_depth_norm": ["BitDepthNormAlgorithm"], "algorithms.sbrg": ["SbrgAlgorithm"],
    "algorithms.custom_algorithm": ["CustomAlgorithm"], "algorithms.deep_segmentation": ["DeepSegmentationAlgorithm"],
    "utils": ["Annotation", "GeometryType", "logger", "configure_logging", "resolve_device", "Precision",
              "set_default_precision", "get_default_precision", "get_dtype", "DeviceContext", "gpu_safe",
              "AsyncGPUPipeline", "MultiGPUAlgorithm"],
    "utils.annotation": ["Annotation", "GeometryType"],
    "utils.image_utils": ["TensorConverter", "ImageExporter", "ImageVisualizer", "MathematicalOperations"],
    "utils.device": ["resolve_device", "Precision", "DeviceContext", "gpu_safe", "AsyncGPUPipeline",
                     "MultiGPUAlgorithm", "check_gpu_budget", "estimate_image_bytes"],
    "utils.logging": ["logger", "configure_logging"], "utils.ErrorHandler": ["ErrorMessages", "AppError"],
    "utils.mask_utils": ["parse_inbreast_xml", "xml_to_binary_mask"], "utils.pairing": ["pair_inbreast"],
    "utils.downloader": ["download"],
    "datasets": ["BaseDataset", "INbreastDataset", "CustomINbreastDataset", "CBISDDSMDataset"],
    "datasets.base_dataset": ["BaseDataset"], "datasets.inbreast": ["INbreastDataset"],
    "datasets.custom_inbreast": ["CustomINbreastDataset"], "datasets.cbis_ddsm": ["CBISDDSMDataset"],
}


@pytest.mark.parametrize("module", sorted(LAYOUT))
def test_module_layout(module):
    m = importlib.import_module("lumen.medical_image." + module)
    missing = [n for n in LAYOUT[module] if not hasattr(m, n)]
    assert not missing, "lumen.medical_image.%s lacks %s" % (module, missing)


def test_flat_names_and_same_classes():
    from lumen.medical_image.data.dicom_image import DicomImage
    from lumen.medical_image.process.filters import Filters
    assert mi.DicomImage is DicomImage and mi.Filters is Filters
    for name in ("Image", "InMemoryImage", "PNGImage", "Filters", "Threshold", "FebdsAlgorithm",
                 "MammographyPreprocessing", "AsyncGPUPipeline", "PatchGrid", "Annotation", "TensorConverter"):
        assert hasattr(mi, name), name


def test_placeholders_say_what_they_need():
    from lumen.medical_image.datasets import INbreastDataset
    with pytest.raises(NotImplementedError, match="INbreast"):
        INbreastDataset("/nowhere")


def _has_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def test_deep_segmentation_without_torch_names_it():
    if _has_torch():
        pytest.skip("torch is installed")
    from lumen.medical_image.algorithms.deep_segmentation import DeepSegmentationAlgorithm
    with pytest.raises(ImportError, match="pip install torch"):
        DeepSegmentationAlgorithm(model=object())


def test_deep_segmentation_with_a_small_model():
    """A fixed-logit model: a 6 x 6 lesion at (row 10, col 12) of each 32 x 32 window (stride 32:
    six windows tile the 64 x 96 image): the mask, probability map, annotations, window counts."""
    torch = pytest.importorskip("torch")
    from lumen.medical_image.algorithms.deep_segmentation import DeepSegmentationAlgorithm
    from lumen.medical_image._deep import _clahe_u8, _contours

    class Hot(torch.nn.Module):
        def forward(self, x):
            out = torch.full((x.shape[0], 1) + tuple(x.shape[2:]), -6.0)
            out[:, :, 10:16, 12:18] = 6.0
            return out

    with pytest.raises(ValueError, match="checkpoint_path or model"):
        DeepSegmentationAlgorithm(device="cpu")
    with pytest.raises(ValueError, match="blend"):
        DeepSegmentationAlgorithm(model=Hot(), blend="max", device="cpu")
    algo = DeepSegmentationAlgorithm(model=Hot(), patch_size=32, stride=32, device="cpu", crop_to_breast=False,
                                     min_lesion_area=4)
    assert algo.device == "cpu" and algo.stride == 32 and algo.threshold == 0.5
    img = mi.InMemoryImage(array=np.random.default_rng(0).random((64, 96)).astype(np.float32) * 4095)
    out = algo(img, img.clone())
    mask = _arrays.to_numpy(out.pixel_data)
    want = np.zeros((64, 96), np.float32)
    for y in (0, 32):
        for x in (0, 32, 64):
            want[y + 10:y + 16, x + 12:x + 18] = 1
    np.testing.assert_array_equal(mask, want)
    assert algo.patches_inferred == 6 and algo.patches_skipped == 0 and algo.breast_bbox is None
    prob = algo.probability_map.numpy()
    assert prob.shape == (64, 96) and 0.0 <= prob.min() and prob.max() <= 1.0
    assert algo.lesion_count == len(out.annotations) == 6
    for ann in out.annotations:
        assert ann.shape is mi.GeometryType.POLYGON and ann.label == "microcalcification"
        x0, y0, x1, y1 = ann.metadata["bbox"]
        assert ann.metadata["area"] == 36 and (x1 - x0, y1 - y0) == (5, 5)
        assert 0.99 < ann.metadata["confidence"] <= 1.0
    # min_lesion_area drops them all; the Gaussian blend leaves a 0/1 mask
    big = DeepSegmentationAlgorithm(model=Hot(), patch_size=32, stride=16, device="cpu", min_lesion_area=10 ** 6)
    out = big(img, img.clone())
    assert out.annotations == [] and big.lesion_count == 0
    assert set(np.unique(_arrays.to_numpy(out.pixel_data)).tolist()) <= {0.0, 1.0}
    # CLAHE: float32 in [0, 1], a tensor for a tensor; a constant image stays constant
    ramp = torch.linspace(0, 1, 64 * 64).reshape(64, 64)
    c = DeepSegmentationAlgorithm._apply_clahe(ramp)
    assert c.dtype == torch.float32 and c.shape == (64, 64) and 0 <= float(c.min()) and float(c.max()) <= 1
    assert np.unique(_clahe_u8(np.full((20, 30), 7, np.uint8))).size == 1
    # contours: a 2 x 2 square's level-0.5 outline (closed: first point repeated)
    sq = np.zeros((5, 5), np.uint8)
    sq[1:3, 1:3] = 1
    (ring,) = _contours(sq)
    assert ring[0] == ring[-1] and len(ring) == 9
    assert set(ring) == {(0.5, 1.0), (0.5, 2.0), (1.0, 2.5), (2.0, 2.5), (2.5, 2.0), (2.5, 1.0), (2.0, 0.5),
                         (1.0, 0.5)}


def test_deep_segmentation_clahe_matches_opencv():
    pytest.importorskip("torch")
    cv2 = pytest.importorskip("cv2")
    from lumen.medical_image._deep import _clahe_u8
    rng = np.random.default_rng(3)
    for shape in ((64, 64), (100, 77), (33, 9)):
        a = (rng.random(shape) * 255).astype(np.uint8)
        a[: shape[0] // 2] //= 3
        np.testing.assert_array_equal(_clahe_u8(a), cv2.createCLAHE(clipLimit=2.0, tileGridSize=(8, 8)).apply(a))


def test_dicom_image_matches_pydicom():
    pydicom = pytest.importorskip("pydicom")
    from pydicom.data import get_testdata_file
    from lumen.medical_image.data.dicom_image import DicomImage
    for name in ("CT_small.dcm", "MR_small.dcm"):
        path = get_testdata_file(name)
        if path is None:
            pytest.skip("pydicom's test file %s is absent" % name)
        ref = pydicom.dcmread(path)
        img = DicomImage(path)
        assert img.pixel_data is None
        img.load()
        got = _arrays.to_numpy(img.pixel_data)
        assert got.dtype == ref.pixel_array.dtype
        np.testing.assert_array_equal(got, ref.pixel_array)
        assert (img.width, img.height) == (ref.Columns, ref.Rows)
        assert int(img.dicom_data.Rows) == ref.Rows
    with pytest.raises(ValueError):
        DicomImage(__file__)  # not .dcm


def test_patch_grid_round_trip():
    from lumen.medical_image.data.in_memory_image import InMemoryImage
    from lumen.medical_image.data.patch import PatchGrid
    a = np.arange(37 * 23, dtype=np.float32).reshape(37, 23)
    img = InMemoryImage(array=a)
    grid = PatchGrid(img, (10, 8))
    assert (len(grid.grid), len(grid.grid[0]), len(grid.patches)) == (4, 3, 12)
    assert (grid.pad_bottom, grid.pad_right) == (3, 1)
    last = grid.grid[3][2]
    assert last.is_padded and not grid.grid[0][0].is_padded
    assert last.pixel_position() == (30, 16) and (last.height, last.width) == (10, 8)
    np.testing.assert_array_equal(grid.patches[4].to_numpy(), a[10:20, 8:16])
    np.testing.assert_array_equal(_arrays.to_numpy(grid.reconstruct()), a)
    np.testing.assert_array_equal(_arrays.to_numpy(grid.to_image().pixel_data), a)
    p = grid.patches[0].to_image()
    assert p.file_path is None and p.width == 8
    hwc = InMemoryImage(array=np.random.rand(20, 30, 3))
    np.testing.assert_array_equal(_arrays.to_numpy(PatchGrid(hwc, 16).reconstruct()), _arrays.to_numpy(hwc.pixel_data))


def test_annotation_and_roi():
    from lumen.medical_image.data.annotation import Annotation, GeometryType
    from lumen.medical_image.data.in_memory_image import InMemoryImage
    from lumen.medical_image.data.region_of_interest import RegionOfInterest
    assert GeometryType.BOUNDING_BOX is GeometryType.RECTANGLE
    r = Annotation(GeometryType.RECTANGLE, [10, 20, 30, 60], "mass", {"birads": 4})
    assert r.center == (20.0, 40.0) and r.get_bounding_box() == [10, 20, 30, 60]
    assert r.get_roi(padding=15, image_shape=(50, 100))["coordinates"] == [0, 5, 45, 50]
    assert r.get_roi(roi_type="ellipse")["coordinates"] == {"center": (20.0, 40.0), "radii": (10.0, 20.0)}
    e = Annotation(GeometryType.ELLIPSE, [50, 40, 10.5, 5], "calc")
    assert e.get_bounding_box() == [39, 35, 60, 45]
    poly = Annotation(GeometryType.POLYGON, [(0, 0), (4, 0), (4, 2)], "x")
    assert Annotation.from_dict(json.loads(json.dumps(poly.to_dict()))).coordinates == poly.coordinates
    with pytest.raises(ValueError):
        Annotation(GeometryType.POLYGON, [(0, 0), (1, 1)], "x")
    with pytest.raises(ValueError):
        r.get_roi(roi_type="circle")
    a = np.arange(100, dtype=np.float32).reshape(10, 10)
    img = InMemoryImage(array=a)
    crop = RegionOfInterest(img, [2, 3, 6, 5]).load()
    np.testing.assert_array_equal(_arrays.to_numpy(crop.pixel_data), a[3:5, 2:6])
    box = RegionOfInterest.from_center(img, cx=1, cy=8, half_size=2)
    assert box.coordinates == [6, 0, 10, 4]
    normed = RegionOfInterest.normalize(InMemoryImage(array=np.array([[0.0, 4095.0, 9000.0]])))
    np.testing.assert_allclose(_arrays.to_numpy(normed.pixel_data), [[0, 1, 1]])


def test_image_json_round_trip(tmp_path):
    from lumen.medical_image.data.annotation import Annotation, GeometryType
    from lumen.medical_image.data.image import image_from_json
    from lumen.medical_image.data.in_memory_image import InMemoryImage
    img = InMemoryImage(array=np.zeros((6, 9), np.float32))
    assert img.annotations is None
    img.add_annotation(Annotation(GeometryType.RECTANGLE, [1, 2, 3, 4], "mass"))
    img.add_annotation(Annotation(GeometryType.POLYGON, [(1, 1), (5, 1), (5, 4)], "calc", {"n": 3}))
    clone = img.clone()
    clone.annotations[0].label = "changed"
    assert img.annotations[0].label == "mass"
    path = tmp_path / "img.json"
    text = img.to_json(str(path))
    data = json.loads(text)
    assert (data["width"], data["height"], data["image_type"]) == (9, 6, "InMemoryImage")
    back = image_from_json(str(path))
    assert type(back) is InMemoryImage and back.pixel_data is None and (back.width, back.height) == (9, 6)
    assert [a.to_dict() for a in back.annotations] == [a.to_dict() for a in img.annotations]
    assert img.remove_annotation(0).label == "mass" and len(img.annotations) == 1
    with pytest.raises(IndexError):
        img.remove_annotation(5)


def test_coco_export(tmp_path):
    from lumen.medical_image.data.annotation import Annotation, GeometryType
    from lumen.medical_image.datasets import BaseDataset

    class Two(BaseDataset):
        def _build_sample_list(self):
            self._samples = [0, 1]

        def _load_sample(self, idx):
            return {"image": np.zeros((1, 30, 20), np.float32), "metadata": {"file_name": "%d.dcm" % idx}}

        def _get_annotations(self, idx):
            return [Annotation(GeometryType.RECTANGLE, [1, 2, 5, 8], "mass")] if idx == 0 else []

    with pytest.raises(TypeError):
        BaseDataset("/tmp")
    ds = Two("/nowhere", target_size=(15, 10))
    assert ds[0]["image"].shape == (1, 15, 10)
    coco = ds.to_coco_json(str(tmp_path / "c.json"))
    assert [i["file_name"] for i in coco["images"]] == ["0.dcm", "1.dcm"]
    assert coco["annotations"][0]["bbox"] == [1, 2, 4, 6]
    back = BaseDataset.from_coco_json(str(tmp_path / "c.json"))
    assert back["categories"] == {1: "mass"} and back["annotations"][1][0].shape is GeometryType.POLYGON


def test_algorithms_on_the_layout():
    from lumen.medical_image.algorithms.custom_algorithm import CustomAlgorithm
    from lumen.medical_image.data.dicom_image import DicomImage
    from lumen.medical_image.utils.image_utils import TensorConverter, MathematicalOperations
    a = np.zeros((32, 32), np.float32)
    a[8:20, 10:24] = 200.0
    img = DicomImage.from_array(a)
    out = CustomAlgorithm(device="cpu")(img, img.clone())
    assert set(np.unique(TensorConverter.to_numpy(out)).tolist()) <= {0, 1}
    n = MathematicalOperations.normalize_12bit(DicomImage.from_array(np.array([[0.0, 4095.0, 5000.0]])),
                                               DicomImage.from_array(np.zeros((1, 3))))
    np.testing.assert_allclose(TensorConverter.to_numpy(n), [[0, 1, 1]])
    d2 = MathematicalOperations.euclidean_distance_sq(np.zeros((5, 2)), np.ones((3, 2)))
    assert _arrays.to_numpy(d2).shape == (3, 5) and float(_arrays.to_numpy(d2)[0, 0]) == 2.0
