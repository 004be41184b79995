/* One curve's result as the per-curve driver (src/solver/driver_impl.inc) writes it, in
   src/fit/execute.c and in the CUDA kernels of src/cuda/fit_lm.cu alike. */
#ifndef LUMEN_SOLVER_CURVE_OUT_H
#define LUMEN_SOLVER_CURVE_OUT_H

#include <math.h>
#include "lumen/fit.h"
#include "models/hd.h"

typedef struct lumen_fit_curve_out {
  double p[LUMEN_FIT_MAX_PARAMS];  /* fit parameters */
  double ci_lo[LUMEN_FIT_MAX_PARAMS], ci_hi[LUMEN_FIT_MAX_PARAMS];  /* public parameters */
  double derived[LUMEN_FIT_MAX_DERIVED];  /* AUC only (others are computed from p) */
  double chi2, r2, delay;
  int iterations;
  int bound_mask;  /* lumen_fit_results.bound_mask */
  lumen_fit_state state;
  lumen_status status;
} lumen_fit_curve_out;

LUMEN_HD void lumen_fit_curve_out_clear(lumen_fit_curve_out *o) {
  for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) o->p[k] = o->ci_lo[k] = o->ci_hi[k] = NAN;
  for (int k = 0; k < LUMEN_FIT_MAX_DERIVED; ++k) o->derived[k] = NAN;
  o->chi2 = o->r2 = o->delay = NAN;
  o->iterations = 0;
  o->bound_mask = 0;
  o->state = LUMEN_FIT_NOT_FITTED;
  o->status = LUMEN_OK;
}

#endif
