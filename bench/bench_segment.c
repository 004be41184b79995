/* Benchmark of the segmentation algorithms: FEBDS (dog, log, fft) on a 4096 x 3328 float32
 * synthetic mammogram (12-bit values), best of N runs, wall time, threads as given by
 * OMP_NUM_THREADS / the context default (all cores). Usage: bench_segment [repeats] [width height] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "lumen/lumen.h"
#include "core/internal.h"  /* lumen_now_seconds */

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 3;
  int64_t w = argc > 3 ? atoll(argv[2]) : 4096, h = argc > 3 ? atoll(argv[3]) : 3328;
  lumen_ctx *ctx = NULL;
  if (lumen_ctx_create(&ctx) != LUMEN_OK) return 1;
  int64_t dims[2] = {w, h};
  lumen_image *img = NULL;
  if (lumen_image_create(ctx, 2, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &img) != LUMEN_OK) return 1;
  float *p = lumen_image_data(img);
  uint64_t st = 1;
  for (int64_t y = 0; y < h; y++)
    for (int64_t x = 0; x < w; x++) {
      double rx = (double)x / (0.85 * (double)w), ry = ((double)y - 0.5 * (double)h) / (0.46 * (double)h);
      double r = sqrt(rx * rx + ry * ry), t = r < 1 ? sqrt(1 - r * r) : 0;
      st = st * 6364136223846793005ull + 1442695040888963407ull;
      double noise = ((double)(st >> 40) / 16777216.0 - 0.5) * 40;
      double v = 150 + 1700 * (1 - exp(-5 * t)) + 60 * sin((double)x * 0.05) * sin((double)y * 0.043) + noise;
      if (((x / 97) * 31 + (y / 89) * 17) % 23 == 0 && (x % 97 - 48) * (x % 97 - 48) + (y % 89 - 44) * (y % 89 - 44) < 16)
        v += 400;  /* calcification-like dots */
      p[y * w + x] = (float)floor(v);
    }
  printf("FEBDS on %lldx%lld float32, %d threads, best of %d\n", (long long)w, (long long)h, lumen_ctx_threads(ctx),
         reps);
  printf("%-8s %10s %12s %10s\n", "method", "seconds", "Mpixel/s", "GB/s");
  for (int m = 0; m < LUMEN_FEBDS_METHOD_COUNT; m++) {
    lumen_febds_opts o;
    lumen_febds_opts_init(&o);
    o.method = (lumen_febds_method)m;
    double best = 1e30;
    lumen_status s = LUMEN_OK;
    for (int r = 0; r < reps && s == LUMEN_OK; r++) {
      lumen_image *mask = NULL;
      double t0 = lumen_now_seconds();
      s = lumen_segment_febds(ctx, img, &o, &mask, NULL);
      double t = lumen_now_seconds() - t0;
      if (t < best) best = t;
      lumen_image_free(mask);
    }
    if (s != LUMEN_OK) {
      printf("%-8s %s\n", lumen_febds_method_name((lumen_febds_method)m), lumen_ctx_last_error(ctx));
      continue;
    }
    double px = (double)(w * h);
    printf("%-8s %10.3f %12.1f %10.2f\n", lumen_febds_method_name((lumen_febds_method)m), best, px / best / 1e6,
           px * 5.0 / best / 1e9); /* bytes: float32 in + uint8 mask out */
  }
  lumen_image_free(img);
  lumen_ctx_destroy(ctx);
  return 0;
}
