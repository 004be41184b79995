/* GPU out of memory in multi-step image work (docs/RELIABILITY.md), without a GPU: the filter
   dispatcher's CUDA test hook stands in for the device. An allocation failure at the first step
   or in the middle of a FEBDS segmentation, or in a batch filter, must give the documented
   fallback (docs/FILTERS.md): each failing step reruns on the CPU with a warning, the result
   equals the CPU run bit for bit, the report records the fallback, the context is clean and
   nothing leaks (LeakSanitizer in the sanitizer build). The single-op dispatcher and
   the fitting tier are covered by test_filter_api.c and test_fit_cuda_fallback.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "filter/filter_internal.h"
#include "lumen/segment.h"
#include "test_support.h"

#define W 96
#define H 80

static int g_calls;      /* device calls so far */
static int g_fail_from;  /* the device call (0-based) from which allocations fail */

/* The fake device: calls before g_fail_from compute with the CPU kernel (float16/bfloat16 outputs
   through a float32 scratch, as the CPU path does), later ones fail as cudaMallocAsync would. */
static lumen_status fake_device(lumen_ctx *ctx, lf_call *call) {
  if (g_calls++ >= g_fail_from)
    return lumen_fail(ctx, LUMEN_ERR_DEVICE_OUT_OF_MEMORY, "injected: cudaMallocAsync of %lld bytes failed",
                      (long long)lumen_image_nbytes(call->in[0]));
  lumen_image *keep = call->out;
  lumen_dtype t = keep ? lumen_image_dtype(keep) : LUMEN_DTYPE_FLOAT32;
  if (t != LUMEN_DTYPE_FLOAT16 && t != LUMEN_DTYPE_BFLOAT16) return lf_op_get(call->op)->cpu(ctx, call);
  lumen_image *f32 = NULL, *back = NULL;
  lumen_status s = lumen_image_convert(ctx, keep, LUMEN_DTYPE_FLOAT32, &f32);
  if (s != LUMEN_OK) return s;
  call->out = f32;
  s = lf_op_get(call->op)->cpu(ctx, call);
  call->out = keep;
  if (s == LUMEN_OK) s = lumen_image_convert(ctx, f32, t, &back);
  if (s == LUMEN_OK) memcpy(lumen_image_data(keep), lumen_image_const_data(back), (size_t)lumen_image_nbytes(back));
  lumen_image_free(back);
  lumen_image_free(f32);
  return s;
}

static int g_oom_logged;  /* warnings that report the injected failure */
static void count_oom_warnings(void *user, lumen_log_level level, const char *message) {
  (void)user;
  if (level == LUMEN_LOG_WARNING && strstr(message, "injected: cudaMallocAsync")) g_oom_logged++;
}

static void hooks(lf_impl h) {
  for (int op = 0; op < LF_OP_COUNT; op++) lumen_filter_test_set_cuda_hook((lf_op_id)op, h);
}

static int teardown(void **state) {
  (void)state;
  hooks(NULL);
  return 0;
}

/* a mammogram-like 12-bit image: smooth background, a few bright specks, deterministic noise */
static lumen_image *make_image(lumen_ctx *ctx) {
  const int64_t dims[2] = {W, H};
  lumen_image *im = NULL;
  assert_int_equal(lumen_image_create(ctx, 2, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im), LUMEN_OK);
  float *p = lumen_image_data(im);
  uint32_t s = 2024;
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      s = s * 1664525u + 1013904223u;
      double v = 1500 + 600 * sin(x * 0.05) * cos(y * 0.04) + (s >> 22) % 60;
      for (int k = 0; k < 5; k++) {
        double cx = 15 + 17 * k, cy = 12 + 13 * k, d2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
        v += 1800 * exp(-d2 / 2.0);
      }
      p[y * W + x] = (float)v;
    }
  return im;
}

/* FEBDS (default method): out of device memory at device call k, for every k of the run (k = 0:
   the first): equal masks, and the report says what happened. A run without failure first
   counts the calls and gives the same mask. */
static void febds_oom_at_each_step(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_image *img = make_image(ctx);
  lumen_febds_opts o;
  lumen_febds_opts_init(&o);
  lumen_image *cpu = NULL;
  assert_int_equal(lumen_segment_febds(ctx, img, &o, &cpu, NULL), LUMEN_OK);
  int64_t marked = 0;
  for (int64_t i = 0; i < (int64_t)W * H; i++) marked += ((const uint8_t *)lumen_image_const_data(cpu))[i] != 0;
  assert_true(marked > 0 && marked < (int64_t)W * H / 4); /* the specks, not the background */

  hooks(fake_device);
  /* how many device calls a run without failure makes */
  g_calls = 0;
  g_fail_from = 1 << 30;
  lumen_filter_report rep;
  o.exec.device = "cuda:0";
  o.exec.report = &rep;
  lumen_image *dev = NULL;
  lumen_status st = lumen_segment_febds(ctx, img, &o, &dev, NULL);
  if (st != LUMEN_OK) print_error("FEBDS on the fake device: %s\n", lumen_ctx_last_error(ctx));
  assert_int_equal(st, LUMEN_OK);
  const int steps = g_calls;
  assert_true(steps >= 3);
  lumen_test_assert_images_equal(cpu, dev);
  lumen_image_free(dev);

  int oom_reported = 0;
  lumen_ctx_set_log(ctx, count_oom_warnings, NULL, LUMEN_LOG_WARNING);
  for (int k = 0; k < steps; k++) {
    g_oom_logged = 0;
    g_calls = 0;
    g_fail_from = k;
    dev = NULL;
    memset(&rep, 0, sizeof rep);
    assert_int_equal(lumen_segment_febds(ctx, img, &o, &dev, NULL), LUMEN_OK);
    if (!rep.fell_back) print_error("OOM at device call %d of %d: no fallback recorded\n", k, steps);
    assert_int_equal(rep.fell_back, 1);
    /* the report keeps the first fallback: this OOM, or a step before it that has no CUDA kernel
       yet (NOT_BUILT); each OOM is logged as a warning */
    if (rep.device_status == LUMEN_ERR_DEVICE_OUT_OF_MEMORY) {
      assert_non_null(strstr(rep.reason, "injected: cudaMallocAsync"));
      oom_reported++;
    } else {
      assert_int_equal(rep.device_status, LUMEN_ERR_NOT_BUILT);
    }
    /* the device stays full: every step from k on tries it, fails, and reruns on the CPU */
    if (g_oom_logged != steps - k) print_error("OOM from device call %d: %d warnings\n", k, g_oom_logged);
    assert_int_equal(g_oom_logged, steps - k);
    assert_int_equal(g_calls, steps);
    assert_int_equal(rep.used.kind, LUMEN_DEVICE_CPU);
    assert_int_equal(rep.requested.kind, LUMEN_DEVICE_CUDA);
    assert_int_equal(lumen_ctx_last_status(ctx), LUMEN_OK);
    lumen_test_assert_images_equal(cpu, dev);
    lumen_image_free(dev);
  }
  assert_true(oom_reported >= 1); /* at least the failure at the first device call */
  lumen_image_free(cpu);
  lumen_image_free(img);
  lumen_ctx_destroy(ctx);
}

/* a batch of 2-D images (3-D image, per-slice Gaussian): out of device memory at once, and after
   the first device call; equal to the CPU batch either way */
static void batch_oom(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  const int64_t dims[3] = {W, H, 4};
  lumen_image *vol = NULL;
  assert_int_equal(lumen_image_create(ctx, 3, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &vol), LUMEN_OK);
  float *p = lumen_image_data(vol);
  for (int64_t i = 0; i < (int64_t)W * H * 4; i++) p[i] = (float)(1000 + 400 * sin(0.013 * (double)i) + (i % 37));
  lumen_gaussian_opts g;
  lumen_gaussian_opts_init(&g);
  g.sigma = 1.5;
  lumen_image *cpu = NULL;
  assert_int_equal(lumen_filter_gaussian_batch(ctx, vol, &g, &cpu), LUMEN_OK);
  hooks(fake_device);
  lumen_filter_report rep;
  g.exec.device = "cuda";
  g.exec.report = &rep;
  for (int k = 0; k < 2; k++) {
    g_calls = 0;
    g_fail_from = k;
    lumen_image *dev = NULL;
    memset(&rep, 0, sizeof rep);
    assert_int_equal(lumen_filter_gaussian_batch(ctx, vol, &g, &dev), LUMEN_OK);
    lumen_test_assert_images_equal(cpu, dev);
    if (g_calls > k) {  /* the device was asked and failed */
      assert_int_equal(rep.fell_back, 1);
      assert_int_equal(rep.device_status, LUMEN_ERR_DEVICE_OUT_OF_MEMORY);
      assert_non_null(strstr(rep.reason, "device_out_of_memory"));
    }
    assert_true(g_calls >= 1);
    lumen_image_free(dev);
  }
  lumen_image_free(cpu);
  lumen_image_free(vol);
  lumen_ctx_destroy(ctx);
}

LUMEN_TEST_MAIN(cmocka_unit_test_teardown(febds_oom_at_each_step, teardown),
                cmocka_unit_test_teardown(batch_oom, teardown))
