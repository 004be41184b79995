#!/usr/bin/env bash
# medical-image-std 0.8.2's own test suite against lumen.medical_image, and against the original.
# Not part of `make test`: it installs the suite's peers from PyPI into a throw-away venv.
#
#   tests/compat/run_medical_image_suite.sh [BUILD_DIR]        (default: build-cpu)
#
# Environment: PYTHON (a python3 with numpy; default /usr/bin/python3), MIS_WORK (work folder;
# default a new /tmp/mis-suite.*), MIS_VENV (reuse a venv made by an earlier run),
# MIS_WHEEL (the medical_image_std-0.8.2 wheel; default /tmp/mis/..., else `pip download`).
#
# Steps: venv --system-site-packages; pip installs torch (the CPU wheel index first, then PyPI),
# scipy, scikit-image, matplotlib, pandas, Pillow, requests, black (test_mc_algorithms imports
# it), pytest; mis_suite_prepare.py unpacks the wheel and rewrites the tests' imports
# (medical_image.tests -> mis_tests, medical_image -> lumen.medical_image) and writes the DICOM
# fixture; pytest runs them with PYTHONPATH=<repo>/python and LUMEN_LIBRARY=<build>/liblumen.so,
# then the unmodified tests against the original package; the counts are printed, and
# mis_suite_compare.py's per-test tables (exit status 1 when a test passing against the original
# does not pass against lumen; it is the script's exit status).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=$(cd "${1:-$REPO/build-cpu}" && pwd)
PY=${PYTHON:-/usr/bin/python3}
WORK=${MIS_WORK:-$(mktemp -d /tmp/mis-suite.XXXXXX)}
VENV=${MIS_VENV:-$WORK/venv}
WHEEL=${MIS_WHEEL:-/tmp/mis/medical_image_std-0.8.2-py3-none-any.whl}
mkdir -p "$WORK"
[ -f "$BUILD/liblumen.so" ] || { echo "no $BUILD/liblumen.so: build lumen first" >&2; exit 2; }

if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv --system-site-packages "$VENV" || exit 2
fi
VPY="$VENV/bin/python"
if ! "$VPY" -c "import torch" 2>/dev/null; then
    "$VPY" -m pip install -q --index-url https://download.pytorch.org/whl/cpu torch --timeout 30 --retries 1 ||
        "$VPY" -m pip install -q torch || echo "torch could not be installed: the torch tests will fail" >&2
fi
"$VPY" -m pip install -q "numpy>=1.26.4,<2.3" scipy scikit-image matplotlib pandas Pillow requests black pytest ||
    { echo "pip install failed" >&2; exit 2; }

if [ ! -f "$WHEEL" ]; then
    "$VPY" -m pip download -q --no-deps -d "$WORK/wheel" medical-image-std==0.8.2 || exit 2
    WHEEL=$(ls "$WORK"/wheel/medical_image_std-0.8.2-*.whl)
fi
rm -rf "$WORK/original" "$WORK/lumen"
"$VPY" "$HERE/mis_suite_prepare.py" "$WHEEL" "$WORK" || exit 2

# Not run, on both sides: tests that need the network or modules the 0.8.2 wheel lacks.
echo "not run: test_deep_segmentation_remote.py (downloads models from the model server: network)"
echo "not run: test_optimized_pipeline.py (imports medical_image.algorithms.cluster_reasoning_algorithm and"
echo "         four other modules that the 0.8.2 wheel does not ship: it cannot be collected for either)"
echo "skipped by the suite itself: INbreast / CBIS-DDSM data absent, CUDA absent, no checkpoint file"

run() {  # name, folder, PYTHONPATH, extra env
    local name=$1 dir=$2 pp=$3
    (cd "$dir" && env PYTHONPATH="$pp" LUMEN_LIBRARY="$BUILD/liblumen.so" MPLBACKEND=Agg \
        "$VPY" -m pytest -q -p no:cacheprovider -rfEs --ignore="$dir/test_deep_segmentation_remote.py" \
        --ignore="$dir/test_optimized_pipeline.py" --junitxml="$WORK/$name.xml" \
        "$dir" > "$WORK/$name.log" 2>&1)
    tail -n 3 "$WORK/$name.log"
}
echo "== against lumen.medical_image (log: $WORK/lumen.log)"
run lumen "$WORK/lumen/mis_tests" "$REPO/python:$WORK/lumen"
echo "== against the original medical_image 0.8.2 (log: $WORK/original.log)"
run original "$WORK/original/medical_image/tests" "$WORK/original"
echo "== counts (of the tests collected in the files run)"
"$VPY" "$HERE/mis_suite_counts.py" lumen "$WORK/lumen.xml"
"$VPY" "$HERE/mis_suite_counts.py" original "$WORK/original.xml"
echo "== per test, the original against lumen (also in $WORK/compare.md)"
"$VPY" "$HERE/mis_suite_compare.py" "$WORK/original.xml" "$WORK/lumen.xml" | tee "$WORK/compare.md"
exit "${PIPESTATUS[0]}"
