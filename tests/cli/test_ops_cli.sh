#!/usr/bin/env bash
# lumen filter / lumen segment over the op registry (include/lumen/ops.h): old and new names of one
# op give the same bytes, options are read by their descriptors (aliases, --no-NAME), range errors
# name the option, its value and the range, --help lists the registry's ops.
set -u
. "$(dirname "$0")/lib.sh"
need_python3

"$py" - <<'PYEOF' || { echo "FAIL: making the test image"; exit 1; }
import os, sys
sys.path.insert(0, os.environ['LUMEN_CLI_TESTS'])
from imagefiles import png_write
W = H = 40
png_write('a.png', W, H, [((x * 5 + y * 3) % 97) * 2 + (60 if 14 <= x < 24 and 12 <= y < 22 else 0)
                          for y in range(H) for x in range(W)], 8)
PYEOF

"$bin" filter log a.png l1.nii -q && "$bin" filter gaussian_laplace a.png l2.nii -q && "$bin" filter laplace a.png l3.nii -q
check "log, gaussian_laplace and laplace: one op, the same bytes" "cmp -s l1.nii l2.nii && cmp -s l1.nii l3.nii"
"$bin" filter erosion a.png e1.nii --radius 2 -q && "$bin" filter erode a.png e2.nii --radius 2 -q
check "erosion = erode" "cmp -s e1.nii e2.nii"
"$bin" filter tophat a.png t1.nii -q && "$bin" filter white_tophat a.png t2.nii -q
check "filter tophat = white_tophat (the morphology)" "cmp -s t1.nii t2.nii"
"$bin" filter dog a.png d1.nii --sigma 1.5 -q && "$bin" filter dog a.png d2.nii --low-sigma 1.5 -q
check "dog --sigma is --low-sigma" "cmp -s d1.nii d2.nii"
"$bin" filter abs a.png b1.nii -q && "$bin" filter absolute a.png b2.nii -q
check "absolute = abs" "cmp -s b1.nii b2.nii"

"$bin" filter erode a.png x1.nii --radius -1 2>err.txt; rc=$?
check "range error names option, value and range" "[ $rc -eq 2 ] && grep -q -- '--radius is -1, expected 0..1000' err.txt && [ ! -e x1.nii ]"
"$bin" filter otsu a.png x2.png --bins 2.5 2>err.txt; rc=$?
check "an integer option refuses 2.5" "[ $rc -eq 2 ] && grep -q -- '--bins expects an integer' err.txt"
"$bin" filter gamma a.png x3.nii --sigma 2 2>err.txt; rc=$?
check "an option of another op is refused, naming the op" "[ $rc -eq 2 ] && grep -q \"unknown option '--sigma' for gamma\" err.txt"
"$bin" filter median a.png x4.nii --mode sideways 2>err.txt; rc=$?
check "an enum lists its names" "[ $rc -eq 2 ] && grep -q 'expected reflect, nearest, constant, wrap or mirror' err.txt"

"$bin" segment febds a.png f1.png --no-fill-holes -q; rc1=$?
"$bin" segment febds a.png f2.png --alpha 1 -q; rc2=$?
check "segment: --no-fill-holes and the alias --alpha" "[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ -s f1.png ] && [ -s f2.png ]"
"$bin" segment region-grow a.png r.png --seed-point 18,16 --threshold 100 -q; rc=$?
check "segment region-grow with a seed point" "[ $rc -eq 0 ] && [ -s r.png ]"
"$bin" segment pfcm a.png p.png --tau 2 2>err.txt; rc=$?
check "segment range error: '--tau: tau is 2, expected in (0, 1]'" "[ $rc -eq 2 ] && grep -qF -- '--tau: tau is 2, expected in (0, 1]' err.txt"

"$bin" filter --help > h1.txt; "$bin" segment --help > h2.txt
check "filter --help: every filter of the registry with aliases and defaults" \
  "grep -q 'white_tophat (tophat)' h1.txt && grep -q 'gaussian_laplace (log laplace)' h1.txt && grep -q -- '--radius R (4)' h1.txt"
check "segment --help: --no-fill-holes for febds, seeds for region_grow" \
  "grep -q -- '--no-fill-holes' h2.txt && grep -q -- '--seeds X,Y\[,Z\]' h2.txt"
exit $fail
