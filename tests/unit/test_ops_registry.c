/* The op registry (include/lumen/ops.h, src/filter/op_table.c): every op found by its name and
   aliases, the descriptors' defaults equal to each lumen_OP_opts_init, lumen_op_run by name bit
   for bit equal to the direct C call, range errors naming the option, and the registry's lower
   bounds refused by the library itself. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_support.h"

/* ------------------------------------------------------------------ names */

static void test_every_op_by_name_and_alias(void **state) {
  (void)state;
  assert_true(lumen_op_count() >= 30);
  for (int k = 0; k < lumen_op_count(); k++) {
    const lumen_op_info *op = lumen_op_at(k);
    assert_non_null(op);
    assert_ptr_equal(lumen_op_find_kind(op->kind, op->name), op);
    assert_non_null(op->doc);
    char aliases[256];
    snprintf(aliases, sizeof aliases, "%s", op->aliases ? op->aliases : "");
    for (char *save = NULL, *a = strtok_r(aliases, " ", &save); a; a = strtok_r(NULL, " ", &save))
      assert_ptr_equal(lumen_op_find_kind(op->kind, a), op);
    for (int j = 0; j < op->n_options; j++)
      assert_ptr_equal(lumen_op_option_find(op, op->options[j].name), &op->options[j]);
  }
  /* the names the CLI, C and Python used before the registry */
  assert_string_equal(lumen_op_find("log")->name, "gaussian_laplace");
  assert_string_equal(lumen_op_find("laplace")->name, "gaussian_laplace");
  assert_string_equal(lumen_op_find("absolute")->name, "abs");
  assert_string_equal(lumen_op_find("region-grow")->name, "region_grow");
  assert_string_equal(lumen_op_find("tophat")->name, "tophat"); /* names before aliases: the segmentation */
  assert_string_equal(lumen_op_find_kind(LUMEN_OP_KIND_FILTER, "tophat")->name, "white_tophat");
  assert_string_equal(lumen_op_option_find(lumen_op_find("dog"), "sigma")->name, "low_sigma");
  assert_string_equal(lumen_op_option_find(lumen_op_find("febds"), "alpha")->name, "variance_alpha");
  assert_string_equal(lumen_op_option_find(lumen_op_find("window"), "centre")->name, "center");
  assert_null(lumen_op_find("sharpen"));
  assert_null(lumen_op_find(NULL));
  assert_null(lumen_op_at(-1));
  assert_null(lumen_op_at(lumen_op_count()));
  assert_true(lumen_op_has_cuda(lumen_op_find("gaussian")) == lumen_filter_op_has_cuda("gaussian"));
  assert_int_equal(lumen_op_has_cuda(lumen_op_find("grail")), 0);
}

/* ------------------------------------------------------------------ defaults */

/* the public init of every op's options, called directly */
static int public_init(const char *name, void *o) {
  const lumen_op_info *op = lumen_op_find(name);
  if (!strcmp(name, "gaussian")) lumen_gaussian_opts_init(o);
  else if (!strcmp(name, "dog")) lumen_dog_opts_init(o);
  else if (!strcmp(name, "gaussian_laplace")) lumen_laplace_opts_init(o);
  else if (!strcmp(name, "median")) lumen_median_opts_init(o);
  else if (!strcmp(name, "gamma")) lumen_gamma_opts_init(o);
  else if (!strcmp(name, "abs")) lumen_abs_opts_init(o);
  else if (!strcmp(name, "contrast")) lumen_contrast_opts_init(o);
  else if (!strcmp(name, "convolve")) lumen_convolve_opts_init(o);
  else if (!strcmp(name, "bandpass")) lumen_bandpass_opts_init(o);
  else if (!strcmp(name, "otsu")) lumen_otsu_opts_init(o);
  else if (!strcmp(name, "sauvola")) lumen_sauvola_opts_init(o);
  else if (!strcmp(name, "local_variance") || !strcmp(name, "variance_binarize")) lumen_local_variance_opts_init(o);
  else if (op->entry && !strcmp(op->entry, "lumen_filter_morphology")) {
    lumen_morph_opts_init(o);
    static const char *const ops[] = {"erode", "dilate", "open", "close", "white_tophat"};
    for (int k = 0; k < 5; k++)
      if (!strcmp(name, ops[k])) ((lumen_morph_opts *)o)->op = (lumen_morph_op)k;
  } else if (!strcmp(name, "fill_holes") || !strcmp(name, "label") || !strcmp(name, "largest_component"))
    lumen_region_opts_init(o);
  else if (op->kind == LUMEN_OP_KIND_STATISTIC) lumen_stats_opts_init(o);
  else if (!strcmp(name, "febds")) lumen_febds_opts_init(o);
  else if (!strcmp(name, "tophat")) lumen_tophat_opts_init(o);
  else if (!strcmp(name, "kmeans")) lumen_kmeans_opts_init(o);
  else if (!strcmp(name, "fcm") || !strcmp(name, "pfcm")) lumen_fcm_opts_init(o);
  else if (!strcmp(name, "region_grow")) lumen_region_grow_opts_init(o);
  else if (!strcmp(name, "breast_mask")) lumen_breast_mask_opts_init(o);
  else if (!strcmp(name, "window")) lumen_window_opts_init(o);
  else if (!strcmp(name, "normalize_bits")) lumen_bits_opts_init(o);
  else if (!strcmp(name, "grail")) lumen_grail_opts_init(o);
  else return 0;
  return 1;
}

static void test_defaults_equal_opts_init(void **state) {
  (void)state;
  for (int k = 0; k < lumen_op_count(); k++) {
    const lumen_op_info *op = lumen_op_at(k);
    unsigned char mine[1024], theirs[1024];
    memset(theirs, 0, sizeof theirs);
    assert_true(op->opts_size <= sizeof mine);
    if (!public_init(op->name, theirs)) {
      /* a one-file op (src/filter/ops/) has no public init nor entry: its defaults are its row's,
         still held to its own ranges below (its values: its own test) */
      assert_null(op->entry);
      assert_int_equal(lumen_op_opts_init(op, theirs, sizeof theirs), LUMEN_OK);
    }
    assert_int_equal(lumen_op_opts_init(op, mine, sizeof mine), LUMEN_OK);
    assert_memory_equal(mine, theirs, op->opts_size);
    for (int j = 0; j < op->n_options; j++) {
      const lumen_op_option *o = &op->options[j];
      double d = -12345;
      assert_int_equal(lumen_op_option_default(op, j, &d), LUMEN_OK);
      double want = 0;
      if (o->type == LUMEN_OPT_DOUBLE || o->type == LUMEN_OPT_DOUBLE3) memcpy(&want, theirs + o->offset, sizeof want);
      else if (o->type == LUMEN_OPT_UINT64) {
        uint64_t u;
        memcpy(&u, theirs + o->offset, sizeof u);
        want = (double)u;
      } else if (o->type == LUMEN_OPT_INT || o->type == LUMEN_OPT_BOOL || o->type == LUMEN_OPT_ENUM) {
        int i;
        memcpy(&i, theirs + o->offset, sizeof i);
        want = i;
      }
      if (isnan(want)) assert_true(isnan(d));
      else if (d != want) fail_msg("%s.%s: registry default %g, opts_init %g", op->name, o->name, d, want);
      /* every default is a value its own range accepts */
      if (o->type <= LUMEN_OPT_DOUBLE3 && !lumen_op_option_value_ok(o, d))
        fail_msg("%s.%s: default %g outside its own range", op->name, o->name, d);
    }
  }
  double v;
  assert_int_equal(lumen_op_option_default(lumen_op_find("gaussian"), 0, &v), LUMEN_OK);
  assert_true(v == 1.0); /* filter.h: sigma default 1.0 */
  assert_int_equal(lumen_op_option_default(lumen_op_find("median"), 0, &v), LUMEN_OK);
  assert_true(v == 3.0);
}

/* ------------------------------------------------------------------ by name == direct */

static lumen_image *test_image(lumen_ctx *ctx) {
  int64_t dims[2] = {24, 20};
  lumen_image *im = lumen_test_image(ctx, 2, dims, LUMEN_DTYPE_FLOAT32);
  float *p = lumen_image_data(im);
  for (int64_t i = 0; i < 24 * 20; i++) {
    int64_t x = i % 24, y = i / 24;
    p[i] = (float)(100.0 + 60.0 * sin(0.5 * x) * cos(0.3 * y) + ((x - 12) * (x - 12) + (y - 9) * (y - 9) < 16 ? 900 : 0));
  }
  return im;
}

static void same_result(lumen_ctx *ctx, const char *name, const char *text, lumen_status sd, lumen_image *direct,
                        double scalar_direct, const lumen_image *in) {
  lumen_image *byname = NULL;
  double scalar = 0;
  lumen_status s = lumen_op_run(ctx, name, in, text, &byname, &scalar);
  if (s != sd) fail_msg("%s '%s': by name %s, direct %s (%s)", name, text, lumen_status_name(s), lumen_status_name(sd),
                        lumen_ctx_last_error(ctx));
  if (sd == LUMEN_OK && lumen_op_find(name)->output != LUMEN_OP_OUTPUT_NONE) {
    lumen_test_assert_images_equal(byname, direct);
  }
  if (!isnan(scalar_direct) || !isnan(scalar)) assert_true(scalar == scalar_direct);
  lumen_image_free(byname);
  lumen_image_free(direct);
}

/* s = fn(ctx, in, o, the outputs given) when the entry e names fn */
#define CALL_NAMED(fn, ...) \
  if (!strcmp(e, #fn)) s = fn(ctx, in, (void *)o, __VA_ARGS__)
/* The entries called as fn(ctx, in, opts, &out); CALL_IMAGE_TO_IMAGE chains their calls with
   "else", so that a list of them goes before the first CALL_NAMED. */
#define IMAGE_TO_IMAGE_ENTRIES(X)                                                           \
  X(lumen_filter_gaussian) X(lumen_filter_dog) X(lumen_filter_gaussian_laplace)             \
  X(lumen_filter_median) X(lumen_filter_gamma) X(lumen_filter_abs) X(lumen_filter_contrast) \
  X(lumen_filter_bandpass) X(lumen_filter_sauvola) X(lumen_filter_local_variance)           \
  X(lumen_filter_variance_binarize) X(lumen_filter_morphology) X(lumen_filter_fill_holes)   \
  X(lumen_filter_largest_component) X(lumen_segment_tophat) X(lumen_segment_region_grow)    \
  X(lumen_segment_breast_mask) X(lumen_segment_window)
#define CALL_IMAGE_TO_IMAGE(fn) CALL_NAMED(fn, &out); else

static void test_run_by_name_equals_direct(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *in = test_image(ctx), *out = NULL;
  lumen_status s;
  double nan = NAN;
  int checked = 0;
  /* every runnable op with its defaults: the direct call with the public init */
  for (int k = 0; k < lumen_op_count(); k++) {
    const lumen_op_info *op = lumen_op_at(k);
    if (!strcmp(op->name, "mutual_information") || !strcmp(op->name, "convolve")) continue; /* below */
    unsigned char o[1024];
    memset(o, 0, sizeof o);
    public_init(op->name, o);
    double v = NAN;
    out = NULL;
    s = LUMEN_ERR_INTERNAL;
    const char *e = op->entry;
    if (!e) continue; /* a one-file op: reached by name only (its own test) */
    IMAGE_TO_IMAGE_ENTRIES(CALL_IMAGE_TO_IMAGE)
    CALL_NAMED(lumen_filter_otsu, &v, &out);
    else if (!strcmp(e, "lumen_filter_label")) {
      int64_t n = 0;
      s = lumen_filter_label(ctx, in, (void *)o, &out, &n);
      v = (double)n;
    } else CALL_NAMED(lumen_filter_entropy, &v);
    else CALL_NAMED(lumen_filter_variance, NULL, &v);
    else CALL_NAMED(lumen_segment_febds, &out, &v);
    else CALL_NAMED(lumen_segment_kmeans, &out, NULL);
    else CALL_NAMED(lumen_segment_fcm, &out, NULL);
    else CALL_NAMED(lumen_segment_pfcm, &out, NULL);
    else if (!strcmp(e, "lumen_segment_normalize_bits")) {
      int bits = 0;
      s = lumen_segment_normalize_bits(ctx, in, (void *)o, &out, &bits);
      v = bits;
    } else CALL_NAMED(lumen_segment_grail, &out, NULL);
    else fail_msg("%s: no direct call in this test", op->name);
    if (s == LUMEN_ERR_NOT_BUILT) { /* bandpass without FFTW: both say so */
      same_result(ctx, op->name, "", s, out, nan, in);
      continue;
    }
    if (s != LUMEN_OK) fail_msg("%s direct: %s", op->name, lumen_ctx_last_error(ctx));
    same_result(ctx, op->name, "", s, out, v, in);
    checked++;
  }
  assert_true(checked >= 28);

  /* options by name: the same fields set directly */
  lumen_gaussian_opts g;
  lumen_gaussian_opts_init(&g);
  g.sigma = 2.5;
  g.mode = LUMEN_BOUNDARY_REFLECT;
  g.sigma_axis[1] = 1.5;
  s = lumen_filter_gaussian(ctx, in, &g, &out);
  same_result(ctx, "gaussian", "sigma=2.5 mode=reflect; sigma_axis=0,1.5", s, out, nan, in);
  lumen_dog_opts d;
  lumen_dog_opts_init(&d);
  d.low_sigma = 1.2; /* dog's --sigma is its low sigma */
  d.high_sigma = 3;
  s = lumen_filter_dog(ctx, in, &d, &out);
  same_result(ctx, "dog", "sigma=1.2 high-sigma=3", s, out, nan, in);
  lumen_morph_opts m;
  lumen_morph_opts_init(&m);
  m.op = LUMEN_MORPH_CLOSE;
  m.element = LUMEN_ELEMENT_SQUARE;
  m.size = 3;
  m.binary = 1;
  s = lumen_filter_morphology(ctx, in, &m, &out);
  same_result(ctx, "closing", "element=square size=3 binary", s, out, nan, in);
  s = lumen_filter_morphology(ctx, in, &m, &out); /* before the call: its arguments' order is unspecified */
  same_result(ctx, "morphology", "op=close element=square size=3 binary=true", s, out, nan, in);
  lumen_kmeans_opts km;
  lumen_kmeans_opts_init(&km);
  km.k = 3;
  km.output = LUMEN_CLUSTER_LABELS;
  km.seed = 7;
  s = lumen_segment_kmeans(ctx, in, &km, &out, NULL);
  same_result(ctx, "kmeans", "k=3 labels seed=7", s, out, nan, in);
  lumen_febds_opts fb;
  lumen_febds_opts_init(&fb);
  fb.method = LUMEN_FEBDS_LOG;
  fb.fill_holes = 0;
  double thr = 0;
  s = lumen_segment_febds(ctx, in, &fb, &out, &thr);
  same_result(ctx, "febds", "method=log no_fill_holes", s, out, thr, in);
  static const float kern[6] = {1, 2, 1, 0, -1, 3};
  lumen_convolve_opts cv = lumen_test_convolve_2d(kern, 3, 2);
  cv.kernel_dims[2] = 1;
  s = lumen_filter_convolve(ctx, in, &cv, &out);
  same_result(ctx, "convolve", "kernel=1,2,1,0,-1,3 kernel_dims=3,2", s, out, nan, in);
  cv.kernel_ndim = 1;
  cv.kernel_dims[0] = 6;
  cv.kernel_dims[1] = 1;
  s = lumen_filter_convolve(ctx, in, &cv, &out);
  same_result(ctx, "convolve", "kernel=1,2,1,0,-1,3", s, out, nan, in); /* 1-D of every value */
  int64_t seeds[2] = {12, 9};
  lumen_region_grow_opts rg;
  lumen_region_grow_opts_init(&rg);
  rg.seeds = seeds;
  rg.n_seeds = 1;
  rg.threshold = 500;
  s = lumen_segment_region_grow(ctx, in, &rg, &out);
  same_result(ctx, "region_grow", "seed_point=12,9 threshold=500", s, out, nan, in);
  lumen_image_free(in);
}

/* ------------------------------------------------------------------ errors */

static void expect_error(lumen_ctx *ctx, const lumen_image *in, const char *op, const char *text, const char *message) {
  lumen_image *out = (lumen_image *)&out; /* cleared on failure */
  lumen_status s = lumen_op_run(ctx, op, in, text, &out, NULL);
  assert_int_equal(s, LUMEN_ERR_INVALID_ARGUMENT);
  assert_null(out);
  if (!strstr(lumen_ctx_last_error(ctx), message))
    fail_msg("%s '%s': message '%s', expected it to say '%s'", op, text, lumen_ctx_last_error(ctx), message);
}

static void test_range_errors(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *in = test_image(ctx);
  expect_error(ctx, in, "gaussian", "sigma=-1", "gaussian: sigma is -1, expected > 0");
  expect_error(ctx, in, "median", "size=4", "median: size is 4, expected an odd size 1..255");
  expect_error(ctx, in, "otsu", "bins=-3", "otsu: bins is -3, expected 0 or 1..16777216");
  expect_error(ctx, in, "kmeans", "k=17", "kmeans: k is 17, expected 2..16");
  expect_error(ctx, in, "pfcm", "tau=0", "pfcm: tau is 0, expected in (0, 1]");
  expect_error(ctx, in, "gaussian", "mode=sideways", "mode is 'sideways', expected reflect, nearest, constant, wrap or mirror");
  expect_error(ctx, in, "gaussian", "sigma=abc", "sigma is 'abc', expected a number");
  expect_error(ctx, in, "median", "size=2.5", "size is 2.5");
  expect_error(ctx, in, "gaussian", "sigmaa=2", "gaussian: unknown option 'sigmaa'");
  expect_error(ctx, in, "gaussian", "no_sigma", "unknown option 'no_sigma'");
  expect_error(ctx, in, "blur", "", "op 'blur' is unknown, expected one of gaussian");
  expect_error(ctx, in, "convolve", "kernel=1,2,1 kernel_dims=2,2", "expected 4");
  expect_error(ctx, in, "convolve", "kernel=1,x", "kernel is '1,x'");
  expect_error(ctx, in, "region_grow", "seed_point=1,2,3", "seeds have 3 coordinates, expected 2");
  expect_error(ctx, in, "region_grow", "seed_point=1,2 seed_point=1,2,3", "coordinates as the first point");
  expect_error(ctx, in, "kmeans", "seed=-1", "an integer from 0 to 2^64-1");
  expect_error(ctx, in, "gaussian", "precision=double", "expected full, half or bfloat16");
  expect_error(ctx, in, "mutual_information", "", "takes two images");
  /* within range but refused by the library when run (dog: high_sigma > low_sigma) */
  lumen_image *out = NULL;
  assert_int_equal(lumen_op_run(ctx, "dog", in, "low_sigma=2 high_sigma=1", &out, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_null(out);
  /* key/value arrays */
  const char *keys[] = {"sigma", "device"}, *vals[] = {"2", "cpu"};
  assert_int_equal(lumen_op_run_kv(ctx, "gaussian", in, 2, keys, vals, &out, NULL), LUMEN_OK);
  assert_non_null(out);
  lumen_image_free(out);
  char range[128];
  lumen_op_option_range_text(lumen_op_option_find(lumen_op_find("window"), "width"), range, sizeof range);
  assert_string_equal(range, "auto (nan) or > 0");
  lumen_image_free(in);
}

/* every lower bound of the registry is one the library refuses too: the value just under it,
   set straight into the options struct, fails with INVALID_ARGUMENT */
static void test_lower_bounds_match_the_library(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *in = test_image(ctx);
  int checked = 0;
  for (int k = 0; k < lumen_op_count(); k++) {
    const lumen_op_info *op = lumen_op_at(k);
    if (!strcmp(op->name, "mutual_information") || !strcmp(op->name, "convolve")) continue;
    for (int j = 0; j < op->n_options; j++) {
      const lumen_op_option *o = &op->options[j];
      if ((o->type != LUMEN_OPT_INT && o->type != LUMEN_OPT_DOUBLE) || !isfinite(o->min)) continue;
      double bad = o->flags & LUMEN_OPT_MIN_OPEN ? o->min : o->type == LUMEN_OPT_INT ? o->min - 1 : o->min - 0.5;
      if (bad == 0 && (o->flags & LUMEN_OPT_ZERO_OK)) bad = -1;
      unsigned char buf[1024];
      lumen_op_opts_init(op, buf, sizeof buf);
      if (o->type == LUMEN_OPT_INT) {
        int i = (int)bad;
        memcpy(buf + o->offset, &i, sizeof i);
      } else {
        memcpy(buf + o->offset, &bad, sizeof bad);
      }
      if (op->entry && !strcmp(op->entry, "lumen_filter_morphology") && !strcmp(o->name, "size"))
        ((lumen_morph_opts *)(void *)buf)->element = LUMEN_ELEMENT_SQUARE; /* size is the square's */
      if (!strcmp(op->name, "febds") && (!strncmp(o->name, "fft_", 4) || !strncmp(o->name, "variance_", 9)))
        ((lumen_febds_opts *)(void *)buf)->method = LUMEN_FEBDS_FFT; /* the fft method's options */
      lumen_image *out = NULL;
      lumen_status s = lumen_op_run_opts(ctx, op, in, buf, &out, NULL);
      lumen_image_free(out);
      if (s == LUMEN_ERR_NOT_BUILT) continue; /* no FFTW: the fft options cannot be tried */
      /* where the registry is stricter on purpose: FEBDS reads a negative fft_pad as 0 (none) */
      if (s == LUMEN_OK && !strcmp(op->name, "febds") && !strcmp(o->name, "fft_pad")) continue;
      if (s != LUMEN_ERR_INVALID_ARGUMENT)
        fail_msg("%s.%s = %g (under the registry's range): the library says %s", op->name, o->name, bad,
                 lumen_status_name(s));
      checked++;
    }
  }
  assert_true(checked >= 60);
  lumen_image_free(in);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_op_by_name_and_alias),
    cmocka_unit_test(test_defaults_equal_opts_init),
    LUMEN_TEST_WITH_CTX(test_run_by_name_equals_direct),
    LUMEN_TEST_WITH_CTX(test_range_errors),
    LUMEN_TEST_WITH_CTX(test_lower_bounds_match_the_library),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
