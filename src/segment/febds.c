/* Filter-composed algorithms: FEBDS microcalcification segmentation, white top-hat detection and
 * the breast mask. Every step is a filter op run on the algorithm's device (seg_run.step). */
#include <math.h>
#include <string.h>
#include "segment/seg_internal.h"

static const char *const method_names[LUMEN_FEBDS_METHOD_COUNT] = {"dog", "log", "fft"};

const char *lumen_febds_method_name(lumen_febds_method method) {
  return (int)method >= 0 && method < LUMEN_FEBDS_METHOD_COUNT ? method_names[method] : "unknown";
}

lumen_status lumen_febds_method_parse(lumen_ctx *ctx, const char *name, lumen_febds_method *out) {
  if (!out) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_febds_method_parse: out is NULL");
  for (int i = 0; name && i < LUMEN_FEBDS_METHOD_COUNT; i++)
    if (strcmp(name, method_names[i]) == 0) {
      *out = (lumen_febds_method)i;
      return LUMEN_OK;
    }
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "FEBDS method '%s' is unknown, expected one of dog, log, fft", name ? name : "(null)");
}

/* The options of a NULL opts: those the _init functions below give. */
static const lumen_febds_opts febds_defaults = {
    .exec = SEG_DEFAULT_EXEC, .method = LUMEN_FEBDS_DOG, .dog_low_sigma = 1.7, .dog_high_sigma = 2.0, .log_sigma = 2.0,
    .fft_d0 = 21.0, .fft_width = 32.0, .fft_order = 3, .fft_pad = 32, .median_size = 5, .gamma = 1.25,
    .gamma_max = 4095.0, .variance_alpha = 1.0, .variance_window = 5, .otsu_bins = 0, .closing_size = 7,
    .fill_holes = 1, .spatial_dims = 2};
static const lumen_tophat_opts tophat_defaults = {
    .exec = SEG_DEFAULT_EXEC, .radius = 4, .output_mask = 0, .spatial_dims = 2};
static const lumen_breast_mask_opts breast_mask_defaults = {
    .exec = SEG_DEFAULT_EXEC, .otsu_bins = 0, .connectivity = 1, .fill_holes = 0, .spatial_dims = 2};

SEG_DEFINE_OPTS_INIT(lumen_febds_opts, febds_defaults)
SEG_DEFINE_OPTS_INIT(lumen_tophat_opts, tophat_defaults)
SEG_DEFINE_OPTS_INIT(lumen_breast_mask_opts, breast_mask_defaults)

static lumen_status check_image(lumen_ctx *ctx, const char *fn, const lumen_image *in) {
  LUMEN_REQUIRE(ctx, in != NULL, "%s: in is NULL", fn);
  LUMEN_REQUIRE(ctx, lumen_image_ndim(in) >= 2, "%s: the image has %d dimension(s), expected 2-D or 3-D", fn,
                lumen_image_ndim(in));
  LUMEN_REQUIRE(ctx, lumen_image_count(in) > 0, "%s: the image is empty, expected at least one voxel", fn);
  return LUMEN_OK;
}

/* A 2-D image extended by pad pixels on every side with whole-sample symmetry (MIRROR), as a
   float32 host image, so that the periodic FFT sees no step between opposite borders. */
static lumen_status pad_mirror(lumen_ctx *ctx, const lumen_image *in, int pad, lumen_image **out) {
  lumen_image *tmp = NULL;
  const float *x;
  lumen_status s = seg_host_f32(ctx, in, &tmp, &x);
  if (s != LUMEN_OK) return s;
  int64_t nx = lumen_image_dim(in, 0), ny = lumen_image_dim(in, 1);
  int64_t px = pad < nx ? pad : nx - 1, py = pad < ny ? pad : ny - 1;
  int64_t dims[2] = {nx + 2 * px, ny + 2 * py};
  s = lumen_image_create(ctx, 2, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, out);
  if (s == LUMEN_OK) {
    float *p = lumen_image_data(*out);
    for (int64_t y = 0; y < dims[1]; y++) {
      int64_t sy = y - py;
      sy = sy < 0 ? -sy : sy >= ny ? 2 * (ny - 1) - sy : sy;
      for (int64_t xx = 0; xx < dims[0]; xx++) {
        int64_t sx = xx - px;
        sx = sx < 0 ? -sx : sx >= nx ? 2 * (nx - 1) - sx : sx;
        p[y * dims[0] + xx] = x[sy * nx + sx];
      }
    }
  }
  lumen_image_free(tmp);
  return s;
}

/* The centre of a padded image (see pad_mirror), float32 host, with the geometry of like. */
static lumen_status crop_pad(lumen_ctx *ctx, lumen_image **paddedp, int pad, const lumen_image *like,
                             lumen_image **out) {
  lumen_status s = seg_own_f32(ctx, paddedp);
  const lumen_image *padded = *paddedp;
  if (s != LUMEN_OK) return s;
  int64_t nx = lumen_image_dim(like, 0), ny = lumen_image_dim(like, 1), wx = lumen_image_dim(padded, 0);
  int64_t px = pad < nx ? pad : nx - 1, py = pad < ny ? pad : ny - 1;
  s = seg_new_like(ctx, like, LUMEN_DTYPE_FLOAT32, 0, out);
  if (s != LUMEN_OK) return s;
  const float *src = lumen_image_const_data(padded);
  float *dst = lumen_image_data(*out);
  for (int64_t y = 0; y < ny; y++) memcpy(dst + y * nx, src + (y + py) * wx + px, (size_t)nx * sizeof(float));
  return LUMEN_OK;
}

/* Folds a filter step's report into the run when it succeeded; returns its status. */
static lumen_status step_done(seg_run *run, lumen_status s) {
  if (s == LUMEN_OK) seg_step_done(run);
  return s;
}

/* What every FEBDS step sees: the call, its options, and whether it works on the volume. */
typedef struct {
  lumen_ctx *ctx;
  seg_run *run;
  const lumen_febds_opts *o;
  int vol;
  double *thr;  /* the Otsu threshold (NaN for the variance threshold of fft); may be NULL */
} febds_pass;

/* fft: the bandpass, on a mirror-padded copy of a 2-D image when fft_pad > 0 */
static lumen_status febds_bandpass(const febds_pass *p, const lumen_image *in, lumen_image **out) {
  const lumen_febds_opts *o = p->o;
  lumen_bandpass_opts d;
  lumen_bandpass_opts_init(&d);
  d.exec = p->run->step;
  d.d0 = o->fft_d0;
  d.width = o->fft_width;
  d.order = o->fft_order;
  if (!(o->fft_pad > 0 && !p->vol)) return step_done(p->run, lumen_filter_bandpass(p->ctx, in, &d, out));
  lumen_image *padded = NULL, *filtered = NULL;
  lumen_status s = pad_mirror(p->ctx, in, o->fft_pad, &padded);
  if (s == LUMEN_OK) s = step_done(p->run, lumen_filter_bandpass(p->ctx, padded, &d, &filtered));
  lumen_image_free(padded);
  if (s == LUMEN_OK) s = crop_pad(p->ctx, &filtered, o->fft_pad, in, out);
  lumen_image_free(filtered);
  return s;
}

/* 1. enhance: difference of Gaussians, Laplacian of Gaussian or the FFT bandpass */
static lumen_status febds_enhance(const febds_pass *p, const lumen_image *in, lumen_image **out) {
  const lumen_febds_opts *o = p->o;
  if (o->method == LUMEN_FEBDS_DOG) {
    lumen_dog_opts d;
    lumen_dog_opts_init(&d);
    d.exec = p->run->step;
    d.low_sigma = o->dog_low_sigma;
    d.high_sigma = o->dog_high_sigma;
    d.mode = LUMEN_BOUNDARY_NEAREST;
    return step_done(p->run, lumen_filter_dog(p->ctx, in, &d, out));
  }
  if (o->method == LUMEN_FEBDS_LOG) {
    lumen_laplace_opts d;
    lumen_laplace_opts_init(&d);
    d.exec = p->run->step;
    d.sigma = o->log_sigma;
    d.mode = LUMEN_BOUNDARY_NEAREST;
    d.discrete = 1;
    return step_done(p->run, lumen_filter_gaussian_laplace(p->ctx, in, &d, out));
  }
  return febds_bandpass(p, in, out);
}

/* 2-4. absolute value, median, gamma */
static lumen_status febds_condition(const febds_pass *p, const lumen_image *a, lumen_image **out) {
  lumen_abs_opts ab;
  lumen_abs_opts_init(&ab);
  ab.exec = p->run->step;
  lumen_median_opts md;
  lumen_median_opts_init(&md);
  md.exec = p->run->step;
  md.size = p->o->median_size;
  md.mode = LUMEN_BOUNDARY_REFLECT;
  lumen_gamma_opts gm;
  lumen_gamma_opts_init(&gm);
  gm.exec = p->run->step;
  gm.gamma = p->o->gamma;
  gm.max_value = p->o->gamma_max;
  lumen_image *absolute = NULL, *median = NULL;
  lumen_status s = step_done(p->run, lumen_filter_abs(p->ctx, a, &ab, &absolute));
  if (s == LUMEN_OK) s = step_done(p->run, lumen_filter_median(p->ctx, absolute, &md, &median));
  lumen_image_free(absolute);
  if (s == LUMEN_OK) s = step_done(p->run, lumen_filter_gamma(p->ctx, median, &gm, out));
  lumen_image_free(median);
  return s;
}

/* 5. threshold: local variance for fft, Otsu otherwise */
static lumen_status febds_threshold(const febds_pass *p, const lumen_image *a, lumen_image **b) {
  lumen_status s;
  if (p->o->method == LUMEN_FEBDS_FFT) {
    lumen_local_variance_opts d;
    lumen_local_variance_opts_init(&d);
    d.exec = p->run->step;
    d.window = p->o->variance_window;
    d.alpha = p->o->variance_alpha;
    d.mode = LUMEN_BOUNDARY_MIRROR;
    s = step_done(p->run, lumen_filter_variance_binarize(p->ctx, a, &d, b));
    if (p->thr) *p->thr = NAN;
  } else {
    lumen_otsu_opts d;
    lumen_otsu_opts_init(&d);
    d.exec = p->run->step;
    d.bins = p->o->otsu_bins;
    double t = NAN;
    s = step_done(p->run, lumen_filter_otsu(p->ctx, a, &d, &t, b));
    if (p->thr) *p->thr = t;
  }
  return s;
}

/* 6. closing (closing_size 0: none, *b stays NULL) */
static lumen_status febds_closing(const febds_pass *p, const lumen_image *a, lumen_image **b) {
  if (p->o->closing_size <= 0) return LUMEN_OK;
  lumen_morph_opts d;
  lumen_morph_opts_init(&d);
  d.exec = p->run->step;
  d.op = LUMEN_MORPH_CLOSE;
  d.element = p->vol ? LUMEN_ELEMENT_CUBE : LUMEN_ELEMENT_SQUARE;
  d.size = p->o->closing_size;
  d.binary = 1;
  return step_done(p->run, lumen_filter_morphology(p->ctx, a, &d, b));
}

/* 7. hole filling (fill_holes 0: none, *b stays NULL) */
static lumen_status febds_fill(const febds_pass *p, const lumen_image *a, lumen_image **b) {
  if (!p->o->fill_holes) return LUMEN_OK;
  lumen_region_opts d;
  lumen_region_opts_init(&d);
  d.exec = p->run->step;
  d.connectivity = 1;
  return step_done(p->run, lumen_filter_fill_holes(p->ctx, a, &d, b));
}

/* The end of a chain of steps: its last image to *out, or freed when a step failed. */
static lumen_status finish_chain(lumen_status s, lumen_image *last, lumen_image **out) {
  if (s != LUMEN_OK) {
    lumen_image_free(last);
    return s;
  }
  *out = last;
  return LUMEN_OK;
}

static lumen_status febds_one(lumen_ctx *ctx, seg_run *run, const void *vopts, const lumen_image *in,
                              lumen_image **out, double *thr) {
  typedef lumen_status (*febds_step)(const febds_pass *p, const lumen_image *a, lumen_image **b);
  static const febds_step steps[] = {febds_condition, febds_threshold, febds_closing, febds_fill};
  const lumen_febds_opts *o = vopts;
  const febds_pass p = {ctx, run, o, lumen_image_ndim(in) >= 3 && o->spatial_dims == 3, thr};
  lumen_image *a = NULL;
  lumen_status s = febds_enhance(&p, in, &a);
  if (s != LUMEN_OK) return s;
  for (size_t i = 0; s == LUMEN_OK && i < sizeof steps / sizeof steps[0]; i++) {
    lumen_image *b = NULL;
    s = steps[i](&p, a, &b);
    if (s != LUMEN_OK || b) { /* the step ran: its result replaces a */
      lumen_image_free(a);
      a = b;
    }
  }
  return finish_chain(s, a, out);
}

/* The algorithms below run per slice (or on the volume with spatial_dims 3). */
typedef struct {
  const char *fn, *name, *out_name;  /* "lumen_segment_febds", its report name, "mask" or "out" */
  lumen_status (*check)(lumen_ctx *ctx, const char *fn, const void *opts);
  seg_slice_fn one;
} slice_algorithm;

/* A public call: start the run, check the image and the options, run every slice, keep the geometry. */
static lumen_status run_slices(lumen_ctx *ctx, const slice_algorithm *alg, const lumen_image *in, const void *opts,
                               const lumen_filter_exec *exec, int spatial_dims, lumen_image **out, double *scalar) {
  seg_run run;
  lumen_status s = seg_start(ctx, &run, alg->fn, alg->name, exec, in, out, alg->out_name);
  if (s != LUMEN_OK) return s;
  if ((s = check_image(ctx, alg->fn, in)) == LUMEN_OK) s = alg->check(ctx, alg->fn, opts);
  if (s == LUMEN_OK && !(spatial_dims == 0 || spatial_dims == 2 || spatial_dims == 3))
    s = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: spatial_dims is %d, expected 2 (per slice) or 3 (volume)",
                   alg->fn, spatial_dims);
  if (s == LUMEN_OK) s = seg_per_slice(ctx, &run, opts, in, spatial_dims == 3 ? 3 : 2, alg->one, out, scalar);
  if (s == LUMEN_OK) seg_copy_geometry(*out, in);
  return seg_end(&run, s);
}

static lumen_status check_febds(lumen_ctx *ctx, const char *fn, const void *opts) {
  const lumen_febds_opts *o = opts;
  LUMEN_REQUIRE(ctx, (int)o->method >= 0 && o->method < LUMEN_FEBDS_METHOD_COUNT,
                "%s: method is %d, expected one of dog (%d), log (%d), fft (%d)", fn, (int)o->method, LUMEN_FEBDS_DOG,
                LUMEN_FEBDS_LOG, LUMEN_FEBDS_FFT);
  LUMEN_REQUIRE(ctx, o->dog_low_sigma > 0 && isfinite(o->dog_low_sigma), "%s: dog_low_sigma is %g, expected > 0", fn,
                o->dog_low_sigma);
  LUMEN_REQUIRE(ctx, o->dog_high_sigma > o->dog_low_sigma && isfinite(o->dog_high_sigma),
                "%s: dog_high_sigma is %g, expected > dog_low_sigma (%g)", fn, o->dog_high_sigma, o->dog_low_sigma);
  LUMEN_REQUIRE(ctx, o->log_sigma > 0 && isfinite(o->log_sigma), "%s: log_sigma is %g, expected > 0", fn, o->log_sigma);
  LUMEN_REQUIRE(ctx, o->median_size >= 1 && o->median_size % 2 == 1,
                "%s: median_size is %d, expected an odd size >= 1", fn, o->median_size);
  LUMEN_REQUIRE(ctx, o->gamma > 0 && isfinite(o->gamma), "%s: gamma is %g, expected > 0", fn, o->gamma);
  LUMEN_REQUIRE(ctx, o->gamma_max > 0 && isfinite(o->gamma_max), "%s: gamma_max is %g, expected > 0", fn, o->gamma_max);
  LUMEN_REQUIRE(ctx, o->closing_size == 0 || (o->closing_size >= 1 && o->closing_size % 2 == 1),
                "%s: closing_size is %d, expected 0 (none) or an odd size", fn, o->closing_size);
  LUMEN_REQUIRE(ctx, o->variance_window >= 1 && o->variance_window % 2 == 1,
                "%s: variance_window is %d, expected an odd window >= 1", fn, o->variance_window);
  return LUMEN_OK;
}

lumen_status lumen_segment_febds(lumen_ctx *ctx, const lumen_image *in, const lumen_febds_opts *opts,
                                 lumen_image **mask, double *threshold) {
  static const slice_algorithm alg = {"lumen_segment_febds", "febds", "mask", check_febds, febds_one};
  if (threshold) *threshold = NAN;
  const lumen_febds_opts *o = opts ? opts : &febds_defaults;
  return run_slices(ctx, &alg, in, o, &o->exec, o->spatial_dims, mask, threshold);
}

/* ------------------------------------------------------------------ top-hat */

static lumen_status tophat_one(lumen_ctx *ctx, seg_run *run, const void *vopts, const lumen_image *in,
                               lumen_image **out, double *unused) {
  (void)unused;
  const lumen_tophat_opts *o = vopts;
  int vol = lumen_image_ndim(in) >= 3 && o->spatial_dims == 3;
  lumen_image *a = NULL, *b = NULL;
  lumen_status s;
  lumen_morph_opts d;
  lumen_morph_opts_init(&d);
  d.exec = run->step;
  d.op = LUMEN_MORPH_TOPHAT;
  d.element = vol ? LUMEN_ELEMENT_BALL : LUMEN_ELEMENT_DISK;
  d.radius = o->radius;
  s = step_done(run, lumen_filter_morphology(ctx, in, &d, &a));
  if (s != LUMEN_OK || !o->output_mask) {
    *out = a;
    return s;
  }
  lumen_otsu_opts t;
  lumen_otsu_opts_init(&t);
  t.exec = run->step;
  double thr;
  s = step_done(run, lumen_filter_otsu(ctx, a, &t, &thr, &b));
  lumen_image_free(a);
  *out = b;
  return s;
}

static lumen_status check_tophat(lumen_ctx *ctx, const char *fn, const void *opts) {
  const lumen_tophat_opts *o = opts;
  LUMEN_REQUIRE(ctx, o->radius >= 1, "%s: radius is %d, expected >= 1", fn, o->radius);
  return LUMEN_OK;
}

lumen_status lumen_segment_tophat(lumen_ctx *ctx, const lumen_image *in, const lumen_tophat_opts *opts,
                                  lumen_image **out) {
  static const slice_algorithm alg = {"lumen_segment_tophat", "tophat", "out", check_tophat, tophat_one};
  const lumen_tophat_opts *o = opts ? opts : &tophat_defaults;
  return run_slices(ctx, &alg, in, o, &o->exec, o->spatial_dims, out, NULL);
}

/* ------------------------------------------------------------------ breast mask */

static lumen_status breast_one(lumen_ctx *ctx, seg_run *run, const void *vopts, const lumen_image *in,
                               lumen_image **out, double *unused) {
  (void)unused;
  const lumen_breast_mask_opts *o = vopts;
  lumen_image *a = NULL, *b = NULL;
  lumen_status s;
  lumen_otsu_opts t;
  lumen_otsu_opts_init(&t);
  t.exec = run->step;
  t.bins = o->otsu_bins;
  double thr;
  s = step_done(run, lumen_filter_otsu(ctx, in, &t, &thr, &a));
  if (s != LUMEN_OK) return s;
  lumen_region_opts r;
  lumen_region_opts_init(&r);
  r.exec = run->step;
  r.connectivity = o->connectivity;
  s = step_done(run, lumen_filter_largest_component(ctx, a, &r, &b));
  lumen_image_free(a);
  a = b;
  b = NULL;
  if (s == LUMEN_OK && o->fill_holes) {
    r.connectivity = 1;
    s = step_done(run, lumen_filter_fill_holes(ctx, a, &r, &b));
    lumen_image_free(a);
    a = b;
  }
  return finish_chain(s, a, out);
}

static lumen_status check_breast_mask(lumen_ctx *ctx, const char *fn, const void *opts) {
  const lumen_breast_mask_opts *o = opts;
  LUMEN_REQUIRE(ctx, o->connectivity == 1 || o->connectivity == 2 || (o->connectivity == 3 && o->spatial_dims == 3),
                "%s: connectivity is %d, expected 1 (4-connected) or 2 (8-connected)", fn, o->connectivity);
  LUMEN_REQUIRE(ctx, o->otsu_bins >= 0, "%s: otsu_bins is %d, expected 0 (auto) or > 0", fn, o->otsu_bins);
  return LUMEN_OK;
}

lumen_status lumen_segment_breast_mask(lumen_ctx *ctx, const lumen_image *in, const lumen_breast_mask_opts *opts,
                                       lumen_image **mask) {
  static const slice_algorithm alg = {"lumen_segment_breast_mask", "breast_mask", "mask", check_breast_mask,
                                      breast_one};
  const lumen_breast_mask_opts *o = opts ? opts : &breast_mask_defaults;
  return run_slices(ctx, &alg, in, o, &o->exec, o->spatial_dims, mask, NULL);
}
