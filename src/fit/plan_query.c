/* What a plan resolved: the effective start and bounds of each fit parameter (the options'
   overrides, else the bounds preset's defaults), for run logs and bindings. */
#include <math.h>
#include <stdlib.h>
#include "fit/fit_internal.h"

lumen_status lumen_fit_plan_param_bounds(const lumen_fit_plan *plan, int k, double *start, double *lo, double *hi) {
  if (start) *start = NAN;
  if (lo) *lo = NAN;
  if (hi) *hi = NAN;
  if (!plan || k < 0 || k >= plan->np) return LUMEN_ERR_INVALID_ARGUMENT;
  if (start) *start = plan->start[k];
  if (lo) *lo = plan->lo[k];
  if (hi) *hi = plan->hi[k];
  return LUMEN_OK;
}

lumen_status lumen_fit_plan_eval(const lumen_fit_plan *plan, const double *params, const double *consts,
                                 double delay_min, double *y) {
  if (!plan || !params || !y || plan->np < 1) return LUMEN_ERR_INVALID_ARGUMENT;
  const int n = plan->n;
  double pfit[LUMEN_FIT_MAX_PARAMS];
  lumen_model_from_public_f64(plan->model, params, pfit);
  lumen_grid_f64 g = plan->g64;
  const long nw = lumen_model_work_size(plan->model, n);
  const int shift = isfinite(delay_min) && delay_min != 0 && g.cp;
  double *buf = malloc(sizeof(double) * ((size_t)nw + (shift ? 2 * (size_t)n : 0) + 1));
  if (!buf) return LUMEN_ERR_OUT_OF_MEMORY;
  if (shift) { /* the delayed AIF, as the delay search of the fit shifts it */
    lumen_aif_shift_f64(n, g.t, g.cp, delay_min, buf + nw, buf + nw + n);
    g.cp = buf + nw;
    g.icp = buf + nw + n;
  }
  lumen_model_eval_f64(plan->model, &g, consts, pfit, y, NULL, nw > 0 ? buf : NULL);
  free(buf);
  return LUMEN_OK;
}
