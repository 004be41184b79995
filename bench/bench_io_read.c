/* Reading the same pixels from a DICOM file and a PNG file (issue 18: a 4096 x 3328 16-bit
   mammogram DICOM must cost no more than 2x the PNG), alternating, in one process.
   usage: bench_io_read FILE.dcm FILE.png [REPEATS=5]   (scripts/bench_mammo_read.sh makes both)
   Timings are printed, never asserted. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "lumen/io.h"
#include "lumen/lumen.h"
#include "bench_util.h"

static double now(void) { return bench_seconds(CLOCK_MONOTONIC); }

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_io_read FILE.dcm FILE.png [REPEATS]\n");
    return 2;
  }
  int reps = argc > 3 ? atoi(argv[3]) : 5;
  if (reps < 1 || reps > 100) reps = 5;
  lumen_ctx *ctx = NULL;
  if (lumen_ctx_create(&ctx) != LUMEN_OK) return 1;
  double td[100], tp[100];
  int isolated = -1;
  for (int r = 0; r < reps; ++r) {
    lumen_image *im = NULL;
    lumen_dicom_info info;
    double t0 = now();
    lumen_status s = lumen_dicom_read(ctx, argv[1], NULL, &im, &info);
    td[r] = now() - t0;
    if (s != LUMEN_OK) { fprintf(stderr, "%s\n", lumen_ctx_last_error(ctx)); return 1; }
    isolated = info.isolated;
    lumen_image_free(im);
    int bits = 0;
    t0 = now();
    s = lumen_png_read(ctx, argv[2], NULL, &im, &bits);
    tp[r] = now() - t0;
    if (s != LUMEN_OK) { fprintf(stderr, "%s\n", lumen_ctx_last_error(ctx)); return 1; }
    lumen_image_free(im);
  }
  qsort(td, (size_t)reps, sizeof td[0], bench_cmp_double);
  qsort(tp, (size_t)reps, sizeof tp[0], bench_cmp_double);
  printf("| file | median s | min s | max s |\n|---|---:|---:|---:|\n");
  printf("| DICOM %s (decoded %s) | %.3f | %.3f | %.3f |\n", argv[1], isolated ? "in a child process" : "in this process",
         td[reps / 2], td[0], td[reps - 1]);
  printf("| PNG %s | %.3f | %.3f | %.3f |\n", argv[2], tp[reps / 2], tp[0], tp[reps - 1]);
  printf("DICOM / PNG (medians): %.2fx\n", td[reps / 2] / tp[reps / 2]);
  lumen_ctx_destroy(ctx);
  return 0;
}
