"""In-process mutation run for the hostile suite (issue 40 acceptance; tests/cli/test_hostile_python.sh):
thousands of mutated DICOM (native, RLE, JPEG, JPEG-LS, JPEG 2000), PNG and NIfTI files read in ONE
Python process, after other lumen calls (so the interpreter has OpenMP's threads, and one of its own):
through lumen.read_image, lumen.process_images and lumen.medical_image's Image.from_file. Every read
must return an image or raise one of lumen's errors (or a ValueError/OSError); a process death (an
abort in a decoder, a crash) fails the shell test, which sees no summary line.
    python3 hostile_mutants.py WORKDIR COUNT SEED"""
import gzip
import os
import random
import struct
import sys
import threading
import zlib

import numpy as np

import lumen
from lumen.medical_image import Image


def sources(pyd, work):
    """(name, bytes) of the files to mutate."""
    out = []
    for name in ("CT_small.dcm", "MR_small.dcm", "MR_small_RLE.dcm", "MR_small_jpeg_ls_lossless.dcm",
                 "MR_small_jp2klossless.dcm", "JPEG-lossy.dcm", "JPGExtended.dcm", "JPEG2000.dcm", "693_J2KI.dcm",
                 "rtdose_rle_1frame.dcm", "MR_small_bigendian.dcm", "SC_rgb_jpeg.dcm"):
        p = os.path.join(pyd, name)
        if os.path.exists(p):
            out.append((name, open(p, "rb").read()))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)

    for bits in (8, 16):
        w, h = 48, 40
        raw = b"".join(b"\x00" + bytes((x * 7 + y * bits) % 256 for x in range(w * bits // 8)) for y in range(h))
        out.append(("g%d.png" % bits, b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bits, 0, 0, 0, 0))
                    + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")))
    hdr = bytearray(348)
    struct.pack_into("<i", hdr, 0, 348)
    struct.pack_into("<8h", hdr, 40, 3, 16, 12, 4, 1, 1, 1, 1)
    struct.pack_into("<hh", hdr, 70, 16, 32)
    struct.pack_into("<8f", hdr, 76, 1, 1, 1, 1, 1, 1, 1, 1)
    struct.pack_into("<f", hdr, 108, 352)
    hdr[344:348] = b"n+1\x00"
    body = bytes(hdr) + b"\x00" * 4 + np.arange(16 * 12 * 4, dtype="<f4").tobytes()
    out.append(("v.nii", body))
    out.append(("v.nii.gz", gzip.compress(body)))
    return out


def mutate(rnd, data):
    b = bytearray(data)
    kind = rnd.randrange(6)
    if kind == 0:  # flip bytes
        for _ in range(rnd.randint(1, 8)):
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
    elif kind == 1:  # extreme values
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] = rnd.choice((0, 0xFF, 0x7F, 0x80))
    elif kind == 2:  # truncate
        del b[rnd.randrange(1, len(b)):]
    elif kind == 3:  # insert
        at = rnd.randrange(len(b))
        b[at:at] = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 64)))
    elif kind == 4:  # duplicate a region
        at, n = rnd.randrange(len(b)), rnd.randint(1, 256)
        b[at:at] = b[at:at + n]
    else:  # a 32-bit field set to a large value (lengths, sizes)
        at = rnd.randrange(max(1, len(b) - 4))
        b[at:at + 4] = struct.pack("<I", rnd.choice((0xFFFFFFFF, 0x7FFFFFFF, 0x10000, 0xFFFF)))
    return bytes(b)


def main(work, count, seed):
    pyd = os.path.join(os.path.dirname(__import__("pydicom").__file__), "data", "test_files") \
        if _has("pydicom") else ""
    src = sources(pyd, work)
    # other lumen calls first: OpenMP's threads now exist, and a thread of the interpreter's own
    lumen.gaussian(np.ones((128, 128), np.float32), 2.0)
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()
    rnd = random.Random(seed)
    counts = {"ok": 0, "refused": 0}
    other = []
    via = ("read_image", "read_image", "read_image", "process_images", "medical_image")
    for k in range(count):
        name, data = src[rnd.randrange(len(src))]
        ext = ".nii.gz" if name.endswith(".nii.gz") else os.path.splitext(name)[1]
        path = os.path.join(work, "m%05d%s" % (k, ext))
        with open(path, "wb") as f:
            f.write(mutate(rnd, data))
        how = via[k % len(via)] if not name.endswith(".dcm") or via[k % len(via)] != "medical_image" else "read_image"
        try:
            if how == "read_image":
                lumen.read_image(path, max_bytes=256 << 20)
            elif how == "process_images":
                lumen.process_images([path], "gaussian", memory_limit=256 << 20)
            else:
                Image.from_file(path).pixel_data
            counts["ok"] += 1
        except (lumen.LumenError, ValueError, OSError, TypeError):
            counts["refused"] += 1
        except Exception as e:  # anything else is a defect of the binding
            other.append("%s (%s via %s): %r" % (path, name, how, e))
        os.unlink(path)
    stop.set()
    print("mutants %d: read %d, refused %d, other exceptions %d" % (count, counts["ok"], counts["refused"], len(other)))
    for line in other[:20]:
        print("  " + line)
    return 1 if other else 0


def _has(mod):
    try:
        __import__(mod)
        return True
    except ImportError:
        return False


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
