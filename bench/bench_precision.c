/* Throughput of lumen's float32 <-> float16 / bfloat16 conversions: the scalar functions in a
 * loop against the array functions (vectorised where the CPU allows). Not run by the tests.
 *   bench_precision [elements]      (default 16M; prints millions of conversions per second)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lumen/precision.h"
#include "core/internal.h"  /* lumen_now_seconds */

static volatile uint32_t sink;

static void report(const char *what, const char *path, double seconds, size_t n, int reps) {
  printf("%-14s %-10s %9.1f M/s\n", what, path, (double)n * reps / seconds / 1e6);
}

/* Runs the statement CALL reps times (written out here, so that the scalar loops stay inline) and
   reports the rate as WHAT by PATH. */
#define TIME_REPS(what, path, CALL)                                  \
  do {                                                               \
    double t0_ = lumen_now_seconds();                                \
    for (int r_ = 0; r_ < reps; ++r_) {                              \
      CALL;                                                          \
    }                                                                \
    report(what, path, lumen_now_seconds() - t0_, n, reps);          \
  } while (0)

int main(int argc, char **argv) {
  size_t n = (size_t)1 << 24;
  if (argc > 1) n = (size_t)strtoull(argv[1], NULL, 10);
  if (n == 0) n = 1;
  const int reps = 5;
  float *f = malloc(n * sizeof *f), *g = malloc(n * sizeof *g);
  uint16_t *h = malloc(n * sizeof *h);
  if (!f || !g || !h) return 1;
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < n; ++i) {  /* values in a realistic range: +-2^-8 .. 2^8 */
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    const uint32_t u = ((uint32_t)x & 0x807FFFFFu) | ((uint32_t)(119 + (x >> 40) % 17) << 23);
    memcpy(f + i, &u, sizeof u);
  }
  printf("lumen conversion path: %s, %zu elements x %d\n", lumen_convert_path_name(), n, reps);

  TIME_REPS("f32 -> f16", "scalar", for (size_t i = 0; i < n; ++i) h[i] = lumen_float_to_half(f[i]));
  sink = h[n / 2];
  TIME_REPS("f32 -> f16", "array", lumen_convert_f32_to_f16(f, h, (int64_t)n));

  TIME_REPS("f16 -> f32", "scalar", for (size_t i = 0; i < n; ++i) g[i] = lumen_half_to_float(h[i]));
  TIME_REPS("f16 -> f32", "array", lumen_convert_f16_to_f32(h, g, (int64_t)n));

  TIME_REPS("f32 -> bf16", "scalar", for (size_t i = 0; i < n; ++i) h[i] = lumen_float_to_bfloat16(f[i]));
  sink = h[n / 3];
  TIME_REPS("f32 -> bf16", "array", lumen_convert_f32_to_bf16(f, h, (int64_t)n));

  TIME_REPS("bf16 -> f32", "scalar", for (size_t i = 0; i < n; ++i) g[i] = lumen_bfloat16_to_float(h[i]));
  TIME_REPS("bf16 -> f32", "array", lumen_convert_bf16_to_f32(h, g, (int64_t)n));

  uint32_t last;
  memcpy(&last, g + n / 4, sizeof last);
  sink = last;
  free(f);
  free(g);
  free(h);
  return 0;
}
