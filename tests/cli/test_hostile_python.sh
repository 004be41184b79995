#!/usr/bin/env bash
# The hostile suite's Python in-process run (issue 40 acceptance): mutated DICOM, PNG and NIfTI
# files read in ONE Python process after other lumen calls (tests/cli/hostile_mutants.py), through
# lumen.read_image, lumen.process_images and lumen.medical_image: no process death (a decoder's
# abort used to end the interpreter: issue 40 item 1), no exception but lumen's (or ValueError,
# OSError, TypeError). LUMEN_HOSTILE_MUTANTS sets the count (default 1500, about 10-20 s).
# Skips (77) without Debian's python3 with numpy, or with a sanitizer build of the library (it cannot
# be loaded into an uninstrumented interpreter).
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
src=${LUMEN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
lib=$(cd "$(dirname "$bin")" && pwd)/liblumen.so
py=/usr/bin/python3
"$py" -c 'import numpy' 2>/dev/null || { echo "SKIP: $py lacks numpy (scripts/setup.sh installs python3-numpy)"; exit 77; }
[ -f "$lib" ] || { echo "FAIL: no shared library at $lib"; exit 1; }
if ldd "$lib" 2>/dev/null | grep -q libasan; then echo "SKIP: a sanitizer build of liblumen.so"; exit 77; fi
. "$(dirname "$0")/lib.sh"
count=${LUMEN_HOSTILE_MUTANTS:-1500}
mkdir -p mut
LUMEN_LIBRARY="$lib" PYTHONPATH="$src/python" "$py" -W ignore "$LUMEN_CLI_TESTS/hostile_mutants.py" mut "$count" 40 \
  > mut.out 2> mut.err
rc=$?
cat mut.out
check "$count mutants read in one Python process: it lives (exit $rc), only lumen's errors raised" \
  "[ $rc -eq 0 ] && grep -q '^mutants $count: read [0-9]*, refused [0-9]*, other exceptions 0' mut.out" ||
  { tail -5 mut.err; }
check "  some read, some refused (the mutations reach both outcomes)" \
  "grep -Eq 'read [1-9][0-9]*, refused [1-9][0-9]*' mut.out"
# a decoder that aborts (the test hook LUMEN_TEST_DICOM_CHILD_ABORT, in test builds): each entry point
# raises for each compressed file and the interpreter lives (issue 40 item 1: it died of SIGABRT)
if grep -q 'LUMEN_TEST_HOOKS:BOOL=ON' "$(dirname "$lib")/CMakeCache.txt" 2>/dev/null &&
   pyd=$("$py" -c 'import pydicom, os; print(os.path.join(os.path.dirname(pydicom.__file__), "data", "test_files"))' 2>/dev/null); then
  LUMEN_TEST_DICOM_CHILD_ABORT=1 LUMEN_LIBRARY="$lib" PYTHONPATH="$src/python" "$py" -W ignore - "$pyd" > ab.out 2>&1 <<'PYEOF'
import os, sys, threading
import numpy as np
import lumen
from lumen.medical_image import Image
lumen.gaussian(np.ones((64, 64), np.float32), 1.0)
threading.Thread(target=threading.Event().wait, daemon=True).start()
raised = 0
for name in ("MR_small_RLE.dcm", "MR_small_jpeg_ls_lossless.dcm", "MR_small_jp2klossless.dcm", "JPEG-lossy.dcm"):
    path = os.path.join(sys.argv[1], name)
    for how in (lambda: lumen.read_image(path), lambda: lumen.process_images([path], "gaussian"),
                lambda: lumen.process_images([path, path], "median", size=3, devices="cpu,cpu"),
                lambda: Image.from_file(path).pixel_data):
        try:
            how()
        except lumen.LumenError as e:
            raised += "decoder aborted" in str(e)
print("raised", raised)
PYEOF
  prc=$?
  check "a decoder that aborts: 16 reads through read_image, process_images (1 and 2 workers) and medical_image raise, the interpreter lives" \
    "[ $prc -eq 0 ] && grep -q '^raised 16$' ab.out" || cat ab.out
fi
exit $fail
