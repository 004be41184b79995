/* Stage A's signal -> concentration and mean tissue curve (src/pipeline/conc.c): into a curve
   array (pipe_convert, as stage B's ROI curves use it) and in place over the series
   (pipe_convert_in_place, what `lumen dce` runs since session 15), with the gathering of the
   curves back into an array (pipe_curves_get: FXR's R1 curves, a caller's executor); the input
   checksum (lumen_pipe_checksum_file) and the writing of one 256x256x32 float map as .nii.gz
   (lumen_nifti_write, level 1) on synthetic data, with a reference row for each: a plain loop of
   one libm log per sample (the floor of the double conversion stage A made until session 14), the
   float kernel alone in place on the frame-major series (the floor of the conversion in place),
   FNV-1a byte by byte (the former checksum) and zlib's compress2 at level 1 on one thread (the
   former writer's deflate).
   usage: bench_pipe_conc [VOXELS=524288] [FRAMES=80] [THREADS=2] [FILE_MB=256]
   Timings are printed, never asserted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "lumen/io.h"
#include "lumen/pipeline.h"
#include "pipeline/conc_f32.h"
#include "pipeline/pipe_conc.h"
#ifdef _OPENMP
#include <omp.h>
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bench_conc(int64_t nvox, int64_t nt, int threads) {
  float *sig = malloc(sizeof(float) * (size_t)(nvox * nt)), *conc = malloc(sizeof(float) * (size_t)(nvox * nt));
  int64_t *list = malloc(sizeof(int64_t) * (size_t)nvox);
  int32_t *ninv = malloc(sizeof(int32_t) * (size_t)nvox);
  uint8_t *bad = malloc((size_t)nvox);
  if (!sig || !conc || !list || !ninv || !bad) { fprintf(stderr, "out of memory\n"); exit(1); }
  for (int64_t v = 0; v < nvox; ++v) {
    list[v] = v;
    for (int64_t i = 0; i < nt; ++i)
      sig[i * nvox + v] = (float)(1000 * (1 + (i > 5 ? 0.1 * (double)(v % 7) * (1 - exp(-0.2 * (double)(i - 5))) : 0)));
  }
  pipe_spgr sp = {15 * 3.14159265358979323846 / 180, 0.005, 4.5, 1, 4, 0.3};
  for (int64_t k = 0; k < nvox * nt; ++k) conc[k] = 0; /* first touch outside the timing */
  double samples = (double)nvox * (double)nt;
  double *mean = malloc(sizeof(double) * (size_t)nt);
  int64_t used = 0;
  if (!mean) { fprintf(stderr, "out of memory\n"); exit(1); }
  pipe_convert(&(pipe_convert_in){.sig = sig, .nvox = nvox, .nt = nt, .list = list, .nlist = nvox, .t10 = NULL,
                                  .t10_const = 1.2, .b1 = NULL, .sp = &sp, .input_conc = 0, .threads = threads,
                                  .simd = LUMEN_CPU_SIMD_OFF}, &(pipe_convert_out){.conc = conc, .ninvalid = ninv,
                                  .bad = bad, .mean = mean, .used = &used, .count = NULL}); /* warm */
  const lumen_cpu_simd limits[] = {LUMEN_CPU_SIMD_OFF, LUMEN_CPU_SIMD_AUTO};
  const char *names[] = {"4 lanes, baseline (LUMEN_SIMD=off)", "vector (auto)"};
  for (int li = 0; li < 2; ++li)
    for (int th = 1; th <= threads; th *= 2) {
      double t0 = now();
      pipe_convert(&(pipe_convert_in){.sig = sig, .nvox = nvox, .nt = nt, .list = list, .nlist = nvox, .t10 = NULL,
                                      .t10_const = 1.2, .b1 = NULL, .sp = &sp, .input_conc = 0, .threads = th,
                                      .simd = limits[li]}, &(pipe_convert_out){.conc = conc, .ninvalid = ninv,
                                      .bad = bad, .mean = mean, .used = &used, .count = NULL});
      double t = now() - t0;
      printf("| pipe_convert, %s, %d thread(s) | %.3f s | %.2f ns/sample |\n", names[li], th, t, 1e9 * t / samples);
    }
  /* what `lumen dce` runs: the conversion in place over the series (a fresh copy each time, made
     outside the timing); then the curves gathered back chunk by chunk into one buffer */
  {
    float *work = malloc(sizeof(float) * (size_t)(nvox * nt));
    if (!work) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (int th = 1; th <= threads; th *= 2) {
      memcpy(work, sig, sizeof(float) * (size_t)(nvox * nt));
      double t0 = now();
      pipe_convert_in_place(work, &(pipe_convert_in){.nvox = nvox, .nt = nt, .list = list, .nlist = nvox, .t10 = NULL,
                                                     .t10_const = 1.2, .b1 = NULL, .sp = &sp, .input_conc = 0,
                                                     .threads = th, .simd = LUMEN_CPU_SIMD_AUTO},
                                                     &(pipe_convert_out){.ninvalid = ninv, .bad = bad, .mean = mean,
                                                     .used = &used, .count = NULL});
      double t = now() - t0;
      printf("| pipe_convert_in_place, vector (auto), %d thread(s) | %.3f s | %.2f ns/sample |\n", th, t,
             1e9 * t / samples);
    }
    const pipe_curves src = {work, nvox, nt, list, nvox};
    const int64_t chunk = 65536;
    for (int th = 1; th <= threads; th *= 2) {
      double t0 = now();
      for (int64_t k0 = 0; k0 < nvox; k0 += chunk)
        pipe_curves_get(&src, k0, k0 + chunk < nvox ? chunk : nvox - k0, conc, th, LUMEN_CPU_SIMD_AUTO);
      double t = now() - t0;
      printf("| pipe_curves_get (FXR's curve array), chunks of %lld curves, %d thread(s) | %.3f s | %.2f ns/sample |\n",
             (long long)chunk, th, t, 1e9 * t / samples);
    }
    free(work);
  }
  /* the floor of the conversion in place: the float kernel of stage A alone on the frame-major
     series, tiles of 1024 voxels x all frames (their constants stay in L1); without flags,
     interpolation, the mean curve or prefetching. It overwrites sig. */
  {
    enum { TILE = 1024 };
    float *a = malloc(sizeof(float) * (size_t)nvox), *ca = malloc(sizeof(float) * (size_t)nvox);
    float *om = malloc(sizeof(float) * (size_t)nvox), *c0 = malloc(sizeof(float) * (size_t)nvox);
    if (!a || !ca || !om || !c0) { fprintf(stderr, "out of memory\n"); exit(1); }
    const double cfa = cos(sp.fa_rad), e10 = exp(-sp.tr / 1.2);
    for (int64_t v = 0; v < nvox; ++v) { /* baseline 1000, as the series above */
      a[v] = (float)(1.0 / (1000 * (1 - cfa * e10) / (1 - e10)));
      ca[v] = (float)cfa;
      om[v] = (float)(1 - cfa);
      c0[v] = (float)(-(1.0 / 1.2) / sp.r1);
    }
    const float k = (float)(-1.0 / (sp.tr * sp.r1));
    const int level = pipe_conc_level(LUMEN_CPU_SIMD_AUTO);
    const int64_t ntile = (nvox + TILE - 1) / TILE;
    double ti = now();
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
    for (int64_t q = 0; q < ntile; ++q) {
      const int64_t v0 = q * TILE, n = v0 + TILE < nvox ? TILE : nvox - v0;
      for (int64_t i = 0; i < nt; ++i) {
        float *row = sig + i * nvox + v0;
        pipe_conc_spgr_row(level, n, row, a + v0, ca + v0, om + v0, c0 + v0, k, row, i + 2 < nt ? row + 2 * nvox : NULL);
      }
    }
    ti = now() - ti;
    printf("| reference: in place, frame-major, float kernel (no flags, no mean, prefetch 2 rows on), %d thread(s) | %.3f s | %.2f ns/sample |\n",
           threads, ti, 1e9 * ti / samples);
    free(a); free(ca); free(om); free(c0);
  }
  /* the floor of the double conversion: one log per sample, one thread */
  double t0 = now(), acc = 0;
  for (int64_t k = 0; k < nvox * nt; ++k) acc += log(0.5 + 1e-9 * (double)(k & 1023));
  double t = now() - t0;
  printf("| reference: libm log per sample, 1 thread | %.3f s | %.2f ns/sample | (%g)\n", t, 1e9 * t / samples, acc);
  free(sig); free(conc); free(list); free(ninv); free(bad); free(mean);
}

static void bench_checksum(int64_t mb) {
  char path[] = "/tmp/bench-sum-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
  size_t n = (size_t)mb << 20;
  unsigned char *buf = malloc(n);
  if (!f || !buf) { fprintf(stderr, "cannot make the test file\n"); exit(1); }
  for (size_t i = 0; i < n; ++i) buf[i] = (unsigned char)(i * 2654435761u >> 13);
  fwrite(buf, 1, n, f);
  fclose(f);
  lumen_ctx *ctx = NULL;
  lumen_ctx_create(&ctx);
  char hex[17];
  double t0 = now();
  lumen_status st = lumen_pipe_checksum_file(ctx, path, hex);
  double t = now() - t0;
  printf("| checksum XXH3-64 of %lld MB (page cache) | %.3f s | %.2f GB/s | %s %s\n", (long long)mb, t,
         (double)n / t * 1e-9, st == LUMEN_OK ? "ok" : "failed", hex);
  t0 = now();
  uint64_t h = UINT64_C(14695981039346656037);
  for (size_t i = 0; i < n; ++i) { h ^= buf[i]; h *= UINT64_C(1099511628211); }
  t = now() - t0;
  printf("| reference: FNV-1a byte by byte (in memory) | %.3f s | %.2f GB/s | %016llx\n", t, (double)n / t * 1e-9,
         (unsigned long long)h);
  lumen_ctx_destroy(ctx);
  remove(path);
  free(buf);
}

static void bench_write(int threads) {
  const int64_t dims[3] = {256, 256, 32}, n = 256 * 256 * 32;
  float *map = malloc(sizeof(float) * (size_t)n);
  if (!map) { fprintf(stderr, "out of memory\n"); exit(1); }
  for (int64_t v = 0; v < n; ++v) /* a Ktrans-like map: a third of the voxels outside the mask */
    map[v] = v % 3 == 0 ? 0.0f : (float)(0.02 + 0.48 * (double)((v * 2654435761u) % 1000) / 1000.0);
  lumen_ctx *ctx = NULL;
  lumen_ctx_create(&ctx);
  lumen_image *im = NULL;
  lumen_image_wrap(ctx, map, 3, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), &im);
  char path[] = "/tmp/bench-map-XXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  char gz[64];
  snprintf(gz, sizeof gz, "%s.nii.gz", path);
  for (int th = 1; th <= threads; th *= 2) {
    lumen_ctx_set_threads(ctx, th);
    lumen_nifti_write_opts wo;
    memset(&wo, 0, sizeof wo);
    wo.compress_level = 1;
    wo.overwrite = 1;
    double t0 = now();
    lumen_status st = lumen_nifti_write(ctx, gz, im, &wo);
    double t = now() - t0;
    printf("| write one map .nii.gz level 1 (%lld voxels), %d thread(s) | %.3f s | %.0f MB/s | %s\n", (long long)n, th, t,
           (double)n * 4 / t * 1e-6, st == LUMEN_OK ? "ok" : lumen_ctx_last_error(ctx));
  }
  uLongf cap = compressBound((uLong)n * 4);
  unsigned char *out = malloc(cap);
  double t0 = now();
  int rc = out ? compress2(out, &cap, (const Bytef *)map, (uLong)n * 4, 1) : Z_MEM_ERROR;
  double t = now() - t0;
  printf("| reference: zlib compress2 level 1, 1 thread, in memory | %.3f s | %.0f MB/s | %s\n", t, (double)n * 4 / t * 1e-6,
         rc == Z_OK ? "ok" : "failed");
  free(out);
  remove(gz);
  remove(path);
  lumen_image_free(im);
  lumen_ctx_destroy(ctx);
  free(map);
}

int main(int argc, char **argv) {
  int64_t nvox = argc > 1 ? atoll(argv[1]) : 524288, nt = argc > 2 ? atoll(argv[2]) : 80;
  int threads = argc > 3 ? atoi(argv[3]) : 2;
  int64_t mb = argc > 4 ? atoll(argv[4]) : 256;
  if (nvox < 1 || nt < 5 || threads < 1 || mb < 1) { fprintf(stderr, "usage: bench_pipe_conc [VOXELS] [FRAMES>=5] [THREADS] [FILE_MB]\n"); return 2; }
  printf("| case | seconds | rate |\n|---|---:|---:|\n");
  bench_conc(nvox, nt, threads);
  bench_checksum(mb);
  bench_write(threads);
  return 0;
}
