/* One model of the fit stage of `lumen dce`: the fit plan from the model's options, the curves
   it fits (FXR: R1 curves), an untimed warm-up, the fit (the caller's executor, or in checkpointed
   chunks: checkpoint.c), the run log's member of the model and its text line, the judgement of
   its results, the fitted-curve figure, and its maps (model_maps.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fit/fit_series.h"
#include "pipeline/checkpoint.h"
#include "pipeline/dce_stages.h"
#include "pipeline/pipe_conc.h"
#include "pipeline/pipe_judge.h"
#include "pipeline/pipe_options.h"
#include "pipeline/pipe_report.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_strbuf.h"
#include "pipeline/pipe_util.h"

/* An untimed fit of the first few curves before the timed one, so that a model's fits/s does
   not include the backend's one-off setup (thread pool, CUDA context, kernel loading), which
   would land on whichever model runs first. Results are discarded; a failure here is left to
   the real fit to report. Returns the number of warm-up curves. */
enum { WARMUP_CURVES = 64 };
static int64_t warm_up(lumen_ctx *ctx, const lumen_fit_plan *plan, int64_t nlist, const float *data,
                       const pipe_curves *src, const float *consts) {
  int64_t k = nlist < WARMUP_CURVES ? nlist : WARMUP_CURVES;
  if (k <= 0) return 0;
  double params[WARMUP_CURVES * LUMEN_FIT_MAX_PARAMS], derived[WARMUP_CURVES * LUMEN_FIT_MAX_DERIVED];
  double chi2[WARMUP_CURVES], r2[WARMUP_CURVES], delay[WARMUP_CURVES];
  int32_t state[WARMUP_CURVES];
  lumen_fit_results r = {
      .params = params, .derived = derived, .state = state, .chi2 = chi2, .r2 = r2, .delay = delay};
  lumen_status st = data ? lumen_fit_execute(ctx, plan, k, data, consts, &r)
                         : lumen_fit_execute_series(ctx, plan, k, src->base, src->list, src->nvox, consts, &r);
  if (st != LUMEN_OK) {
    lumen_ctx_clear_error(ctx);
    return 0;
  }
  return k;
}

/* The fit inputs of one model: FXR fits R1 = R10 + r1 C (data: its own curves, consts: R10, B1
   per curve), the other models the concentration curves themselves (data NULL: read from src,
   consts NULL); all == 1 (an executor of the caller's, which takes one array): the concentration
   curves gathered into data. */
static lumen_status model_data(lumen_ctx *ctx, const dce_fit_in *in, int all, float **data, float **consts) {
  const lumen_model model = in->model;
  const pipe_curves *src = in->curves;
  const int64_t nlist = src->nlist, nt = src->nt, *list = src->list;
  const float *t10 = in->t10, *b1 = in->b1;
  const double t10_const = in->t10_const, r1 = in->r1;
  *data = NULL;
  *consts = NULL;
  if (model != LUMEN_MODEL_FXR && !all) return LUMEN_OK;
  *data = malloc(sizeof(float) * (size_t)(nlist * nt));
  if (*data) pipe_curves_get(src, 0, nlist, *data, lumen_ctx_threads(ctx), lumen_ctx_cpu_simd(ctx));
  if (model != LUMEN_MODEL_FXR)
    return *data ? LUMEN_OK : lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory for %lld curves", (long long)nlist);
  *consts = malloc(sizeof(float) * (size_t)nlist * LUMEN_FIT_NCONSTS);
  if (!*data || !*consts) {
    free(*data);
    free(*consts);
    *data = NULL;
    *consts = NULL;
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "fxr: out of memory");
  }
  float *conc = *data; /* converted in place, curve by curve */
  for (int64_t k = 0; k < nlist; ++k) {
    double tt = t10 ? t10[list[k]] : t10_const;
    double r10 = tt > 0 ? 1.0 / tt : NAN;
    (*consts)[k * LUMEN_FIT_NCONSTS + LUMEN_FIT_CONST_R10] = (float)r10;
    (*consts)[k * LUMEN_FIT_NCONSTS + LUMEN_FIT_CONST_B1] = b1 ? b1[list[k]] : 1.0f;
    for (int64_t i = 0; i < nt; ++i) (*data)[k * nt + i] = (float)(r10 + r1 * conc[k * nt + i]);
  }
  return LUMEN_OK;
}

/* The result arrays of n curves (CI and delay only when asked); 0 when out of memory. */
static int results_alloc(lumen_fit_results *res, const lumen_pipe_config *cfg, size_t n, int np, int nd) {
  memset(res, 0, sizeof *res);
  res->params = malloc(sizeof(double) * n * (size_t)(np > 0 ? np : 1));
  res->state = malloc(sizeof(int32_t) * n);
  res->derived = malloc(sizeof(double) * n * (size_t)(nd > 0 ? nd : 1));
  res->chi2 = malloc(sizeof(double) * n);
  res->r2 = malloc(sizeof(double) * n);
  if (cfg->write_ci && np > 0) {
    res->ci_lo = malloc(sizeof(double) * n * (size_t)np);
    res->ci_hi = malloc(sizeof(double) * n * (size_t)np);
  }
  if (cfg->fit_delay) res->delay = malloc(sizeof(double) * n);
  return res->params && res->state && res->derived && res->chi2 && res->r2 &&
         (!(cfg->write_ci && np > 0) || (res->ci_lo && res->ci_hi)) && (!cfg->fit_delay || res->delay);
}

static void results_free(lumen_fit_results *res) {
  free(res->params); free(res->state); free(res->derived); free(res->chi2); free(res->r2);
  free(res->ci_lo); free(res->ci_hi); free(res->delay);
}

/* What one model's fit did, for the summary, the log, the run log (JSON), the text lines, the
   warnings and the report's fitted-curve figure. */
typedef struct model_fit {
  lumen_model model;
  const lumen_fit_options *o;
  const lumen_fit_plan *plan;
  const lumen_fit_results *res;
  const int64_t *list;
  int64_t nlist, nt, warm;
  const float *data;       /* the curves fitted, or NULL: those of src */
  const pipe_curves *src;
  const float *consts;
  const double *t_min;
} model_fit;

/* The summary, the log line, the run log's member of the model, its text line, the judgement
   and the fitted-curve figure. */
static void record_model_fit(pipe_run *run, const model_fit *f, lumen_pipe_model_summary *ms, model_out *mo) {
  lumen_ctx *ctx = run->ctx;
  const lumen_model model = f->model;
  const char *mname = lumen_model_name(model);
  const lumen_fit_options o = *f->o;
  const lumen_fit_plan *plan = f->plan;
  const lumen_fit_results res = *f->res;
  const int64_t nlist = f->nlist, nt = f->nt, warm = f->warm;
  const int64_t *list = f->list;
  const float *data = f->data, *consts = f->consts;
  const pipe_curves *src = f->src;
  const double *t_min = f->t_min;
    ms->model = model;
    snprintf(ms->backend_requested, sizeof ms->backend_requested, "%s", res.backend_requested);
    snprintf(ms->backend_selected, sizeof ms->backend_selected, "%s", res.backend_selected);
    snprintf(ms->backend_used, sizeof ms->backend_used, "%s", res.backend_used);
    snprintf(ms->backend_reason, sizeof ms->backend_reason, "%s", res.reason);
    ms->fitted = nlist;
    ms->converged = res.state_counts[LUMEN_FIT_CONVERGED];
    ms->at_bound = res.state_counts[LUMEN_FIT_AT_BOUND];
    ms->failed = nlist - ms->converged - ms->at_bound;
    ms->seconds = res.seconds;
    ms->fits_per_s = res.seconds > 0 ? (double)nlist / res.seconds : 0;
    lumen_log(ctx, LUMEN_LOG_INFO, "%s: %lld voxels, backend requested %s, selected %s, used %s (%s); %.2f s, %.0f fits/s",
              mname, (long long)nlist, res.backend_requested, res.backend_selected, res.backend_used, res.reason,
              res.seconds, ms->fits_per_s);
    /* JSON summary */
    pipe_sb *b = &run->stages;
    pipe_sb_printf(b, "%s\n\t\t\t\t", mo->json_first ? "" : ",");
    pipe_sb_json_str(b, mname);
    pipe_sb_printf(b, ": {\"backend_requested\": ");
    pipe_sb_json_str(b, res.backend_requested);
    pipe_sb_printf(b, ", \"backend_selected\": ");
    pipe_sb_json_str(b, res.backend_selected);
    pipe_sb_printf(b, ", \"backend_used\": ");
    pipe_sb_json_str(b, res.backend_used);
    pipe_sb_printf(b, ", \"backend_reason\": ");
    pipe_sb_json_str(b, res.reason);
    pipe_sb_printf(b, ", \"voxels_fitted\": %lld, \"voxels_converged\": %lld, \"voxels_at_bound\": %lld, "
                      "\"voxels_failed\": %lld, \"seconds\": %.4f, \"kernel_seconds\": %.4f, \"fits_per_s\": %.1f, "
                      "\"warmup_curves_untimed\": %lld, \"curves_per_tier\": {",
                   (long long)nlist, (long long)ms->converged, (long long)ms->at_bound, (long long)ms->failed, res.seconds,
                   res.kernel_seconds, ms->fits_per_s, (long long)warm);
    for (int t = 0; t < LUMEN_FIT_TIER_COUNT; ++t) {
      pipe_sb_printf(b, "%s", t ? ", " : "");
      pipe_sb_json_str(b, lumen_fit_tier_name((lumen_fit_tier)t));
      pipe_sb_printf(b, ": %lld", (long long)res.curves_per_tier[t]);
    }
    pipe_sb_printf(b, "}, \"state_counts\": {");
    for (int s = 0; s < LUMEN_FIT_STATE_COUNT; ++s) {
      pipe_sb_printf(b, "%s", s ? ", " : "");
      pipe_sb_json_str(b, lumen_fit_state_name((lumen_fit_state)s));
      pipe_sb_printf(b, ": %lld", (long long)res.state_counts[s]);
    }
    char bound_text[512];
    pipe_sb_printf(b, "}");
    pipe_at_bound_json(b, bound_text, sizeof bound_text, model, &res);
    pipe_sb_printf(b, ", \"options\": {\"tolerance\": %g, \"max_iterations\": %d, \"conv\": ", o.tolerance,
                   o.max_iterations);
    pipe_sb_json_str(b, lumen_fit_conv_name(o.conv));
    pipe_sb_printf(b, ", \"precision\": ");
    pipe_sb_json_str(b, lumen_fit_precision_name(o.precision));
    pipe_sb_printf(b, ", \"fit_delay\": %d, \"bounds_preset\": ", o.fit_delay);
    pipe_sb_json_str(b, lumen_fit_bounds_preset_name(o.bounds_preset));
    pipe_sb_printf(b, ", \"bounds\": {");
    pipe_bounds_json(b, plan, model);
    pipe_sb_printf(b, "}}}");
    /* the backend's reason (the CUDA probe's text) once: later models with the same say so */
    const int same_reason = !strcmp(run->backend_reason_said, res.reason);
    pipe_sb_printf(&run->text, "stage D %-7s %lld voxels: %lld converged, %lld at a bound%s, %lld failed; backend requested %s, selected %s, used %s (%s); %.3f s, %.0f fits/s%s\n",
                   mname, (long long)nlist, (long long)ms->converged, (long long)ms->at_bound, bound_text,
                   (long long)ms->failed, res.backend_requested, res.backend_selected, res.backend_used,
                   same_reason ? "the reason above" : res.reason, res.seconds, ms->fits_per_s,
                   warm ? " (after an untimed warm-up fit)" : "");
    snprintf(run->backend_reason_said, sizeof run->backend_reason_said, "%s", res.reason);
    pipe_judge_model(run, &(pipe_judge_in){.what = mname, .model = model, .res = &res, .fitted = nlist,
                                           .at_bound = ms->at_bound, .failed = ms->failed, .bound_text = bound_text});
    if (strcmp(res.backend_used, res.backend_selected))
      pipe_warn(run, "%s: backend selected %s but used %s (%s)", mname, res.backend_selected, res.backend_used,
                res.reason);
    const pipe_curve_in ci = {.model = model, .plan = plan, .res = &res, .list = list, .nlist = nlist, .nt = nt,
                              .data = data, .consts = consts, .x = t_min, .x_scale = 1.0,
                              .xlabel = "time from the first frame (min)",
                              .ylabel = model == LUMEN_MODEL_FXR ? "R1 (1/s)" : "concentration (mM)",
                              .src = data ? NULL : src};
    pipe_curve_figure(run, &ci);
}

/* dce_stages.h */
lumen_status dce_fit_model(pipe_run *run, const dce_fit_in *in, lumen_pipe_model_summary *ms, model_out *mo,
                           double *write_s) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  const lumen_model model = in->model;
  const pipe_curves *src = in->curves;
  const double *t_min = in->t_min, *cp = in->cp;
  const char *mname = lumen_model_name(model);
  const int64_t nlist = src->nlist, nt = src->nt, *list = src->list;
  lumen_fit_options o;
  pipe_fit_options_dce(cfg, model, in->r1, &o); /* as lumen_pipe_config_check tried them */
  lumen_fit_plan *plan = NULL;
  lumen_status st = lumen_fit_plan_create(ctx, &o, (int)nt, t_min, cp, &plan);
  if (st != LUMEN_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", lumen_ctx_last_error(ctx));
    return lumen_fail(ctx, st, "stage D (%s): %s", mname, msg);
  }
  float *data = NULL, *consts = NULL;
  st = model_data(ctx, in, cfg->fit_executor != NULL, &data, &consts);
  if (st != LUMEN_OK) {
    lumen_fit_plan_destroy(plan);
    return st;
  }
  lumen_fit_results res;
  int ok = results_alloc(&res, cfg, (size_t)nlist, lumen_model_param_count(model), lumen_fit_derived_count(model));
  float *map = malloc(sizeof(float) * (size_t)run->nvox);
  int oom = !ok || !map;
  if (oom) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "stage D (%s): out of memory for %lld voxels", mname, (long long)nlist);
  char label[64];
  snprintf(label, sizeof label, "D %s fit", mname);
  /* one bar for the model's fit (the chunks' own progress scaled into it: pipe_fit_chunked) and
     one for its maps; the warm-up fit reports nothing of its own */
  lumen_progress_scope_push(ctx, 0, 1, label);
  if (st == LUMEN_OK) st = lumen_progress(ctx, 0.0, label);
  lumen_progress_scope_push(ctx, 0, 0, NULL);
  int64_t warm = st == LUMEN_OK && !cfg->fit_executor ? warm_up(ctx, plan, nlist, data, src, consts) : 0;
  lumen_progress_scope_pop(ctx);
  const pipe_fit_job job = {.plan = plan, .o = &o, .nlist = nlist, .nt = nt, .data = data, .src = src,
                            .consts = consts, .t_min = t_min, .cp = cp};
  if (st == LUMEN_OK)
    st = cfg->fit_executor ? cfg->fit_executor(cfg->fit_executor_user, ctx, plan, model, nlist, nt, data, consts, &res)
                           : pipe_fit_chunked(run, &job, &res);
  if (st == LUMEN_OK) st = lumen_progress(ctx, 1.0, label);
  lumen_progress_scope_pop(ctx);
  if (st != LUMEN_OK && !oom) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", lumen_ctx_last_error(ctx));
    st = lumen_fail(ctx, st, "stage D (%s): %s", mname, msg);
  }
  if (st == LUMEN_OK) {
    const model_fit f = {.model = model, .o = &o, .plan = plan, .res = &res, .list = list, .nlist = nlist, .nt = nt,
                         .warm = warm, .data = data, .src = src, .consts = consts, .t_min = t_min};
    record_model_fit(run, &f, ms, mo);
    double tw = pipe_now();
    snprintf(label, sizeof label, "D %s maps", mname);
    lumen_progress_scope_push(ctx, 0, 1, label);
    st = lumen_progress(ctx, 0.0, label);
    if (st == LUMEN_OK) st = dce_write_model_maps(run, in, &res, mo, map);
    lumen_progress_scope_pop(ctx);
    *write_s += pipe_now() - tw;
  }
  free(map);
  results_free(&res);
  free(data);
  free(consts);
  lumen_fit_plan_destroy(plan);
  return st;
}
