/* lumen: per-curve fit states, shared by every solver tier, the CLI and the bindings. */
#ifndef LUMEN_FIT_STATE_H
#define LUMEN_FIT_STATE_H
#include "lumen/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The state of one fitted curve. Anything but CONVERGED and AT_BOUND means the parameters of
   that curve are NaN (or, for MAX_ITERATIONS, the last iterate, flagged): never a plausible
   silent number. AT_BOUND keeps the parameters, chi2, R^2 and confidence intervals of the fit:
   they are the best fit inside the box, but a free parameter rests on one of its bounds, so the
   data may want a value beyond it (lumen_fit_results.bound_mask says which parameter). */
typedef enum lumen_fit_state {
  LUMEN_FIT_CONVERGED = 0,       /* tolerance reached */
  LUMEN_FIT_MAX_ITERATIONS,      /* iteration limit reached before the tolerance */
  LUMEN_FIT_SINGULAR,            /* J^T J singular: parameters not identifiable from the data */
  LUMEN_FIT_INVALID_INPUT,       /* NaN/Inf samples, all-zero curve, bad constants */
  LUMEN_FIT_START_OUT_OF_BOUNDS, /* a given start value lies outside its bounds */
  LUMEN_FIT_NOT_FINITE,          /* the model or chi-square became NaN/Inf during the fit */
  LUMEN_FIT_NOT_FITTED,          /* outside the mask, or the run was cancelled before it */
  LUMEN_FIT_AT_BOUND,            /* converged, but a free parameter rests on a bound (values kept) */
  LUMEN_FIT_STATE_COUNT
} lumen_fit_state;

/* "converged", "max_iterations", ..., "at_bound"; "unknown" otherwise. */
LUMEN_API const char *lumen_fit_state_name(lumen_fit_state state);
/* 1 when a curve in this state has parameter values (converged, at_bound, max_iterations), else 0. */
LUMEN_API int lumen_fit_state_has_values(lumen_fit_state state);

#ifdef __cplusplus
}
#endif
#endif
