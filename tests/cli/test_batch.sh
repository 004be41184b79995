#!/usr/bin/env bash
# lumen batch: a BIDS cohort (sessions, one corrupt subject) through dce: derivatives folder with
# dataset_description.json, the failure reported in the summary while the others finish, exit 1;
# resume skips complete subjects (outputs untouched) and redoes one whose output was altered;
# --jobs 2 equals --jobs 1; list-file mode; filter and segment over PNG images (one item per
# image), identical for 1 and 3 jobs; --memory-limit; --shard K/N on batch.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
command -v python3 > /dev/null || { echo "python3 not found: skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"
demo_phantom
mk() {  # mk SUBDIR NAME: a session folder with the phantom's series, T1 map and mask
  mkdir -p "bids/$1/perf"
  cp demo/sub-demo_dce.nii.gz "bids/$1/perf/$2_dce.nii.gz"
  cp demo/sub-demo_dce.json "bids/$1/perf/$2_dce.json"
  cp demo/sub-demo_T1map.nii.gz "bids/$1/perf/$2_T1map.nii.gz"
  cp demo/sub-demo_mask.nii.gz "bids/$1/perf/$2_mask.nii.gz"
}
mk sub-01 sub-01; mk sub-02/ses-1 sub-02_ses-1; mk sub-02/ses-2 sub-02_ses-2; mk sub-03 sub-03
head -c 400 demo/sub-demo_dce.nii.gz > bids/sub-03/perf/sub-03_dce.nii.gz   # corrupt
"$bin" batch dce --bids bids --out deriv -- --models tofts > out.txt 2> err.txt; rc=$?
cat out.txt
check "exit 1 when a subject failed" '[ $rc -eq 1 ]'
check "the corrupt subject is reported as FAILED with the reason" 'grep "^sub-03 " out.txt | grep -q "FAILED.*truncated"'
check "the others finished" '[ $(grep -c " ok " out.txt) -eq 3 ]'
check "summary line" 'grep -q "3 ok, 0 skipped (complete), 1 failed, of 4" out.txt'
check "dataset_description.json is a derivative" 'python3 -c "import json,sys; d=json.load(open(\"deriv/dataset_description.json\")); sys.exit(0 if d[\"DatasetType\"]==\"derivative\" and d[\"GeneratedBy\"][0][\"Name\"]==\"lumen\" and d[\"BIDSVersion\"] else 1)"'
check "sessions get their own folders" '[ -f deriv/sub-02/ses-1/sub-02_ses-1_model-tofts_param-Ktrans.nii.gz ] && [ -f deriv/sub-02/ses-2/sub-02_ses-2_model-tofts_param-Ktrans.nii.gz ]'
check "per-subject log with checksums" 'grep -q "output:sub-01_model-tofts_param-Ktrans.nii.gz" deriv/sub-01/sub-01_batch.json'
check "batch_summary.tsv" '[ $(wc -l < deriv/batch_summary.tsv) -eq 5 ]'
# the T1 map and mask of the session are used
check "inputs of the session found (T1 map, mask)" 'grep -q "_T1map.nii.gz" deriv/sub-01/sub-01_batch.json && grep -q "_mask.nii.gz" deriv/sub-01/sub-01_batch.json'
stamp=$(stat -c %Y.%s deriv/sub-01/sub-01_model-tofts_param-Ktrans.nii.gz)
sleep 1
# interrupted / resumed: alter one finished output; fix the corrupt input
echo x >> deriv/sub-02/ses-2/sub-02_ses-2_model-tofts_param-ve.nii.gz
cp demo/sub-demo_dce.nii.gz bids/sub-03/perf/sub-03_dce.nii.gz
"$bin" batch dce --bids bids --out deriv --jobs 2 -- --models tofts > out2.txt 2>&1; rc=$?
cat out2.txt
check "resumed run exits 0" '[ $rc -eq 0 ]'
check "complete subjects are skipped" 'grep "^sub-01 " out2.txt | grep -q skipped && grep "^sub-02_ses-1 " out2.txt | grep -q skipped'
check "skipped outputs untouched" '[ "$(stat -c %Y.%s deriv/sub-01/sub-01_model-tofts_param-Ktrans.nii.gz)" = "$stamp" ]'
check "an altered output makes its subject run again" 'grep "^sub-02_ses-2 " out2.txt | grep -q " ok "'
check "the fixed subject runs" 'grep "^sub-03 " out2.txt | grep -q " ok "'
check "--jobs 2 outputs equal --jobs 1 (sub-03 vs sub-01, same data)" 'cmp deriv/sub-03/sub-03_model-tofts_param-Ktrans.nii.gz deriv/sub-01/sub-01_model-tofts_param-Ktrans.nii.gz'
"$bin" batch dce --bids bids --out deriv -q -- --models tofts; rc=$?
check "third run: all skipped, exit 0, quiet" '[ $rc -eq 0 ]'
# a batch log of the former checksums (FNV-1a) is never taken as complete: that subject runs again
sed -i 's/"checksum_algorithm":[[:space:]]*"[^"]*"/"checksum_algorithm": "FNV-1a 64-bit over the file bytes (as the run logs)"/' deriv/sub-01/sub-01_batch.json
"$bin" batch dce --bids bids --out deriv --jobs 2 -- --models tofts > out4.txt 2>&1; rc=$?
check "a batch log with FNV-1a checksums: its subject runs again, the others are skipped" '[ $rc -eq 0 ] && grep "^sub-01 " out4.txt | grep -q " ok " && grep "^sub-02_ses-1 " out4.txt | grep -q skipped' || cat out4.txt
# list-file mode
printf '# id args\nsubjA --dce demo/sub-demo_dce.nii.gz --t1map demo/sub-demo_T1map.nii.gz --mask demo/sub-demo_mask.nii.gz\nsubjB --dce missing.nii.gz --t1 1.4\nsubjC --dce demo/sub-demo_dce.nii.gz --t1 1.2 --prefix own\n' > list.txt
"$bin" batch dce --list list.txt --out lderiv -q -- --models tofts > lout.txt 2>&1; rc=$?
check "list mode: the missing input fails, the others are done" '[ $rc -eq 1 ] && grep -q "subjB .*FAILED" lout.txt && ! grep -q "subjA .*FAILED" lout.txt'
check "list mode: outputs named after the item ID" '[ -f lderiv/subjA/subjA_model-tofts_param-Ktrans.nii.gz ] && [ ! -e lderiv/subjA/sub-demo_model-tofts_param-Ktrans.nii.gz ] && grep -q "output:subjA_runlog.json" lderiv/subjA/subjA_batch.json' || ls lderiv/subjA
check "list mode: an item's own --prefix wins" '[ -f lderiv/subjC/own_model-tofts_param-Ktrans.nii.gz ]' || ls lderiv/subjC
# item IDs (issue 40, items 6 and 7): one spelling ("./s1/" is "s1"), nothing outside the derivatives
printf 's1 --dce demo/sub-demo_dce.nii.gz --t1 1.2\ns1/ --dce demo/sub-demo_dce.nii.gz --t1 1.3\n' > twice.txt
"$bin" batch dce --list twice.txt --out tderiv -q -- --models tofts > tw.txt 2>&1; rc=$?
check "list IDs 's1' and 's1/': refused as one subject listed twice, nothing run" \
  "[ $rc -ne 0 ] && grep -q \"twice.txt:2: subject 's1/' is listed twice (as 's1' before)\" tw.txt && [ ! -e tderiv/s1 ]" || cat tw.txt
printf '../escape --dce demo/sub-demo_dce.nii.gz --t1 1.2\n' > esc.txt
"$bin" batch dce --list esc.txt --out ederiv -q -- --models tofts > esc.out 2>&1; rc=$?
check "list ID '../escape': refused before anything is made, nothing beside the derivatives folder" \
  "[ $rc -ne 0 ] && grep -q \"subject ID '../escape' has a '..' component\" esc.out && [ ! -e escape ] && [ ! -e escape_batch.log ]" ||
  { cat esc.out; ls; }
printf './s2/ --dce demo/sub-demo_dce.nii.gz --t1map demo/sub-demo_T1map.nii.gz --mask demo/sub-demo_mask.nii.gz\n' > dot.txt
"$bin" batch dce --list dot.txt --out dderiv -q -- --models tofts > dot.out 2>&1; rc=$?
check "list ID './s2/' is 's2': its outputs named after it" "[ $rc -eq 0 ] && [ -f dderiv/s2/s2_model-tofts_param-Ktrans.nii.gz ]" ||
  { cat dot.out; ls -R dderiv | head; }
# resume compares the arguments too: the same item with other inputs or options runs again
"$bin" batch dce --list dot.txt --out dderiv -- --models tofts > dot2.out 2>&1
check "same arguments: skipped as complete" 'grep -q "^s2 .*skipped" dot2.out' || cat dot2.out
cp demo/sub-demo_mask.nii.gz other_mask.nii.gz
printf 's2 --dce demo/sub-demo_dce.nii.gz --t1map demo/sub-demo_T1map.nii.gz --mask other_mask.nii.gz\n' > dot3.txt
"$bin" batch dce --list dot3.txt --out dderiv -- --models tofts > dot3.out 2>&1; rc=$?
check "another input for a completed ID: run again, not skipped" '[ $rc -eq 0 ] && grep -q "^s2 .* ok " dot3.out && grep -q other_mask dderiv/s2/s2_batch.json' || cat dot3.out
"$bin" batch dce --list dot3.txt --out dderiv -- --models patlak > dot4.out 2>&1; rc=$?
check "other shared options: run again" '[ $rc -eq 0 ] && grep -q "^s2 .* ok " dot4.out && [ -f dderiv/s2/s2_model-patlak_param-Ktrans.nii.gz ]' || cat dot4.out
# a BIDS copy of the demo (its files keep their names) runs as it is: the demo's T1 map is *_T1map
mkdir -p bdemo/sub-demo/perf
for f in dce.nii.gz dce.json T1map.nii.gz mask.nii.gz; do cp "demo/sub-demo_$f" bdemo/sub-demo/perf/ || echo "missing demo/sub-demo_$f"; done
"$bin" batch dce --bids bdemo --out bdderiv -q -- --models tofts > bdout.txt 2>&1; rc=$?
check "BIDS copy of the demo runs through batch --bids" '[ $rc -eq 0 ] && [ -f bdderiv/sub-demo/sub-demo_model-tofts_param-Ktrans.nii.gz ]' || cat bdout.txt
check "BIDS copy of the demo: its T1 map is used" 'grep -q "sub-demo_T1map.nii.gz" bdderiv/sub-demo/sub-demo_batch.json'
# the older demo name *_T1w-map is still read, as an alias of *_T1map
mkdir -p balias/sub-old/perf
cp demo/sub-demo_dce.nii.gz balias/sub-old/perf/sub-old_dce.nii.gz; cp demo/sub-demo_dce.json balias/sub-old/perf/sub-old_dce.json
cp demo/sub-demo_T1map.nii.gz balias/sub-old/perf/sub-old_T1w-map.nii.gz
"$bin" batch dce --bids balias --out baderiv -q -- --models tofts > baout.txt 2>&1; rc=$?
check "*_T1w-map is read as an alias of *_T1map" '[ $rc -eq 0 ] && grep -q "sub-old_T1w-map.nii.gz" baderiv/sub-old/sub-old_batch.json' || cat baout.txt
# filter / segment over images: one item per image
python3 - <<'PY'
import os, struct, zlib
def png(path, w, h, seed):
    raw = b''.join(b'\x00' + bytes(((x * 7 + y * 13 + seed * 31 + (x * y) % 17) % 251) for x in range(w)) for y in range(h))
    def ch(t, d):
        c = struct.pack('>I', len(d)) + t + d
        return c + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    open(path, 'wb').write(b'\x89PNG\r\n\x1a\n' + ch(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0)) + ch(b'IDAT', zlib.compress(raw)) + ch(b'IEND', b''))
for s in (1, 2, 3):
    os.makedirs('img/sub-0%d/anat' % s, exist_ok=True)
    for k in range(3):
        png('img/sub-0%d/anat/sub-0%d_run-%d_mammo.png' % (s, s, k), 64, 48, s * 10 + k)
PY
"$bin" batch filter --bids img --out f1 -q -- gaussian --sigma 2; rc1=$?
"$bin" batch filter --bids img --out f3 -q --jobs 3 --memory-limit 1K -- gaussian --sigma 2; rc3=$?
check "filter batch exits 0 (1 and 3 jobs)" '[ $rc1 -eq 0 ] && [ $rc3 -eq 0 ]'
check "nine filtered images" '[ $(ls f1/sub-0*/*_desc-gaussian.png | wc -l) -eq 9 ]'
same=1; for f in f1/sub-0*/*_desc-gaussian.png; do cmp -s "$f" "f3/${f#f1/}" || same=0; done
check "3 jobs give the same images as 1" '[ $same -eq 1 ]'
"$bin" batch segment --bids img --out s1 -q --jobs 2 -- kmeans --k 2 > sout.txt 2>&1; rc=$?
"$bin" batch segment --bids img --out s2 -q --jobs 1 -- kmeans --k 2 > /dev/null 2>&1
cat sout.txt | tail -3
check "segment batch runs per image" '[ $rc -eq 0 ] && [ $(ls s1/sub-0*/*_desc-kmeans.png | wc -l) -eq 9 ]'
same=1; for f in s1/sub-0*/*_desc-kmeans.png; do cmp -s "$f" "s2/${f#s1/}" || same=0; done
check "segment: 2 jobs give the same masks as 1" '[ $same -eq 1 ]'
# batch shards: two jobs of an array fill one derivatives folder
"$bin" batch filter --bids img --out fs -q --shard 0/2 -- gaussian --sigma 2
"$bin" batch filter --bids img --out fs -q --shard 1/2 -- gaussian --sigma 2
same=1; for f in f1/sub-0*/*_desc-gaussian.png; do cmp -s "$f" "fs/${f#f1/}" || same=0; done
check "--shard 0/2 + 1/2 cover the cohort, identical" '[ $same -eq 1 ] && [ -f fs/batch_summary_shard-1-of-2.tsv ]'
# two inputs whose outputs would share one name (x.png and x.nii.gz side by side; one session with
# two _dce series): refused before anything is made, naming both (issue 40 item 5)
mkdir -p dup/sub-01/anat && cp img/sub-01/anat/sub-01_run-0_mammo.png dup/sub-01/anat/x.png
"$bin" filter gaussian dup/sub-01/anat/x.png dup/sub-01/anat/x.nii.gz --sigma 1 -q
"$bin" batch filter --bids dup --out fd -- gaussian --sigma 2 > dout.txt 2>&1; rc=$?
cat dout.txt
check "x.png beside x.nii.gz: refused (exit 2), both named" '[ $rc -eq 2 ] && grep -q "x.png" dout.txt && grep -q "x.nii.gz" dout.txt && grep -q "same outputs" dout.txt'
check "x.png beside x.nii.gz: nothing made" '[ ! -e fd ]'
mkdir -p dupd/sub-01/perf dupd/sub-01/dwi
cp bids/sub-01/perf/sub-01_dce.nii.gz dupd/sub-01/perf/sub-01_dce.nii.gz
cp bids/sub-01/perf/sub-01_dce.nii.gz dupd/sub-01/dwi/sub-01_run-2_dce.nii.gz
"$bin" batch dce --bids dupd --out dd -- --models tofts > ddout.txt 2>&1; rc=$?
check "two _dce series of one session: refused (exit 2), nothing made" '[ $rc -eq 2 ] && grep -q "same outputs" ddout.txt && [ ! -e dd ]'
# usage errors
"$bin" batch dce --out x 2> /dev/null; check "no --list/--bids: usage" '[ $? -eq 2 ]'
"$bin" batch fit --bids bids --out x 2> /dev/null; check "unknown command: usage" '[ $? -eq 2 ]'
"$bin" batch filter --bids img --out x 2> /dev/null; check "filter without an OP: usage" '[ $? -eq 2 ]'
exit $fail
