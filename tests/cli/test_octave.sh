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

# build_mex.sh --help: the header comment only (it ended with a stray "set -u")
bash "$src/matlab/build_mex.sh" --help > "$tmp/help.txt"; hrc=$?
if [ $hrc -eq 0 ] && grep -q -- '--lib DIR' "$tmp/help.txt" && ! grep -q 'set -u' "$tmp/help.txt" && [ "$(tail -1 "$tmp/help.txt")" = "1 when a build failed." ]; then
  echo "ok: build_mex.sh --help"
else
  echo "FAIL: build_mex.sh --help (exit $hrc):"; cat "$tmp/help.txt"; fail_help=1
fi
# `help lumen_fit` / `help lumen_cuda_available` in Octave: the documentation, not "not documented"
HOME=$tmp "$OCT" --no-gui --norc --no-history --quiet \
  --eval "addpath('$tmp/mex'); help lumen_fit; help lumen_cuda_available; disp(which('lumen_fit'))" > "$tmp/ohelp.txt" 2>&1
if grep -q 'user_info  *DCE models: \[times in minutes; plasma AIF in mM\]' "$tmp/ohelp.txt" && grep -q 'device_count' "$tmp/ohelp.txt" \
   && ! grep -qi 'not documented' "$tmp/ohelp.txt" && grep -q 'lumen_fit\.mex$' "$tmp/ohelp.txt"; then
  echo "ok: Octave help lumen_fit / lumen_cuda_available (and lumen_fit runs the MEX file)"
else
  echo "FAIL: Octave help lumen_fit:"; cat "$tmp/ohelp.txt"; fail_help=1
fi

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
[ "${fail_help:-0}" -eq 0 ] || exit 1
exit 0
