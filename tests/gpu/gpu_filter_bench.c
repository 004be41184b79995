/* GPU filter benchmark: Gaussian 2-D (4096 x 3328) and 3-D (256^3), sigma 2, in FULL and HALF
 * storage; DoG 1.7/2.0; median 3x3 and 5x5. Inputs live on the device in the storage type of the
 * precision (HALF: float16 in, float16 out). Two timings per row, best of 3 rounds:
 *   kernel: the CUDA implementation called directly on preallocated device images (what the
 *           kernels cost; launches pipelined, one device synchronisation per round)
 *   call:   the public entry (lumen_filter_*) on a device-resident image, including the output
 *           allocation and its release.
 * GB/s = (bytes of the input + bytes of the output) / kernel time, compared with the nominal peak
 * (--peak-gbs, e.g. 4800 for an H200) and with a measured device-to-device copy.
 * FEBDS (dog, log, fft) on the 2-D image resident on the device: whole-call time only.
 * Usage: gpu_filter_bench [--peak-gbs X] [--reps N] [--table FILE]. Exit 77 without a device. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "filter/filter_cuda.h"
#include "filter/filter_internal.h"
#include "lumen/lumen.h"

static lumen_image *natural(lumen_ctx *ctx, int ndim, const int64_t *dims) {
  lumen_image *im = NULL;
  if (lumen_image_create(ctx, ndim, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im) != LUMEN_OK) return NULL;
  float *p = lumen_image_data(im);
  const int64_t n = lumen_image_count(im), n0 = dims[0], n1 = dims[1];
  uint64_t s = 12345;
  for (int64_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    const double x = (double)(i % n0) / (double)n0, y = (double)((i / n0) % n1) / (double)n1;
    double v = 1200 + 800 * sin(6.0 * x) * cos(4.0 * y) + 300 * x + (double)(s >> 53) / 9007199254740992.0 * 80;
    p[i] = (float)floor(v);
  }
  return im;
}

typedef struct bench_row {
  char op[48], size[24], prec[8];
  double kernel_ms, call_ms, gbs;
} bench_row;

static double copy_bandwidth(void) {
  const size_t bytes = (size_t)1 << 30;
  void *a = NULL, *b = NULL;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) {
    cudaFree(a);
    return 0;
  }
  cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
  cudaDeviceSynchronize();
  double best = 1e30;
  for (int r = 0; r < 3; r++) {
    double t0 = lumen_now_seconds();
    for (int i = 0; i < 5; i++) cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaDeviceSynchronize();
    double t = (lumen_now_seconds() - t0) / 5;
    best = t < best ? t : best;
  }
  cudaFree(a);
  cudaFree(b);
  return 2.0 * (double)bytes / best / 1e9;
}

/* time reps calls of impl on (in -> out), best of 3 rounds, ms per call */
static double time_kernel(lumen_ctx *ctx, lf_impl impl, lf_call *proto, int reps) {
  double best = 1e30;
  for (int round = 0; round < 4; round++) {
    cudaDeviceSynchronize();
    double t0 = lumen_now_seconds();
    for (int i = 0; i < reps; i++) {
      lf_call c = *proto;
      if (impl(ctx, &c) != LUMEN_OK) return -1;
    }
    cudaDeviceSynchronize();
    double t = (lumen_now_seconds() - t0) / reps;
    if (round > 0) best = t < best ? t : best; /* round 0 warms up */
  }
  return best * 1e3;
}

typedef lumen_status (*api_fn)(lumen_ctx *, const lumen_image *, const void *, lumen_image **);
static lumen_status api_gauss(lumen_ctx *ctx, const lumen_image *in, const void *o, lumen_image **out) {
  return lumen_filter_gaussian(ctx, in, o, out);
}
static lumen_status api_dog(lumen_ctx *ctx, const lumen_image *in, const void *o, lumen_image **out) {
  return lumen_filter_dog(ctx, in, o, out);
}
static lumen_status api_median(lumen_ctx *ctx, const lumen_image *in, const void *o, lumen_image **out) {
  return lumen_filter_median(ctx, in, o, out);
}

static double time_api(lumen_ctx *ctx, api_fn fn, const lumen_image *in, const void *opts, int reps) {
  double best = 1e30;
  for (int round = 0; round < 4; round++) {
    cudaDeviceSynchronize();
    double t0 = lumen_now_seconds();
    for (int i = 0; i < reps; i++) {
      lumen_image *out = NULL;
      if (fn(ctx, in, opts, &out) != LUMEN_OK) return -1;
      lumen_image_free(out);
    }
    cudaDeviceSynchronize();
    double t = (lumen_now_seconds() - t0) / reps;
    if (round > 0) best = t < best ? t : best;
  }
  return best * 1e3;
}

int main(int argc, char **argv) {
  double peak = 0;
  int reps = 20;
  const char *table = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--peak-gbs") && i + 1 < argc) peak = atof(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--table") && i + 1 < argc) table = argv[++i];
  }
  lumen_ctx *ctx = NULL;
  lumen_ctx_create(&ctx);
  int ndev = 0;
  char reason[256] = "";
  if (lumen_cuda_probe(ctx, &ndev, reason, sizeof reason) != LUMEN_OK || ndev < 1) {
    printf("gpu_filter_bench: skipped, no CUDA device (%s)\n", reason);
    lumen_ctx_destroy(ctx);
    return 77;
  }
  lumen_device dev = {LUMEN_DEVICE_CUDA, 0};
  lumen_device_info info;
  lumen_device_get_info(ctx, dev, &info);
  const double copy_gbs = copy_bandwidth();
  printf("device: %s (sm_%d%d, %d SMs, %.1f GB); device-to-device copy %.0f GB/s; nominal peak %.0f GB/s\n", info.name,
         info.compute_major, info.compute_minor, info.multiprocessors, (double)info.memory_total / 1e9, copy_gbs, peak);

  bench_row rows[32];
  int nrows = 0;
  const int64_t d2[2] = {4096, 3328}, d3[3] = {256, 256, 256};
  lumen_image *h2 = natural(ctx, 2, d2), *h3 = natural(ctx, 3, d3);
  int failed = 0;
  for (int shape = 0; shape < 2; shape++)
    for (int pi = 0; pi < 2; pi++) {
      const lumen_precision prec = pi ? LUMEN_PRECISION_HALF : LUMEN_PRECISION_FULL;
      const lumen_dtype dt = lumen_precision_dtype(prec);
      lumen_image *hin = shape ? h3 : h2, *conv = NULL, *in = NULL, *out = NULL;
      if (lumen_image_convert(ctx, hin, dt, &conv) != LUMEN_OK || lumen_image_to_device(ctx, conv, dev, &in) != LUMEN_OK ||
          lumen_image_create(ctx, lumen_image_ndim(hin), shape ? d3 : d2, dt, dev, 0, &out) != LUMEN_OK) {
        printf("setup failed: %s\n", lumen_ctx_last_error(ctx));
        failed = 1;
        break;
      }
      const double bytes = (double)lumen_image_nbytes(in) + (double)lumen_image_nbytes(out);
      const char *size = shape ? "256^3" : "4096x3328";
      /* ops: 0 gaussian sigma 2, 1 DoG 1.7/2.0, 2 median 3, 3 median 5 (2-D only), 4 gaussian 3-D
         through the two-kernel path (xy kernel + z pass, float32 intermediate) for comparison */
      for (int op = 0; op < 5; op++) {
        if (shape ? op != 0 && op != 4 : op == 4) continue;
        lf_call call;
        memset(&call, 0, sizeof call);
        lf_gauss_params gp;
        memset(&gp, 0, sizeof gp);
        lumen_gaussian_opts go;
        lumen_dog_opts dg;
        lumen_median_opts mo;
        lumen_gaussian_opts_init(&go);
        lumen_dog_opts_init(&dg);
        lumen_median_opts_init(&mo);
        go.sigma = 2.0;
        go.exec.precision = (int)prec;
        dg.low_sigma = 1.7;
        dg.high_sigma = 2.0;
        dg.exec.precision = (int)prec;
        mo.size = op == 2 ? 3 : 5;
        mo.exec.precision = (int)prec;
        call.nin = 1;
        call.in[0] = in;
        call.has_out = 1;
        call.out = out;
        call.out_dtype = call.alloc_dtype = dt;
        call.device = dev;
        call.precision = prec;
        lf_geom_make(ctx, "bench", in, 0, &call.geom);
        for (int a = 0; a < call.geom.spatial; a++) {
          gp.sigma[0][a] = op == 1 ? 1.7 : 2.0;
          gp.radius[0][a] = (int)(4.0 * gp.sigma[0][a] + 0.5);
          gp.sigma[1][a] = 2.0;
          gp.radius[1][a] = (int)(4.0 * 2.0 + 0.5);
        }
        gp.truncate = 4.0;
        gp.mode = LUMEN_BOUNDARY_NEAREST;
        lf_impl impl;
        api_fn api;
        const void *opts;
        const char *name;
        if (op == 4) lumen_ctx_set_cuda_fused_gaussian_3d(ctx, 0);
        if (op == 0 || op == 4) {
          call.op = LF_OP_GAUSSIAN, call.opts = &go, call.params = &gp, impl = lf_cuda_gaussian, api = api_gauss;
          opts = &go, name = op ? "gaussian sigma 2, xy + z passes" : "gaussian sigma 2 (nearest)";
        } else if (op == 1) {
          call.op = LF_OP_DOG, call.opts = &dg, call.params = &gp, impl = lf_cuda_dog, api = api_dog, opts = &dg;
          name = "DoG 1.7 / 2.0";
        } else {
          call.op = LF_OP_MEDIAN, call.opts = &mo, impl = lf_cuda_median, api = api_median, opts = &mo;
          name = op == 2 ? "median 3x3 (reflect)" : "median 5x5 (reflect)";
        }
        double k = time_kernel(ctx, impl, &call, reps);
        double c = time_api(ctx, api, in, opts, reps);
        lumen_ctx_set_cuda_fused_gaussian_3d(ctx, 1);
        if (k < 0 || c < 0) {
          printf("%s %s %s: failed: %s\n", name, size, pi ? "half" : "full", lumen_ctx_last_error(ctx));
          failed = 1;
          continue;
        }
        bench_row *r = &rows[nrows++];
        snprintf(r->op, sizeof r->op, "%s", name);
        snprintf(r->size, sizeof r->size, "%s", size);
        snprintf(r->prec, sizeof r->prec, "%s", pi ? "half" : "full");
        r->kernel_ms = k;
        r->call_ms = c;
        r->gbs = bytes / (k * 1e-3) / 1e9;
      }
      lumen_image_free(conv);
      lumen_image_free(in);
      lumen_image_free(out);
    }
  /* FEBDS on the 2-D image, resident on the device (whole call; hole filling runs on the CPU) */
  {
    lumen_image *in = NULL;
    if (lumen_image_to_device(ctx, h2, dev, &in) == LUMEN_OK) {
      for (int m = 0; m < LUMEN_FEBDS_METHOD_COUNT && nrows < 32; m++) {
        lumen_febds_opts fo;
        lumen_febds_opts_init(&fo);
        fo.method = (lumen_febds_method)m;
        fo.exec.device = "cuda:0";
        double best = 1e30;
        lumen_status s = LUMEN_OK;
        for (int round = 0; round < 4 && s == LUMEN_OK; round++) {
          cudaDeviceSynchronize();
          double t0 = lumen_now_seconds();
          lumen_image *mask = NULL;
          s = lumen_segment_febds(ctx, in, &fo, &mask, NULL);
          cudaDeviceSynchronize();
          double t = lumen_now_seconds() - t0;
          lumen_image_free(mask);
          if (round > 0) best = t < best ? t : best;
        }
        if (s != LUMEN_OK) {
          printf("FEBDS %s: %s\n", lumen_febds_method_name(fo.method), lumen_ctx_last_error(ctx));
          continue;
        }
        bench_row *r = &rows[nrows++];
        snprintf(r->op, sizeof r->op, "FEBDS %s (whole call)", lumen_febds_method_name(fo.method));
        snprintf(r->size, sizeof r->size, "4096x3328");
        snprintf(r->prec, sizeof r->prec, "full");
        r->kernel_ms = 0;
        r->call_ms = best * 1e3;
        r->gbs = 0;
      }
    }
    lumen_image_free(in);
  }
  FILE *tf = table ? fopen(table, "w") : NULL;
  FILE *outs[2] = {stdout, tf};
  for (int f = 0; f < 2; f++) {
    FILE *o = outs[f];
    if (!o) continue;
    fprintf(o, "# GPU filter benchmark: %s, copy %.0f GB/s, nominal peak %.0f GB/s, best of 3 x %d calls\n\n",
            info.name, copy_gbs, peak, reps);
    fprintf(o, "| op | size | storage | kernel ms | call ms | GB/s (in+out) | %% of peak | %% of copy | half speed-up |\n");
    fprintf(o, "|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nrows; i++) {
      const bench_row *r = &rows[i];
      char speed[32] = "";
      if (!strcmp(r->prec, "half"))
        for (int j = 0; j < nrows; j++)
          if (!strcmp(rows[j].prec, "full") && !strcmp(rows[j].op, r->op) && !strcmp(rows[j].size, r->size))
            snprintf(speed, sizeof speed, "%.2fx", rows[j].kernel_ms / r->kernel_ms);
      if (r->kernel_ms <= 0) {
        fprintf(o, "| %s | %s | %s | - | %.3f | - | - | - | |\n", r->op, r->size, r->prec, r->call_ms);
        continue;
      }
      fprintf(o, "| %s | %s | %s | %.3f | %.3f | %.0f | %.0f | %.0f | %s |\n", r->op, r->size, r->prec, r->kernel_ms,
              r->call_ms, r->gbs, peak > 0 ? 100.0 * r->gbs / peak : 0.0, copy_gbs > 0 ? 100.0 * r->gbs / copy_gbs : 0.0,
              speed);
    }
  }
  if (tf) fclose(tf);
  lumen_image_free(h2);
  lumen_image_free(h3);
  lumen_ctx_destroy(ctx);
  return failed;
}
