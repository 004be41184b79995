"""medical_image.utils.downloader and utils.pairing, utils.mask_utils: dataset download, file
pairing and INbreast/CBIS-DDSM mask parsing. lumen does not provide them (they serve the
datasets, which need the licensed data); each name raises NotImplementedError saying so."""


def _unsupported(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(
            "%s is not provided by lumen.medical_image: it serves the INbreast / CBIS-DDSM datasets, which "
            "need the data on disk; install medical-image-std and use medical_image.utils for it." % name)
    fn.__name__ = name
    fn.__doc__ = "Not provided by lumen (see the module docstring)."
    return fn


download = _unsupported("download")
pair_inbreast = _unsupported("pair_inbreast")
pair_custom_inbreast = _unsupported("pair_custom_inbreast")
pair_cbis_ddsm = _unsupported("pair_cbis_ddsm")
parse_inbreast_xml = _unsupported("parse_inbreast_xml")
xml_to_binary_mask = _unsupported("xml_to_binary_mask")
load_tif_mask = _unsupported("load_tif_mask")
stack_dicom_masks = _unsupported("stack_dicom_masks")
