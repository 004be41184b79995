"""medical_image.utils.ErrorHandler: the error classes (AppError and its kinds) and ErrorMessages,
whose static methods build them. DicomDataNotLoadedError is the data layer's own (a ValueError)."""
from ._image import DicomDataNotLoadedError


class AppError(Exception):
    def __init__(self, message, code=None):
        super().__init__(message)
        self.message, self.code = message, code

    def __str__(self):
        return "[Error %s] %s" % (self.code, self.message) if self.code else self.message


class FileNotFoundAppError(AppError, FileNotFoundError):
    pass


class InvalidPixelDataError(AppError, ValueError):
    pass


class LengthMismatchError(AppError, ValueError):
    pass


class InvalidInputTypeError(AppError, TypeError):
    pass


class UnsupportedFileTypeError(AppError, ValueError):
    pass


class EmptyDatasetError(AppError, ValueError):
    pass


class AnnotationTypeError(AppError, TypeError):
    pass


class ErrorMessages(object):

    @staticmethod
    def file_not_found(path):
        return FileNotFoundError("File not found: %s" % path)

    @staticmethod
    def length_mismatch(expected_len, actual_len, expected_name="coordinates", actual_name="classes"):
        return LengthMismatchError("Length mismatch: %s (%s) and %s (%s) must be the same length." % (
            expected_name, expected_len, actual_name, actual_len), code=400)

    @staticmethod
    def invalid_pixel_data():
        return InvalidPixelDataError("pixel_data must be a torch tensor or a numpy array (load the image first)")

    @staticmethod
    def invalid_input_type(expected_type, received_type):
        return InvalidInputTypeError("Expected %s, got %s" % (expected_type, received_type))

    @staticmethod
    def input_none(expected_type):
        return InvalidInputTypeError("Expected %s, got None" % (expected_type,))

    @staticmethod
    def unsupported_file_type(extension, expected=".dcm"):
        return ValueError("Unsupported file type: %s (expected %s)" % (extension, expected))

    @staticmethod
    def dicom_data_not_loaded():
        return DicomDataNotLoadedError("DICOM data not loaded. Call .load() first.")

    @staticmethod
    def empty_dataset():
        return EmptyDatasetError("The dataset is empty")

    @staticmethod
    def annotation_type_not_recognized(received, expected=None):
        return AnnotationTypeError("Annotation type %r not recognized%s" % (
            received, "; expected %s" % (expected,) if expected else ""))
