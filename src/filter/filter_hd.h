/* Filter math written once for the CPU ops (src/filter/cpu_*.c) and the CUDA kernels
 * (src/cuda/filter_*.cu): scipy.ndimage boundary extension, the runs of a morphology structuring
 * element, Otsu's threshold selection, the entropy of a histogram and the median selection. LUMEN_HD (models/hd.h) makes each function static inline
 * in C and __host__ __device__ in CUDA, as for the model formulas, so the two paths cannot drift.
 *
 * Generates: lf_ext, lf_run3, lf_element_runs_max, lf_element_runs, lf_otsu_threshold,
 * lf_entropy_of, lf_quickselect. */
#ifndef LUMEN_FILTER_FILTER_HD_H
#define LUMEN_FILTER_FILTER_HD_H

#include <math.h>
#include <stdint.h>
#include "lumen/filter.h"
#include "models/hd.h"

/* Boundary extension: index of i (may be outside [0, n)) under mode (a lumen_boundary);
   -1 = the constant value. */
LUMEN_HD int64_t lf_ext(int64_t i, int64_t n, int mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case LUMEN_BOUNDARY_REFLECT: {
      int64_t p = 2 * n;
      int64_t j = i % p;
      if (j < 0) j += p;
      return j < n ? j : p - 1 - j;
    }
    case LUMEN_BOUNDARY_MIRROR: {
      if (n == 1) return 0;
      int64_t p = 2 * n - 2;
      int64_t j = i % p;
      if (j < 0) j += p;
      return j < n ? j : p - j;
    }
    case LUMEN_BOUNDARY_WRAP: {
      int64_t j = i % n;
      return j < 0 ? j + n : j;
    }
    case LUMEN_BOUNDARY_NEAREST: return i < 0 ? 0 : n - 1;
    default: return -1;
  }
}

/* One x-run of a structuring element: the row at (dz, dy) covers dx in [-hw, hw]. */
typedef struct lf_run3 {
  int dz, dy, hw;
} lf_run3;

/* An upper bound on the runs of o's element (sizes are odd, checked by the API). */
LUMEN_HD int lf_element_runs_max(const lumen_morph_opts *o) {
  if (o->element == LUMEN_ELEMENT_BALL || o->element == LUMEN_ELEMENT_CUBE) {
    int e = o->element == LUMEN_ELEMENT_BALL ? 2 * o->radius + 1 : o->size;
    return e * e;
  }
  return o->element == LUMEN_ELEMENT_DISK ? 2 * o->radius + 1 : o->size;
}

/* The element of o as x-runs (at most cap written); *ry, *rz, *rx its reach along y, z, x.
   Returns the number of runs written. */
LUMEN_HD int lf_element_runs(const lumen_morph_opts *o, lf_run3 *runs, int cap, int *ry, int *rz, int *rx) {
  int n = 0;
  int r = o->radius, three = o->element == LUMEN_ELEMENT_BALL;
  const int round = o->element == LUMEN_ELEMENT_DISK || o->element == LUMEN_ELEMENT_BALL;
  if (!round) {
    r = o->size / 2;
    three = o->element == LUMEN_ELEMENT_CUBE;
  }
  for (int dz = three ? -r : 0; dz <= (three ? r : 0); dz++)
    for (int dy = -r; dy <= r; dy++) {
      int hw = r;
      if (round) {
        int64_t rem = (int64_t)r * r - (int64_t)dz * dz - (int64_t)dy * dy;
        if (rem < 0) continue;
        hw = 0;
        while ((int64_t)(hw + 1) * (hw + 1) <= rem) hw++;
      }
      if (n < cap) {
        runs[n].dz = dz;
        runs[n].dy = dy;
        runs[n].hw = hw;
        n++;
      }
    }
  *ry = r;
  *rz = three ? r : 0;
  *rx = r;
  return n;
}

/* Otsu's threshold (as scikit-image's threshold_otsu) from the counts c of nb bins with edges
   edges[0..nb]; work holds 4 * nb doubles and centre nb floats. */
LUMEN_HD float lf_otsu_threshold(const int64_t *c, const float *edges, int nb, double *work, float *centre) {
  double *w1 = work, *w2 = w1 + nb, *m1 = w2 + nb, *m2 = m1 + nb;
  for (int i = 0; i < nb; i++) centre[i] = (edges[i] + edges[i + 1]) / 2.0f;
  int64_t cw = 0;
  double cs = 0;
  for (int i = 0; i < nb; i++) {
    cw += c[i];
    cs += (double)c[i] * (double)centre[i];
    w1[i] = (double)cw;
    m1[i] = cs / (double)cw;
  }
  cw = 0;
  cs = 0;
  for (int i = nb - 1; i >= 0; i--) {
    cw += c[i];
    cs += (double)c[i] * (double)centre[i];
    w2[i] = (double)cw;
    m2[i] = cs / (double)cw;
  }
  int best = 0;
  double bestv = -1.0;
  for (int i = 0; i < nb - 1; i++) {
    double d = m1[i] - m2[i + 1];
    double v = (double)((int64_t)w1[i] * (int64_t)w2[i + 1]) * (d * d);
    if (v > bestv || (isnan(v) && !isnan(bestv))) {
      bestv = v;
      best = i;
    }
  }
  return nb > 1 ? centre[best] : centre[0];
}

/* Shannon entropy (bits) of the nb counts c that sum to total. */
LUMEN_HD double lf_entropy_of(const int64_t *c, int64_t nb, int64_t total) {
  double h = 0;
  for (int64_t i = 0; i < nb; i++)
    if (c[i] > 0) {
      double p = (double)c[i] / (double)total;
      h -= p * log2(p);
    }
  return h;
}

/* The k-th smallest of a[0..n) (Hoare's selection; a is reordered). */
LUMEN_HD float lf_quickselect(float *a, int n, int k) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    float x = a[k];
    int i = lo, j = hi;
    do {
      while (a[i] < x) i++;
      while (x < a[j]) j--;
      if (i <= j) {
        float t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    } while (i <= j);
    if (j < k) lo = i;
    if (k < i) hi = j;
  }
  return a[k];
}

#endif
