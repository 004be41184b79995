#!/usr/bin/env bash
# Reading DICOM series: `lumen convert` against dcm2niix on the same folders, both writing
# uncompressed NIfTI (issue 38's speed item), alternating A/B runs into fresh folders, each a whole
# process (start, listing, headers, pixels, sorting, writing). Folders:
#   qiba1321  the QIBA v6 Tofts phantom as 1321 single-frame files (50 x 80, TriggerTime per frame),
#             written by tests/cli/dicom_series.py from the reference NIfTI (the size of QIBA's
#             original folder)
#   ge_*      each series of ../shared/data/dicom_ge/In (real GE files), and the whole In folder
# Prints min / median / max wall time per folder and tool and the ratio of the medians (dcm2niix /
# lumen: above 1, lumen is faster). Timings are printed, never asserted (docs/BENCHMARKS.md).
#   bash bench/bench_convert.sh [BUILD_DIR] [--runs N]
set -euo pipefail
build="build"
if [ "$#" -gt 0 ] && [ "${1#--}" = "$1" ]; then build="$1"; shift; fi
runs=9
while [ "$#" -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    *) echo "usage: $0 [BUILD_DIR] [--runs N]" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
lumen="$build/lumen"
ref=${LUMEN_REFDATA:-$here/../shared/data}
py=/usr/bin/python3
[ -x "$lumen" ] || { echo "$0: $lumen not found; build first" >&2; exit 1; }
command -v dcm2niix > /dev/null || { echo "$0: dcm2niix not found (apt install dcm2niix)" >&2; exit 1; }
"$py" -c 'import pydicom' 2>/dev/null || { echo "$0: $py has no pydicom (apt install python3-pydicom)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" -W ignore "$here/tests/cli/dicom_series.py" qiba "$ref/qiba/v6_tofts/q6_dce.nii.gz" "$work/qiba1321" > /dev/null
folders=("qiba1321:$work/qiba1321")
for d in "$ref"/dicom_ge/In/SliceTimingRT/* "$ref"/dicom_ge/In/01_*; do folders+=("ge_$(basename "$d"):$d"); done
folders+=("ge_all_8_series:$ref/dicom_ge/In")

now() { date +%s.%N; }
stats() {  # numbers on stdin -> "min median max" in ms
  sort -g | awk '{v[NR]=$1} END {printf "%.1f %.1f %.1f", v[1]*1000, v[int((NR+1)/2)]*1000, v[NR]*1000}'
}
echo "load before: $(uptime)"
echo "$(dcm2niix -v 2>/dev/null | head -1 || true)"
echo "lumen: $("$lumen" --version)"
printf "%-34s %6s  %-24s %-24s %s\n" folder files "lumen ms (min med max)" "dcm2niix ms (min med max)" "dcm2niix/lumen"
for entry in "${folders[@]}"; do
  name=${entry%%:*} dir=${entry#*:}
  files=$(find "$dir" -type f | wc -l)
  : > "$work/a" && : > "$work/b"
  for r in $(seq "$runs"); do
    rm -rf "$work/oa" "$work/ob" && mkdir "$work/oa" "$work/ob"
    t0=$(now); "$lumen" convert "$dir" --out "$work/oa" --uncompressed -q > /dev/null 2>&1; t1=$(now)
    dcm2niix -z n -o "$work/ob" "$dir" > /dev/null 2>&1; t2=$(now)
    awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}' >> "$work/a"
    awk -v a="$t1" -v b="$t2" 'BEGIN {print b - a}' >> "$work/b"
  done
  sa=$(stats < "$work/a") sb=$(stats < "$work/b")
  ratio=$(awk -v a="$(echo "$sa" | cut -d' ' -f2)" -v b="$(echo "$sb" | cut -d' ' -f2)" 'BEGIN {print b / a}')
  printf "%-34s %6d  %-24s %-24s %.2f\n" "$name" "$files" "$sa" "$sb" "$ratio"
done
echo "load after: $(uptime)"
