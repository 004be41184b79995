#!/usr/bin/env bash
# MPI (Open MPI): `mpirun -np 2` and `mpirun -np 3 --oversubscribe` of lumen dce give maps
# byte-identical to one process (rank 0 writes, the others leave nothing behind); lumen batch
# under mpirun splits the subjects, reports a failing one and matches a single-process batch.
# Skipped (77) without mpirun or in a build without MPI. Runs as root with
# OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM).
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
command -v mpirun > /dev/null || { echo "mpirun not found: skipped"; exit 77; }
"$bin" batch --help | grep -q "MPI on" || { echo "lumen built without MPI: skipped"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
# Open MPI's own allocations are not lumen's: no leak report under the sanitizer build
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
. "$(dirname "$0")/lib.sh"
export TMPDIR="$tmp"
demo_phantom
A="--dce demo/sub-demo_dce.nii.gz --t1map demo/sub-demo_T1map.nii.gz --mask demo/sub-demo_mask.nii.gz --models tofts,etofts --select aic -q"
"$bin" dce $A --out one || fail=1
timeout 60 mpirun -np 2 "$bin" dce $A --out np2 > log2.txt 2>&1; rc=$?
check "mpirun -np 2 lumen dce exits 0" '[ $rc -eq 0 ] || { cat log2.txt; false; }'
check "np 2: byte-identical to one process" 'same_outputs one np2'
timeout 60 mpirun -np 3 --oversubscribe "$bin" dce $A --out np3 > log3.txt 2>&1; rc=$?
check "mpirun -np 3 --oversubscribe lumen dce exits 0" '[ $rc -eq 0 ] || { cat log3.txt; false; }'
check "np 3: byte-identical to one process" 'same_outputs one np3'
check "the other ranks left no temporary folders" '[ -z "$(ls -d "$tmp"/lumen-rank-* 2>/dev/null)" ]'
timeout 60 mpirun -np 2 "$bin" dce --dce missing.nii.gz --out bad -q > logb.txt 2>&1; rc=$?
check "a failing input fails every rank, non-zero exit" '[ $rc -ne 0 ] && grep -q "missing.nii.gz" logb.txt'
# batch: the ranks split the subjects
for s in sub-01 sub-02 sub-03; do
  mkdir -p bids/$s/perf
  cp demo/sub-demo_dce.nii.gz bids/$s/perf/${s}_dce.nii.gz; cp demo/sub-demo_dce.json bids/$s/perf/${s}_dce.json
  cp demo/sub-demo_T1map.nii.gz bids/$s/perf/${s}_T1map.nii.gz; cp demo/sub-demo_mask.nii.gz bids/$s/perf/${s}_mask.nii.gz
done
head -c 300 demo/sub-demo_dce.nii.gz > bids/sub-02/perf/sub-02_dce.nii.gz
"$bin" batch dce --bids bids --out d1 -q -- --models tofts > /dev/null 2>&1
timeout 60 mpirun -np 3 --oversubscribe "$bin" batch dce --bids bids --out d3 -- --models tofts > logd.txt 2>&1; rc=$?
check "mpirun batch: non-zero exit, the failure reported once by rank 0" '[ $rc -ne 0 ] && [ $(grep -c "^sub-02 .*FAILED" logd.txt) -eq 1 ]'
check "mpirun batch: the others done, identical to one process" 'cmp d1/sub-01/sub-01_model-tofts_param-Ktrans.nii.gz d3/sub-01/sub-01_model-tofts_param-Ktrans.nii.gz && cmp d1/sub-03/sub-03_model-tofts_param-Ktrans.nii.gz d3/sub-03/sub-03_model-tofts_param-Ktrans.nii.gz'
check "mpirun batch: one summary with every subject" '[ $(wc -l < d3/batch_summary.tsv) -eq 4 ] && grep -q "2 ok" logd.txt'
exit $fail
