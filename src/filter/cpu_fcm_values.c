/* lumen_filter_fcm_values: lumen_segment_fcm's fuzzy c-means for integer-valued images, on the
 * counts of each value instead of every voxel. Memberships depend on the value alone, so every
 * per-voxel sum of an iteration is a sum over the distinct values weighted by their counts: an
 * iteration costs the number of values (4096 for 12-bit data), not of voxels. The seeding is
 * lumen_segment_fcm's k-means++ over the voxels in their order (the same random draws, the same
 * per-block float64 sums, so the same seeds), the iterations, the stopping rule (the largest
 * change of a membership) and the centres' order are its own; only the summation order of the
 * centre updates differs (by counts), so centres agree to rounding and hard labels exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "filter/cpu_values.h"
#include "lumen/segment.h"
#include "segment/seg_internal.h" /* seg_rand_uniform: the seeding draws of lumen_segment_fcm */

_Static_assert(LUMEN_CLUSTER_MAX == 16, "lumen_fcm_values_result.centers holds LUMEN_CLUSTER_MAX centres");

#define SEED_BLOCK 65536 /* lumen_segment_fcm's block of voxels for its k-means++ sums */

static int nearest(const double *c, int k, double x) {
  int best = 0;
  double bd = fabs(x - c[0]);
  for (int j = 1; j < k; j++) {
    const double dd = fabs(x - c[j]);
    if (dd < bd) {
      bd = dd;
      best = j;
    }
  }
  return best;
}


typedef struct seed_data {
  const float *x;
  int64_t n, lo, nblocks;
  int threads;
  double *d2;  /* per value: the squared distance to the nearest chosen seed */
  double *bs;  /* per block: the sum of d2 over its voxels, in voxel order */
} seed_data;

static inline int64_t block_end(const seed_data *d, int64_t b) {
  const int64_t e = (b + 1) * SEED_BLOCK;
  return e < d->n ? e : d->n;
}

/* k-means++ as lumen_segment_fcm: the first seed a uniform voxel, each next one a voxel drawn
   with probability ~ D(x)^2 (cumulative float64 sums per block of voxels, in order) */
static void seed_centres(seed_data *d, int64_t span, int k, uint64_t seed, double *c) {
  uint64_t st = seed;
  int64_t first = (int64_t)(seg_rand_uniform(&st) * (double)d->n);
  if (first >= d->n) first = d->n - 1;
  c[0] = d->x[first];
  for (int j = 1; j < k; j++) {
    for (int64_t v = 0; v < span; v++) {
      const double x = (double)(d->lo + v), dd = fabs(x - c[nearest(c, j, x)]);
      d->d2[v] = dd * dd;
    }
#pragma omp parallel for schedule(static) num_threads(d->threads)
    for (int64_t b = 0; b < d->nblocks; b++) {
      double s = 0;
      for (int64_t i = b * SEED_BLOCK; i < block_end(d, b); i++) s += d->d2[(int64_t)d->x[i] - d->lo];
      d->bs[b] = s;
    }
    double total = 0;
    for (int64_t b = 0; b < d->nblocks; b++) total += d->bs[b];
    const double u = seg_rand_uniform(&st);
    if (!(total > 0)) { /* fewer distinct values than clusters: repeat a centre */
      c[j] = c[j - 1];
      continue;
    }
    const double r = u * total;
    double acc = 0;
    int64_t b = 0;
    while (b < d->nblocks - 1 && acc + d->bs[b] <= r) acc += d->bs[b++];
    int64_t pick = block_end(d, b) - 1;
    for (int64_t i = b * SEED_BLOCK; i < block_end(d, b); i++) {
      acc += d->d2[(int64_t)d->x[i] - d->lo];
      if (acc > r) {
        pick = i;
        break;
      }
    }
    c[j] = d->x[pick];
  }
}

/* the iterations over the values v = lo + i with counts[i] voxels */
static void iterate(const int64_t *counts, int64_t span, int64_t lo, int k, double m, int max_iterations,
                    double tolerance, double *c, int *iterations, int *converged) {
  const double e = 2.0 / (m - 1.0);
  double prev[16], u[16], up[16];
  int it = 0;
  *converged = 0;
  while (it < max_iterations) {
    it++;
    double num[16] = {0}, den[16] = {0}, du = 0;
    for (int64_t i = 0; i < span; i++) {
      if (!counts[i]) continue;
      const double x = (double)(lo + i), n = (double)counts[i];
      seg_fcm_memberships(x, c, k, e, u);
      if (it > 1) {
        seg_fcm_memberships(x, prev, k, e, up);
        for (int j = 0; j < k; j++)
          if (fabs(u[j] - up[j]) > du) du = fabs(u[j] - up[j]);
      }
      for (int j = 0; j < k; j++) {
        const double w = m == 2.0 ? u[j] * u[j] : pow(u[j], m);
        num[j] += n * (w * x);
        den[j] += n * w;
      }
    }
    for (int j = 0; j < k; j++) prev[j] = c[j];
    for (int j = 0; j < k; j++)
      if (den[j] > 0) c[j] = num[j] / den[j];
    if (it > 1 && du <= tolerance) {
      *converged = 1;
      break;
    }
  }
  *iterations = it;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

lumen_status lumen_filter_fcm_values(lumen_ctx *ctx, const lumen_image *in, int c, double m, int max_iterations,
                                     double tolerance, uint64_t seed, int64_t *counts, int64_t counts_len,
                                     lumen_fcm_values_result *result) {
  static const char fn[] = "lumen_filter_fcm_values";
  LUMEN_REQUIRE(ctx, ctx != NULL, "%s: ctx is NULL", fn);
  LUMEN_REQUIRE(ctx, result != NULL && counts != NULL, "%s: result and counts must not be NULL", fn);
  memset(result, 0, sizeof *result);
  lumen_status s = lf_values_check(ctx, fn, "in", in, LUMEN_DTYPE_FLOAT32, -1);
  if (s != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, c >= 2 && c <= LUMEN_CLUSTER_MAX, "%s: c is %d, expected 2..%d", fn, c, LUMEN_CLUSTER_MAX);
  LUMEN_REQUIRE(ctx, m > 1 && isfinite(m), "%s: m is %g, expected > 1", fn, m);
  LUMEN_REQUIRE(ctx, max_iterations >= 1, "%s: max_iterations is %d, expected >= 1", fn, max_iterations);
  LUMEN_REQUIRE(ctx, tolerance >= 0 && isfinite(tolerance), "%s: tolerance is %g, expected >= 0", fn, tolerance);
  LUMEN_REQUIRE(ctx, counts_len >= 1, "%s: counts_len is %lld, expected >= 1", fn, (long long)counts_len);
  const float *x = lumen_image_const_data(in);
  const int64_t n = lumen_image_count(in);
  const int threads = lf_values_threads(ctx, n);
  lf_value_range r;
  lf_value_range_f32(x, n, threads, &r);
  const double span_d = (double)r.max - (double)r.min + 1.0;
  if (r.finite != n || !r.integral || span_d > (double)counts_len || span_d > 1048576.0)
    return LUMEN_OK; /* not applicable */
  const int64_t lo = (int64_t)r.min, span = (int64_t)span_d;
  seed_data d = {.x = x, .n = n, .lo = lo, .nblocks = (n + SEED_BLOCK - 1) / SEED_BLOCK, .threads = threads};
  d.d2 = malloc((size_t)span * sizeof *d.d2);
  d.bs = malloc((size_t)d.nblocks * sizeof *d.bs);
  if (!d.d2 || !d.bs || lf_integer_counts_f32(x, n, threads, lo, span, counts) != 0) {
    free(d.d2);
    free(d.bs);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  }
  double cen[16];
  seed_centres(&d, span, c, seed, cen);
  free(d.d2);
  free(d.bs);
  int it = 0, conv = 0;
  iterate(counts, span, lo, c, m, max_iterations, tolerance, cen, &it, &conv);
  qsort(cen, (size_t)c, sizeof cen[0], cmp_double);
  result->applicable = 1;
  result->min = r.min;
  result->max = r.max;
  result->k = c;
  for (int j = 0; j < c; j++) result->centers[j] = cen[j];
  result->iterations = it;
  result->converged = conv;
  return LUMEN_OK;
}
