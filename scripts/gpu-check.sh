#!/usr/bin/env bash
# Device checks for lumen on a GPU machine (an H200 with the CUDA toolkit, CMake and Python, but no
# Debian -dev packages and no network). Run from the repository root:
#
#   OUT=/some/dir bash scripts/gpu-check.sh          # $OUT defaults to ./gpu-check-out
#
# It configures a core build for the local GPU only (CMAKE_CUDA_ARCHITECTURES=90 unless
# LUMEN_GPU_ARCH says otherwise; NIfTI/PNG/GSL/cmocka are picked up when present, not required),
# builds the targets the sections need, runs the sections and writes to $OUT:
#   gpu-check.log     everything (commands, output, timings)
#   results.md        one row per section (status, seconds) followed by each section's table
#   filter-checks.txt PASS/FAIL/SKIP lines of the GPU filter checks (CUDA op vs CPU op)
# Exit status: 0 when every section passed, 1 otherwise. Whole run: about 2 minutes on an H200
# (the build is most of it); every step has its own timeout so the run stays under 5 minutes.
#
# Adding a section (e.g. the fitting-tier checks): write a function section_NAME that returns 0 on
# success and may append markdown to "$RESULTS_BODY"; add NAME to SECTIONS and the CMake targets it
# needs to BUILD_TARGETS (below). Keep the total number of files in $OUT at 8 or fewer.
# LUMEN_GPU_SECTIONS="filter_checks filter_bench" runs a subset (configure and build always run).
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu-check-out}
mkdir -p "$OUT"
LOG=$OUT/gpu-check.log
RESULTS=$OUT/results.md
RESULTS_BODY=$(mktemp)
BUILD=${LUMEN_GPU_BUILD:-$ROOT/build-gpu}
ARCH=${LUMEN_GPU_ARCH:-90}
JOBS=$(nproc 2>/dev/null || echo 8)
PEAK_GBS=${LUMEN_GPU_PEAK_GBS:-4800}   # H200 HBM3e nominal

# ---------------------------------------------------------------- sections
SECTIONS=(environment filter_checks filter_bench)
BUILD_TARGETS=(gpu_filter_check gpu_filter_bench)

section_environment() {
  nvidia-smi --query-gpu=name,memory.total,clocks.max.memory,driver_version --format=csv 2>&1 | head -5
  command -v nvcc && nvcc --version | tail -2
  cmake --version | head -1
  python3 -c 'import numpy, sys; print("python", sys.version.split()[0], "numpy", numpy.__version__)' 2>&1 | tail -1
  echo "cores: $JOBS"
  return 0
}

section_filter_checks() {
  local rc
  timeout 100 "$BUILD/tests/gpu/gpu_filter_check" >"$OUT/filter-checks.txt" 2>&1
  rc=$?
  cat "$OUT/filter-checks.txt"
  local np nf ns
  np=$(grep -c '^PASS' "$OUT/filter-checks.txt")
  nf=$(grep -c '^FAIL' "$OUT/filter-checks.txt")
  ns=$(grep -c '^SKIP' "$OUT/filter-checks.txt")
  {
    echo "## GPU filter checks (CUDA op vs CPU op)"
    echo
    echo "$np passed, $nf failed, $ns skipped (exit $rc); details in filter-checks.txt"
    if [ "$nf" -gt 0 ]; then
      echo
      echo '```'
      grep '^FAIL' "$OUT/filter-checks.txt" | head -40
      echo '```'
    fi
    echo
  } >>"$RESULTS_BODY"
  [ "$rc" -eq 0 ]
}

section_filter_bench() {
  local rc
  timeout 60 "$BUILD/tests/gpu/gpu_filter_bench" --peak-gbs "$PEAK_GBS" --reps 20 --table "$OUT/.bench.md"
  rc=$?
  {
    echo "## GPU filter benchmark"
    echo
    if [ -f "$OUT/.bench.md" ]; then cat "$OUT/.bench.md"; else echo "(no table: exit $rc)"; fi
    echo
  } >>"$RESULTS_BODY"
  rm -f "$OUT/.bench.md"
  [ "$rc" -eq 0 ]
}

# ======================== fitting tier (issue 5) — begin ========================
# fit_checks: tests/unit/test_gpu_fit.c built as gpu_fit_check (no cmocka needed): every model on
#   tier cuda against tier cpu in float32 and float64, a tiny forced chunk, injected allocation
#   failures, device-resident input, cuda:all against cuda:0. Lines go to $OUT/fit-checks.txt.
# fit_bench: bench/bench_fit, fits/s per model at 10^6 curves (80 points) on tiers cuda and cpu
#   (each measurement stops after the chunk that passes the budget; the curves column says how many).
SECTIONS+=(fit_checks fit_bench)
BUILD_TARGETS+=(gpu_fit_check bench_fit)

section_fit_checks() {
  local rc
  timeout 150 "$BUILD/tests/gpu/gpu_fit_check" >"$OUT/fit-checks.txt" 2>&1
  rc=$?
  cat "$OUT/fit-checks.txt"
  {
    echo "## GPU fitting checks (tier cuda vs tier cpu, exit $rc)"
    echo
    echo '```'
    grep -E '^(PASS|FAIL|SKIP) |^  |FAIL ' "$OUT/fit-checks.txt" | head -60
    echo '```'
    echo
  } >>"$RESULTS_BODY"
  [ "$rc" -eq 0 ]
}

section_fit_bench() {
  local rc
  timeout 170 "$BUILD/bench/bench_fit" --tiers cuda,cpu --model-curves 1000000 --curves 1000000 \
    --points 80 --points-curves 1000000 --budget 2 >"$OUT/.fitbench.txt" 2>&1
  rc=$?
  cat "$OUT/.fitbench.txt"
  {
    echo "## GPU fitting benchmark (fits/s, 10^6 curves per model, 80 points; exit $rc)"
    echo
    grep '^|' "$OUT/.fitbench.txt" || tail -20 "$OUT/.fitbench.txt"
    echo
  } >>"$RESULTS_BODY"
  rm -f "$OUT/.fitbench.txt"
  [ "$rc" -eq 0 ]
}
# ======================== fitting tier (issue 5) — end ==========================

# ---------------------------------------------------------------- driver
declare -a ROWS
FAILED=0
T_START=$(date +%s)

run_section() {  # name, function
  local name=$1 fn=$2 t0 t1 rc status
  echo
  echo "=== $name ($(date -u +%H:%M:%S))"
  t0=$(date +%s)
  "$fn"
  rc=$?
  t1=$(date +%s)
  status=PASS
  [ "$rc" -eq 0 ] || { status=FAIL; FAILED=1; }
  echo "=== $name: $status ($((t1 - t0)) s)"
  ROWS+=("| $name | $status | $((t1 - t0)) |")
  return "$rc"
}

configure() {
  local nvcc_opt=()
  if ! command -v nvcc >/dev/null 2>&1; then
    for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
      [ -x "$d/nvcc" ] && { export PATH="$d:$PATH"; break; }
    done
  fi
  command -v nvcc >/dev/null 2>&1 && nvcc_opt=(-DCMAKE_CUDA_COMPILER="$(command -v nvcc)")
  timeout 120 cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
    -DLUMEN_CUDA=ON -DLUMEN_WERROR=OFF -DLUMEN_TESTS=ON "${nvcc_opt[@]}" >"$OUT/.configure.txt" 2>&1
  local rc=$?
  cat "$OUT/.configure.txt"
  grep -q 'CUDA=ON' "$OUT/.configure.txt" || { echo "configure: the CUDA tier is not enabled"; rc=1; }
  rm -f "$OUT/.configure.txt"
  return "$rc"
}

build() {
  timeout 200 cmake --build "$BUILD" -j "$JOBS" --target "${BUILD_TARGETS[@]}"
}

main() {
  run_section configure configure
  if run_section build build; then
    for s in "${SECTIONS[@]}"; do
      if [ -n "${LUMEN_GPU_SECTIONS:-}" ] && [ "$s" != environment ] &&
        ! [[ " $LUMEN_GPU_SECTIONS " == *" $s "* ]]; then
        continue
      fi
      run_section "$s" "section_$s"
    done
  fi
  T_END=$(date +%s)

  {
    echo "# lumen GPU check ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"
    echo
    echo "| section | status | seconds |"
    echo "|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo "| total | $([ $FAILED -eq 0 ] && echo PASS || echo FAIL) | $((T_END - T_START)) |"
    echo
    cat "$RESULTS_BODY"
  } >"$RESULTS"
  rm -f "$RESULTS_BODY"
  echo
  cat "$RESULTS"
  return "$FAILED"
}

main 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
