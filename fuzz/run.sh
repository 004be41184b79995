#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/build.sh) and runs each for SECONDS (default 60) on a working
# corpus seeded from fuzz/corpus/<target>/, after replaying fuzz/regressions/<target>/ (inputs
# that once crashed). Fails when any target finds a crash, a leak, undefined behaviour, a
# timeout (> 10 s per input) or runs out of memory (2 GiB).
#   fuzz/run.sh CORE_BUILD [OUT] [SECONDS] [TARGETS...]
set -euo pipefail
cd "$(dirname "$0")/.."
CORE=${1:-build}; OUT=${2:-build-fuzz}; SECONDS_EACH=${3:-60}
shift $(( $# < 3 ? $# : 3 ))
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(nifti json table png config dicom)
bash fuzz/build.sh "$CORE" "$OUT"
mkdir -p "$OUT/artifacts"
export TMPDIR=${TMPDIR:-/tmp}
# known leaks of third-party decoders on malformed input (each one explained in the file); their
# stacks (GDCM has no frame pointers) need the slow unwinder to match, so only fuzz_dicom pays it
supp="suppressions=$PWD/fuzz/lsan.supp:fast_unwind_on_malloc=0"
lsan_given=${LSAN_OPTIONS:-}
status=0
for t in "${targets[@]}"; do
  bin="$OUT/fuzz_$t"
  if [ "$t" = dicom ]; then export LSAN_OPTIONS="${lsan_given:+$lsan_given:}$supp"; else export LSAN_OPTIONS="$lsan_given"; fi
  if [ -d "fuzz/regressions/$t" ] && [ -n "$(ls -A "fuzz/regressions/$t")" ]; then
    if ! "$bin" -rss_limit_mb=2048 -timeout=10 "fuzz/regressions/$t"/* > "$OUT/$t.regressions.log" 2>&1; then
      echo "fuzz: $t: a regression input fails again (see $OUT/$t.regressions.log)"; status=1
    fi
  fi
  if [ "$t" = dicom ] && [ ! -d fuzz/corpus/dicom ]; then /usr/bin/python3 fuzz/make_corpus.py --dicom-only || true; fi
  mkdir -p "$OUT/corpus/$t" "fuzz/corpus/$t"
  log="$OUT/$t.log"
  if "$bin" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
       -artifact_prefix="$OUT/artifacts/$t-" "$OUT/corpus/$t" "fuzz/corpus/$t" > "$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    eps=$(grep -o 'exec/s: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo '?')
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo '?')
    echo "fuzz: $t: ok, ${SECONDS_EACH} s, $runs runs ($eps exec/s), coverage $cov edges, corpus $(ls "$OUT/corpus/$t" | wc -l) files"
  else
    echo "fuzz: $t: FINDING (log $log, input in $OUT/artifacts/):"; grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -5
    status=1
  fi
done
exit $status
