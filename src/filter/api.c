/* Public filter entries: option defaults, argument checks, parameter resolution, then dispatch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "filter/filter_internal.h"

/* ------------------------------------------------------------------ option defaults */

void lumen_gaussian_opts_init(lumen_gaussian_opts *o) {
  static const lumen_gaussian_opts defaults = {
      .sigma = 1.0, .units = LUMEN_UNITS_VOXELS, .truncate = 4.0, .mode = LUMEN_BOUNDARY_NEAREST};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

void lumen_dog_opts_init(lumen_dog_opts *o) {
  static const lumen_dog_opts defaults = {
      .low_sigma = 1.0, .high_sigma = 0.0, .truncate = 4.0, .mode = LUMEN_BOUNDARY_NEAREST};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

void lumen_laplace_opts_init(lumen_laplace_opts *o) {
  static const lumen_laplace_opts defaults = {.sigma = 2.0, .truncate = 4.0, .mode = LUMEN_BOUNDARY_REFLECT};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

void lumen_median_opts_init(lumen_median_opts *o) {
  static const lumen_median_opts defaults = {.size = 3, .mode = LUMEN_BOUNDARY_REFLECT};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

void lumen_abs_opts_init(lumen_abs_opts *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  lumen_filter_exec_init(&o->exec);
}

void lumen_gamma_opts_init(lumen_gamma_opts *o) {
  static const lumen_gamma_opts defaults = {.gamma = 1.0, .max_value = 4095.0};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

void lumen_contrast_opts_init(lumen_contrast_opts *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  lumen_filter_exec_init(&o->exec);
}

void lumen_convolve_opts_init(lumen_convolve_opts *o) {
  static const lumen_convolve_opts defaults = {.mode = LUMEN_BOUNDARY_REFLECT};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

void lumen_bandpass_opts_init(lumen_bandpass_opts *o) {
  static const lumen_bandpass_opts defaults = {.d0 = 21.0, .width = 32.0, .order = 3};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

void lumen_otsu_opts_init(lumen_otsu_opts *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  lumen_filter_exec_init(&o->exec);
}

void lumen_sauvola_opts_init(lumen_sauvola_opts *o) {
  static const lumen_sauvola_opts defaults = {.window = 15, .k = 0.5, .r = 128.0, .foreground = 255};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

void lumen_local_variance_opts_init(lumen_local_variance_opts *o) {
  static const lumen_local_variance_opts defaults = {.window = 5, .mode = LUMEN_BOUNDARY_MIRROR, .alpha = 1.0};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

void lumen_morph_opts_init(lumen_morph_opts *o) {
  static const lumen_morph_opts defaults = {
      .op = LUMEN_MORPH_ERODE, .element = LUMEN_ELEMENT_DISK, .radius = 4, .size = 7};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

void lumen_region_opts_init(lumen_region_opts *o) {
  static const lumen_region_opts defaults = {.connectivity = 1};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

void lumen_stats_opts_init(lumen_stats_opts *o) {
  static const lumen_stats_opts defaults = {.bins = 256};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

/* ------------------------------------------------------------------ shared checks */

#define MAX_RADIUS 100000

static lumen_status check_io(lumen_ctx *ctx, const char *fn, const lumen_image *in, const void *out) {
  if (!ctx) return LUMEN_ERR_INVALID_ARGUMENT;
  LUMEN_REQUIRE(ctx, in != NULL, "%s: argument 'in' is NULL, expected an image", fn);
  LUMEN_REQUIRE(ctx, out != NULL, "%s: the output argument is NULL", fn);
  LUMEN_REQUIRE(ctx, lumen_image_count(in) >= 1, "%s: the input image is empty", fn);
  return LUMEN_OK;
}

static lumen_status check_mode(lumen_ctx *ctx, const char *fn, lumen_boundary mode, double cval) {
  LUMEN_REQUIRE(ctx, (int)mode >= 0 && mode < LUMEN_BOUNDARY_COUNT,
                "%s: mode is %d, expected a lumen_boundary (0..%d: reflect, nearest, constant, wrap, mirror)", fn,
                (int)mode, LUMEN_BOUNDARY_COUNT - 1);
  LUMEN_REQUIRE(ctx, isfinite(cval), "%s: cval is %g, expected a finite value", fn, cval);
  return LUMEN_OK;
}

static lumen_status check_window(lumen_ctx *ctx, const char *fn, const char *name, int w) {
  LUMEN_REQUIRE(ctx, w >= 1 && (w & 1) && w <= 2 * MAX_RADIUS + 1, "%s: %s is %d, expected an odd size >= 1", fn,
                name, w);
  return LUMEN_OK;
}

static void init_call(lf_call *c, lf_op_id op, const void *opts, const lumen_image *in) {
  memset(c, 0, sizeof *c);
  c->op = op;
  c->opts = opts;
  c->nin = 1;
  c->in[0] = in;
  c->has_out = 1;
  c->out_dtype = LUMEN_DTYPE_FLOAT32; /* = the storage precision, resolved by the dispatcher */
}

/* The start every entry with one image output shares: clears *out, then checks the arguments. */
static lumen_status begin_entry(lumen_ctx *ctx, const char *fn, const lumen_image *in, lumen_image **out) {
  if (out) *out = NULL;
  return check_io(ctx, fn, in, out);
}

/* Declares the defaults of an options type and points opts at them when the caller passed NULL. */
#define USE_DEFAULTS_IF_NULL(type, opts) \
  type opts##_defaults;                 \
  if (!(opts)) {                        \
    type##_init(&opts##_defaults);      \
    (opts) = &opts##_defaults;          \
  }                                     \
  (void)0

/* init_call, then the geometry of the input over spatial_dims (0 = the image's own). */
static lumen_status start_call(lumen_ctx *ctx, const char *fn, lf_call *c, lf_op_id op, const void *opts,
                               const lumen_image *in, int spatial_dims) {
  init_call(c, op, opts, in);
  return lf_geom_make(ctx, fn, in, spatial_dims, &c->geom);
}

/* Sigma per spatial axis in voxels and its radius. */
static lumen_status resolve_sigma(lumen_ctx *ctx, const char *fn, const char *name, const lumen_image *in,
                                  const lf_geom *g, double sigma, const double *axis, lumen_units units,
                                  double truncate, double *sig, int *rad) {
  LUMEN_REQUIRE(ctx, (int)units >= 0 && units < LUMEN_UNITS_COUNT, "%s: units is %d, expected VOXELS (0) or MM (1)",
                fn, (int)units);
  LUMEN_REQUIRE(ctx, isfinite(truncate) && truncate > 0, "%s: truncate is %g, expected > 0", fn, truncate);
  double spacing[LUMEN_IMAGE_MAX_DIMS] = {1, 1, 1, 1};
  lumen_image_get_spacing(in, spacing, lumen_image_ndim(in));
  for (int a = 0; a < 3; a++) {
    sig[a] = 0;
    rad[a] = 0;
    if (a >= g->spatial) continue;
    double s = (axis && axis[a] != 0.0) ? axis[a] : sigma;
    if (axis && axis[a] != 0.0)
      LUMEN_REQUIRE(ctx, isfinite(s) && s > 0, "%s: %s_axis[%d] is %g, expected > 0 (or 0 = use %s)", fn, name, a, s,
                    name);
    else
      LUMEN_REQUIRE(ctx, isfinite(s) && s > 0, "%s: %s is %g, expected > 0", fn, name, s);
    if (units == LUMEN_UNITS_MM) {
      /* the options are valid: a spacing that makes them impossible is a fault of the image */
      if (!(isfinite(spacing[a]) && spacing[a] > 0))
        return lumen_fail(ctx, LUMEN_ERR_INVALID_DATA, "%s: the image's spacing on axis %d is %g mm, expected > 0 "
                          "for %s in mm (give the sigma in voxels, or fix the header's pixel size)", fn, a,
                          spacing[a], name);
      double r_mm = truncate * s / spacing[a] + 0.5;
      if (!(r_mm < MAX_RADIUS))
        return lumen_fail(ctx, LUMEN_ERR_INVALID_DATA, "%s: %s %g mm over the image's spacing %g mm on axis %d is "
                          "%g voxels, a radius over %d voxels with truncate %g (is the header's pixel size in "
                          "the wrong unit?)", fn, name, s, spacing[a], a, s / spacing[a], MAX_RADIUS, truncate);
      s /= spacing[a];
    }
    double r = truncate * s + 0.5;
    LUMEN_REQUIRE(ctx, r < MAX_RADIUS, "%s: %s %g with truncate %g gives a radius over %d voxels", fn, name, s,
                  truncate, MAX_RADIUS);
    sig[a] = s;
    rad[a] = (int)r;
  }
  return LUMEN_OK;
}

/* ------------------------------------------------------------------ Gaussian family */

lumen_status lumen_filter_gaussian(lumen_ctx *ctx, const lumen_image *in, const lumen_gaussian_opts *opts,
                                   lumen_image **out) {
  static const char fn[] = "lumen_filter_gaussian";
  lumen_status s = begin_entry(ctx, fn, in, out);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_gaussian_opts, opts);
  lf_call c;
  if ((s = start_call(ctx, fn, &c, LF_OP_GAUSSIAN, opts, in, opts->spatial_dims)) != LUMEN_OK) return s;
  if ((s = check_mode(ctx, fn, opts->mode, opts->cval)) != LUMEN_OK) return s;
  lf_gauss_params p;
  memset(&p, 0, sizeof p);
  if ((s = resolve_sigma(ctx, fn, "sigma", in, &c.geom, opts->sigma, opts->sigma_axis, opts->units, opts->truncate,
                         p.sigma[0], p.radius[0])) != LUMEN_OK)
    return s;
  p.truncate = opts->truncate;
  p.mode = opts->mode;
  p.cval = (float)opts->cval;
  c.params = &p;
  return lf_dispatch(ctx, &c, &opts->exec, out);
}

lumen_status lumen_filter_gaussian_batch(lumen_ctx *ctx, const lumen_image *batch, const lumen_gaussian_opts *opts,
                                         lumen_image **out) {
  static const char fn[] = "lumen_filter_gaussian_batch";
  lumen_status s = begin_entry(ctx, fn, batch, out);
  if (s != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, lumen_image_ndim(batch) >= 2, "%s: the batch has %d dims, expected 2..4 (x, y, batch...)", fn,
                lumen_image_ndim(batch));
  lumen_gaussian_opts o;
  if (opts)
    o = *opts;
  else
    lumen_gaussian_opts_init(&o);
  o.spatial_dims = 2;
  return lumen_filter_gaussian(ctx, batch, &o, out);
}

lumen_status lumen_filter_gaussian_many(lumen_ctx *ctx, int64_t n, const lumen_image *const *in,
                                        const lumen_gaussian_opts *opts, lumen_image **out) {
  static const char fn[] = "lumen_filter_gaussian_many";
  if (!ctx) return LUMEN_ERR_INVALID_ARGUMENT;
  LUMEN_REQUIRE(ctx, in != NULL && out != NULL, "%s: arguments 'in' and 'out' must not be NULL", fn);
  LUMEN_REQUIRE(ctx, n >= 1, "%s: n is %lld, expected >= 1", fn, (long long)n);
  for (int64_t i = 0; i < n; i++) out[i] = NULL;
  for (int64_t i = 0; i < n; i++) {
    LUMEN_REQUIRE(ctx, in[i] != NULL, "%s: in[%lld] is NULL, expected an image", fn, (long long)i);
    LUMEN_REQUIRE(ctx, lumen_image_ndim(in[i]) == lumen_image_ndim(in[0]),
                  "%s: in[%lld] has %d dims, expected %d like in[0] (mismatched batch shapes)", fn, (long long)i,
                  lumen_image_ndim(in[i]), lumen_image_ndim(in[0]));
    for (int a = 0; a < lumen_image_ndim(in[0]); a++)
      LUMEN_REQUIRE(ctx, lumen_image_dim(in[i], a) == lumen_image_dim(in[0], a),
                    "%s: in[%lld] dims[%d] is %lld, expected %lld like in[0] (mismatched batch shapes)", fn,
                    (long long)i, a, (long long)lumen_image_dim(in[i], a), (long long)lumen_image_dim(in[0], a));
    LUMEN_REQUIRE(ctx, lumen_image_dtype(in[i]) == lumen_image_dtype(in[0]),
                  "%s: in[%lld] is %s, expected %s like in[0] (mismatched batch types)", fn, (long long)i,
                  lumen_dtype_name(lumen_image_dtype(in[i])), lumen_dtype_name(lumen_image_dtype(in[0])));
  }
  for (int64_t i = 0; i < n; i++) {
    lumen_status s = lumen_filter_gaussian(ctx, in[i], opts, &out[i]);
    if (s == LUMEN_OK) s = lumen_progress(ctx, (double)(i + 1) / (double)n, "gaussian");
    if (s != LUMEN_OK) {
      for (int64_t j = 0; j <= i; j++) {
        lumen_image_free(out[j]);
        out[j] = NULL;
      }
      return s;
    }
  }
  return LUMEN_OK;
}

lumen_status lumen_filter_dog(lumen_ctx *ctx, const lumen_image *in, const lumen_dog_opts *opts, lumen_image **out) {
  static const char fn[] = "lumen_filter_dog";
  lumen_status s = begin_entry(ctx, fn, in, out);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_dog_opts, opts);
  lf_call c;
  if ((s = start_call(ctx, fn, &c, LF_OP_DOG, opts, in, opts->spatial_dims)) != LUMEN_OK) return s;
  if ((s = check_mode(ctx, fn, opts->mode, opts->cval)) != LUMEN_OK) return s;
  double high = opts->high_sigma == 0.0 ? 1.6 * opts->low_sigma : opts->high_sigma;
  LUMEN_REQUIRE(ctx, isfinite(opts->low_sigma) && opts->low_sigma > 0, "%s: low_sigma is %g, expected > 0", fn,
                opts->low_sigma);
  LUMEN_REQUIRE(ctx, isfinite(high) && high > opts->low_sigma,
                "%s: high_sigma is %g, expected > low_sigma (%g) or 0 (= 1.6 x low_sigma)", fn, opts->high_sigma,
                opts->low_sigma);
  lf_gauss_params p;
  memset(&p, 0, sizeof p);
  if ((s = resolve_sigma(ctx, fn, "low_sigma", in, &c.geom, opts->low_sigma, NULL, opts->units, opts->truncate,
                         p.sigma[0], p.radius[0])) != LUMEN_OK)
    return s;
  if ((s = resolve_sigma(ctx, fn, "high_sigma", in, &c.geom, high, NULL, opts->units, opts->truncate, p.sigma[1],
                         p.radius[1])) != LUMEN_OK)
    return s;
  p.truncate = opts->truncate;
  p.mode = opts->mode;
  p.cval = (float)opts->cval;
  c.params = &p;
  return lf_dispatch(ctx, &c, &opts->exec, out);
}

lumen_status lumen_filter_gaussian_laplace(lumen_ctx *ctx, const lumen_image *in, const lumen_laplace_opts *opts,
                                           lumen_image **out) {
  static const char fn[] = "lumen_filter_gaussian_laplace";
  lumen_status s = begin_entry(ctx, fn, in, out);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_laplace_opts, opts);
  lf_call c;
  if ((s = start_call(ctx, fn, &c, LF_OP_LAPLACE, opts, in, opts->spatial_dims)) != LUMEN_OK) return s;
  if ((s = check_mode(ctx, fn, opts->mode, opts->cval)) != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, opts->discrete == 0 || opts->discrete == 1, "%s: discrete is %d, expected 0 or 1", fn,
                opts->discrete);
  lf_gauss_params p;
  memset(&p, 0, sizeof p);
  if ((s = resolve_sigma(ctx, fn, "sigma", in, &c.geom, opts->sigma, NULL, opts->units, opts->truncate, p.sigma[0],
                         p.radius[0])) != LUMEN_OK)
    return s;
  p.truncate = opts->truncate;
  p.mode = opts->mode;
  p.cval = (float)opts->cval;
  p.discrete = opts->discrete;
  c.params = &p;
  return lf_dispatch(ctx, &c, &opts->exec, out);
}

/* ------------------------------------------------------------------ rank, point, linear */

lumen_status lumen_filter_median(lumen_ctx *ctx, const lumen_image *in, const lumen_median_opts *opts,
                                 lumen_image **out) {
  static const char fn[] = "lumen_filter_median";
  lumen_status s = begin_entry(ctx, fn, in, out);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_median_opts, opts);
  lf_call c;
  if ((s = start_call(ctx, fn, &c, LF_OP_MEDIAN, opts, in, opts->spatial_dims)) != LUMEN_OK) return s;
  if ((s = check_mode(ctx, fn, opts->mode, opts->cval)) != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, opts->size >= 1 && (opts->size & 1) && opts->size <= 255,
                "%s: size is %d, expected an odd window width 1..255", fn, opts->size);
  return lf_dispatch(ctx, &c, &opts->exec, out);
}

lumen_status lumen_filter_gamma(lumen_ctx *ctx, const lumen_image *in, const lumen_gamma_opts *opts,
                                lumen_image **out) {
  static const char fn[] = "lumen_filter_gamma";
  lumen_status s = begin_entry(ctx, fn, in, out);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_gamma_opts, opts);
  LUMEN_REQUIRE(ctx, isfinite(opts->gamma) && opts->gamma > 0, "%s: gamma is %g, expected > 0", fn, opts->gamma);
  LUMEN_REQUIRE(ctx, isfinite(opts->max_value) && opts->max_value > 0, "%s: max_value is %g, expected > 0", fn,
                opts->max_value);
  lf_call c;
  if ((s = start_call(ctx, fn, &c, LF_OP_GAMMA, opts, in, 0)) != LUMEN_OK) return s;
  return lf_dispatch(ctx, &c, &opts->exec, out);
}

lumen_status lumen_filter_abs(lumen_ctx *ctx, const lumen_image *in, const lumen_abs_opts *opts, lumen_image **out) {
  static const char fn[] = "lumen_filter_abs";
  lumen_status s = begin_entry(ctx, fn, in, out);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_abs_opts, opts);
  lf_call c;
  if ((s = start_call(ctx, fn, &c, LF_OP_ABS, opts, in, 0)) != LUMEN_OK) return s;
  return lf_dispatch(ctx, &c, &opts->exec, out);
}

lumen_status lumen_filter_contrast(lumen_ctx *ctx, const lumen_image *in, const lumen_contrast_opts *opts,
                                   lumen_image **out) {
  static const char fn[] = "lumen_filter_contrast";
  lumen_status s = begin_entry(ctx, fn, in, out);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_contrast_opts, opts);
  LUMEN_REQUIRE(ctx, isfinite(opts->contrast) && isfinite(opts->brightness),
                "%s: contrast %g / brightness %g, expected finite values", fn, opts->contrast, opts->brightness);
  LUMEN_REQUIRE(ctx, opts->bins >= 0, "%s: bins is %d, expected 0 (auto: 255 or 4095) or > 0", fn, opts->bins);
  lf_call c;
  if ((s = start_call(ctx, fn, &c, LF_OP_CONTRAST, opts, in, 0)) != LUMEN_OK) return s;
  return lf_dispatch(ctx, &c, &opts->exec, out);
}

lumen_status lumen_filter_convolve(lumen_ctx *ctx, const lumen_image *in, const lumen_convolve_opts *opts,
                                   lumen_image **out) {
  static const char fn[] = "lumen_filter_convolve";
  lumen_status s = begin_entry(ctx, fn, in, out);
  if (s != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, opts != NULL, "%s: argument 'opts' is NULL, expected options with a kernel", fn);
  lf_call c;
  if ((s = start_call(ctx, fn, &c, LF_OP_CONVOLVE, opts, in, opts->spatial_dims)) != LUMEN_OK) return s;
  if ((s = check_mode(ctx, fn, opts->mode, opts->cval)) != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, opts->kernel != NULL, "%s: opts.kernel is NULL, expected kernel values", fn);
  LUMEN_REQUIRE(ctx, opts->kernel_ndim >= 1 && opts->kernel_ndim <= c.geom.spatial,
                "%s: kernel_ndim is %d, expected 1..%d (the spatial dims)", fn, opts->kernel_ndim, c.geom.spatial);
  LUMEN_REQUIRE(ctx, opts->correlate == 0 || opts->correlate == 1, "%s: correlate is %d, expected 0 or 1", fn,
                opts->correlate);
  lf_conv_params p;
  memset(&p, 0, sizeof p);
  int64_t count = 1;
  for (int a = 0; a < 3; a++) {
    p.kd[a] = a < opts->kernel_ndim ? opts->kernel_dims[a] : 1;
    LUMEN_REQUIRE(ctx, p.kd[a] >= 1 && p.kd[a] <= 4096, "%s: kernel_dims[%d] is %lld, expected 1..4096", fn, a,
                  (long long)p.kd[a]);
    count *= p.kd[a];
    /* scipy: correlate centre = size // 2; convolve flips and shifts even sizes by one */
    p.centre[a] = p.kd[a] / 2;
    if (!opts->correlate && !(p.kd[a] & 1)) p.centre[a] = p.kd[a] / 2 - 1;
  }
  LUMEN_REQUIRE(ctx, count <= (1 << 20), "%s: the kernel has %lld values, expected at most 2^20", fn,
                (long long)count);
  float *k = malloc((size_t)count * sizeof *k);
  if (!k) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory for the kernel", fn);
  for (int64_t i = 0; i < count; i++) {
    float v = opts->kernel[opts->correlate ? i : count - 1 - i];
    if (!isfinite(v)) {
      free(k);
      return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: kernel[%lld] is %g, expected finite values", fn,
                        (long long)(opts->correlate ? i : count - 1 - i), (double)v);
    }
    k[i] = v;
  }
  p.kernel = k;
  p.mode = opts->mode;
  p.cval = (float)opts->cval;
  c.params = &p;
  s = lf_dispatch(ctx, &c, &opts->exec, out);
  free(k);
  return s;
}

lumen_status lumen_filter_bandpass(lumen_ctx *ctx, const lumen_image *in, const lumen_bandpass_opts *opts,
                                   lumen_image **out) {
  static const char fn[] = "lumen_filter_bandpass";
  lumen_status s = begin_entry(ctx, fn, in, out);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_bandpass_opts, opts);
  LUMEN_REQUIRE(ctx, isfinite(opts->d0) && opts->d0 >= 0, "%s: d0 is %g, expected >= 0", fn, opts->d0);
  LUMEN_REQUIRE(ctx, isfinite(opts->width) && opts->width > 0, "%s: width is %g, expected > 0", fn, opts->width);
  LUMEN_REQUIRE(ctx, opts->order >= 1 && opts->order <= 64, "%s: order is %d, expected 1..64", fn, opts->order);
  lf_call c;
  if ((s = start_call(ctx, fn, &c, LF_OP_BANDPASS, opts, in, opts->spatial_dims)) != LUMEN_OK) return s;
  return lf_dispatch(ctx, &c, &opts->exec, out);
}

/* ------------------------------------------------------------------ thresholds */

lumen_status lumen_filter_otsu(lumen_ctx *ctx, const lumen_image *in, const lumen_otsu_opts *opts, double *threshold,
                               lumen_image **mask) {
  static const char fn[] = "lumen_filter_otsu";
  if (mask) *mask = NULL;
  lumen_status s = check_io(ctx, fn, in, threshold);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_otsu_opts, opts);
  LUMEN_REQUIRE(ctx, opts->bins >= 0 && opts->bins <= (1 << 24), "%s: bins is %d, expected 0 (auto) or 1..2^24", fn,
                opts->bins);
  lf_call c;
  if ((s = start_call(ctx, fn, &c, LF_OP_OTSU, opts, in, 0)) != LUMEN_OK) return s;
  c.has_out = mask != NULL;
  c.out_dtype = LUMEN_DTYPE_UINT8;
  s = lf_dispatch(ctx, &c, &opts->exec, mask);
  if (s == LUMEN_OK) *threshold = c.scalar[0];
  return s;
}

lumen_status lumen_filter_sauvola(lumen_ctx *ctx, const lumen_image *in, const lumen_sauvola_opts *opts,
                                  lumen_image **out) {
  static const char fn[] = "lumen_filter_sauvola";
  lumen_status s = begin_entry(ctx, fn, in, out);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_sauvola_opts, opts);
  if ((s = check_window(ctx, fn, "window", opts->window)) != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, isfinite(opts->k), "%s: k is %g, expected a finite value", fn, opts->k);
  LUMEN_REQUIRE(ctx, isfinite(opts->r) && opts->r > 0, "%s: r is %g, expected > 0", fn, opts->r);
  LUMEN_REQUIRE(ctx, opts->foreground >= 1 && opts->foreground <= 255, "%s: foreground is %d, expected 1..255", fn,
                opts->foreground);
  LUMEN_REQUIRE(ctx, opts->output_threshold == 0 || opts->output_threshold == 1,
                "%s: output_threshold is %d, expected 0 or 1", fn, opts->output_threshold);
  lf_call c;
  if ((s = start_call(ctx, fn, &c, LF_OP_SAUVOLA, opts, in, opts->spatial_dims)) != LUMEN_OK) return s;
  if (!opts->output_threshold) c.out_dtype = LUMEN_DTYPE_UINT8;
  return lf_dispatch(ctx, &c, &opts->exec, out);
}

static lumen_status local_variance_common(lumen_ctx *ctx, const char *fn, lf_op_id op, const lumen_image *in,
                                          const lumen_local_variance_opts *opts, lumen_image **out) {
  lumen_status s = begin_entry(ctx, fn, in, out);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_local_variance_opts, opts);
  if ((s = check_window(ctx, fn, "window", opts->window)) != LUMEN_OK) return s;
  if ((s = check_mode(ctx, fn, opts->mode, opts->cval)) != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, isfinite(opts->alpha) && opts->alpha >= 0, "%s: alpha is %g, expected >= 0", fn, opts->alpha);
  lf_call c;
  if ((s = start_call(ctx, fn, &c, op, opts, in, opts->spatial_dims)) != LUMEN_OK) return s;
  if (op == LF_OP_VARIANCE_BINARIZE) c.out_dtype = LUMEN_DTYPE_UINT8;
  return lf_dispatch(ctx, &c, &opts->exec, out);
}

lumen_status lumen_filter_local_variance(lumen_ctx *ctx, const lumen_image *in,
                                         const lumen_local_variance_opts *opts, lumen_image **out) {
  return local_variance_common(ctx, "lumen_filter_local_variance", LF_OP_LOCAL_VARIANCE, in, opts, out);
}

lumen_status lumen_filter_variance_binarize(lumen_ctx *ctx, const lumen_image *in,
                                            const lumen_local_variance_opts *opts, lumen_image **out) {
  return local_variance_common(ctx, "lumen_filter_variance_binarize", LF_OP_VARIANCE_BINARIZE, in, opts, out);
}

/* ------------------------------------------------------------------ morphology, regions */

lumen_status lumen_filter_morphology(lumen_ctx *ctx, const lumen_image *in, const lumen_morph_opts *opts,
                                     lumen_image **out) {
  static const char fn[] = "lumen_filter_morphology";
  lumen_status s = begin_entry(ctx, fn, in, out);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_morph_opts, opts);
  LUMEN_REQUIRE(ctx, (int)opts->op >= 0 && opts->op < LUMEN_MORPH_COUNT,
                "%s: op is %d, expected a lumen_morph_op (0..%d: erode, dilate, open, close, tophat)", fn,
                (int)opts->op, LUMEN_MORPH_COUNT - 1);
  LUMEN_REQUIRE(ctx, (int)opts->element >= 0 && opts->element < LUMEN_ELEMENT_COUNT,
                "%s: element is %d, expected a lumen_element (0..%d: disk, square, ball, cube)", fn,
                (int)opts->element, LUMEN_ELEMENT_COUNT - 1);
  LUMEN_REQUIRE(ctx, opts->binary == 0 || opts->binary == 1, "%s: binary is %d, expected 0 or 1", fn, opts->binary);
  if (opts->element == LUMEN_ELEMENT_DISK || opts->element == LUMEN_ELEMENT_BALL)
    LUMEN_REQUIRE(ctx, opts->radius >= 0 && opts->radius <= 1000, "%s: radius is %d, expected 0..1000", fn,
                  opts->radius);
  else if ((s = check_window(ctx, fn, "size", opts->size)) != LUMEN_OK)
    return s;
  lf_call c;
  if ((s = start_call(ctx, fn, &c, LF_OP_MORPHOLOGY, opts, in, 0)) != LUMEN_OK) return s;
  if (opts->binary) c.out_dtype = LUMEN_DTYPE_UINT8;
  int need3 = opts->element == LUMEN_ELEMENT_BALL || opts->element == LUMEN_ELEMENT_CUBE;
  LUMEN_REQUIRE(ctx, !need3 || c.geom.spatial == 3, "%s: a %s element needs a 3-D image, got %d dims", fn,
                opts->element == LUMEN_ELEMENT_BALL ? "ball" : "cube", lumen_image_ndim(in));
  LUMEN_REQUIRE(ctx, c.geom.spatial >= 2, "%s: morphology needs a 2-D or 3-D image, got %d dims", fn,
                lumen_image_ndim(in));
  return lf_dispatch(ctx, &c, &opts->exec, out);
}

static lumen_status region_common(lumen_ctx *ctx, const char *fn, lf_op_id op, const lumen_image *in,
                                  const lumen_region_opts *opts, lf_call *c) {
  lumen_status s = LUMEN_OK;
  if ((s = start_call(ctx, fn, c, op, opts, in, opts->spatial_dims)) != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, opts->connectivity >= 1 && opts->connectivity <= c->geom.spatial,
                "%s: connectivity is %d, expected 1..%d (the spatial dims)", fn, opts->connectivity, c->geom.spatial);
  return LUMEN_OK;
}

lumen_status lumen_filter_fill_holes(lumen_ctx *ctx, const lumen_image *in, const lumen_region_opts *opts,
                                     lumen_image **out) {
  static const char fn[] = "lumen_filter_fill_holes";
  lumen_status s = begin_entry(ctx, fn, in, out);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_region_opts, opts);
  lf_call c;
  if ((s = region_common(ctx, fn, LF_OP_FILL_HOLES, in, opts, &c)) != LUMEN_OK) return s;
  c.out_dtype = LUMEN_DTYPE_UINT8;
  return lf_dispatch(ctx, &c, &opts->exec, out);
}

lumen_status lumen_filter_label(lumen_ctx *ctx, const lumen_image *in, const lumen_region_opts *opts,
                                lumen_image **labels, int64_t *count) {
  static const char fn[] = "lumen_filter_label";
  if (labels) *labels = NULL;
  if (count) *count = 0;
  lumen_status s = check_io(ctx, fn, in, labels);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_region_opts, opts);
  lf_call c;
  if ((s = region_common(ctx, fn, LF_OP_LABEL, in, opts, &c)) != LUMEN_OK) return s;
  c.out_dtype = LUMEN_DTYPE_INT32;
  s = lf_dispatch(ctx, &c, &opts->exec, labels);
  if (s == LUMEN_OK && count) *count = c.count;
  return s;
}

lumen_status lumen_filter_largest_component(lumen_ctx *ctx, const lumen_image *in, const lumen_region_opts *opts,
                                            lumen_image **mask) {
  static const char fn[] = "lumen_filter_largest_component";
  lumen_status s = begin_entry(ctx, fn, in, mask);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_region_opts, opts);
  lf_call c;
  if ((s = region_common(ctx, fn, LF_OP_LARGEST_COMPONENT, in, opts, &c)) != LUMEN_OK) return s;
  c.out_dtype = LUMEN_DTYPE_UINT8;
  return lf_dispatch(ctx, &c, &opts->exec, mask);
}

/* ------------------------------------------------------------------ statistics */

static lumen_status stats_common(lumen_ctx *ctx, const char *fn, lf_op_id op, const lumen_image *in,
                                 const lumen_stats_opts *opts, lf_call *c) {
  LUMEN_REQUIRE(ctx, opts->bins >= 0 && opts->bins <= (1 << 16), "%s: bins is %d, expected 0..65536", fn,
                opts->bins);
  LUMEN_REQUIRE(ctx, opts->ddof == 0 || opts->ddof == 1, "%s: ddof is %d, expected 0 or 1", fn, opts->ddof);
  lumen_status s = start_call(ctx, fn, c, op, opts, in, 0);
  c->has_out = 0;
  return s;
}

lumen_status lumen_filter_entropy(lumen_ctx *ctx, const lumen_image *in, const lumen_stats_opts *opts,
                                  double *entropy) {
  static const char fn[] = "lumen_filter_entropy";
  lumen_status s = check_io(ctx, fn, in, entropy);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_stats_opts, opts);
  lf_call c;
  if ((s = stats_common(ctx, fn, LF_OP_ENTROPY, in, opts, &c)) != LUMEN_OK) return s;
  s = lf_dispatch(ctx, &c, &opts->exec, NULL);
  if (s == LUMEN_OK) *entropy = c.scalar[0];
  return s;
}

lumen_status lumen_filter_mutual_information(lumen_ctx *ctx, const lumen_image *a, const lumen_image *b,
                                             const lumen_stats_opts *opts, lumen_mi_result *out) {
  static const char fn[] = "lumen_filter_mutual_information";
  lumen_status s = check_io(ctx, fn, a, out);
  if (s != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, b != NULL, "%s: argument 'b' is NULL, expected an image", fn);
  LUMEN_REQUIRE(ctx, lumen_image_count(a) == lumen_image_count(b),
                "%s: a has %lld voxels and b %lld, expected the same shape (mismatched pair shapes)", fn,
                (long long)lumen_image_count(a), (long long)lumen_image_count(b));
  for (int i = 0; i < LUMEN_IMAGE_MAX_DIMS; i++)
    LUMEN_REQUIRE(ctx, lumen_image_dim(a, i) == lumen_image_dim(b, i),
                  "%s: a dims[%d] is %lld and b dims[%d] is %lld, expected the same shape (mismatched pair shapes)",
                  fn, i, (long long)lumen_image_dim(a, i), i, (long long)lumen_image_dim(b, i));
  USE_DEFAULTS_IF_NULL(lumen_stats_opts, opts);
  LUMEN_REQUIRE(ctx, opts->bins >= 1 && opts->bins <= 4096, "%s: bins is %d, expected 1..4096", fn, opts->bins);
  lf_call c;
  if ((s = stats_common(ctx, fn, LF_OP_MUTUAL_INFORMATION, a, opts, &c)) != LUMEN_OK) return s;
  c.nin = 2;
  c.in[1] = b;
  s = lf_dispatch(ctx, &c, &opts->exec, NULL);
  if (s == LUMEN_OK) {
    out->mutual_information = c.scalar[0];
    out->entropy_a = c.scalar[1];
    out->entropy_b = c.scalar[2];
    out->joint_entropy = c.scalar[3];
  }
  return s;
}

lumen_status lumen_filter_variance(lumen_ctx *ctx, const lumen_image *in, const lumen_stats_opts *opts, double *mean,
                                   double *variance) {
  static const char fn[] = "lumen_filter_variance";
  lumen_status s = check_io(ctx, fn, in, (const void *)1);
  if (s != LUMEN_OK) return s;
  USE_DEFAULTS_IF_NULL(lumen_stats_opts, opts);
  lf_call c;
  if ((s = stats_common(ctx, fn, LF_OP_VARIANCE, in, opts, &c)) != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, lumen_image_count(in) > opts->ddof, "%s: %lld voxels, expected more than ddof = %d", fn,
                (long long)lumen_image_count(in), opts->ddof);
  s = lf_dispatch(ctx, &c, &opts->exec, NULL);
  if (s == LUMEN_OK) {
    if (mean) *mean = c.scalar[0];
    if (variance) *variance = c.scalar[1];
  }
  return s;
}
