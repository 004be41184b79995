/* The damped normal-equation solve of lumen's Levenberg-Marquardt, shared by the scalar solver
   (lm_impl.inc), the lane-batched one (lm_simd_impl.inc) and the CUDA kernel (src/cuda/fit_lm.cu):
   Cholesky factor of (A + lambda (diag A + 1e-12 dmax)) on the index set idx (m free parameters),
   then the two substitutions. Split so that geodesic acceleration reuses the step's factor. */
#ifndef LUMEN_SOLVER_LM_CHOL_H
#define LUMEN_SOLVER_LM_CHOL_H

#include <math.h>
#include "models/hd.h"
#include "lumen/models.h" /* LUMEN_FIT_MAX_PARAMS */

/* The damping's update after an evaluated trial, shared by the three solvers (scalar, lanes,
   CUDA): lambda times LUMEN_LM_LAMBDA_UP when the trial raised chi2, times LUMEN_LM_LAMBDA_DOWN
   when it was taken. Gpufit divides by 10 on a taken step; lumen by 3 (Nielsen's lower limit,
   Madsen, Nielsen and Tingleff 1999): in 2CXM's and FXR's curved valleys a /10 undamps too fast,
   the next trial overshoots and is rejected. Measured (docs/BENCHMARKS.md, issue 43): iterations
   per fit 2CXM 11.09 -> 9.80, FXR 12.85 -> 9.54, Tofts, ETM, 2CUM unchanged (1.93, 1.97, 2.5).
   Macros so that a benchmark build can try others (-DLUMEN_LM_LAMBDA_DOWN=0.1). */
#ifndef LUMEN_LM_LAMBDA_UP
#define LUMEN_LM_LAMBDA_UP 10.0
#endif
#ifndef LUMEN_LM_LAMBDA_DOWN
#define LUMEN_LM_LAMBDA_DOWN (1.0 / 3.0)
#endif

/* Factor into L; 1 when the damped matrix is not positive definite. */
LUMEN_HD int lumen_lm_factor(int m, const int *idx, double A0[LUMEN_FIT_MAX_PARAMS][LUMEN_FIT_MAX_PARAMS],
                             double lambda, double dmax, double L[LUMEN_FIT_MAX_PARAMS][LUMEN_FIT_MAX_PARAMS]) {
  for (int a = 0; a < m; ++a) {
    for (int b = 0; b <= a; ++b) {
      double s = A0[idx[a]][idx[b]];
      if (a == b) s += lambda * A0[idx[a]][idx[a]] + (lambda > 0 ? lambda : 1.0) * 1e-12 * dmax;
      for (int c = 0; c < b; ++c) s -= L[a][c] * L[b][c];
      if (a == b) {
        if (!(s > 1e-300)) return 1;
        L[a][a] = sqrt(s);
      } else {
        L[a][b] = s / L[b][b];
      }
    }
  }
  return 0;
}

/* Solves L L^T d = g[idx] (d: m entries, in the order of idx). */
LUMEN_HD void lumen_lm_subst(int m, const int *idx, double L[LUMEN_FIT_MAX_PARAMS][LUMEN_FIT_MAX_PARAMS],
                             const double *g, double *d) {
  double z[LUMEN_FIT_MAX_PARAMS];
  for (int a = 0; a < m; ++a) {
    double s = g[idx[a]];
    for (int c = 0; c < a; ++c) s -= L[a][c] * z[c];
    z[a] = s / L[a][a];
  }
  for (int a = m - 1; a >= 0; --a) {
    double s = z[a];
    for (int c = a + 1; c < m; ++c) s -= L[c][a] * d[c];
    d[a] = s / L[a][a];
  }
}

/* The decrease of chi2 that the linearised model predicts for the step d (active set idx, d from
   lumen_lm_subst): 2 g.d - d^T A d, summed in the order of idx (the lane solver's vector head
   repeats these operations for two parameters). */
LUMEN_HD double lumen_lm_predicted(int m, const int *idx, double A0[LUMEN_FIT_MAX_PARAMS][LUMEN_FIT_MAX_PARAMS],
                                   const double *g, const double *d) {
  double pred = 0.0;
  for (int a = 0; a < m; ++a) {
    double s = 2.0 * g[idx[a]];
    for (int b = 0; b < m; ++b) s -= A0[idx[a]][idx[b]] * d[b];
    pred += d[a] * s;
  }
  return pred;
}

#endif
