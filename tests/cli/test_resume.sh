#!/usr/bin/env bash
# Crash safety and --resume of lumen dce (docs/RELIABILITY.md): a run is killed after its k-th
# stage D checkpoint chunk (the test hook LUMEN_TEST_ABORT_AFTER_CHUNK=k ends the process with
# _exit, as SIGKILL would) for several k, and also with SIGKILL at increasing delays; what it
# leaves under the final names must be complete files and no run log; `--resume` must then
# produce maps, sidecars (but the Command line), AIF table and figures byte for byte equal to an
# uninterrupted run, and remove its checkpoints. Also: a torn checkpoint and a checkpoint of other
# inputs are not trusted.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 > /dev/null || { echo "python3 not found: skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"
need_test_hooks
python3 "$here/../../scripts/make_bad_inputs.py" . > /dev/null || { echo "FAIL: make_bad_inputs.py"; exit 1; }
# 32 voxels, chunks of 8: 4 chunks per model, 8 for two models
args=(dce --dce good_dce.nii.gz --t1map good_t1.nii.gz --models tofts,etofts --chunk 8)

same() { # same REF DIR: every output but the run log and report equal (sidecars without Command)
  local ref=$1 dir=$2 bad=0 f
  for f in $(cd "$ref" && find . -type f ! -name '*runlog*' ! -name report.html); do
    case $f in
      *.json) diff <(grep -v '"Command"' "$ref/$f") <(grep -v '"Command"' "$dir/$f") > /dev/null || { echo "  differs: $f"; bad=1; } ;;
      *) cmp -s "$ref/$f" "$dir/$f" || { echo "  differs: $f"; bad=1; } ;;
    esac
  done
  [ -f "$dir/lumen_runlog.json" ] || { echo "  no run log"; bad=1; }
  [ -z "$(find "$dir" -name '*.ckpt' -o -name '.*tmp*')" ] || { echo "  checkpoint or temporary file left"; bad=1; }
  return $bad
}
complete_or_absent() { # every final-name NIfTI is a whole gzip file; no run log yet
  local dir=$1 f
  [ ! -e "$dir/lumen_runlog.json" ] || return 1
  for f in "$dir"/*.nii.gz; do [ -e "$f" ] || continue; gzip -t "$f" 2> /dev/null || { echo "  torn: $f"; return 1; }; done
  return 0
}

"$bin" "${args[@]}" --out ref 2> err.txt; rc=$?
check "uninterrupted run" "[ $rc -eq 0 ] && [ -f ref/lumen_runlog.json ] && [ -z \"\$(find ref -name '*.ckpt')\" ]" || cat err.txt

for k in 1 3 4 5 8; do
  LUMEN_TEST_ABORT_AFTER_CHUNK=$k "$bin" "${args[@]}" --out k$k 2> /dev/null; rc=$?
  check "killed after chunk $k: exit 75, no run log, final files complete" "[ $rc -eq 75 ] && complete_or_absent k$k"
  check "killed after chunk $k: a checkpoint is left" "[ -n \"\$(find k$k -name '.lumen_model-*.ckpt')\" ]"
  "$bin" "${args[@]}" --out k$k --resume -v 2> err.txt; rc=$?
  check "resume after chunk $k: exit 0 and says so" "[ $rc -eq 0 ] && grep -q 'resumed: ' err.txt"
  check "resume after chunk $k: outputs identical to the uninterrupted run" "same ref k$k"
done

# killed twice, resumed twice
LUMEN_TEST_ABORT_AFTER_CHUNK=2 "$bin" "${args[@]}" --out twice 2> /dev/null
LUMEN_TEST_ABORT_AFTER_CHUNK=3 "$bin" "${args[@]}" --out twice --resume 2> /dev/null; rc=$?
check "second kill during a resumed run" "[ $rc -eq 75 ] && complete_or_absent twice"
"$bin" "${args[@]}" --out twice --resume 2> err.txt; rc=$?
check "second resume: identical outputs" "[ $rc -eq 0 ] && same ref twice" || cat err.txt

# a torn checkpoint (the kill hit the middle of a record): the good records are used, the rest refitted
LUMEN_TEST_ABORT_AFTER_CHUNK=3 "$bin" "${args[@]}" --out torn 2> /dev/null
ck=torn/.lumen_model-tofts.ckpt
sz=$(stat -c %s "$ck"); truncate -s $((sz - 17)) "$ck"
"$bin" "${args[@]}" --out torn --resume -v 2> err.txt; rc=$?
check "torn checkpoint: resumes from the last whole chunk" "[ $rc -eq 0 ] && grep -q 'resumed: 16 of 32' err.txt && same ref torn" || cat err.txt

# a checkpoint of other inputs (other relaxivity) is not used
LUMEN_TEST_ABORT_AFTER_CHUNK=3 "$bin" "${args[@]}" --relaxivity 3.9 --out other 2> /dev/null
"$bin" "${args[@]}" --out other --resume -v 2> err.txt; rc=$?
check "checkpoint of other inputs: ignored, outputs as the uninterrupted run" "[ $rc -eq 0 ] && ! grep -q 'resumed: ' err.txt && same ref other" || cat err.txt

# a checkpoint of the former format (LUMCKPT2, FNV-1a checksums) is refused with a message, never
# taken as matching: the fit starts over
LUMEN_TEST_ABORT_AFTER_CHUNK=3 "$bin" "${args[@]}" --out oldfmt 2> /dev/null
printf 'LUMCKPT2' | dd of=oldfmt/.lumen_model-tofts.ckpt bs=1 seek=0 conv=notrunc status=none
"$bin" "${args[@]}" --out oldfmt --resume -v 2> err.txt; rc=$?
check "checkpoint of the former format: refused with a message, outputs as the uninterrupted run" "[ $rc -eq 0 ] && ! grep -q 'resumed: ' err.txt && grep -q 'former format' err.txt && same ref oldfmt" || cat err.txt

# --resume of a finished folder refits everything and gives the same outputs
"$bin" "${args[@]}" --out ref2 2> /dev/null; "$bin" "${args[@]}" --out ref2 --resume 2> err.txt; rc=$?
check "--resume on a complete run" "[ $rc -eq 0 ] && same ref ref2"

# SIGKILL at increasing delays on a longer run (2cxm, chunks of 2): whatever is under the final
# names is complete; the resumed run equals the uninterrupted one
long=(dce --dce good_dce.nii.gz --t1map good_t1.nii.gz --models tofts,2cxm --chunk 2 -q)
"$bin" "${long[@]}" --out lref 2> /dev/null
for d in 0.05 0.2 0.5; do
  rm -rf l$d
  "$bin" "${long[@]}" --out l$d 2> /dev/null & pid=$!
  sleep $d; kill -KILL $pid 2> /dev/null; wait $pid 2> /dev/null
  if [ -f l$d/lumen_runlog.json ]; then
    check "SIGKILL after ${d}s: finished first, complete" "same lref l$d"
  else
    check "SIGKILL after ${d}s: final files complete" "complete_or_absent l$d"
    "$bin" "${long[@]}" --out l$d --resume 2> err.txt; rc=$?
    check "SIGKILL after ${d}s: --resume gives identical outputs" "[ $rc -eq 0 ] && same lref l$d" || cat err.txt
  fi
done
exit $fail
