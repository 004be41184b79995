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

# ======================== image batch overlap (issue 7) — begin ========================
# image_batch: `lumen filter gaussian --batch` of 24 float32 images 2048 x 2048 on cuda:0, serial
#   (--no-overlap: the default stream, synchronous copies) against overlapped (the worker's pinned
#   double buffers and two non-blocking streams, docs/SCALE.md): wall times, the stage lines, and
#   whether the outputs are byte-identical (they must be; the CPU run of the first 4 images is
#   compared for information). Needs the I/O build (NIfTI); skipped without it.
SECTIONS+=(image_batch)
BUILD_TARGETS+=(lumen)

section_image_batch() {
  local d rc=0 bin=$BUILD/lumen
  if ! "$bin" filter --help 2>&1 | grep -q -- '--batch'; then
    echo "lumen filter --batch not built (no NIfTI I/O here): skipped"
    printf '## Image batch overlap on cuda:0\n\nskipped: no I/O build\n\n' >>"$RESULTS_BODY"
    return 0
  fi
  d=$(mktemp -d)
  python3 - "$d" <<'PYEOF' || { rm -rf "$d"; return 1; }
import array, os, random, struct, sys
d, n = sys.argv[1], 2048
r = random.Random(7)
v = array.array('f', (r.random() * 1000.0 for _ in range(n * n)))
hdr = bytearray(348); struct.pack_into('<i', hdr, 0, 348)
struct.pack_into('<8h', hdr, 40, 2, n, n, 1, 1, 1, 1, 1); struct.pack_into('<hh', hdr, 70, 16, 32)
struct.pack_into('<8f', hdr, 76, *[1] * 8); struct.pack_into('<f', hdr, 108, 352); hdr[344:348] = b'n+1\x00'
open(d + '/i00.nii', 'wb').write(bytes(hdr) + b'\x00' * 4 + v.tobytes())
for tag in ('ser', 'ovl', 'cpu'):
    with open('%s/%s.txt' % (d, tag), 'w') as L:
        for k in range(24 if tag != 'cpu' else 4):
            if tag == 'ser' and k: os.link(d + '/i00.nii', '%s/i%02d.nii' % (d, k))
            L.write('%s/i%02d.nii %s/%s-o%02d.nii\n' % (d, k, d, tag, k))
PYEOF
  local t0 t1 t2 ws wo same=yes cpusame=yes
  t0=$(date +%s.%N)
  timeout 60 "$bin" filter gaussian --sigma 4 --batch "$d/ser.txt" --device cuda:0 --no-overlap 2>"$d/ser.err" || rc=1
  t1=$(date +%s.%N)
  timeout 60 "$bin" filter gaussian --sigma 4 --batch "$d/ovl.txt" --device cuda:0 2>"$d/ovl.err" || rc=1
  t2=$(date +%s.%N)
  timeout 60 "$bin" filter gaussian --sigma 4 --batch "$d/cpu.txt" --device cpu 2>"$d/cpu.err" || rc=1
  cat "$d/ser.err" "$d/ovl.err" | grep -E 'stages|device requested|warning' | head -8
  for k in $(seq -w 0 23); do cmp -s "$d/ser-o$k.nii" "$d/ovl-o$k.nii" || same=NO; done
  for k in 00 01 02 03; do cmp -s "$d/ser-o$k.nii" "$d/cpu-o$k.nii" || cpusame=no; done
  ws=$(python3 -c "print('%.2f' % ($t1 - $t0))"); wo=$(python3 -c "print('%.2f' % ($t2 - $t1))")
  {
    echo "## Image batch overlap on cuda:0 (24 x 2048 x 2048 float32, gaussian sigma 4)"
    echo
    echo "| run | wall s | stage line |"
    echo "|---|---|---|"
    echo "| \`--no-overlap\` (default stream, synchronous copies) | $ws | $(grep -o 'stages.*' "$d/ser.err" | head -1) |"
    echo "| overlapped (pinned double buffers, 2 streams) | $wo | $(grep -o 'stages.*' "$d/ovl.err" | head -1) |"
    echo
    echo "outputs byte-identical (overlapped = serial): $same; first 4 = the CPU run: $cpusame"
    echo
  } >>"$RESULTS_BODY"
  grep -q 'pinned' "$d/ovl.err" || { echo "the overlapped run did not use pinned buffers"; rc=1; }
  rm -rf "$d"
  [ "$rc" -eq 0 ] && [ "$same" = yes ]
}
# ======================== image batch overlap (issue 7) — end ========================

# ======================== fitting tier (issue 5) — begin ========================
# fit_checks: tests/unit/test_gpu_fit.c built as gpu_fit_check (no cmocka needed): every model on
#   tier cuda against tier cpu in float32 and float64, a tiny forced chunk, injected allocation
#   failures, device-resident input, cuda:all against cuda:0. Lines go to $OUT/fit-checks.txt.
# fit_validation (needs .devcarry from scripts/gpu-carry.sh: cmocka, GSL, the OSIPI data): the
#   OSIPI DCE and T1 tests and the agreement test (10^5 curves per model against the standard tier)
#   with LUMEN_TEST_TIER=cuda, the acceptance bars of issue 5; output in $OUT/fit-validation.txt.
# fit_bench: bench/bench_fit, fits/s per model at 10^6 curves (80 points) on tiers cuda and cpu
#   in the same run, with the kernel's own rate (CUDA events) beside the host-to-host rate, and one
#   256x256x32x80 Tofts volume from host memory to host results in one call per tier.
SECTIONS+=(fit_checks fit_validation fit_bench)
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

section_fit_validation() {
  local rc=0 r t f="$OUT/fit-validation.txt"
  : >"$f"
  if [ -z "$DEPS" ]; then
    echo "no .devcarry here: run 'bash scripts/gpu-carry.sh' on the development machine and carry .devcarry" | tee -a "$f"
    echo "## GPU fitting validation: not run (no .devcarry)" >>"$RESULTS_BODY"
    return 1
  fi
  timeout 120 cmake --build "$BUILD" -j "$JOBS" --target test_osipi_dce test_osipi_t1 test_fit_agreement >>"$f" 2>&1 || {
    echo "build of the validation tests failed (see fit-validation.txt)" | tee -a "$f"
    rc=1
  }
  if [ "$rc" -eq 0 ]; then
    for t in test_osipi_dce test_osipi_t1 test_fit_agreement; do
      echo "=== $t (LUMEN_TEST_TIER=cuda)" >>"$f"
      LUMEN_TEST_TIER=cuda LUMEN_AGREEMENT_CURVES=100000 timeout 150 "$BUILD/tests/$t" >>"$f" 2>&1
      r=$?
      echo "=== $t: exit $r" >>"$f"
      [ "$r" -eq 0 ] || rc=1
    done
  fi
  cat "$f"
  {
    echo "## GPU fitting validation (tier cuda: OSIPI, agreement with the standard tier on 10^5 curves per model)"
    echo
    echo '```'
    grep -E '^OSIPI|^agreement|median rel diff|in the kernels|^=== .*exit|FAILED|ran on' "$f" | head -90
    echo '```'
    echo
  } >>"$RESULTS_BODY"
  [ "$rc" -eq 0 ]
}

section_fit_bench() {
  local rc
  timeout 170 "$BUILD/bench/bench_fit" --tiers cuda,cpu --model-curves 1000000 --curves 1000000 \
    --points 80 --points-curves 1000000 --budget 2 --volume 256x256x32x80 >"$OUT/.fitbench.txt" 2>&1
  rc=$?
  cat "$OUT/.fitbench.txt"
  {
    echo "## GPU fitting benchmark (fits/s, 10^6 curves per model, 80 points; exit $rc)"
    echo
    grep -E '^\||^## ' "$OUT/.fitbench.txt" || tail -20 "$OUT/.fitbench.txt"
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

# The libraries and reference data carried from the development machine (scripts/gpu-carry.sh):
# unpacked under /tmp/lumen-deps (never into /) and put on CMake's and the loader's paths.
DEPS=""
unpack_deps() {
  local d=$ROOT/.devcarry
  [ -d "$d/debs" ] || { echo "no .devcarry/debs: core build only (cmocka, GSL, NIfTI from the system if present)"; return 0; }
  DEPS=/tmp/lumen-deps
  rm -rf "$DEPS"
  mkdir -p "$DEPS"
  local f
  for f in "$d"/debs/*.deb; do
    if command -v dpkg >/dev/null 2>&1; then
      dpkg -x "$f" "$DEPS" || { echo "dpkg -x $f failed"; return 1; }
    else  # a .deb is an ar archive holding data.tar.xz (Debian 12)
      ar p "$f" data.tar.xz | tar -xJ -C "$DEPS" || { echo "unpacking $f failed"; return 1; }
    fi
  done
  local lib=$DEPS/usr/lib/x86_64-linux-gnu
  export CMAKE_PREFIX_PATH=$DEPS/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export CMAKE_LIBRARY_PATH=$lib${CMAKE_LIBRARY_PATH:+:$CMAKE_LIBRARY_PATH}
  export CMAKE_INCLUDE_PATH=$DEPS/usr/include${CMAKE_INCLUDE_PATH:+:$CMAKE_INCLUDE_PATH}
  export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  [ -d "$d/refdata/osipi" ] && export LUMEN_REFDATA=$d/refdata
  echo "unpacked $(ls "$d"/debs/*.deb | wc -l) packages into $DEPS; LUMEN_REFDATA=${LUMEN_REFDATA:-unset}"
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
  run_section deps unpack_deps
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
