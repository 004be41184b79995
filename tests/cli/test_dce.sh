#!/usr/bin/env bash
# lumen dce / lumen t1 / lumen dce-demo on small synthetic NIfTI phantoms: file names, geometry,
# intent names, sidecar fields, run-log backend fields, --overwrite refusal, failed voxels (state
# code and NaN), and bad input (each message names the file and the problem).
# NIfTI files are written and read with a few lines of python3 (standard library only).
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
command -v python3 > /dev/null || { echo "python3 not found: skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"

cat > nii.py <<'PY'
import gzip, json, math, struct, sys
def read(path):
    raw = open(path, 'rb').read()
    if raw[:2] == b'\x1f\x8b': raw = gzip.decompress(raw)
    dim = struct.unpack('<8h', raw[40:56]); pixdim = struct.unpack('<8f', raw[76:108])
    dt, = struct.unpack('<h', raw[70:72]); off = int(struct.unpack('<f', raw[108:112])[0])
    intent = raw[328:344].split(b'\0')[0].decode(); icode, = struct.unpack('<h', raw[68:70])
    srow = struct.unpack('<12f', raw[280:328])
    n = 1
    for i in range(1, dim[0] + 1): n *= dim[i]
    assert dt == 16, dt
    data = struct.unpack('<%df' % n, raw[off:off + 4 * n])
    return dict(dim=dim[1:dim[0] + 1], pixdim=pixdim, intent=intent, icode=icode, srow=srow, data=data)
def write(path, dims, data, pixdim=(2, 2, 4, 1)):
    hdr = bytearray(348)
    struct.pack_into('<i', hdr, 0, 348)
    d = [len(dims)] + list(dims) + [1] * (7 - len(dims))
    struct.pack_into('<8h', hdr, 40, *d)
    struct.pack_into('<hh', hdr, 70, 16, 32)
    struct.pack_into('<8f', hdr, 76, 1, *(list(pixdim) + [1] * (7 - len(pixdim))))
    struct.pack_into('<f', hdr, 108, 352)
    struct.pack_into('<B', hdr, 123, 10)
    struct.pack_into('<hh', hdr, 252, 0, 1)
    struct.pack_into('<12f', hdr, 280, pixdim[0], 0, 0, 0, 0, pixdim[1], 0, 0, 0, 0, pixdim[2], 0)
    hdr[344:348] = b'n+1\0'
    body = bytes(hdr) + b'\0' * 4 + struct.pack('<%df' % len(data), *data)
    open(path, 'wb').write(gzip.compress(body) if path.endswith('.gz') else body)
cmd = sys.argv[1]
if cmd == 'get':      # get FILE FIELD
    r = read(sys.argv[2]); print(r[sys.argv[3]])
elif cmd == 'voxel':  # voxel FILE INDEX
    print(read(sys.argv[2])['data'][int(sys.argv[3])])
elif cmd == 'failed_nan':  # every voxel with a failure state (not 0 converged, 1 max_iterations, 6 not_fitted, 7 at_bound) has NaN in MAP
    s = read(sys.argv[2])['data']; m = read(sys.argv[3])['data']
    bad = [i for i, v in enumerate(s) if v not in (0, 1, 6, 7) and not math.isnan(m[i])]
    nfail = sum(1 for v in s if v not in (0, 1, 6, 7))
    print('failed %d, failed-but-finite %d' % (nfail, len(bad))); sys.exit(1 if bad or nfail == 0 else 0)
elif cmd == 'mask3':  # mask3 PATH NX NY NZ
    nx, ny, nz = map(int, sys.argv[3:6]); write(sys.argv[2], (nx, ny, nz), [1.0] * (nx * ny * nz))
elif cmd == 'set':    # set SRC DST INDEX VALUE (3-D/4-D float copy with one voxel changed)
    r = read(sys.argv[2]); d = list(r['data']); d[int(sys.argv[4])] = float(sys.argv[5])
    write(sys.argv[3], r['dim'], d, r['pixdim'][1:len(r['dim']) + 1])
elif cmd == 'const':  # const SRC DST VALUE
    r = read(sys.argv[2]); write(sys.argv[3], r['dim'], [float(sys.argv[4])] * len(r['data']), r['pixdim'][1:len(r['dim']) + 1])
elif cmd == 'nanframe':  # nanframe SRC DST FRAME
    r = read(sys.argv[2]); d = list(r['data']); nv = len(d) // r['dim'][3]; f = int(sys.argv[4])
    d[f * nv:(f + 1) * nv] = [float('nan')] * nv; write(sys.argv[3], r['dim'], d, r['pixdim'][1:5])
elif cmd == 'frame0':  # frame0 SRC DST: the first frame as a 3-D volume
    r = read(sys.argv[2]); nv = len(r['data']) // r['dim'][3]; write(sys.argv[3], r['dim'][:3], r['data'][:nv], r['pixdim'][1:4])
elif cmd == 'json':   # json FILE KEY
    print(json.load(open(sys.argv[2]))[sys.argv[3]])
elif cmd == 'runlog': # runlog FILE MODEL FIELD
    j = json.load(open(sys.argv[2])); print(j['stages']['D']['models'][sys.argv[3]][sys.argv[4]])
PY
nii() { python3 nii.py "$@"; }

# ---- the demo writes a phantom (dce + sidecar, T1 map in ms, mask) and runs the pipeline on it
"$bin" dce-demo --out demo > demo.txt 2> demo.err; rc=$?
check "dce-demo exits 0" "[ $rc -eq 0 ]"
check "dce-demo prints the truth/estimate table and the report" "grep -q 'etofts_K' demo.txt && grep -q 'report: .*demo/report.html' demo.txt"
check "demo: etofts Ktrans within 20 % of the truth in every patch" \
  "awk '/^[01] / { t = \$2; e = \$6; d = e - t; if (d < 0) d = -d; if (d > 0.2 * t + 0.005) bad = 1; n++ } END { exit bad || n != 24 }' demo.txt"
check "demo report exists with maps" "[ -f demo/report.html ] && grep -q 'figures/sub-demo_model-etofts_param-Ktrans.png' demo/report.html && [ -f demo/figures/sub-demo_aif.png ]"
P=demo/sub-demo_dce.nii.gz; T=demo/sub-demo_T1map.nii.gz; M=demo/sub-demo_mask.nii.gz

# ---- a run with several models, names, geometry, intents, sidecars, run log
"$bin" dce --dce $P --t1map $T --mask $M --out out --models tofts,patlak,auc --aif parker -q 2> err.txt; rc=$?
check "dce exits 0 (quiet: no output)" "[ $rc -eq 0 ] && [ ! -s err.txt ]"
for f in sub-demo_model-tofts_param-{Ktrans,ve,kep,sse,r2,aic,state,Ktrans_cilo,Ktrans_cihi,ve_cilo,ve_cihi}.nii.gz \
         sub-demo_model-patlak_param-{Ktrans,vp,state}.nii.gz sub-demo_aif.tsv sub-demo_runlog.json sub-demo_runlog.txt \
         report.html sub-demo_param-ninvalid.nii.gz; do
  check "output $f" "[ -f out/$f ]"
done
check "auc maps exist" "ls out/sub-demo_model-auc_param-*.nii.gz > /dev/null 2>&1"
check "no temporary files left" "[ -z \"\$(find out -name '.*tmp*')\" ]"
check "geometry: dims 32x24x2" "[ \"\$(nii get out/sub-demo_model-tofts_param-Ktrans.nii.gz dim)\" = '(32, 24, 2)' ]"
check "geometry: voxel size kept" "nii get out/sub-demo_model-tofts_param-Ktrans.nii.gz pixdim | grep -q '2.0, 2.0, 4.0'"
check "intent name Ktrans, code 1001" "[ \"\$(nii get out/sub-demo_model-tofts_param-Ktrans.nii.gz intent)\" = Ktrans ] && [ \"\$(nii get out/sub-demo_model-tofts_param-Ktrans.nii.gz icode)\" = 1001 ]"
check "intent name ve_cilo" "[ \"\$(nii get out/sub-demo_model-tofts_param-ve_cilo.nii.gz intent)\" = ve_cilo ]"
check "sidecar: parameter, units, model, backend, version" \
  "[ \"\$(nii json out/sub-demo_model-tofts_param-Ktrans.json Units)\" = 1/min ] && [ \"\$(nii json out/sub-demo_model-tofts_param-Ktrans.json Model)\" = tofts ] && [ -n \"\$(nii json out/sub-demo_model-tofts_param-Ktrans.json BackendUsed)\" ] && nii json out/sub-demo_model-tofts_param-Ktrans.json SoftwareVersion | grep -q '[0-9]'"
for k in backend_requested backend_selected backend_used backend_reason voxels_fitted voxels_converged voxels_failed fits_per_s; do
  check "run log stage D tofts $k" "[ -n \"\$(nii runlog out/sub-demo_runlog.json tofts $k)\" ]"
done
check "run log backend_requested auto" "[ \"\$(nii runlog out/sub-demo_runlog.json tofts backend_requested)\" = auto ]"
check "run log has input checksums" "python3 -c \"import json;j=json.load(open('out/sub-demo_runlog.json'));assert len(j['inputs'])==3 and all(len(i['xxh3_64'])==16 for i in j['inputs'])\""
check "run log has output checksums" "python3 -c \"import json;j=json.load(open('out/sub-demo_runlog.json'));assert len(j['outputs'])>20 and all(len(o['xxh3_64'])==16 for o in j['outputs'])\""
check "run log stage timings" "python3 -c \"import json;j=json.load(open('out/sub-demo_runlog.json'));s=j['stages'];assert all(k in s and 'seconds' in s[k] for k in 'ABD')\""
check "T1 unit detected as s (the demo's map is in seconds)" "grep -q 'in s (detected' out/sub-demo_runlog.txt"
check "outside the mask: state 6 and NaN" "[ \"\$(nii voxel out/sub-demo_model-tofts_param-state.nii.gz 31)\" = 6.0 ] && [ \"\$(nii voxel out/sub-demo_model-tofts_param-Ktrans.nii.gz 31)\" = nan ]"

# ---- --overwrite
"$bin" dce --dce $P --t1map $T --mask $M --out out --aif parker -q 2> err.txt; rc=$?
check "second run refused without --overwrite" "[ $rc -ne 0 ] && grep -q 'exists and is not replaced without overwrite (--overwrite)' err.txt"
"$bin" dce --dce $P --t1map $T --mask $M --out out --aif parker --overwrite -q 2> err.txt; rc=$?
check "--overwrite replaces" "[ $rc -eq 0 ]"

# ---- a failed voxel: T1 = -1 inside the mask -> state invalid_input (3) and NaN
idx=$((2 * 32 + 2))
nii set $T t1neg.nii.gz $idx -1
"$bin" dce --dce $P --t1map t1neg.nii.gz --mask $M --out outneg --aif parker -q 2> err.txt; rc=$?
check "negative T1 voxel: run succeeds" "[ $rc -eq 0 ]"
check "negative T1 voxel: state 3 and NaN" "[ \"\$(nii voxel outneg/sub-demo_model-tofts_param-state.nii.gz $idx)\" = 3.0 ] && [ \"\$(nii voxel outneg/sub-demo_model-tofts_param-Ktrans.nii.gz $idx)\" = nan ]"
check "every failed voxel has NaN maps" "nii failed_nan outneg/sub-demo_model-tofts_param-state.nii.gz outneg/sub-demo_model-tofts_param-Ktrans.nii.gz"
"$bin" dce --dce $P --t1map t1neg.nii.gz --mask $M --out outneg2 --aif parker 2> err.txt
check "negative T1: warning names the file" "grep -q \"T1 map 't1neg.nii.gz': 1 voxels inside the mask have T1 <= 0\" err.txt"

# ---- config file with ROCKETSHIP keys; concentration input; model selection; t1
printf '# dce_preferences.txt style\nforce_cpu = 0\ngpu_tolerance = 1e-6\ngpu_max_n_iterations = 100\nvoxel_lower_limit_ve = 0.01\nsome_matlab_key = 3\naif = parker\n' > prefs.txt
"$bin" dce --config prefs.txt --dce $P --t1map $T --mask $M --out outcfg --models tofts,etofts --select aic 2> err.txt; rc=$?
check "config file run exits 0" "[ $rc -eq 0 ]"
check "unknown config key warned with file:line" "grep -q \"prefs.txt:6: key 'some_matlab_key' is not used\" err.txt"
check "config values reach the run log" "python3 -c \"import json;j=json.load(open('outcfg/sub-demo_runlog.json'));assert j['config']['max_iterations']==100 and j['config']['aif']=='parker'\""
check "model selection maps" "[ -f outcfg/sub-demo_model-best_param-model.nii.gz ] && [ -f outcfg/sub-demo_model-best_param-Ktrans.nii.gz ]"
check "summary line with backend fields" "grep -qE 'lumen dce: tofts: backend requested auto, selected [a-z_]+, used [a-z_+]+ ' err.txt"

"$bin" dce --dce $P --t1map $T --mask $M --out outconc --save-conc --aif parker -q && \
  "$bin" dce --dce outconc/sub-demo_desc-conc_dce.nii.gz --input-type concentration --mask $M --dt 5 --out outc2 --aif parker --prefix conc -q 2> err.txt; rc=$?
check "--input-type concentration" "[ $rc -eq 0 ] && [ -f outc2/conc_model-tofts_param-Ktrans.nii.gz ]"

for fa in 5 15 30; do
  nii frame0 $P vfa$fa.nii.gz; echo "{\"FlipAngle\": $fa, \"RepetitionTime\": 0.005}" > vfa$fa.json
done
"$bin" t1 --method vfa --in vfa5.nii.gz vfa15.nii.gz vfa30.nii.gz --out t1out -q 2> err.txt; rc=$?
check "t1 exits 0" "[ $rc -eq 0 ]"
for f in lumen_T1map.nii.gz lumen_M0map.nii.gz lumen_R1map.nii.gz lumen_model-vfa_param-r2.nii.gz lumen_model-vfa_param-state.nii.gz lumen_runlog.json; do
  check "t1 output $f" "[ -f t1out/$f ]"
done
check "t1 run log backend fields" "python3 -c \"import json;j=json.load(open('t1out/lumen_runlog.json'));t=j['stages']['T1'];assert t['backend_requested']=='auto' and t['backend_used'] and t['backend_reason']\""
check "t1 intent T1" "[ \"\$(nii get t1out/lumen_T1map.nii.gz intent)\" = T1 ]"

# ---- bad input: each message names the file and the problem
bad() { # name, expected message regex, args...
  local name=$1 re=$2; shift 2
  "$bin" "$@" -q > /dev/null 2> err.txt; local rc=$?
  check "bad input: $name" "[ $rc -ne 0 ] && grep -qE \"$re\" err.txt" || cat err.txt
}
bad "missing file" "DCE series 'nope.nii.gz': file not found" dce --dce nope.nii.gz --out b1 --t1map $T
head -c 2000 $P > trunc.nii.gz
bad "truncated .nii.gz" "trunc.nii.gz.*(truncated|unexpected end)" dce --dce trunc.nii.gz --out b2 --t1map $T
echo "not a nifti file at all, just text padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding padding" > corrupt.nii
bad "corrupt file" "corrupt.nii" dce --dce corrupt.nii --out b3 --t1map $T
bad "3-D where 4-D is needed" "DCE series '$T' is 3-D .*expected a 4-D series" dce --dce $T --out b4 --t1map $T
nii mask3 small.nii.gz 8 8 2
bad "mask on another grid" "mask 'small.nii.gz' is on another grid" dce --dce $P --t1map $T --mask small.nii.gz --out b5
bad "T1 map on another grid" "T1 map 'small.nii.gz' is on another grid" dce --dce $P --t1map small.nii.gz --out b6
cp $P noside.nii.gz
bad "missing flip angle" "flip angle missing for 'noside.nii.gz'" dce --dce noside.nii.gz --t1map $T --out b7 --dt 5 --relaxivity 4.5 --tr 0.005
bad "missing TR" "repetition time missing for 'noside.nii.gz'" dce --dce noside.nii.gz --t1map $T --out b8 --dt 5 --relaxivity 4.5 --flip-angle 20
bad "missing relaxivity" "relaxivity missing for 'noside.nii.gz'" dce --dce noside.nii.gz --t1map $T --out b9 --dt 5 --flip-angle 20 --tr 0.005
# every missing value in one message, each with its hint (issue 39 item 6: QIBA v6 took three runs)
bad "all missing values in one message" "'noside.nii.gz' lacks [45] required values: flip angle: give --flip-angle DEG or FlipAngle in 'noside.json' \(not found\); repetition time: give --tr SECONDS.*; relaxivity: give --relaxivity R .*; (frame times: give --dt SECONDS.*; )?pre-contrast T1: give --t1map FILE, --vfa FILE..., or --t1 SECONDS" dce --dce noside.nii.gz --out b9b
bad "two missing values: both named" "lacks 2 required values: repetition time: give --tr SECONDS.*; relaxivity: give --relaxivity R" dce --dce noside.nii.gz --t1map $T --out b9c --dt 5 --flip-angle 20
nii const $T t1zero.nii.gz 0
bad "zero T1 everywhere" "T1 map 't1zero.nii.gz': every voxel in the mask has T1 <= 0" dce --dce $P --t1map t1zero.nii.gz --out b10
nii const $T t1negall.nii.gz -5
bad "negative T1 everywhere" "T1 map 't1negall.nii.gz': every voxel in the mask has T1 <= 0" dce --dce $P --t1map t1negall.nii.gz --out b11
nii nanframe $P nanf.nii.gz 7; cp demo/sub-demo_dce.json nanf.json
bad "NaN frame" "DCE series 'nanf.nii.gz': frame 7 of 80 has no finite value" dce --dce nanf.nii.gz --t1map $T --out b12
touch afile
bad "unwritable output folder" "output folder 'afile/sub'.*(not a folder|cannot create)" dce --dce $P --t1map $T --out afile/sub
bad "unwritable output folder (/proc)" "output folder '/proc/lumen-x'" dce --dce $P --t1map $T --out /proc/lumen-x
bad "t1: missing flip angle" "flip angle missing for volume 1 \('noside.nii.gz'\)" t1 --in noside.nii.gz noside.nii.gz --out b13
bad "unknown model" "'bogus' is not a DCE model" dce --dce $P --t1map $T --out b14 --models bogus
printf "hematocrit = abc\n" > prefs2.txt
bad "bad config value" "prefs2.txt:1: hematocrit = 'abc' is not a number" dce --config prefs2.txt --dce $P --out b15 < /dev/null
exit $fail
