/* What a plan resolved: the effective start and bounds of each fit parameter (the options'
   overrides, else the bounds preset's defaults), for run logs and bindings. */
#include <math.h>
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
