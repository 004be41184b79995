"""Every ctypes struct the binding mirrors, field by field against the C compiler (issue 41 item 7):
sizeof of each struct and offsetof and sizeof of each field, from a small C program compiled
against include/lumen/, equal the ctypes layout. A field moved, resized or renamed in a header
without the mirror fails here (a renamed one fails to compile, naming it), not silently at run time.
The opts_from_init canary (lumen/_lib.py) still guards a struct grown at import."""
import ctypes
import os
import shutil
import subprocess

import pytest

from lumen import _batch, _device, _fit, _image, _image_ops, _io, _segment

REPO = os.environ.get("LUMEN_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# the C struct each mirror stands for
MIRRORS = {
    "lumen_batch_opts": _batch._BatchOpts, "lumen_batch_callbacks": _batch._Callbacks,
    "lumen_batch_report": _batch._Report,
    "lumen_device": _device._Device, "lumen_device_info": _device._DeviceInfo,
    "lumen_memory_stats": _device._MemoryStats, "lumen_check": _device._Check,
    "lumen_fit_options": _fit._FitOptions, "lumen_fit_results": _fit._FitResults,
    "lumen_aif_options": _fit._AifOptions,
    "lumen_filter_report": _image._Report, "lumen_filter_exec": _image._Exec,
    "lumen_gaussian_opts": _image._GaussianOpts, "lumen_dog_opts": _image._DogOpts,
    "lumen_laplace_opts": _image._LaplaceOpts, "lumen_median_opts": _image._MedianOpts,
    "lumen_otsu_opts": _image._OtsuOpts, "lumen_morph_opts": _image._MorphOpts,
    "lumen_region_opts": _image._RegionOpts,
    "lumen_gamma_opts": _image_ops._GammaOpts, "lumen_abs_opts": _image_ops._AbsOpts,
    "lumen_contrast_opts": _image_ops._ContrastOpts, "lumen_convolve_opts": _image_ops._ConvolveOpts,
    "lumen_bandpass_opts": _image_ops._BandpassOpts, "lumen_sauvola_opts": _image_ops._SauvolaOpts,
    "lumen_local_variance_opts": _image_ops._LocalVarianceOpts, "lumen_stats_opts": _image_ops._StatsOpts,
    "lumen_mi_result": _image_ops._MiResult,
    "lumen_nifti_read_opts": _io._NiftiReadOpts, "lumen_nifti_info": _io._NiftiInfo,
    "lumen_nifti_write_opts": _io._NiftiWriteOpts, "lumen_png_read_opts": _io._PngReadOpts,
    "lumen_png_write_opts": _io._PngWriteOpts, "lumen_dicom_read_opts": _io._DicomReadOpts,
    "lumen_dicom_info": _io._DicomInfo, "lumen_dicom_series_opts": _io._DicomSeriesOpts,
    "lumen_dicom_series_info": _io._DicomSeriesInfo,
    "lumen_febds_opts": _segment._FebdsOpts, "lumen_tophat_opts": _segment._TophatOpts,
    "lumen_cluster_result": _segment._ClusterResult, "lumen_kmeans_opts": _segment._KmeansOpts,
    "lumen_fcm_opts": _segment._FcmOpts, "lumen_region_grow_opts": _segment._RegionGrowOpts,
    "lumen_breast_mask_opts": _segment._BreastMaskOpts, "lumen_window_opts": _segment._WindowOpts,
    "lumen_bits_opts": _segment._BitsOpts, "lumen_grail_opts": _segment._GrailOpts,
    "lumen_grail_result": _segment._GrailResult,
}


def test_every_mirror_matches_the_c_layout(tmp_path):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to measure the structs")
    lines, want = [], []
    for cname, cls in MIRRORS.items():
        lines.append('printf("%%zu\\n", sizeof(%s));' % cname)
        want.append(("sizeof(%s)" % cname, ctypes.sizeof(cls)))
        for fname, ftype in cls._fields_:
            lines.append('printf("%%zu %%zu\\n", offsetof(%s, %s), sizeof(((%s *)0)->%s));' % (cname, fname, cname, fname))
            f = getattr(cls, fname)
            want.append(("%s.%s" % (cname, fname), (f.offset, f.size)))
    src = tmp_path / "layout.c"
    src.write_text("#include <stddef.h>\n#include <stdio.h>\n#include \"lumen/lumen.h\"\n#include \"lumen/io.h\"\n"
                   "#include \"lumen/batch.h\"\n#include \"lumen/segment.h\"\n#include \"lumen/health.h\"\n"
                   "int main(void) {\n%s\nreturn 0;\n}\n" % "\n".join(lines))
    exe = tmp_path / "layout"
    r = subprocess.run([cc, "-std=c11", "-I", os.path.join(REPO, "include"), "-o", str(exe), str(src)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert r.returncode == 0, "a mirror names a field the header lacks:\n" + r.stdout[-3000:]
    out = subprocess.run([str(exe)], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.splitlines()
    got = []
    k = 0
    for what, value in want:
        if isinstance(value, tuple):
            o, s = out[k].split()
            got.append((what, (int(o), int(s))))
        else:
            got.append((what, int(out[k])))
        k += 1
    bad = [(w, g, v) for (w, v), (_, g) in zip(want, got) if g != v]
    assert not bad, "C layout (offset, size) != ctypes mirror: %s" % bad[:10]
    assert len(MIRRORS) >= 48


# sizes and offsets computed by hand from include/lumen/filter.h for x86-64 / aarch64 (LP64): the
# mirrors checked without a C compiler
LP64_BY_HAND = [
    (_image, {"_Report": 328, "_Exec": 24, "_GaussianOpts": 96, "_DogOpts": 80, "_LaplaceOpts": 72,
              "_MedianOpts": 48, "_OtsuOpts": 32, "_MorphOpts": 48, "_RegionOpts": 32},
     [(_image._GaussianOpts.truncate, 64), (_image._Report.seconds, 320)]),
    (_image_ops, {"_GammaOpts": 40, "_AbsOpts": 24, "_ContrastOpts": 48, "_ConvolveOpts": 88, "_BandpassOpts": 48,
                  "_SauvolaOpts": 64, "_LocalVarianceOpts": 56, "_StatsOpts": 32, "_MiResult": 32},
     [(_image_ops._ConvolveOpts.kernel_dims, 40), (_image_ops._ConvolveOpts.cval, 72)]),
]


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="sizes below are the LP64 ABI's")
@pytest.mark.parametrize("module, sizes, offsets", LP64_BY_HAND, ids=["image", "image_ops"])
def test_struct_sizes_match_filter_h(module, sizes, offsets):
    for name, size in sizes.items():
        assert ctypes.sizeof(getattr(module, name)) == size, name
    for field, offset in offsets:
        assert field.offset == offset
