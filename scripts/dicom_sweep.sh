#!/usr/bin/env bash
# Every .dcm under the folders given through `lumen convert FILE` and, when it is installed,
# `dcm2niix -s y -z n FILE` (one file each, in its own output folder), then one line per file:
# lumen's exit status, its first message or output dimensions, dcm2niix's dimensions, and when
# both wrote an image whether the voxels and the sform agree (docs/DICOM.md "Checked on
# third-party files": pydicom's and nibabel's test data, unpacked from their wheels).
#   scripts/dicom_sweep.sh LUMEN OUTDIR FOLDER...
# Needs /usr/bin/python3 with numpy. A NIfTI with qform/sform code 0 (no geometry) is compared by
# voxels and pixdim only.
set -u
lumen=${1:?usage: dicom_sweep.sh LUMEN OUTDIR FOLDER...}
out=${2:?usage: dicom_sweep.sh LUMEN OUTDIR FOLDER...}
shift 2
mkdir -p "$out"
find "$@" -name '*.dcm' | sort | while read -r f; do
  key=$(printf '%s' "$f" | tr '/' '_' | sed 's/^_*//; s/\.dcm$//')
  rm -rf "$out/l_$key" "$out/d_$key" && mkdir -p "$out/l_$key" "$out/d_$key"
  timeout 120 "$lumen" convert "$f" --out "$out/l_$key" --uncompressed > "$out/l_$key.log" 2>&1
  echo "$? $key" > "$out/l_$key.rc"
  if command -v dcm2niix > /dev/null; then
    timeout 120 dcm2niix -s y -z n -o "$out/d_$key" "$f" > "$out/d_$key.log" 2>&1
  fi
done
/usr/bin/python3 - "$out" <<'PYEOF'
import glob, os, struct, sys
import numpy as np
out = sys.argv[1]
TYPES = {2: 'u1', 4: 'i2', 8: 'i4', 16: 'f4', 64: 'f8', 256: 'i1', 512: 'u2', 768: 'u4'}

def nii(p):
    b = open(p, 'rb').read()
    e = '<' if struct.unpack('<i', b[:4])[0] == 348 else '>'
    dim = struct.unpack(e + '8h', b[40:56]); dt = struct.unpack(e + 'h', b[70:72])[0]
    pix = struct.unpack(e + '8f', b[76:108]); off = int(struct.unpack(e + 'f', b[108:112])[0])
    sl, it = struct.unpack(e + '2f', b[112:120]); codes = struct.unpack(e + '2h', b[252:256])
    S = np.array(struct.unpack(e + '12f', b[280:328])).reshape(3, 4)
    shape = tuple(d for d in dim[1:1 + dim[0]])
    if dt not in TYPES:
        return shape, None, pix, codes, S
    v = np.frombuffer(b, np.dtype(e + TYPES[dt]), int(np.prod(shape)), off).astype(np.float64)
    if sl != 0 and np.isfinite(sl):
        v = v * sl + it
    return shape, v, pix, codes, S

for rc in sorted(glob.glob(f'{out}/l_*.rc')):
    status, key = open(rc).read().split(maxsplit=1)
    key = key.strip()
    ln = sorted(glob.glob(f'{out}/l_{key}/*.nii'))
    dn = [p for p in sorted(glob.glob(f'{out}/d_{key}/*.nii')) if nii(p)[0][:3] != (1, 1, 1)]
    log = [l for l in open(f'{out}/l_{key}.log').read().splitlines() if 'warning: skipped' in l or 'lumen_dicom' in l]
    what = 'x'.join(map(str, nii(ln[0])[0])) if ln else (log[0].split(': ', 3)[-1][:110] if log else '?')
    d2n = 'x'.join(map(str, nii(dn[0])[0])) if dn else '-'
    verdict = ''
    if ln and dn:
        a, b = nii(ln[0]), nii(dn[0])
        if a[1] is None or b[1] is None or a[0] != b[0]:
            verdict = 'shapes/types differ'
        else:
            dv = np.max(np.abs(a[1] - b[1]))
            geo = (np.max(np.abs(a[4] - b[4])) if a[3][1] > 0 and b[3][1] > 0
                   else np.max(np.abs(np.array(a[2][1:4]) - np.array(b[2][1:4]))))
            verdict = f'voxels max|diff| {dv:g}, {"sform" if a[3][1] > 0 else "pixdim"} max|diff| {geo:.3g}'
    print(f'{status} {key:60s} lumen: {what:40s} dcm2niix: {d2n:12s} {verdict}')
PYEOF
