#!/usr/bin/env bash
# The MEX interface (matlab/) under Octave: builds lumen_fit and lumen_cuda_available with
# `mkoctfile --mex` against the shared library beside LUMEN_BIN, builds the C reference program
# (python/tests/fit_reference.c) and runs matlab/tests/test_lumen_mex.m in octave-cli: results
# equal the C API bit for bit, bad arguments raise Octave errors with identifiers.
# Exit 77 (skip) when octave-cli or mkoctfile is missing (scripts/setup.sh installs octave and
# liboctave-dev).
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
src=${LUMEN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bdir=$(cd "$(dirname "$bin")" && pwd)
OCT=$(command -v octave-cli || command -v octave || true)
MKOCT=$(command -v mkoctfile || true)
if [ -z "$OCT" ] || [ -z "$MKOCT" ]; then
  echo "SKIP: octave-cli or mkoctfile not found (scripts/setup.sh installs octave liboctave-dev)"; exit 77
fi
if [ ! -f "$bdir/liblumen.so" ]; then echo "FAIL: no shared library at $bdir/liblumen.so"; exit 1; fi
if command -v ldd >/dev/null 2>&1 && ldd "$bdir/liblumen.so" 2>/dev/null | grep -q 'libasan'; then
  echo "SKIP: the library is built with -fsanitize=address, which cannot be loaded into an uninstrumented interpreter"; exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lumen-oct.XXXXXX"); trap 'rm -rf "$tmp"' EXIT

if ! bash "$src/matlab/build_mex.sh" --octave --lib "$bdir" --include "$src/include" --out "$tmp/mex" \
     > "$tmp/build.log" 2>&1; then
  echo "FAIL: building the MEX files"; cat "$tmp/build.log"; exit 1
fi
echo "ok: mkoctfile --mex lumen_fit lumen_cuda_available"

cc=${CC:-$(command -v cc || command -v gcc || true)}
ref=""
if [ -n "$cc" ] && "$cc" -std=c11 -O1 -o "$tmp/fit_reference" "$src/python/tests/fit_reference.c" \
     -I"$src/include" "$bdir/liblumen.so" -Wl,-rpath,"$bdir" -lm > "$tmp/cc.log" 2>&1; then
  ref=$tmp/fit_reference
else
  echo "FAIL: cannot build the C reference program"; cat "$tmp/cc.log" 2>/dev/null; exit 1
fi

expect_cuda=0
"$bin" backends 2>/dev/null | grep -qE '^cuda-driver +PASS' && expect_cuda=1

cd "$tmp/mex" || exit 1
LUMEN_FIT_REFERENCE=$ref LUMEN_EXPECT_CUDA=$expect_cuda HOME=$tmp \
  "$OCT" --no-gui --norc --no-history --quiet \
  --eval "addpath('$tmp/mex'); addpath('$src/matlab/tests'); test_lumen_mex(); exit(0);" > "$tmp/octave.log" 2>&1
rc=$?
grep -v "ignoring const execution_exception" "$tmp/octave.log"
if [ $rc -ne 0 ] || grep -q '^FAIL' "$tmp/octave.log" || ! grep -q '^0 failure(s)' "$tmp/octave.log"; then
  echo "FAIL: Octave MEX tests (exit $rc)"; exit 1
fi
exit 0
