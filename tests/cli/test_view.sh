#!/usr/bin/env bash
# lumen view (issue 44; docs/VIEW.md): the server on the demo's output (with --save-conc): a voxel's
# curves and parameters against the maps and against `lumen fit` of the same curve, another map and
# slice, an ROI (JSON and CSV); refusals of paths outside the fixed set, of other methods, of bad
# arguments; 155 malformed requests; loopback only by default; nothing written into OUTDIR; SIGTERM
# and SIGINT stop it cleanly (exit 0). tests/cli/view_client.py makes the requests.
# Skips (77) without libmicrohttpd in this build or Debian's python3 with numpy.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
py=/usr/bin/python3
"$py" -c 'import numpy' 2>/dev/null || { echo "SKIP: $py lacks numpy"; exit 77; }
"$bin" view /nonexistent 2>&1 | grep -q "built without libmicrohttpd" && { echo "SKIP: lumen built without libmicrohttpd"; exit 77; }
. "$(dirname "$0")/lib.sh"
demo_phantom
"$bin" dce --dce $P --t1map $T --mask $M --models tofts,etofts --select aic --save-conc --out vout -q 2> dce.err ||
  { cat dce.err; echo "FAIL: lumen dce"; exit 1; }
before=$(find vout -type f -printf '%P %s %T@\n' | sort | md5sum)
"$bin" view vout > view.out 2> view.err &
pid=$!
for _ in $(seq 100); do grep -q '^lumen view: http' view.out && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' view.out)
check "lumen view prints its URL, on 127.0.0.1" "echo '$url' | grep -q '^http://127.0.0.1:[0-9]*/$'" || cat view.out view.err
port=${url##*:}; port=${port%/}
hexport=$(printf '%04X' "$port")
check "listens on the loopback address only (/proc/net/tcp: 0100007F:$hexport)" \
  "grep -q ' 0100007F:$hexport 00000000:0000 0A ' /proc/net/tcp && ! grep ' 00000000:$hexport ' /proc/net/tcp | grep -q ' 0A '"
"$py" "$LUMEN_CLI_TESTS/view_client.py" "$url" vout sub-demo "$bin" > client.txt 2>&1; crc=$?
cat client.txt
check "the viewer's answers (view_client.py): exit $crc" "[ $crc -eq 0 ]"
kill -TERM $pid; wait $pid; rc=$?
check "SIGTERM: exit 0, 'stopped'" "[ $rc -eq 0 ] && grep -q 'stopped (SIGTERM)' view.err" || cat view.err
after=$(find vout -type f -printf '%P %s %T@\n' | sort | md5sum)
check "nothing written into OUTDIR" "[ '$before' = '$after' ]"
"$bin" view vout --port 0 > v2.out 2> v2.err &
pid=$!
for _ in $(seq 100); do grep -q '^lumen view: http' v2.out && break; sleep 0.1; done
kill -INT $pid; wait $pid; rc=$?
check "SIGINT (Ctrl-C): exit 0" "[ $rc -eq 0 ] && grep -q 'stopped (SIGINT)' v2.err"
# the series rewritten by another tool (one gzip stream: read whole) and damaged (one member: refused)
cp -r vout vfor; cp -r vout vbad
"$py" - vfor/sub-demo_desc-conc_dce.nii.gz vbad/sub-demo_desc-conc_dce.nii.gz <<'PY'
import gzip, sys
raw = gzip.open(sys.argv[1]).read()
open(sys.argv[1], "wb").write(gzip.compress(raw, 6))
b = bytearray(open(sys.argv[2], "rb").read()); b[len(b) // 2] ^= 0x5a; open(sys.argv[2], "wb").write(b)
PY
for d in vfor vbad; do
  "$bin" view $d > $d.out 2> $d.err &
  vpid=$!
  for _ in $(seq 100); do grep -q '^lumen view: http' $d.out && break; sleep 0.1; done
  u=$(grep -o 'http://[^ ]*' $d.out)
  "$py" - "$u" vout/sub-demo_desc-conc_dce.nii.gz > $d.ans <<'PY'
import gzip, json, struct, sys, urllib.request
import numpy as np
raw = gzip.open(sys.argv[2]).read()
conc = np.frombuffer(raw, "<f4", 32 * 24 * 2 * 80, 352).reshape(80, 2, 24, 32)
ok = True
for x, y, z in ((9, 8, 1), (31, 23, 0), (0, 0, 1)):
    v = json.load(urllib.request.urlopen(sys.argv[1] + "api/voxel?x=%d&y=%d&z=%d" % (x, y, z), timeout=20))
    m = v["measured"]
    print("measured" if m is not None and np.array_equal(np.array(m, "f4"), conc[:, z, y, x], equal_nan=True) else "none" if m is None else "wrong", v["hint"])
json.load(urllib.request.urlopen(sys.argv[1] + "api/info", timeout=20))
print("alive")
PY
  kill $vpid; wait $vpid 2>/dev/null
done
check "a series written by another gzip tool: every voxel's measured curve read whole, exact" \
  "[ \$(grep -c '^measured' vfor.ans) -eq 3 ] && grep -q alive vfor.ans" || cat vfor.ans vfor.err
check "a damaged series: no curve where the damage is, the hint names the file, the server answers on" \
  "grep -q '^none .*sub-demo_desc-conc_dce.nii.gz. is damaged' vbad.ans && grep -q alive vbad.ans" || cat vbad.ans vbad.err
mkdir -p empty
timeout 10 "$bin" view empty > v3.out 2> v3.err; rc=$?
check "a folder without a run log: refused naming it (exit 1)" "[ $rc -eq 1 ] && grep -q \"'empty' holds 0 run logs\" v3.err" || cat v3.err
timeout 10 "$bin" view vout --bind 300.1.1.1 > v4.out 2> v4.err; rc=$?
check "--bind with no address: refused (exit 1)" "[ $rc -eq 1 ] && grep -q \"is not an IPv4 or IPv6 address\" v4.err"
exit $fail
