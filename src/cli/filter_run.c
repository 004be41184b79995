/* lumen filter's ops that write an image: one runner per op, from fvals over the op's library
   defaults; filter_cli.h. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "cli/filter_cli.h"

#define CMD "filter"

/* One op on one image: what every op runner gets. *is_mask tells the writer; *scalar is the
   op's number (otsu: the threshold, label: the count). */
typedef struct {
  lumen_ctx *ctx;
  const char *op;
  const fvals *f;
  lumen_filter_exec ex;
  const lumen_image *in;
  lumen_image **out;
  int *is_mask;
  double *scalar;
} filter_call;

/* The boundary options given on the command line over an op's defaults. */
static void use_boundary(const fvals *f, lumen_boundary *mode, double *cval, int *spatial_dims) {
  if (f->has_mode) *mode = f->mode;
  if (f->has_cval) *cval = f->cval;
  if (f->has_spatial) *spatial_dims = f->spatial;
}

/* The Gaussian-kernel options (gaussian, dog, log) given over an op's defaults. */
static void use_smoothing(const fvals *f, lumen_units *units, double *truncate, lumen_boundary *mode, double *cval,
                          int *spatial_dims) {
  if (f->has_units) *units = f->units;
  if (f->has_truncate) *truncate = f->truncate;
  use_boundary(f, mode, cval, spatial_dims);
}

static lumen_status run_gaussian(const filter_call *c) {
  const fvals *f = c->f;
  lumen_gaussian_opts o;
  lumen_gaussian_opts_init(&o);
  o.exec = c->ex;
  if (f->has_sigma) o.sigma = f->sigma;
  if (f->has_sigma_axis) memcpy(o.sigma_axis, f->sigma_axis, sizeof o.sigma_axis);
  use_smoothing(f, &o.units, &o.truncate, &o.mode, &o.cval, &o.spatial_dims);
  return lumen_filter_gaussian(c->ctx, c->in, &o, c->out);
}

static lumen_status run_dog(const filter_call *c) {
  const fvals *f = c->f;
  lumen_dog_opts o;
  lumen_dog_opts_init(&o);
  o.exec = c->ex;
  if (f->has_low) o.low_sigma = f->low;
  if (f->has_sigma) o.low_sigma = f->sigma;
  if (f->has_high) o.high_sigma = f->high;
  use_smoothing(f, &o.units, &o.truncate, &o.mode, &o.cval, &o.spatial_dims);
  return lumen_filter_dog(c->ctx, c->in, &o, c->out);
}

static lumen_status run_log(const filter_call *c) {
  lumen_laplace_opts o;
  lumen_laplace_opts_init(&o);
  o.exec = c->ex;
  if (c->f->has_sigma) o.sigma = c->f->sigma;
  use_smoothing(c->f, &o.units, &o.truncate, &o.mode, &o.cval, &o.spatial_dims);
  o.discrete = c->f->discrete;
  return lumen_filter_gaussian_laplace(c->ctx, c->in, &o, c->out);
}

static lumen_status run_median(const filter_call *c) {
  lumen_median_opts o;
  lumen_median_opts_init(&o);
  o.exec = c->ex;
  if (c->f->has_size) o.size = c->f->size;
  use_boundary(c->f, &o.mode, &o.cval, &o.spatial_dims);
  return lumen_filter_median(c->ctx, c->in, &o, c->out);
}

static lumen_status run_gamma(const filter_call *c) {
  lumen_gamma_opts o;
  lumen_gamma_opts_init(&o);
  o.exec = c->ex;
  if (c->f->has_gamma) o.gamma = c->f->gamma;
  if (c->f->has_max) o.max_value = c->f->max_value;
  return lumen_filter_gamma(c->ctx, c->in, &o, c->out);
}

static lumen_status run_abs(const filter_call *c) {
  lumen_abs_opts o;
  lumen_abs_opts_init(&o);
  o.exec = c->ex;
  return lumen_filter_abs(c->ctx, c->in, &o, c->out);
}

static lumen_status run_contrast(const filter_call *c) {
  lumen_contrast_opts o;
  lumen_contrast_opts_init(&o);
  o.exec = c->ex;
  o.contrast = c->f->contrast;
  o.brightness = c->f->brightness;
  if (c->f->has_bins) o.bins = c->f->bins;
  return lumen_filter_contrast(c->ctx, c->in, &o, c->out);
}

static lumen_status run_convolve(const filter_call *c) {
  const fvals *f = c->f;
  lumen_convolve_opts o;
  lumen_convolve_opts_init(&o);
  o.exec = c->ex;
  o.kernel = f->kernel;
  if (f->kndim) {
    o.kernel_ndim = f->kndim;
    for (int k = 0; k < 3; k++) o.kernel_dims[k] = k < f->kndim ? f->kdims[k] : 1;
  } else { /* a 1-D kernel of all the values */
    o.kernel_ndim = 1;
    o.kernel_dims[0] = f->nkernel;
    o.kernel_dims[1] = o.kernel_dims[2] = 1;
  }
  use_boundary(f, &o.mode, &o.cval, &o.spatial_dims);
  o.correlate = f->correlate;
  int64_t need = o.kernel_dims[0] * (o.kernel_ndim > 1 ? o.kernel_dims[1] : 1) * (o.kernel_ndim > 2 ? o.kernel_dims[2] : 1);
  if (!f->kernel || need != f->nkernel) {
    *c->out = NULL;
    lumen_cli_error(CMD, "--kernel has %d value(s), expected %lld (the product of --kernel-dims)", f->nkernel,
                    (long long)need);
    return LUMEN_ERR_INVALID_ARGUMENT;
  }
  return lumen_filter_convolve(c->ctx, c->in, &o, c->out);
}

static lumen_status run_bandpass(const filter_call *c) {
  const fvals *f = c->f;
  lumen_bandpass_opts o;
  lumen_bandpass_opts_init(&o);
  o.exec = c->ex;
  if (f->has_d0) o.d0 = f->d0;
  if (f->has_width) o.width = f->width;
  if (f->has_order) o.order = f->order;
  if (f->has_spatial) o.spatial_dims = f->spatial;
  return lumen_filter_bandpass(c->ctx, c->in, &o, c->out);
}

static lumen_status run_otsu(const filter_call *c) {
  lumen_otsu_opts o;
  lumen_otsu_opts_init(&o);
  o.exec = c->ex;
  if (c->f->has_bins) o.bins = c->f->bins;
  *c->is_mask = 1;
  return lumen_filter_otsu(c->ctx, c->in, &o, c->scalar, c->out);
}

static lumen_status run_sauvola(const filter_call *c) {
  const fvals *f = c->f;
  lumen_sauvola_opts o;
  lumen_sauvola_opts_init(&o);
  o.exec = c->ex;
  if (f->has_window) o.window = f->window;
  if (f->has_k) o.k = f->k;
  if (f->has_r) o.r = f->r;
  o.output_threshold = f->outthr;
  if (f->has_fg) o.foreground = f->fg;
  if (f->has_spatial) o.spatial_dims = f->spatial;
  return lumen_filter_sauvola(c->ctx, c->in, &o, c->out);
}

/* local_variance and variance_binarize (a mask) */
static lumen_status run_local_variance(const filter_call *c) {
  lumen_local_variance_opts o;
  lumen_local_variance_opts_init(&o);
  o.exec = c->ex;
  if (c->f->has_window) o.window = c->f->window;
  if (c->f->has_alpha) o.alpha = c->f->alpha;
  use_boundary(c->f, &o.mode, &o.cval, &o.spatial_dims);
  if (c->op[0] == 'l') return lumen_filter_local_variance(c->ctx, c->in, &o, c->out);
  *c->is_mask = 1;
  return lumen_filter_variance_binarize(c->ctx, c->in, &o, c->out);
}

int lumen_filtercli_morph_op(const char *op) {
  static const char *const morph_ops[] = {"erode", "dilate", "open", "close", "tophat"}; /* lumen_morph_op order */
  for (int k = 0; k < 5; k++)
    if (strcmp(op, morph_ops[k]) == 0) return k;
  return -1;
}

static lumen_status run_morphology(const filter_call *c) {
  lumen_morph_opts o;
  lumen_morph_opts_init(&o);
  o.exec = c->ex;
  o.op = (lumen_morph_op)lumen_filtercli_morph_op(c->op);
  if (c->f->has_element) o.element = c->f->element;
  if (c->f->has_radius) o.radius = c->f->radius;
  if (c->f->has_size) o.size = c->f->size;
  o.binary = c->f->binary;
  *c->is_mask = c->f->binary;
  return lumen_filter_morphology(c->ctx, c->in, &o, c->out);
}

/* The region ops: fill_holes and largest_component (masks), label (the label count as the scalar) */
static lumen_status run_region(const filter_call *c) {
  lumen_region_opts o;
  lumen_region_opts_init(&o);
  o.exec = c->ex;
  if (c->f->has_conn) o.connectivity = c->f->conn;
  if (c->f->has_spatial) o.spatial_dims = c->f->spatial;
  if (!strcmp(c->op, "label")) {
    int64_t n = 0;
    lumen_status s = lumen_filter_label(c->ctx, c->in, &o, c->out, &n);
    *c->scalar = (double)n;
    return s;
  }
  *c->is_mask = 1;
  if (c->op[0] == 'f') return lumen_filter_fill_holes(c->ctx, c->in, &o, c->out);
  return lumen_filter_largest_component(c->ctx, c->in, &o, c->out);
}

/* The runner of every op that writes an image (the statistics ops are stats_ops). */
static const struct {
  const char *op;
  lumen_status (*run)(const filter_call *c);
} filter_runners[] = {
  {"gaussian", run_gaussian}, {"dog", run_dog}, {"log", run_log}, {"median", run_median},
  {"gamma", run_gamma}, {"abs", run_abs}, {"contrast", run_contrast}, {"convolve", run_convolve},
  {"bandpass", run_bandpass}, {"otsu", run_otsu}, {"sauvola", run_sauvola},
  {"local_variance", run_local_variance}, {"variance_binarize", run_local_variance},
  {"erode", run_morphology}, {"dilate", run_morphology}, {"open", run_morphology}, {"close", run_morphology},
  {"tophat", run_morphology}, {"fill_holes", run_region}, {"label", run_region},
  {"largest_component", run_region},
};

lumen_status lumen_filtercli_run(lumen_ctx *ctx, const char *op, const fvals *f, lumen_filter_exec ex,
                               const lumen_image *in, lumen_image **out, int *is_mask, double *scalar) {
  *is_mask = 0;
  const filter_call call = {ctx, op, f, ex, in, out, is_mask, scalar};
  for (size_t k = 0; k < sizeof filter_runners / sizeof filter_runners[0]; k++)
    if (strcmp(op, filter_runners[k].op) == 0) return filter_runners[k].run(&call);
  *out = NULL;
  return LUMEN_ERR_INVALID_ARGUMENT;
}
