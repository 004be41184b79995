"""medical_image.algorithms.custom_algorithm.CustomAlgorithm: the original's example pipeline,
Gaussian (sigma 2) twice then Otsu, on lumen's ops."""
from ._algorithms import Algorithm
from ._process import Filters, Threshold


class CustomAlgorithm(Algorithm):

    def __init__(self, device=None, precision=None):
        super().__init__(device=device, precision=precision)

    def apply(self, image, output):
        Filters.gaussian_filter(image, output, sigma=2.0, device=self.device)
        Filters.gaussian_filter(output, output, sigma=2.0, device=self.device)
        Threshold.otsu_threshold(output, output, device=self.device)
        return output
