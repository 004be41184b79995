/* Checking fit options before any data exist: front ends (lumen dce/t1/fit, the bindings) report a
   bad backend name or bounds that exclude a start as a usage error before they read or write a
   file (issue 15), with the same checks lumen_fit_plan_create makes. */
#include <math.h>
#include "fit/fit_internal.h"

lumen_status lumen_fit_options_check(lumen_ctx *ctx, const lumen_fit_options *o) {
  LUMEN_REQUIRE_NOT_NULL(ctx, o);
  enum { N = 32 };
  double x[N], cp[N];
  const int t1 = !(lumen_model_flags(o->model) & LUMEN_MF_AIF);
  const int vfa = (lumen_model_flags(o->model) & LUMEN_MF_X_FLIP) != 0;
  for (int i = 0; i < N; ++i) {
    double t = 0.1 * i;                                         /* minutes */
    x[i] = vfa ? (2.0 + 2.0 * i) * 3.14159265358979323846 / 180.0 /* flip angles 2..64 deg */
               : t1 ? 0.05 + 0.1 * i : t;                         /* ir/sr times in s */
    cp[i] = t > 0.5 ? 5.0 * (t - 0.5) * exp(-(t - 0.5) / 0.3) + 0.5 : 0.0; /* a gamma-variate bolus */
  }
  lumen_fit_plan *plan = NULL;
  lumen_status st = lumen_fit_plan_create(ctx, o, N, x, t1 ? NULL : cp, &plan);
  lumen_fit_plan_destroy(plan);
  return st;
}
