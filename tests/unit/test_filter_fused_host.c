/* The fused host primitives of include/lumen/filter.h (cpu_scale_clamp.c, cpu_otsu_linspace.c,
 * cpu_fcm_values.c, cpu_values.c) against independent references: a plain float64 loop for
 * the scale-clamp map and the bit-depth normalisation (its depth from a plain max loop), a plain
 * loop for the finite range, lumen_filter_otsu (its own histogram)
 * for the Otsu bin, lumen_segment_fcm (every voxel) for the fuzzy c-means on value counts; sizes
 * below and above 2^16 voxels (the threaded paths), NaN / Inf / -0 voxels, and bad arguments. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "test_support.h"

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static lumen_image *f32_image(lumen_ctx *ctx, int64_t n) {
  int64_t dims[1] = {n};
  return lumen_test_image(ctx, 1, dims, LUMEN_DTYPE_FLOAT32);
}

/* a breast-like integer image: a zero background, a body of 200..2700, a few bright spots */
static void fill_mammo(float *x, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; i++)
    x[i] = (i % 97) < 30 ? 0.0f : (float)(200 + (lcg(&seed) % 1500) + ((i % 1013) == 0 ? 1000 : 0));
}

/* A float32 image of n mammogram-like values (fill_mammo with seed). */
static lumen_image *mammo_image(lumen_ctx *ctx, int64_t n, uint64_t seed) {
  lumen_image *im = f32_image(ctx, n);
  fill_mammo(lumen_image_data(im), n, seed);
  return im;
}

static void test_scale_clamp(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t sizes[] = {1, 7, 100003};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    const int64_t n = sizes[k];
    lumen_image *in = f32_image(ctx, n), *out = f32_image(ctx, n);
    float *x = lumen_image_data(in);
    uint64_t s = 7 + (uint64_t)k;
    for (int64_t i = 0; i < n; i++) x[i] = (float)((double)lcg(&s) / 2147483648.0 * 5000.0 - 300.0);
    if (n > 4) x[1] = NAN, x[2] = INFINITY, x[3] = -INFINITY, x[4] = -0.0f;
    const double cases[][3] = {{500.0, 1 / 2000.0, 255.0}, {0.0, 1 / 4095.0, 255.0}, {-12.5, 1 / 77.7, 1.0}};
    for (int c = 0; c < 3; c++) {
      assert_int_equal(lumen_filter_scale_clamp(ctx, in, cases[c][0], cases[c][1], cases[c][2], out), LUMEN_OK);
      const float *y = lumen_image_const_data(out);
      for (int64_t i = 0; i < n; i++) {
        double v = ((double)x[i] - cases[c][0]) * cases[c][1];
        v = v < 0 ? 0 : v > 1 ? 1 : v;
        const float ref = (float)(v * cases[c][2]);
        if (isnan(ref))
          assert_true(isnan(y[i]));
        else
          assert_true(y[i] == ref);
      }
    }
    /* in place */
    float *copy = malloc((size_t)n * sizeof *copy);
    assert_non_null(copy);
    assert_int_equal(lumen_filter_scale_clamp(ctx, in, 0.0, 1 / 4095.0, 255.0, out), LUMEN_OK);
    memcpy(copy, lumen_image_const_data(out), (size_t)n * sizeof *copy);
    assert_int_equal(lumen_filter_scale_clamp(ctx, in, 0.0, 1 / 4095.0, 255.0, in), LUMEN_OK);
    assert_memory_equal(copy, lumen_image_const_data(in), (size_t)n * sizeof *copy);
    free(copy);
    LUMEN_TEST_FREE_IMAGES(in, out);
  }
  lumen_image *a = f32_image(ctx, 10), *b = f32_image(ctx, 11);
  memset(lumen_image_data(a), 0, 10 * sizeof(float));
  assert_int_equal(lumen_filter_scale_clamp(ctx, a, 0.0, INFINITY, 1.0, a), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_scale_clamp(ctx, a, 0.0, 1.0, 1.0, b), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_scale_clamp(ctx, a, 0.0, 1.0, 1.0, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_scale_clamp(ctx, NULL, 0.0, 1.0, 1.0, a), LUMEN_ERR_INVALID_ARGUMENT);
  int64_t d1[1] = {10};
  lumen_image *u8 = lumen_test_image(ctx, 1, d1, LUMEN_DTYPE_UINT8);
  assert_int_equal(lumen_filter_scale_clamp(ctx, u8, 0.0, 1.0, 1.0, a), LUMEN_ERR_INVALID_ARGUMENT);
  LUMEN_TEST_FREE_IMAGES(u8, a, b);
}

/* lumen_filter_normalize_bits_detect against the bit depth of a plain max loop (numpy's max:
   NaN wins) and the float64 map, into a separate image and in place */
static void check_bits_detect(lumen_ctx *ctx, lumen_image *in, double out_max, int want_bits) {
  const int64_t n = lumen_image_count(in);
  const float *x = lumen_image_const_data(in);
  float peak = -INFINITY;
  int nan = 0;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(x[i])) nan = 1;
    else if (x[i] > peak) peak = x[i];
  }
  const int bits = nan || peak > 4095.0f ? 16 : peak > 255.0f ? 12 : 8;
  assert_int_equal(bits, want_bits); /* the case is the one meant */
  int64_t dims[1] = {n};
  lumen_image *out = lumen_test_image(ctx, 1, dims, LUMEN_DTYPE_FLOAT32);
  float *copy = malloc((size_t)n * sizeof *copy);
  assert_non_null(copy);
  memcpy(copy, x, (size_t)n * sizeof *copy);
  int got = 0;
  assert_int_equal(lumen_filter_normalize_bits_detect(ctx, in, out_max, out, &got), LUMEN_OK);
  assert_int_equal(got, bits);
  const double scale = 1.0 / (ldexp(1.0, bits) - 1.0);
  const float *y = lumen_image_const_data(out);
  for (int64_t i = 0; i < n; i++) {
    double v = (double)copy[i] * scale;
    v = v < 0 ? 0 : v > 1 ? 1 : v;
    const float ref = (float)(v * out_max);
    if (isnan(ref))
      assert_true(isnan(y[i]));
    else
      assert_true(y[i] == ref);
  }
  got = 0;
  assert_int_equal(lumen_filter_normalize_bits_detect(ctx, in, out_max, in, &got), LUMEN_OK); /* in place */
  assert_int_equal(got, bits);
  assert_memory_equal(lumen_image_const_data(in), y, (size_t)n * sizeof *y);
  memcpy(lumen_image_data(in), copy, (size_t)n * sizeof *copy);
  free(copy);
  lumen_image_free(out);
}

static void test_normalize_bits_detect(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t sizes[] = {1, 9, 100003};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    const int64_t n = sizes[k];
    lumen_image *in = mammo_image(ctx, n, 21 + k);
    float *x = lumen_image_data(in);
    for (int64_t i = 0; i < n; i++) x[i] = fminf(x[i], 4000.0f);
    x[0] = 1200.0f;
    check_bits_detect(ctx, in, 255.0, 12);
    for (int64_t i = 0; i < n; i++) x[i] = fminf(x[i], 250.0f) - 3.5f; /* 8 bits, negatives clamp to 0 */
    check_bits_detect(ctx, in, 1.0, 8);
    if (n < 1000) {
      lumen_image_free(in);
      continue;
    }
    /* the sample (every n / 1024-th voxel from 0) sees <= 255, one voxel between says 12 bits:
       the guess is wrong and the map is redone */
    x[n / 2 + 1] = 3000.0f;
    check_bits_detect(ctx, in, 255.0, 12);
    x[n / 2 + 1] = 70000.0f; /* 16 bits; values above 2^16 - 1 clamp to out_max */
    check_bits_detect(ctx, in, 255.0, 16);
    x[n / 2 + 1] = INFINITY; /* +Inf: 16 */
    check_bits_detect(ctx, in, 255.0, 16);
    x[n / 2 + 1] = -INFINITY; /* -Inf: the finite peak, 8 */
    check_bits_detect(ctx, in, 255.0, 8);
    x[n / 2 + 1] = NAN; /* NaN: 16, as numpy's max; the voxel stays NaN */
    check_bits_detect(ctx, in, 255.0, 16);
    x[0] = NAN; /* a NaN the sample sees */
    check_bits_detect(ctx, in, 255.0, 16);
    lumen_image_free(in);
  }
  lumen_image *a = f32_image(ctx, 10), *b = f32_image(ctx, 11);
  memset(lumen_image_data(a), 0, 10 * sizeof(float));
  assert_int_equal(lumen_filter_normalize_bits_detect(ctx, a, NAN, a, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_normalize_bits_detect(ctx, a, 255.0, b, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_normalize_bits_detect(ctx, a, 255.0, NULL, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_normalize_bits_detect(ctx, NULL, 255.0, a, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_normalize_bits_detect(ctx, a, 255.0, a, NULL), LUMEN_OK); /* bits may be NULL */
  LUMEN_TEST_FREE_IMAGES(a, b);
}

static void check_range(lumen_ctx *ctx, const lumen_image *in) {
  const float *x = lumen_image_const_data(in);
  const int64_t n = lumen_image_count(in);
  float lo = INFINITY, hi = -INFINITY;
  int64_t fin = 0;
  int integral = 1;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(x[i])) continue;
    fin++;
    lo = fminf(lo, x[i]);
    hi = fmaxf(hi, x[i]);
    if (!(fabsf(x[i]) <= 16777216.0f && x[i] == truncf(x[i]))) integral = 0;
  }
  if (!fin) lo = hi = 0;
  double mn, mx;
  int64_t f;
  int in_;
  assert_int_equal(lumen_filter_finite_range(ctx, in, &mn, &mx, &f, &in_), LUMEN_OK);
  assert_true(mn == lo && mx == hi);
  assert_int_equal(f, fin);
  assert_int_equal(in_, integral);
}

static void test_finite_range(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t n = 100003;
  lumen_image *in = mammo_image(ctx, n, 3);
  float *x = lumen_image_data(in);
  check_range(ctx, in);     /* integers */
  x[5000] = 17.5f;
  check_range(ctx, in);     /* one that is not */
  x[5000] = 33554432.0f;    /* an integer above 2^24 */
  check_range(ctx, in);
  x[5000] = NAN;
  x[77] = -INFINITY;
  check_range(ctx, in);     /* non-finite voxels are skipped */
  for (int64_t i = 0; i < n; i++) x[i] = NAN;
  check_range(ctx, in);     /* none finite: 0, 0 */
  double a, b;
  assert_int_equal(lumen_filter_finite_range(ctx, in, NULL, &b, NULL, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_finite_range(ctx, NULL, &a, &b, NULL, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  lumen_image_free(in);
}

/* lumen_filter_otsu's bin (its own histogram) mapped to the linspace centre, and the mask */
static void check_otsu(lumen_ctx *ctx, lumen_image *in) {
  const float *x = lumen_image_const_data(in);
  const int64_t n = lumen_image_count(in);
  float lo = x[0], hi = x[0];
  for (int64_t i = 0; i < n; i++) lo = fminf(lo, x[i]), hi = fmaxf(hi, x[i]);
  const int nb = hi <= 255.0f ? 256 : 4096;
  lumen_otsu_opts o;
  lumen_otsu_opts_init(&o);
  o.bins = nb;
  double t_lumen, t;
  assert_int_equal(lumen_filter_otsu(ctx, in, &o, &t_lumen, NULL), LUMEN_OK);
  int64_t dims[1] = {n};
  lumen_image *mask = lumen_test_image(ctx, 1, dims, LUMEN_DTYPE_UINT8);
  assert_int_equal(lumen_filter_otsu_linspace(ctx, in, mask, &t), LUMEN_OK);
  const double step = ((double)hi - lo) / nb;
  const int i = (int)nearbyint((t_lumen - lo) / step - 0.5);
  const float ref = i == nb - 1 ? hi : (float)((double)i * (((double)hi - lo) / (nb - 1)) + lo);
  assert_true((float)t == ref);
  const uint8_t *m = lumen_image_const_data(mask);
  for (int64_t k = 0; k < n; k++) assert_int_equal(m[k], x[k] > ref);
  lumen_image_free(mask);
}

static void test_otsu_linspace(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t sizes[] = {1000, 100003};
  for (size_t k = 0; k < 2; k++) {
    const int64_t n = sizes[k];
    lumen_image *in = mammo_image(ctx, n, 11 + k);
    float *x = lumen_image_data(in);
    check_otsu(ctx, in); /* integers: counts per value */
    for (int64_t i = 0; i < n; i++) x[i] = x[i] * 0.37f + 0.1f;
    check_otsu(ctx, in); /* fractions: per-voxel bins */
    for (int64_t i = 0; i < n; i++) x[i] = (float)((int64_t)x[i] % 250);
    check_otsu(ctx, in); /* max <= 255: 256 bins */
    for (int64_t i = 0; i < n; i++) x[i] = 42.0f;
    double t;
    assert_int_equal(lumen_filter_otsu_linspace(ctx, in, NULL, &t), LUMEN_OK);
    assert_true(t == 42.0); /* a constant image gives its value */
    x[3] = NAN;
    x[4] = 100.0f;
    assert_int_equal(lumen_filter_otsu_linspace(ctx, in, NULL, &t), LUMEN_OK); /* NaN skipped */
    assert_true(t >= 42.0 && t < 100.0);
    assert_int_equal(lumen_filter_otsu_linspace(ctx, in, NULL, NULL), LUMEN_ERR_INVALID_ARGUMENT);
    lumen_image_free(in);
  }
}

static void test_fcm_values(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t n = 150001;
  lumen_image *in = mammo_image(ctx, n, 5);
  float *x = lumen_image_data(in);
  int64_t *counts = calloc(65536, sizeof *counts);
  assert_non_null(counts);
  for (int c = 2; c <= 3; c++) {
    lumen_fcm_opts o;
    lumen_fcm_opts_init(&o);
    o.c = c;
    o.output = LUMEN_CLUSTER_LABELS;
    lumen_cluster_result ref;
    lumen_image *labels = NULL;
    assert_int_equal(lumen_segment_fcm(ctx, in, &o, &labels, &ref), LUMEN_OK);
    lumen_fcm_values_result r;
    assert_int_equal(lumen_filter_fcm_values(ctx, in, c, o.m, o.max_iterations, o.tolerance, o.seed, counts, 65536, &r),
                     LUMEN_OK);
    assert_int_equal(r.applicable, 1);
    assert_int_equal(r.k, c);
    assert_int_equal(r.iterations, ref.iterations);
    assert_int_equal(r.converged, ref.converged);
    for (int j = 0; j < c; j++) lumen_test_assert_close(r.centers[j], ref.centers[j], 0, 1e-9, "centre");
    /* counts and the nearest-centre labels */
    int64_t total = 0;
    for (int64_t v = 0; v <= (int64_t)(r.max - r.min); v++) total += counts[v];
    assert_int_equal(total, n);
    const uint8_t *lab = lumen_image_const_data(labels);
    for (int64_t i = 0; i < n; i++) {
      int best = 0;
      for (int j = 1; j < c; j++)
        if (fabs(x[i] - r.centers[j]) < fabs(x[i] - r.centers[best])) best = j;
      assert_int_equal(best, lab[i]);
    }
    lumen_image_free(labels);
  }
  lumen_fcm_values_result r;
  x[10] = 0.5f; /* not integer-valued: not applicable */
  assert_int_equal(lumen_filter_fcm_values(ctx, in, 2, 2.0, 100, 1e-3, 42, counts, 65536, &r), LUMEN_OK);
  assert_int_equal(r.applicable, 0);
  x[10] = NAN; /* not finite: not applicable (lumen_segment_fcm reports the voxel) */
  assert_int_equal(lumen_filter_fcm_values(ctx, in, 2, 2.0, 100, 1e-3, 42, counts, 65536, &r), LUMEN_OK);
  assert_int_equal(r.applicable, 0);
  x[10] = 7.0f; /* more values than counts holds */
  assert_int_equal(lumen_filter_fcm_values(ctx, in, 2, 2.0, 100, 1e-3, 42, counts, 100, &r), LUMEN_OK);
  assert_int_equal(r.applicable, 0);
  assert_int_equal(lumen_filter_fcm_values(ctx, in, 1, 2.0, 100, 1e-3, 42, counts, 65536, &r),
                   LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_fcm_values(ctx, in, 2, 1.0, 100, 1e-3, 42, counts, 65536, &r),
                   LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_filter_fcm_values(ctx, in, 2, 2.0, 100, 1e-3, 42, NULL, 65536, &r),
                   LUMEN_ERR_INVALID_ARGUMENT);
  free(counts);
  lumen_image_free(in);
}

LUMEN_TEST_MAIN(LUMEN_TEST_WITH_CTX(test_scale_clamp), LUMEN_TEST_WITH_CTX(test_normalize_bits_detect),
                LUMEN_TEST_WITH_CTX(test_finite_range),
                LUMEN_TEST_WITH_CTX(test_otsu_linspace), LUMEN_TEST_WITH_CTX(test_fcm_values))
