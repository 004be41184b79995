/* Filter API: dispatch and the CPU rerun after an injected device failure, the no-kernel fallback,
 * precision (storage type and error bounds), integer inputs, batches, SIMD == generic paths, the
 * band-pass centring, and bad inputs (a status and a message, never a crash). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "filter/filter_internal.h"
#include "test_support.h"

#define PI_D 3.14159265358979323846
#define NX 67
#define NY 45

/* natural-image-like test data: smooth structure + texture + noise in [0, 4095] */
static lumen_image *make_image(lumen_ctx *ctx, int nz) {
  const int64_t dims[3] = {NX, NY, nz};
  lumen_image *im = NULL;
  assert_int_equal(lumen_image_create(ctx, nz > 1 ? 3 : 2, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im),
                   LUMEN_OK);
  float *p = lumen_image_data(im);
  uint32_t s = 12345;
  for (int64_t i = 0; i < (int64_t)NX * NY * nz; i++) {
    int64_t x = i % NX, y = (i / NX) % NY, z = i / (NX * NY);
    s = s * 1664525u + 1013904223u;
    double v = 2000 + 1200 * sin(x * 0.11 + z) * cos(y * 0.07) + 300 * sin(x * 0.9 + y * 0.5) + (s >> 20) % 200;
    p[i] = (float)v;
  }
  return im;
}

/* ------------------------------------------------------------------ fallback */

static int hook_calls;
static lumen_status oom_hook(lumen_ctx *ctx, lf_call *call) {
  hook_calls++;
  assert_non_null(call->in_f32[0]);
  return lumen_fail(ctx, LUMEN_ERR_DEVICE_OUT_OF_MEMORY, "injected: cudaMallocAsync of %lld bytes failed",
                    (long long)lumen_image_nbytes(call->in[0]));
}
static lumen_status device_error_hook(lumen_ctx *ctx, lf_call *call) {
  (void)call;
  hook_calls++;
  return lumen_fail(ctx, LUMEN_ERR_DEVICE, "injected: an illegal memory access was encountered");
}
static lumen_status bad_arg_hook(lumen_ctx *ctx, lf_call *call) {
  (void)call;
  hook_calls++;
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "injected: not a device failure");
}
/* a "device" that succeeds: runs the CPU kernel into a float32 scratch, then stores the precision */
static lumen_status ok_hook(lumen_ctx *ctx, lf_call *call) {
  hook_calls++;
  lumen_image *f = NULL;
  lumen_image *keep = call->out;
  lumen_status s = lumen_image_convert(ctx, keep, LUMEN_DTYPE_FLOAT32, &f);
  if (s != LUMEN_OK) return s;
  call->out = f;
  s = lf_op_get(call->op)->cpu(ctx, call);
  call->out = keep;
  if (s == LUMEN_OK) {
    lumen_image *r = NULL;
    s = lumen_image_convert(ctx, f, lumen_image_dtype(keep), &r);
    if (s == LUMEN_OK) memcpy(lumen_image_data(keep), lumen_image_const_data(r), (size_t)lumen_image_nbytes(r));
    lumen_image_free(r);
  }
  lumen_image_free(f);
  return s;
}

/* fn with options o on the CPU into cpu, then asked for device dev into fb (report in rep): both
   succeed and the injected CUDA hook ran once. */
#define CPU_THEN_FALLBACK(fn, o, dev)                     \
  do {                                                    \
    assert_int_equal(fn(ctx, in, &(o), &cpu), LUMEN_OK); \
    (o).exec.device = (dev);                              \
    (o).exec.report = &rep;                               \
    hook_calls = 0;                                       \
    assert_int_equal(fn(ctx, in, &(o), &fb), LUMEN_OK);  \
    assert_int_equal(hook_calls, 1);                      \
  } while (0)

static void injected_oom_reruns_on_cpu(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *in = make_image(ctx, 1);
  for (int op = 0; op < LF_OP_COUNT; op++) lumen_filter_test_set_cuda_hook((lf_op_id)op, oom_hook);
  lumen_filter_report rep;

  /* gaussian: equal result, recorded reason, the hook ran once */
  lumen_gaussian_opts g;
  lumen_gaussian_opts_init(&g);
  g.sigma = 2.0;
  lumen_image *cpu = NULL, *fb = NULL;
  CPU_THEN_FALLBACK(lumen_filter_gaussian, g, "cuda:0");
  lumen_test_assert_images_equal(cpu, fb);
  assert_int_equal(rep.fell_back, 1);
  assert_int_equal(rep.device_status, LUMEN_ERR_DEVICE_OUT_OF_MEMORY);
  assert_int_equal(rep.requested.kind, LUMEN_DEVICE_CUDA);
  assert_int_equal(rep.used.kind, LUMEN_DEVICE_CPU);
  assert_string_equal(rep.op, "gaussian");
  assert_non_null(strstr(rep.reason, "device_out_of_memory"));
  assert_non_null(strstr(rep.reason, "injected: cudaMallocAsync"));
  assert_int_equal(lumen_image_device(fb).kind, LUMEN_DEVICE_CPU);
  assert_int_equal(lumen_ctx_last_status(ctx), LUMEN_OK); /* the recovered error is cleared */
  LUMEN_TEST_FREE_IMAGES(cpu, fb);

  /* every kind of op goes through the same dispatcher: median, morphology, label, otsu, entropy */
  lumen_median_opts m;
  lumen_median_opts_init(&m);
  m.size = 5;
  CPU_THEN_FALLBACK(lumen_filter_median, m, "cuda");
  assert_true(rep.fell_back == 1 && !strcmp(rep.op, "median"));
  lumen_test_assert_images_equal(cpu, fb);
  LUMEN_TEST_FREE_IMAGES(cpu, fb);

  lumen_morph_opts mo;
  lumen_morph_opts_init(&mo);
  mo.op = LUMEN_MORPH_TOPHAT;
  assert_int_equal(lumen_filter_morphology(ctx, in, &mo, &cpu), LUMEN_OK);
  mo.exec.device = "cuda:0";
  mo.exec.report = &rep;
  assert_int_equal(lumen_filter_morphology(ctx, in, &mo, &fb), LUMEN_OK);
  assert_true(rep.fell_back == 1 && !strcmp(rep.op, "morphology"));
  lumen_test_assert_images_equal(cpu, fb);
  LUMEN_TEST_FREE_IMAGES(cpu, fb);

  double t1 = 0, t2 = 0;
  lumen_otsu_opts ot;
  lumen_otsu_opts_init(&ot);
  assert_int_equal(lumen_filter_otsu(ctx, in, &ot, &t1, &cpu), LUMEN_OK);
  ot.exec.device = "cuda:0";
  ot.exec.report = &rep;
  assert_int_equal(lumen_filter_otsu(ctx, in, &ot, &t2, &fb), LUMEN_OK);
  assert_true(t1 == t2 && rep.fell_back == 1);
  lumen_test_assert_images_equal(cpu, fb);
  lumen_image_free(cpu);

  lumen_region_opts ro;
  lumen_region_opts_init(&ro);
  int64_t c1 = 0, c2 = 0;
  assert_int_equal(lumen_filter_label(ctx, fb, &ro, &cpu, &c1), LUMEN_OK);
  lumen_image *lab = NULL;
  ro.exec.device = "cuda:0";
  ro.exec.report = &rep;
  assert_int_equal(lumen_filter_label(ctx, fb, &ro, &lab, &c2), LUMEN_OK);
  assert_true(c1 == c2 && c1 > 0 && rep.fell_back == 1);
  lumen_test_assert_images_equal(cpu, lab);
  LUMEN_TEST_FREE_IMAGES(cpu, lab, fb);

  /* LUMEN_ERR_DEVICE also falls back; a non-device error does not */
  lumen_filter_test_set_cuda_hook(LF_OP_GAUSSIAN, device_error_hook);
  assert_int_equal(lumen_filter_gaussian(ctx, in, &g, &fb), LUMEN_OK);
  assert_int_equal(rep.device_status, LUMEN_ERR_DEVICE);
  assert_non_null(strstr(rep.reason, "illegal memory access"));
  lumen_image_free(fb);
  lumen_filter_test_set_cuda_hook(LF_OP_GAUSSIAN, bad_arg_hook);
  fb = (lumen_image *)0x1;
  assert_int_equal(lumen_filter_gaussian(ctx, in, &g, &fb), LUMEN_ERR_INVALID_ARGUMENT);
  assert_null(fb);
  assert_int_equal(rep.fell_back, 0);

  /* a device that succeeds: the output comes from the device path, in the storage precision */
  lumen_filter_test_set_cuda_hook(LF_OP_GAUSSIAN, ok_hook);
  g.exec.precision = LUMEN_PRECISION_HALF;
  hook_calls = 0;
  assert_int_equal(lumen_filter_gaussian(ctx, in, &g, &fb), LUMEN_OK);
  assert_int_equal(hook_calls, 1);
  assert_int_equal(rep.fell_back, 0);
  assert_int_equal(rep.used.kind, LUMEN_DEVICE_CUDA);
  assert_int_equal(lumen_image_dtype(fb), LUMEN_DTYPE_FLOAT16);
  g.exec.device = "cpu";
  assert_int_equal(lumen_filter_gaussian(ctx, in, &g, &cpu), LUMEN_OK);
  lumen_test_assert_images_equal(cpu, fb);
  LUMEN_TEST_FREE_IMAGES(cpu, fb);

  for (int op = 0; op < LF_OP_COUNT; op++) lumen_filter_test_set_cuda_hook((lf_op_id)op, NULL);
  lumen_image_free(in);
}

static void no_kernel_falls_back_with_reason(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *in = make_image(ctx, 1);
  lumen_filter_report rep;
  lumen_dog_opts d;
  lumen_dog_opts_init(&d);
  d.exec.device = "cuda:0";
  d.exec.report = &rep;
  lumen_image *out = NULL, *ref = NULL;
  assert_int_equal(lumen_filter_dog(ctx, in, &d, &out), LUMEN_OK);
  int gpus = 0;
  int usable = lumen_cuda_probe(ctx, &gpus, NULL, 0) == LUMEN_OK;
  lumen_ctx_clear_error(ctx);
  if (!lumen_filter_op_has_cuda("dog")) {
    /* a build without CUDA kernels: the reason says so */
    assert_int_equal(rep.fell_back, 1);
    assert_string_equal(rep.reason, "no CUDA kernel for dog yet");
  } else if (!usable) {
    /* kernels built, no usable device here: the reason names the device problem */
    assert_int_equal(rep.fell_back, 1);
    assert_true(strlen(rep.reason) > 0);
    assert_null(strstr(rep.reason, "no CUDA kernel"));
  } else {
    assert_int_equal(rep.fell_back, 0);
  }
  d.exec.device = NULL;
  assert_int_equal(lumen_filter_dog(ctx, in, &d, &ref), LUMEN_OK);
  assert_int_equal(rep.fell_back, 0);
  lumen_test_assert_images_equal(ref, out);
  LUMEN_TEST_FREE_IMAGES(out, ref);
  /* the context default device is used when nothing else says where */
  assert_int_equal(lumen_ctx_set_default_device(ctx, "cuda:1"), LUMEN_OK);
  d.exec.device = "";
  assert_int_equal(lumen_filter_dog(ctx, in, &d, &out), LUMEN_OK); /* the input is on the CPU: CPU */
  assert_int_equal(rep.requested.kind, LUMEN_DEVICE_CPU);
  lumen_image_free(out);
  assert_int_equal(lumen_filter_op_count(), LF_OP_COUNT);
  for (int i = 0; i < lumen_filter_op_count(); i++) assert_non_null(lumen_filter_op_name(i));
  assert_null(lumen_filter_op_name(-1));
  lumen_image_free(in);
}

/* ------------------------------------------------------------------ precision */

static void check_bound(const lumen_image *full, const lumen_image *red, double rel, const char *what) {
  lumen_image *back = NULL;
  lumen_ctx *ctx = lumen_test_ctx();
  assert_int_equal(lumen_image_convert(ctx, red, LUMEN_DTYPE_FLOAT32, &back), LUMEN_OK);
  const float *f = lumen_image_const_data(full), *r = lumen_image_const_data(back);
  double worst = 0;
  for (int64_t i = 0; i < lumen_image_count(full); i++) {
    double err = fabs((double)r[i] - (double)f[i]);
    double bound = rel * fabs((double)f[i]) + 6e-8; /* relative half-ulp + the smallest subnormal */
    if (err > bound) {
      print_error("%s: |%g - %g| = %g > %g at %lld\n", what, r[i], f[i], err, bound, (long long)i);
      fail();
    }
    if (f[i] != 0 && err / fabs(f[i]) > worst) worst = err / fabs(f[i]);
  }
  assert_true(worst > 0); /* it was really rounded */
  lumen_image_free(back);
  lumen_ctx_destroy(ctx);
}

static void precision_is_honoured(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *in = make_image(ctx, 1);
  lumen_gaussian_opts g;
  lumen_gaussian_opts_init(&g);
  g.sigma = 1.5;
  lumen_image *full = NULL, *half = NULL, *bf = NULL, *def = NULL;
  assert_int_equal(lumen_filter_gaussian(ctx, in, &g, &full), LUMEN_OK);
  assert_int_equal(lumen_image_dtype(full), LUMEN_DTYPE_FLOAT32);
  g.exec.precision = LUMEN_PRECISION_HALF;
  assert_int_equal(lumen_filter_gaussian(ctx, in, &g, &half), LUMEN_OK);
  assert_int_equal(lumen_image_dtype(half), LUMEN_DTYPE_FLOAT16);
  check_bound(full, half, 1.0 / 2048, "half");
  g.exec.precision = LUMEN_PRECISION_BFLOAT16;
  assert_int_equal(lumen_filter_gaussian(ctx, in, &g, &bf), LUMEN_OK);
  assert_int_equal(lumen_image_dtype(bf), LUMEN_DTYPE_BFLOAT16);
  check_bound(full, bf, 1.0 / 256, "bfloat16");
  /* the context default is read when the options leave it unset */
  assert_int_equal(lumen_ctx_set_default_precision(ctx, LUMEN_PRECISION_HALF), LUMEN_OK);
  g.exec.precision = LUMEN_FILTER_PRECISION_DEFAULT;
  assert_int_equal(lumen_filter_gaussian(ctx, in, &g, &def), LUMEN_OK);
  lumen_test_assert_images_equal(half, def);
  lumen_image_free(def);
  /* a half-precision input is read as float32, and non-float outputs keep their type */
  lumen_median_opts m;
  lumen_median_opts_init(&m);
  assert_int_equal(lumen_filter_median(ctx, half, &m, &def), LUMEN_OK);
  assert_int_equal(lumen_image_dtype(def), LUMEN_DTYPE_FLOAT16);
  lumen_image_free(def);
  lumen_region_opts r;
  lumen_region_opts_init(&r);
  assert_int_equal(lumen_filter_fill_holes(ctx, half, &r, &def), LUMEN_OK);
  assert_int_equal(lumen_image_dtype(def), LUMEN_DTYPE_UINT8);
  lumen_image_free(def);
  /* DoG and LoG in half precision against full */
  lumen_dog_opts d;
  lumen_dog_opts_init(&d);
  lumen_image *dfull = NULL, *dhalf = NULL;
  d.exec.precision = LUMEN_PRECISION_FULL;
  assert_int_equal(lumen_filter_dog(ctx, in, &d, &dfull), LUMEN_OK);
  d.exec.precision = LUMEN_PRECISION_HALF;
  assert_int_equal(lumen_filter_dog(ctx, in, &d, &dhalf), LUMEN_OK);
  check_bound(dfull, dhalf, 1.0 / 2048, "dog half");
  LUMEN_TEST_FREE_IMAGES(dfull, dhalf, full, half, bf, in);
}

static void integer_inputs(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t dims[2] = {NX, NY};
  lumen_image *u = NULL, *f = NULL;
  assert_int_equal(lumen_image_create(ctx, 2, dims, LUMEN_DTYPE_UINT16, lumen_device_cpu(), 0, &u), LUMEN_OK);
  assert_int_equal(lumen_image_create(ctx, 2, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &f), LUMEN_OK);
  uint16_t *pu = lumen_image_data(u);
  float *pf = lumen_image_data(f);
  for (int i = 0; i < NX * NY; i++) pf[i] = pu[i] = (uint16_t)((i * 7919) % 4096);
  lumen_median_opts m;
  lumen_median_opts_init(&m);
  m.size = 5;
  lumen_image *a = NULL, *b = NULL;
  assert_int_equal(lumen_filter_median(ctx, u, &m, &a), LUMEN_OK);
  assert_int_equal(lumen_filter_median(ctx, f, &m, &b), LUMEN_OK);
  lumen_test_assert_images_equal(a, b);
  LUMEN_TEST_FREE_IMAGES(a, b);
  lumen_gamma_opts gm;
  lumen_gamma_opts_init(&gm);
  gm.gamma = 1.25;
  assert_int_equal(lumen_filter_gamma(ctx, u, &gm, &a), LUMEN_OK);
  const float *pa = lumen_image_const_data(a);
  for (int i = 0; i < NX * NY; i++)
    lumen_test_assert_close(pa[i], 4095.0 * pow(pf[i] / 4095.0, 1.25), 1e-3, 1e-5, "gamma");
  lumen_image_free(a);
  lumen_contrast_opts c;
  lumen_contrast_opts_init(&c);
  c.contrast = 100;
  c.brightness = 20;
  assert_int_equal(lumen_filter_contrast(ctx, u, &c, &a), LUMEN_OK);
  pa = lumen_image_const_data(a);
  for (int i = 0; i < NX * NY; i++) {
    double v = (100.0 / (4095.0 / 2) + 1) * pf[i] + (20 - 100);
    v = v < 0 ? 0 : v > 4095 ? 4095 : v;
    lumen_test_assert_close(pa[i], v, 1e-3, 1e-6, "contrast");
  }
  LUMEN_TEST_FREE_IMAGES(a, u, f);
}

/* ------------------------------------------------------------------ batches */

static void batch_equals_per_image(void **state) {
  lumen_ctx *ctx = *state;
  const int nz = 4;
  lumen_image *vol = make_image(ctx, nz);
  lumen_gaussian_opts g;
  lumen_gaussian_opts_init(&g);
  g.sigma = 1.7;
  g.mode = LUMEN_BOUNDARY_CONSTANT;
  g.cval = 100;
  lumen_image *bout = NULL;
  assert_int_equal(lumen_filter_gaussian_batch(ctx, vol, &g, &bout), LUMEN_OK);
  lumen_image *slices[4], *outs[4];
  const int64_t d2[2] = {NX, NY};
  for (int z = 0; z < nz; z++) {
    assert_int_equal(lumen_image_wrap(ctx, (float *)lumen_image_data(vol) + (int64_t)z * NX * NY, 2, d2,
                                      LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), &slices[z]),
                     LUMEN_OK);
    lumen_image *one = NULL;
    assert_int_equal(lumen_filter_gaussian(ctx, slices[z], &g, &one), LUMEN_OK);
    assert_memory_equal(lumen_image_const_data(one), (const float *)lumen_image_const_data(bout) + (int64_t)z * NX * NY,
                        (size_t)NX * NY * 4);
    lumen_image_free(one);
  }
  assert_int_equal(lumen_filter_gaussian_many(ctx, nz, (const lumen_image *const *)slices, &g, outs), LUMEN_OK);
  for (int z = 0; z < nz; z++) {
    assert_memory_equal(lumen_image_const_data(outs[z]),
                        (const float *)lumen_image_const_data(bout) + (int64_t)z * NX * NY, (size_t)NX * NY * 4);
    lumen_image_free(outs[z]);
  }
  /* spatial_dims = 2 works for the other ops too: median per slice */
  lumen_median_opts m;
  lumen_median_opts_init(&m);
  m.spatial_dims = 2;
  lumen_image *mb = NULL, *m0 = NULL;
  assert_int_equal(lumen_filter_median(ctx, vol, &m, &mb), LUMEN_OK);
  m.spatial_dims = 0;
  assert_int_equal(lumen_filter_median(ctx, slices[2], &m, &m0), LUMEN_OK);
  assert_memory_equal(lumen_image_const_data(m0), (const float *)lumen_image_const_data(mb) + 2 * NX * NY,
                      (size_t)NX * NY * 4);
  LUMEN_TEST_FREE_IMAGES(mb, m0);
  /* mismatched shapes: an error naming the image, nothing allocated */
  const int64_t d3[2] = {NX, NY - 1};
  lumen_image *odd = NULL;
  assert_int_equal(lumen_image_create(ctx, 2, d3, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), LUMEN_IMAGE_ZERO, &odd),
                   LUMEN_OK);
  lumen_image *mixed[2] = {slices[0], odd};
  outs[0] = outs[1] = (lumen_image *)0x1;
  assert_int_equal(lumen_filter_gaussian_many(ctx, 2, (const lumen_image *const *)mixed, &g, outs),
                   LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "in[1] dims[1]"));
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "mismatched"));
  assert_null(outs[0]);
  assert_null(outs[1]);
  lumen_image_free(odd);
  for (int z = 0; z < nz; z++) lumen_image_free(slices[z]);
  LUMEN_TEST_FREE_IMAGES(bout, vol);
}

/* ------------------------------------------------------------------ SIMD vs generic */

static void simd_matches_generic(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *im2 = make_image(ctx, 1), *im3 = make_image(ctx, 5);
  lumen_image *a[4], *b[4];
  lumen_median_opts m;
  lumen_median_opts_init(&m);
  lumen_gaussian_opts g;
  lumen_gaussian_opts_init(&g);
  g.sigma = 2.5;
  for (int pass = 0; pass < 2; pass++) {
    lumen_image **o = pass ? b : a;
    if (pass) assert_int_equal(lumen_ctx_set_cpu_simd(ctx, LUMEN_CPU_SIMD_OFF), LUMEN_OK);
    m.size = 3;
    assert_int_equal(lumen_filter_median(ctx, im2, &m, &o[0]), LUMEN_OK);
    m.size = 5;
    assert_int_equal(lumen_filter_median(ctx, im2, &m, &o[1]), LUMEN_OK);
    m.size = 3;
    assert_int_equal(lumen_filter_median(ctx, im3, &m, &o[2]), LUMEN_OK);
    assert_int_equal(lumen_filter_gaussian(ctx, im3, &g, &o[3]), LUMEN_OK);
  }
  assert_int_equal(lumen_ctx_set_cpu_simd(ctx, LUMEN_CPU_SIMD_AUTO), LUMEN_OK);
  for (int i = 0; i < 4; i++) {
    lumen_test_assert_images_equal(a[i], b[i]);
    LUMEN_TEST_FREE_IMAGES(a[i], b[i]);
  }
  LUMEN_TEST_FREE_IMAGES(im2, im3);
}

/* ------------------------------------------------------------------ band-pass centring */

static void bandpass_is_centred(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  const int n = 64;
  const int64_t d[2] = {n, n};
  lumen_image *im = NULL, *out = NULL;
  assert_int_equal(lumen_image_create(ctx, 2, d, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im), LUMEN_OK);
  float *p = lumen_image_data(im);
  /* DC + a wave at radius 8 (passes) + a wave near Nyquist (rejected) */
  for (int y = 0; y < n; y++)
    for (int x = 0; x < n; x++)
      p[y * n + x] = (float)(500 + 10 * cos(2 * PI_D * 8 * x / n) + 7 * cos(2 * PI_D * 30 * y / n));
  lumen_bandpass_opts o;
  lumen_bandpass_opts_init(&o);
  o.d0 = 8;
  o.width = 0.5;
  o.order = 3;
  lumen_status s = lumen_filter_bandpass(ctx, im, &o, &out);
  if (s == LUMEN_ERR_NOT_BUILT) {
    lumen_image_free(im);
    lumen_ctx_destroy(ctx);
    skip();
  }
  assert_int_equal(s, LUMEN_OK);
  const float *q = lumen_image_const_data(out);
  for (int y = 0; y < n; y++)
    for (int x = 0; x < n; x++)
      lumen_test_assert_close(q[y * n + x], 10 * cos(2 * PI_D * 8 * x / n), 2e-3, 0, "band-pass keeps radius d0");
  LUMEN_TEST_FREE_IMAGES(out, im);
  lumen_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------ bad input */

#define EXPECT_BAD(call, text)                                                       \
  do {                                                                               \
    assert_int_equal((call), LUMEN_ERR_INVALID_ARGUMENT);                            \
    if (!strstr(lumen_ctx_last_error(ctx), (text))) {                                \
      print_error("message '%s' lacks '%s'\n", lumen_ctx_last_error(ctx), (text));   \
      fail();                                                                        \
    }                                                                                \
  } while (0)
/* Options of type T from T_init with one field set to value: fn(ctx, in, &opts, &out) refused with text. */
#define EXPECT_BAD_OPTION(T, field, value, fn, text) \
  do {                                               \
    T opts_;                                         \
    T##_init(&opts_);                                \
    opts_.field = (value);                           \
    EXPECT_BAD(fn(ctx, in, &opts_, &out), text);     \
  } while (0)

static void bad_inputs(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *in = make_image(ctx, 1), *out = (lumen_image *)0x1, *b = NULL;
  lumen_gaussian_opts g;
  lumen_gaussian_opts_init(&g);
  EXPECT_BAD(lumen_filter_gaussian(ctx, NULL, &g, &out), "argument 'in' is NULL");
  assert_null(out);
  EXPECT_BAD(lumen_filter_gaussian(ctx, in, &g, NULL), "output");
  assert_int_equal(lumen_filter_gaussian(NULL, in, &g, &out), LUMEN_ERR_INVALID_ARGUMENT);
  g.sigma = 0;
  EXPECT_BAD(lumen_filter_gaussian(ctx, in, &g, &out), "sigma is 0, expected > 0");
  g.sigma = -2;
  EXPECT_BAD(lumen_filter_gaussian(ctx, in, &g, &out), "sigma is -2");
  g.sigma = NAN;
  EXPECT_BAD(lumen_filter_gaussian(ctx, in, &g, &out), "sigma is nan");
  g.sigma = 1;
  g.sigma_axis[1] = -1;
  EXPECT_BAD(lumen_filter_gaussian(ctx, in, &g, &out), "sigma_axis[1] is -1");
  g.sigma_axis[1] = 0;
  {  /* a sigma in mm over a spacing of 1e-6 mm: the image's fault (LUMEN_ERR_INVALID_DATA, CLI exit 1) */
    lumen_image *tiny = make_image(ctx, 1);
    const double sp[2] = {1e-6, 1e-6};
    assert_int_equal(lumen_image_set_spacing(ctx, tiny, sp, 2), LUMEN_OK);
    g.units = LUMEN_UNITS_MM;
    assert_int_equal(lumen_filter_gaussian(ctx, tiny, &g, &out), LUMEN_ERR_INVALID_DATA);
    assert_null(out);
    assert_non_null(strstr(lumen_ctx_last_error(ctx), "spacing 1e-06 mm on axis 0"));
    g.units = LUMEN_UNITS_VOXELS;
    g.sigma = 1e6;  /* the same sigma in voxels is the options' fault */
    EXPECT_BAD(lumen_filter_gaussian(ctx, tiny, &g, &out), "gives a radius over");
    g.sigma = 1;
    lumen_image_free(tiny);
  }
  g.truncate = 0;
  EXPECT_BAD(lumen_filter_gaussian(ctx, in, &g, &out), "truncate");
  g.truncate = 4;
  g.mode = (lumen_boundary)9;
  EXPECT_BAD(lumen_filter_gaussian(ctx, in, &g, &out), "mode is 9");
  g.mode = LUMEN_BOUNDARY_REFLECT;
  g.spatial_dims = 3;
  EXPECT_BAD(lumen_filter_gaussian(ctx, in, &g, &out), "spatial_dims is 3");
  g.spatial_dims = 0;
  g.exec.precision = 7;
  EXPECT_BAD(lumen_filter_gaussian(ctx, in, &g, &out), "exec.precision is 7");
  g.exec.precision = LUMEN_FILTER_PRECISION_DEFAULT;
  g.exec.device = "gpu0";
  EXPECT_BAD(lumen_filter_gaussian(ctx, in, &g, &out), "exec.device is 'gpu0'");
  g.exec.device = NULL;
  g.units = (lumen_units)5;
  EXPECT_BAD(lumen_filter_gaussian(ctx, in, &g, &out), "units is 5");
  EXPECT_BAD(lumen_filter_gaussian_batch(ctx, NULL, NULL, &out), "'in' is NULL");
  EXPECT_BAD(lumen_filter_gaussian_many(ctx, 0, NULL, NULL, NULL), "must not be NULL");

  EXPECT_BAD_OPTION(lumen_dog_opts, high_sigma, 0.5, lumen_filter_dog, "high_sigma is 0.5, expected > low_sigma");
  EXPECT_BAD_OPTION(lumen_laplace_opts, sigma, 0, lumen_filter_gaussian_laplace, "sigma is 0");
  EXPECT_BAD_OPTION(lumen_median_opts, size, 4, lumen_filter_median, "size is 4, expected an odd window width");
  EXPECT_BAD_OPTION(lumen_median_opts, size, 0, lumen_filter_median, "size is 0");
  EXPECT_BAD_OPTION(lumen_gamma_opts, gamma, 0, lumen_filter_gamma, "gamma is 0");
  EXPECT_BAD_OPTION(lumen_bandpass_opts, width, 0, lumen_filter_bandpass, "width is 0");
  /* the reference framework's default window, 10 */
  EXPECT_BAD_OPTION(lumen_sauvola_opts, window, 10, lumen_filter_sauvola, "window is 10, expected an odd size");
  EXPECT_BAD_OPTION(lumen_local_variance_opts, window, 6, lumen_filter_variance_binarize, "window is 6");

  lumen_convolve_opts c;
  lumen_convolve_opts_init(&c);
  EXPECT_BAD(lumen_filter_convolve(ctx, in, NULL, &out), "'opts' is NULL");
  EXPECT_BAD(lumen_filter_convolve(ctx, in, &c, &out), "kernel is NULL");
  float k[3] = {1, 2, 1};
  c.kernel = k;
  c.kernel_ndim = 3;
  EXPECT_BAD(lumen_filter_convolve(ctx, in, &c, &out), "kernel_ndim is 3");
  c.kernel_ndim = 1;
  c.kernel_dims[0] = 0;
  EXPECT_BAD(lumen_filter_convolve(ctx, in, &c, &out), "kernel_dims[0] is 0");

  EXPECT_BAD_OPTION(lumen_morph_opts, element, LUMEN_ELEMENT_BALL, lumen_filter_morphology, "needs a 3-D image");
  lumen_morph_opts mo;
  lumen_morph_opts_init(&mo);
  mo.element = LUMEN_ELEMENT_SQUARE;
  mo.size = 6;
  EXPECT_BAD(lumen_filter_morphology(ctx, in, &mo, &out), "size is 6");
  mo.size = 7;
  mo.op = (lumen_morph_op)12;
  EXPECT_BAD(lumen_filter_morphology(ctx, in, &mo, &out), "op is 12");

  lumen_region_opts r;
  lumen_region_opts_init(&r);
  r.connectivity = 3;
  EXPECT_BAD(lumen_filter_label(ctx, in, &r, &out, NULL), "connectivity is 3, expected 1..2");
  EXPECT_BAD(lumen_filter_fill_holes(ctx, in, &r, &out), "connectivity is 3");

  double t;
  lumen_otsu_opts ot;
  lumen_otsu_opts_init(&ot);
  EXPECT_BAD(lumen_filter_otsu(ctx, in, &ot, NULL, NULL), "output");
  ot.bins = -1;
  EXPECT_BAD(lumen_filter_otsu(ctx, in, &ot, &t, NULL), "bins is -1");

  const int64_t d2[2] = {NX + 1, NY};
  assert_int_equal(lumen_image_create(ctx, 2, d2, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), LUMEN_IMAGE_ZERO, &b),
                   LUMEN_OK);
  lumen_mi_result mi;
  EXPECT_BAD(lumen_filter_mutual_information(ctx, in, b, NULL, &mi), "mismatched pair shapes");
  EXPECT_BAD(lumen_filter_mutual_information(ctx, in, NULL, NULL, &mi), "'b' is NULL");
  lumen_stats_opts so;
  lumen_stats_opts_init(&so);
  so.ddof = 2;
  EXPECT_BAD(lumen_filter_variance(ctx, in, &so, &t, &t), "ddof is 2");
  so.ddof = 0;
  so.bins = -3;
  EXPECT_BAD(lumen_filter_entropy(ctx, in, &so, &t), "bins is -3");
  assert_null(out);
  lumen_image_free(b);

  /* constant images and 1-voxel images are fine */
  const int64_t one[2] = {1, 1};
  assert_int_equal(lumen_image_create(ctx, 2, one, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), LUMEN_IMAGE_ZERO, &b),
                   LUMEN_OK);
  lumen_gaussian_opts_init(&g);
  g.sigma = 3;
  assert_int_equal(lumen_filter_gaussian(ctx, b, &g, &out), LUMEN_OK);
  lumen_image_free(out);
  assert_int_equal(lumen_filter_median(ctx, b, NULL, &out), LUMEN_OK);
  lumen_image_free(out);
  assert_int_equal(lumen_filter_otsu(ctx, b, NULL, &t, NULL), LUMEN_OK);
  assert_true(t == 0.0);
  assert_int_equal(lumen_filter_entropy(ctx, b, NULL, &t), LUMEN_OK);
  assert_true(t == 0.0);
  LUMEN_TEST_FREE_IMAGES(b, in);
}

LUMEN_TEST_MAIN(LUMEN_TEST_WITH_CTX(injected_oom_reruns_on_cpu), LUMEN_TEST_WITH_CTX(no_kernel_falls_back_with_reason),
                LUMEN_TEST_WITH_CTX(precision_is_honoured),      LUMEN_TEST_WITH_CTX(integer_inputs),
                LUMEN_TEST_WITH_CTX(batch_equals_per_image),     LUMEN_TEST_WITH_CTX(simd_matches_generic),
                cmocka_unit_test(bandpass_is_centred),        LUMEN_TEST_WITH_CTX(bad_inputs))
