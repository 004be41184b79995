"""medical_image.algorithms.deep_segmentation: the name DeepSegmentationAlgorithm, which lumen
does not provide: the original runs a PyTorch U-Net family model (segmentation-models-pytorch,
or ONNX Runtime) with weights from a checkpoint or its model server. Constructing it raises
NotImplementedError saying so (after the original's own argument check)."""
from ._algorithms import Algorithm

DEFAULT_MODEL_SERVER_URL = "https://mcdmodels.ptm.tn/"

_WHY = ("DeepSegmentationAlgorithm is not provided by lumen.medical_image: it needs PyTorch, "
        "segmentation-models-pytorch (or onnxruntime) and trained model weights (a checkpoint file, "
        "or a download from the model server %s). Install medical-image-std and use "
        "medical_image.algorithms.deep_segmentation for it." % DEFAULT_MODEL_SERVER_URL)


class DeepSegmentationAlgorithm(Algorithm):
    """Placeholder: see the module docstring."""

    def __init__(self, checkpoint_path=None, model=None, *args, **kwargs):
        if checkpoint_path is None and model is None:
            raise ValueError("Provide either checkpoint_path or model")
        raise NotImplementedError(_WHY)

    def apply(self, image, output):
        raise NotImplementedError(_WHY)

    @classmethod
    def list_available_models(cls, server_url=None):
        raise NotImplementedError(_WHY)

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        raise NotImplementedError(_WHY)
