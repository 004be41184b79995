"""The package layout of medical_image.datasets over lumen."""
from .base_dataset import BaseDataset
from .inbreast import INbreastDataset
from .custom_inbreast import CustomINbreastDataset
from .cbis_ddsm import CBISDDSMDataset

__all__ = ["BaseDataset", "INbreastDataset", "CustomINbreastDataset", "CBISDDSMDataset"]
