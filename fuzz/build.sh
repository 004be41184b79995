#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz_*.c) with clang into OUT (default build-fuzz/).
#   fuzz/build.sh CORE_BUILD [OUT]
# The parsers (src/io/*.c, src/pipeline/config.c with the checks and helpers it calls,
# plausible.c and strbuf.c) are compiled here with
# -fsanitize=fuzzer-no-link,address,undefined; the core library (contexts, images, fit names) is
# taken uninstrumented from CORE_BUILD/liblumen.a, a normal CMake build (make build).
set -euo pipefail
cd "$(dirname "$0")/.."
CORE=${1:-build}
OUT=${2:-build-fuzz}
CC=${FUZZ_CC:-clang}
if [ ! -f "$CORE/liblumen.a" ] || [ ! -f "$CORE/generated/lumen_build_config.h" ]; then
  echo "fuzz/build.sh: $CORE/liblumen.a not found: build lumen first (make build BUILD=$CORE)" >&2
  exit 1
fi
if ! echo 'int LLVMFuzzerTestOneInput(const unsigned char*d,unsigned long n){(void)d;(void)n;return 0;}' |
     $CC -x c -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  echo "fuzz/build.sh: '$CC -fsanitize=fuzzer' does not link (install clang and libclang-rt-14-dev)" >&2
  exit 1
fi
mkdir -p "$OUT/obj"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
DICOM_DEF=""
# the fuzz targets link GDCM's decoder in (LUMEN_GDCM_LINKED) instead of loading liblumen_gdcm.so
[ -f /usr/include/gdcm-3.0/gdcmImageReader.h ] && DICOM_DEF="-DLUMEN_HAVE_DICOM=1 -DLUMEN_GDCM_LINKED=1"
CFLAGS="-std=c11 -g -O1 $SAN -D_POSIX_C_SOURCE=200809L -DLUMEN_HAVE_PNG=1 $DICOM_DEF -Iinclude -Isrc -I$CORE/generated
        -I/usr/include/nifti -I/usr/include/cjson -Wall -Wno-unknown-pragmas"
objs=()
for src in src/io/*.c src/pipeline/config.c src/pipeline/plausible.c src/pipeline/strbuf.c; do
  o="$OUT/obj/$(basename "${src%.c}").o"
  if [ ! -f "$o" ] || [ "$src" -nt "$o" ] || [ src/io/io_internal.h -nt "$o" ] || [ src/io/dicom_internal.h -nt "$o" ] ||
     [ -n "$(find src/pipeline -name '*.h' -newer "$o")" ]; then
    $CC $CFLAGS -fsanitize=fuzzer-no-link -c "$src" -o "$o"
  fi
  objs+=("$o")
done
LIBS="$CORE/liblumen.a -lnifti2 -lznz -lcjson -lpng -lz -lm"
# DICOM (GDCM, optional like in the CMake build): its one C++ file with clang++ (no vptr or function check:
# that needs the C++ UBSan runtime, and the targets link as C), then GDCM's libraries
GDCM_INC=/usr/include/gdcm-3.0
if [ -f "$GDCM_INC/gdcmImageReader.h" ]; then
  o="$OUT/obj/dicom_gdcm.o"
  if [ ! -f "$o" ] || [ src/io/dicom_gdcm.cpp -nt "$o" ] || [ src/io/dicom_internal.h -nt "$o" ] || [ fuzz/build.sh -nt "$o" ]; then
    ${CXX_FUZZ:-clang++} -std=c++17 -g -O1 $SAN -fno-sanitize=vptr,function -fsanitize=fuzzer-no-link -D_POSIX_C_SOURCE=200809L -DLUMEN_HAVE_DICOM=1 \
      -Iinclude -Isrc -I"$CORE/generated" -I"$GDCM_INC" -Wall -c src/io/dicom_gdcm.cpp -o "$o"
  fi
  objs+=("$o")
  LIBS="$LIBS -lgdcmMSFF -lgdcmDSED -lgdcmCommon -lgdcmDICT -lgdcmIOD -lstdc++"
fi
# the core library may use OpenMP (gcc's libgomp) and GSL
# (nm's output is captured first: `nm | grep -q` fails under pipefail when grep stops early)
symbols=$(nm "$CORE/liblumen.a" 2>/dev/null || true)
grep -q GOMP_ <<<"$symbols" && LIBS="$LIBS -lgomp"
grep -q ' U gsl_' <<<"$symbols" && LIBS="$LIBS -lgsl -lgslcblas"
# a CUDA build of the core needs the CUDA runtime (static, as lumen itself links it)
if grep -q ' U cudaMalloc' <<<"$symbols"; then
  cudalib=$(sed -n 's/^CUDAToolkit_LIBRARY_DIR:PATH=//p' "$CORE/CMakeCache.txt" 2>/dev/null | head -1)
  LIBS="$LIBS -L${cudalib:-/usr/local/cuda/lib64} -lcudart_static -ldl -lrt -lpthread -lstdc++"
fi
for t in fuzz/fuzz_*.c; do
  name=$(basename "${t%.c}")
  $CC $CFLAGS -fsanitize=fuzzer "$t" "${objs[@]}" $LIBS -o "$OUT/$name"
  echo "fuzz/build.sh: built $OUT/$name"
done
