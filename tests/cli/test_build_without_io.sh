#!/usr/bin/env bash
# The build without NIfTI/JSON I/O (nifti_clib, cJSON, zlib or xxHash missing, or -DLUMEN_IO=OFF):
# CMake says "building without NIfTI I/O" and goes on, so the library and the lumen program must
# still compile and link (-Werror), the commands that read or write files must refuse with one
# clear line (exit 1), and the fitting library must fit. A fresh machine without the packages, or
# another distribution, builds exactly this. About 20 s on 2 cores (Release, no tests, no CUDA).
set -u
src=${LUMEN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=$(cd "$(dirname "${LUMEN_BIN:?LUMEN_BIN not set}")" && pwd)
cache=$build/CMakeCache.txt
# the sanitizer build runs the same script: one build of this configuration per CI run is enough
grep -q '^LUMEN_SANITIZE:BOOL=ON' "$cache" 2>/dev/null && { echo "SKIP: sanitizer build (checked by the normal build)"; exit 77; }
cmake=$(sed -n 's/^CMAKE_COMMAND:[A-Z]*=//p' "$cache")
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$cache")
. "$(dirname "$0")/lib.sh"

"$cmake" -S "$src" -B noio -DCMAKE_BUILD_TYPE=Release -DLUMEN_IO=OFF -DLUMEN_CUDA=OFF -DLUMEN_TESTS=OFF \
  -DLUMEN_MPI=OFF -DLUMEN_WERROR=ON > configure.txt 2>&1
check "configures without I/O" "grep -q 'IO=OFF' configure.txt" || tail -20 configure.txt
"$cmake" --build noio -j 2 --target lumen lumen_shared > build.txt 2>&1
check "lumen and liblumen.so build and link without I/O (-Werror)" "[ -x noio/lumen ] && [ -e noio/liblumen.so ]" ||
  grep -E 'error|undefined' build.txt | head -20

# what needs files refuses, naming the missing part, before reading anything
for c in "filter gaussian a.png b.png" "segment febds a.png b.png" "dce --help" "t1 --help" "convert x --out y" \
  "fit --help" "batch x" "merge x" "demo"; do
  noio/lumen $c > out.txt 2>&1
  rc=$?
  check "lumen $c: exit 1, saying the build has no I/O" "[ $rc = 1 ] && grep -qE 'no (NIfTI/JSON I/O|I/O module)' out.txt" || cat out.txt
done
check "lumen --version runs" "noio/lumen --version > /dev/null 2>&1"

# the library fits: a noise-free Tofts curve through the public API gives back its parameters
cat > fit.c <<'EOF'
#include <lumen/lumen.h>
#include <math.h>
#include <stdio.h>
int main(void) {
  enum { N = 60 };
  double x[N], cp[N], y[N], truth[2] = {0.25, 0.35}, par[2];
  float data[N];
  int32_t state;
  for (int i = 0; i < N; ++i) x[i] = i * 5.0 / 60.0;
  lumen_ctx *ctx;
  if (lumen_ctx_create(&ctx)) return 2;
  lumen_aif_options ao;
  lumen_aif_options_init(&ao);
  ao.kind = LUMEN_AIF_PARKER;
  ao.delay = 0.5;
  if (lumen_aif_population(ctx, &ao, N, x, cp)) return 3;
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  lumen_fit_plan *plan;
  if (lumen_fit_plan_create(ctx, &o, N, x, cp, &plan)) return 4;
  if (lumen_fit_plan_eval(plan, truth, NULL, 0, y)) return 5;
  for (int i = 0; i < N; ++i) data[i] = (float)y[i];
  lumen_fit_results r = {0};
  r.params = par;
  r.state = &state;
  if (lumen_fit_execute(ctx, plan, 1, data, NULL, &r)) return 6;
  printf("%s %.6f %.6f\n", r.backend_used, par[0], par[1]);
  lumen_fit_plan_destroy(plan);
  lumen_ctx_destroy(ctx);
  return fabs(par[0] / truth[0] - 1) < 1e-4 && fabs(par[1] / truth[1] - 1) < 1e-4 ? 0 : 1;
}
EOF
"$cc" -std=c11 -Wall -Werror -I"$src/include" fit.c -o fit -Lnoio -llumen -lm -Wl,-rpath,"$PWD/noio" > cc.txt 2>&1
check "a C program builds against the library without I/O" "[ -x fit ]" || cat cc.txt
./fit > fit.txt 2>&1
check "it fits Tofts (Ktrans 0.25, ve 0.35 back within 1e-4)" "[ $? = 0 ]" || cat fit.txt
cat fit.txt
exit $fail
