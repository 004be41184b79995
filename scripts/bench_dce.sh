#!/usr/bin/env bash
# Speed of `lumen dce` (Tofts, tier cpu) on a 256x256x32 x 80-frame synthetic series (2.1 million
# voxels, no mask), I/O included; prints the stage timings from the run log.
# usage: scripts/bench_dce.sh [BUILD_DIR] [WORK_DIR]     (needs python3 and ~2 GB of disk and memory)
set -eu
build=${1:-build}
work=${2:-$(mktemp -d)}
bin=$build/lumen
mkdir -p "$work"
python3 - "$work" <<'PY'
import array, math, struct, sys
work = sys.argv[1]
nx, ny, nz, nt, dt = 256, 256, 32, 80, 5.0
# 64 distinct Tofts curves (Ktrans 0.02..0.5 /min, ve 0.1..0.6) with a Parker AIF (Hct 0.45,
# arrival 0.5 min), converted to SPGR signal (FA 15 deg, TR 5 ms, T1 1.2 s, M0 5000, r1 4.5),
# repeated over the volume; a small deterministic ripple keeps the curves from being identical.
def parker(t):
    if t < 0: return 0.0
    g = lambda A, T, s: A / (s * math.sqrt(2 * math.pi)) * math.exp(-(t - T) ** 2 / (2 * s * s))
    return (g(0.809, 0.17046, 0.0563) + g(0.330, 0.365, 0.132) + 1.050 * math.exp(-0.1685 * t) / (1 + math.exp(-38.078 * (t - 0.483)))) / 0.55
tm = [i * dt / 60 for i in range(nt)]
cp = [parker(x - 0.5) for x in tm]
fa, tr, t10, m0, r1 = math.radians(15), 0.005, 1.2, 5000.0, 4.5
def sig(c):
    E = math.exp(-tr * (1 / t10 + r1 * c)); return m0 * math.sin(fa) * (1 - E) / (1 - math.cos(fa) * E)
curves = []
for k in range(64):
    K, ve = 0.02 + 0.48 * (k % 8) / 7, 0.1 + 0.5 * (k // 8) / 7
    kep, C, G = K / ve, [], 0.0
    for i in range(nt):
        if i: d = math.exp(-kep * (tm[i] - tm[i - 1])); G = G * d + (tm[i] - tm[i - 1]) / 2 * (cp[i - 1] * d + cp[i])
        C.append(K * G)
    curves.append([sig(c) * (1 + 0.002 * math.sin(7 * k + i)) for i, c in enumerate(C)])
nv = nx * ny * nz
hdr = bytearray(348)
struct.pack_into('<i', hdr, 0, 348)
struct.pack_into('<8h', hdr, 40, 4, nx, ny, nz, nt, 1, 1, 1)
struct.pack_into('<hh', hdr, 70, 16, 32)
struct.pack_into('<8f', hdr, 76, 1, 1, 1, 3, dt, 1, 1, 1)
struct.pack_into('<f', hdr, 108, 352)
struct.pack_into('<B', hdr, 123, 10)
struct.pack_into('<hh', hdr, 252, 0, 1)
struct.pack_into('<12f', hdr, 280, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 3, 0)
hdr[344:348] = b'n+1\0'
with open(work + '/bench_dce.nii', 'wb') as f:
    f.write(bytes(hdr) + b'\0' * 4)
    for i in range(nt):
        f.write(array.array('f', [curves[k][i] for k in range(64)]).tobytes() * (nv // 64))
open(work + '/bench_dce.json', 'w').write('{"FlipAngle": 15, "RepetitionTime": 0.005}\n')
PY
rm -rf "$work/out"
start=$(date +%s.%N)
"$bin" dce --dce "$work/bench_dce.nii" --out "$work/out" --t1 1.2 --relaxivity 4.5 --dt 5 --models tofts \
  --aif parker --backend cpu --no-report --no-ci --threads "${THREADS:-0}" -q
end=$(date +%s.%N)
python3 - "$work/out/lumen_runlog.json" "$start" "$end" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); s = j['stages']; d = s['D']; m = d['models']['tofts']
print('lumen dce, tofts, 256x256x32 voxels x 80 frames (%d voxels), tier %s (used %s)' % (j['grid']['voxels'], m['backend_selected'], m['backend_used']))
print('| stage | seconds |\n|---|---:|')
print('| read + checks (incl. input checksum) | %.2f |' % s['read']['seconds'])
print('| A signal -> concentration | %.2f |' % s['A']['seconds'])
print('| B AIF | %.2f |' % s['B']['seconds'])
print('| D fitting (%.0f fits/s) | %.2f |' % (m['fits_per_s'], d['seconds_fitting']))
print('| D writing maps | %.2f |' % d['seconds_writing_maps'])
print('| total (run log) | %.2f |' % j['total_seconds'])
print('| wall clock (process) | %.2f |' % (float(sys.argv[3]) - float(sys.argv[2])))
print('converged %d of %d' % (m['voxels_converged'], m['voxels_fitted']))
PY
[ -n "${KEEP:-}" ] || rm -rf "$work"
