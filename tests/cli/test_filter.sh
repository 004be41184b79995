#!/usr/bin/env bash
# lumen filter: every op runs on PNG / NIfTI (2-D, 3-D) with its options; values of a few ops
# checked; batches, --overwrite, help, bad input.
set -u
. "$(dirname "$0")/lib.sh"
need_python3
need_command filter

cat > mk.py <<'PYEOF'
import os, sys
from imagefiles import png_write, nii_write, nii_read
if sys.argv[1] == 'make':
    W = H = 48
    img = [((x * 5 + y * 3) % 97) * 20 + (800 if 20 <= x < 28 and 20 <= y < 28 else 0) for y in range(H) for x in range(W)]
    png_write('a16.png', W, H, img, 16)
    png_write('b16.png', W, H, img[::-1], 16)
    png_write('a8.png', W, H, [v // 16 for v in img], 8)
    png_write('tiny.png', 8, 8, [0] * 64, 8)
    nii_write('a.nii.gz', [W, H], [float(v) for v in img])
    nii_write('v.nii', [16, 16, 4], [float((i * 7) % 13) for i in range(16 * 16 * 4)])
    nii_write('delta.nii', [9, 9], [100.0 if i == 40 else 0.0 for i in range(81)])
    nii_write('cplx.nii', [4, 4], [1.0] * 16, 32)
elif sys.argv[1] == 'info':
    dims, dt, v = nii_read(sys.argv[2]); print('x'.join(map(str, dims)), dt, '%.6g' % sum(v), '%.6g' % max(v), '%.6g' % v[int(sys.argv[3]) if len(sys.argv) > 3 else 0])
PYEOF
"$py" mk.py make || { echo "FAIL: making the test images"; exit 1; }

"$bin" filter gaussian delta.nii g.nii --sigma 1 --mode constant 2>err.txt; rc=$?
read dims dt sum mx centre < <("$py" mk.py info g.nii 40)
check "gaussian of a delta: float32, sum kept, centre 100 g(0)^2" \
  "[ $rc -eq 0 ] && [ \"$dims\" = 9x9 ] && [ $dt = 16 ] && awk -v s=$sum -v c=$centre 'BEGIN{exit !(s > 99.9 && s < 100.1 && c > 15.8 && c < 16.0)}'"
check "summary line" "grep -qE '^lumen filter: gaussian, 1 image: device requested cpu, used cpu, no fallback, precision full' err.txt"
"$bin" filter gaussian a.nii.gz g.nii.gz --sigma 2 --mode reflect 2>/dev/null; rc=$?
check "gaussian NIfTI .nii.gz round trip" "[ $rc -eq 0 ] && \"$py\" mk.py info g.nii.gz | grep -q '^48x48 16 '"
"$bin" filter median a16.png m.png --size 5 2>/dev/null; rc=$?
check "median of a 16-bit PNG writes a PNG" "[ $rc -eq 0 ] && [ -s m.png ]"
"$bin" filter gaussian v.nii gv.nii --sigma 1 --spatial-dims 2 --precision half 2>err.txt; rc=$?
check "3-D per-slice gaussian at half precision (stored float32 in NIfTI)" \
  "[ $rc -eq 0 ] && \"$py\" mk.py info gv.nii | grep -q '^16x16x4 16 ' && grep -q 'precision half' err.txt"

ops_png="dog log median gamma contrast bandpass otsu sauvola local_variance variance_binarize erode dilate open close tophat fill_holes label largest_component"
for op in $ops_png; do
  extra=""
  case $op in sauvola) extra="--window 5";; gamma) extra="--gamma 1.25";; esac
  "$bin" filter $op a16.png out_$op.nii.gz $extra 2>err.txt; rc=$?
  if [ $op = bandpass ] && grep -q "not_built\|FFTW" err.txt; then echo "skip: bandpass (no FFTW)"; continue; fi
  check "$op runs (PNG in, NIfTI out)" "[ $rc -eq 0 ] && [ -s out_$op.nii.gz ]"
done
"$bin" filter otsu a16.png mask.png 2>err.txt; rc=$?
check "otsu prints the threshold, writes an 8-bit mask" "[ $rc -eq 0 ] && grep -q 'threshold' err.txt && [ -s mask.png ]"
check "otsu mask as uint8 NIfTI (0/1)" "\"$py\" mk.py info out_otsu.nii.gz | awk '{exit !(\$2 == 2 && \$4 == 1)}'"
"$bin" filter close a16.png c.png --element square --size 3 --binary 2>/dev/null; rc=$?
check "binary closing with a square" "[ $rc -eq 0 ] && [ -s c.png ]"
"$bin" filter convolve delta.nii cv.nii --kernel 1,2,1 2>/dev/null; rc=$?
check "convolve with a 1-D kernel" "[ $rc -eq 0 ] && \"$py\" mk.py info cv.nii 40 | awk '{exit !(\$3 == 400 && \$5 == 200)}'"
refused "kernel size mismatch" 2 'expected 4' filter convolve delta.nii cv2.nii --kernel 1,2,1 --kernel-dims 2,2
"$bin" filter entropy a8.png > ent.txt 2>/dev/null; rc=$?
check "entropy prints bits" "[ $rc -eq 0 ] && grep -q 'a8.png: entropy' ent.txt"
"$bin" filter mutual_information a16.png b16.png > mi.txt 2>/dev/null; rc=$?
check "mutual information of two images" "[ $rc -eq 0 ] && grep -q 'mutual information' mi.txt"
"$bin" filter variance a.nii.gz > var.txt 2>/dev/null; rc=$?
check "variance prints mean and variance" "[ $rc -eq 0 ] && grep -q 'mean .* variance' var.txt"

printf 'a16.png o1.png\nb16.png o2.png\n' > list.txt
"$bin" filter gaussian --batch list.txt --sigma 1.5 2>err.txt; rc=$?
check "batch list" "[ $rc -eq 0 ] && [ -s o1.png ] && [ -s o2.png ] && grep -q '2 images' err.txt"
"$bin" filter gaussian a16.png p1.png b16.png p2.png -q 2>err.txt; rc=$?
check "several IN OUT pairs, -q silent" "[ $rc -eq 0 ] && [ -s p2.png ] && [ ! -s err.txt ]"
"$bin" filter gaussian a16.png q1.png tiny.png q2.png 2>err.txt; rc=$?
check "mismatched batch shapes" "[ $rc -ne 0 ] && grep -q 'tiny.png is 8x8' err.txt && [ ! -f q1.png ]"
refused "--overwrite refusal" '!0' 'o1.png exists' filter gaussian a16.png o1.png
"$bin" filter gaussian a16.png o1.png --overwrite 2>/dev/null; rc=$?
check "--overwrite" "[ $rc -eq 0 ]"

"$bin" filter gaussian a16.png x.nii --sigma 0 2>err.txt; rc=$?
check "zero sigma: names the option" "[ $rc -ne 0 ] && grep -q 'sigma is 0' err.txt && [ ! -f x.nii ]"
refused "negative sigma" '!0' 'sigma is -1' filter gaussian a16.png x.nii --sigma -1
refused "even median size" '!0' 'size is 4' filter median a16.png x.nii --size 4
refused "non-numeric option value" 2 '--sigma expects a number' filter gaussian a16.png x.nii --sigma abc
refused "unknown mode" 2 'expected reflect, nearest' filter gaussian a16.png x.nii --mode bounce
"$bin" filter blur a16.png x.nii 2>err.txt; rc=$?
check "unknown op lists the ops" "[ $rc -eq 2 ] && grep -q \"unknown op 'blur'\" err.txt && grep -q 'gaussian' err.txt"
refused "unsupported data type (complex NIfTI) names the file" 1 'cplx.nii' filter gaussian cplx.nii x.nii
: > empty.nii
refused "empty file names the file" 1 'empty.nii' filter gaussian empty.nii x.nii
refused "missing output" 2 '' filter gaussian a16.png
refused "bad precision" 2 'expected full, half or bfloat16' filter gaussian a16.png x.nii --precision quarter
"$bin" filter gaussian a16.png cu.nii --device cuda:0 2>err.txt; rc=$?
check "--device cuda:0: summary with the fallback reason (or the GPU)" \
  "[ $rc -eq 0 ] && grep -qE 'device requested cuda:0, used (cpu, fallback: .+|cuda:0)' err.txt"

# largest_component keeps the larger of two blobs (9 and 20 pixels) as a 0/255 mask, and is not label
# (until the CLI's op table was rewritten, "largest_component" ran label: same image, "labels 2")
cat > blobs.py <<'PYEOF'
import os, sys
from imagefiles import png_write, png_read
w, h = 16, 12
small = {(x, y) for y in range(1, 4) for x in range(1, 4)}
large = {(x, y) for y in range(5, 10) for x in range(8, 12)}
if sys.argv[1] == 'make':
    png_write('blobs.png', w, h, [255 if (x, y) in small | large else 0 for y in range(h) for x in range(w)], 8)
else:
    W, H, bits, v = png_read(sys.argv[2])
    got = {(i % w, i // w) for i, p in enumerate(v) if p}
    assert (W, H, bits) == (w, h, 8) and got == large and set(v) == {0, 255}, (W, H, bits, sorted(got), set(v))
PYEOF
python3 blobs.py make
"$bin" filter largest_component blobs.png lc.png 2> err.txt; rc=$?
check "largest_component: exit 0" "[ $rc -eq 0 ]" || cat err.txt
check "largest_component: the 20-pixel blob alone, 0/255" "python3 blobs.py check lc.png"
check "largest_component: no label count or threshold printed" "! grep -qE 'labels|threshold' err.txt"

"$bin" filter --help > help.txt; rc=$?
check "--help lists every op with defaults" \
  "[ $rc -eq 0 ] && for o in gaussian dog median gamma contrast convolve bandpass otsu sauvola local_variance variance_binarize tophat fill_holes label largest_component entropy mutual_information variance; do grep -q \$o help.txt || exit 1; done && grep -q -- '--sigma S (1)' help.txt"
exit $fail
