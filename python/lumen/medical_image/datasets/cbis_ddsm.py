"""The module layout of medical_image.datasets.cbis_ddsm (a placeholder: needs the CBIS-DDSM data)
over lumen."""
from .._datasets import CBISDDSMDataset  # noqa: F401
