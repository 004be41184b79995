#!/usr/bin/env bash
# lumen dce --shard K/N + lumen merge: the merged outputs (maps, sidecars, AIF table) are
# byte-identical to one run; missing, duplicate or foreign parts are refused; bad --shard.
# Input: the pipeline's synthetic phantom (lumen dce-demo).
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
. "$(dirname "$0")/lib.sh"
demo_phantom
A="--dce demo/sub-demo_dce.nii.gz --t1map demo/sub-demo_T1map.nii.gz --mask demo/sub-demo_mask.nii.gz --models tofts,etofts,patlak --select aic -q"
"$bin" dce $A --out one || fail=1
for k in 0 1 2; do "$bin" dce $A --out shard$k --shard $k/3 || fail=1; done
check "three parts written" '[ -f shard0/sub-demo_shard-0-of-3.part ] && [ -f shard2/sub-demo_shard-2-of-3.part ]'
check "a shard's partial maps have NaN outside its range (state -1)" '[ -f shard1/sub-demo_model-tofts_param-Ktrans.nii.gz ]'
"$bin" merge --out merged -q shard2/*.part shard0/*.part shard1/*.part; rc=$?
check "merge exits 0" '[ $rc -eq 0 ]'
check "merged outputs byte-identical to one run" 'same_outputs one merged'
# more shards than voxels in some ranges still merge (N = 7)
for k in 0 1 2 3 4 5 6; do "$bin" dce $A --out s7_$k --shard $k/7 || fail=1; done
"$bin" merge --out merged7 -q s7_*/*.part
check "7 shards merged byte-identical" 'same_outputs one merged7'
"$bin" dce $A --out empty --shard 0/100000; rc=$?
check "an empty shard (more shards than voxels) runs and writes its part" '[ $rc -eq 0 ] && [ -f empty/sub-demo_shard-0-of-100000.part ]'
# refusals
"$bin" merge --out bad -q shard0/*.part shard1/*.part 2> err.txt; rc=$?
check "a missing part is refused" '[ $rc -ne 0 ] && grep -q "2 parts given" err.txt'
"$bin" merge --out bad -q shard0/*.part shard0/*.part shard1/*.part 2> err.txt; rc=$?
check "a duplicate part is refused" '[ $rc -ne 0 ] && grep -q "twice" err.txt'
"$bin" dce $A --out other --shard 1/3 --models tofts > /dev/null 2>&1
"$bin" merge --out bad -q shard0/*.part other/*.part shard2/*.part 2> err.txt; rc=$?
check "a part with other options is refused" '[ $rc -ne 0 ] && grep -q "other" err.txt'
head -c 100 shard1/sub-demo_shard-1-of-3.part > cut.part
"$bin" merge --out bad -q shard0/*.part cut.part shard2/*.part 2> err.txt; rc=$?
check "a truncated part is refused" '[ $rc -ne 0 ] && grep -q "not a complete" err.txt'
"$bin" dce $A --out x --shard 3/3 2> err.txt; rc=$?
check "--shard 3/3 is refused (usage)" '[ $rc -eq 2 ] && grep -q "0 <= K < N" err.txt'
check "merge on an existing folder without --overwrite is refused" '! "$bin" merge --out merged -q shard*/*.part 2>/dev/null'
check "merge --overwrite replaces" '"$bin" merge --out merged --overwrite -q shard0/*.part shard1/*.part shard2/*.part && same_outputs one merged'
exit $fail
