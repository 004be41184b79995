#!/usr/bin/env bash
# Shared cores (issue 43 item 1): Tofts fits per second on tier cpu (all cores) and cpu_single,
# on an idle machine and with one busy process per core beside it (`yes > /dev/null`, the load of a
# laptop, a shared server or `lumen batch --jobs`), with OpenMP's idle threads spinning
# (OMP_WAIT_POLICY=ACTIVE, libgomp's default) and sleeping (PASSIVE, what the lumen program and the
# Python binding set unless the user chose). Each arm runs bench_fit on the same 200,000 curves of 80
# points; fits per CPU-second tell what the run cost the machine. Timings are printed, never asserted.
#   bash bench/bench_shared_cores.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
fit=$build/bench/bench_fit
[ -x "$fit" ] || { echo "$0: $fit not found; build first (make build)" >&2; exit 1; }
cores=$(nproc)
busy=()
start_busy() { for _ in $(seq "$cores"); do yes > /dev/null & busy+=($!); done; sleep 1; }
stop_busy() { [ ${#busy[@]} -gt 0 ] && kill "${busy[@]}" 2>/dev/null; wait "${busy[@]}" 2>/dev/null || true; busy=(); }
trap stop_busy EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $cores cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-8s %-8s %-12s %14s %14s\n" load policy tier "fits/s" "fits/CPU-s"
for load in idle busy; do
  [ $load = busy ] && start_busy
  for policy in ACTIVE PASSIVE; do
    out=$(OMP_WAIT_POLICY=$policy "$fit" --models tofts --tiers cpu,cpu_single --no-probe --model-curves 200000 \
          --curves 200000 --points 80 --points-curves 200000 --budget 20 2>/dev/null)
    for tier in cpu cpu_single; do
      row=$(grep -m1 "^| tofts | 80 | 200000 | $tier ($tier)" <<<"$out" || true)
      printf "%-8s %-8s %-12s %14s %14s\n" $load $policy $tier "$(cut -d'|' -f6 <<<"$row" | xargs)" "$(cut -d'|' -f7 <<<"$row" | xargs)"
    done
  done
  [ $load = busy ] && stop_busy
done
