/* GRAIL automatic intensity windowing (Albiol, Corbi & Albiol 2017, Med Phys 44(4)).
 *
 * The window [a, b] is the one whose display keeps the most texture: the metric is the sum, over a
 * bank of real Gabor kernels, of the mutual information between |Gabor * image| and
 * |Gabor * display|, display = clamp((image - a) / (b - a), 0, 1) * out_max (rounded to integer
 * levels when quantize is on). The window is searched coordinate-wise (b, then a) on a grid that
 * is refined tenfold each round.
 *
 * Every Gabor kernel exp(-(x^2+y^2)/(2 s^2)) cos(u x + v y) is the difference of two separable
 * kernels (cos(ux)cos(vy) - sin(ux)sin(vy)), so each response is four 1-D correlations with
 * lumen_filter_convolve (NEAREST borders); the histograms and mutual information are
 * lumen_filter_mutual_information's. Host only: no CUDA kernel. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "segment/seg_internal.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define GRAIL_MAX_SCALES 8
#define GRAIL_PI 3.14159265358979323846
#define GRAIL_MAX_ORIENTATIONS 32

/* The options of a NULL opts: those lumen_grail_opts_init gives (static: padding zero too). */
static const lumen_grail_opts grail_defaults = {
    .exec = SEG_DEFAULT_EXEC, .n_scales = 3, .n_orientations = 6, .delta = 0.0, .k_max = 3, .steps = 5,
    .bins = 256, .quantize = 1, .out_max = 255.0};

void lumen_grail_opts_init(lumen_grail_opts *opts) {
  if (!opts) return;
  memcpy(opts, &grail_defaults, sizeof *opts);
  lumen_filter_exec_init(&opts->exec);
}

/* ------------------------------------------------------------------ the Gabor bank */

/* Kernel i: four 1-D factors of length len[i] (cos x, sin x, cos y, sin y) at fac + off[i].
   Orientations theta and pi - theta share cos x, sin x and cos y and differ in the sign of sin y,
   so their responses are |A - B| and |A + B| of the same two separable products: the kernel with
   the larger theta is computed with its partner (partner[i] >= 0 on the smaller one, mirrored[j]
   on the larger one). */
typedef struct gabor_bank {
  int n;
  int len[GRAIL_MAX_SCALES * GRAIL_MAX_ORIENTATIONS];
  int64_t off[GRAIL_MAX_SCALES * GRAIL_MAX_ORIENTATIONS];
  int has_sin[GRAIL_MAX_SCALES * GRAIL_MAX_ORIENTATIONS];
  int partner[GRAIL_MAX_SCALES * GRAIL_MAX_ORIENTATIONS];
  int mirrored[GRAIL_MAX_SCALES * GRAIL_MAX_ORIENTATIONS];
  float *fac;
} gabor_bank;

/* Frequencies f_m = 0.25 / sqrt(2)^m cycles/pixel, sigma = 1 / (2 f_m), support ceil(6 sigma)
   made odd; orientations theta_n = n pi / N; the wave runs along x sin(theta) + y cos(theta)
   (x = column, y = row), as the reference's bank. */
static int bank_build(gabor_bank *g, int scales, int orientations) {
  memset(g, 0, sizeof *g);
  int64_t total = 0;
  for (int m = 0; m < scales; m++) {
    double f = 0.25 / pow(sqrt(2.0), m), sigma = 1.0 / (2.0 * f);
    int size = (int)ceil(6.0 * sigma);
    if (size % 2 == 0) size++;
    for (int k = 0; k < orientations; k++) {
      g->len[g->n] = size;
      g->off[g->n] = total;
      int mirror = orientations - k; /* pi - theta */
      g->partner[g->n] = k > 0 && k < mirror ? g->n + (mirror - k) : -1;
      g->mirrored[g->n] = k > 0 && k > mirror;
      total += 4 * (int64_t)size;
      g->n++;
    }
  }
  g->fac = malloc((size_t)total * sizeof *g->fac);
  if (!g->fac) return -1;
  int i = 0;
  for (int m = 0; m < scales; m++) {
    double f = 0.25 / pow(sqrt(2.0), m), sigma = 1.0 / (2.0 * f);
    for (int k = 0; k < orientations; k++, i++) {
      double theta = k * GRAIL_PI / orientations;
      double u = 2.0 * GRAIL_PI * f * sin(theta), v = 2.0 * GRAIL_PI * f * cos(theta);
      int len = g->len[i], half = len / 2;
      float *cx = g->fac + g->off[i], *sx = cx + len, *cy = sx + len, *sy = cy + len;
      double sin_peak = 0;
      for (int t = 0; t < len; t++) {
        double d = t - half, e = exp(-d * d / (2.0 * sigma * sigma));
        cx[t] = (float)(e * cos(u * d));
        sx[t] = (float)(e * sin(u * d));
        cy[t] = (float)(e * cos(v * d));
        sy[t] = (float)(e * sin(v * d));
        sin_peak = fmax(sin_peak, fabs((double)sx[t] * sy[t]));
      }
      g->has_sin[i] = sin_peak > 1e-12; /* theta = 0: sin(u x) = 0, one separable term */
    }
  }
  return 0;
}

/* One 1-D correlation along axis 0 (x) or 1 (y), NEAREST borders, float32 on the CPU. */
static lumen_status corr1d(lumen_ctx *ctx, const lumen_image *in, const float *k, int len, int axis,
                           lumen_image **out) {
  lumen_convolve_opts o;
  lumen_convolve_opts_init(&o);
  o.exec.device = "cpu";
  o.exec.precision = LUMEN_PRECISION_FULL;
  o.kernel = k;
  o.kernel_ndim = 2;
  o.kernel_dims[0] = axis == 0 ? len : 1;
  o.kernel_dims[1] = axis == 0 ? 1 : len;
  o.kernel_dims[2] = 1;
  o.mode = LUMEN_BOUNDARY_NEAREST;
  o.correlate = 1;
  return lumen_filter_convolve(ctx, in, &o, out);
}

/* The separable product kx (along x) then ky (along y). */
static lumen_status corr2d(lumen_ctx *ctx, const lumen_image *in, const float *kx, const float *ky, int len,
                           lumen_image **out) {
  lumen_image *t = NULL;
  lumen_status s = corr1d(ctx, in, kx, len, 0, &t);
  if (s == LUMEN_OK) s = corr1d(ctx, t, ky, len, 1, out);
  lumen_image_free(t);
  return s;
}

/* |Gabor_i * img| as a float32 host image, and in *mirror (when partner[i] >= 0) the response
   of its pi - theta partner. */
static lumen_status gabor_response(lumen_ctx *ctx, const gabor_bank *g, int i, const lumen_image *img,
                                   lumen_image **out, lumen_image **mirror) {
  *out = *mirror = NULL;
  int len = g->len[i];
  const float *cx = g->fac + g->off[i], *sx = cx + len, *cy = sx + len, *sy = cy + len;
  lumen_image *re = NULL, *im = NULL, *pm = NULL;
  lumen_status s = corr2d(ctx, img, cx, cy, len, &re);
  if (s == LUMEN_OK && g->has_sin[i]) s = corr2d(ctx, img, sx, sy, len, &im);
  if (s == LUMEN_OK && g->partner[i] >= 0) s = lumen_image_clone(ctx, re, &pm);
  if (s != LUMEN_OK) {
    lumen_image_free(re);
    lumen_image_free(im);
    return s;
  }
  float *r = lumen_image_data(re), *p = pm ? lumen_image_data(pm) : NULL;
  const float *q = im ? lumen_image_data(im) : NULL;
  int64_t n = lumen_image_count(re);
  for (int64_t j = 0; j < n; j++) {
    float a = r[j], b = q ? q[j] : 0.0f;
    r[j] = fabsf(a - b);
    if (p) p[j] = fabsf(a + b);
  }
  lumen_image_free(im);
  *out = re;
  *mirror = pm;
  return LUMEN_OK;
}

/* ------------------------------------------------------------------ the metric */

/* The responses are computed in parallel over the bank, one kernel (or theta / pi - theta pair)
   per task, each worker with its own single-threaded context: one 1-D pass over a mammogram-sized
   image is too short to share between threads (on a busy 2-core machine row-parallel passes made
   a 256x256 search 8x slower than one thread). Sums are taken in kernel order: the metric does
   not depend on the number of threads. */
#define GRAIL_MAX_WORKERS 64

typedef struct grail_state {
  lumen_ctx *ctx;
  const lumen_grail_opts *o;
  gabor_bank bank;
  lumen_image *img;        /* float32 host copy of the input */
  lumen_image *display;    /* scratch: the windowed image */
  lumen_image **ref;       /* |Gabor_i * img| */
  double *mi;              /* per kernel, of the last evaluation */
  lumen_status *status;    /* per kernel */
  int workers;
  lumen_ctx *wctx[GRAIL_MAX_WORKERS];
} grail_state;

static void state_free(grail_state *st) {
  if (st->ref)
    for (int i = 0; i < st->bank.n; i++) lumen_image_free(st->ref[i]);
  free(st->ref);
  free(st->mi);
  free(st->status);
  free(st->bank.fac);
  lumen_image_free(st->img);
  lumen_image_free(st->display);
  for (int w = 0; w < st->workers; w++) lumen_ctx_destroy(st->wctx[w]);
  memset(st, 0, sizeof *st);
}

/* The responses of every kernel to img: stored as the references (store = 1), else their mutual
   information with the references goes to st->mi. Returns the status of the first failing kernel
   in kernel order; st->ctx holds a failing kernel's message. */
static lumen_status bank_pass(grail_state *st, const lumen_image *img, int store) {
  const gabor_bank *g = &st->bank;
  const int n = g->n;
  lumen_stats_opts so;
  lumen_stats_opts_init(&so);
  so.exec.device = "cpu";
  so.bins = st->o->bins;
  for (int i = 0; i < n; i++) st->status[i] = LUMEN_OK;
  const int workers = st->workers;
  (void)workers;
#pragma omp parallel for schedule(dynamic, 1) num_threads(workers)
  for (int i = 0; i < n; i++) {
    if (g->mirrored[i]) continue;
#ifdef _OPENMP
    lumen_ctx *c = st->wctx[omp_get_thread_num()];
#else
    lumen_ctx *c = st->wctx[0];
#endif
    lumen_image *r = NULL, *m = NULL;
    const int j = g->partner[i];
    lumen_status s = gabor_response(c, g, i, img, &r, &m);
    if (s == LUMEN_OK && store) {
      st->ref[i] = r;
      if (j >= 0) st->ref[j] = m;
      r = m = NULL;
    } else if (s == LUMEN_OK) {
      lumen_mi_result mi;
      memset(&mi, 0, sizeof mi);
      s = lumen_filter_mutual_information(c, st->ref[i], r, &so, &mi);
      st->mi[i] = mi.mutual_information;
      if (s == LUMEN_OK && j >= 0) {
        s = lumen_filter_mutual_information(c, st->ref[j], m, &so, &mi);
        st->mi[j] = mi.mutual_information;
      }
    }
    lumen_image_free(r);
    lumen_image_free(m);
    if (s != LUMEN_OK) {
      st->status[i] = s;
      lumen_fail(st->ctx, s, "%s", lumen_ctx_last_error(c)); /* a failing kernel's message (locked) */
    }
  }
  for (int i = 0; i < n; i++)
    if (st->status[i] != LUMEN_OK) return st->status[i];
  return LUMEN_OK;
}

static lumen_status state_init(lumen_ctx *ctx, const char *fn, grail_state *st, const lumen_image *in,
                               const lumen_grail_opts *o) {
  memset(st, 0, sizeof *st);
  st->ctx = ctx;
  st->o = o;
  lumen_status s = lumen_image_clone(ctx, in, &st->img);
  if (s == LUMEN_OK) s = seg_own_f32(ctx, &st->img);
  if (s == LUMEN_OK) s = lumen_image_clone(ctx, st->img, &st->display);
  if (s != LUMEN_OK) return s;
  if (bank_build(&st->bank, o->n_scales, o->n_orientations) != 0 ||
      !(st->ref = calloc((size_t)st->bank.n, sizeof *st->ref)) ||
      !(st->mi = calloc((size_t)st->bank.n, sizeof *st->mi)) ||
      !(st->status = calloc((size_t)st->bank.n, sizeof *st->status)))
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory for the Gabor bank", fn);
  int workers = lumen_ctx_threads(ctx);
  if (workers > st->bank.n) workers = st->bank.n;
  if (workers > GRAIL_MAX_WORKERS) workers = GRAIL_MAX_WORKERS;
  if (workers < 1) workers = 1;
  for (int w = 0; w < workers; w++) {
    if (lumen_ctx_create(&st->wctx[w]) != LUMEN_OK)
      return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory for a worker context", fn);
    st->workers = w + 1;
    lumen_ctx_set_threads(st->wctx[w], 1);
  }
  return bank_pass(st, st->img, 1);
}

static lumen_status state_metric(grail_state *st, double a, double b, double *metric) {
  const float *x = lumen_image_const_data(st->img);
  float *d = lumen_image_data(st->display);
  const int64_t n = lumen_image_count(st->img);
  const double scale = st->o->out_max / (b - a);
  const double top = st->o->out_max;
  const int quantize = st->o->quantize;
  for (int64_t j = 0; j < n; j++) {
    double v = ((double)x[j] - a) * scale;
    v = v < 0 ? 0 : (v > top ? top : v);
    d[j] = (float)(quantize ? floor(v + 0.5) : v);
  }
  lumen_status s = bank_pass(st, st->display, 0);
  if (s != LUMEN_OK) return s;
  double sum = 0;
  for (int i = 0; i < st->bank.n; i++) sum += st->mi[i];
  *metric = sum;
  return LUMEN_OK;
}

/* ------------------------------------------------------------------ checks */

#define GREQ(cond, ...) \
  do { if (!(cond)) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, __VA_ARGS__); } while (0)

static lumen_status check_opts(lumen_ctx *ctx, const char *fn, const lumen_grail_opts *o) {
  GREQ(o->n_scales >= 1 && o->n_scales <= GRAIL_MAX_SCALES, "%s: n_scales is %d, expected 1..%d", fn, o->n_scales,
       GRAIL_MAX_SCALES);
  GREQ(o->n_orientations >= 1 && o->n_orientations <= GRAIL_MAX_ORIENTATIONS, "%s: n_orientations is %d, expected 1..%d",
       fn, o->n_orientations, GRAIL_MAX_ORIENTATIONS);
  GREQ(isfinite(o->delta) && o->delta >= 0, "%s: delta is %g, expected > 0 (or 0 = 300 on the 12-bit scale)", fn,
       o->delta);
  GREQ(o->k_max >= 1 && o->k_max <= 12, "%s: k_max is %d, expected 1..12 rounds", fn, o->k_max);
  GREQ(o->steps >= 1 && o->steps <= 1000, "%s: steps is %d, expected 1..1000", fn, o->steps);
  GREQ(o->bins >= 2 && o->bins <= 4096, "%s: bins is %d, expected 2..4096", fn, o->bins);
  GREQ(o->quantize == 0 || o->quantize == 1, "%s: quantize is %d, expected 0 or 1", fn, o->quantize);
  GREQ(isfinite(o->out_max) && o->out_max >= 1, "%s: out_max is %g, expected >= 1", fn, o->out_max);
  return LUMEN_OK;
}

/* A 2-D image of finite values, not constant; its range. */
static lumen_status check_image(lumen_ctx *ctx, const char *fn, const lumen_image *in, double *lo, double *hi) {
  GREQ(in != NULL, "%s: in is NULL", fn);
  GREQ(lumen_image_ndim(in) == 2, "%s: the image has %d dimension(s), expected a 2-D image (one window per image)", fn,
       lumen_image_ndim(in));
  GREQ(lumen_image_dim(in, 0) >= 2 && lumen_image_dim(in, 1) >= 2, "%s: the image is %lldx%lld, expected at least 2x2",
       fn, (long long)lumen_image_dim(in, 0), (long long)lumen_image_dim(in, 1));
  lumen_image *tmp = NULL;
  const float *x;
  lumen_status s = seg_host_f32(ctx, in, &tmp, &x);
  if (s != LUMEN_OK) return s;
  double a = INFINITY, b = -INFINITY;
  int64_t n = lumen_image_count(in), bad = -1;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(x[i])) {
      bad = i;
      break;
    }
    if (x[i] < a) a = x[i];
    if (x[i] > b) b = x[i];
  }
  lumen_image_free(tmp);
  GREQ(bad < 0, "%s: voxel %lld is not finite, expected finite intensities", fn, (long long)bad);
  GREQ(b > a, "%s: the image is constant (%g), expected at least two distinct intensities", fn, a);
  *lo = a;
  *hi = b;
  return LUMEN_OK;
}

/* ------------------------------------------------------------------ entry points */

lumen_status lumen_segment_grail_metric(lumen_ctx *ctx, const lumen_image *in, const lumen_grail_opts *opts, double a,
                                        double b, double *metric) {
  static const char fn[] = "lumen_segment_grail_metric";
  GREQ(metric != NULL, "%s: metric is NULL", fn);
  *metric = NAN;
  const lumen_grail_opts *o = opts ? opts : &grail_defaults;
  double lo, hi;
  lumen_status s = check_opts(ctx, fn, o);
  if (s == LUMEN_OK) s = check_image(ctx, fn, in, &lo, &hi);
  if (s != LUMEN_OK) return s;
  GREQ(isfinite(a) && isfinite(b) && a < b, "%s: the window is [%g, %g], expected finite a < b", fn, a, b);
  grail_state st;
  s = state_init(ctx, fn, &st, in, o);
  if (s == LUMEN_OK) s = state_metric(&st, a, b, metric);
  state_free(&st);
  return s;
}

/* The best candidate for one bound (upper: b, else a) on the grid current + j * delta. */
static lumen_status search_bound(grail_state *st, double *a, double *b, double delta, int upper, double *best,
                                 int *evals) {
  const double cur = upper ? *b : *a;
  double pick = cur;
  for (int j = -st->o->steps; j <= st->o->steps; j++) {
    double c = cur + j * delta;
    if (j == 0 || (upper ? !(c > *a) : !(c < *b))) continue;
    double m;
    lumen_status s = state_metric(st, upper ? *a : c, upper ? c : *b, &m);
    if (s != LUMEN_OK) return s;
    ++*evals;
    if (m > *best) { /* ties keep the current bound */
      *best = m;
      pick = c;
    }
  }
  if (upper)
    *b = pick;
  else
    *a = pick;
  return LUMEN_OK;
}

lumen_status lumen_segment_grail(lumen_ctx *ctx, const lumen_image *in, const lumen_grail_opts *opts, lumen_image **out,
                                 lumen_grail_result *result) {
  static const char fn[] = "lumen_segment_grail";
  if (result) memset(result, 0, sizeof *result);
  seg_run run;
  lumen_status s = seg_start(ctx, &run, fn, "grail", opts ? &opts->exec : NULL, in, out, "out");
  if (s != LUMEN_OK) return s;
  const lumen_grail_opts *o = opts ? opts : &grail_defaults;
  double lo, hi;
  if ((s = check_opts(ctx, fn, o)) != LUMEN_OK || (s = check_image(ctx, fn, in, &lo, &hi)) != LUMEN_OK)
    return seg_end(&run, s);
  seg_host_step(ctx, &run, "grail");

  lumen_grail_result r;
  memset(&r, 0, sizeof r);
  r.delta = o->delta;
  if (r.delta == 0) { /* the reference's 300 is on the 12-bit scale: scale it to the data's depth */
    r.bits = hi <= 255 ? 8 : hi <= 4095 ? 12 : 16;
    r.delta = 300.0 * (ldexp(1.0, r.bits) - 1.0) / 4095.0;
  }
  grail_state st;
  s = state_init(ctx, fn, &st, in, o);
  r.a = lo;
  r.b = hi;
  if (s == LUMEN_OK) s = state_metric(&st, r.a, r.b, &r.metric);
  r.evaluations = 1;
  double delta = r.delta;
  for (int k = 0; k < o->k_max && s == LUMEN_OK; k++) {
    s = search_bound(&st, &r.a, &r.b, delta, 1, &r.metric, &r.evaluations);
    if (s == LUMEN_OK) s = search_bound(&st, &r.a, &r.b, delta, 0, &r.metric, &r.evaluations);
    delta /= 10.0;
  }
  state_free(&st);
  if (s != LUMEN_OK) return seg_end(&run, s);

  lumen_window_opts w;
  lumen_window_opts_init(&w);
  w.exec.device = "cpu";
  w.exec.precision = (int)run.precision;
  w.center = 0.5 * (r.a + r.b);
  w.width = r.b - r.a;
  w.out_max = o->out_max;
  if ((s = lumen_segment_window(ctx, in, &w, out)) != LUMEN_OK) return seg_end(&run, s);
  lumen_log(ctx, LUMEN_LOG_INFO, "%s: window a = %.10g, b = %.10g (metric %.6g bits, %d evaluations, delta %g)", fn,
            r.a, r.b, r.metric, r.evaluations, r.delta);
  if (result) *result = r;
  return seg_end(&run, s);
}
