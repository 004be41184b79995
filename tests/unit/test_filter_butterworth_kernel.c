/* lumen_filter_butterworth_kernel (src/filter/cpu_butterworth.c) against the transfer function
 * H = 1 / (1 + ((D^2 - d0^2) / (8 w D))^(2n)) evaluated in float64 (long double powers): even
 * sizes (a centre voxel at D = 0, where the original's 1e-6 cutoff gives H = 0, or 1 for d0 = 0),
 * odd sizes, widths off the vector width (the tails), an image above 2^16 voxels (threads),
 * orders 1 .. 12, and bad arguments. */
#include <math.h>
#include <stdlib.h>
#include "test_support.h"

/* float64 reference; the float32 steps of the kernel differ by a few float ulps in r, which
   moves H by at most ~2n ulps of r where H is near 1/2 */
static double ref_h(int64_t h, int64_t w, int64_t v, int64_t u, double d0, double width, int n) {
  const double du = (double)u - (double)w / 2.0, dv = (double)v - (double)h / 2.0;
  const double d = sqrt(du * du + dv * dv);
  double cut = 8.0 * width * d;
  if (cut == 0.0) cut = 1e-6;
  const long double r = ((long double)d * d - d0 * d0) / cut;
  return (double)(1.0L / (1.0L + powl(r * r, n)));
}

static void check_kernel(lumen_ctx *ctx, int64_t h, int64_t w, double d0, double width, int n) {
  int64_t dims[2] = {h, w};
  lumen_image *out = lumen_test_image(ctx, 2, dims, LUMEN_DTYPE_FLOAT32);
  assert_int_equal(lumen_filter_butterworth_kernel(ctx, h, w, d0, width, n, out), LUMEN_OK);
  const float *y = lumen_image_const_data(out);
  double worst = 0;
  for (int64_t v = 0; v < h; v++)
    for (int64_t u = 0; u < w; u++) {
      const double ref = ref_h(h, w, v, u, d0, width, n), got = y[v * w + u];
      assert_true(got >= 0.0 && got <= 1.0);
      const double e = fabs(got - ref);
      worst = e > worst ? e : worst;
    }
  assert_true(worst <= 4e-6 * n);
  lumen_image_free(out);
}

static void test_values(void **state) {
  lumen_ctx *ctx = *state;
  check_kernel(ctx, 1, 1, 21, 32, 3);
  check_kernel(ctx, 3, 5, 1.5, 0.3, 2);
  check_kernel(ctx, 64, 64, 21, 32, 3); /* even: a centre voxel */
  check_kernel(ctx, 101, 77, 21, 32, 3);
  check_kernel(ctx, 40, 37, 10, 8, 1);
  check_kernel(ctx, 40, 37, 10, 8, 7);
  check_kernel(ctx, 33, 29, 5, 4, 12);  /* beyond the constant-order cases */
  check_kernel(ctx, 300, 301, 21, 32, 3); /* > 2^16 voxels: threaded */
}

/* the centre voxel (D = 0): the original's cutoff 1e-6 gives r = -d0^2 / 1e-6, H = 0, and
   r = 0, H = 1 for d0 = 0; the kernel is symmetric about the centre */
static void test_centre_and_symmetry(void **state) {
  lumen_ctx *ctx = *state;
  int64_t dims[2] = {64, 48};
  lumen_image *out = lumen_test_image(ctx, 2, dims, LUMEN_DTYPE_FLOAT32);
  const float *y = lumen_image_const_data(out);
  assert_int_equal(lumen_filter_butterworth_kernel(ctx, 64, 48, 21, 32, 3, out), LUMEN_OK);
  assert_true(y[32 * 48 + 24] == 0.0f);
  for (int64_t v = 1; v < 64; v++)
    for (int64_t u = 1; u < 48; u++) assert_true(y[v * 48 + u] == y[(64 - v) * 48 + (48 - u)]);
  assert_int_equal(lumen_filter_butterworth_kernel(ctx, 64, 48, 0, 32, 3, out), LUMEN_OK);
  assert_true(y[32 * 48 + 24] == 1.0f);
  /* D = d0 exactly (21 columns right of the centre): the band's middle, H = 1 */
  assert_int_equal(lumen_filter_butterworth_kernel(ctx, 64, 48, 21, 32, 3, out), LUMEN_OK);
  assert_true(y[32 * 48 + 45] == 1.0f);
  lumen_image_free(out);
}

static void test_bad_arguments(void **state) {
  lumen_ctx *ctx = *state;
  int64_t dims[2] = {8, 8};
  lumen_image *out = lumen_test_image(ctx, 2, dims, LUMEN_DTYPE_FLOAT32);
  assert_int_equal(lumen_filter_butterworth_kernel(ctx, 8, 8, 21, 32, 0, out), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_butterworth_kernel(ctx, 8, 8, 21, 32, 65, out), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_butterworth_kernel(ctx, 8, 9, 21, 32, 3, out), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_butterworth_kernel(ctx, 0, 8, 21, 32, 3, out), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_butterworth_kernel(ctx, 8, 8, NAN, 32, 3, out), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_butterworth_kernel(ctx, 8, 8, 21, INFINITY, 3, out), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_butterworth_kernel(ctx, 8, 8, 21, 32, 3, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_butterworth_kernel(NULL, 8, 8, 21, 32, 3, out), LUMEN_ERR_INVALID_ARGUMENT);
  lumen_image *u8 = lumen_test_image(ctx, 2, dims, LUMEN_DTYPE_UINT8);
  assert_int_equal(lumen_filter_butterworth_kernel(ctx, 8, 8, 21, 32, 3, u8), LUMEN_ERR_INVALID_ARGUMENT);
  LUMEN_TEST_FREE_IMAGES(out, u8);
}

LUMEN_TEST_MAIN(LUMEN_TEST_WITH_CTX(test_values), LUMEN_TEST_WITH_CTX(test_centre_and_symmetry),
                LUMEN_TEST_WITH_CTX(test_bad_arguments))
