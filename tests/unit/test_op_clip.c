/* clip, the one-file op of src/filter/ops/clip.c (docs/ADDING_A_FILTER.md): in the registry by
   itself (name, alias, options, defaults), its values against numpy.clip's rules written out by
   hand (max then min on float32: -0 against a bound of 0 gives +0, NaN stays NaN unless
   nan_value is given, a bound rounds to float32, a bound past the float range is none), integer
   and half-precision storage, 4-D shape and geometry kept, the checks, a CUDA request run on the
   CPU with its reason, and the batch engine's view of the row. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "test_support.h"
#include "scale/batch_ops.h"

/* ------------------------------------------------------------------ registry */

static void test_in_the_registry(void **state) {
  (void)state;
  const lumen_op_info *op = lumen_op_find("clip");
  assert_non_null(op);
  assert_ptr_equal(lumen_op_find("clamp"), op);
  assert_ptr_equal(lumen_op_find_kind(LUMEN_OP_KIND_FILTER, "clip"), op);
  assert_int_equal(op->kind, LUMEN_OP_KIND_FILTER);
  assert_int_equal(op->output, LUMEN_OP_OUTPUT_IMAGE);
  assert_null(op->entry);  /* by name only */
  assert_null(op->scalar);
  assert_int_equal(lumen_op_has_cuda(op), 0);
  assert_int_equal(op->n_options, 3);
  assert_string_equal(lumen_op_option_find(op, "min")->name, "lo");
  assert_string_equal(lumen_op_option_find(op, "a_max")->name, "hi");
  assert_string_equal(lumen_op_option_find(op, "nan")->name, "nan_value");
  char buf[64];
  for (int j = 0; j < 3; j++) {
    double d = 0;
    assert_int_equal(lumen_op_option_default(op, j, &d), LUMEN_OK);
    assert_true(isnan(d));
    assert_int_equal(lumen_op_option_default_text(op, j, buf, sizeof buf), LUMEN_OK);
    assert_string_equal(buf, "auto");
  }
  lumen_op_option_range_text(lumen_op_option_find(op, "lo"), buf, sizeof buf);
  assert_string_equal(buf, "auto (nan) or a finite value");
  /* it is listed after the table's rows, once */
  int seen = 0;
  for (int k = 0; k < lumen_op_count(); k++) seen += strcmp(lumen_op_at(k)->name, "clip") == 0;
  assert_int_equal(seen, 1);
}

/* ------------------------------------------------------------------ values */

static lumen_image *vector(lumen_ctx *ctx, const float *v, int64_t n) {
  lumen_image *im = lumen_test_image(ctx, 1, &n, LUMEN_DTYPE_FLOAT32);
  memcpy(lumen_image_data(im), v, (size_t)n * sizeof *v);
  return im;
}

/* out of clip with options text equals want[] bit for bit (NaN: any NaN) */
static void expect_values(lumen_ctx *ctx, const float *in, const float *want, int64_t n, const char *text) {
  lumen_image *im = vector(ctx, in, n), *out = NULL;
  double scalar = 0;
  lumen_status s = lumen_op_run(ctx, "clip", im, text, &out, &scalar);
  if (s != LUMEN_OK) fail_msg("clip '%s': %s", text, lumen_ctx_last_error(ctx));
  assert_true(isnan(scalar)); /* no number besides the image */
  assert_int_equal(lumen_image_dtype(out), LUMEN_DTYPE_FLOAT32);
  assert_int_equal(lumen_image_count(out), n);
  const float *o = lumen_image_const_data(out);
  for (int64_t i = 0; i < n; i++) {
    if (isnan(want[i]) ? isnan(o[i]) : memcmp(&o[i], &want[i], sizeof o[i]) == 0) continue;
    fail_msg("clip '%s': [%lld] %g -> %g (sign %d), expected %g (sign %d)", text, (long long)i, in[i], o[i],
             signbit(o[i]) != 0, want[i], signbit(want[i]) != 0);
  }
  LUMEN_TEST_FREE_IMAGES(im, out);
}

static const float X[] = {-5.0f, -0.0f, 0.0f, 0.25f, 1.0f, 3.5f, 7.0f, NAN, INFINITY, -INFINITY, 1e30f, -1e-45f};
#define NX ((int64_t)(sizeof X / sizeof X[0]))

static void test_values_as_numpy_clip(void **state) {
  lumen_ctx *ctx = *state;
  /* np.clip(x, 0, 3.5): -0 -> +0 (the bound), a negative subnormal -> 0 */
  static const float both[NX] = {0.0f, 0.0f, 0.0f, 0.25f, 1.0f, 3.5f, 3.5f, NAN, 3.5f, 0.0f, 3.5f, 0.0f};
  expect_values(ctx, X, both, NX, "lo=0 hi=3.5");
  expect_values(ctx, X, both, NX, "min=0 max=3.5"); /* the aliases */
  /* a lower bound only: np.clip(x, 0.25, None) */
  static const float low[NX] = {0.25f, 0.25f, 0.25f, 0.25f, 1.0f, 3.5f, 7.0f, NAN, INFINITY, 0.25f, 1e30f, 0.25f};
  expect_values(ctx, X, low, NX, "lo=0.25");
  /* an upper bound only: -0 against an upper bound of 0 gives +0 too (-0 < 0 is false, so the
     bound is written); a negative subnormal stays */
  static const float high[NX] = {-5.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, NAN, 0.0f, -INFINITY, 0.0f, -1e-45f};
  expect_values(ctx, X, high, NX, "hi=0");
  /* no bound: the input bit for bit (NaN kept) */
  expect_values(ctx, X, X, NX, "");
  /* nan_value replaces NaN only */
  static const float nanv[NX] = {0.0f, 0.0f, 0.0f, 0.25f, 1.0f, 3.5f, 3.5f, -1.0f, 3.5f, 0.0f, 3.5f, 0.0f};
  expect_values(ctx, X, nanv, NX, "lo=0 hi=3.5 nan_value=-1");
  expect_values(ctx, X, nanv, NX, "lo=0 hi=3.5 nan=-1");
  /* a bound rounds to float32 (as numpy's weak Python scalar): 0.1 -> 0.100000001490116 */
  static const float tenth_in[3] = {0.0f, 0.1f, 0.2f};
  static const float tenth[3] = {0.1f, 0.1f, 0.2f};
  expect_values(ctx, tenth_in, tenth, 3, "lo=0.1");
  /* a bound past the float range: none (float(1e39) is inf); 3.4028235e38 rounds to FLT_MAX */
  expect_values(ctx, X, X, NX, "lo=-1e300 hi=1e39");
  static const float big[NX] = {-5.0f, -0.0f, 0.0f, 0.25f, 1.0f, 3.5f, 7.0f, NAN, 3.40282347e38f, -INFINITY, 1e30f,
                                -1e-45f};
  expect_values(ctx, X, big, NX, "hi=3.4028235e38");
  /* lo == hi: every number becomes the bound */
  static const float same[NX] = {2, 2, 2, 2, 2, 2, 2, NAN, 2, 2, 2, 2};
  expect_values(ctx, X, same, NX, "lo=2 hi=2");
}

/* a large image (threaded loop) equals the formula voxel by voxel */
static void test_large_image_threaded(void **state) {
  lumen_ctx *ctx = *state;
  int64_t dims[3] = {97, 61, 23};
  lumen_image *im = lumen_test_image(ctx, 3, dims, LUMEN_DTYPE_FLOAT32), *out = NULL;
  float *p = lumen_image_data(im);
  uint64_t seed = 41;
  const int64_t n = lumen_image_count(im);
  for (int64_t i = 0; i < n; i++) p[i] = (float)(lumen_test_uniform(&seed) * 200.0 - 100.0);
  p[5] = NAN;
  assert_int_equal(lumen_op_run(ctx, "clip", im, "lo=-12.5 hi=40 nan_value=7", &out, NULL), LUMEN_OK);
  const float *o = lumen_image_const_data(out);
  for (int64_t i = 0; i < n; i++) {
    const float want = isnan(p[i]) ? 7.0f : p[i] < -12.5f ? -12.5f : p[i] > 40.0f ? 40.0f : p[i];
    if (o[i] != want) fail_msg("[%lld] %g -> %g, expected %g", (long long)i, p[i], o[i], want);
  }
  LUMEN_TEST_FREE_IMAGES(im, out);
}

/* ------------------------------------------------------------------ storage types and geometry */

static void test_uint8_input_and_half_output(void **state) {
  lumen_ctx *ctx = *state;
  int64_t n = 4;
  lumen_image *u8 = lumen_test_image(ctx, 1, &n, LUMEN_DTYPE_UINT8), *out = NULL;
  static const uint8_t bytes[4] = {0, 10, 200, 255};
  memcpy(lumen_image_data(u8), bytes, sizeof bytes);
  assert_int_equal(lumen_op_run(ctx, "clip", u8, "lo=10.5 hi=199.5", &out, NULL), LUMEN_OK);
  assert_int_equal(lumen_image_dtype(out), LUMEN_DTYPE_FLOAT32); /* a float result, as numpy's float bounds */
  const float *o = lumen_image_const_data(out);
  assert_true(o[0] == 10.5f && o[1] == 10.5f && o[2] == 199.5f && o[3] == 199.5f);
  lumen_image_free(out);
  /* half storage: the float32 result rounded to binary16 (0.1 -> 0.0999755859375) */
  static const float v[4] = {0.0f, 0.5f, 2.0f, 70000.0f};
  lumen_image *f = vector(ctx, v, 4), *half = NULL, *back = NULL;
  assert_int_equal(lumen_op_run(ctx, "clip", f, "lo=0.1 hi=1000 precision=half", &half, NULL), LUMEN_OK);
  assert_int_equal(lumen_image_dtype(half), LUMEN_DTYPE_FLOAT16);
  assert_int_equal(lumen_image_convert(ctx, half, LUMEN_DTYPE_FLOAT32, &back), LUMEN_OK);
  const float *b = lumen_image_const_data(back);
  assert_true(b[0] == 0.0999755859375f && b[1] == 0.5f && b[2] == 2.0f && b[3] == 1000.0f);
  LUMEN_TEST_FREE_IMAGES(u8, f, half, back);
}

static void test_shape_and_geometry_kept(void **state) {
  lumen_ctx *ctx = *state;
  int64_t dims[4] = {5, 4, 3, 2};
  lumen_image *im = lumen_test_image(ctx, 4, dims, LUMEN_DTYPE_FLOAT32), *out = NULL;
  float *p = lumen_image_data(im);
  for (int64_t i = 0; i < 120; i++) p[i] = (float)i - 60.0f;
  const double sp[4] = {0.7, 0.8, 2.5, 3.0};
  assert_int_equal(lumen_image_set_spacing(ctx, im, sp, 4), LUMEN_OK);
  assert_int_equal(lumen_op_run(ctx, "clamp", im, "lo=-10 hi=10", &out, NULL), LUMEN_OK);
  assert_int_equal(lumen_image_ndim(out), 4);
  for (int a = 0; a < 4; a++) assert_int_equal(lumen_image_dim(out, a), dims[a]);
  double got[4];
  assert_int_equal(lumen_image_get_spacing(out, got, 4), LUMEN_OK);
  for (int a = 0; a < 3; a++) assert_true(got[a] == sp[a]);
  const float *o = lumen_image_const_data(out);
  for (int64_t i = 0; i < 120; i++) assert_true(o[i] == fminf(fmaxf((float)i - 60.0f, -10.0f), 10.0f));
  LUMEN_TEST_FREE_IMAGES(im, out);
}

/* ------------------------------------------------------------------ checks, devices, batch */

static void expect_refused(lumen_ctx *ctx, const lumen_image *in, const char *text, const char *message) {
  lumen_image *out = (lumen_image *)&out; /* cleared on failure */
  assert_int_equal(lumen_op_run(ctx, "clip", in, text, &out, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_null(out);
  if (!strstr(lumen_ctx_last_error(ctx), message))
    fail_msg("clip '%s': '%s', expected it to say '%s'", text, lumen_ctx_last_error(ctx), message);
}

static void test_checks(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *im = vector(ctx, X, NX), *out = NULL;
  expect_refused(ctx, im, "lo=5 hi=2", "clip: lo is 5, expected <= hi (2)");
  expect_refused(ctx, im, "lo=inf", "clip: lo is inf");
  expect_refused(ctx, im, "hi=x", "hi is 'x', expected a number");
  expect_refused(ctx, im, "sigma=1", "clip: unknown option 'sigma'");
  /* the C caller's struct, past the text ranges: the op's own check */
  const lumen_op_info *op = lumen_op_find("clip");
  unsigned char o[256];
  assert_int_equal(lumen_op_opts_init(op, o, sizeof o), LUMEN_OK);
  const double inf = INFINITY;
  memcpy(o + op->options[1].offset, &inf, sizeof inf);
  assert_int_equal(lumen_op_run_opts(ctx, op, im, o, &out, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_null(out);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "clip: hi is inf"));
  assert_int_equal(lumen_op_run_opts(ctx, op, NULL, NULL, &out, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "clip: argument 'in' is NULL"));
  /* defaults (NULL options): the input unchanged */
  assert_int_equal(lumen_op_run_opts(ctx, op, im, NULL, &out, NULL), LUMEN_OK);
  lumen_test_assert_images_equal(out, im);
  LUMEN_TEST_FREE_IMAGES(im, out);
}

static void test_cuda_request_runs_on_the_cpu(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *im = vector(ctx, X, NX), *out = NULL, *cpu = NULL;
  lumen_op_args *a = NULL;
  assert_int_equal(lumen_op_args_create(ctx, "clip", &a), LUMEN_OK);
  assert_int_equal(lumen_op_args_parse(ctx, a, "lo=0 hi=3.5 device=cuda:0"), LUMEN_OK);
  lumen_filter_report rep;
  ((lumen_filter_exec *)lumen_op_args_opts(a))->report = &rep;
  assert_int_equal(lumen_op_args_run(ctx, a, im, &out, NULL), LUMEN_OK);
  assert_int_equal(rep.fell_back, 1);
  assert_int_equal(rep.used.kind, LUMEN_DEVICE_CPU);
  assert_string_equal(rep.op, "clip");
  assert_non_null(strstr(rep.reason, "no CUDA kernel for clip yet"));
  assert_int_equal(lumen_op_run(ctx, "clip", im, "lo=0 hi=3.5 device=cpu", &cpu, NULL), LUMEN_OK);
  lumen_test_assert_images_equal(out, cpu);
  lumen_op_args_free(a);
  LUMEN_TEST_FREE_IMAGES(im, out, cpu);
}

/* the batch engine's view (lumen_batch_callbacks.op = "clip", Python's process_images) */
static void test_batch_view(void **state) {
  lumen_ctx *ctx = *state;
  const lumen_batch_named_op *alias = lumen_batch_named_op_find("clamp");
  assert_non_null(alias);
  assert_string_equal(alias->name, "clip");
  assert_string_equal(alias->cmd, "filter");
  assert_string_equal(lumen_batch_named_op_charge_name(alias, NULL), "clip");
  unsigned char o[256];
  const double lo_hi[2] = {0, 3.5};
  const lumen_batch_named_op *b = lumen_test_batch_op("clip", o, sizeof o, lo_hi, 2);
  assert_ptr_equal(b, alias);
  lumen_image *im = vector(ctx, X, NX), *out = NULL, *byname = NULL;
  double v = NAN;
  assert_int_equal(b->run(ctx, im, o, &out, &v), LUMEN_OK);
  assert_int_equal(lumen_op_run(ctx, "clip", im, "lo=0 hi=3.5", &byname, NULL), LUMEN_OK);
  lumen_test_assert_images_equal(out, byname);
  LUMEN_TEST_FREE_IMAGES(im, out, byname);
}

LUMEN_TEST_MAIN(cmocka_unit_test(test_in_the_registry),
                LUMEN_TEST_WITH_CTX(test_values_as_numpy_clip),
                LUMEN_TEST_WITH_CTX(test_large_image_threaded),
                LUMEN_TEST_WITH_CTX(test_uint8_input_and_half_output),
                LUMEN_TEST_WITH_CTX(test_shape_and_geometry_kept),
                LUMEN_TEST_WITH_CTX(test_checks),
                LUMEN_TEST_WITH_CTX(test_cuda_request_runs_on_the_cpu),
                LUMEN_TEST_WITH_CTX(test_batch_view))
