/* One curve, one solver call: the internal contract between the fit plan (src/fit/plan*.c,
   which owns batching, threads, tiers and fall-through) and each solver implementation.
   Parameters are in the models' FIT-parameter space (src/models/model.h: 2CXM uses E). */
#ifndef LUMEN_FIT_CURVE_FIT_H
#define LUMEN_FIT_CURVE_FIT_H

#include "lumen/context.h"
#include "lumen/fit_state.h"
#include "lumen/models.h"
#include "models/models_f64.h"


/* The standard tier's linear start (0; 1: none, p holds the model's default start). 2CXM
   starts from Flouri's least squares alone: the accelerated tiers refine it by variable
   projection (models/model_2cxm_vp.inc), which the standard tier, their independent check, does
   not share. */
static inline int lumen_standard_linear_start(lumen_model model, const lumen_grid_f64 *grid, const double *consts,
                                              const double *y, double *p) {
  if (!(lumen_model_flags(model) & LUMEN_MF_2CXM_FORM)) return lumen_linear_start_f64(model, grid, consts, y, p);
  if (lumen_2cxm_start__f64(grid, y, p) == 0) return 0;
  lumen_default_start__f64(LUMEN_MODEL_2CXM, p);
  return 1;
}

typedef struct lumen_curve_options {
  double tolerance;              /* relative chi-square change, default 1e-6 */
  int max_iterations;            /* default 200 */
  const double *start;           /* np start values (already clipped / chosen by the plan) */
  const double *lo, *hi;         /* np box bounds, lo <= hi */
  const unsigned char *fixed;    /* np flags, 1 = held at its start value; NULL = all free */
  const double *weights;         /* n weights (1/sigma^2); NULL = all 1 */
} lumen_curve_options;

typedef struct lumen_curve_result {
  double p[LUMEN_FIT_MAX_PARAMS];      /* fit parameters; NaN unless converged or max iterations */
  double ci_lo[LUMEN_FIT_MAX_PARAMS];  /* 95 % confidence interval from J^T J at the solution */
  double ci_hi[LUMEN_FIT_MAX_PARAMS];  /*   (NaN for fixed parameters or a singular J^T J) */
  double chi2;                           /* weighted sum of squared residuals */
  double r2;                             /* coefficient of determination */
  int iterations;
  lumen_fit_state state;
} lumen_curve_result;

/* The standard tier: GSL's trust-region Levenberg-Marquardt in double precision with the box
   enforced, independent of lumen's own LM solver (src/fit/standard_gsl.c). Thread-safe: each call
   allocates its own GSL workspace (the standard tier is the oracle, not the fast path).
   Returns LUMEN_ERR_NOT_BUILT when GSL was not found at configure time. */
lumen_status lumen_standard_fit_curve(lumen_ctx *ctx, lumen_model model, const lumen_grid_f64 *grid,
                                      const double *consts, const double *y, const lumen_curve_options *opt,
                                      lumen_curve_result *out);

#endif
