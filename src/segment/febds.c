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

void lumen_febds_opts_init(lumen_febds_opts *o) {
  static const lumen_febds_opts defaults = {
      .method = LUMEN_FEBDS_DOG, .dog_low_sigma = 1.7, .dog_high_sigma = 2.0, .log_sigma = 2.0, .fft_d0 = 21.0,
      .fft_width = 32.0, .fft_order = 3, .fft_pad = 32, .median_size = 5, .gamma = 1.25, .gamma_max = 4095.0,
      .variance_alpha = 1.0, .variance_window = 5, .otsu_bins = 0, .closing_size = 7, .fill_holes = 1,
      .spatial_dims = 2};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

void lumen_tophat_opts_init(lumen_tophat_opts *o) {
  static const lumen_tophat_opts defaults = {.radius = 4, .output_mask = 0, .spatial_dims = 2};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

void lumen_breast_mask_opts_init(lumen_breast_mask_opts *o) {
  static const lumen_breast_mask_opts defaults = {
      .otsu_bins = 0, .connectivity = 1, .fill_holes = 0, .spatial_dims = 2};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

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

#define STEP(call)             \
  do {                         \
    s = (call);                \
    if (s == LUMEN_OK) seg_step_done(run); \
  } while (0)

static lumen_status febds_one(lumen_ctx *ctx, seg_run *run, const void *vopts, const lumen_image *in,
                              lumen_image **out, double *thr) {
  const lumen_febds_opts *o = vopts;
  int vol = lumen_image_ndim(in) >= 3 && o->spatial_dims == 3;
  lumen_image *a = NULL, *b = NULL;
  lumen_status s = LUMEN_OK;
  /* 1. enhance */
  if (o->method == LUMEN_FEBDS_DOG) {
    lumen_dog_opts d;
    lumen_dog_opts_init(&d);
    d.exec = run->step;
    d.low_sigma = o->dog_low_sigma;
    d.high_sigma = o->dog_high_sigma;
    d.mode = LUMEN_BOUNDARY_NEAREST;
    STEP(lumen_filter_dog(ctx, in, &d, &a));
  } else if (o->method == LUMEN_FEBDS_LOG) {
    lumen_laplace_opts d;
    lumen_laplace_opts_init(&d);
    d.exec = run->step;
    d.sigma = o->log_sigma;
    d.mode = LUMEN_BOUNDARY_NEAREST;
    d.discrete = 1;
    STEP(lumen_filter_gaussian_laplace(ctx, in, &d, &a));
  } else {
    lumen_bandpass_opts d;
    lumen_bandpass_opts_init(&d);
    d.exec = run->step;
    d.d0 = o->fft_d0;
    d.width = o->fft_width;
    d.order = o->fft_order;
    if (o->fft_pad > 0 && !vol) {
      lumen_image *padded = NULL, *filtered = NULL;
      s = pad_mirror(ctx, in, o->fft_pad, &padded);
      if (s == LUMEN_OK) STEP(lumen_filter_bandpass(ctx, padded, &d, &filtered));
      lumen_image_free(padded);
      if (s == LUMEN_OK) s = crop_pad(ctx, &filtered, o->fft_pad, in, &a);
      lumen_image_free(filtered);
    } else {
      STEP(lumen_filter_bandpass(ctx, in, &d, &a));
    }
  }
  if (s != LUMEN_OK) return s;
  /* 2. absolute value */
  {
    lumen_abs_opts d;
    lumen_abs_opts_init(&d);
    d.exec = run->step;
    STEP(lumen_filter_abs(ctx, a, &d, &b));
    lumen_image_free(a);
    a = b;
    b = NULL;
    if (s != LUMEN_OK) goto done;
  }
  /* 3. median */
  {
    lumen_median_opts d;
    lumen_median_opts_init(&d);
    d.exec = run->step;
    d.size = o->median_size;
    d.mode = LUMEN_BOUNDARY_REFLECT;
    STEP(lumen_filter_median(ctx, a, &d, &b));
    lumen_image_free(a);
    a = b;
    b = NULL;
    if (s != LUMEN_OK) goto done;
  }
  /* 4. gamma */
  {
    lumen_gamma_opts d;
    lumen_gamma_opts_init(&d);
    d.exec = run->step;
    d.gamma = o->gamma;
    d.max_value = o->gamma_max;
    STEP(lumen_filter_gamma(ctx, a, &d, &b));
    lumen_image_free(a);
    a = b;
    b = NULL;
    if (s != LUMEN_OK) goto done;
  }
  /* 5. threshold */
  if (o->method == LUMEN_FEBDS_FFT) {
    lumen_local_variance_opts d;
    lumen_local_variance_opts_init(&d);
    d.exec = run->step;
    d.window = o->variance_window;
    d.alpha = o->variance_alpha;
    d.mode = LUMEN_BOUNDARY_MIRROR;
    STEP(lumen_filter_variance_binarize(ctx, a, &d, &b));
    if (thr) *thr = NAN;
  } else {
    lumen_otsu_opts d;
    lumen_otsu_opts_init(&d);
    d.exec = run->step;
    d.bins = o->otsu_bins;
    double t = NAN;
    STEP(lumen_filter_otsu(ctx, a, &d, &t, &b));
    if (thr) *thr = t;
  }
  lumen_image_free(a);
  a = b;
  b = NULL;
  if (s != LUMEN_OK) goto done;
  /* 6. closing */
  if (o->closing_size > 0) {
    lumen_morph_opts d;
    lumen_morph_opts_init(&d);
    d.exec = run->step;
    d.op = LUMEN_MORPH_CLOSE;
    d.element = vol ? LUMEN_ELEMENT_CUBE : LUMEN_ELEMENT_SQUARE;
    d.size = o->closing_size;
    d.binary = 1;
    STEP(lumen_filter_morphology(ctx, a, &d, &b));
    lumen_image_free(a);
    a = b;
    b = NULL;
    if (s != LUMEN_OK) goto done;
  }
  /* 7. hole filling */
  if (o->fill_holes) {
    lumen_region_opts d;
    lumen_region_opts_init(&d);
    d.exec = run->step;
    d.connectivity = 1;
    STEP(lumen_filter_fill_holes(ctx, a, &d, &b));
    lumen_image_free(a);
    a = b;
    b = NULL;
    if (s != LUMEN_OK) goto done;
  }
done:
  if (s != LUMEN_OK) {
    lumen_image_free(a);
    return s;
  }
  *out = a;
  return LUMEN_OK;
}

lumen_status lumen_segment_febds(lumen_ctx *ctx, const lumen_image *in, const lumen_febds_opts *opts,
                                 lumen_image **mask, double *threshold) {
  static const char fn[] = "lumen_segment_febds";
  if (mask) *mask = NULL;
  if (threshold) *threshold = NAN;
  LUMEN_REQUIRE(ctx, mask != NULL, "%s: mask is NULL", fn);
  lumen_febds_opts def;
  if (!opts) {
    lumen_febds_opts_init(&def);
    opts = &def;
  }
  seg_run run;
  lumen_status s = seg_begin(ctx, &run, fn, "febds", &opts->exec, in);
  if (s != LUMEN_OK) return seg_end(&run, s);
  if ((s = check_image(ctx, fn, in)) != LUMEN_OK) return seg_end(&run, s);
  const lumen_febds_opts *o = opts;
#define FREQ(cond, ...) \
  if (!(cond)) return seg_end(&run, lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, __VA_ARGS__))
  FREQ((int)o->method >= 0 && o->method < LUMEN_FEBDS_METHOD_COUNT,
       "%s: method is %d, expected one of dog (%d), log (%d), fft (%d)", fn, (int)o->method, LUMEN_FEBDS_DOG,
       LUMEN_FEBDS_LOG, LUMEN_FEBDS_FFT);
  FREQ(o->dog_low_sigma > 0 && isfinite(o->dog_low_sigma), "%s: dog_low_sigma is %g, expected > 0", fn,
       o->dog_low_sigma);
  FREQ(o->dog_high_sigma > o->dog_low_sigma && isfinite(o->dog_high_sigma),
       "%s: dog_high_sigma is %g, expected > dog_low_sigma (%g)", fn, o->dog_high_sigma, o->dog_low_sigma);
  FREQ(o->log_sigma > 0 && isfinite(o->log_sigma), "%s: log_sigma is %g, expected > 0", fn, o->log_sigma);
  FREQ(o->median_size >= 1 && o->median_size % 2 == 1, "%s: median_size is %d, expected an odd size >= 1", fn,
       o->median_size);
  FREQ(o->gamma > 0 && isfinite(o->gamma), "%s: gamma is %g, expected > 0", fn, o->gamma);
  FREQ(o->gamma_max > 0 && isfinite(o->gamma_max), "%s: gamma_max is %g, expected > 0", fn, o->gamma_max);
  FREQ(o->closing_size == 0 || (o->closing_size >= 1 && o->closing_size % 2 == 1),
       "%s: closing_size is %d, expected 0 (none) or an odd size", fn, o->closing_size);
  FREQ(o->variance_window >= 1 && o->variance_window % 2 == 1,
       "%s: variance_window is %d, expected an odd window >= 1", fn, o->variance_window);
  FREQ(o->spatial_dims == 2 || o->spatial_dims == 3 || o->spatial_dims == 0,
       "%s: spatial_dims is %d, expected 2 (per slice) or 3 (volume)", fn, o->spatial_dims);
  s = seg_per_slice(ctx, &run, o, in, o->spatial_dims == 3 ? 3 : 2, febds_one, mask, threshold);
  if (s == LUMEN_OK) seg_copy_geometry(*mask, in);
  return seg_end(&run, s);
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
  STEP(lumen_filter_morphology(ctx, in, &d, &a));
  if (s != LUMEN_OK || !o->output_mask) {
    *out = a;
    return s;
  }
  lumen_otsu_opts t;
  lumen_otsu_opts_init(&t);
  t.exec = run->step;
  double thr;
  STEP(lumen_filter_otsu(ctx, a, &t, &thr, &b));
  lumen_image_free(a);
  *out = b;
  return s;
}

lumen_status lumen_segment_tophat(lumen_ctx *ctx, const lumen_image *in, const lumen_tophat_opts *opts,
                                  lumen_image **out) {
  static const char fn[] = "lumen_segment_tophat";
  if (out) *out = NULL;
  LUMEN_REQUIRE(ctx, out != NULL, "%s: out is NULL", fn);
  lumen_tophat_opts def;
  if (!opts) {
    lumen_tophat_opts_init(&def);
    opts = &def;
  }
  seg_run run;
  lumen_status s = seg_begin(ctx, &run, fn, "tophat", &opts->exec, in);
  if (s != LUMEN_OK) return seg_end(&run, s);
  if ((s = check_image(ctx, fn, in)) != LUMEN_OK) return seg_end(&run, s);
  FREQ(opts->radius >= 1, "%s: radius is %d, expected >= 1", fn, opts->radius);
  FREQ(opts->spatial_dims == 0 || opts->spatial_dims == 2 || opts->spatial_dims == 3,
       "%s: spatial_dims is %d, expected 2 (per slice) or 3 (volume)", fn, opts->spatial_dims);
  s = seg_per_slice(ctx, &run, opts, in, opts->spatial_dims == 3 ? 3 : 2, tophat_one, out, NULL);
  if (s == LUMEN_OK) seg_copy_geometry(*out, in);
  return seg_end(&run, s);
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
  STEP(lumen_filter_otsu(ctx, in, &t, &thr, &a));
  if (s != LUMEN_OK) return s;
  lumen_region_opts r;
  lumen_region_opts_init(&r);
  r.exec = run->step;
  r.connectivity = o->connectivity;
  STEP(lumen_filter_largest_component(ctx, a, &r, &b));
  lumen_image_free(a);
  a = b;
  b = NULL;
  if (s == LUMEN_OK && o->fill_holes) {
    r.connectivity = 1;
    STEP(lumen_filter_fill_holes(ctx, a, &r, &b));
    lumen_image_free(a);
    a = b;
  }
  if (s != LUMEN_OK) {
    lumen_image_free(a);
    return s;
  }
  *out = a;
  return LUMEN_OK;
}

lumen_status lumen_segment_breast_mask(lumen_ctx *ctx, const lumen_image *in, const lumen_breast_mask_opts *opts,
                                       lumen_image **mask) {
  static const char fn[] = "lumen_segment_breast_mask";
  if (mask) *mask = NULL;
  LUMEN_REQUIRE(ctx, mask != NULL, "%s: mask is NULL", fn);
  lumen_breast_mask_opts def;
  if (!opts) {
    lumen_breast_mask_opts_init(&def);
    opts = &def;
  }
  seg_run run;
  lumen_status s = seg_begin(ctx, &run, fn, "breast_mask", &opts->exec, in);
  if (s != LUMEN_OK) return seg_end(&run, s);
  if ((s = check_image(ctx, fn, in)) != LUMEN_OK) return seg_end(&run, s);
  FREQ(opts->connectivity == 1 || opts->connectivity == 2 || (opts->connectivity == 3 && opts->spatial_dims == 3),
       "%s: connectivity is %d, expected 1 (4-connected) or 2 (8-connected)", fn, opts->connectivity);
  FREQ(opts->otsu_bins >= 0, "%s: otsu_bins is %d, expected 0 (auto) or > 0", fn, opts->otsu_bins);
  FREQ(opts->spatial_dims == 0 || opts->spatial_dims == 2 || opts->spatial_dims == 3,
       "%s: spatial_dims is %d, expected 2 (per slice) or 3 (volume)", fn, opts->spatial_dims);
  s = seg_per_slice(ctx, &run, opts, in, opts->spatial_dims == 3 ? 3 : 2, breast_one, mask, NULL);
  if (s == LUMEN_OK) seg_copy_geometry(*mask, in);
  return seg_end(&run, s);
}
