#!/usr/bin/env bash
# Prepares what the GPU machine lacks, for scripts/gpu-check.sh: that machine has CUDA, CMake and
# Python but no Debian -dev packages and no network, and the reference data (../shared/data) does
# not travel with the repository. Run here, in the repository root, once per session:
#
#   bash scripts/gpu-carry.sh          # fills .devcarry/ (about 10 MB) and ignores it in git
#
# then name `.devcarry` in the device call's carry list and run `bash scripts/gpu-check.sh` there.
# .devcarry/debs/*.deb  Debian packages of lumen's libraries (headers, .so, runtime libraries);
#                       gpu-check.sh unpacks them with `dpkg -x` under /tmp/lumen-deps, never into /
# .devcarry/refdata/    a copy of the reference data (OSIPI) for the validation tests on tier cuda
# Without .devcarry, gpu-check.sh still builds the core library and the cmocka-free GPU checks.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DEST=$ROOT/.devcarry
REFDATA=${LUMEN_REFDATA:-$ROOT/../shared/data}

# lumen's libraries (scripts/setup.sh) and the runtime packages they depend on
PACKAGES=(
  zlib1g-dev
  libnifti2-dev libnifti2-2 libnifticdf-dev libnifticdf2 libniftiio-dev libniftiio2 libznz-dev libznz3
  libcjson-dev libcjson1
  libpng-dev libpng16-16
  libgsl-dev libgsl27 libgslcblas0
  libfftw3-single3 libfftw3-double3
  libcmocka-dev libcmocka0
)

mkdir -p "$DEST/debs"
mkdir -p .git/info
grep -qx '/.devcarry/' .git/info/exclude 2>/dev/null || echo '/.devcarry/' >>.git/info/exclude

rm -f "$DEST"/debs/*.deb
(cd "$DEST/debs" && apt-get download "${PACKAGES[@]}" >/dev/null) || {
  echo "gpu-carry: apt-get download failed (no package lists? run apt-get update)" >&2
  exit 1
}

if [ -d "$REFDATA/osipi" ]; then
  rm -rf "$DEST/refdata"
  mkdir -p "$DEST/refdata"
  cp -r "$REFDATA/osipi" "$DEST/refdata/"
  [ -f "$REFDATA/README.md" ] && cp "$REFDATA/README.md" "$DEST/refdata/"
else
  echo "gpu-carry: no reference data at $REFDATA (set LUMEN_REFDATA); the OSIPI checks will skip" >&2
fi

echo "gpu-carry: $(ls "$DEST/debs" | wc -l) packages, $(du -sh "$DEST" | cut -f1) in $DEST"
echo "gpu-carry: working tree that travels: $(git ls-files -z | du -ch --files0-from=- 2>/dev/null | tail -1 | cut -f1) tracked + .devcarry"
