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
    from lumen.medical_image.algorithms.deep_segmentation import DeepSegmentationAlgorithm
    from lumen.medical_image.datasets import INbreastDataset
    with pytest.raises(ValueError):
        DeepSegmentationAlgorithm()
    with pytest.raises(NotImplementedError, match="weights"):
        DeepSegmentationAlgorithm(checkpoint_path="model.pt")
    with pytest.raises(NotImplementedError, match="INbreast"):
        INbreastDataset("/nowhere")


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
