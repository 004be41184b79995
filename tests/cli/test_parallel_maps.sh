#!/usr/bin/env bash
# The maps of a model written in parallel (issue 20 item 5; pipe_write_maps): lumen dce and lumen t1
# give the same files byte for byte, the same run-log output list and the same figures with one
# thread (the maps one after the other) as with several (filled and written concurrently); a map
# that cannot be written stops the run with that map's error -- the first such map in the order
# of the list, whatever the threads -- no run log, no temporary file and only whole files.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
command -v python3 > /dev/null || { echo "python3 not found: skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"
demo_phantom
args=(dce --dce "$P" --t1map "$T" --mask "$M" --models tofts,etofts,2cxm --select aic -q)

same_run() { # same_run DIR1 DIR2 MIN: every file but the run log and report.html (timings) byte for
  # byte (maps, sidecars, tables, figures), the run log's output list, and at least MIN maps
  local r=0 f
  for f in $(cd "$1" && find . -type f ! -name '*runlog*' ! -name report.html); do
    cmp -s "$1/$f" "$2/$f" || { echo "  differs: $f"; r=1; }
  done
  python3 - "$1" "$2" "$3" <<'PY' || r=1
import glob, json, sys
def names(d):
    log = glob.glob(d + '/*_runlog.json')[0]
    return [o['file'] for o in json.load(open(log))['outputs']]
a, b = names(sys.argv[1]), names(sys.argv[2])
if a != b: print('  output lists differ:', a, b); sys.exit(1)
if sum(n.endswith('.nii.gz') for n in a) < int(sys.argv[3]): print('  only', len(a), 'outputs'); sys.exit(1)
PY
  return $r
}

for th in 1 2 3; do
  "$bin" "${args[@]}" --threads $th --out d$th 2> err$th.txt || { cat err$th.txt; echo "FAIL: dce --threads $th"; exit 1; }
done
check "dce: --threads 2 gives the files, figures and output list of --threads 1" "same_run d1 d2 40"
check "dce: --threads 3 (more maps than threads, uneven) as --threads 1" "same_run d1 d3 40"

# lumen t1 on three flip angles (frames of the phantom, so that the maps are not constant)
python3 - "$P" <<'PY'
import gzip, struct, sys
raw = gzip.decompress(open(sys.argv[1], 'rb').read())
off = int(struct.unpack('<f', raw[108:112])[0]); dim = list(struct.unpack('<8h', raw[40:56]))
n = dim[1] * dim[2] * dim[3]
for fa, frame in ((5, 0), (15, 30), (30, 79)):
    h = bytearray(raw[:off]); d = [3] + dim[1:4] + [1, 1, 1, 1]
    struct.pack_into('<8h', h, 40, *d)
    open('vfa%d.nii' % fa, 'wb').write(bytes(h) + raw[off + 4 * n * frame:off + 4 * n * (frame + 1)])
    open('vfa%d.json' % fa, 'w').write('{"FlipAngle": %d, "RepetitionTime": 0.005}\n' % fa)
PY
for th in 1 2; do
  "$bin" t1 --method vfa --in vfa5.nii vfa15.nii vfa30.nii --mask "$M" --threads $th --out t$th -q 2> t1err.txt ||
    { cat t1err.txt; echo "FAIL: t1 --threads $th"; exit 1; }
done
check "t1: --threads 2 gives the files and output list of --threads 1" "same_run t1 t2 6"

# two maps that cannot be written (a folder at their names): the error is the first one's
whole() { # whole DIR: no run log, no temporary file, every map and sidecar complete
  local f
  [ -z "$(find "$1" -name '*runlog*')" ] || { echo "  run log exists"; return 1; }
  [ -z "$(find "$1" -name '.*tmp*')" ] || { echo "  temporary file left"; return 1; }
  for f in "$1"/*.nii.gz; do [ -d "$f" ] && continue; gzip -t "$f" 2> /dev/null || { echo "  torn $f"; return 1; }; done
  for f in "$1"/*.json; do python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$f" || { echo "  torn $f"; return 1; }; done
}
for th in 1 2 4; do
  mkdir -p f$th/sub-demo_model-etofts_param-kep.nii.gz f$th/sub-demo_model-etofts_param-r2.nii.gz
  "$bin" "${args[@]}" --threads $th --out f$th 2> ferr$th.txt; rc=$?
  check "a folder at two maps' names, --threads $th: exit 1 naming the first map (kep), not the second (r2)" \
    "[ $rc -eq 1 ] && grep -q \"param-kep.nii.gz': it is a folder\" ferr$th.txt && ! grep -q 'param-r2' ferr$th.txt" ||
    cat ferr$th.txt
  check "--threads $th: no run log, no temporary file, only whole files" "whole f$th"
  check "--threads $th: the maps before it (etofts Ktrans, its CI, tofts) as in the full run" \
    "cmp -s d1/sub-demo_model-etofts_param-Ktrans_cihi.nii.gz f$th/sub-demo_model-etofts_param-Ktrans_cihi.nii.gz &&
     cmp -s d1/sub-demo_model-tofts_param-state.nii.gz f$th/sub-demo_model-tofts_param-state.nii.gz &&
     cmp -s d1/sub-demo_model-etofts_param-vp.json f$th/sub-demo_model-etofts_param-vp.json"
  check "--threads $th: no later model written" "[ ! -e f$th/sub-demo_model-2cxm_param-Fp.nii.gz ]"
done
exit $fail
