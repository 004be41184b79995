/* Automatic vessel detection for --aif auto (vessels.h): every voxel of the image is a candidate,
   whatever the fitting mask. */
#include <math.h>
#include <stdlib.h>
#include "pipeline/pipe_util.h"
#include "pipeline/vessels.h"

static int cmp_desc_score(const void *a, const void *b) {
  const double *x = a, *y = b;
  return (x[0] < y[0]) - (x[0] > y[0]);
}

/* The search covers every voxel of the image (the fitting mask limits the fit, not the search).
   Candidates: voxels whose baseline is a stable positive signal (every baseline sample > 0 and
   its SD at most 25 % of its mean: this excludes background noise, and test patterns such as
   QIBA's marker band, whose samples jump between 0 and full scale), with a baseline above 10 %
   of the median of those stable baselines (no background); of those the voxels with a
   peak enhancement (peak - baseline) of at least half the 99th percentile, of those the earlier
   half by time to peak, at most max(8, min(200, n/20)) by enhancement. Returns the count (0 when
   none). docs/PIPELINES.md states the same rule. */
int64_t pipe_detect_vessels(const float *sig, int64_t nv, int64_t nt, int64_t b0, int64_t b1, int64_t **out) {
  double *s0 = malloc(sizeof(double) * (size_t)nv);
  double *en = malloc(sizeof(double) * (size_t)nv);
  int32_t *ttp = malloc(sizeof(int32_t) * (size_t)nv);
  double *tmp = malloc(sizeof(double) * (size_t)nv);
  *out = NULL;
  int64_t result = 0;
  if (!s0 || !en || !ttp || !tmp) goto done;
  for (int64_t v = 0; v < nv; ++v) s0[v] = 0, en[v] = -INFINITY, ttp[v] = 0, tmp[v] = 0;
  for (int64_t i = b0; i < b1; ++i) {
    const float *f = sig + i * nv;
    for (int64_t v = 0; v < nv; ++v) {
      s0[v] += f[v];
      tmp[v] += (double)f[v] * f[v];
      if (!(f[v] > 0)) ttp[v] = -1; /* a baseline sample <= 0 or NaN: not a tissue signal */
    }
  }
  for (int64_t v = 0; v < nv; ++v) {
    s0[v] /= (double)(b1 - b0);
    double var = tmp[v] / (double)(b1 - b0) - s0[v] * s0[v];
    if (ttp[v] < 0 || !(var <= 0.0625 * s0[v] * s0[v])) s0[v] = NAN; /* unstable: SD > 25 % of the mean */
    ttp[v] = 0;
  }
  for (int64_t i = b1; i < nt; ++i) {
    const float *f = sig + i * nv;
    for (int64_t v = 0; v < nv; ++v)
      if (f[v] > en[v]) { en[v] = f[v]; ttp[v] = (int32_t)i; }
  }
  int64_t m = 0;
  for (int64_t v = 0; v < nv; ++v) if (isfinite(s0[v]) && s0[v] > 0) tmp[m++] = s0[v];
  if (m < 3) goto done;
  /* the median, not a high percentile: bright structures that do not enhance (fat, QIBA's
     marker band at full scale) must not lift the threshold above blood, whose longer T1 gives it
     a lower baseline than tissue on T1-weighted SPGR */
  double s50 = pipe_median(tmp, m);
  m = 0;
  for (int64_t v = 0; v < nv; ++v) {
    if (!(isfinite(s0[v]) && s0[v] > 0.1 * s50 && isfinite(en[v]))) { en[v] = NAN; continue; }
    /* Absolute, not relative, enhancement: ranking by (peak - S0)/S0 selects voxels whose
       baseline is low by noise, which lowers M0 and inflates the whole AIF (by ~10 % on the
       demo phantom); the difference carries the baseline noise with weight 1/sqrt(frames). */
    en[v] = en[v] - s0[v];
    tmp[m++] = en[v];
  }
  if (m < 3) goto done;
  double e99 = pipe_percentile(tmp, m, 99);
  /* A wide net (half the 99th-percentile enhancement, up to m/20 voxels) keeps most of a vessel:
     averaging only its few most enhancing voxels would select their noise too. */
  int64_t kmax = m / 20;
  if (kmax > 200) kmax = 200;
  if (kmax < 8) kmax = 8;
  int64_t nc = 0;
  for (int64_t v = 0; v < nv; ++v) if (isfinite(en[v]) && en[v] >= 0.5 * e99 && en[v] > 0) tmp[nc++] = ttp[v];
  if (nc < 1) goto done;
  double ttp_med = pipe_median(tmp, nc);
  double *cand = malloc(sizeof(double) * 2 * (size_t)nc);
  if (!cand) goto done;
  int64_t k = 0;
  for (int64_t v = 0; v < nv; ++v)
    if (isfinite(en[v]) && en[v] >= 0.5 * e99 && en[v] > 0 && ttp[v] <= ttp_med) {
      cand[2 * k] = en[v];
      cand[2 * k + 1] = (double)v;
      ++k;
    }
  qsort(cand, (size_t)k, 2 * sizeof(double), cmp_desc_score);
  if (k > kmax) k = kmax;
  *out = malloc(sizeof(int64_t) * (size_t)(k > 0 ? k : 1));
  if (*out) {
    for (int64_t j = 0; j < k; ++j) (*out)[j] = (int64_t)cand[2 * j + 1];
    result = k;
  }
  free(cand);
done:
  free(s0); free(en); free(ttp); free(tmp);
  return result;
}

