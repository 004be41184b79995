#!/usr/bin/env bash
# lumen filter / segment over several devices (--device cpu,cpu, cuda:all) with overlapped
# reading and writing (--memory-limit, --no-overlap): every output byte-identical to a
# single-device serial run; cuda:all without a GPU runs on the CPU with the reason.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
command -v python3 >/dev/null || { echo "python3 not found: skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"

python3 - <<'PYEOF'
import struct, zlib
def png_write(path, w, h, px):
    rows = [b'\x00' + b''.join(struct.pack('>H', v) for v in px[y*w:(y+1)*w]) for y in range(h)]
    def ch(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    open(path, 'wb').write(b'\x89PNG\r\n\x1a\n' + ch(b'IHDR', struct.pack('>IIBBBBB', w, h, 16, 0, 0, 0, 0))
                           + ch(b'IDAT', zlib.compress(b''.join(rows))) + ch(b'IEND', b''))
for k in range(7):
    x, px = 12345 + 977 * k, []
    for i in range(72 * 60):
        x = (1103515245 * x + 12345) % 2**31
        px.append((x >> 8) % 3000 + (900 if (i % 72 - 30) ** 2 + (i // 72 - 25) ** 2 < 9 else 0))
    png_write('in%d.png' % k, 72, 60, px)
png_write('small.png', 8, 8, [0] * 64)
PYEOF

run() {  # run TAG DEVICE [options...]: filter gaussian to NIfTI and PNG, febds segmentation
  local tag=$1 dev=$2; shift 2
  local fa=() fb=() sa=()
  for k in 0 1 2 3 4 5 6; do fa+=(in$k.png "$tag-g$k.nii"); fb+=(in$k.png "$tag-m$k.png"); sa+=(in$k.png "$tag-s$k.png"); done
  "$bin" filter gaussian "${fa[@]}" --sigma 2.5 --device "$dev" "$@" 2> "$tag-err1.txt" &&
  "$bin" filter median "${fb[@]}" --size 5 --device "$dev" "$@" 2> "$tag-err2.txt" &&
  "$bin" segment febds "${sa[@]}" --device "$dev" "$@" 2> "$tag-err3.txt"
}
same() {  # same TAG: every output of TAG equals the reference's byte for byte
  local k f
  for k in 0 1 2 3 4 5 6; do
    for f in g$k.nii m$k.png s$k.png; do cmp -s "ref-$f" "$1-$f" || { echo "    differs: $1-$f"; return 1; }; done
  done
}

run ref cpu --no-overlap; rc=$?
check "reference: one CPU device, serial" "[ $rc -eq 0 ] && [ -s ref-g6.nii ] && [ -s ref-s6.png ]"
run two cpu,cpu; rc=$?
check "--device cpu,cpu: outputs byte-identical to --device cpu" "[ $rc -eq 0 ] && same two"
check "summary names the 2 workers" "grep -q 'device requested cpu,cpu (2 workers: cpu,cpu), used cpu, no fallback' two-err1.txt"
check "stage line: images per worker" "grep -qE 'images per worker: cpu [0-9]+, cpu [0-9]+\)' two-err1.txt"
run three cpu,cpu,cpu --memory-limit 200K; rc=$?
check "3 workers, --memory-limit 200K (about two images): identical" "[ $rc -eq 0 ] && same three && grep -q 'limit 0.20 MiB' three-err1.txt"
run ovl cpu; rc=$?
check "one device with overlapped reading/writing: identical" "[ $rc -eq 0 ] && same ovl && grep -q 'stages (overlapped)' ovl-err1.txt"
run nov cpu,cpu --no-overlap --threads 1; rc=$?
check "2 workers without overlap: identical" "[ $rc -eq 0 ] && same nov && grep -q 'stages (no overlap)' nov-err1.txt"
check "progress lines in input order" "grep -o '[0-9]/7 ovl-g[0-9].nii' ovl-err1.txt | tr '\n' ' ' | grep -q '^1/7 ovl-g0.nii 2/7 ovl-g1.nii 3/7 ovl-g2.nii 4/7 ovl-g3.nii 5/7 ovl-g4.nii 6/7 ovl-g5.nii 7/7 ovl-g6.nii'"

# cuda:all: on a machine without a usable GPU, the CPU with the reason in the summary
run all cuda:all; rc=$?
if grep -q 'used cuda' all-err1.txt; then
  check "cuda:all on the GPUs: runs" "[ $rc -eq 0 ]"
else
  check "cuda:all without a GPU: CPU results equal to cpu" "[ $rc -eq 0 ] && same all"
  check "cuda:all without a GPU: the reason in the summary" \
    "grep -q 'device requested cuda:all (1 worker: cpu), used cpu, fallback: cuda:all: no usable CUDA device (' all-err1.txt && grep -q 'fallback: cuda:all: no usable CUDA device' all-err3.txt"
fi
# a GPU worker next to a CPU worker: the GPU images fall back (or run there), none is lost
"$bin" filter gaussian in0.png mix0.nii in1.png mix1.nii in2.png mix2.nii --sigma 2.5 --device cuda:0,cpu 2> err.txt; rc=$?
check "cuda:0,cpu: every image written" "[ $rc -eq 0 ] && [ -s mix0.nii ] && [ -s mix1.nii ] && [ -s mix2.nii ]"
if ! grep -q 'used .*cuda' err.txt; then
  check "cuda:0,cpu without a GPU: identical to cpu" "cmp -s mix0.nii ref-g0.nii && cmp -s mix2.nii ref-g2.nii"
fi

# errors: before any work, nothing written
"$bin" filter gaussian in0.png e1.nii --device cpu,,cpu 2> err.txt; rc=$?
check "bad device list: usage error naming the forms" "[ $rc -eq 2 ] && grep -q \"device is 'cpu,,cpu', expected cpu, cuda or cuda:N, cuda:all\" err.txt && [ ! -e e1.nii ]"
"$bin" segment febds in0.png e2.png --memory-limit 12Q 2> err.txt; rc=$?
check "bad --memory-limit: usage error" "[ $rc -eq 2 ] && grep -q \"memory-limit is '12Q', expected a size such as 512M\" err.txt && [ ! -e e2.png ]"
"$bin" filter gaussian in0.png e3.nii small.png e4.nii in1.png e5.nii --device cpu,cpu 2> err.txt; rc=$?
check "mismatched shapes with 2 workers: nothing written" "[ $rc -ne 0 ] && grep -q 'small.png is 8x8' err.txt && [ ! -e e3.nii ] && [ ! -e e5.nii ]"
printf 'not a png' > bad.png
"$bin" filter gaussian in0.png f0.nii in1.png f1.nii bad.png f2.nii in2.png f3.nii --device cpu,cpu 2> err.txt; rc=$?
check "unreadable input: error naming it, exit 1" "[ $rc -eq 1 ] && grep -q 'bad.png' err.txt && [ ! -e f2.nii ]"
exit $fail
