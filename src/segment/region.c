/* Seeded region growing (host BFS, then a filter closing), DICOM-style windowing and bit-depth
 * normalisation (host point operations stored in the run's precision). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "segment/seg_internal.h"

/* The options of a NULL opts: those the _init functions below give. */
static const lumen_region_grow_opts region_grow_defaults = {
    .exec = SEG_DEFAULT_EXEC, .seeds = NULL, .n_seeds = 0, .threshold = NAN, .max_gradient = 0, .connectivity = 0,
    .smooth_radius = 2};
static const lumen_window_opts window_defaults = {
    .exec = SEG_DEFAULT_EXEC, .center = NAN, .width = NAN, .out_max = 255.0};
static const lumen_bits_opts bits_defaults = {.exec = SEG_DEFAULT_EXEC, .bits = 0, .target = 255.0};

SEG_DEFINE_OPTS_INIT(lumen_region_grow_opts, region_grow_defaults)
SEG_DEFINE_OPTS_INIT(lumen_window_opts, window_defaults)
SEG_DEFINE_OPTS_INIT(lumen_bits_opts, bits_defaults)

/* Neighbour offsets of a 2-D/3-D grid: full (8/26) or faces (4/6). */
static int neighbours(int nd, int full, int off[26][3]) {
  int n = 0;
  for (int dz = (nd > 2 ? -1 : 0); dz <= (nd > 2 ? 1 : 0); dz++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++) {
        int a = abs(dx) + abs(dy) + abs(dz);
        if (a == 0 || (!full && a > 1)) continue;
        off[n][0] = dx;
        off[n][1] = dy;
        off[n][2] = dz;
        n++;
      }
  return n;
}

static double grad_mag(const float *x, const int64_t *n, int nd, int64_t i, int64_t ix, int64_t iy, int64_t iz) {
  int64_t st[3] = {1, n[0], n[0] * n[1]}, c[3] = {ix, iy, iz};
  double g2 = 0;
  for (int a = 0; a < nd; a++) {
    int64_t lo = c[a] > 0 ? i - st[a] : i, hi = c[a] < n[a] - 1 ? i + st[a] : i;
    int64_t span = (c[a] > 0) + (c[a] < n[a] - 1);
    double g = span ? ((double)x[hi] - (double)x[lo]) / (double)span : 0.0;
    g2 += g * g;
  }
  return sqrt(g2);
}

/* The grid of a region growing call: its size and the neighbour offsets of its connectivity. */
typedef struct {
  int64_t n[3];
  int nd, noff;
  int off[26][3];
} grid;

/* The neighbours of voxel i inside the grid: their indices and coordinates; returns how many. */
static int neighbours_of(const grid *g, int64_t i, int64_t js[26], int64_t jc[26][3]) {
  const int64_t *n = g->n;
  int64_t ix = i % n[0], iy = (i / n[0]) % n[1], iz = i / (n[0] * n[1]);
  int m = 0;
  for (int k = 0; k < g->noff; k++) {
    int64_t jx = ix + g->off[k][0], jy = iy + g->off[k][1], jz = iz + g->off[k][2];
    if (jx < 0 || jy < 0 || jz < 0 || jx >= n[0] || jy >= n[1] || jz >= n[2]) continue;
    js[m] = jx + n[0] * (jy + n[1] * jz);
    jc[m][0] = jx;
    jc[m][1] = jy;
    jc[m][2] = jz;
    m++;
  }
  return m;
}

/* Flags of the voxels: bit 0 visited / in the region, bit 1 plateau seen, bit 2 seed. */
enum { IN_REGION = 1, PLATEAU_SEEN = 2, SEED = 4 };

/* The plateau of equal values around start (flagged PLATEAU_SEEN, left in queue[0, *tail));
   returns 1 when no neighbour of it is higher: a regional maximum. */
static int plateau_is_max(const grid *g, const float *x, int64_t start, int64_t *queue, uint8_t *flag, int64_t *tail) {
  float v = x[start];
  int64_t head = 0, js[26], jc[26][3];
  int is_max = 1;
  *tail = 0;
  queue[(*tail)++] = start;
  flag[start] |= PLATEAU_SEEN;
  while (head < *tail) {
    int m = neighbours_of(g, queue[head++], js, jc);
    for (int k = 0; k < m; k++) {
      int64_t j = js[k];
      if (x[j] > v) is_max = 0;
      else if (x[j] == v && !(flag[j] & PLATEAU_SEEN)) {
        flag[j] |= PLATEAU_SEEN;
        queue[(*tail)++] = j;
      }
    }
  }
  return is_max;
}

/* Flags the seeds (given, or the regional maxima, each plateau counted once) and returns the
   threshold: opts->threshold, or the mean of the seeds' values when it is NaN. */
static double mark_seeds(const grid *g, const float *x, const lumen_region_grow_opts *opts, int64_t *queue,
                         uint8_t *flag) {
  const int64_t *n = g->n;
  int nd = g->nd;
  int64_t total = n[0] * n[1] * n[2];
  double seed_sum = 0;
  int64_t seed_count = 0;
  if (opts->n_seeds > 0) {
    for (int64_t q = 0; q < opts->n_seeds; q++) {
      int64_t i = opts->seeds[q * nd] + opts->seeds[q * nd + 1] * n[0] + (nd > 2 ? opts->seeds[q * nd + 2] * n[0] * n[1] : 0);
      flag[i] |= SEED;
      seed_sum += x[i];
      seed_count++;
    }
  } else {
    for (int64_t start = 0; start < total; start++) {
      if (flag[start] & PLATEAU_SEEN) continue;
      int64_t tail = 0;
      if (!plateau_is_max(g, x, start, queue, flag, &tail)) continue;
      seed_sum += x[start];
      seed_count++;
      for (int64_t q = 0; q < tail; q++) flag[queue[q]] |= SEED;
    }
  }
  return isnan(opts->threshold) ? (seed_count ? seed_sum / (double)seed_count : 0.0) : opts->threshold;
}

/* Breadth-first growth from the seeds at or above thr through neighbours at or above thr (and,
   with max_gradient > 0, of a gradient magnitude at most max_gradient). */
static void grow(const grid *g, const float *x, double thr, double max_gradient, int64_t *queue, uint8_t *flag) {
  int64_t total = g->n[0] * g->n[1] * g->n[2];
  int64_t head = 0, tail = 0, js[26], jc[26][3];
  for (int64_t i = 0; i < total; i++)
    if ((flag[i] & SEED) && x[i] >= thr) {
      flag[i] |= IN_REGION;
      queue[tail++] = i;
    }
  while (head < tail) {
    int m = neighbours_of(g, queue[head++], js, jc);
    for (int k = 0; k < m; k++) {
      int64_t j = js[k];
      if ((flag[j] & IN_REGION) || !(x[j] >= thr)) continue;
      if (max_gradient > 0 && grad_mag(x, g->n, g->nd, j, jc[k][0], jc[k][1], jc[k][2]) > max_gradient) continue;
      flag[j] |= IN_REGION;
      queue[tail++] = j;
    }
  }
}

#define RREQ(cond, ...) \
  if (!(cond)) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, __VA_ARGS__)

static lumen_status check_region_grow(lumen_ctx *ctx, const char *fn, const lumen_image *in,
                                      const lumen_region_grow_opts *opts) {
  RREQ(in != NULL, "%s: in is NULL", fn);
  int nd = lumen_image_ndim(in);
  RREQ(nd == 2 || nd == 3, "%s: the image has %d dimension(s), expected 2-D or 3-D", fn, nd);
  RREQ(lumen_image_count(in) > 0, "%s: the image is empty, expected at least one voxel", fn);
  RREQ(opts->n_seeds >= 0 && (opts->n_seeds == 0 || opts->seeds), "%s: n_seeds is %lld with seeds %s", fn,
       (long long)opts->n_seeds, opts->seeds ? "set" : "NULL");
  RREQ(opts->connectivity == 0 || opts->connectivity == 1, "%s: connectivity is %d, expected 0 (full) or 1 (faces)",
       fn, opts->connectivity);
  RREQ(opts->smooth_radius >= 0, "%s: smooth_radius is %d, expected >= 0", fn, opts->smooth_radius);
  RREQ(opts->max_gradient >= 0 && !isnan(opts->max_gradient), "%s: max_gradient is %g, expected >= 0 (0 = off)", fn,
       opts->max_gradient);
  int64_t n[3] = {lumen_image_dim(in, 0), lumen_image_dim(in, 1), nd > 2 ? lumen_image_dim(in, 2) : 1};
  for (int64_t q = 0; q < opts->n_seeds; q++)
    for (int a = 0; a < nd; a++) {
      int64_t v = opts->seeds[q * nd + a];
      RREQ(v >= 0 && v < n[a], "%s: seed %lld coordinate %d is %lld, expected 0..%lld", fn, (long long)q, a,
           (long long)v, (long long)(n[a] - 1));
    }
  return LUMEN_OK;
}

/* The region as a uint8 mask, closed with a disk / ball of smooth_radius when that is > 0. */
static lumen_status region_mask(lumen_ctx *ctx, seg_run *run, const lumen_image *in, const uint8_t *flag,
                                int smooth_radius, lumen_image **out) {
  lumen_image *m = NULL;
  lumen_status s = seg_new_like(ctx, in, LUMEN_DTYPE_UINT8, 0, &m);
  if (s != LUMEN_OK) {
    lumen_image_free(m);
    return s;
  }
  uint8_t *p = lumen_image_data(m);
  int64_t total = lumen_image_count(in);
  for (int64_t i = 0; i < total; i++) p[i] = (uint8_t)(flag[i] & IN_REGION);
  if (smooth_radius > 0) {
    lumen_morph_opts d;
    lumen_morph_opts_init(&d);
    d.exec = run->step;
    d.op = LUMEN_MORPH_CLOSE;
    d.element = lumen_image_ndim(in) > 2 ? LUMEN_ELEMENT_BALL : LUMEN_ELEMENT_DISK;
    d.radius = smooth_radius;
    d.binary = 1;
    lumen_image *c = NULL;
    s = lumen_filter_morphology(ctx, m, &d, &c);
    if (s == LUMEN_OK) seg_step_done(run);
    lumen_image_free(m);
    m = c;
  }
  *out = m;
  return s;
}

/* Seeds, growth and the mask, on the float32 host voxels x. */
static lumen_status region_grow_host(lumen_ctx *ctx, seg_run *run, const char *fn, const lumen_image *in,
                                     const float *x, const lumen_region_grow_opts *opts, lumen_image **out) {
  grid g;
  g.nd = lumen_image_ndim(in);
  g.n[0] = lumen_image_dim(in, 0);
  g.n[1] = lumen_image_dim(in, 1);
  g.n[2] = g.nd > 2 ? lumen_image_dim(in, 2) : 1;
  g.noff = neighbours(g.nd, opts->connectivity == 0, g.off);
  int64_t total = g.n[0] * g.n[1] * g.n[2];
  int64_t *queue = malloc((size_t)total * sizeof *queue);
  uint8_t *flag = calloc((size_t)total, 1);
  lumen_status s = LUMEN_OK;
  if (!queue || !flag) s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  for (int64_t i = 0; s == LUMEN_OK && i < total; i++)
    if (isnan(x[i]))
      s = lumen_fail(ctx, LUMEN_ERR_INVALID_DATA, "%s: voxel %lld is NaN, expected numbers", fn, (long long)i);
  if (s == LUMEN_OK) {
    double thr = mark_seeds(&g, x, opts, queue, flag);
    grow(&g, x, thr, opts->max_gradient, queue, flag);
    s = region_mask(ctx, run, in, flag, opts->smooth_radius, out);
  }
  free(queue);
  free(flag);
  return s;
}

lumen_status lumen_segment_region_grow(lumen_ctx *ctx, const lumen_image *in, const lumen_region_grow_opts *opts,
                                       lumen_image **mask) {
  static const char fn[] = "lumen_segment_region_grow";
  seg_run run;
  lumen_status s = seg_start(ctx, &run, fn, "region_grow", opts ? &opts->exec : NULL, in, mask, "mask");
  if (s != LUMEN_OK) return s;
  const lumen_region_grow_opts *o = opts ? opts : &region_grow_defaults;
  if ((s = check_region_grow(ctx, fn, in, o)) != LUMEN_OK) return seg_end(&run, s);
  lumen_image *tmp = NULL, *m = NULL;
  const float *x;
  if ((s = seg_host_f32(ctx, in, &tmp, &x)) != LUMEN_OK) return seg_end(&run, s);
  seg_host_step(ctx, &run, "region growing");
  s = region_grow_host(ctx, &run, fn, in, x, o, &m);
  lumen_image_free(tmp);
  if (s != LUMEN_OK) {
    lumen_image_free(m);
    return seg_end(&run, s);
  }
  seg_copy_geometry(m, in);
  *mask = m;
  return seg_end(&run, s);
}

/* ------------------------------------------------------------------ point operations */

static lumen_status point_op(lumen_ctx *ctx, seg_run *run, const lumen_image *in, double scale, double offset,
                             double out_max, lumen_image **out) {
  /* out = clamp((x - offset) * scale, 0, 1) * out_max */
  lumen_image *tmp = NULL, *o = NULL;
  const float *x;
  lumen_status s = seg_host_f32(ctx, in, &tmp, &x);
  if (s != LUMEN_OK) return s;
  seg_host_step(ctx, run, run->total.op);
  s = seg_new_like(ctx, in, LUMEN_DTYPE_FLOAT32, 0, &o);
  if (s == LUMEN_OK) {
    float *p = lumen_image_data(o);
    int64_t n = lumen_image_count(in);
    int threads = lumen_ctx_threads(ctx);
    (void)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < n; i++) {
      double v = ((double)x[i] - offset) * scale;
      v = v < 0 ? 0 : (v > 1 ? 1 : v);
      p[i] = isnan(x[i]) ? NAN : (float)(v * out_max);
    }
    s = seg_store_precision(ctx, run, &o);
  }
  lumen_image_free(tmp);
  if (s != LUMEN_OK) {
    lumen_image_free(o);
    return s;
  }
  *out = o;
  return LUMEN_OK;
}

/* The range of the finite voxels of in (0, 0 when there are none). */
static lumen_status host_finite_range(lumen_ctx *ctx, const lumen_image *in, double *lo, double *hi) {
  lumen_image *tmp = NULL;
  const float *x;
  lumen_status s = seg_host_f32(ctx, in, &tmp, &x);
  if (s != LUMEN_OK) return s;
  float a = INFINITY, b = -INFINITY;
  const int64_t n = lumen_image_count(in);
  const int threads = lumen_ctx_threads(ctx);
  (void)threads;
  /* a min/max reduction on the threads' vectors (a non-finite voxel, v - v != 0, leaves it alone) */
#pragma omp parallel for simd schedule(static) reduction(min : a) reduction(max : b) num_threads(threads)
  for (int64_t i = 0; i < n; i++) {
    const float v = x[i], f = v - v == 0.0f;
    a = f && v < a ? v : a;
    b = f && v > b ? v : b;
  }
  if (a > b) a = b = 0;
  *lo = a;
  *hi = b;
  lumen_image_free(tmp);
  return LUMEN_OK;
}

static lumen_status check_window(lumen_ctx *ctx, const char *fn, const lumen_image *in, const lumen_window_opts *opts) {
  RREQ(in != NULL, "%s: in is NULL", fn);
  RREQ(lumen_image_count(in) > 0, "%s: the image is empty, expected at least one voxel", fn);
  RREQ(isnan(opts->width) || (opts->width > 0 && isfinite(opts->width)),
       "%s: width is %g, expected > 0 (or NaN = the data range)", fn, opts->width);
  RREQ(isnan(opts->center) || isfinite(opts->center), "%s: center is %g, expected a number (or NaN = the data middle)",
       fn, opts->center);
  RREQ(opts->out_max > 0 && isfinite(opts->out_max), "%s: out_max is %g, expected > 0", fn, opts->out_max);
  return LUMEN_OK;
}

lumen_status lumen_segment_window(lumen_ctx *ctx, const lumen_image *in, const lumen_window_opts *opts,
                                  lumen_image **out) {
  static const char fn[] = "lumen_segment_window";
  seg_run run;
  lumen_status s = seg_start(ctx, &run, fn, "window", opts ? &opts->exec : NULL, in, out, "out");
  if (s != LUMEN_OK) return s;
  const lumen_window_opts *o = opts ? opts : &window_defaults;
  if ((s = check_window(ctx, fn, in, o)) != LUMEN_OK) return seg_end(&run, s);
  double c = o->center, w = o->width;
  if (isnan(c) || isnan(w)) {
    double lo, hi;
    if ((s = host_finite_range(ctx, in, &lo, &hi)) != LUMEN_OK) return seg_end(&run, s);
    if (isnan(c)) c = 0.5 * (lo + hi);
    if (isnan(w)) w = hi > lo ? hi - lo : 1.0;
  }
  s = point_op(ctx, &run, in, 1.0 / w, c - 0.5 * w, o->out_max, out);
  return seg_end(&run, s);
}

static lumen_status check_bits(lumen_ctx *ctx, const char *fn, const lumen_image *in, const lumen_bits_opts *opts) {
  RREQ(in != NULL, "%s: in is NULL", fn);
  RREQ(lumen_image_count(in) > 0, "%s: the image is empty, expected at least one voxel", fn);
  RREQ(opts->bits >= 0 && opts->bits <= 32, "%s: bits is %d, expected 0 (infer 8/12/16) or 1..32", fn, opts->bits);
  RREQ(opts->target > 0 && isfinite(opts->target), "%s: target is %g, expected > 0", fn, opts->target);
  return LUMEN_OK;
}

lumen_status lumen_segment_normalize_bits(lumen_ctx *ctx, const lumen_image *in, const lumen_bits_opts *opts,
                                          lumen_image **out, int *bits_used) {
  static const char fn[] = "lumen_segment_normalize_bits";
  if (bits_used) *bits_used = 0;
  seg_run run;
  lumen_status s = seg_start(ctx, &run, fn, "normalize_bits", opts ? &opts->exec : NULL, in, out, "out");
  if (s != LUMEN_OK) return s;
  const lumen_bits_opts *o = opts ? opts : &bits_defaults;
  if ((s = check_bits(ctx, fn, in, o)) != LUMEN_OK) return seg_end(&run, s);
  int bits = o->bits;
  if (bits == 0) {
    double lo, hi;
    if ((s = host_finite_range(ctx, in, &lo, &hi)) != LUMEN_OK) return seg_end(&run, s);
    bits = hi <= 255 ? 8 : hi <= 4095 ? 12 : 16;
  }
  double full = ldexp(1.0, bits) - 1.0;
  s = point_op(ctx, &run, in, 1.0 / full, 0.0, o->target, out);
  if (s == LUMEN_OK && bits_used) *bits_used = bits;
  return seg_end(&run, s);
}
