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

# The same question for whole commands (issue 43's acceptance): `lumen dce` on the 2.1 M-voxel bench
# series (scripts/bench_dce.sh's, made once in WORK) and `lumen filter gaussian` on a 4096 x 3328
# float32 image, each with --threads 1 and --threads 2, idle and with one busy process per core;
# wall and CPU seconds (user + system) from /usr/bin/time, best of RUNS (default 3).
#   WORK=/tmp/shared_cores RUNS=3 bash bench/bench_shared_cores.sh BUILD_DIR
lumen=$build/lumen
work=${WORK:-$(mktemp -d)}
runs=${RUNS:-3}
mkdir -p "$work"
[ -f "$work/bench_dce.nii" ] || KEEP=1 bash "$(dirname "$0")/../scripts/bench_dce.sh" "$build" "$work" > /dev/null
[ -f "$work/gauss_in.nii" ] || python3 - "$work/gauss_in.nii" <<'PY'
import array, struct, sys
nx, ny = 4096, 3328
hdr = bytearray(348)
struct.pack_into('<i', hdr, 0, 348)
struct.pack_into('<8h', hdr, 40, 2, nx, ny, 1, 1, 1, 1, 1)
struct.pack_into('<hh', hdr, 70, 16, 32)
struct.pack_into('<8f', hdr, 76, 1, 1, 1, 1, 1, 1, 1, 1)
struct.pack_into('<f', hdr, 108, 352)
hdr[344:348] = b'n+1\0'
row = array.array('f', [float((x * 37) % 4096) for x in range(nx)]).tobytes()
with open(sys.argv[1], 'wb') as f:
    f.write(bytes(hdr) + b'\0' * 4)
    for y in range(ny):
        f.write(row[4 * (y % 97):] + row[:4 * (y % 97)])
PY
best() { # best wall and its CPU seconds of $runs runs of "$@"
  local b=
  for _ in $(seq "$runs"); do
    /usr/bin/time -f '%e %U %S' -o "$work/time.txt" "$@" > /dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
    read -r w u s < "$work/time.txt"
    c=$(python3 -c "print('%.2f' % ($u + $s))")
    if [ -z "$b" ] || python3 -c "import sys; sys.exit(0 if $w < ${b%% *} else 1)"; then b="$w $c"; fi
  done
  echo "$b"
}
echo
printf "%-8s %-34s %-9s %10s %10s\n" load command threads "wall s" "CPU s"
for load in idle busy; do
  [ $load = busy ] && start_busy
  for th in 1 2; do
    rm -rf "$work/out"
    r=$(best "$lumen" dce --dce "$work/bench_dce.nii" --out "$work/out" --overwrite --t1 1.2 --relaxivity 4.5 --dt 5 \
        --models tofts --aif parker --backend cpu --no-report --no-ci --threads $th -q)
    printf "%-8s %-34s %-9s %10s %10s\n" $load "dce tofts 2.1 M voxels" $th ${r% *} ${r#* }
    r=$(best "$lumen" filter gaussian "$work/gauss_in.nii" "$work/gauss_out.nii" --sigma 4 --threads $th --overwrite)
    printf "%-8s %-34s %-9s %10s %10s\n" $load "filter gaussian 4096x3328 sigma 4" $th ${r% *} ${r#* }
  done
  [ $load = busy ] && stop_busy
done
[ -n "${WORK:-}" ] || rm -rf "$work"
