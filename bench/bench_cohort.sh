#!/usr/bin/env bash
# Scale-out benchmark (issue 7, docs/SCALE.md): prints markdown tables of
#   1. a 20-subject synthetic cohort through `lumen batch dce`: total read time and total compute
#      time (sums of the subjects' run logs), wall time, and wall / max(read, compute per job)
#      (target <= 1.15), peak memory (/usr/bin/time -v) against --memory-limit;
#   2. one volume on the standard tier: `mpirun -np 1` vs `-np 2` (target >= 1.7x on 2 cores);
#   3. an image batch (40 images 1024 x 1024, gaussian sigma 3 and febds): one worker vs
#      `--device cpu,cpu`, with and without overlapped reading/writing, under --memory-limit 16M,
#      24M and 64M: the stage line's peak in flight, peak RSS against the baselines (no data; one
#      image), and whether the outputs are byte-identical to the serial run.
# usage: bash bench/bench_cohort.sh [BUILD_DIR] [--quick]     (about 2-4 minutes on 2 cores)
# The phantom is `lumen dce-demo`'s (32 x 24 x 2, 80 frames) tiled along z: to 32 x 24 x 16 for
# the cohort's subjects and to 32 x 24 x 64 for the MPI volume (large enough that starting the
# ranks does not dominate).
# Never part of the tests: timings depend on the machine (state its load: the `uptime` lines).
set -euo pipefail
build="${1:-build}"
quick=0
[ "${2:-}" = "--quick" ] && quick=1
here=$(cd "$(dirname "$0")" && pwd)
bin="$(cd "$build" && pwd)/lumen"
[ -x "$bin" ] || { echo "bench_cohort.sh: $bin not found; build first (cmake --build $build)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench_cohort.sh: python3 is needed" >&2; exit 1; }
nsub=20; nimg=40
[ $quick -eq 1 ] && { nsub=6; nimg=8; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT; cd "$tmp"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
now() { date +%s.%N; }
since() { python3 -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$(now)"; }
peak_mib() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$1"; }

echo "machine: $(nproc) cores, $(uname -m); lumen: $("$bin" --version 2>/dev/null || echo '?')"
echo "load before: $(uptime)"

# ---------------------------------------------------------------- the phantom and the cohort
"$bin" dce-demo --out demo -q >/dev/null 2>&1
python3 - "$nsub" <<'PYEOF'
import gzip, os, shutil, struct, sys
def tile_z(src, dst, reps):
    d = gzip.open(src).read()
    dim = list(struct.unpack_from('<8h', d, 40)); bitpix = struct.unpack_from('<h', d, 72)[0]
    off = int(struct.unpack_from('<f', d, 108)[0]); bpv = bitpix // 8
    nx, ny, nz = dim[1], dim[2], dim[3]; nt = 1
    for k in range(4, dim[0] + 1): nt *= dim[k]
    slab = nx * ny * nz * bpv
    body = b''.join(d[off + t * slab: off + (t + 1) * slab] * reps for t in range(nt))
    hdr = bytearray(d[:off]); dim[3] = nz * reps; struct.pack_into('<8h', hdr, 40, *dim)
    with gzip.open(dst, 'wb', compresslevel=1) as f: f.write(bytes(hdr) + body)
os.makedirs('mid', exist_ok=True)
os.makedirs('big', exist_ok=True)
for name in ('dce', 'T1map', 'mask'):
    tile_z('demo/sub-demo_%s.nii.gz' % name, 'mid/%s.nii.gz' % name, 8)
    tile_z('demo/sub-demo_%s.nii.gz' % name, 'big/%s.nii.gz' % name, 32)
shutil.copy('demo/sub-demo_dce.json', 'mid/dce.json')
shutil.copy('demo/sub-demo_dce.json', 'big/dce.json')
for s in range(1, int(sys.argv[1]) + 1):
    p = 'cohort/sub-%02d/perf' % s; os.makedirs(p)
    for src, dst in (('dce.nii.gz', 'dce.nii.gz'), ('dce.json', 'dce.json'), ('T1map.nii.gz', 'T1map.nii.gz'), ('mask.nii.gz', 'mask.nii.gz')):
        shutil.copy('mid/' + src, '%s/sub-%02d_%s' % (p, s, dst))
PYEOF

# sums of the subjects' run logs: read seconds and the rest (stages A..F and writing)
sums() {
  python3 - "$1" <<'PYEOF'
import glob, json, sys
r = c = 0.0
for f in glob.glob(sys.argv[1] + '/**/*_runlog.json', recursive=True):
    d = json.load(open(f)); rd = d['stages']['read']['seconds']; r += rd; c += d['total_seconds'] - rd
print('%.2f %.2f' % (r, c))
PYEOF
}

echo
echo "### Cohort: $nsub subjects (32 x 24 x 16 voxels x 80 frames; tofts + etofts; --threads 1 per subject)"
echo
echo "| \`lumen batch dce\` | wall s | total read s | total compute s | wall / max(read, compute) | wall / max(read, compute / jobs) | peak RSS MiB (largest process) |"
echo "|---|---|---|---|---|---|---|"
for cfg in "1|" "2|" "2|--memory-limit 64M"; do
  jobs=${cfg%%|*}; extra=${cfg#*|}
  rm -rf deriv
  t0=$(now)
  # shellcheck disable=SC2086
  /usr/bin/time -v -o time.txt "$bin" batch dce --bids cohort --out deriv --jobs "$jobs" $extra -q \
    -- --models tofts,etofts --threads 1 --no-report > batch.txt 2>&1 || { cat batch.txt; exit 1; }
  wall=$(since "$t0")
  read -r rs cs < <(sums deriv)
  ratio1=$(python3 -c "print('%.2f' % ($wall / max($rs, $cs)))")
  ratio=$(python3 -c "print('%.2f' % ($wall / max($rs, $cs / $jobs)))")
  echo "| \`--jobs $jobs $extra\` | $wall | $rs | $cs | $ratio1 | $ratio | $(peak_mib time.txt) |"
done

echo
echo "### One volume (32 x 24 x 64, tofts + etofts), standard tier, --threads 1 per rank"
echo
echo "| run | wall s | speed-up |"
echo "|---|---|---|"
dce_args=(dce --dce big/dce.nii.gz --t1map big/T1map.nii.gz --mask big/mask.nii.gz --models tofts,etofts
          --backend standard --threads 1 --no-report -q --overwrite)
t1=""
for np in 1 2; do
  best=""
  for rep in 1 2; do
    rm -rf "mpi$np"
    t0=$(now)
    mpirun -np "$np" "$bin" "${dce_args[@]}" --out "mpi$np" > mpi.txt 2>&1 || { cat mpi.txt; exit 1; }
    w=$(since "$t0")
    best=$(python3 -c "print(min(float('$w'), float('${best:-1e9}')))")
  done
  [ -z "$t1" ] && t1=$best
  echo "| \`mpirun -np $np lumen dce --backend standard\` (best of 2) | $best | $(python3 -c "print('%.2fx' % ($t1 / $best))") |"
done
same=1
for f in mpi1/*.nii.gz; do cmp -s "$f" "mpi2/$(basename "$f")" || same=0; done
echo
echo "MPI outputs byte-identical to one rank: $([ $same -eq 1 ] && echo yes || echo NO)"

echo
echo "### Image batch: $nimg images 1024 x 1024 float32 (.nii.gz in, .nii out): gaussian sigma 3, febds"
echo
python3 - "$nimg" <<'PYEOF'
import array, gzip, os, random, struct, sys
n = 1024; r = random.Random(7)
vals = array.array('f', (r.random() * 1000.0 for _ in range(n * n)))
hdr = bytearray(348); struct.pack_into('<i', hdr, 0, 348)
struct.pack_into('<8h', hdr, 40, 2, n, n, 1, 1, 1, 1, 1); struct.pack_into('<hh', hdr, 70, 16, 32)
struct.pack_into('<8f', hdr, 76, *[1] * 8); struct.pack_into('<f', hdr, 108, 352); hdr[344:348] = b'n+1\x00'
os.makedirs('img', exist_ok=True)
with gzip.open('img/i00.nii.gz', 'wb', compresslevel=1) as f: f.write(bytes(hdr) + b'\x00' * 4 + vals.tobytes())
with open('list.txt', 'w') as L:
    for k in range(int(sys.argv[1])):
        if k: os.link('img/i00.nii.gz', 'img/i%02d.nii.gz' % k)
        L.write('img/i%02d.nii.gz out/o%02d.nii\n' % (k, k))
PYEOF
# the baselines: the process without data (an 8 x 8 image: code, libraries, threads) and one
# image of the batch through the same path; --memory-limit covers lumen's data buffers, so the
# bar is peak RSS - the one-image baseline <= the limit
python3 - <<'PYEOF'
import struct
hdr = bytearray(348); struct.pack_into('<i', hdr, 0, 348)
struct.pack_into('<8h', hdr, 40, 2, 8, 8, 1, 1, 1, 1, 1); struct.pack_into('<hh', hdr, 70, 16, 32)
struct.pack_into('<8f', hdr, 76, *[1] * 8); struct.pack_into('<f', hdr, 108, 352); hdr[344:348] = b'n+1\x00'
open('tiny.nii', 'wb').write(bytes(hdr) + b'\x00' * 4 + struct.pack('<64f', *range(64)))
PYEOF
echo "img/i00.nii.gz out/one.nii" > one.txt
mkdir -p out ref
/usr/bin/time -v -o time.txt "$bin" filter gaussian --sigma 3 tiny.nii out/tiny.nii --overwrite -q
base0=$(peak_mib time.txt)
/usr/bin/time -v -o time.txt "$bin" filter gaussian --sigma 3 --batch one.txt --device cpu --overwrite -q
base1=$(peak_mib time.txt)
/usr/bin/time -v -o time.txt "$bin" segment febds --batch one.txt --device cpu --overwrite -q
base1f=$(peak_mib time.txt)
echo "Baselines (peak RSS MiB): no data (8 x 8 image) $base0; one image: gaussian $base1, febds $base1f."
echo
echo "| command | wall s | stages (busy s; compute summed over workers) | peak in flight (stage line) | peak RSS MiB | RSS - one-image baseline | outputs = serial |"
echo "|---|---|---|---|---|---|---|"
for cfg in "filter gaussian --sigma 3|cpu|--no-overlap" "filter gaussian --sigma 3|cpu|" \
           "filter gaussian --sigma 3|cpu,cpu|--no-overlap" "filter gaussian --sigma 3|cpu,cpu|" \
           "filter gaussian --sigma 3|cpu|--memory-limit 16M" "filter gaussian --sigma 3|cpu,cpu|--memory-limit 16M" \
           "filter gaussian --sigma 3|cpu|--memory-limit 24M" "filter gaussian --sigma 3|cpu,cpu|--memory-limit 24M" \
           "filter gaussian --sigma 3|cpu|--memory-limit 64M" "filter gaussian --sigma 3|cpu,cpu|--memory-limit 64M" \
           "segment febds|cpu|--no-overlap" "segment febds|cpu|" "segment febds|cpu,cpu|" \
           "segment febds|cpu,cpu|--memory-limit 24M" "segment febds|cpu,cpu|--memory-limit 64M"; do
  op=${cfg%%|*}; rest=${cfg#*|}; dev=${rest%%|*}; extra=${rest#*|}
  rm -f out/o*.nii
  t0=$(now)
  # shellcheck disable=SC2086
  /usr/bin/time -v -o time.txt "$bin" $op --batch list.txt --device "$dev" $extra --overwrite \
    > /dev/null 2> img.txt || { cat img.txt; exit 1; }
  wall=$(since "$t0")
  stages=$(grep -o 'read [0-9.]* s, compute [0-9.]* s' img.txt || true)
  wr=$(grep -o 'write [0-9.]* s' img.txt || true)
  flight=$(grep -o 'peak [0-9.]* MiB in flight' img.txt | grep -o '[0-9.]*' || true)
  over=$(grep -q 'over it' img.txt && echo " (over: one image alone)" || true)
  rss=$(peak_mib time.txt)
  b=$base1; case "$op" in segment*) b=$base1f;; esac
  # the first row of each op (serial, one worker) is the reference for the others
  key=$(echo "$op" | tr -c 'a-z' '_')
  same=yes
  if [ ! -d "ref/$key" ]; then mkdir -p "ref/$key"; cp out/o*.nii "ref/$key/"; same="(reference)"
  else for f in ref/"$key"/o*.nii; do cmp -s "$f" "out/$(basename "$f")" || same=NO; done; fi
  echo "| \`lumen $op --device $dev $extra\` | $wall | $stages, $wr | $flight MiB$over | $rss | $((rss - b)) | $same |"
done
echo
echo "load after: $(uptime)"
