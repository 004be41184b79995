#!/usr/bin/env bash
# docs/ADDING_A_FILTER.md's promise, held mechanically: a new CPU filter is one file in
# src/filter/ops/ (plus its test and the regenerated docs row), and nothing central is edited.
# Following the doc's steps in a scratch folder, this copies the example op (clip.c) as
# throwaway.c, lists the folder with the build's own generator (cmake/LumenNativeOps.cmake),
# compiles the UNCHANGED src/filter/op_table.c against that list and the new file with the
# library's flags, relinks lumen and liblumen.so with the build's own link lines, and checks that
# the op appears on its own: `lumen filter --help`, `lumen filter throwaway` (values = clip's),
# `lumen filter --batch`, lumen.run_op / lumen.process_images in Python. If an op needed an edit
# of any other file (a central list, the dispatcher, a header), throwaway would be missing and
# this fails. Needs a Makefile build tree (flags.make, link.txt); about 10 s.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
src=${LUMEN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=$(cd "$(dirname "$bin")" && pwd)
flags=$build/CMakeFiles/lumen_objects.dir/flags.make
for f in "$flags" "$build/CMakeFiles/lumen.dir/link.txt" "$build/CMakeFiles/lumen_shared.dir/link.txt"; do
  [ -f "$f" ] || { echo "SKIP: $f missing (not a Makefile build tree of lumen)"; exit 77; }
done
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
cmake=$(sed -n 's/^CMAKE_COMMAND:[A-Z]*=//p' "$build/CMakeCache.txt")
. "$(dirname "$0")/lib.sh"
mkdir ops gen out

# step 1 of the doc: the example op copied under a new name, its name and alias replaced
cp "$src"/src/filter/ops/*.c ops/
sed -e 's/clip/throwaway/g' -e 's/"clamp"/"throwaway_alias"/' "$src/src/filter/ops/clip.c" > ops/throwaway.c
# what CMake does with the folder at configure time (CMakeLists.txt): the generated list
"$cmake" -DOPS_DIR="$PWD/ops" -DOUT="$PWD/gen/lumen_native_ops.inc" -P "$src/cmake/LumenNativeOps.cmake"
check "the generator lists the new file" "grep -qx 'LUMEN_NATIVE_OP(throwaway)' gen/lumen_native_ops.inc"

# the build of the two objects that change: the unchanged op_table.c, the new op file
# a field of flags.make as the compiler gets it: make's \" (a CUDA build's string defines) is "
field() { sed -n "s/^$1 = //p" "$flags" | sed 's/\\"/"/g'; }
read -r -a cflags <<< "$(field C_DEFINES) -I$PWD/gen $(field C_INCLUDES) $(field C_FLAGS)"
"$cc" "${cflags[@]}" -c "$src/src/filter/op_table.c" -o op_table.o 2> cc.txt &&
  "$cc" "${cflags[@]}" -c ops/throwaway.c -o throwaway.o 2>> cc.txt
check "op_table.c (unchanged) and throwaway.c compile" "[ -s op_table.o ] && [ -s throwaway.o ]" || cat cc.txt
# the build's link lines with those objects: first on the executable's (ahead of liblumen.a), in
# place of op_table's on the shared library's
exe_link=$(sed "s| -o lumen | $PWD/op_table.o $PWD/throwaway.o -o $PWD/out/lumen |" "$build/CMakeFiles/lumen.dir/link.txt")
so_link=$(sed -e "s| CMakeFiles/lumen_objects.dir/src/filter/op_table.c.o | $PWD/op_table.o $PWD/throwaway.o |" \
  -e "s| -o liblumen.so[.0-9]* | -o $PWD/out/liblumen.so |" "$build/CMakeFiles/lumen_shared.dir/link.txt")
# a build that lists the objects in a response file (@CMakeFiles/lumen_shared.dir/objects1: the
# CUDA build) gets a copy with the same replacement
for rsp in $(grep -o '@[^ ]*' <<<"$so_link" || true); do
  f=$build/${rsp#@}
  if [ -f "$f" ] && grep -q 'src/filter/op_table.c.o' "$f"; then
    sed "s|[^ ]*lumen_objects.dir/src/filter/op_table.c.o|$PWD/op_table.o $PWD/throwaway.o|" "$f" > objects.rsp
    so_link=${so_link//$rsp/@$PWD/objects.rsp}
  fi
done
(cd "$build" && eval "$exe_link" && eval "$so_link") > link.txt 2>&1
check "lumen and liblumen.so relink" "[ -x out/lumen ] && [ -s out/liblumen.so ]" || { cat link.txt; exit 1; }
new=$PWD/out/lumen

# the op on its own in the command line: listed, run by name and alias, in batches
check "the build's lumen has no throwaway (the scratch files are all it takes)" \
  "! '$bin' filter --help 2>&1 | grep -q throwaway"
check "lumen filter --help lists it" "'$new' filter --help 2>&1 | grep -q 'throwaway (throwaway_alias)'"
python3 - <<'PYEOF' || { echo "FAIL: making the test image"; exit 1; }
import os, sys
sys.path.insert(0, os.environ['LUMEN_CLI_TESTS'])
from imagefiles import png_write
png_write('a.png', 23, 17, [(x * 37 + y * 11) % 256 for y in range(17) for x in range(23)], 8)
PYEOF
"$bin" filter clip a.png clip.nii --lo 50 --hi 200.5 -q
"$new" filter throwaway a.png t1.nii --lo 50 --hi 200.5 -q
"$new" filter throwaway_alias a.png t2.nii --min 50 --max 200.5 -q
printf 'a.png b1.nii\na.png b2.nii\n' > list.txt
"$new" filter throwaway --batch list.txt --lo 50 --hi 200.5 -q
for f in t1 t2 b1 b2; do check "lumen filter throwaway ($f) = lumen filter clip" "cmp -s clip.nii $f.nii"; done
check "a range error names the new op" \
  "'$new' filter throwaway a.png e.nii --lo 5 --hi 2 2>&1 | grep -q 'throwaway: lo is 5, expected <= hi (2)'"

# and in Python, through the relinked library
PY=${LUMEN_TEST_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3 || true)
asan=0 # a -fsanitize=address library cannot be loaded into an uninstrumented interpreter
command -v ldd > /dev/null 2>&1 && ldd out/liblumen.so 2>/dev/null | grep -q libasan && asan=1
if [ $asan = 0 ] && [ -n "$PY" ] && "$PY" -c 'import numpy' 2>/dev/null; then
  LUMEN_LIBRARY=$PWD/out/liblumen.so PYTHONPATH="$src/python" PYTHONDONTWRITEBYTECODE=1 "$PY" - <<'PYEOF' > py.txt 2>&1
import numpy as np
import lumen
a = (np.arange(40 * 30, dtype=np.float32).reshape(30, 40) - 600.0) / 7.0
a[3, 4] = np.nan
assert "throwaway" in [o["name"] for o in lumen.op_registry()]
r = lumen.run_op("throwaway_alias", a, lo=-20.0, hi=33.25, nan_value=0)
assert np.array_equal(r, np.where(np.isnan(a), 0, np.clip(a, np.float32(-20), np.float32(33.25))).astype(np.float32))
for r in lumen.process_images([a, 2 * a], "throwaway", devices="cpu", lo=-20.0, hi=33.25):
    assert r.dtype == np.float32 and np.nanmin(r) >= -20 and np.nanmax(r) <= 33.25
print("python ok")
PYEOF
  check "lumen.run_op / process_images find it" "grep -q 'python ok' py.txt" || cat py.txt
else
  echo "SKIP: no python3 with numpy, or an ASan library, for the Python part (the command-line part ran)"
  [ "$fail" = 0 ] && exit 77
fi
exit $fail
