#!/usr/bin/env bash
# Hostile runs of lumen dce / t1 (issue 15, docs/RELIABILITY.md): a symlink planted at the
# checkpoint's name, two runs into one folder, a killed --overwrite run, options wrong only for
# the fitting stage, prefixes that are JSON, HTML or a path, and sidecar / header values that are
# no number a scanner writes. Each check failed before the fix. Input: the demo phantom.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
command -v python3 > /dev/null || { echo "python3 not found: skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"
need_test_hooks

demo_phantom
base="--dce $P --t1map $T --mask $M --aif parker --no-report -q"
absent() { [ ! -e "$1" ]; }
no_files() { [ -z "$(find "$1" -type f 2> /dev/null)" ]; }
json_ok() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2> /dev/null; }

# ---- 1. the checkpoint never follows a planted symlink (or opens a FIFO) at its name
echo precious > victim.txt
for mode in fresh resume; do
  mkdir -p "c_$mode"
  ln -s ../victim.txt "c_$mode/.sub-demo_model-tofts.ckpt"
  flag=; [ $mode = resume ] && flag=--resume
  "$bin" dce $base --out "c_$mode" $flag 2> err.txt; rc=$?
  check "checkpoint symlink ($mode): refused, exit 1 (got $rc)" "[ $rc -eq 1 ] && grep -q \"checkpoint .*ckpt' is a symbolic link\" err.txt" || cat err.txt
  check "checkpoint symlink ($mode): its target is unchanged" "[ \"\$(cat victim.txt)\" = precious ]"
  check "checkpoint symlink ($mode): the link is left as it was, nothing written" \
    "[ -L c_$mode/.sub-demo_model-tofts.ckpt ] && no_files c_$mode"
done
mkdir -p c_fifo && mkfifo c_fifo/.sub-demo_model-tofts.ckpt
timeout 30 "$bin" dce $base --out c_fifo --resume 2> err.txt; rc=$?
check "checkpoint FIFO (--resume): refused at once, exit 1 (got $rc)" "[ $rc -eq 1 ] && grep -q 'FIFO' err.txt" || cat err.txt
LUMEN_TEST_ABORT_AFTER_CHUNK=1 "$bin" dce $base --chunk 100 --out c_priv 2> /dev/null
check "a checkpoint is a private regular file (mode 600)" \
  "[ -f c_priv/.sub-demo_model-tofts.ckpt ] && [ ! -L c_priv/.sub-demo_model-tofts.ckpt ] && [ \"\$(stat -c %a c_priv/.sub-demo_model-tofts.ckpt)\" = 600 ]"
"$bin" dce $base --chunk 100 --out c_priv --resume 2> err.txt; rc=$?
check "and --resume continues from it (exit $rc)" "[ $rc -eq 0 ] && [ -f c_priv/sub-demo_runlog.json ] && [ ! -e c_priv/.sub-demo_model-tofts.ckpt ]" || cat err.txt

# ---- 5. one run at a time in an output folder
rm -f go go.held
LUMEN_TEST_HOLD_LOCK=$PWD/go "$bin" dce $base --out l1 2> err1.txt &
pid=$!
for _ in $(seq 100); do [ -e go.held ] && break; sleep 0.1; done
"$bin" dce $base --out l1 --overwrite 2> err.txt; rc=$?
check "second run into a busy folder: exit 1 (got $rc)" "[ $rc -eq 1 ]"
check "second run: names the holder's PID $pid" \
  "grep -q \"output folder 'l1' is being written by another lumen run (PID $pid); wait for it or choose another --out\" err.txt" || cat err.txt
touch go
wait $pid; rc=$?
check "the first run completes (exit $rc) and leaves no lock file" "[ $rc -eq 0 ] && [ -f l1/sub-demo_runlog.json ] && absent l1/.lumen.lock" || cat err1.txt
mkdir -p l2 && echo 999999 > l2/.lumen.lock   # a killed run's lock file: no process holds it
"$bin" dce $base --out l2 2> err.txt; rc=$?
check "a stale lock file (killed run) does not block (exit $rc)" "[ $rc -eq 0 ] && absent l2/.lumen.lock" || cat err.txt
echo precious > victim2.txt; mkdir -p l3 && ln -s ../victim2.txt l3/.lumen.lock
"$bin" dce $base --out l3 2> err.txt; rc=$?
check "a symlink at the lock file's name: refused (exit $rc), its target unchanged" \
  "[ $rc -eq 1 ] && grep -q 'lock file .* is a symbolic link' err.txt && [ \"\$(cat victim2.txt)\" = precious ]" || cat err.txt

# ---- 6. an interrupted --overwrite run leaves no old run log beside its new files
"$bin" dce $base --out r1 2> err.txt || cat err.txt
find r1 -type f -exec touch -d '-2 hours' {} +
touch -d '-1 hour' marker
LUMEN_TEST_ABORT_AFTER_CHUNK=1 "$bin" dce $base --chunk 100 --overwrite --out r1 2> /dev/null; rc=$?
check "killed --overwrite run: exit 75 (got $rc), new files written" "[ $rc -eq 75 ] && [ -n \"\$(find r1 -name '*.nii.gz' -newer marker)\" ]"
check "killed --overwrite run: the old run log is gone (json and txt)" "absent r1/sub-demo_runlog.json && absent r1/sub-demo_runlog.txt"
"$bin" dce $base --chunk 100 --out r1 --resume 2> err.txt; rc=$?
check "then --resume completes with a new run log (exit $rc)" "[ $rc -eq 0 ] && json_ok r1/sub-demo_runlog.json" || cat err.txt

# ---- 7. options wrong only for the fitting stage: usage errors, nothing written
usage() { # usage NAME REGEX OUT COMMAND...: exit 2, message, OUT not created
  local name=$1 re=$2 out=$3; shift 3
  "$@" 2> err.txt; local rc=$?
  check "$name: exit 2 (got $rc), --out not created" "[ $rc -eq 2 ] && absent $out"
  check "$name: message /$re/" "grep -Eq -- \"$re\" err.txt" || cat err.txt
}
usage "--backend bogus" "backend 'bogus' is unknown" u1 "$bin" dce $base --backend bogus --out u1
usage "bounds that exclude the start" "start of ve is 0.1, outside its bounds \[0.5, 1\]" u2 \
  "$bin" dce $base --bounds ve=0.5:1 --start ve=0.1 --out u2
usage "--models tofts,bogus" "'bogus' is not a DCE model" u3 "$bin" dce $base --models tofts,bogus --out u3
usage "--aif bogus" "--aif 'bogus': expected auto, parker" u4 "$bin" dce $base --aif bogus --out u4
printf 'backend = bogus\n' > bad.cfg
usage "config file backend = bogus" "backend 'bogus' is unknown" u5 "$bin" dce $base --config bad.cfg --out u5
usage "--baseline-start above --baseline" "baseline frames \[7, 5\) are empty" u6 \
  "$bin" dce $base --baseline 5 --baseline-start 7 --out u6
usage "t1 --method bogus" "--method 'bogus': expected vfa" u7 "$bin" t1 --in $P --method bogus --tr 0.005 --out u7
# a model that is no T1 method (its x values are no flip angles or recovery times) is refused
usage "t1 --method tofts" "--method 'tofts': expected vfa, vfa-linear, vfa-2pt, ir, sr \\(the T1 methods\\)" u7b \
  "$bin" t1 --in $P --method tofts --tr 0.005 --out u7b
usage "t1 --backend bogus" "backend 'bogus' is unknown" u8 "$bin" t1 --in $P $P --flip-angles 5,20 --tr 0.005 --backend bogus --out u8
usage "dce --vfa with T1 bounds that exclude its start" "start of T1 is 9, outside its bounds \[0.1, 3\]" u9 \
  "$bin" dce --dce $P --vfa $P --mask $M --bounds T1=0.1:3 --start T1=9 --out u9

# ---- 8. the prefix (and every string) is escaped in the run log's JSON
i=0
for pf in 'a"b' 'a\b'; do
  i=$((i + 1))
  "$bin" dce $base --prefix "$pf" --out j$i 2> err.txt; rc=$?
  check "prefix $pf: exit 0 (got $rc)" "[ $rc -eq 0 ]" || cat err.txt
  python3 -c 'import json,sys
d, pf = sys.argv[1], sys.argv[2]
j = json.load(open(d + "/" + pf + "_runlog.json"))
assert j["prefix"] == pf and j["stages"]["B"]["file"] == pf + "_aif.tsv", (j["prefix"], j["stages"]["B"]["file"])
assert j["config"]["prefix"] == pf' j$i "$pf" > py.txt 2>&1; ok=$?
  check "prefix $pf: the run log is valid JSON recording the prefix and the AIF file exactly" "[ $ok -eq 0 ]" || cat py.txt
done

# ---- 9. report.html holds no markup or link from the prefix
html_safe() { # no tag or attribute but lumen's own, no event handler, every link relative
  python3 - "$1" <<'PY'
import sys
from html.parser import HTMLParser
ok = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "code", "a", "ul", "li", "pre", "div",
      "b", "br", "img", "table", "tr", "th", "td", "span",
      # the inline SVG plots (issue 17): shapes and text only, no script, no foreignObject, no link
      "svg", "rect", "line", "polyline", "circle", "g", "text"}
class P(HTMLParser):
    def handle_starttag(self, tag, attrs):
        assert tag in ok, "tag " + tag
        for k, v in attrs:
            assert not k.startswith("on"), "attribute " + k
            if k in ("href", "src"):
                assert v.startswith("./"), k + "=" + v
P().feed(open(sys.argv[1], encoding="utf-8").read())
PY
}
"$bin" dce --dce $P --t1map $T --mask $M --aif parker -q --prefix '<img src=x onerror=alert(1)>' --out h1 2> err.txt; rc=$?
check "prefix <img onerror>: exit 0 (got $rc)" "[ $rc -eq 0 ]" || cat err.txt
check "prefix <img onerror>: report.html has no live tag, the prefix shown escaped" \
  "html_safe h1/report.html && grep -qF '&lt;img src=x onerror=alert(1)&gt;' h1/report.html && ! grep -q '<img src=x' h1/report.html"
check "prefix <img onerror>: the run log is valid JSON" "json_ok 'h1/<img src=x onerror=alert(1)>_runlog.json'"
"$bin" dce --dce $P --t1map $T --mask $M --aif parker -q --prefix 'javascript:alert(1)' --out h2 2> err.txt; rc=$?
check "prefix javascript:: exit 0 (got $rc), no javascript: link" \
  "[ $rc -eq 0 ] && html_safe h2/report.html && ! grep -q 'href=\"javascript:' h2/report.html" || cat err.txt

# ---- 10. a prefix is a file-name part: no path out of --out
usage "prefix ../escaped" "--prefix '../escaped': it contains '/'" p1 "$bin" dce $base --prefix ../escaped --out p1
check "prefix ../escaped: nothing written beside --out" "[ -z \"\$(ls -d escaped* 2> /dev/null)\" ]"
usage "prefix a/b" "--prefix 'a/b': it contains '/'" p2 "$bin" dce $base --prefix a/b --out p2
usage "empty prefix" "--prefix '': it is empty" p3 "$bin" dce $base --prefix '' --out p3
usage "prefix .hidden" "--prefix '.hidden': it starts with '.'" p4 "$bin" dce $base --prefix .hidden --out p4
usage "prefix not UTF-8" "it is not valid UTF-8" p6 "$bin" dce $base --prefix "$(printf 'a\377b')" --out p6
usage "t1 prefix ../x" "--prefix '../x'" p5 "$bin" t1 --in $P $P --flip-angles 5,20 --tr 0.005 --prefix ../x --out p5

# ---- 16. sidecar and header values that are no number a scanner writes: say what is wrong
side() { # side NAME KEY JSONTEXT: a copy of the demo series whose sidecar has KEY = JSONTEXT (as written)
  mkdir -p "$1"
  cp $P "$1/dce.nii.gz"
  python3 -c "import json,sys; j=json.load(open('demo/sub-demo_dce.json')); j[sys.argv[2]]='@V@'; open(sys.argv[1] + '/dce.json', 'w').write(json.dumps(j).replace('\"@V@\"', sys.argv[3]))" "$1" "$2" "$3"
}
data_error() { # data_error NAME REGEX OUT COMMAND...: exit 1, message, no file in OUT
  local name=$1 re=$2 out=$3; shift 3
  "$@" 2> err.txt; local rc=$?
  check "$name: exit 1 (got $rc), nothing written" "[ $rc -eq 1 ] && no_files $out"
  check "$name: message /$re/" "grep -Eq -- \"$re\" err.txt && ! grep -q missing err.txt" || cat err.txt
}
side s1 ContrastAgentRelaxivity 0
data_error "sidecar relaxivity 0" "sidecar 's1/dce.json' ContrastAgentRelaxivity = 0: a relaxivity must be positive" o1 \
  "$bin" dce --dce s1/dce.nii.gz --t1map $T --mask $M --aif parker --out o1
side s2 ContrastAgentRelaxivity -1
data_error "sidecar relaxivity -1" "ContrastAgentRelaxivity = -1: a relaxivity must be positive" o2 \
  "$bin" dce --dce s2/dce.nii.gz --t1map $T --mask $M --aif parker --out o2
side s3 ContrastAgentRelaxivity 1e999
data_error "sidecar relaxivity 1e999" "ContrastAgentRelaxivity.*(inf|not a finite number)" o3 \
  "$bin" dce --dce s3/dce.nii.gz --t1map $T --mask $M --aif parker --out o3
side s4 FlipAngle 1e999
data_error "sidecar FlipAngle 1e999" "FlipAngle.*(inf|not a finite number)" o4 \
  "$bin" dce --dce s4/dce.nii.gz --t1map $T --mask $M --aif parker --out o4
usage "--relaxivity 0" "--relaxivity = 0: a relaxivity must be positive" o5 "$bin" dce $base --relaxivity 0 --out o5
# header frame interval: a series without a sidecar, pixdim[4] set
for dt in 1e-30 3e38; do
  python3 - "$P" "hdr_$dt.nii.gz" "$dt" <<'PY'
import gzip, struct, sys
raw = bytearray(gzip.decompress(open(sys.argv[1], 'rb').read()))
struct.pack_into('<f', raw, 92, float(sys.argv[3]))   # pixdim[4]
open(sys.argv[2], 'wb').write(gzip.compress(bytes(raw)))
PY
  data_error "header pixdim[4] = $dt s" "header pixdim\[4\] \(frame interval\) = .*implausible \(expected 0.01..600 s\); not a frame interval in any unit" \
    "oh_$dt" "$bin" dce --dce "hdr_$dt.nii.gz" --t1map $T --mask $M --aif parker --flip-angle 20 --tr 0.005 --relaxivity 4.5 --out "oh_$dt"
done
exit $fail
