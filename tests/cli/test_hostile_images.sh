#!/usr/bin/env bash
# Hostile inputs to the image commands (lumen filter, lumen segment; issue 15, docs/RELIABILITY.md):
#  - a PNG whose IHDR declares 0xFFFFFFFF x 0xFFFFFFFF is refused by the header probe with the
#    reader's per-side cap, alone, in a batch of one shape and in a --batch list (under UBSan:
#    no "runtime error", the probe and the batch's charge do overflow-checked arithmetic);
#  - a single image over --memory-limit (a 390 KB PNG of 20000 x 20000 zeros) is refused before
#    it is decoded, with what it needs and the limit (filter, segment, the statistics);
#  - `lumen filter entropy|variance|mutual_information > /dev/full` exits 1;
#  - a FIFO as a PNG or NIfTI input or as the --batch list is refused at once, not waited on;
#  - bad data in an input (NaN voxels for kmeans, a 1e-6 mm spacing for --units mm) exits 1,
#    bad options still exit 2 (--seed out of range: a message, no undefined float-to-int cast);
#  - the temporaries a killed run left in an output folder are removed by the next run there
#    (those of a running process are kept).
set -u
. "$(dirname "$0")/lib.sh"
need_python3

"$py" - <<'PYEOF' || { echo "FAIL: making the test images"; exit 1; }
import struct, zlib
def ch(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
def png(path, w, h, idat, bits=8):
    open(path, 'wb').write(b'\x89PNG\r\n\x1a\n' + ch(b'IHDR', struct.pack('>IIBBBBB', w, h, bits, 0, 0, 0, 0))
                           + ch(b'IDAT', idat) + ch(b'IEND', b''))
def nii(path, dims, vals, pix=(1, 1, 1)):
    hdr = bytearray(348); struct.pack_into('<i', hdr, 0, 348)
    struct.pack_into('<8h', hdr, 40, *([len(dims)] + list(dims) + [1] * (7 - len(dims))))
    struct.pack_into('<hh', hdr, 70, 16, 32); struct.pack_into('<8f', hdr, 76, 1, *pix, 1, 1, 1, 1)
    struct.pack_into('<f', hdr, 108, 352); hdr[344:348] = b'n+1\x00'
    open(path, 'wb').write(bytes(hdr) + b'\x00' * 4 + struct.pack('<%df' % len(vals), *vals))
# the header claims 2^32-1 pixels per side (CRC correct); a few bytes of data
png('huge.png', 0xFFFFFFFF, 0xFFFFFFFF, zlib.compress(b'\x00' * 16))
png('huge2.png', 0xFFFFFFFF, 0xFFFFFFFF, zlib.compress(b'\x00' * 16))
png('wide.png', 1000001, 1, zlib.compress(b'\x00' * 1000002))        # one over the cap
png('small.png', 16, 16, zlib.compress(b''.join(b'\x00' + bytes((x * 13 + y * 7) % 251 for x in range(16)) for y in range(16))))
# a valid 8-bit PNG of 20000 x 20000 zeros: 390 KB, 400 MB decoded, about 3.4 GiB to filter
n = 20000
c = zlib.compressobj(6)
row = b'\x00' * (n + 1)
png('big.png', n, n, b''.join([c.compress(row) for _ in range(n)] + [c.flush()]))
vals = [float((i * 7) % 13) for i in range(256)]
nii('good.nii', [16, 16], vals)
nan = list(vals); nan[5] = float('nan')
nii('nan.nii', [16, 16], nan)
nii('tiny_spacing.nii', [16, 16], vals, pix=(1e-6, 1e-6, 1))
PYEOF

# nonzero when a sanitizer reported something in the given stderr file
clean() { ! grep -qE 'runtime error|AddressSanitizer|LeakSanitizer' "$1"; }

# ---- item 15: IHDR 0xFFFFFFFF x 0xFFFFFFFF, refused by the header probe with the per-side cap
cap='PNG IHDR width 4294967295 x height 4294967295, expected at most 1000000 per side'
"$bin" filter gaussian huge.png o.png 2> e1.txt; rc=$?
check "IHDR 2^32-1 squared: filter refuses it with the per-side cap (exit 1)" \
  "[ $rc -eq 1 ] && grep -q '$cap' e1.txt && clean e1.txt && [ ! -e o.png ]"
"$bin" filter median huge.png o1.png huge2.png o2.png --memory-limit 64M 2> e2.txt; rc=$?
check "  two of them (one shape, the batch's charge): refused, no overflow" \
  "[ $rc -eq 1 ] && grep -q '$cap' e2.txt && clean e2.txt"
printf 'small.png s.png\nhuge.png h.png\n' > list.txt
"$bin" segment kmeans --batch list.txt --device cpu,cpu 2> e3.txt; rc=$?
check "  in a --batch list of segment kmeans on two workers: refused before any work" \
  "[ $rc -eq 1 ] && grep -q '$cap' e3.txt && clean e3.txt && [ ! -e s.png ]"
"$bin" filter gaussian wide.png o.png 2> e4.txt; rc=$?
check "  1000001 x 1 (one over the cap): refused" \
  "[ $rc -eq 1 ] && grep -q 'width 1000001 x height 1, expected at most 1000000 per side' e4.txt"

# ---- item 14: one image over --memory-limit is refused before decoding
"$bin" filter gaussian big.png o.png --memory-limit 64M 2> m1.txt; rc=$?
check "20000^2 PNG under --memory-limit 64M: filter refuses it, says what it needs and the limit" \
  "[ $rc -eq 1 ] && grep -qE \"'big.png' needs about [0-9]+ MiB \\(20000 x 20000, 8-bit input, float32 \\+ working buffers of gaussian\\), over --memory-limit 64 MiB; raise --memory-limit or downscale\" m1.txt && [ ! -e o.png ] && clean m1.txt"
need=$(grep -o 'needs about [0-9]*' m1.txt | grep -o '[0-9]*$')
check "  the estimate covers input, float32 copy and result (>= 3433 MiB, got ${need:-none})" "[ '${need:-0}' -ge 3433 ]"
"$bin" segment kmeans big.png o.png --memory-limit 64M 2> m2.txt; rc=$?
check "  segment kmeans refuses it too" "[ $rc -eq 1 ] && grep -q \"'big.png' needs about\" m2.txt && [ ! -e o.png ]"
"$bin" filter entropy big.png --memory-limit 64M > m3.out 2> m3.txt; rc=$?
check "  filter entropy (no batch) refuses it too" "[ $rc -eq 1 ] && grep -q \"'big.png' needs about\" m3.txt && [ ! -s m3.out ]"
"$bin" filter gaussian small.png o.png --memory-limit 64M -q; rc=$?
check "  an image under the limit runs" "[ $rc -eq 0 ] && [ -s o.png ]"
sanitized=0
{ ldd "$bin" 2>/dev/null | grep -qE 'lib(a|ub|t)san'; } && sanitized=1
if [ $sanitized -eq 0 ]; then
  # 1 GiB of address space: decoding the image (400 MB + 1.6 GB float32 copy) could not succeed
  (ulimit -v 1048576; exec "$bin" filter gaussian big.png o4.png --memory-limit 64M) 2> m4.txt; rc=$?
  check "  refused before decoding: same message under ulimit -v 1 GiB" "[ $rc -eq 1 ] && grep -q 'needs about' m4.txt"
fi

# ---- item 4: results on stdout checked, /dev/full exits 1
if [ -w /dev/full ]; then
  for op in entropy variance; do
    "$bin" filter $op small.png > /dev/full 2> f.txt; rc=$?
    check "filter $op > /dev/full: exit 1, says so" "[ $rc -eq 1 ] && grep -q 'writing standard output failed' f.txt"
  done
  "$bin" filter mutual_information small.png small.png > /dev/full 2> f.txt; rc=$?
  check "filter mutual_information > /dev/full: exit 1" "[ $rc -eq 1 ] && grep -q 'writing standard output failed' f.txt"
fi
"$bin" filter entropy small.png > f.out 2> /dev/null; rc=$?
check "filter entropy to a file: exit 0, one line" "[ $rc -eq 0 ] && grep -q '^small.png: entropy ' f.out"

# ---- item 11: a FIFO is refused at once (a blocking open would wait for a writer forever)
mkfifo fifo.png fifo.nii fifo.txt
run5() { timeout 10 "$bin" "$@"; }
run5 filter gaussian fifo.png o.png 2> p1.txt; rc=$?
check "FIFO as a PNG input: refused at once (exit 1)" "[ $rc -eq 1 ] && grep -q \"'fifo.png' is a FIFO\" p1.txt"
run5 filter gaussian small.png o1.png fifo.png o2.png 2> p2.txt; rc=$?
check "  as the second input of a batch" "[ $rc -eq 1 ] && grep -q \"'fifo.png' is a FIFO\" p2.txt && [ ! -e o1.png ]"
run5 segment kmeans fifo.nii o.nii 2> p3.txt; rc=$?
check "FIFO as a NIfTI input: refused at once (exit 1)" "[ $rc -eq 1 ] && grep -q \"'fifo.nii' is a FIFO\" p3.txt"
run5 filter gaussian --batch fifo.txt 2> p4.txt; rc=$?
check "FIFO as the --batch list: refused at once" "[ $rc -ne 124 ] && [ $rc -ne 0 ] && grep -q \"'fifo.txt' is a FIFO\" p4.txt"
run5 filter entropy fifo.png --memory-limit 1G > /dev/null 2> p5.txt; rc=$?
check "FIFO to filter entropy --memory-limit: refused at once" "[ $rc -eq 1 ] && grep -q \"'fifo.png' is a FIFO\" p5.txt"

# ---- item 16: data errors exit 1, usage errors 2
"$bin" segment kmeans nan.nii o.nii 2> d1.txt; rc=$?
check "segment kmeans on NaN voxels: a data error, exit 1" "[ $rc -eq 1 ] && grep -q 'expected finite values' d1.txt"
"$bin" filter gaussian tiny_spacing.nii o.nii --units mm 2> d2.txt; rc=$?
check "filter gaussian --units mm with a 1e-6 mm spacing: a data error, exit 1" \
  "[ $rc -eq 1 ] && grep -q 'radius over' d2.txt"
"$bin" filter gaussian small.png d3a.nii tiny_spacing.nii d3b.nii --units mm 2> d3.txt; rc=$?
check "  also as the second image of a batch" "[ $rc -eq 1 ]"
"$bin" segment kmeans good.nii o.nii --k 1 2> d4.txt; rc=$?
check "segment kmeans --k 1: still a usage error, exit 2" "[ $rc -eq 2 ] && grep -q 'k is 1' d4.txt"
"$bin" filter gaussian good.nii o.nii --sigma -1 2> d5.txt; rc=$?
check "filter gaussian --sigma -1: still a usage error, exit 2" "[ $rc -eq 2 ] && grep -q 'sigma is -1' d5.txt"
for seed in -1 1e30; do
  "$bin" segment kmeans good.nii o.nii --seed "$seed" 2> d6.txt; rc=$?
  check "segment kmeans --seed $seed: a usage error with a message (no undefined cast), exit 2" \
    "[ $rc -eq 2 ] && grep -q 'expected an integer from 0 to 2^64-1' d6.txt && clean d6.txt"
done

# ---- item 16: stale temporaries of killed runs are removed at the next run into the folder
dead=$(sh -c 'echo $$')   # a process that has ended
mkdir -p out1 out2
for d in out1 out2; do
  printf 'partial' > "$d/.r.png.tmp-$dead-0a1b2c3d"
  printf 'live' > "$d/.r.png.tmp-$$-0a1b2c3d"   # this shell is running: kept
done
ln -s ../good.nii "out1/.link.nii.tmp-$dead-00ff"  # not a regular file: kept
"$bin" filter gaussian small.png out1/r.png small.png out2/r.png 2> s1.txt; rc=$?
check "filter: stale .NAME.tmp-PID-TAG removed in every output folder, live ones kept" \
  "[ $rc -eq 0 ] && [ ! -e out1/.r.png.tmp-$dead-0a1b2c3d ] && [ ! -e out2/.r.png.tmp-$dead-0a1b2c3d ] && [ -e out1/.r.png.tmp-$$-0a1b2c3d ] && [ -L out1/.link.nii.tmp-$dead-00ff ] && grep -q 'removed 1 temporary file left by a killed run in out1' s1.txt"
printf 'partial' > ".m.png.tmp-$dead-beef"
"$bin" segment kmeans small.png m.png -q; rc=$?
check "segment: the same in the working folder" "[ $rc -eq 0 ] && [ ! -e .m.png.tmp-$dead-beef ] && [ -s m.png ]"

# ---- issue 40 item 2: the entropy of an image holding NaN with --bins 0 (one bin per distinct
# value) ends (the run loop compared with ==, which a NaN never passes: it looped forever); the NaNs
# count as one value. Reference computed here from the same voxels.
timeout 20 "$bin" filter entropy nan.nii --bins 0 > e.out 2> e.err; rc=$?
want=$("$py" - <<'PYEOF'
import math, struct
d = open('nan.nii', 'rb').read()
v = struct.unpack_from('<256f', d, 352)
keys = ['nan' if x != x else repr(x) for x in v]
h = -sum(c / 256 * math.log2(c / 256) for c in (keys.count(k) for k in set(keys)))
print('%.10g' % h)
PYEOF
)
check "entropy --bins 0 of an image with a NaN: ends (exit 0, not the 20 s timeout), $want bits" \
  "[ $rc -eq 0 ] && grep -q \"^nan.nii: entropy $want bits\" e.out" || cat e.out e.err

# ---- issue 40 item 3: one thread cap everywhere (LUMEN_MAX_THREADS, 4096), refused above it
for cmd in "filter gaussian small.png t.png" "segment kmeans small.png t.png"; do
  "$bin" $cmd --threads 1000000 2> t.err; rc=$?
  check "${cmd%% *} --threads 1000000: usage error (exit 2), no crash, nothing written" \
    "[ $rc -eq 2 ] && grep -q -- '--threads is 1000000, expected 0 (all cores) to 4096' t.err && [ ! -e t.png ]" || cat t.err
done
# ---- issue 40 item 4: a file-size limit (ulimit -f) fails the write with EFBIG: exit 1 naming the file
# and "File too large", no temporary left (it was SIGXFSZ, rc 153, temporaries behind)
"$py" -c "
import struct, random
hdr = bytearray(348); struct.pack_into('<i', hdr, 0, 348); struct.pack_into('<8h', hdr, 40, 3, 128, 128, 32, 1, 1, 1, 1)
struct.pack_into('<hh', hdr, 70, 16, 32); struct.pack_into('<8f', hdr, 76, 1, 1, 1, 1, 1, 1, 1, 1)
struct.pack_into('<f', hdr, 108, 352); hdr[344:348] = b'n+1\\x00'
random.seed(1)
open('fsz.nii', 'wb').write(bytes(hdr) + bytes(4) + struct.pack('<%df' % (128 * 128 * 32), *(random.random() for _ in range(128 * 128 * 32))))
"
mkdir fszout
(ulimit -f 200; "$bin" filter gaussian fsz.nii fszout/g.nii 2> fsz.err); rc=$?
check "filter under ulimit -f: exit 1 (not SIGXFSZ), 'File too large' naming the output, no temporary" \
  "[ $rc -eq 1 ] && grep -q \"fszout/g.nii.*File too large\" fsz.err && [ -z \"\$(ls -A fszout)\" ]" || { cat fsz.err; ls -la fszout; }

# ---- issue 40 item 10: a modality LUT that overflows float32 (RescaleSlope 1e308; 32-bit pixels x
# 1e30) is refused naming the file and the slope, not read as an image of infinities
if /usr/bin/python3 -c 'import pydicom, numpy' 2>/dev/null; then
  /usr/bin/python3 -W ignore - <<'PYEOF'
import numpy as np, pydicom
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, generate_uid
def write(path, bits, slope):
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = '1.2.840.10008.5.1.4.1.1.7'
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID, ds.SOPInstanceUID = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID
    ds.Modality, ds.Rows, ds.Columns = 'OT', 4, 4
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, 'MONOCHROME2'
    ds.BitsAllocated = ds.BitsStored = bits
    ds.HighBit, ds.PixelRepresentation = bits - 1, 0
    ds.RescaleSlope, ds.RescaleIntercept = slope, '0'
    ds.PixelData = np.arange(16, dtype='<u%d' % (bits // 8)).tobytes()
    ds.is_little_endian, ds.is_implicit_VR = True, False
    ds.save_as(path, write_like_original=False)
write('slope308.dcm', 16, '1e308')
write('slope30_32bit.dcm', 32, '1e30')
PYEOF
  for f in slope308 slope30_32bit; do
    "$bin" filter gaussian $f.dcm $f.nii 2> $f.err; rc=$?
    check "DICOM $f: refused (exit 1) naming RescaleSlope and float32, no output" \
      "[ $rc -eq 1 ] && grep -q \"'$f.dcm'.*RescaleSlope .* beyond float32\" $f.err && [ ! -e $f.nii ]" || cat $f.err
  done
fi

# ---- issue 40 item 13: image data that go on past the image (one zlib stream holding 8 MiB more
# than a 64 x 64 image): libpng inflated all of it (4 GiB: 8-13 s whatever --memory-limit); the
# read stops at 16 x the image's size and refuses the file
"$py" - <<'PYEOF'
import os, random, struct, zlib
def ch(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
raw = b''.join(b'\x00' + bytes((x + y) % 256 for x in range(64)) for y in range(64))
co = zlib.compressobj()
rnd = random.Random(40)
data = co.compress(raw) + co.compress(bytes(rnd.getrandbits(8) for _ in range(8 << 20))) + co.flush()
idat = b''.join(ch(b'IDAT', data[i:i + (1 << 16)]) for i in range(0, len(data), 1 << 16))
open('overlong.png', 'wb').write(b'\x89PNG\r\n\x1a\n' + ch(b'IHDR', struct.pack('>IIBBBBB', 64, 64, 8, 0, 0, 0, 0))
                               + idat + ch(b'IEND', b''))
PYEOF
"$bin" filter gaussian overlong.png ol_out.png --memory-limit 16M 2> ol.err; rc=$?
check "PNG whose image data go on past the image: refused (exit 1) naming it, nothing written" \
  "[ $rc -eq 1 ] && grep -q \"'overlong.png' is truncated or corrupt: more image data than the image holds\" ol.err && [ ! -e ol_out.png ]" || cat ol.err

# ---- issue 40 item 12: a colour (RGB JPEG) DICOM says so, also when its data set is implicit VR
# under an explicit transfer syntax (pydicom's SC_rgb_jpeg.dcm: "invalid value representation
# (at byte 360)" before); a greyscale file written that way reads as its implicit original
pyd=$(/usr/bin/python3 -c 'import pydicom, os; print(os.path.join(os.path.dirname(pydicom.__file__), "data", "test_files"))' 2>/dev/null)
if [ -n "$pyd" ] && [ -f "$pyd/SC_rgb_jpeg.dcm" ]; then
  "$bin" filter gaussian "$pyd/SC_rgb_jpeg.dcm" rgb.nii 2> rgb.err; rc=$?
  check "RGB JPEG DICOM: refused (exit 1) as colour, naming RGB and what to do" \
    "[ $rc -eq 1 ] && grep -q 'colour DICOM (RGB, SamplesPerPixel 3) is not supported.*convert it to greyscale first' rgb.err && [ ! -e rgb.nii ]" || cat rgb.err
  /usr/bin/python3 -W ignore -c "
import pydicom, sys
ds = pydicom.dcmread(sys.argv[1] + '/MR_small_implicit.dcm')
ds.file_meta.TransferSyntaxUID = '1.2.840.10008.1.2.1'
ds.is_implicit_VR = True
ds.save_as('impl_in_expl.dcm', write_like_original=True)" "$pyd"
  "$bin" filter gaussian impl_in_expl.dcm ie.nii --sigma 1 -q 2> ie.err; rc1=$?
  "$bin" filter gaussian "$pyd/MR_small_implicit.dcm" im.nii --sigma 1 -q 2>> ie.err; rc2=$?
  check "implicit VR data set under an explicit transfer syntax: read as the implicit original" \
    "[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && cmp -s <(tail -c +353 ie.nii) <(tail -c +353 im.nii)" || cat ie.err
fi

# ---- issue 40 item 1: `lumen filter --batch` past its read-ahead budget decodes on the reader
# thread (the process has threads): there the decode runs in the helper program, so a decoder that
# aborts (test hook, helper only) fails that item with a message, never the process (it died of
# SIGABRT); the items decoded before the threads started (forked) are written
if [ -n "$pyd" ] && "$bin" --version | grep -q "test hooks"; then
  for i in 1 2 3 4 5 6; do echo "$pyd/MR_small_RLE.dcm ra$i.nii"; done > ra.txt
  LUMEN_TEST_DICOM_CHILD_ABORT=helper "$bin" filter gaussian --batch ra.txt --memory-limit 70K -q 2> ra.err; rc=$?
  check "filter --batch: a decoder abort past the read-ahead budget is an error (exit 1), not SIGABRT; the earlier items written" \
    "[ $rc -eq 1 ] && grep -q 'malformed pixel data (decoder aborted, signal 6)' ra.err && [ -s ra1.nii ]" || { echo "rc $rc"; cat ra.err; }
fi

lib=$(dirname "$bin")/liblumen.so
if [ -f "$lib" ] && ! ldd "$lib" 2>/dev/null | grep -q libasan && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  LUMEN_LIBRARY="$lib" PYTHONPATH="${LUMEN_SOURCE_DIR:-$LUMEN_CLI_TESTS/../..}/python" /usr/bin/python3 - > tp.out 2>&1 <<'PYEOF'
import numpy as np
import lumen
try:
    lumen.process_images([np.ones((8, 8), np.float32)], 'gaussian', threads=100000)
    print('accepted')
except ValueError as e:
    print('refused:', e)
PYEOF
  check "Python process_images(threads=100000): ValueError naming the cap, the interpreter lives" \
    "grep -q 'refused: .*threads is 100000, expected 0 (the context.s) to 4096' tp.out" || cat tp.out
fi
exit $fail
