/* 2CXM's grid start: see cxm_grid.h. */
#include "fit/cxm_grid.h"

#include <math.h>
#include <stdlib.h>

/* K from 0.005 to 500 /min (the slow rate K- of a tissue, about Ktrans/ve, to the fast one K+, at
   least Fp/vp), 20 per decade: 5 per decade (a coarse grid, or a coarse grid with a 7 x 7 fine
   search around its best) left more curves in the wrong valley (docs/BENCHMARKS.md). */
#define CXM_PER_DECADE 20
#define CXM_NK (5 * CXM_PER_DECADE + 1)
#define CXM_K0 0.005

struct lumen_cxm_grid {
  int n;
  lumen_grid_f64 g;               /* the plan's grid (its arrays belong to the plan) */
  const double *w;                /* the plan's weights or NULL */
  double k[CXM_NK];
  double *G;                      /* CXM_NK x n: G(k[j]) at the samples */
  double gram[CXM_NK][CXM_NK];    /* <G(k[i]), G(k[j])> (weighted) */
  double idet[CXM_NK][CXM_NK];    /* 1 / det of pair (i, j)'s 2x2 Gram matrix, 0: collinear */
};

/* G(k) at every sample of g: the model's own recursion (lumen_conv_*), so that a pair's (a, b)
   reproduces lumen_eval_2cxm's curve at the mapped parameters. */
static void conv_of(const lumen_grid_f64 *g, double k, double *out) {
  lumen_conv_f64 c;
  lumen_conv_start_f64(&c, g, k);
  double G = 0, Gp = 0;
  out[0] = 0;
  for (int i = 1; i < g->n; ++i) {
    lumen_conv_advance_f64(&c, g, i, &G, &Gp);
    out[i] = G;
  }
}

static double dot(int n, const double *w, const double *a, const double *b) {
  double s = 0;
  if (w)
    for (int i = 0; i < n; ++i) s += w[i] * a[i] * b[i];
  else
    for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

/* 1/det of a 2x2 Gram matrix, 0 when (nearly) collinear (large K+ and K- alike: both ~ cp/K) */
static double inv_det(double gpp, double gpm, double gmm) {
  const double det = gpp * gmm - gpm * gpm;
  return det > 1e-12 * gpp * gmm ? 1.0 / det : 0.0;
}

lumen_cxm_grid *lumen_cxm_grid_create(const lumen_grid_f64 *g, const double *w) {
  if (!g || !g->cp || g->n < 2) return NULL;
  lumen_cxm_grid *cg = calloc(1, sizeof *cg);
  if (!cg) return NULL;
  const size_t n = (size_t)g->n;
  cg->G = malloc((size_t)CXM_NK * n * sizeof *cg->G);
  if (!cg->G) {
    free(cg);
    return NULL;
  }
  cg->n = g->n;
  cg->g = *g;
  cg->w = w;
  for (int j = 0; j < CXM_NK; ++j) {
    cg->k[j] = CXM_K0 * pow(10.0, (double)j / CXM_PER_DECADE);
    conv_of(g, cg->k[j], cg->G + (size_t)j * n);
  }
  for (int i = 0; i < CXM_NK; ++i)
    for (int j = 0; j <= i; ++j)
      cg->gram[i][j] = cg->gram[j][i] = dot(g->n, w, cg->G + (size_t)i * n, cg->G + (size_t)j * n);
  for (int i = 0; i < CXM_NK; ++i)
    for (int j = 0; j < CXM_NK; ++j) cg->idet[i][j] = inv_det(cg->gram[j][j], cg->gram[i][j], cg->gram[i][i]);
  return cg;
}

void lumen_cxm_grid_destroy(lumen_cxm_grid *cg) {
  if (!cg) return;
  free(cg->G);
  free(cg);
}

void lumen_cxm_from_exponentials(double kp, double km, double a, double b, double *p) {
  lumen_2cxm_from_exponentials__f64(kp, km, a, b, p);
}

/* The 2x2 least squares of y on (G+, G-) from the inner products (c+ = <G+, y>, ...): amplitudes
   a (of G+) and b, and the decrease of the residual sum of squares a c+ + b c- (-1 when not
   both positive or collinear). */
static double pair_fit(double gpp, double gpm, double gmm, double idet, double cp, double cm, double *a,
                       double *b) {
  const double ia = (gmm * cp - gpm * cm) * idet, ib = (gpp * cm - gpm * cp) * idet;
  if (!(ia > 0) || !(ib > 0)) return -1;
  *a = ia;
  *b = ib;
  return ia * cp + ib * cm;
}

/* Grid pair (i, j): K- = k[i] < K+ = k[j]; NaN when outside the grid or invalid. */
static double grid_red(const lumen_cxm_grid *cg, const double *c, int i, int j, double *a, double *b) {
  if (i < 0 || j >= CXM_NK || i >= j) return NAN;
  const double r = pair_fit(cg->gram[j][j], cg->gram[i][j], cg->gram[i][i], cg->idet[i][j], c[j], c[i], a, b);
  return r < 0 ? NAN : r;
}

/* The vertex of the parabola through (-1, f0), (0, f1), (1, f2) when f1 is its minimum among
   them, clamped to [-1/2, 1/2]; 0 when either neighbour is missing (NaN). */
static double vertex(double f0, double f1, double f2) {
  const double c = f0 - 2 * f1 + f2;
  if (!(c > 0) || isnan(f0) || isnan(f2)) return 0;
  const double x = 0.5 * (f0 - f2) / c;
  return x < -0.5 ? -0.5 : (x > 0.5 ? 0.5 : x);
}

int lumen_cxm_grid_start(const lumen_cxm_grid *cg, const double *y, double *p) {
  const int n = cg->n;
  double c[CXM_NK];
  for (int j = 0; j < CXM_NK; ++j) c[j] = dot(n, cg->w, cg->G + (size_t)j * (size_t)n, y);
  int bi = -1, bj = -1;
  double best = 0, ba = 0, bb = 0;
  for (int i = 0; i < CXM_NK; ++i)
    for (int j = i + 1; j < CXM_NK; ++j) {
      double a = 0, b = 0;
      const double r = pair_fit(cg->gram[j][j], cg->gram[i][j], cg->gram[i][i], cg->idet[i][j], c[j], c[i], &a, &b);
      if (r > best) { best = r; bi = i; bj = j; ba = a; bb = b; }
    }
  if (bi < 0) return 1;
  double kp = cg->k[bj], km = cg->k[bi];
  /* a parabola in log K through the neighbours each way, both K's moved at once, kept when its
     own least squares (two convolutions) fits better */
  double a = 0, b = 0;
  const double xm = vertex(-grid_red(cg, c, bi - 1, bj, &a, &b), -best, -grid_red(cg, c, bi + 1, bj, &a, &b));
  const double xp = vertex(-grid_red(cg, c, bi, bj - 1, &a, &b), -best, -grid_red(cg, c, bi, bj + 1, &a, &b));
  if ((xm != 0 || xp != 0) && n <= 1024) {
    const double step = pow(10.0, 1.0 / CXM_PER_DECADE);
    const double kp2 = kp * pow(step, xp), km2 = km * pow(step, xm);
    double gp[1024], gm[1024]; /* on the stack up to 1024 samples (beyond: the grid point) */
    if (kp2 > km2) {
      conv_of(&cg->g, kp2, gp);
      conv_of(&cg->g, km2, gm);
      const double gpp = dot(n, cg->w, gp, gp), gpm = dot(n, cg->w, gp, gm), gmm = dot(n, cg->w, gm, gm);
      const double idet = inv_det(gpp, gpm, gmm);
      const double r = pair_fit(gpp, gpm, gmm, idet, dot(n, cg->w, gp, y), dot(n, cg->w, gm, y), &a, &b);
      if (idet != 0 && r > best) { kp = kp2; km = km2; ba = a; bb = b; }
    }
  }
  lumen_cxm_from_exponentials(kp, km, ba, bb, p);
  return 0;
}
