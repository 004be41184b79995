"""What the format decision costs: lumen_image_probe (content first) against the NIfTI header read
it precedes, and lumen_image_read_any against lumen_nifti_read, on the same files (ratios; best of
--repeats rounds of --calls calls). Usage:
  LUMEN_LIBRARY=build/liblumen.so PYTHONPATH=python python3 bench/bench_image_probe.py FILE.nii.gz [FILE ...]
"""
import argparse
import ctypes
import time

from lumen import _io, _lib
from lumen._lib import lib, cstr

lib.lumen_image_read_any.restype = ctypes.c_int
lib.lumen_image_read_any.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                     ctypes.c_void_p]


def best(fn, calls, repeats):
    t = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t.append((time.perf_counter() - t0) / calls)
    return min(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    ctx = _lib.context_obj().handle
    for path in a.files:
        p = cstr(path)
        info = _io._FormatInfo()
        hdr = _io._NiftiInfo()
        probe = best(lambda: lib.lumen_image_probe(ctx, p, ctypes.byref(info)), a.calls, a.repeats)
        header = best(lambda: lib.lumen_nifti_read_header(ctx, p, None, ctypes.byref(hdr)), a.calls, a.repeats)
        img = ctypes.c_void_p()

        def read_any():
            assert lib.lumen_image_read_any(ctx, p, None, ctypes.byref(img), None) == 0
            lib.lumen_image_free(img)

        def read_nifti():
            assert lib.lumen_nifti_read(ctx, p, None, ctypes.byref(img), None) == 0
            lib.lumen_image_free(img)
        n = max(1, a.calls // 20)
        any_s = nifti_s = float("inf")
        for _ in range(a.repeats):  # alternated (and in turn first), so that both see the same load
            if _ % 2:
                any_s = min(any_s, best(read_any, n, 1))
                nifti_s = min(nifti_s, best(read_nifti, n, 1))
            else:
                nifti_s = min(nifti_s, best(read_nifti, n, 1))
                any_s = min(any_s, best(read_any, n, 1))
        print("%s: probe %.1f us, NIfTI header %.1f us (probe/header %.2f); read_any %.2f ms, nifti_read %.2f ms "
              "(ratio %.3f)" % (path, probe * 1e6, header * 1e6, probe / header, any_s * 1e3, nifti_s * 1e3,
                                any_s / nifti_s))


if __name__ == "__main__":
    main()
