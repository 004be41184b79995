"""medical_image.utils.logging: the package logger ("medical_image", silent by default) and
configure_logging(level, log_file) to add console and file handlers."""
import logging

logger = logging.getLogger("medical_image")
logger.addHandler(logging.NullHandler())


def configure_logging(level=logging.DEBUG, log_file=None):
    """Sets the level and adds a console handler (and a file handler for log_file) once."""
    logger.setLevel(level)
    fmt = logging.Formatter("%(asctime)s | %(levelname)s | %(message)s", datefmt="%Y%m%d-%H:%M:%S")
    kinds = [type(h) for h in logger.handlers]
    if logging.StreamHandler not in kinds:
        h = logging.StreamHandler()
        h.setFormatter(fmt)
        logger.addHandler(h)
    if log_file and logging.FileHandler not in kinds:
        h = logging.FileHandler(log_file, mode="a")
        h.setFormatter(fmt)
        logger.addHandler(h)
    return logger
