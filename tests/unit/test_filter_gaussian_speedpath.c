/* The blocked CPU Gaussian (fused x/y ring, x tiles, 3-D z ring of slabs, paired column kernel,
 * bands split over threads) against a naive pass-by-pass reference written here: x over the whole
 * image, then y, then z, each output acc = w[r] c + sum_k w[k] (a_k + b_k) in float32 in that
 * order. Same arithmetic, so the results must be bit-identical, for every boundary mode, odd
 * sizes (scalar and overlapping vector tails), rows and 3-D slabs wider than one x tile, radii
 * larger than the image, anisotropic sigma, 1..3 threads, with and without SIMD, and DoG (the
 * subtracting path). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "filter/filter_internal.h"
#include "test_support.h"

static void kernel_of(double sigma, float **w, int *r) {
  *r = (int)(4.0 * sigma + 0.5);
  *w = malloc((size_t)(2 * *r + 1) * sizeof **w);
  assert_non_null(*w);
  lf_gaussian_kernel(sigma, 0, *r, *w);
}

/* One 1-D pass along axis (stride st, length n) of every line of the n0 x n1 x n2 volume. */
static void ref_pass(const float *in, float *out, const int64_t *n, int axis, const float *w, int r,
                     lumen_boundary mode, float cval) {
  const int64_t st = axis == 0 ? 1 : axis == 1 ? n[0] : n[0] * n[1], len = n[axis];
  const int64_t total = n[0] * n[1] * n[2];
  for (int64_t i = 0; i < total; i++) {
    const int64_t c = (i / st) % len, base = i - c * st;
    float acc = w[r] * in[i];
    for (int k = 0; k < r; k++) {
      const int64_t ja = lf_ext(c + k - r, len, mode), jb = lf_ext(c + r - k, len, mode);
      const float a = ja < 0 ? cval : in[base + ja * st], b = jb < 0 ? cval : in[base + jb * st];
      acc += w[k] * (a + b);
    }
    out[i] = acc;
  }
}

/* Reference separable Gaussian of the first S axes into out (tmp: a work buffer of the same size). */
static void ref_gauss(const float *in, float *out, float *tmp, const int64_t *n, int S, const double *sigma,
                      lumen_boundary mode, float cval) {
  const size_t bytes = (size_t)(n[0] * n[1] * n[2]) * sizeof(float);
  memcpy(out, in, bytes);
  for (int a = 0; a < S; a++) {
    float *w;
    int r;
    kernel_of(sigma[a], &w, &r);
    ref_pass(out, tmp, n, a, w, r, mode, cval);
    memcpy(out, tmp, bytes);
    free(w);
  }
}

static lumen_image *make_volume(lumen_ctx *ctx, int nd, const int64_t *n) {
  lumen_image *im = lumen_test_image(ctx, nd, n, LUMEN_DTYPE_FLOAT32);
  float *p = lumen_image_data(im);
  uint32_t s = 2024;
  const int64_t total = n[0] * (nd > 1 ? n[1] : 1) * (nd > 2 ? n[2] : 1);
  for (int64_t i = 0; i < total; i++) {
    s = s * 1664525u + 1013904223u;
    p[i] = (float)(1500.0 + 900.0 * sin(0.05 * (double)(i % 997)) + (double)((s >> 20) % 400));
  }
  return im;
}

/* The filter call returned s == LUMEN_OK and *out equals ref to the bit (total floats); frees *out.
   (out by address: the call that fills it is an argument of this one.) */
static void expect_exact(lumen_status s, lumen_image **out, const float *ref, size_t total) {
  assert_int_equal(s, LUMEN_OK);
  assert_memory_equal(lumen_image_const_data(*out), ref, total * sizeof *ref);
  lumen_image_free(*out);
}

/* simd: the context's CPU vector limit (OFF forces the generic loops). */
static void check_case_at(lumen_cpu_simd simd, int nd, int64_t n0, int64_t n1, int64_t n2, double sx, double sy,
                          double sz) {
  static const lumen_boundary modes[] = {LUMEN_BOUNDARY_REFLECT, LUMEN_BOUNDARY_NEAREST, LUMEN_BOUNDARY_CONSTANT,
                                         LUMEN_BOUNDARY_WRAP, LUMEN_BOUNDARY_MIRROR};
  const int64_t n[3] = {n0, nd > 1 ? n1 : 1, nd > 2 ? n2 : 1};
  const double sigma[3] = {sx, sy, sz};
  lumen_ctx *ctx = NULL;
  assert_int_equal(lumen_ctx_create(&ctx), LUMEN_OK);
  assert_int_equal(lumen_ctx_set_cpu_simd(ctx, simd), LUMEN_OK);
  lumen_image *in = make_volume(ctx, nd, n);
  const size_t total = (size_t)(n[0] * n[1] * n[2]);
  float *ref = malloc(total * sizeof *ref), *tmp = malloc(total * sizeof *tmp);
  assert_non_null(ref);
  assert_non_null(tmp);
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
    ref_gauss(lumen_image_const_data(in), ref, tmp, n, nd, sigma, modes[m], 7.5f);
    for (int threads = 1; threads <= 3; threads++) {
      lumen_ctx_set_threads(ctx, threads);
      lumen_gaussian_opts o;
      lumen_gaussian_opts_init(&o);
      o.mode = modes[m];
      o.cval = 7.5;
      for (int a = 0; a < nd; a++) o.sigma_axis[a] = sigma[a];
      lumen_image *out = NULL;
      expect_exact(lumen_filter_gaussian(ctx, in, &o, &out), &out, ref, total);
    }
  }
  lumen_image_free(in);
  free(ref);
  free(tmp);
  lumen_ctx_destroy(ctx);
}

static void check_case(int nd, int64_t n0, int64_t n1, int64_t n2, double sx, double sy, double sz) {
  check_case_at(LUMEN_CPU_SIMD_AUTO, nd, n0, n1, n2, sx, sy, sz);
}

static void test_2d_shapes(void **state) {
  (void)state;
  check_case(2, 4099, 37, 1, 2.0, 2.0, 0);   /* odd width: overlapping last vector block */
  check_case(2, 12001, 9, 1, 2.0, 1.5, 0);   /* rows wider than one x tile */
  check_case(2, 5, 7, 1, 3.0, 3.0, 0);       /* radius larger than the image, scalar paths */
  check_case(2, 33, 200, 1, 0.7, 4.0, 0);    /* several bands, an odd number of rows */
}

static void test_3d_shapes(void **state) {
  (void)state;
  check_case(3, 40, 70, 33, 2.0, 2.0, 2.0);  /* bands and an odd plane count */
  check_case(3, 300, 9, 200, 2.5, 2.0, 1.5); /* few rows: z split into parts */
  check_case(3, 3, 4, 5, 2.0, 2.0, 2.0);     /* radius larger than every axis */
  check_case(3, 700, 45, 20, 2.0, 2.0, 2.0); /* wide planes: slabs cut into x tiles */
}

static void test_no_simd(void **state) {
  (void)state;
  check_case_at(LUMEN_CPU_SIMD_OFF, 2, 131, 29, 1, 2.0, 2.0, 0);
  check_case_at(LUMEN_CPU_SIMD_OFF, 3, 47, 21, 19, 1.0, 2.0, 1.5);
  check_case_at(LUMEN_CPU_SIMD_AVX2, 2, 131, 29, 1, 2.0, 2.0, 0);
}

/* DoG: low minus high through the subtracting path equals the difference of two reference runs. */
static void test_dog(void **state) {
  (void)state;
  const int64_t dims[2][3] = {{1037, 61, 1}, {45, 38, 29}};
  for (int c = 0; c < 2; c++) {
    const int nd = c == 0 ? 2 : 3;
    const int64_t *n = dims[c];
    lumen_ctx *ctx = NULL;
    assert_int_equal(lumen_ctx_create(&ctx), LUMEN_OK);
    lumen_ctx_set_threads(ctx, 2);
    lumen_image *in = make_volume(ctx, nd, n);
    const size_t total = (size_t)(n[0] * n[1] * n[2]);
    float *lo = malloc(3 * total * sizeof *lo); /* lo, hi and tmp: total floats each */
    assert_non_null(lo);
    float *hi = lo + total, *tmp = hi + total;
    const double s1[3] = {1.7, 1.7, 1.7}, s2[3] = {2.9, 2.9, 2.9};
    ref_gauss(lumen_image_const_data(in), lo, tmp, n, nd, s1, LUMEN_BOUNDARY_NEAREST, 0.0f);
    ref_gauss(lumen_image_const_data(in), hi, tmp, n, nd, s2, LUMEN_BOUNDARY_NEAREST, 0.0f);
    for (size_t i = 0; i < total; i++) lo[i] -= hi[i];
    lumen_dog_opts o;
    lumen_dog_opts_init(&o);
    o.low_sigma = 1.7;
    o.high_sigma = 2.9;
    lumen_image *out = NULL;
    expect_exact(lumen_filter_dog(ctx, in, &o, &out), &out, lo, total);
    lumen_image_free(in);
    free(lo);
    lumen_ctx_destroy(ctx);
  }
}

LUMEN_TEST_MAIN(cmocka_unit_test(test_2d_shapes),
                cmocka_unit_test(test_3d_shapes),
                cmocka_unit_test(test_no_simd),
                cmocka_unit_test(test_dog))
