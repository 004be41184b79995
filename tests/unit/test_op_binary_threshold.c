/* binary_threshold, a one-file op with a mask output (src/filter/ops/binary_threshold.c): the
   registry row, the mask lower <= x <= upper written out by hand (bounds inclusive and exact, NaN
   outside, infinities by the bounds), uint8 whatever the storage precision, the checks, and the
   batch engine's view. */
#include <math.h>
#include <string.h>
#include "test_support.h"
#include "scale/batch_ops.h"

static const float X[] = {-INFINITY, -3.0f, -0.0f, 0.0f, 0.1f, 1.0f, 2.5f, 2.5000002f, NAN, INFINITY};
#define NX ((int64_t)(sizeof X / sizeof X[0]))

static void expect_mask(lumen_ctx *ctx, const char *text, const uint8_t *want) {
  int64_t n = NX;
  lumen_image *im = lumen_test_image(ctx, 1, &n, LUMEN_DTYPE_FLOAT32), *out = NULL;
  memcpy(lumen_image_data(im), X, sizeof X);
  lumen_status s = lumen_op_run(ctx, "binary_threshold", im, text, &out, NULL);
  if (s != LUMEN_OK) fail_msg("binary_threshold '%s': %s", text, lumen_ctx_last_error(ctx));
  assert_int_equal(lumen_image_dtype(out), LUMEN_DTYPE_UINT8);
  const uint8_t *o = lumen_image_const_data(out);
  for (int64_t i = 0; i < n; i++)
    if (o[i] != want[i]) fail_msg("binary_threshold '%s': [%lld] %g -> %d, expected %d", text, (long long)i, X[i], o[i], want[i]);
  LUMEN_TEST_FREE_IMAGES(im, out);
}

static void test_registry_row(void **state) {
  (void)state;
  const lumen_op_info *op = lumen_op_find("in_range");
  assert_non_null(op);
  assert_string_equal(op->name, "binary_threshold");
  assert_int_equal(op->kind, LUMEN_OP_KIND_FILTER);
  assert_int_equal(op->output, LUMEN_OP_OUTPUT_MASK);
  assert_null(op->entry);
  assert_int_equal(op->n_options, 2);
  assert_string_equal(lumen_op_option_find(op, "lo")->name, "lower");
  assert_string_equal(lumen_op_option_find(op, "max")->name, "upper");
}

static void test_mask_values(void **state) {
  lumen_ctx *ctx = *state;
  /* [0, 2.5]: -0 == 0 is inside, 2.5000002 just above is not, NaN never */
  static const uint8_t closed[NX] = {0, 0, 1, 1, 1, 1, 1, 0, 0, 0};
  expect_mask(ctx, "lower=0 upper=2.5", closed);
  expect_mask(ctx, "lo=0 hi=2.5", closed);
  /* the float 0.1f (0.100000001...) is >= the double 0.1: the comparison is exact */
  static const uint8_t tenth[NX] = {0, 0, 0, 0, 1, 1, 1, 1, 0, 1};
  expect_mask(ctx, "lower=0.1", tenth);
  static const uint8_t below[NX] = {1, 1, 1, 1, 0, 0, 0, 0, 0, 0};
  expect_mask(ctx, "upper=0", below);
  /* no bound: every number inside, NaN outside */
  static const uint8_t numbers[NX] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 1};
  expect_mask(ctx, "", numbers);
  expect_mask(ctx, "lower=0 upper=2.5 precision=half", closed); /* a mask whatever the precision */
}

static void test_checks_and_batch(void **state) {
  lumen_ctx *ctx = *state;
  int64_t dims[2] = {6, 5};
  lumen_image *im = lumen_test_image(ctx, 2, dims, LUMEN_DTYPE_FLOAT32), *out = NULL, *byname = NULL;
  float *p = lumen_image_data(im);
  for (int i = 0; i < 30; i++) p[i] = (float)i;
  assert_int_equal(lumen_op_run(ctx, "binary_threshold", im, "lower=4 upper=3", &out, NULL),
                   LUMEN_ERR_INVALID_ARGUMENT);
  assert_null(out);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "binary_threshold: lower is 4, expected <= upper (3)"));
  unsigned char o[256];
  const double lower_upper[2] = {7.5, 20};
  const lumen_batch_named_op *b = lumen_test_batch_op("binary_threshold", o, sizeof o, lower_upper, 2);
  double v = NAN;
  assert_int_equal(b->run(ctx, im, o, &out, &v), LUMEN_OK);
  assert_int_equal(lumen_op_run(ctx, "binary_threshold", im, "lower=7.5 upper=20", &byname, NULL), LUMEN_OK);
  lumen_test_assert_images_equal(out, byname);
  const uint8_t *m = lumen_image_const_data(out);
  int inside = 0;
  for (int i = 0; i < 30; i++) {
    assert_int_equal(m[i], i >= 8 && i <= 20);
    inside += m[i];
  }
  assert_int_equal(inside, 13);
  LUMEN_TEST_FREE_IMAGES(im, out, byname);
}

LUMEN_TEST_MAIN(cmocka_unit_test(test_registry_row),
                LUMEN_TEST_WITH_CTX(test_mask_values),
                LUMEN_TEST_WITH_CTX(test_checks_and_batch))
