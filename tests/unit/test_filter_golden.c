/* Filters against scipy.ndimage / scikit-image / numpy golden files (tests/golden/filter, made by
 * scripts/make_filter_golden.py): float32 ops to 1e-5, binary ops, labels and Otsu exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_support.h"

#define NX2 40
#define NY2 32
#define NX3 16
#define NY3 14
#define NZ3 12
#define N2 (NX2 * NY2)
#define N3 (NX3 * NY3 * NZ3)

static char golden_dir[1024];

static int setup_dir(void) {
  const char *src = getenv("LUMEN_SOURCE_DIR");
  if (!src) return -1;
  snprintf(golden_dir, sizeof golden_dir, "%s/tests/golden/filter", src);
  char p[1100];
  snprintf(p, sizeof p, "%s/scalars.txt", golden_dir);
  FILE *f = fopen(p, "r");
  if (!f) return -1;
  fclose(f);
  return 0;
}

static void *load(const char *name, size_t bytes) {
  char p[1200];
  snprintf(p, sizeof p, "%s/%s.bin", golden_dir, name);
  FILE *f = fopen(p, "rb");
  if (!f) {
    print_error("missing golden file %s\n", p);
    fail();
  }
  void *buf = malloc(bytes);
  assert_non_null(buf);
  size_t got = fread(buf, 1, bytes, f);
  int extra = fgetc(f);
  fclose(f);
  if (got != bytes || extra != EOF) {
    print_error("golden file %s: expected %zu bytes\n", p, bytes);
    fail();
  }
  return buf;
}

static double scalar(const char *name) {
  char p[1200], key[128];
  double v = NAN, x;
  snprintf(p, sizeof p, "%s/scalars.txt", golden_dir);
  FILE *f = fopen(p, "r");
  assert_non_null(f);
  char line[512];
  while (fgets(line, sizeof line, f))
    if (line[0] != '#' && sscanf(line, "%127s %lf", key, &x) == 2 && strcmp(key, name) == 0) v = x;
  fclose(f);
  if (isnan(v)) {
    print_error("scalar %s not in scalars.txt\n", name);
    fail();
  }
  return v;
}

typedef struct fixture {
  lumen_ctx *ctx;
  float *a2, *a3, *b2f, *b3f;
  lumen_image *in2, *in3, *bin2, *bin3;
} fixture;

static fixture F;

static int group_setup(void **state) {
  (void)state;
  if (setup_dir() != 0) return 0;
  F.ctx = lumen_test_ctx();
  F.a2 = load("in2d", N2 * 4);
  F.a3 = load("in3d", N3 * 4);
  uint8_t *b2 = load("bin2d", N2), *b3 = load("bin3d", N3);
  F.b2f = malloc(N2 * 4);
  F.b3f = malloc(N3 * 4);
  for (int i = 0; i < N2; i++) F.b2f[i] = b2[i];
  for (int i = 0; i < N3; i++) F.b3f[i] = b3[i];
  free(b2);
  free(b3);
  const int64_t d2[2] = {NX2, NY2}, d3[3] = {NX3, NY3, NZ3};
  lumen_device cpu = lumen_device_cpu();
  lumen_image_wrap(F.ctx, F.a2, 2, d2, LUMEN_DTYPE_FLOAT32, cpu, &F.in2);
  lumen_image_wrap(F.ctx, F.a3, 3, d3, LUMEN_DTYPE_FLOAT32, cpu, &F.in3);
  lumen_image_wrap(F.ctx, F.b2f, 2, d2, LUMEN_DTYPE_FLOAT32, cpu, &F.bin2);
  lumen_image_wrap(F.ctx, F.b3f, 3, d3, LUMEN_DTYPE_FLOAT32, cpu, &F.bin3);
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  lumen_image_free(F.in2);
  lumen_image_free(F.in3);
  lumen_image_free(F.bin2);
  lumen_image_free(F.bin3);
  free(F.a2);
  free(F.a3);
  free(F.b2f);
  free(F.b3f);
  lumen_ctx_destroy(F.ctx);
  return 0;
}

static void expect_float(lumen_image *out, const char *golden, int n, double tol) {
  assert_non_null(out);
  assert_int_equal(lumen_image_dtype(out), LUMEN_DTYPE_FLOAT32);
  float *ref = load(golden, (size_t)n * 4);
  const float *got = lumen_image_const_data(out);
  double worst = 0;
  int at = 0;
  for (int i = 0; i < n; i++) {
    double d = fabs((double)got[i] - (double)ref[i]);
    if (!(d <= worst)) {
      worst = d;
      at = i;
    }
  }
  if (!(worst <= tol)) {
    print_error("%s: max |diff| %.3g at %d (got %.9g, expected %.9g), tol %.1g\n", golden, worst, at, got[at],
                ref[at], tol);
    fail();
  }
  free(ref);
  lumen_image_free(out);
}

static void expect_u8(lumen_image *out, const char *golden, int n) {
  assert_non_null(out);
  assert_int_equal(lumen_image_dtype(out), LUMEN_DTYPE_UINT8);
  uint8_t *ref = load(golden, (size_t)n);
  const uint8_t *got = lumen_image_const_data(out);
  int bad = 0, first = -1;
  for (int i = 0; i < n; i++)
    if (got[i] != ref[i]) {
      bad++;
      if (first < 0) first = i;
    }
  if (bad) {
    print_error("%s: %d of %d voxels differ (first at %d: got %d, expected %d)\n", golden, bad, n, first, got[first],
                ref[first]);
    fail();
  }
  free(ref);
  lumen_image_free(out);
}

/* The filter call returned s == LUMEN_OK, then expect_float / expect_u8 of its output (out by
   address: the call that fills it is an argument of these). */
static void expect_float_ok(lumen_status s, lumen_image **out, const char *golden, int n, double tol) {
  assert_int_equal(s, LUMEN_OK);
  expect_float(*out, golden, n, tol);
}
static void expect_u8_ok(lumen_status s, lumen_image **out, const char *golden, int n) {
  assert_int_equal(s, LUMEN_OK);
  expect_u8(*out, golden, n);
}

#define SKIP_IF_NO_GOLDEN() \
  do {                      \
    if (!F.ctx) skip();     \
  } while (0)

static void gaussian_modes(void **state) {
  (void)state;
  SKIP_IF_NO_GOLDEN();
  const char *names[] = {"reflect", "nearest", "constant", "wrap", "mirror"};
  for (int m = 0; m < 5; m++) {
    lumen_boundary mode;
    assert_int_equal(lumen_boundary_parse(names[m], &mode), LUMEN_OK);
    lumen_gaussian_opts o;
    lumen_gaussian_opts_init(&o);
    o.mode = mode;
    o.cval = 0.25;
    o.sigma = 1.5;
    lumen_image *out = NULL;
    char g[64];
    assert_int_equal(lumen_filter_gaussian(F.ctx, F.in2, &o, &out), LUMEN_OK);
    snprintf(g, sizeof g, "gauss2d_%s", names[m]);
    expect_float(out, g, N2, 1e-5);
    o.sigma = 1.2;
    assert_int_equal(lumen_filter_gaussian(F.ctx, F.in3, &o, &out), LUMEN_OK);
    snprintf(g, sizeof g, "gauss3d_%s", names[m]);
    expect_float(out, g, N3, 1e-5);
  }
}

static void gaussian_special(void **state) {
  (void)state;
  SKIP_IF_NO_GOLDEN();
  lumen_gaussian_opts o;
  lumen_gaussian_opts_init(&o);
  o.mode = LUMEN_BOUNDARY_REFLECT;
  o.sigma_axis[0] = 2.0;
  o.sigma_axis[1] = 0.8;
  lumen_image *out = NULL;
  expect_float_ok(lumen_filter_gaussian(F.ctx, F.in2, &o, &out), &out, "gauss2d_aniso", N2, 1e-5);
  /* millimetres: spacing 0.5 x 2 turns sigma_mm (1.0, 1.6) into voxels (2.0, 0.8) */
  lumen_image *mm = NULL;
  assert_int_equal(lumen_image_clone(F.ctx, F.in2, &mm), LUMEN_OK);
  const double sp[2] = {0.5, 2.0};
  assert_int_equal(lumen_image_set_spacing(F.ctx, mm, sp, 2), LUMEN_OK);
  o.units = LUMEN_UNITS_MM;
  o.sigma_axis[0] = 1.0;
  o.sigma_axis[1] = 1.6;
  assert_int_equal(lumen_filter_gaussian(F.ctx, mm, &o, &out), LUMEN_OK);
  double osp[2];
  lumen_image_get_spacing(out, osp, 2);
  assert_true(osp[0] == 0.5 && osp[1] == 2.0);
  expect_float(out, "gauss2d_aniso", N2, 1e-5);
  lumen_image_free(mm);
  lumen_gaussian_opts_init(&o);
  o.sigma = 12.0;
  const char *modes[3] = {"gauss2d_big", "gauss2d_bigmirror", "gauss2d_bigwrap"};
  const lumen_boundary bm[3] = {LUMEN_BOUNDARY_REFLECT, LUMEN_BOUNDARY_MIRROR, LUMEN_BOUNDARY_WRAP};
  for (int i = 0; i < 3; i++) {
    o.mode = bm[i];
    expect_float_ok(lumen_filter_gaussian(F.ctx, F.in2, &o, &out), &out, modes[i], N2, 1e-5);
  }
}

static void dog_and_log(void **state) {
  (void)state;
  SKIP_IF_NO_GOLDEN();
  lumen_image *out = NULL;
  expect_float_ok(lumen_filter_dog(F.ctx, F.in2, NULL, &out), &out, "dog2d", N2, 1e-5);
  lumen_dog_opts d;
  lumen_dog_opts_init(&d);
  d.low_sigma = 1.0;
  d.high_sigma = 2.0;
  expect_float_ok(lumen_filter_dog(F.ctx, F.in3, &d, &out), &out, "dog3d", N3, 1e-5);
  lumen_laplace_opts l;
  lumen_laplace_opts_init(&l);
  expect_float_ok(lumen_filter_gaussian_laplace(F.ctx, F.in2, &l, &out), &out, "log2d_reflect", N2, 1e-5);
  l.sigma = 1.3;
  l.mode = LUMEN_BOUNDARY_NEAREST;
  expect_float_ok(lumen_filter_gaussian_laplace(F.ctx, F.in2, &l, &out), &out, "log2d_nearest", N2, 1e-5);
  lumen_laplace_opts_init(&l);
  l.sigma = 1.5;
  expect_float_ok(lumen_filter_gaussian_laplace(F.ctx, F.in3, &l, &out), &out, "log3d_reflect", N3, 1e-5);
}

static void median(void **state) {
  (void)state;
  SKIP_IF_NO_GOLDEN();
  struct {
    const char *g;
    int size, three;
    lumen_boundary mode;
    double cval;
  } cases[] = {
    {"median2d_3", 3, 0, LUMEN_BOUNDARY_REFLECT, 0},         {"median2d_5", 5, 0, LUMEN_BOUNDARY_REFLECT, 0},
    {"median2d_5_nearest", 5, 0, LUMEN_BOUNDARY_NEAREST, 0}, {"median2d_5_constant", 5, 0, LUMEN_BOUNDARY_CONSTANT, 0.5},
    {"median2d_7_mirror", 7, 0, LUMEN_BOUNDARY_MIRROR, 0},   {"median2d_13", 13, 0, LUMEN_BOUNDARY_REFLECT, 0},
    {"median3d_3", 3, 1, LUMEN_BOUNDARY_REFLECT, 0},         {"median3d_5_wrap", 5, 1, LUMEN_BOUNDARY_WRAP, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    lumen_median_opts o;
    lumen_median_opts_init(&o);
    o.size = cases[i].size;
    o.mode = cases[i].mode;
    o.cval = cases[i].cval;
    lumen_image *out = NULL;
    expect_float_ok(lumen_filter_median(F.ctx, cases[i].three ? F.in3 : F.in2, &o, &out), &out, cases[i].g,
                    cases[i].three ? N3 : N2, 0.0);
  }
}

static void convolution(void **state) {
  (void)state;
  SKIP_IF_NO_GOLDEN();
  float *k2 = load("kernel2d", 12 * 4), *k3 = load("kernel3d", 27 * 4);
  lumen_convolve_opts o = lumen_test_convolve_2d(k2, 4, 3);
  lumen_image *out = NULL;
  expect_float_ok(lumen_filter_convolve(F.ctx, F.in2, &o, &out), &out, "convolve2d_reflect", N2, 1e-5);
  o.mode = LUMEN_BOUNDARY_WRAP;
  expect_float_ok(lumen_filter_convolve(F.ctx, F.in2, &o, &out), &out, "convolve2d_wrap", N2, 1e-5);
  o.mode = LUMEN_BOUNDARY_CONSTANT;
  o.correlate = 1;
  expect_float_ok(lumen_filter_convolve(F.ctx, F.in2, &o, &out), &out, "correlate2d_constant", N2, 1e-5);
  lumen_convolve_opts_init(&o);
  o.kernel = k3;
  o.kernel_ndim = 3;
  o.kernel_dims[0] = o.kernel_dims[1] = o.kernel_dims[2] = 3;
  o.mode = LUMEN_BOUNDARY_NEAREST;
  expect_float_ok(lumen_filter_convolve(F.ctx, F.in3, &o, &out), &out, "convolve3d_nearest", N3, 1e-5);
  free(k2);
  free(k3);
}

static void morphology(void **state) {
  (void)state;
  SKIP_IF_NO_GOLDEN();
  const char *ops[5] = {"erode", "dilate", "open", "close", "tophat"};
  for (int op = 0; op < 5; op++) {
    lumen_morph_opts o;
    lumen_morph_opts_init(&o);
    o.op = (lumen_morph_op)op;
    lumen_image *out = NULL;
    char g[64];
    o.element = LUMEN_ELEMENT_DISK;
    o.radius = 2;
    assert_int_equal(lumen_filter_morphology(F.ctx, F.in2, &o, &out), LUMEN_OK);
    snprintf(g, sizeof g, "grey2d_%s_disk2", ops[op]);
    expect_float(out, g, N2, 0.0);
    o.element = LUMEN_ELEMENT_SQUARE;
    o.size = 5;
    assert_int_equal(lumen_filter_morphology(F.ctx, F.in2, &o, &out), LUMEN_OK);
    snprintf(g, sizeof g, "grey2d_%s_square5", ops[op]);
    expect_float(out, g, N2, 0.0);
    o.element = LUMEN_ELEMENT_BALL;
    o.radius = 1;
    assert_int_equal(lumen_filter_morphology(F.ctx, F.in3, &o, &out), LUMEN_OK);
    snprintf(g, sizeof g, "grey3d_%s_ball1", ops[op]);
    expect_float(out, g, N3, 0.0);
    if (op == 4) continue;
    o.binary = 1;
    o.element = LUMEN_ELEMENT_DISK;
    o.radius = 2;
    assert_int_equal(lumen_filter_morphology(F.ctx, F.bin2, &o, &out), LUMEN_OK);
    snprintf(g, sizeof g, "bin2d_%s_disk2", ops[op]);
    expect_u8(out, g, N2);
    o.element = LUMEN_ELEMENT_SQUARE;
    o.size = 3;
    assert_int_equal(lumen_filter_morphology(F.ctx, F.bin2, &o, &out), LUMEN_OK);
    snprintf(g, sizeof g, "bin2d_%s_square3", ops[op]);
    expect_u8(out, g, N2);
    o.element = LUMEN_ELEMENT_BALL;
    o.radius = 1;
    assert_int_equal(lumen_filter_morphology(F.ctx, F.bin3, &o, &out), LUMEN_OK);
    snprintf(g, sizeof g, "bin3d_%s_ball1", ops[op]);
    expect_u8(out, g, N3);
  }
}

static void otsu(void **state) {
  (void)state;
  SKIP_IF_NO_GOLDEN();
  lumen_otsu_opts o;
  lumen_otsu_opts_init(&o);
  double t = 0;
  lumen_image *mask = NULL;
  o.bins = 256;
  assert_int_equal(lumen_filter_otsu(F.ctx, F.in2, &o, &t, &mask), LUMEN_OK);
  assert_true(t == scalar("otsu2d_256"));
  const uint8_t *m = lumen_image_const_data(mask);
  for (int i = 0; i < N2; i++) assert_int_equal(m[i], F.a2[i] > (float)t);
  lumen_image_free(mask);
  assert_int_equal(lumen_filter_otsu(F.ctx, F.in3, &o, &t, NULL), LUMEN_OK);
  assert_true(t == scalar("otsu3d_256"));
  o.bins = 64;
  assert_int_equal(lumen_filter_otsu(F.ctx, F.in2, &o, &t, NULL), LUMEN_OK);
  assert_true(t == scalar("otsu2d_64"));
  float *a12 = load("in2d_12bit", N2 * 4);
  lumen_image *im = NULL;
  const int64_t d2[2] = {NX2, NY2};
  assert_int_equal(lumen_image_wrap(F.ctx, a12, 2, d2, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), &im), LUMEN_OK);
  o.bins = 0; /* auto: data beyond 255 -> 4096 bins */
  assert_int_equal(lumen_filter_otsu(F.ctx, im, &o, &t, NULL), LUMEN_OK);
  assert_true(t == scalar("otsu2d12_4096"));
  lumen_image_free(im);
  free(a12);
}

static void regions(void **state) {
  (void)state;
  SKIP_IF_NO_GOLDEN();
  lumen_region_opts o;
  lumen_region_opts_init(&o);
  lumen_image *out = NULL;
  expect_u8_ok(lumen_filter_fill_holes(F.ctx, F.bin2, &o, &out), &out, "fill2d", N2);
  expect_u8_ok(lumen_filter_fill_holes(F.ctx, F.bin3, &o, &out), &out, "fill3d", N3);
  o.connectivity = 2;
  expect_u8_ok(lumen_filter_fill_holes(F.ctx, F.bin2, &o, &out), &out, "fill2d_full", N2);
  struct {
    const char *g;
    int conn, three;
  } lc[] = {{"label2d_c1", 1, 0}, {"label2d_c2", 2, 0}, {"label3d_c1", 1, 1}, {"label3d_c3", 3, 1}};
  for (int k = 0; k < 4; k++) {
    o.connectivity = lc[k].conn;
    int64_t count = -1;
    int n = lc[k].three ? N3 : N2;
    assert_int_equal(lumen_filter_label(F.ctx, lc[k].three ? F.bin3 : F.bin2, &o, &out, &count), LUMEN_OK);
    assert_int_equal(lumen_image_dtype(out), LUMEN_DTYPE_INT32);
    assert_true((double)count == scalar(lc[k].g));
    int32_t *ref = load(lc[k].g, (size_t)n * 4);
    const int32_t *got = lumen_image_const_data(out);
    for (int i = 0; i < n; i++) assert_int_equal(got[i], ref[i]);
    /* largest component = the most frequent non-zero label (lowest on ties) */
    int64_t *sz = calloc((size_t)count + 1, sizeof *sz);
    for (int i = 0; i < n; i++) sz[ref[i]]++;
    int best = 1;
    for (int l = 2; l <= count; l++)
      if (sz[l] > sz[best]) best = l;
    lumen_image *big = NULL;
    assert_int_equal(lumen_filter_largest_component(F.ctx, lc[k].three ? F.bin3 : F.bin2, &o, &big), LUMEN_OK);
    const uint8_t *bm = lumen_image_const_data(big);
    for (int i = 0; i < n; i++) assert_int_equal(bm[i], ref[i] == best);
    lumen_image_free(big);
    free(sz);
    free(ref);
    lumen_image_free(out);
  }
}

static void sauvola_params(lumen_sauvola_opts *s, int window, double k, double r) {
  s->window = window;
  s->k = k;
  s->r = r;
}

static void bandpass_params(lumen_bandpass_opts *o, double d0, double width, int order) {
  o->d0 = d0;
  o->width = width;
  o->order = order;
}

static void thresholds_and_variance(void **state) {
  (void)state;
  SKIP_IF_NO_GOLDEN();
  lumen_sauvola_opts s;
  lumen_sauvola_opts_init(&s);
  s.output_threshold = 1;
  sauvola_params(&s, 15, 0.2, 0.5);
  lumen_image *out = NULL;
  expect_float_ok(lumen_filter_sauvola(F.ctx, F.in2, &s, &out), &out, "sauvola2d", N2, 1e-5);
  sauvola_params(&s, 5, 0.3, 0.4);
  expect_float_ok(lumen_filter_sauvola(F.ctx, F.in3, &s, &out), &out, "sauvola3d", N3, 1e-5);
  /* mask form: (I > T) * 255 */
  s.output_threshold = 0;
  lumen_image *thr = NULL;
  s.output_threshold = 1;
  assert_int_equal(lumen_filter_sauvola(F.ctx, F.in2, &s, &thr), LUMEN_OK);
  s.output_threshold = 0;
  assert_int_equal(lumen_filter_sauvola(F.ctx, F.in2, &s, &out), LUMEN_OK);
  const float *tv = lumen_image_const_data(thr);
  const uint8_t *mv = lumen_image_const_data(out);
  for (int i = 0; i < N2; i++) assert_int_equal(mv[i], F.a2[i] > tv[i] ? 255 : 0);
  lumen_image_free(thr);
  lumen_image_free(out);

  lumen_local_variance_opts lv;
  lumen_local_variance_opts_init(&lv);
  expect_float_ok(lumen_filter_local_variance(F.ctx, F.in2, &lv, &out), &out, "localvar2d", N2, 1e-6);

  double mean = 0, var = 0;
  assert_int_equal(lumen_filter_variance(F.ctx, F.in2, NULL, &mean, &var), LUMEN_OK);
  lumen_test_assert_close(mean, scalar("mean2d"), 0, 1e-12, "mean");
  lumen_test_assert_close(var, scalar("var2d"), 0, 1e-10, "variance");
}

static void bandpass(void **state) {
  (void)state;
  SKIP_IF_NO_GOLDEN();
  lumen_bandpass_opts o;
  lumen_bandpass_opts_init(&o);
  bandpass_params(&o, 6, 4, 2);
  lumen_image *out = NULL;
  lumen_status s = lumen_filter_bandpass(F.ctx, F.in2, &o, &out);
  if (s == LUMEN_ERR_NOT_BUILT) skip(); /* no FFTW on this machine */
  assert_int_equal(s, LUMEN_OK);
  expect_float(out, "bandpass2d", N2, 2e-5);
  bandpass_params(&o, 3, 2, 3);
  expect_float_ok(lumen_filter_bandpass(F.ctx, F.in3, &o, &out), &out, "bandpass3d", N3, 2e-5);
}

static void entropy_mi(void **state) {
  (void)state;
  SKIP_IF_NO_GOLDEN();
  float *q = load("in2d_q", N2 * 4), *b = load("in2d_b", N2 * 4);
  const int64_t d2[2] = {NX2, NY2};
  lumen_image *qi = NULL, *bi = NULL;
  lumen_image_wrap(F.ctx, q, 2, d2, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), &qi);
  lumen_image_wrap(F.ctx, b, 2, d2, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), &bi);
  lumen_stats_opts o;
  lumen_stats_opts_init(&o);
  double h = 0;
  o.bins = 0;
  assert_int_equal(lumen_filter_entropy(F.ctx, qi, &o, &h), LUMEN_OK);
  lumen_test_assert_close(h, scalar("entropy_distinct_q"), 1e-12, 1e-12, "entropy (distinct)");
  o.bins = 256;
  assert_int_equal(lumen_filter_entropy(F.ctx, F.in2, &o, &h), LUMEN_OK);
  lumen_test_assert_close(h, scalar("entropy_hist256"), 1e-12, 1e-12, "entropy (256 bins)");
  o.bins = 32;
  lumen_mi_result mi;
  assert_int_equal(lumen_filter_mutual_information(F.ctx, F.in2, bi, &o, &mi), LUMEN_OK);
  lumen_test_assert_close(mi.mutual_information, scalar("mi32"), 1e-12, 1e-12, "mutual information");
  lumen_test_assert_close(mi.joint_entropy, scalar("mi32_joint"), 1e-12, 1e-12, "joint entropy");
  lumen_image_free(qi);
  lumen_image_free(bi);
  free(q);
  free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(gaussian_modes),  cmocka_unit_test(gaussian_special), cmocka_unit_test(dog_and_log),
    cmocka_unit_test(median),          cmocka_unit_test(convolution),      cmocka_unit_test(morphology),
    cmocka_unit_test(otsu),            cmocka_unit_test(regions),          cmocka_unit_test(thresholds_and_variance),
    cmocka_unit_test(bandpass),        cmocka_unit_test(entropy_mi),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
