#!/usr/bin/env bash
# lumen backends: the table, the JSON form, help, and usage errors, on any machine.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
. "$(dirname "$0")/lib.sh"

out=$("$bin" backends); rc=$?
check "backends exits 0 here" "[ $rc -eq 0 ]"
for row in cpu openmp precision cuda-build cuda-driver gsl nifti-io mpi python mex; do
  check "row $row present" "grep -qE '^$row +(PASS|FAIL|SKIP) ' <<<\"\$out\""
done
check "no FAIL row" "! grep -qE '^[a-z0-9:-]+ +FAIL ' <<<\"\$out\""
check "summary line" "grep -qE '^[0-9]+ parts checked: 0 failed$' <<<\"\$out\""

json=$("$bin" backends --json); rc=$?
check "--json exits 0" "[ $rc -eq 0 ]"
py=$(command -v python3 || true)
if [ -n "$py" ]; then
  check "--json is a list of {name,status,detail}" "$py -c '
import json,sys
rows=json.loads(sys.argv[1])
assert isinstance(rows,list) and len(rows)>=10
for r in rows:
    assert set(r)=={\"name\",\"status\",\"detail\"}, r
    assert r[\"status\"] in (\"PASS\",\"FAIL\",\"SKIP\"), r
    assert r[\"detail\"], r
names=[r[\"name\"] for r in rows]
assert \"cpu\" in names and \"cuda-driver\" in names
' \"\$json\""
else
  check "--json starts a list" "[ \"\${json:0:1}\" = '[' ]"
fi

help=$("$bin" backends --help); rc=$?
check "backends --help exits 0 and explains SKIP" "[ $rc -eq 0 ] && grep -q SKIP <<<\"\$help\" && grep -q -- --json <<<\"\$help\""
"$bin" backends --bogus >/dev/null 2>err.txt; rc=$?
check "unknown option -> exit 2 with a message" "[ $rc -eq 2 ] && grep -q bogus err.txt"
"$bin" backends --threads -4 >/dev/null 2>err.txt; rc=$?
check "bad --threads -> exit 2" "[ $rc -eq 2 ] && grep -q threads err.txt"

top=$("$bin" --help); rc=$?
check "lumen --help lists backends" "[ $rc -eq 0 ] && grep -q backends <<<\"\$top\""
"$bin" frobnicate >/dev/null 2>&1; rc=$?
check "unknown command -> exit 2" "[ $rc -eq 2 ]"
check "--version names lumen" "\"$bin\" --version | grep -q '^lumen '"

# the mpi row says what this build links (the same answer as `lumen batch --help`)
if "$bin" batch --help | grep -q "MPI on"; then want=PASS; else want=SKIP; fi
check "mpi row is $want, as the build's MPI setting" "grep -qE '^mpi +$want ' <<<\"\$out\""
# python/mex rows look where install.sh put the bindings (PREFIX/share/lumen/bindings.conf):
# a fake install prefix with a stand-in python and a folder holding lumen_fit
mkdir -p pfx/bin pfx/share/lumen mexdir
cp "$bin" pfx/bin/lumen
printf '#!/bin/sh\necho /fake/venv/lumen/__init__.py\n' > fakepy; chmod +x fakepy
printf 'function lumen_fit()\nend\n' > mexdir/lumen_fit.m
printf '# test\npython=%s/fakepy\nmex=%s/mexdir\n' "$PWD" "$PWD" > pfx/share/lumen/bindings.conf
pout=$(pfx/bin/lumen backends)
check "python row: the installer's python (bindings.conf)" "grep -qE '^python +PASS +.*fakepy imports lumen from /fake/venv' <<<\"\$pout\"" || echo "$pout"
if command -v octave-cli > /dev/null; then
  check "mex row: the installer's MEX folder (bindings.conf)" "grep -qE '^mex +PASS +.*mexdir/lumen_fit' <<<\"\$pout\"" || echo "$pout"
fi
printf 'python=%s/nopython\n' "$PWD" > pfx/share/lumen/bindings.conf
pout=$(pfx/bin/lumen backends); rc=$?
check "an installed binding that does not import is FAIL, naming bindings.conf" "[ $rc -eq 1 ] && grep -qE '^python +FAIL +.*nopython.*bindings.conf' <<<\"\$pout\"" || echo "$pout"
check "install.sh --help" "bash '$(dirname "$0")/../../install.sh' --help | grep -q -- --prefix"

if [ $fail -ne 0 ]; then echo "test_backends: FAILED"; exit 1; fi
echo "test_backends: all checks passed"
