/* Clustering (k-means, FCM, PFCM), region growing, breast mask, windowing and bit-depth
 * normalisation on synthetic images with known answers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_support.h"

#define N 128

static uint64_t rs;
static double urand(void) { return lumen_test_uniform(&rs); }

static lumen_image *new_image(lumen_ctx *ctx, int64_t nx, int64_t ny, lumen_dtype t) {
  int64_t d[2] = {nx, ny};
  lumen_image *im = NULL;
  assert_int_equal(lumen_image_create(ctx, 2, d, t, lumen_device_cpu(), LUMEN_IMAGE_ZERO, &im), LUMEN_OK);
  return im;
}

/* An N x N image of type t (zeros) to fill with noise from urand, seeded with seed. */
static lumen_image *noise_image(lumen_ctx *ctx, lumen_dtype t, uint64_t seed) {
  rs = seed;
  return new_image(ctx, N, N, t);
}

/* The classes of three_classes' voxels. */
static uint8_t three_truth[N * N];

/* Three classes (100, 500, 900) in vertical bands with uniform noise +-60; truth 0/1/2. */
static lumen_image *three_classes(lumen_ctx *ctx) {
  lumen_image *im = noise_image(ctx, LUMEN_DTYPE_FLOAT32, 5);
  float *p = lumen_image_data(im);
  for (int y = 0; y < N; y++)
    for (int x = 0; x < N; x++) {
      int c = (x * 3 / N + (y > N / 2 && x < N / 3)) % 3;  /* bands, with a block of class 1 */
      three_truth[y * N + x] = (uint8_t)c;
      p[y * N + x] = (float)(100 + 400 * c + (urand() - 0.5) * 120);
    }
  return im;
}

static double agreement(const uint8_t *a, const uint8_t *b, int64_t n) {
  int64_t same = 0;
  for (int64_t i = 0; i < n; i++) same += a[i] == b[i];
  return (double)same / (double)n;
}

static double iou(const uint8_t *a, const uint8_t *b, int64_t n) {
  int64_t in = 0, un = 0;
  for (int64_t i = 0; i < n; i++) {
    in += a[i] && b[i];
    un += a[i] || b[i];
  }
  return un ? (double)in / (double)un : 1.0;
}

static void test_kmeans(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *im = three_classes(ctx);
  lumen_kmeans_opts o;
  lumen_kmeans_opts_init(&o);
  assert_int_equal(o.k, 2);
  assert_int_equal(o.seed, 42);
  o.k = 3;
  o.output = LUMEN_CLUSTER_LABELS;
  lumen_cluster_result r, r2;
  lumen_image *lab = NULL, *lab2 = NULL, *mask = NULL;
  assert_int_equal(lumen_segment_kmeans(ctx, im, &o, &lab, &r), LUMEN_OK);
  double acc = agreement(lumen_image_const_data(lab), three_truth, N * N);
  printf("k-means k=3: centres %.1f %.1f %.1f, %d iterations, agreement %.4f\n", r.centers[0], r.centers[1],
         r.centers[2], r.iterations, acc);
  assert_true(acc == 1.0);
  assert_true(r.converged);
  assert_true(fabs(r.centers[1] - 500) < 5);
  /* deterministic: same seed, one thread -> the same bits */
  lumen_ctx_set_threads(ctx, 1);
  assert_int_equal(lumen_segment_kmeans(ctx, im, &o, &lab2, &r2), LUMEN_OK);
  assert_memory_equal(lumen_image_const_data(lab), lumen_image_const_data(lab2), N * N);
  assert_memory_equal(r.centers, r2.centers, sizeof r.centers);
  /* mask = brightest cluster */
  o.output = LUMEN_CLUSTER_MASK;
  assert_int_equal(lumen_segment_kmeans(ctx, im, &o, &mask, NULL), LUMEN_OK);
  const uint8_t *m = lumen_image_const_data(mask);
  for (int i = 0; i < N * N; i++) assert_int_equal(m[i], three_truth[i] == 2);
  o.k = 1;
  lumen_image *bad = (lumen_image *)1;
  assert_int_equal(lumen_segment_kmeans(ctx, im, &o, &bad, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_null(bad);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "k is 1"));
  /* a NaN voxel is the data's fault, not the options' (the CLI exits 1, not 2) */
  o.k = 3;
  assert_int_equal(lumen_image_dtype(im), LUMEN_DTYPE_FLOAT32);
  ((float *)lumen_image_data(im))[7] = NAN;
  assert_int_equal(lumen_segment_kmeans(ctx, im, &o, &bad, NULL), LUMEN_ERR_INVALID_DATA);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "voxel 7 is nan"));
  LUMEN_TEST_FREE_IMAGES(lab, lab2, mask, im);
}

static void test_fcm_pfcm(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *im = three_classes(ctx);
  lumen_fcm_opts o;
  lumen_fcm_opts_init(&o);
  assert_true(o.m == 2.0 && o.c == 2 && o.tau == 0.04 && o.b == 4.0);
  o.c = 3;
  o.output = LUMEN_CLUSTER_LABELS;
  lumen_cluster_result r;
  lumen_image *lab = NULL, *lab1 = NULL;
  assert_int_equal(lumen_segment_fcm(ctx, im, &o, &lab, &r), LUMEN_OK);
  double acc = agreement(lumen_image_const_data(lab), three_truth, N * N);
  printf("FCM c=3: centres %.1f %.1f %.1f, %d iterations, agreement %.4f\n", r.centers[0], r.centers[1], r.centers[2],
         r.iterations, acc);
  assert_true(acc == 1.0);
  lumen_ctx_set_threads(ctx, 1);
  assert_int_equal(lumen_segment_fcm(ctx, im, &o, &lab1, NULL), LUMEN_OK);
  assert_memory_equal(lumen_image_const_data(lab), lumen_image_const_data(lab1), N * N);
  lumen_ctx_set_threads(ctx, 0);
  LUMEN_TEST_FREE_IMAGES(lab, lab1, im);

  /* PFCM: two classes (200, 700, uniform noise +-40) and a few bright outliers (1500) */
  lumen_image *two = noise_image(ctx, LUMEN_DTYPE_FLOAT32, 9);
  float *p = lumen_image_data(two);
  uint8_t *dots = calloc(N * N, 1);
  for (int y = 0; y < N; y++)
    for (int x = 0; x < N; x++) {
      int i = y * N + x;
      p[i] = (float)((x < N / 2 ? 200 : 700) + (urand() - 0.5) * 80);
      if ((x % 32 == 10 || x % 32 == 11) && (y % 40 == 7 || y % 40 == 8)) {
        p[i] = 1500;
        dots[i] = 1;
      }
    }
  lumen_fcm_opts_init(&o);
  lumen_image *mask = NULL;
  assert_int_equal(lumen_segment_pfcm(ctx, two, &o, &mask, &r), LUMEN_OK);
  double j = iou(lumen_image_const_data(mask), dots, N * N);
  printf("PFCM: centres %.1f %.1f, outlier mask IoU %.4f\n", r.centers[0], r.centers[1], j);
  assert_true(j >= 0.99);
  lumen_image_free(mask);
  /* FCM mask: the brightest cluster */
  lumen_fcm_opts_init(&o);
  assert_int_equal(lumen_segment_fcm(ctx, two, &o, &mask, &r), LUMEN_OK);
  const uint8_t *mm = lumen_image_const_data(mask);
  for (int y = 0; y < N; y++)
    for (int x = 0; x < N; x++) assert_int_equal(mm[y * N + x], x >= N / 2 || dots[y * N + x]);
  lumen_image_free(mask);
  o.m = 1.0;
  assert_int_equal(lumen_segment_fcm(ctx, two, &o, &mask, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "m is 1"));
  lumen_image_free(two);
  free(dots);
}

static void disk(float *p, uint8_t *m, int cx, int cy, int r, float v) {
  for (int y = 0; y < N; y++)
    for (int x = 0; x < N; x++)
      if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r) {
        p[y * N + x] = v;
        if (m) m[y * N + x] = 1;
      }
}

static void test_region_grow(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *im = new_image(ctx, N, N, LUMEN_DTYPE_FLOAT32);
  float *p = lumen_image_data(im);
  for (int i = 0; i < N * N; i++) p[i] = 50;
  uint8_t *a = calloc(N * N, 1);
  disk(p, a, 40, 40, 20, 200);
  disk(p, NULL, 95, 90, 15, 150);
  lumen_region_grow_opts o;
  lumen_region_grow_opts_init(&o);
  int64_t seeds[2] = {40, 40};
  o.seeds = seeds;
  o.n_seeds = 1;
  lumen_image *m = NULL;
  assert_int_equal(lumen_segment_region_grow(ctx, im, &o, &m), LUMEN_OK);
  double j = iou(lumen_image_const_data(m), a, N * N);
  printf("region growing (seed): IoU %.4f\n", j);
  assert_true(j >= 0.99);
  lumen_image_free(m);
  /* automatic seeds: the regional maxima (200 and 150 plateaus) -> threshold 175 -> disk A */
  lumen_region_grow_opts_init(&o);
  assert_int_equal(lumen_segment_region_grow(ctx, im, &o, &m), LUMEN_OK);
  j = iou(lumen_image_const_data(m), a, N * N);
  printf("region growing (regional maxima): IoU %.4f\n", j);
  assert_true(j >= 0.99);
  lumen_image_free(m);
  /* an explicit threshold takes both disks from seeds in each */
  int64_t two[4] = {40, 40, 95, 90};
  o.seeds = two;
  o.n_seeds = 2;
  o.threshold = 100;
  assert_int_equal(lumen_segment_region_grow(ctx, im, &o, &m), LUMEN_OK);
  int64_t cnt = 0;
  for (int i = 0; i < N * N; i++) cnt += ((const uint8_t *)lumen_image_const_data(m))[i];
  int64_t want = 0;
  for (int i = 0; i < N * N; i++) want += p[i] > 100;
  assert_int_equal(cnt, want);
  lumen_image_free(m);
  /* bad seed */
  int64_t far[2] = {400, 3};
  o.seeds = far;
  o.n_seeds = 1;
  assert_int_equal(lumen_segment_region_grow(ctx, im, &o, &m), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "seed 0 coordinate 0 is 400"));
  free(a);
  lumen_image_free(im);
}

static void test_breast_mask(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *im = noise_image(ctx, LUMEN_DTYPE_UINT16, 3);
  uint16_t *p = lumen_image_data(im);
  uint8_t *truth = calloc(N * N, 1);
  for (int y = 0; y < N; y++)
    for (int x = 0; x < N; x++) {
      double rx = x / (0.8 * N), ry = (y - N / 2.0) / (0.45 * N);
      int in = rx * rx + ry * ry < 1;
      truth[y * N + x] = (uint8_t)in;
      p[y * N + x] = (uint16_t)(in ? 1000 + 400 * urand() : 40 + 30 * urand());
      if (x >= 110 && x < 120 && y >= 5 && y < 15) p[y * N + x] = 3000;  /* a lead marker */
    }
  lumen_image *m = NULL;
  assert_int_equal(lumen_segment_breast_mask(ctx, im, NULL, &m), LUMEN_OK);
  double j = iou(lumen_image_const_data(m), truth, N * N);
  printf("breast mask: IoU %.4f\n", j);
  assert_true(j >= 0.99);
  lumen_image_free(m);
  lumen_breast_mask_opts o;
  lumen_breast_mask_opts_init(&o);
  o.connectivity = 5;
  assert_int_equal(lumen_segment_breast_mask(ctx, im, &o, &m), LUMEN_ERR_INVALID_ARGUMENT);
  free(truth);
  lumen_image_free(im);
}

static void test_window_bits(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *im = new_image(ctx, 5, 1, LUMEN_DTYPE_UINT16);
  uint16_t *p = lumen_image_data(im);
  uint16_t v[5] = {0, 1000, 2000, 3000, 4095};
  memcpy(p, v, sizeof v);
  lumen_window_opts w;
  lumen_window_opts_init(&w);
  w.center = 2000;
  w.width = 2000;
  lumen_image *o = NULL;
  assert_int_equal(lumen_segment_window(ctx, im, &w, &o), LUMEN_OK);
  const float *f = lumen_image_const_data(o);
  float want[5] = {0, 0, 127.5f, 255, 255};
  for (int i = 0; i < 5; i++) assert_float_equal(f[i], want[i], 1e-4);
  lumen_image_free(o);
  /* window 40/400 (soft tissue) on a value of 100: (100 - (40 - 200)) / 400 * 255 = 165.75 */
  p[0] = 100;
  w.center = 40;
  w.width = 400;
  assert_int_equal(lumen_segment_window(ctx, im, &w, &o), LUMEN_OK);
  assert_float_equal(((const float *)lumen_image_const_data(o))[0], 165.75f, 1e-4);
  lumen_image_free(o);
  p[0] = 0;
  /* defaults: the data range */
  lumen_window_opts_init(&w);
  assert_int_equal(lumen_segment_window(ctx, im, &w, &o), LUMEN_OK);
  assert_float_equal(((const float *)lumen_image_const_data(o))[2], 2000.0f / 4095 * 255, 1e-3);
  lumen_image_free(o);
  w.width = -1;
  assert_int_equal(lumen_segment_window(ctx, im, &w, &o), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "width is -1"));
  /* bits: inferred 12 -> x / 4095 * 255 */
  int bits = 0;
  assert_int_equal(lumen_segment_normalize_bits(ctx, im, NULL, &o, &bits), LUMEN_OK);
  assert_int_equal(bits, 12);
  f = lumen_image_const_data(o);
  assert_float_equal(f[1], 1000.0f / 4095 * 255, 1e-3);
  assert_float_equal(f[4], 255, 1e-4);
  lumen_image_free(o);
  lumen_bits_opts b;
  lumen_bits_opts_init(&b);
  b.bits = 16;
  b.target = 1;
  b.exec.precision = LUMEN_PRECISION_HALF;
  assert_int_equal(lumen_segment_normalize_bits(ctx, im, &b, &o, &bits), LUMEN_OK);
  assert_int_equal(lumen_image_dtype(o), LUMEN_DTYPE_FLOAT16);
  assert_float_equal(lumen_half_to_float(((const uint16_t *)lumen_image_const_data(o))[4]), 4095.0 / 65535, 1e-4);
  lumen_image_free(o);
  b.bits = 40;
  assert_int_equal(lumen_segment_normalize_bits(ctx, im, &b, &o, &bits), LUMEN_ERR_INVALID_ARGUMENT);
  lumen_image_free(im);
  /* 8-bit data */
  lumen_image *u8 = new_image(ctx, 2, 1, LUMEN_DTYPE_UINT8);
  ((uint8_t *)lumen_image_data(u8))[1] = 255;
  assert_int_equal(lumen_segment_normalize_bits(ctx, u8, NULL, &o, &bits), LUMEN_OK);
  assert_int_equal(bits, 8);
  LUMEN_TEST_FREE_IMAGES(o, u8);
}

static void test_tophat(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *im = new_image(ctx, N, N, LUMEN_DTYPE_FLOAT32);
  float *p = lumen_image_data(im);
  for (int y = 0; y < N; y++)
    for (int x = 0; x < N; x++) p[y * N + x] = (float)(100 + (x / 16) * 30);  /* wide steps: no top-hat response */
  uint8_t *dot = calloc(N * N, 1);
  for (int y = 60; y < 63; y++)
    for (int x = 60; x < 63; x++) {
      p[y * N + x] += 500;
      dot[y * N + x] = 1;
    }
  lumen_tophat_opts o;
  lumen_tophat_opts_init(&o);
  assert_int_equal(o.radius, 4);
  lumen_image *t = NULL;
  assert_int_equal(lumen_segment_tophat(ctx, im, &o, &t), LUMEN_OK);
  const float *f = lumen_image_const_data(t);
  assert_true(f[61 * N + 61] >= 495 && f[61 * N + 61] <= 500);
  assert_float_equal(f[10 * N + 10], 0, 1e-3);
  lumen_image_free(t);
  o.output_mask = 1;
  assert_int_equal(lumen_segment_tophat(ctx, im, &o, &t), LUMEN_OK);
  { int64_t c = 0; const uint8_t *q = lumen_image_const_data(t); for (int i = 0; i < N * N; i++) c += q[i]; printf("top-hat mask: %lld voxels, IoU %.4f\n", (long long)c, iou(q, dot, N * N)); }
  assert_true(iou(lumen_image_const_data(t), dot, N * N) >= 0.99);
  lumen_image_free(t);
  free(dot);
  lumen_image_free(im);
}

LUMEN_TEST_MAIN(LUMEN_TEST_WITH_CTX(test_kmeans),      LUMEN_TEST_WITH_CTX(test_fcm_pfcm),    LUMEN_TEST_WITH_CTX(test_region_grow),
                LUMEN_TEST_WITH_CTX(test_breast_mask), LUMEN_TEST_WITH_CTX(test_window_bits), LUMEN_TEST_WITH_CTX(test_tophat))
