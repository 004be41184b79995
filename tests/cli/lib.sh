# Shared start of the CLI tests, sourced right after `set -u` and the script's own preconditions:
# fail=0, LUMEN_CLI_TESTS (this folder, exported), a scratch folder $tmp that becomes the working
# directory and is removed on exit (made writable first: some tests write-protect files in it),
# and `check NAME CONDITION`, which prints
# ok/FAIL and sets fail=1 when the (eval'd) condition is false; it then returns 1, so that
# `check ... || cat err.txt` shows the error of a failing check.
fail=0
# bin: the lumen under test, LUMEN_BIN, unless the test set bin first (test_layers.sh runs none)
bin=${bin:-${LUMEN_BIN:?LUMEN_BIN not set}}
# the folder of the CLI tests (their shared Python helpers, e.g. imagefiles.py), before the cd below
LUMEN_CLI_TESTS=$(cd "$(dirname "$0")" && pwd)
export LUMEN_CLI_TESTS
# the test's own Python scripts import those helpers without a sys.path line
export PYTHONPATH="$LUMEN_CLI_TESTS${PYTHONPATH:+:$PYTHONPATH}"
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; return 1; fi; }
# skip_without_dicom ERRFILE: after a lumen command failed, exit 77 (skip) when its stderr says this
# lumen was built without DICOM support (no GDCM); otherwise return
skip_without_dicom() {
  if grep -q "built without DICOM support" "$1"; then echo "lumen built without DICOM (GDCM): skipped"; exit 77; fi
}
# need_test_hooks: the fault-injection hooks (LUMEN_TEST_* variables) are compiled into test builds
# only; against another build the test fails, saying so, instead of passing without them.
need_test_hooks() {
  "$bin" --version 2>/dev/null | grep -q "test hooks" && return 0
  echo "FAIL: $bin has no test hooks (configure with -DLUMEN_TEST_HOOKS=ON; make test does)"
  exit 1
}
# same_outputs DIR1 DIR2: every map, sidecar (not the run log) and table of DIR1 equal in DIR2, and
# more than 10 of them; names the ones that differ.
same_outputs() {
  local r=0 n=0
  for f in "$1"/*.nii.gz "$1"/*.tsv "$1"/*.json; do
    case $f in *runlog*) continue ;; esac
    n=$((n + 1))
    cmp -s "$f" "$2/$(basename "$f")" || { echo "  differs: $(basename "$f")"; r=1; }
  done
  [ "$n" -gt 10 ] || { echo "  only $n files"; r=1; }
  return $r
}
# demo_phantom: the demo phantom (lumen dce-demo) in ./demo; P, T and M name its DCE series, T1 map
# and mask. A failing dce-demo fails the test (it is never a reason to skip).
demo_phantom() {
  "$bin" dce-demo --out demo -q > /dev/null 2> demo_err.txt || { cat demo_err.txt; echo "FAIL: dce-demo"; exit 1; }
  P=demo/sub-demo_dce.nii.gz; T=demo/sub-demo_T1map.nii.gz; M=demo/sub-demo_mask.nii.gz
}
# need_python3: py, the python3 on the PATH; without one the test is skipped (77).
need_python3() {
  py=$(command -v python3 || true)
  [ -n "$py" ] || { echo "python3 not found: skipped"; exit 77; }
}
# need_command NAME: lumen has the command NAME; a build without it fails the test.
need_command() {
  "$bin" "$1" --help >/dev/null 2>&1 || { echo "lumen built without the $1 command"; exit 1; }
}
# need_dicom_series_inputs: py=/usr/bin/python3 with Debian's pydicom and numpy, and q6, the QIBA
# v6 Tofts series of the reference data; without either the test is skipped (77).
need_dicom_series_inputs() {
  py=/usr/bin/python3
  "$py" -c 'import pydicom, numpy' 2>/dev/null ||
    { echo "Debian python3-pydicom or python3-numpy missing (scripts/setup.sh): skipped"; exit 77; }
  q6=${LUMEN_REFDATA:-${LUMEN_REFDATA_DEFAULT:-}}/qiba/v6_tofts/q6_dce.nii.gz
  [ -f "$q6" ] || { echo "reference data qiba/v6_tofts not found (LUMEN_REFDATA): skipped"; exit 77; }
}
# refused NAME STATUS WORDS ARG...: `lumen ARG...` exits with STATUS (a number, or '!0': any failure)
# and says WORDS on stderr (kept in err.txt; a grep pattern, '' when only the status counts)
refused() {
  local name=$1 status=$2 words=$3 rc ok=1
  shift 3
  "$bin" "$@" 2> err.txt
  rc=$?
  if [ "$status" = '!0' ]; then [ "$rc" -ne 0 ] || ok=0; else [ "$rc" -eq "$status" ] || ok=0; fi
  [ -z "$words" ] || grep -q -- "$words" err.txt || ok=0
  check "$name" "[ $ok -eq 1 ]"
}
