/* Judging a fit: state legend, parameters on a bound, the run log's bounds, warnings for voxels
   at a bound or failed, and the results-unreliable rule. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "io/io_internal.h"
#include "pipeline/pipe_judge.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_strbuf.h"

void pipe_state_legend(char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  for (int k = 0; k < LUMEN_FIT_STATE_COUNT && n < size; ++k) {
    int w = snprintf(buf + n, size - n, "%s%d %s", k ? " " : "", k, lumen_fit_state_name((lumen_fit_state)k));
    if (w < 0) break;
    n += (size_t)w;
  }
}

void pipe_at_bound_json(pipe_sb *b, char *text, size_t size, lumen_model model, const lumen_fit_results *res) {
  const int np = lumen_fit_param_count(model);
  size_t n = 0;
  text[0] = '\0';
  pipe_sb_printf(b, ", \"at_bound\": {");
  for (int k = 0; k < np && k < LUMEN_FIT_MAX_PARAMS; ++k) {
    const char *pn = lumen_fit_param_name(model, k);
    pipe_sb_printf(b, "%s", k ? ", " : "");
    pipe_sb_json_str(b, pn);
    pipe_sb_printf(b, ": {\"lower\": %lld, \"upper\": %lld}", (long long)res->at_lower[k], (long long)res->at_upper[k]);
    for (int side = 0; side < 2; ++side) {
      int64_t c = side ? res->at_upper[k] : res->at_lower[k];
      if (!c || n >= size) continue;
      int w = snprintf(text + n, size - n, "%s%s %s %lld", n ? "; " : " (", pn, side ? "upper" : "lower", (long long)c);
      if (w > 0) n += (size_t)w;
    }
  }
  pipe_sb_printf(b, "}");
  if (n && n + 1 < size) snprintf(text + n, size - n, ")");
}

void pipe_mark_unreliable(pipe_run *run, const char *why) {
  pipe_warn(run, "results unreliable: %s; check the acquisition values (TR, flip angle, frame interval, relaxivity, "
                 "T1) and the AIF", why);
  if (run->sum && !run->sum->unreliable) {
    run->sum->unreliable = 1;
    snprintf(run->sum->unreliable_why, sizeof run->sum->unreliable_why, "%s", why);
  }
}

void pipe_judge_model(pipe_run *run, const pipe_judge_in *in) {
  const char *what = in->what, *bound_text = in->bound_text;
  const lumen_model model = in->model;
  const lumen_fit_results *res = in->res;
  const int64_t fitted = in->fitted, at_bound = in->at_bound, failed = in->failed;
  if (at_bound > 0)
    pipe_warn(run, "%s: %lld of %lld voxels rest on a bound of the fit%s: their values are the bound, not an estimate "
                   "(state at_bound); widen --bounds if the tissue allows",
              what, (long long)at_bound, (long long)fitted, bound_text);
  if (failed > 0 && 2 * failed <= fitted)
    pipe_warn(run, "%s: %lld of %lld fitted voxels failed (states other than converged and at_bound): NaN in the "
                   "maps, the state map says why", what, (long long)failed, (long long)fitted);
  if (fitted > 0 && 2 * failed > fitted) {
    char why[512];
    snprintf(why, sizeof why, "%s: %lld of %lld fitted voxels failed (states other than converged and at_bound)", what,
             (long long)failed, (long long)fitted);
    pipe_mark_unreliable(run, why);
  }
  /* Most voxels pinned at an upper bound (Ktrans at 5 /min, ve at 1, T1 at its maximum): the fit
     is not estimating, whatever its states say (issue 39 item 1: a broken AIF gave 1700 of 3000
     voxels at the Ktrans bound with exit 0). Only Ktrans and T1: a pile at a lower bound is what
     tissue without vessels or enhancement gives (vp = 0, Ktrans = 0), and one at the upper bound of
     a flow (2CXM's Fp) is the flow-unlimited limit the data allow, not a broken input. */
  for (int k = 0; res && fitted > 0 && k < lumen_fit_param_count(model) && k < LUMEN_FIT_MAX_PARAMS; ++k)
    if (2 * res->at_upper[k] > fitted &&
        (!strcmp(lumen_fit_param_name(model, k), "Ktrans") || !strcmp(lumen_fit_param_name(model, k), "T1"))) {
      char why[512];
      snprintf(why, sizeof why, "%s: %lld of %lld fitted voxels rest on the upper bound of %s: the fit is pinned "
               "there, not estimating", what, (long long)res->at_upper[k], (long long)fitted,
               lumen_fit_param_name(model, k));
      pipe_mark_unreliable(run, why);
      break;
    }
}

void pipe_bounds_json(pipe_sb *b, const lumen_fit_plan *plan, lumen_model model) {
  for (int k = 0; k < lumen_fit_param_count(model); ++k) {
    double s0, lo, hi;
    lumen_fit_plan_param_bounds(plan, k, &s0, &lo, &hi); /* the effective values, defaults included */
    pipe_sb_printf(b, "%s", k ? ", " : "");
    pipe_sb_json_str(b, lumen_fit_param_name(model, k));
    pipe_sb_printf(b, ": [");
    pipe_sb_json_num(b, lo);
    pipe_sb_printf(b, ", ");
    pipe_sb_json_num(b, hi);
    pipe_sb_printf(b, ", ");
    pipe_sb_json_num(b, s0);
    pipe_sb_printf(b, "]");
  }
}
