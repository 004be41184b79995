#!/usr/bin/env bash
# Runs lumen's benchmarks and prints their tables (called by `make bench` with the build folder).
#   bash bench/run.sh [BUILD_DIR] [bench_fit options...]      e.g. bash bench/run.sh build --quick
# Never part of the tests: timings depend on the machine and are not asserted anywhere.
set -euo pipefail
build="${1:-build}"
shift || true
bin="$build/bench"
if [ ! -x "$bin/bench_fit" ]; then
  echo "bench/run.sh: $bin/bench_fit not found; build first (cmake --build $build)" >&2
  exit 1
fi
echo "== bench_fit $*"
"$bin/bench_fit" "$@"
# other benchmark programs, with their defaults (only when no options were given to bench_fit)
if [ "$#" -eq 0 ]; then
  for b in "$bin"/bench_*; do
    [ -x "$b" ] && [ -f "$b" ] || continue
    [ "$(basename "$b")" = bench_fit ] && continue
    echo
    echo "== $(basename "$b")"
    "$b"
  done
fi
