#!/usr/bin/env bash
# Fingerprint of lumen's outputs (issue 16: a restructuring keeps outputs byte-identical):
#   scripts/output_fingerprint.sh LUMEN_BINARY > fingerprint.txt
# runs the demo, dce (five models, AIC), t1 (VFA), fit, filter and segment on deterministic inputs
# in a scratch folder and prints "sha256  path" of every output; run logs and report.html are left
# out (they hold timings). Compare two builds with diff. Needs python3 (writes the test PNG).
set -euo pipefail
bin=$(readlink -f "${1:?usage: output_fingerprint.sh LUMEN_BINARY}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$bin" dce-demo --out demo -q > /dev/null
P=demo/sub-demo_dce.nii.gz; T=demo/sub-demo_T1map.nii.gz; M=demo/sub-demo_mask.nii.gz
"$bin" dce --dce $P --t1map $T --mask $M --models tofts,etofts,patlak,2cum,fxr --aif parker --threads 2 -q --out dce5
"$bin" dce --dce $P --t1map $T --mask $M --models etofts --fit-delay --save-conc -q --out dcex
"$bin" t1 --in $T $T $T --mask $M --flip-angles 2,10,20 --tr 0.005 --allow-failures -q --out t1
python3 - <<'PY'
import struct, zlib
w, h = 96, 80
raw = b''.join(b'\x00' + bytes(((x * 7 + y * 13 + (x * y) % 17) % 251) for x in range(w)) for y in range(h))
def ch(t, d):
    c = struct.pack('>I', len(d)) + t + d
    return c + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
open('img.png', 'wb').write(b'\x89PNG\r\n\x1a\n' + ch(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0))
                           + ch(b'IDAT', zlib.compress(raw)) + ch(b'IEND', b''))
with open('curves.csv', 'w') as f:
    for k in range(1, 6):
        f.write(','.join('%g' % (0.06 * k * (1 - 2.718281828 ** (-0.1 * i))) for i in range(40)) + '\n')
with open('times.csv', 'w') as f:
    f.write('\n'.join('%g' % (5 * i) for i in range(40)) + '\n')
PY
mkdir -p img
for op in gaussian median dog log otsu; do "$bin" filter $op img.png img/f_$op.png 2> /dev/null || true; done
for alg in kmeans febds; do "$bin" segment $alg img.png img/s_$alg.png 2> /dev/null || true; done
for m in tofts etofts patlak; do "$bin" fit --model $m --curves curves.csv --times times.csv --aif parker --out fit_$m.csv 2> /dev/null; done
# a .gz is fingerprinted by its content: how the bytes are cut into gzip members is the writer's
# choice (64 KiB members since issue 44, src/io/gz_members.h), not part of the output
find . -type f ! -name '*runlog*' ! -name report.html ! -name curves.csv ! -name times.csv ! -name img.png | LC_ALL=C sort |
  while read -r f; do
    case $f in
      *.gz) printf '%s  %s (content)\n' "$(gzip -dc "$f" | sha256sum | cut -d' ' -f1)" "$f" ;;
      *) sha256sum "$f" ;;
    esac
  done
