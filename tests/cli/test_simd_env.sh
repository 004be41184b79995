#!/usr/bin/env bash
# LUMEN_SIMD (issue 16 item 4): the library reads no environment; the command line turns
# LUMEN_SIMD=off|avx2|avx512|auto into the context's CPU vector limit (lumen_ctx_set_cpu_simd).
# Every limit gives the same maps to float rounding (fit: vector lanes vs the scalar solver) and the
# same filtered image (median, Gaussian: generic vs vector loops); another value is refused, loudly,
# before anything is written.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
command -v python3 > /dev/null || { echo "python3 not found: skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"

demo_phantom
fit() { "$bin" dce --dce $P --t1map $T --mask $M --models tofts --aif parker --threads 1 -q --out "$@"; }

fit auto 2> err.txt; check "dce with the default limit" "[ $? -eq 0 ]" || cat err.txt
LUMEN_SIMD=off fit off 2> err.txt; check "dce with LUMEN_SIMD=off" "[ $? -eq 0 ]" || cat err.txt
LUMEN_SIMD=avx2 fit avx2 2> err.txt; check "dce with LUMEN_SIMD=avx2" "[ $? -eq 0 ]" || cat err.txt

cat > cmp.py <<'PYEOF'
import gzip, struct, sys
def read(path):
    d = gzip.open(path, 'rb').read()
    dim = struct.unpack_from('<8h', d, 40); dt = struct.unpack_from('<h', d, 70)[0]
    off = int(struct.unpack_from('<f', d, 108)[0]); n = 1
    for k in range(dim[0]): n *= dim[1 + k]
    code = {2: 'B', 4: 'h', 8: 'i', 16: 'f', 64: 'd'}[dt]
    return struct.unpack_from('<%d%s' % (n, code), d, off)
a, b, rtol = read(sys.argv[1]), read(sys.argv[2]), float(sys.argv[3])
assert len(a) == len(b) and len(a) > 0, (len(a), len(b))
bad = [(i, x, y) for i, (x, y) in enumerate(zip(a, b))
       if not (x == y or (x != x and y != y) or abs(x - y) <= rtol * max(abs(x), abs(y)) + 1e-9)]
assert not bad, '%d of %d values differ, first %r' % (len(bad), len(a), bad[:3])
assert any(x == x and x != 0 for x in a), 'no finite non-zero value'
PYEOF
for lim in off avx2; do
  for map in Ktrans ve; do
    f=sub-demo_model-tofts_param-${map}.nii.gz
    check "tofts $map: LUMEN_SIMD=$lim equals the default to float rounding" \
      "python3 cmp.py auto/$f $lim/$f 1e-4" || ls auto
  done
  f=sub-demo_model-tofts_param-state.nii.gz
  check "tofts state: LUMEN_SIMD=$lim equals the default" "python3 cmp.py auto/$f $lim/$f 0"
done

# filters: generic and vector loops give the same image, bit for bit
"$bin" filter median $T med_auto.nii.gz --size 3 2> err.txt || cat err.txt
LUMEN_SIMD=off "$bin" filter median $T med_off.nii.gz --size 3 2> err.txt || cat err.txt
check "median 3: LUMEN_SIMD=off equals the default bit for bit" "python3 cmp.py med_auto.nii.gz med_off.nii.gz 0"
"$bin" filter gaussian $T g_auto.nii.gz --sigma 1.5 2> err.txt || cat err.txt
LUMEN_SIMD=off "$bin" filter gaussian $T g_off.nii.gz --sigma 1.5 2> err.txt || cat err.txt
check "gaussian 1.5: LUMEN_SIMD=off equals the default bit for bit" "python3 cmp.py g_auto.nii.gz g_off.nii.gz 0"

# a value the tool does not know: refused before anything is written
LUMEN_SIMD=sse9 fit bad > /dev/null 2> err.txt
rc=$?
check "LUMEN_SIMD=sse9: refused (exit $rc)" "[ $rc -ne 0 ]"
check "LUMEN_SIMD=sse9: the message names the variable and the accepted values" \
  "grep -q \"LUMEN_SIMD is 'sse9' in the environment, expected off, avx2, avx512 or auto\" err.txt" || cat err.txt
check "LUMEN_SIMD=sse9: nothing written" "[ -z \"\$(ls -A bad 2>/dev/null)\" ]"
exit $fail
