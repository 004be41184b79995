"""The module layout of medical_image.utils.ErrorHandler over lumen."""
from .._image import DicomDataNotLoadedError
from .._errors import (AppError, FileNotFoundAppError, InvalidPixelDataError, LengthMismatchError,
                       InvalidInputTypeError, UnsupportedFileTypeError, EmptyDatasetError, AnnotationTypeError,
                       ErrorMessages)  # noqa: F401
