#!/usr/bin/env bash
# Hostile filesystem tricks against lumen's own files (issue 15, items 2, 3, 4, 11, 13;
# docs/RELIABILITY.md):
#  - lumen fit --out: a symlink planted at the old predictable temporary name or at --out never
#    redirects the write; an existing file is kept without --overwrite; a FIFO or device node is
#    never replaced, even with --overwrite;
#  - a write error on standard output (/dev/full) is exit 1 with a message (fit, backends);
#  - a FIFO as any input (NIfTI, PNG, table, sidecar) is refused at once, never a hang;
#  - a .nii.gz with hundreds of MiB of data after the voxels is read without decompressing them.
# Each check failed (or hung) before the fixes of issue 15, except the text-table FIFO checks, which
# guard the earlier fix of lumen_io_slurp. Runs in about 10 s (lumen backends alone takes 3).
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
here=$(cd "$(dirname "$0")" && pwd)
. "$(dirname "$0")/lib.sh"
need_test_hooks

# ---------------------------------------------------------------- inputs for lumen fit
awk 'BEGIN { for (i = 0; i <= 20; i++) printf "%g\n", i * 6 }' > times.txt
awk 'BEGIN { for (i = 0; i <= 20; i++) printf "%.12g\n", i * 0.1 }' > aif.txt
awk 'BEGIN { for (c = 1; c <= 3; c++) { for (i = 0; i <= 20; i++) { t = i * 0.1; k = 0.5;
  printf "%s%.12g", (i ? " " : ""), 0.1 * c * (t / k - (1 - exp(-k * t)) / (k * k)) } printf "\n" } }' > curves.txt
fit=(fit --model tofts --times times.txt --aif aif.txt --curves curves.txt -q)
header='Ktrans,ve,kep,sse,r2,state,iterations,Ktrans_cilo,Ktrans_cihi,ve_cilo,ve_cihi'
no_temporaries() { [ -z "$(ls -A | grep -E '\.tmp[.-]')" ]; }

# ---------------------------------------------------------------- item 2: temporary name
# The old writer used "OUT.tmp.PID": a subshell that execs lumen keeps its PID, so the link is
# planted at exactly the name the old code opened (and followed).
echo "precious" > victim.txt
( ln -s "$PWD/victim.txt" "fit.csv.tmp.$BASHPID" && exec "$bin" "${fit[@]}" --out fit.csv ) 2> err.txt; rc=$?
check "symlink at the old temporary name: fit exits 0" "[ $rc -eq 0 ]" || cat err.txt
check "symlink at the old temporary name: its target is unchanged" "[ \"\$(cat victim.txt)\" = precious ]"
check "fit.csv is a regular file, not a symlink, with the CSV" \
  "[ -f fit.csv ] && [ ! -L fit.csv ] && [ \"\$(head -1 fit.csv)\" = '$header' ] && [ \$(wc -l < fit.csv) -eq 4 ]"
rm -f fit.csv.tmp.*
check "no temporary file left" "no_temporaries"

ln -s "$PWD/victim.txt" link.csv
"$bin" "${fit[@]}" --out link.csv 2> err.txt; rc=$?
check "symlink at --out refused without --overwrite (exit 1, names it)" \
  "[ $rc -eq 1 ] && grep -q -- \"--out 'link.csv' is a symbolic link\" err.txt"
"$bin" "${fit[@]}" --out link.csv --overwrite 2> err.txt; rc=$?
check "symlink at --out refused with --overwrite (exit 1, 'symbolic link')" \
  "[ $rc -eq 1 ] && grep -q \"'link.csv' is a symbolic link\" err.txt"
check "symlink at --out: link and target unchanged" \
  "[ -L link.csv ] && [ \"\$(cat victim.txt)\" = precious ] && no_temporaries"

# ---------------------------------------------------------------- item 3: existing files
cp fit.csv keep.csv
"$bin" "${fit[@]}" --max-iterations 1 --out fit.csv 2> err.txt; rc=$?
check "existing --out refused without --overwrite (exit 1, path and --overwrite named)" \
  "[ $rc -eq 1 ] && grep -q \"'fit.csv' exists\" err.txt && grep -q -- '--overwrite' err.txt"
check "existing --out kept byte-identical" "cmp -s fit.csv keep.csv && no_temporaries"
echo "old" > old.csv
"$bin" "${fit[@]}" --out old.csv --overwrite 2> err.txt; rc=$?
check "--overwrite replaces a regular file" "[ $rc -eq 0 ] && cmp -s old.csv keep.csv && [ ! -L old.csv ]"

mkfifo out.fifo
timeout 10 "$bin" "${fit[@]}" --out out.fifo --overwrite 2> err.txt; rc=$?
check "FIFO at --out refused even with --overwrite (exit 1, 'FIFO')" \
  "[ $rc -eq 1 ] && grep -q \"'out.fifo' is a FIFO\" err.txt && [ -p out.fifo ]"
ln -s /dev/null devnull.csv     # a device node reached through a link we own; /dev is never touched
timeout 10 "$bin" "${fit[@]}" --out devnull.csv --overwrite 2> err.txt; rc=$?
check "symlink to a device node at --out refused with --overwrite" \
  "[ $rc -eq 1 ] && [ -L devnull.csv ] && [ \"\$(readlink devnull.csv)\" = /dev/null ] && [ -c /dev/null ]"
mkdir adir.csv
"$bin" "${fit[@]}" --out adir.csv --overwrite 2> err.txt; rc=$?
check "folder at --out refused with --overwrite" "[ $rc -eq 1 ] && grep -q \"'adir.csv' is a folder\" err.txt"
check "no temporary file left after the refusals" "no_temporaries"
LUMEN_TEST_ENOSPC_AFTER=100 "$bin" "${fit[@]}" --out full.csv 2> err.txt; rc=$?
check "disk full while writing --out (injected ENOSPC): exit 1, message, no file, no temporary" \
  "[ $rc -eq 1 ] && grep -q \"'full.csv': No space left on device\" err.txt && [ ! -e full.csv ] && no_temporaries"

# ---------------------------------------------------------------- item 4: standard output
if [ -c /dev/full ] && [ -w /dev/full ]; then
  "$bin" "${fit[@]}" > /dev/full 2> err.txt; rc=$?
  check "fit > /dev/full: exit 1 with a message" \
    "[ $rc -eq 1 ] && grep -q 'writing standard output failed: No space left on device' err.txt"
  "$bin" fit --help > /dev/full 2> err.txt; rc=$?
  check "fit --help > /dev/full: exit 1" "[ $rc -eq 1 ] && grep -q 'writing standard output failed' err.txt"
  "$bin" backends > /dev/full 2> err.txt; rc=$?
  check "backends > /dev/full: exit 1 with a message" "[ $rc -eq 1 ] && grep -q 'writing standard output failed' err.txt"
else
  echo "note: /dev/full is not available here: the standard output checks are skipped"
fi

# ---------------------------------------------------------------- item 11: FIFO inputs
# Each run under `timeout 10`: a hang is exit 124; expected is exit 1 and a message that names
# the file and says FIFO.
mkfifo in.fifo
fifo_case() { # NAME -- lumen args
  local name=$1; shift
  timeout 10 "$bin" "$@" > out.txt 2> err.txt; local rc=$?
  check "$name: refused, no hang (exit 1, file named, FIFO)" \
    "[ $rc -eq 1 ] && grep -q 'in.fifo' err.txt && grep -q 'FIFO' err.txt" || sed 's/^/    /' err.txt
}
fifo_case "fit --curves FIFO" fit --model tofts --times times.txt --aif aif.txt --curves in.fifo -q
fifo_case "fit --times FIFO" fit --model tofts --times in.fifo --aif aif.txt --curves curves.txt -q
fifo_case "fit --aif FIFO" fit --model tofts --times times.txt --aif in.fifo --curves curves.txt -q
fifo_case "fit --flip-angles FIFO" fit --model vfa --flip-angles in.fifo --tr 0.005 --curves curves.txt -q

if ! command -v python3 > /dev/null; then
  echo "note: python3 not found: the NIfTI/PNG checks are skipped"
  exit $fail
fi
python3 "$here/../../scripts/make_bad_inputs.py" . > /dev/null || { echo "FAIL: make_bad_inputs.py"; exit 1; }
ln -s in.fifo in.fifo.nii.gz
ln -s in.fifo in.fifo.png
G="--t1map good_t1.nii.gz"
fifo_case "dce --dce FIFO" dce --dce in.fifo.nii.gz $G --out o_dce -q
fifo_case "dce --t1map FIFO" dce --dce good_dce.nii.gz --t1map in.fifo.nii.gz --out o_t1map -q
fifo_case "dce --mask FIFO" dce --dce good_dce.nii.gz $G --mask in.fifo.nii.gz --out o_mask -q
fifo_case "t1 --in FIFO" t1 --method vfa --in good_vol.nii.gz in.fifo.nii.gz good_vol.nii.gz --flip-angles 2,10,20 \
  --tr 0.005 --out o_t1 -q
fifo_case "filter: NIfTI input FIFO" filter abs in.fifo.nii.gz o_filter.nii
fifo_case "filter: PNG input FIFO" filter abs in.fifo.png o_filter.png
mkdir side
cp good_dce.nii.gz side/dce.nii.gz
ln -s ../in.fifo side/dce.json
timeout 10 "$bin" dce --dce side/dce.nii.gz $G --out o_side -q > out.txt 2> err.txt; rc=$?
check "dce: sidecar JSON a FIFO: refused, no hang (exit 1, file named, FIFO)" \
  "[ $rc -eq 1 ] && grep -q 'side/dce.json' err.txt && grep -q 'FIFO' err.txt" || sed 's/^/    /' err.txt

# ---------------------------------------------------------------- item 12: config files
# A config file holds options: a bad one is a usage error (exit 2), never a spin or a hang.
head -c 2000000 /dev/zero | tr '\0' '#' > big.cfg
cfg_case() { # NAME FILE REGEX
  timeout 10 "$bin" dce --config "$2" --dce good_dce.nii.gz $G --out "o_cfg$RANDOM" -q > out.txt 2> err.txt; local rc=$?
  check "$1: refused at once (exit 2, got $rc), says why" "[ $rc -eq 2 ] && grep -Eq \"$3\" err.txt" || sed 's/^/    /' err.txt
}
cfg_case "--config /dev/zero" /dev/zero "'/dev/zero' is a character device, expected a regular file"
cfg_case "--config FIFO" in.fifo "'in.fifo' is a FIFO"
cfg_case "--config of 2 MB" big.cfg "2000000 bytes, expected at most 1048576"
check "no output folder from the refused configs" "[ -z \"\$(ls -d o_cfg* 2> /dev/null)\" ]"

# ---------------------------------------------------------------- item 13: trailing gz data
# good_vol.nii.gz's file followed by 300 MiB of zeros in the same gzip stream (a deflate block of
# 1 MiB of zeros after a full flush is self-contained: written once, repeated; ~300 KiB on disk).
# trail.nii.gz has the true CRC; trail_bad.nii.gz a wrong one, which only a reader that
# decompresses all of the trailing data finds.
python3 - <<'EOF' || { echo "FAIL: writing the trailing-data files"; exit 1; }
import gzip, zlib
nii = gzip.decompress(open('good_vol.nii.gz', 'rb').read())
mib = 1 << 20
zeros = bytes(mib)
c = zlib.compressobj(6, zlib.DEFLATED, 31)
head = c.compress(nii) + c.flush(zlib.Z_FULL_FLUSH)
block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
end = c.flush(zlib.Z_FINISH)[:-8]
crc = zlib.crc32(nii)
for _ in range(300):
    crc = zlib.crc32(zeros, crc)
size = (len(nii) + 300 * mib) & 0xffffffff
for name, k in (('trail.nii.gz', 0), ('trail_bad.nii.gz', 1)):
    with open(name, 'wb') as f:
        f.write(head + block * 300 + end + ((crc ^ k) & 0xffffffff).to_bytes(4, 'little') + size.to_bytes(4, 'little'))
EOF
"$bin" filter variance good_vol.nii.gz > want.txt 2> err.txt
check "control: filter variance reads good_vol.nii.gz" "[ -s want.txt ]" || cat err.txt
for f in trail.nii.gz trail_bad.nii.gz; do
  timeout 20 "$bin" filter variance $f > got.txt 2> err.txt; rc=$?
  check "$f (300 MiB of zeros after the voxels): read, same values, data after the voxels ignored" \
    "[ $rc -eq 0 ] && [ \"\$(cut -d' ' -f2- got.txt)\" = \"\$(cut -d' ' -f2- want.txt)\" ]" || sed 's/^/    /' err.txt
done

exit $fail
