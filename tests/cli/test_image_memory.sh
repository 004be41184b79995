#!/usr/bin/env bash
# lumen filter --batch under --memory-limit (docs/SCALE.md, "what --memory-limit covers"): the
# peak in flight that the stage line reports (inputs, results and the op's scratch of the images
# read and not yet written, and pinned buffers) stays under the limit with 1 and 2 workers; a
# limit below one image is refused before any image is read, saying what one image needs;
# outputs stay byte-identical to the serial run. Outside sanitizer builds also the process: its
# peak RSS (VmHWM, reported by lumen) less that of a one-image run stays under the limit (+1 MiB
# for page rounding).
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
command -v python3 >/dev/null || { echo "python3 not found: skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"

# 12 float32 images of 512 x 512 (1 MiB each)
python3 - <<'PYEOF'
import array, struct
n = 512
hdr = bytearray(348); struct.pack_into('<i', hdr, 0, 348)
struct.pack_into('<8h', hdr, 40, 2, n, n, 1, 1, 1, 1, 1); struct.pack_into('<hh', hdr, 70, 16, 32)
struct.pack_into('<8f', hdr, 76, *[1] * 8); struct.pack_into('<f', hdr, 108, 352); hdr[344:348] = b'n+1\x00'
with open('list.txt', 'w') as L, open('one.txt', 'w') as O:
    for k in range(12):
        x, v = 1234567 + 7919 * k, array.array('f')
        for i in range(n * n):
            x = (1103515245 * x + 12345) % 2**31
            v.append((x >> 8) % 4000 * 0.25)
        open('in%02d.nii' % k, 'wb').write(bytes(hdr) + b'\x00' * 4 + v.tobytes())
        L.write('in%02d.nii TAG-o%02d.nii\n' % (k, k))
    O.write('in00.nii one-o00.nii\n')
PYEOF

run() {  # run TAG DEVICE [options...]: the batch into TAG-o*.nii, messages into TAG.txt
  local tag=$1 dev=$2; shift 2
  sed "s/TAG/$tag/" list.txt > "$tag.list"
  "$bin" filter gaussian --sigma 2 --batch "$tag.list" --device "$dev" "$@" 2> "$tag.txt"
}
same() {
  local k
  for k in 00 01 02 03 04 05 06 07 08 09 10 11; do cmp -s "ref-o$k.nii" "$1-o$k.nii" || { echo "    differs: $1-o$k.nii"; return 1; }; done
}
flight() { grep -o 'peak [0-9.]* MiB in flight' "$1" | grep -o '[0-9.]*'; }
rss() { grep -o 'peak RSS [0-9.]* MiB' "$1" | grep -o '[0-9.]*'; }
le() { python3 -c "import sys; sys.exit(0 if float('$1') <= float('$2') else 1)"; }

run ref cpu --no-overlap --threads 1; rc=$?
check "reference: serial, one worker" "[ $rc -eq 0 ] && [ -s ref-o11.nii ]"
check "stage line reports the charge per image and the peak RSS" "grep -qE 'MiB per image\); peak RSS [0-9.]+ MiB' ref.txt"

sanitized=0
{ ldd "$bin" 2>/dev/null | grep -qE 'lib(a|ub|t)san'; } && sanitized=1
"$bin" filter gaussian --sigma 2 --batch one.txt --device cpu --threads 1 --overwrite -v 2> one.txt.err
base=$(rss one.txt.err)
check "one-image baseline reported" "[ -n '$base' ]"

for lim in 4 8 16; do
  for dev in cpu cpu,cpu; do
    tag="l$lim-${dev/,/-}"
    run "$tag" "$dev" --memory-limit "${lim}M" --threads 1; rc=$?
    f=$(flight "$tag.txt"); r=$(rss "$tag.txt")
    check "--memory-limit ${lim}M --device $dev: identical, peak in flight $f MiB <= $lim MiB" \
      "[ $rc -eq 0 ] && same $tag && [ -n '$f' ] && le $f $lim && ! grep -q 'over it' $tag.txt"
    if [ $sanitized -eq 0 ]; then
      check "  peak RSS $r MiB - one-image $base MiB <= $lim MiB (+1)" "le \$(python3 -c 'print($r - $base)') $((lim + 1))"
    fi
  done
done

# below one image (about 3 MiB: input, result and the Gaussian's line buffers): refused before
# any image is read (issue 15, item 14), with the same charge per image as the stage line reports
run tiny cpu,cpu --memory-limit 1M --threads 1; rc=$?
per=$(grep -o '[0-9.]* MiB per image' ref.txt | grep -o '^[0-9.]*')
need=$(grep -o 'needs about [0-9]* MiB' tiny.txt | grep -o '[0-9][0-9]*')
check "--memory-limit 1M: refused (exit 1) before anything is written, says what one image needs" \
  "[ $rc -eq 1 ] && ! ls tiny-o*.nii >/dev/null 2>&1 && grep -q \"'in00.nii' needs about [0-9]* MiB (512 x 512, float32 input, float32 + working buffers of gaussian), over --memory-limit 1 MiB\" tiny.txt"
check "  the estimate from the header ($need MiB) is the stage line's charge ($per MiB) rounded up" \
  "[ -n '$need' ] && [ -n '$per' ] && python3 -c 'import math,sys; sys.exit(math.ceil($per) != $need)'"

# --no-overlap workers are held to the limit as well
run serial2 cpu,cpu --no-overlap --memory-limit 8M --threads 1; rc=$?
check "--no-overlap --device cpu,cpu --memory-limit 8M: identical, under the limit" \
  "[ $rc -eq 0 ] && same serial2 && le \$(flight serial2.txt) 8"
exit $fail
