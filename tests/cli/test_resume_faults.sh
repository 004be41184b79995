#!/usr/bin/env bash
# Resource faults during lumen dce (docs/RELIABILITY.md): disk full (an injected ENOSPC after N
# bytes, LUMEN_TEST_ENOSPC_AFTER, and a real 64 KiB tmpfs when this machine lets us mount one),
# host memory exhausted (ulimit -v in the normal build; in the sanitizer build ASan's
# max_allocation_size_mb with allocator_may_return_null, where LeakSanitizer also checks that
# the failed runs leak nothing). Each failing run must exit 1 (never a crash) with a message that
# says what went wrong, leave no temporary file, no run log and only complete files under the
# final names; a --resume afterwards must give the outputs of an undisturbed run.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 > /dev/null || { echo "python3 not found: skipped"; exit 77; }
. "$here/lib.sh"
need_test_hooks
mnt=""
cleanup() { [ -n "$mnt" ] && umount "$mnt" 2> /dev/null; rm -rf "$tmp"; }
trap cleanup EXIT  # also unmounts the tmpfs of the disk-full case
python3 "$here/../../scripts/make_bad_inputs.py" . > /dev/null || { echo "FAIL: make_bad_inputs.py"; exit 1; }
args=(dce --dce good_dce.nii.gz --t1map good_t1.nii.gz --models tofts --chunk 8 -q)
whole() { # whole DIR: no run log, no temporary file, every final file complete
  local dir=$1 f
  [ ! -e "$dir/lumen_runlog.json" ] || { echo "  run log exists"; return 1; }
  [ -z "$(find "$dir" -name '.*tmp*' 2> /dev/null)" ] || { echo "  temporary file left"; return 1; }
  for f in $(find "$dir" -name '*.nii.gz' 2> /dev/null); do gzip -t "$f" 2> /dev/null || { echo "  torn $f"; return 1; }; done
  for f in $(find "$dir" -name '*.json' 2> /dev/null); do python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$f" 2> /dev/null || { echo "  torn $f"; return 1; }; done
  for f in $(find "$dir" -name '*.png' 2> /dev/null); do python3 -c "import sys; d=open(sys.argv[1],'rb').read(); sys.exit(d[-8:-4] != b'IEND')" "$f" || { echo "  torn $f"; return 1; }; done
  return 0
}
same() { # same REF DIR (as in test_resume.sh)
  local f bad=0
  for f in $(cd "$1" && find . -type f ! -name '*runlog*' ! -name report.html); do
    case $f in
      *.json) diff <(grep -v '"Command"' "$1/$f") <(grep -v '"Command"' "$2/$f") > /dev/null || { echo "  differs: $f"; bad=1; } ;;
      *) cmp -s "$1/$f" "$2/$f" || { echo "  differs: $f"; bad=1; } ;;
    esac
  done
  return $bad
}
"$bin" "${args[@]}" --out ref 2> err.txt
check "undisturbed run" "[ -f ref/lumen_runlog.json ]" || cat err.txt

# ---- disk full, injected after N bytes
for n in 0 300 5000 15000 25000; do
  LUMEN_TEST_ENOSPC_AFTER=$n "$bin" "${args[@]}" --out full$n 2> err.txt; rc=$?
  check "ENOSPC after $n bytes: exit 1, 'No space left on device' naming a file" \
    "[ $rc -eq 1 ] && grep -q \"full$n/.*No space left on device\" err.txt" || cat err.txt
  check "ENOSPC after $n bytes: only complete files, no run log" "whole full$n"
  "$bin" "${args[@]}" --out full$n --resume 2> err.txt; rc=$?
  check "ENOSPC after $n bytes: --resume completes identically" "[ $rc -eq 0 ] && same ref full$n" || cat err.txt
done

# ---- a real full disk (64 KiB tmpfs), when mounting is allowed here
mkdir -p small
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=64k tmpfs small 2> /dev/null; then
  mnt=$PWD/small
  "$bin" "${args[@]}" --out small/out 2> err.txt; rc=$?
  check "tmpfs of 64 KiB: exit 1 with 'No space left on device'" "[ $rc -eq 1 ] && grep -q 'No space left on device' err.txt" || cat err.txt
  check "tmpfs of 64 KiB: only complete files, no run log" "whole small/out"
  umount small && mnt=""
else
  echo "skip: cannot mount a tmpfs here (not root or no permission)"
fi

# ---- unwritable output folder (not for root, who writes anyway)
if [ "$(id -u)" -ne 0 ]; then
  mkdir ro && chmod 555 ro
  "$bin" "${args[@]}" --out ro/out 2> err.txt; rc=$?
  check "read-only folder: exit 1, names it" "[ $rc -eq 1 ] && grep -q \"ro/out\" err.txt"
  chmod 755 ro
fi

# ---- host memory exhausted
python3 -c "
import sys, json; sys.path.insert(0, '$here/../../scripts'); import make_bad_inputs as m
nx, ny, nz, nt = 32, 32, 8, 40
s = []
for f in range(nt):
    c = m.parker_like(5.0 * f)
    s += [1000.0 * (1 + 0.3 * c * (0.5 + (v % 7) / 7.0)) for v in range(nx * ny * nz)]
m.write('big.nii.gz', m.nifti1((nx, ny, nz, nt), s)); json.dump(dict(m.SIDECAR, FrameTimesStart=[5.0 * f for f in range(nt)]), open('big.json', 'w'))
m.write('big_t1.nii.gz', m.nifti1((nx, ny, nz), [1.2] * (nx * ny * nz)))"
big=(dce --dce big.nii.gz --t1map big_t1.nii.gz --models tofts --no-report -q --threads 1)
if ldd "$bin" 2> /dev/null | grep -q libasan; then
  # sanitizer build: any single allocation over the limit fails (NULL), LeakSanitizer checks the exits
  for mb in 1 2; do
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1:max_allocation_size_mb=$mb:detect_leaks=1 "$bin" "${big[@]}" --out oom$mb 2> err.txt; rc=$?
    if [ $rc -eq 0 ]; then
      check "allocations over $mb MiB fail: none that large, completes" "[ -f oom$mb/lumen_runlog.json ]"
    else
      check "allocations over $mb MiB fail: exit 1 with 'out of' memory, no leak" \
        "[ $rc -eq 1 ] && grep -qi 'out of .*memory\|memory limit' err.txt && ! grep -q LeakSanitizer err.txt && whole oom$mb" || head -20 err.txt
    fi
  done
else
  n_fail=0
  # The address space a bare start needs differs between builds (a CUDA build maps its device
  # code): find it, then sweep limits just above it.
  lo=2000; hi=4000000
  while [ $((hi - lo)) -gt 250 ]; do
    mid=$(((lo + hi) / 2))
    if ( ulimit -v $mid; exec "$bin" --version ) > /dev/null 2>&1; then hi=$mid; else lo=$mid; fi
  done
  echo "a bare start needs about $hi KiB of address space"
  for extra in 1000 2000 3000 4000 5000 6000 13000 28000; do
    kb=$((hi + extra))
    ( ulimit -v $kb; exec "$bin" "${big[@]}" --out oom$kb ) 2> err.txt; rc=$?
    if [ $rc -eq 0 ]; then
      check "ulimit -v $kb KiB: completes" "[ -f oom$kb/lumen_runlog.json ]"
    else
      n_fail=$((n_fail + 1))
      check "ulimit -v $kb KiB: exit 1 (no crash) with a memory message" \
        "[ $rc -eq 1 ] && grep -qi 'memory\|cannot allocate\|thread creation failed' err.txt" || head -5 err.txt
      check "ulimit -v $kb KiB: only complete files, no run log" "whole oom$kb"
    fi
  done
  echo "memory limits that failed: $n_fail of 8"
fi
exit $fail
