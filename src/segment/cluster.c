/* Intensity clustering: k-means (k-means++ seeding), fuzzy c-means and possibilistic fuzzy
 * c-means, on the host in float64 sums. Deterministic for a seed whatever the thread count: every
 * sum is made per fixed block of voxels and the block sums are added in order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "segment/seg_internal.h"

#define BLOCK 65536

void lumen_kmeans_opts_init(lumen_kmeans_opts *o) {
  static const lumen_kmeans_opts defaults = {
      .k = 2, .max_iterations = 100, .tolerance = 1e-4, .seed = 42, .output = LUMEN_CLUSTER_MASK};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

void lumen_fcm_opts_init(lumen_fcm_opts *o) {
  static const lumen_fcm_opts defaults = {
      .c = 2, .m = 2.0, .max_iterations = 100, .tolerance = 1e-3, .seed = 42, .output = LUMEN_CLUSTER_MASK,
      .eta = 2.0, .a = 1.0, .b = 4.0, .tau = 0.04};
  if (!o) return;
  *o = defaults;
  lumen_filter_exec_init(&o->exec);
}

typedef struct cl_data {
  const float *x;
  int64_t n;
  int64_t nblocks;
  double lo, hi;   /* finite range */
  int threads;
} cl_data;

static inline int64_t blk_end(const cl_data *d, int64_t b) {
  int64_t e = (b + 1) * BLOCK;
  return e < d->n ? e : d->n;
}

static int nearest(const double *c, int k, double x) {
  int best = 0;
  double bd = fabs(x - c[0]);
  for (int j = 1; j < k; j++) {
    double dd = fabs(x - c[j]);
    if (dd < bd) {
      bd = dd;
      best = j;
    }
  }
  return best;
}

/* k-means++: the first centre uniform, the next ones with probability ~ D(x)^2. */
static lumen_status kmeanspp(lumen_ctx *ctx, const cl_data *d, int k, uint64_t seed, double *c) {
  uint64_t st = seed;
  double *bs = malloc((size_t)d->nblocks * sizeof *bs);
  if (!bs) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "k-means++: out of memory");
  int64_t first = (int64_t)(seg_rand_uniform(&st) * (double)d->n);
  if (first >= d->n) first = d->n - 1;
  c[0] = d->x[first];
  for (int j = 1; j < k; j++) {
#pragma omp parallel for schedule(static) num_threads(d->threads)
    for (int64_t b = 0; b < d->nblocks; b++) {
      double s = 0;
      for (int64_t i = b * BLOCK; i < blk_end(d, b); i++) {
        double dd = fabs(d->x[i] - c[nearest(c, j, d->x[i])]);
        s += dd * dd;
      }
      bs[b] = s;
    }
    double total = 0;
    for (int64_t b = 0; b < d->nblocks; b++) total += bs[b];
    double u = seg_rand_uniform(&st);
    if (!(total > 0)) {  /* fewer distinct values than clusters: repeat a centre */
      c[j] = c[j - 1];
      continue;
    }
    double r = u * total, acc = 0;
    int64_t b = 0;
    while (b < d->nblocks - 1 && acc + bs[b] <= r) acc += bs[b++];
    int64_t pick = blk_end(d, b) - 1;
    for (int64_t i = b * BLOCK; i < blk_end(d, b); i++) {
      double dd = fabs(d->x[i] - c[nearest(c, j, d->x[i])]);
      acc += dd * dd;
      if (acc > r) {
        pick = i;
        break;
      }
    }
    c[j] = d->x[pick];
  }
  free(bs);
  return LUMEN_OK;
}


/* Orders centres ascending; perm[new] = old. */
static void sort_centres(int k, double *c, double *extra, int *perm) {
  for (int j = 0; j < k; j++) perm[j] = j;
  for (int i = 1; i < k; i++)
    for (int j = i; j > 0 && c[perm[j]] < c[perm[j - 1]]; j--) {
      int t = perm[j];
      perm[j] = perm[j - 1];
      perm[j - 1] = t;
    }
  double tc[LUMEN_CLUSTER_MAX], te[LUMEN_CLUSTER_MAX];
  for (int j = 0; j < k; j++) {
    tc[j] = c[perm[j]];
    if (extra) te[j] = extra[perm[j]];
  }
  for (int j = 0; j < k; j++) {
    c[j] = tc[j];
    if (extra) extra[j] = te[j];
  }
}

static lumen_status cl_prepare(lumen_ctx *ctx, seg_run *run, const char *fn, const lumen_image *in, lumen_image **tmp,
                               cl_data *d) {
  LUMEN_REQUIRE(ctx, in != NULL, "%s: in is NULL", fn);
  LUMEN_REQUIRE(ctx, lumen_image_count(in) > 0, "%s: the image is empty, expected at least one voxel", fn);
  const float *x;
  lumen_status s = seg_host_f32(ctx, in, tmp, &x);
  if (s != LUMEN_OK) return s;
  seg_host_step(ctx, run, "clustering");
  d->x = x;
  d->n = lumen_image_count(in);
  d->nblocks = (d->n + BLOCK - 1) / BLOCK;
  d->threads = lumen_ctx_threads(ctx);
  double lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; i < d->n; i++) {
    if (!isfinite(x[i])) {
      lumen_image_free(*tmp);
      *tmp = NULL;
      return lumen_fail(ctx, LUMEN_ERR_INVALID_DATA, "%s: voxel %lld is %g, expected finite values", fn,
                        (long long)i, (double)x[i]);
    }
    if (x[i] < lo) lo = x[i];
    if (x[i] > hi) hi = x[i];
  }
  d->lo = lo;
  d->hi = hi;
  return LUMEN_OK;
}

/* Hard labels (index of the nearest centre, centres ascending) into a uint8 image. */
static lumen_status cl_output(lumen_ctx *ctx, const lumen_image *in, const cl_data *d, const double *c, int k,
                              lumen_cluster_output output, lumen_cluster_result *res, lumen_image **out) {
  lumen_image *o = NULL;
  lumen_status s = seg_new_like(ctx, in, LUMEN_DTYPE_UINT8, 0, &o);
  if (s != LUMEN_OK) return s;
  uint8_t *p = lumen_image_data(o);
  int64_t sizes[LUMEN_CLUSTER_MAX] = {0};
  for (int64_t i = 0; i < d->n; i++) {
    int j = nearest(c, k, d->x[i]);
    sizes[j]++;
    p[i] = (uint8_t)(output == LUMEN_CLUSTER_LABELS ? j : (j == k - 1));
  }
  if (res)
    for (int j = 0; j < k; j++) res->sizes[j] = sizes[j];
  *out = o;
  return LUMEN_OK;
}

lumen_status lumen_segment_kmeans(lumen_ctx *ctx, const lumen_image *in, const lumen_kmeans_opts *opts,
                                  lumen_image **out, lumen_cluster_result *result) {
  static const char fn[] = "lumen_segment_kmeans";
  if (result) memset(result, 0, sizeof *result);
  seg_run run;
  lumen_status s = seg_start(ctx, &run, fn, "kmeans", opts ? &opts->exec : NULL, in, out, "out");
  if (s != LUMEN_OK) return s;
  lumen_kmeans_opts def;
  if (!opts) {
    lumen_kmeans_opts_init(&def);
    opts = &def;
  }
#define CREQ(cond, ...) \
  if (!(cond)) return seg_end(&run, lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, __VA_ARGS__))
  CREQ(opts->k >= 2 && opts->k <= LUMEN_CLUSTER_MAX, "%s: k is %d, expected 2..%d", fn, opts->k, LUMEN_CLUSTER_MAX);
  CREQ(opts->max_iterations >= 1, "%s: max_iterations is %d, expected >= 1", fn, opts->max_iterations);
  CREQ(opts->tolerance >= 0 && isfinite(opts->tolerance), "%s: tolerance is %g, expected >= 0", fn, opts->tolerance);
  CREQ((int)opts->output >= 0 && opts->output < LUMEN_CLUSTER_OUTPUT_COUNT,
       "%s: output is %d, expected LUMEN_CLUSTER_MASK (0) or LUMEN_CLUSTER_LABELS (1)", fn, (int)opts->output);
  lumen_image *tmp = NULL;
  cl_data d;
  if ((s = cl_prepare(ctx, &run, fn, in, &tmp, &d)) != LUMEN_OK) return seg_end(&run, s);
  int k = opts->k;
  double c[LUMEN_CLUSTER_MAX];
  double *part = malloc((size_t)d.nblocks * (size_t)k * 2 * sizeof *part);
  if (!part) s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  if (s == LUMEN_OK) s = kmeanspp(ctx, &d, k, opts->seed, c);
  int it = 0, converged = 0;
  double tol = opts->tolerance * (d.hi - d.lo);
  double obj = 0;
  while (s == LUMEN_OK && it < opts->max_iterations) {
    it++;
#pragma omp parallel for schedule(static) num_threads(d.threads)
    for (int64_t b = 0; b < d.nblocks; b++) {
      double *sum = part + (size_t)b * (size_t)k * 2, *cnt = sum + k;
      for (int j = 0; j < k; j++) sum[j] = cnt[j] = 0;
      for (int64_t i = b * BLOCK; i < blk_end(&d, b); i++) {
        int j = nearest(c, k, d.x[i]);
        sum[j] += d.x[i];
        cnt[j] += 1;
      }
    }
    double shift = 0;
    for (int j = 0; j < k; j++) {
      double sm = 0, ct = 0;
      for (int64_t b = 0; b < d.nblocks; b++) {
        sm += part[(size_t)b * (size_t)k * 2 + (size_t)j];
        ct += part[(size_t)b * (size_t)k * 2 + (size_t)k + (size_t)j];
      }
      if (ct > 0) {
        double nc = sm / ct;
        if (fabs(nc - c[j]) > shift) shift = fabs(nc - c[j]);
        c[j] = nc;
      }
    }
    if (shift <= tol) {
      converged = 1;
      break;
    }
    if ((s = lumen_progress(ctx, (double)it / opts->max_iterations, "kmeans")) != LUMEN_OK) break;
  }
  free(part);
  int perm[LUMEN_CLUSTER_MAX];
  if (s == LUMEN_OK) {
    sort_centres(k, c, NULL, perm);
    for (int64_t i = 0; i < d.n; i++) {
      double dd = d.x[i] - c[nearest(c, k, d.x[i])];
      obj += dd * dd;
    }
    s = cl_output(ctx, in, &d, c, k, opts->output, result, out);
  }
  if (s == LUMEN_OK && result) {
    result->k = k;
    for (int j = 0; j < k; j++) result->centers[j] = c[j];
    result->iterations = it;
    result->converged = converged;
    result->objective = obj;
  }
  lumen_image_free(tmp);
  return seg_end(&run, s);
}

/* ------------------------------------------------------------------ fuzzy c-means */


static inline double powm(double u, double m) { return m == 2.0 ? u * u : pow(u, m); }

static lumen_status check_fcm(lumen_ctx *ctx, const char *fn, const lumen_fcm_opts *o, int pfcm) {
  LUMEN_REQUIRE(ctx, o->c >= 2 && o->c <= LUMEN_CLUSTER_MAX, "%s: c is %d, expected 2..%d", fn, o->c,
                LUMEN_CLUSTER_MAX);
  LUMEN_REQUIRE(ctx, o->m > 1 && isfinite(o->m), "%s: m is %g, expected > 1", fn, o->m);
  LUMEN_REQUIRE(ctx, o->max_iterations >= 1, "%s: max_iterations is %d, expected >= 1", fn, o->max_iterations);
  LUMEN_REQUIRE(ctx, o->tolerance >= 0 && isfinite(o->tolerance), "%s: tolerance is %g, expected >= 0", fn,
                o->tolerance);
  LUMEN_REQUIRE(ctx, (int)o->output >= 0 && o->output < LUMEN_CLUSTER_OUTPUT_COUNT,
                "%s: output is %d, expected LUMEN_CLUSTER_MASK (0) or LUMEN_CLUSTER_LABELS (1)", fn, (int)o->output);
  if (pfcm) {
    LUMEN_REQUIRE(ctx, o->eta > 1 && isfinite(o->eta), "%s: eta is %g, expected > 1", fn, o->eta);
    LUMEN_REQUIRE(ctx, o->a >= 0 && o->b > 0 && isfinite(o->a) && isfinite(o->b),
                  "%s: a is %g and b is %g, expected a >= 0 and b > 0", fn, o->a, o->b);
    LUMEN_REQUIRE(ctx, o->tau > 0 && o->tau <= 1, "%s: tau is %g, expected in (0, 1]", fn, o->tau);
  }
  return LUMEN_OK;
}

/* Runs FCM from k-means++ centres; c receives the centres (unsorted), part is scratch. */
static lumen_status fcm_core(lumen_ctx *ctx, const cl_data *d, const lumen_fcm_opts *o, double *c, int *iters,
                             int *converged, const char *stage) {
  int k = o->c;
  double e = 2.0 / (o->m - 1.0);
  lumen_status s = kmeanspp(ctx, d, k, o->seed, c);
  if (s != LUMEN_OK) return s;
  double *part = malloc((size_t)d->nblocks * ((size_t)k * 2 + 1) * sizeof *part);
  if (!part) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "fuzzy c-means: out of memory");
  double prev[LUMEN_CLUSTER_MAX];
  int it = 0;
  *converged = 0;
  while (it < o->max_iterations) {
    it++;
    size_t stride = (size_t)k * 2 + 1;
#pragma omp parallel for schedule(static) num_threads(d->threads)
    for (int64_t b = 0; b < d->nblocks; b++) {
      double *num = part + (size_t)b * stride, *den = num + k, *du = den + k;
      double u[LUMEN_CLUSTER_MAX], up[LUMEN_CLUSTER_MAX];
      for (int j = 0; j < k; j++) num[j] = den[j] = 0;
      *du = 0;
      for (int64_t i = b * BLOCK; i < blk_end(d, b); i++) {
        double x = d->x[i];
        seg_fcm_memberships(x, c, k, e, u);
        if (it > 1) {
          seg_fcm_memberships(x, prev, k, e, up);
          for (int j = 0; j < k; j++)
            if (fabs(u[j] - up[j]) > *du) *du = fabs(u[j] - up[j]);
        }
        for (int j = 0; j < k; j++) {
          double w = powm(u[j], o->m);
          num[j] += w * x;
          den[j] += w;
        }
      }
    }
    double du = 0;
    for (int j = 0; j < k; j++) prev[j] = c[j];
    for (int j = 0; j < k; j++) {
      double nm = 0, dn = 0;
      for (int64_t b = 0; b < d->nblocks; b++) {
        nm += part[(size_t)b * stride + (size_t)j];
        dn += part[(size_t)b * stride + (size_t)k + (size_t)j];
      }
      if (dn > 0) c[j] = nm / dn;
    }
    for (int64_t b = 0; b < d->nblocks; b++)
      if (part[(size_t)b * stride + 2 * (size_t)k] > du) du = part[(size_t)b * stride + 2 * (size_t)k];
    /* du compares the memberships of this pass with those of the previous centres */
    if (it > 1 && du <= o->tolerance) {
      *converged = 1;
      break;
    }
    if ((s = lumen_progress(ctx, (double)it / o->max_iterations, stage)) != LUMEN_OK) break;
  }
  free(part);
  *iters = it;
  return s;
}

static double fcm_objective(const cl_data *d, const double *c, int k, double m) {
  double e = 2.0 / (m - 1.0), obj = 0, u[LUMEN_CLUSTER_MAX];
  for (int64_t i = 0; i < d->n; i++) {
    seg_fcm_memberships(d->x[i], c, k, e, u);
    for (int j = 0; j < k; j++) obj += powm(u[j], m) * (d->x[i] - c[j]) * (d->x[i] - c[j]);
  }
  return obj;
}

static lumen_status fuzzy(lumen_ctx *ctx, const lumen_image *in, const lumen_fcm_opts *opts, lumen_image **out,
                          lumen_cluster_result *result, int pfcm) {
  const char *fn = pfcm ? "lumen_segment_pfcm" : "lumen_segment_fcm";
  if (result) memset(result, 0, sizeof *result);
  seg_run run;
  lumen_status s = seg_start(ctx, &run, fn, pfcm ? "pfcm" : "fcm", opts ? &opts->exec : NULL, in, out, "out");
  if (s != LUMEN_OK) return s;
  lumen_fcm_opts def;
  if (!opts) {
    lumen_fcm_opts_init(&def);
    opts = &def;
  }
  if ((s = check_fcm(ctx, fn, opts, pfcm)) != LUMEN_OK) return seg_end(&run, s);
  lumen_image *tmp = NULL;
  cl_data d;
  if ((s = cl_prepare(ctx, &run, fn, in, &tmp, &d)) != LUMEN_OK) return seg_end(&run, s);
  int k = opts->c, it = 0, conv = 0;
  double c[LUMEN_CLUSTER_MAX], gam[LUMEN_CLUSTER_MAX];
  s = fcm_core(ctx, &d, opts, c, &it, &conv, pfcm ? "pfcm" : "fcm");
  double e = 2.0 / (opts->m - 1.0);
  if (s == LUMEN_OK && pfcm) {
    /* gamma_j = sum u^m d^2 / sum u^m from the FCM result (K = 1) */
    double num[LUMEN_CLUSTER_MAX] = {0}, den[LUMEN_CLUSTER_MAX] = {0}, u[LUMEN_CLUSTER_MAX];
    for (int64_t i = 0; i < d.n; i++) {
      seg_fcm_memberships(d.x[i], c, k, e, u);
      for (int j = 0; j < k; j++) {
        double w = powm(u[j], opts->m), dd = d.x[i] - c[j];
        num[j] += w * dd * dd;
        den[j] += w;
      }
    }
    double floor = 1e-12 * ((d.hi - d.lo) * (d.hi - d.lo) + 1e-30);
    for (int j = 0; j < k; j++) gam[j] = den[j] > 0 && num[j] / den[j] > floor ? num[j] / den[j] : floor;
    double pe = 1.0 / (opts->eta - 1.0), tol = opts->tolerance * (d.hi - d.lo);
    int pit = 0;
    conv = 0;
    while (pit < opts->max_iterations) {
      pit++;
      double nm[LUMEN_CLUSTER_MAX] = {0}, dn[LUMEN_CLUSTER_MAX] = {0};
      for (int64_t i = 0; i < d.n; i++) {
        double x = d.x[i];
        seg_fcm_memberships(x, c, k, e, u);
        for (int j = 0; j < k; j++) {
          double dd = (x - c[j]) * (x - c[j]);
          double t = 1.0 / (1.0 + pow(opts->b / gam[j] * dd, pe));
          double w = opts->a * powm(u[j], opts->m) + opts->b * pow(t, opts->eta);
          nm[j] += w * x;
          dn[j] += w;
        }
      }
      double shift = 0;
      for (int j = 0; j < k; j++)
        if (dn[j] > 0) {
          double ncj = nm[j] / dn[j];
          if (fabs(ncj - c[j]) > shift) shift = fabs(ncj - c[j]);
          c[j] = ncj;
        }
      if (shift <= tol) {
        conv = 1;
        break;
      }
    }
    it += pit;
  }
  int perm[LUMEN_CLUSTER_MAX];
  if (s == LUMEN_OK) {
    sort_centres(k, c, pfcm ? gam : NULL, perm);
    if (!pfcm || opts->output == LUMEN_CLUSTER_LABELS) {
      s = cl_output(ctx, in, &d, c, k, opts->output, result, out);
    } else {
      lumen_image *o = NULL;
      s = seg_new_like(ctx, in, LUMEN_DTYPE_UINT8, 0, &o);
      if (s == LUMEN_OK) {
        uint8_t *p = lumen_image_data(o);
        double pe = 1.0 / (opts->eta - 1.0);
        int64_t sizes[LUMEN_CLUSTER_MAX] = {0};
        for (int64_t i = 0; i < d.n; i++) {
          double x = d.x[i], tmax = 0;
          int j0 = nearest(c, k, x);
          sizes[j0]++;
          for (int j = 0; j < k; j++) {
            double t = 1.0 / (1.0 + pow(opts->b / gam[j] * (x - c[j]) * (x - c[j]), pe));
            if (t > tmax) tmax = t;
          }
          p[i] = (uint8_t)(tmax < opts->tau && j0 != 0);
        }
        if (result)
          for (int j = 0; j < k; j++) result->sizes[j] = sizes[j];
        *out = o;
      }
    }
  }
  if (s == LUMEN_OK && result) {
    result->k = k;
    for (int j = 0; j < k; j++) result->centers[j] = c[j];
    result->iterations = it;
    result->converged = conv;
    result->objective = fcm_objective(&d, c, k, opts->m);
  }
  lumen_image_free(tmp);
  return seg_end(&run, s);
}

lumen_status lumen_segment_fcm(lumen_ctx *ctx, const lumen_image *in, const lumen_fcm_opts *opts, lumen_image **out,
                               lumen_cluster_result *result) {
  return fuzzy(ctx, in, opts, out, result, 0);
}

lumen_status lumen_segment_pfcm(lumen_ctx *ctx, const lumen_image *in, const lumen_fcm_opts *opts, lumen_image **out,
                                lumen_cluster_result *result) {
  return fuzzy(ctx, in, opts, out, result, 1);
}
