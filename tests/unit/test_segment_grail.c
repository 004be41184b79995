/* GRAIL automatic windowing (lumen_segment_grail) on a synthetic 12-bit mammogram: the metric
 * against a direct double-precision implementation (2-D Gabor kernels, replicate borders,
 * numpy-rule histograms), the search against a brute-force grid, the output against linear
 * windowing with the returned bounds, the CUDA request, and refused options. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_support.h"

#define W 96
#define H 80

static uint64_t rs;
static double urand(void) { return lumen_test_uniform(&rs); }

/* A half-ellipse breast (skin fall-off) on a dark background, fibroglandular texture (random
   sinusoids), quantum noise, five bright calcifications; uint16 in 0..4095. */
static lumen_image *mammogram(lumen_ctx *ctx) {
  int64_t d[2] = {W, H};
  lumen_image *im = NULL;
  assert_int_equal(lumen_image_create(ctx, 2, d, LUMEN_DTYPE_UINT16, lumen_device_cpu(), LUMEN_IMAGE_ZERO, &im),
                   LUMEN_OK);
  uint16_t *p = lumen_image_data(im);
  rs = 11;
  double fx[8], fy[8], ph[8];
  for (int k = 0; k < 8; k++) {
    fx[k] = (urand() - 0.5) * 0.4;
    fy[k] = (urand() - 0.5) * 0.4;
    ph[k] = urand() * 6.283;
  }
  const int cal[5][3] = {{30, 20, 2}, {50, 40, 3}, {25, 55, 2}, {60, 25, 1}, {40, 65, 2}};
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      double rx = x / (0.8 * W), ry = (y - H / 2.0) / (0.45 * H), r = hypot(rx, ry);
      double t = r < 1 ? sqrt(1 - r * r) : 0;
      double v = 120 + 1900 * (1 - exp(-4 * t));
      if (t > 0)
        for (int k = 0; k < 8; k++) v += 45 * sin(fx[k] * x + fy[k] * y + ph[k]) * t;
      for (int c = 0; c < 5; c++)
        if (hypot(x - cal[c][0], y - cal[c][1]) <= cal[c][2]) v += 450;
      v += (urand() + urand() + urand() - 1.5) * 20;
      p[y * W + x] = (uint16_t)fmin(4095, fmax(0, floor(v + 0.5)));
    }
  return im;
}

/* ---- the independent reference: direct 2-D correlation in double precision */

static void ref_response(const double *img, double f, double theta, double *out) {
  double sigma = 1 / (2 * f);
  int size = (int)ceil(6 * sigma);
  if (size % 2 == 0) size++;
  int h = size / 2;
  double *k = malloc((size_t)size * size * sizeof *k);
  assert_non_null(k);
  for (int j = -h; j <= h; j++)
    for (int i = -h; i <= h; i++)
      k[(j + h) * size + i + h] =
          exp(-(i * i + j * j) / (2 * sigma * sigma)) * cos(2 * 3.14159265358979323846 * f * (i * sin(theta) + j * cos(theta)));
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      double s = 0;
      for (int j = -h; j <= h; j++) {
        int yy = y + j < 0 ? 0 : (y + j >= H ? H - 1 : y + j);
        for (int i = -h; i <= h; i++) {
          int xx = x + i < 0 ? 0 : (x + i >= W ? W - 1 : x + i);
          s += k[(j + h) * size + i + h] * img[yy * W + xx];
        }
      }
      out[y * W + x] = fabs(s);
    }
  free(k);
}

/* numpy.histogram's bin of v in [mn, mx] with nb bins */
static int ref_bin(double v, double mn, double mx, int nb) {
  int b = (int)floor((v - mn) / (mx - mn) * nb);
  return b >= nb ? nb - 1 : (b < 0 ? 0 : b);
}

static double ref_mi(const double *p, const double *q, int nb) {
  double pa = INFINITY, pb = -INFINITY, qa = INFINITY, qb = -INFINITY;
  for (int i = 0; i < W * H; i++) {
    pa = fmin(pa, p[i]), pb = fmax(pb, p[i]), qa = fmin(qa, q[i]), qb = fmax(qb, q[i]);
  }
  double *joint = calloc((size_t)nb * nb, sizeof *joint), *cp = calloc((size_t)nb, sizeof *cp),
         *cq = calloc((size_t)nb, sizeof *cq);
  assert_true(joint && cp && cq);
  for (int i = 0; i < W * H; i++) {
    int a = ref_bin(p[i], pa, pb, nb), b = ref_bin(q[i], qa, qb, nb);
    joint[a * nb + b] += 1;
    cp[a] += 1;
    cq[b] += 1;
  }
  double n = W * H, mi = 0;
  for (int a = 0; a < nb; a++)
    for (int b = 0; b < nb; b++)
      if (joint[a * nb + b] > 0) mi += joint[a * nb + b] / n * log2(joint[a * nb + b] * n / (cp[a] * cq[b]));
  free(joint);
  free(cp);
  free(cq);
  return mi;
}

/* sum over scales m < 3 and orientations n < 6 of MI(|G * img|, |G * round(window(img))|) */
static double ref_metric(const lumen_image *im, double a, double b) {
  const uint16_t *p = lumen_image_const_data(im);
  double *img = malloc(W * H * sizeof *img), *disp = malloc(W * H * sizeof *disp);
  double *r1 = malloc(W * H * sizeof *r1), *r2 = malloc(W * H * sizeof *r2);
  assert_true(img && disp && r1 && r2);
  for (int i = 0; i < W * H; i++) {
    img[i] = p[i];
    double v = (p[i] - a) / (b - a);
    disp[i] = floor(255 * (v < 0 ? 0 : (v > 1 ? 1 : v)) + 0.5);
  }
  double sum = 0;
  for (int m = 0; m < 3; m++)
    for (int n = 0; n < 6; n++) {
      double f = 0.25 / pow(sqrt(2), m), th = n * 3.14159265358979323846 / 6;
      ref_response(img, f, th, r1);
      ref_response(disp, f, th, r2);
      sum += ref_mi(r1, r2, 256);
    }
  free(img);
  free(disp);
  free(r1);
  free(r2);
  return sum;
}

/* (a) the metric equals the direct double-precision reference */
static void test_metric_reference(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *im = mammogram(ctx);
  const double win[3][2] = {{0, 4095}, {300, 2200}, {900, 1700}};
  for (int k = 0; k < 3; k++) {
    double got = NAN, want = ref_metric(im, win[k][0], win[k][1]);
    assert_int_equal(lumen_segment_grail_metric(ctx, im, NULL, win[k][0], win[k][1], &got), LUMEN_OK);
    printf("window [%g, %g]: metric %.6f, reference %.6f\n", win[k][0], win[k][1], got, want);
    /* float32 responses against double: a few voxels on a bin edge change bin */
    assert_true(fabs(got - want) <= 3e-4 * want);
    assert_true(want > 1.0);
  }
  lumen_image_free(im);
}

/* (b) the optimum is at least as good as a brute-force grid, (c) the output is linear windowing
   with the returned bounds */
static void test_search_and_output(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *im = mammogram(ctx);
  lumen_image *out = NULL;
  lumen_grail_result r;
  assert_int_equal(lumen_segment_grail(ctx, im, NULL, &out, &r), LUMEN_OK);
  printf("grail: a %g, b %g, metric %.6f, %d evaluations, delta %g (bits %d)\n", r.a, r.b, r.metric, r.evaluations,
         r.delta, r.bits);
  assert_int_equal(r.bits, 12);
  assert_float_equal(r.delta, 300.0, 1e-12);
  assert_true(r.a < r.b);
  double again = NAN;
  assert_int_equal(lumen_segment_grail_metric(ctx, im, NULL, r.a, r.b, &again), LUMEN_OK);
  assert_float_equal(again, r.metric, 1e-12);
  /* brute force: every window on a 7-point grid over [min - 600, max + 600] */
  const uint16_t *p = lumen_image_const_data(im);
  double lo = 4095, hi = 0;
  for (int i = 0; i < W * H; i++) lo = fmin(lo, p[i]), hi = fmax(hi, p[i]);
  double best = -1, ba = 0, bb = 0;
  for (int i = 0; i < 7; i++)
    for (int j = i + 1; j < 7; j++) {
      double a = lo - 600 + i * (hi - lo + 1200) / 6, b = lo - 600 + j * (hi - lo + 1200) / 6, m;
      assert_int_equal(lumen_segment_grail_metric(ctx, im, NULL, a, b, &m), LUMEN_OK);
      if (m > best) best = m, ba = a, bb = b;
    }
  printf("grid best: a %g, b %g, metric %.6f\n", ba, bb, best);
  assert_true(r.metric >= best);
  /* the output */
  assert_int_equal(lumen_image_dtype(out), LUMEN_DTYPE_FLOAT32);
  assert_int_equal(lumen_image_dim(out, 0), W);
  assert_int_equal(lumen_image_dim(out, 1), H);
  const float *o = lumen_image_const_data(out);
  for (int i = 0; i < W * H; i++) {
    double v = (p[i] - r.a) / (r.b - r.a);
    v = 255 * (v < 0 ? 0 : (v > 1 ? 1 : v));
    assert_float_equal(o[i], v, 1e-3);
  }
  lumen_image_free(out);
  /* by name and through lumen_segment_run, and a CUDA request (run on the CPU, said in the
     report): the same image as the direct CPU call (a small bank, to keep the test short) */
  lumen_grail_opts g;
  lumen_grail_opts_init(&g);
  g.n_scales = 1;
  g.n_orientations = 3;
  assert_int_equal(lumen_segment_grail(ctx, im, &g, &out, NULL), LUMEN_OK);
  o = lumen_image_const_data(out);
  lumen_segment_algo algo;
  assert_int_equal(lumen_segment_algo_parse(ctx, "grail", &algo), LUMEN_OK);
  assert_int_equal(algo, LUMEN_SEGMENT_GRAIL);
  assert_string_equal(lumen_segment_algo_name(LUMEN_SEGMENT_GRAIL), "grail");
  lumen_image *o2 = NULL;
  assert_int_equal(lumen_segment_run(ctx, LUMEN_SEGMENT_GRAIL, &g, im, &o2), LUMEN_OK);
  assert_memory_equal(lumen_image_const_data(o2), o, W * H * sizeof(float));
  lumen_image_free(o2);
  lumen_filter_report rep;
  g.exec.device = "cuda";
  g.exec.report = &rep;
  assert_int_equal(lumen_segment_grail(ctx, im, &g, &o2, NULL), LUMEN_OK);
  assert_int_equal(rep.fell_back, 1);
  assert_int_equal(rep.used.kind, LUMEN_DEVICE_CPU);
  assert_non_null(strstr(rep.reason, "grail"));
  assert_memory_equal(lumen_image_const_data(o2), o, W * H * sizeof(float));
  lumen_image_free(o2);
  /* the bank is spread over threads: 1 and 3 threads give the same window and metric */
  lumen_grail_result r1, r3;
  g.exec.device = NULL;
  g.exec.report = NULL;
  assert_int_equal(lumen_ctx_set_threads(ctx, 1), LUMEN_OK);
  assert_int_equal(lumen_segment_grail(ctx, im, &g, &o2, &r1), LUMEN_OK);
  lumen_image_free(o2);
  assert_int_equal(lumen_ctx_set_threads(ctx, 3), LUMEN_OK);
  assert_int_equal(lumen_segment_grail(ctx, im, &g, &o2, &r3), LUMEN_OK);
  assert_true(r1.a == r3.a && r1.b == r3.b && r1.metric == r3.metric);
  LUMEN_TEST_FREE_IMAGES(o2, out, im);
}

/* 8-bit data: the default step is the 12-bit 300 scaled to 255 levels */
static void test_delta_scaling(void **state) {
  lumen_ctx *ctx = *state;
  int64_t d[2] = {32, 32};
  lumen_image *im = NULL, *out = NULL;
  assert_int_equal(lumen_image_create(ctx, 2, d, LUMEN_DTYPE_UINT8, lumen_device_cpu(), LUMEN_IMAGE_ZERO, &im),
                   LUMEN_OK);
  uint8_t *p = lumen_image_data(im);
  for (int i = 0; i < 32 * 32; i++) p[i] = (uint8_t)(40 + (i * 37) % 150);
  lumen_grail_opts g;
  lumen_grail_opts_init(&g);
  g.n_scales = 1;
  g.n_orientations = 2;
  lumen_grail_result r;
  assert_int_equal(lumen_segment_grail(ctx, im, &g, &out, &r), LUMEN_OK);
  assert_int_equal(r.bits, 8);
  assert_float_equal(r.delta, 300.0 * 255 / 4095, 1e-12);
  lumen_image_free(out);
  g.delta = 7;
  assert_int_equal(lumen_segment_grail(ctx, im, &g, &out, &r), LUMEN_OK);
  assert_int_equal(r.bits, 0);
  assert_float_equal(r.delta, 7, 0);
  LUMEN_TEST_FREE_IMAGES(out, im);
}

#define REFUSED(call, word)                                                  \
  do {                                                                       \
    out = (lumen_image *)1;                                                  \
    assert_int_equal((call), LUMEN_ERR_INVALID_ARGUMENT);                    \
    assert_non_null(strstr(lumen_ctx_last_error(ctx), word));               \
  } while (0)

/* (d) bad options and images are refused with a message naming the field; nothing is returned */
static void test_refused(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *im = mammogram(ctx), *out = NULL;
  lumen_grail_opts g;
  double m;
  const char *bad[] = {"n_scales", "n_orientations", "delta", "k_max", "steps", "bins", "quantize", "out_max"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    lumen_grail_opts_init(&g);
    switch (k) {
      case 0: g.n_scales = 0; break;
      case 1: g.n_orientations = 33; break;
      case 2: g.delta = -1; break;
      case 3: g.k_max = 0; break;
      case 4: g.steps = 0; break;
      case 5: g.bins = 1; break;
      case 6: g.quantize = 2; break;
      default: g.out_max = NAN; break;
    }
    REFUSED(lumen_segment_grail(ctx, im, &g, &out, NULL), bad[k]);
    assert_null(out);
    REFUSED(lumen_segment_grail_metric(ctx, im, &g, 0, 100, &m), bad[k]);
  }
  lumen_grail_opts_init(&g);
  g.delta = NAN;
  REFUSED(lumen_segment_grail(ctx, im, &g, &out, NULL), "delta");
  REFUSED(lumen_segment_grail_metric(ctx, im, NULL, 100, 100, &m), "window");
  REFUSED(lumen_segment_grail_metric(ctx, im, NULL, 200, NAN, &m), "window");
  REFUSED(lumen_segment_grail(ctx, im, NULL, NULL, NULL), "out");
  REFUSED(lumen_segment_grail(ctx, NULL, NULL, &out, NULL), "in");
  assert_null(out);
  /* a constant image, a NaN voxel, a 3-D image */
  int64_t d3[3] = {8, 8, 2};
  lumen_image *f = NULL;
  assert_int_equal(lumen_image_create(ctx, 2, d3, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), LUMEN_IMAGE_ZERO, &f),
                   LUMEN_OK);
  REFUSED(lumen_segment_grail(ctx, f, NULL, &out, NULL), "constant");
  assert_null(out);
  ((float *)lumen_image_data(f))[5] = NAN;
  REFUSED(lumen_segment_grail(ctx, f, NULL, &out, NULL), "voxel 5");
  lumen_image_free(f);
  assert_int_equal(lumen_image_create(ctx, 3, d3, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), LUMEN_IMAGE_ZERO, &f),
                   LUMEN_OK);
  REFUSED(lumen_segment_grail(ctx, f, NULL, &out, NULL), "2-D");
  assert_null(out);
  LUMEN_TEST_FREE_IMAGES(f, im);
}

LUMEN_TEST_MAIN(LUMEN_TEST_WITH_CTX(test_metric_reference), LUMEN_TEST_WITH_CTX(test_search_and_output),
                LUMEN_TEST_WITH_CTX(test_delta_scaling), LUMEN_TEST_WITH_CTX(test_refused))
