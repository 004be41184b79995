#!/usr/bin/env bash
# Exit codes mean one thing in every command (issue 17): 0 success, 1 input or data error (a file
# missing, unreadable or not an image, an output that cannot be written), 2 usage error (an unknown
# option, a missing or bad value, an unknown op or algorithm: checked before anything is read or
# written, so nothing is created). Each user mistake below runs through lumen filter, segment,
# batch and merge with its exact exit code and a message naming the option or file; one success
# per command; every command's --help ends with the same exit-status paragraph.
# Inputs: a small PNG written here with python3, the demo phantom (lumen dce-demo) for merge.
set -u
bin=${LUMEN_BIN:?LUMEN_BIN not set}
command -v python3 > /dev/null || { echo "python3 not found: skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"

python3 - <<'PYEOF' || { echo "FAIL: making the test images"; exit 1; }
import struct, zlib
def png(path, w, h, px):
    rows = b''.join(b'\x00' + bytes(px[y * w:(y + 1) * w]) for y in range(h))
    def ch(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    open(path, 'wb').write(b'\x89PNG\r\n\x1a\n' + ch(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0))
                           + ch(b'IDAT', zlib.compress(rows)) + ch(b'IEND', b''))
png('a.png', 16, 16, [(x * 13 + y * 7) % 200 + (50 if 5 <= x < 9 and 5 <= y < 9 else 0) for y in range(16) for x in range(16)])
png('b.png', 16, 16, [(x * 3 + y * 11) % 180 for y in range(16) for x in range(16)])
PYEOF
echo "not an image" > fake.png
echo "not an image" > fake.nii
echo "a regular file" > afile
printf 'a.png o1.png extra\n' > bad_list.txt
printf 'im nope.png\n' > missing_item.txt      # batch: an item whose image is missing
printf 'x a.png\nx b.png\n' > dup_items.txt      # batch: one ID twice
printf 'ia a.png\nib b.png\n' > items.txt

# code NAME WANT REGEX ARGS...: lumen ARGS exits WANT and its stderr matches REGEX (extended)
code() {
  local name=$1 want=$2 re=$3; shift 3
  "$bin" "$@" > out.txt 2> err.txt; local rc=$?
  check "$name: exit $want (got $rc), /$re/" "[ $rc -eq $want ] && { [ -z \"\$re\" ] || grep -Eq -- \"\$re\" err.txt; }" ||
    cat err.txt
}
# absent NAME PATH...: a usage error created none of PATH
absent() {
  local name=$1 p bad=0; shift
  for p in "$@"; do [ -e "$p" ] && bad=1; done
  check "$name: nothing written ($*)" "[ $bad -eq 0 ]"
}

# ---- lumen filter
code "filter unknown option" 2 "unknown option '--sigmaa'" filter gaussian a.png f1.png --sigmaa 2
code "filter option without its value" 2 "--sigma needs a value" filter gaussian a.png f2.png --sigma
code "filter non-numeric value" 2 "--sigma expects a number, got 'abc'" filter gaussian a.png f3.png --sigma abc
code "filter negative sigma" 2 "--sigma is -1, expected > 0" filter gaussian a.png f4.png --sigma -1
code "filter median --size 0" 2 "--size is 0, expected an odd size" filter median a.png f5.png --size 0
code "filter dog --high-sigma below --low-sigma" 2 "--high-sigma is 1, expected > --low-sigma \(2\)" \
  filter dog a.png f6.png --low-sigma 2 --high-sigma 1
code "filter otsu --bins -3" 2 "--bins is -3" filter otsu a.png f7.png --bins -3
code "filter --threads -1" 2 "--threads is -1" filter gaussian a.png f8.png --threads -1
code "filter unknown op" 2 "unknown op 'gausian'" filter gausian a.png f9.png
code "filter no op" 2 "no op given" filter
code "filter input without output" 2 "'a.png' has no output" filter gaussian a.png
code "filter no input" 2 "no input" filter gaussian --sigma 2
code "filter --device bogus" 2 "--device is 'bogus'" filter gaussian a.png f10.png --device bogus
code "filter bad value and a missing input: usage first" 2 "--sigma is -1" filter gaussian nope.png f11.png --sigma -1
absent "filter usage errors" f1.png f2.png f3.png f4.png f5.png f6.png f7.png f8.png f9.png f10.png f11.png
code "filter missing input" 1 "nope.png" filter gaussian nope.png f12.png
code "filter text file named .png" 1 "fake.png" filter gaussian fake.png f13.png
code "filter text file named .nii" 1 "fake.nii" filter gaussian fake.nii f14.nii
code "filter output in a missing folder" 1 "nodir/f15.png" filter gaussian a.png nodir/f15.png
code "filter output under a regular file" 1 "afile/f16.png" filter gaussian a.png afile/f16.png
code "filter --batch list missing" 1 "nolist.txt" filter gaussian --batch nolist.txt
code "filter --batch list malformed" 1 "bad_list.txt:1" filter gaussian --batch bad_list.txt
code "filter variance of a missing input" 1 "nope.png" filter variance nope.png
absent "filter input errors" f12.png f13.png f14.nii o1.png
if [ "$(id -u)" != 0 ]; then  # root writes into a read-only folder
  mkdir ro && chmod 555 ro
  code "filter output folder not writable" 1 "ro/f17.png" filter gaussian a.png ro/f17.png
fi
code "filter success" 0 "" filter gaussian a.png ok_f.png --sigma 1.5 -q
check "filter success: the output is written" "[ -s ok_f.png ]"

# ---- lumen segment
code "segment unknown option" 2 "unknown option '--kk' for kmeans" segment kmeans a.png s1.png --kk 3
code "segment option without its value" 2 "--k needs a value" segment kmeans a.png s2.png --k
code "segment non-numeric value" 2 "--k expects an integer, got 'abc'" segment kmeans a.png s3.png --k abc
code "segment kmeans --k 1" 2 "--k: k is 1, expected 2" segment kmeans a.png s4.png --k 1
code "segment threshold not a number" 2 "--threshold expects a number, got 'high'" \
  segment region_grow a.png s5.png --threshold high
code "segment febds --median-size 4" 2 "--median-size: median_size is 4, expected an odd size" segment febds a.png s6.png --median-size 4
code "segment fcm --m 1" 2 "--m: m is 1, expected > 1" segment fcm a.png s7.png --m 1
code "segment unknown algorithm" 2 "unknown algorithm 'kmean'" segment kmean a.png s8.png
code "segment no algorithm" 2 "no algorithm given" segment
code "segment input without output" 2 "'a.png' has no output" segment kmeans a.png
code "segment --device bogus" 2 "--device is 'bogus'" segment kmeans a.png s9.png --device bogus
code "segment bad value and a missing input: usage first" 2 "--k: k is 1" segment kmeans nope.png s10.png --k 1
absent "segment usage errors" s1.png s2.png s3.png s4.png s5.png s6.png s7.png s8.png s9.png s10.png
code "segment missing input" 1 "nope.png" segment kmeans nope.png s11.png
code "segment text file named .png" 1 "fake.png" segment kmeans fake.png s12.png
code "segment text file named .nii" 1 "fake.nii" segment kmeans fake.nii s13.nii
code "segment output in a missing folder" 1 "nodir/s14.png" segment kmeans a.png nodir/s14.png
code "segment --batch list missing" 1 "nolist.txt" segment kmeans --batch nolist.txt
absent "segment input errors" s11.png s12.png s13.nii
code "segment success" 0 "" segment kmeans a.png ok_s.png -q
check "segment success: the output is written" "[ -s ok_s.png ]"

# ---- lumen batch
code "batch unknown option" 2 "unknown option '--jbos'" batch filter --list items.txt --out d1 --jbos 2 -- gaussian
code "batch option without its value" 2 "--jobs needs a value" batch filter --list items.txt --out d2 --jobs
code "batch --jobs abc" 2 "--jobs: 'abc' is not 1..1024" batch filter --list items.txt --out d3 --jobs abc -- gaussian
code "batch --jobs 2x" 2 "--jobs: '2x' is not 1..1024" batch filter --list items.txt --out d4 --jobs 2x -- gaussian
code "batch --memory-limit bogus" 2 "--memory-limit: 'lots'" batch filter --list items.txt --out d5 --memory-limit lots -- gaussian
code "batch --shard 3/3" 2 "shard" batch filter --list items.txt --out d6 --shard 3/3 -- gaussian
code "batch unknown command" 2 "'filtr'" batch filtr --list items.txt --out d7 -- gaussian
code "batch no command" 2 "give the command" batch --list items.txt --out d8
code "batch without --out" 2 "--out DERIV" batch filter --list items.txt -- gaussian
code "batch an extra argument" 2 "unexpected argument 'extra'" batch filter extra --list items.txt --out d9 -- gaussian
code "batch filter without its op" 2 "needs its OP" batch filter --list items.txt --out d10
code "batch filter unknown op" 2 "unknown op 'gausian'" batch filter --list items.txt --out d11 -- gausian
code "batch filter bad op option" 2 "--sigma is -2" batch filter --list items.txt --out d12 -- gaussian --sigma -2
code "batch segment unknown algorithm" 2 "unknown algorithm 'kmean'" batch segment --list items.txt --out d13 -- kmean
code "batch bad value and a missing list: usage first" 2 "--jobs" batch filter --list nolist.txt --out d14 --jobs 0 -- gaussian
absent "batch usage errors" d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14
code "batch --list missing" 1 "nolist.txt" batch filter --list nolist.txt --out d15 -- gaussian
code "batch --list malformed (one ID twice)" 1 "dup_items.txt:2: subject 'x' is listed twice" \
  batch filter --list dup_items.txt --out d16 -- gaussian
code "batch --bids folder missing" 1 "nobids" batch filter --bids nobids --out d17 -- gaussian
code "batch --out under a regular file" 1 "afile/d18" batch filter --list items.txt --out afile/d18 -- gaussian
absent "batch input errors" d15 d16 d17
code "batch an item's input missing" 1 "" batch filter --list missing_item.txt --out d19 -q -- gaussian
check "batch an item's input missing: its line names it" "grep -q 'FAILED.*nope.png' out.txt" || cat out.txt
code "batch success" 0 "" batch filter --list items.txt --out ok_b -q -- gaussian --sigma 1.5
check "batch success: the outputs are written" "[ -s ok_b/ia/a_desc-gaussian.png ] && [ -s ok_b/ib/b_desc-gaussian.png ]"

# ---- lumen merge
code "merge unknown option" 2 "unknown option '--outt'" merge --outt m1 x.part
code "merge unknown short option" 2 "unknown option '-x'" merge --out m2 -x x.part
code "merge option without its value" 2 "--out needs a value" merge x.part --out
code "merge no part" 2 "at least one PART" merge --out m3
absent "merge usage errors" m1 m2 m3
code "merge missing part file" 1 "nope.part" merge --out m4 -q nope.part
code "merge text file as a part" 1 "fake.png" merge --out m5 -q fake.png
if "$bin" dce-demo --out demo -q > /dev/null 2>&1; then
  A=(--dce demo/sub-demo_dce.nii.gz --t1map demo/sub-demo_T1map.nii.gz --mask demo/sub-demo_mask.nii.gz --models tofts -q)
  "$bin" dce "${A[@]}" --out sh0 --shard 0/2 2> err.txt || cat err.txt
  "$bin" dce "${A[@]}" --out sh1 --shard 1/2 2> err.txt || cat err.txt
  code "merge a missing shard" 1 "2 parts|parts given" merge --out m6 -q sh0/sub-demo_shard-0-of-2.part
  code "merge the same shard twice" 1 "twice" merge --out m7 -q sh0/sub-demo_shard-0-of-2.part sh0/sub-demo_shard-0-of-2.part
  absent "merge inconsistent shards" m6 m7
  code "merge success" 0 "" merge --out ok_m -q sh0/sub-demo_shard-0-of-2.part sh1/sub-demo_shard-1-of-2.part
  check "merge success: the maps are written" "[ -s ok_m/sub-demo_model-tofts_param-Ktrans.nii.gz ]"
else
  check "dce-demo (inputs of the merge cases)" "false"
fi

# ---- --help: every command ends with the same exit-status paragraph (the one dce prints)
para() { sed -n '/^exit status (every command)/,$p' "$1"; }
"$bin" dce --help > h_dce.txt
para h_dce.txt > x_ref
check "dce --help has the exit-status paragraph" "grep -q '2 usage error' x_ref && grep -q '1 input or data error' x_ref"
for c in t1 fit filter segment batch merge backends; do
  "$bin" $c --help > h_$c.txt 2> err.txt; rc=$?
  para h_$c.txt > x_$c
  check "$c --help: exit 0, ends with the exit-status paragraph" "[ $rc -eq 0 ] && [ -s x_$c ] && cmp -s x_ref x_$c" ||
    diff x_ref x_$c
done
exit $fail
