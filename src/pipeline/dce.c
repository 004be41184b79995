/* lumen dce: stages A (signal -> concentration), B (AIF), D (fitting, maps, model selection),
   run log and report. docs/PIPELINES.md describes the options, outputs and run-log fields. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pipeline/conc_f32.h"
#include "pipeline/pipe_internal.h"
#include "pipeline/checkpoint.h"
#include "fit/fit_series.h"
#include "models/model.h"
#include "lumen_build_config.h"

#define PI 3.14159265358979323846

/* Reads a 3-D map on the run's grid (T1, B1, ...). */
static lumen_status read_map3(pipe_run *run, const char *role, const char *path, const char *ref, float **out) {
  lumen_image *im = NULL;
  lumen_nifti_info info;
  *out = NULL;
  lumen_status st = pipe_read_input(run, role, path, &im, &info);
  if (st != LUMEN_OK) return st;
  if (lumen_image_count(im) != run->nvox || lumen_image_dim(im, 3) != 1)
    st = lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "%s '%s' is on another grid: %lldx%lldx%lldx%lld voxels, the series '%s' has %lldx%lldx%lld", role,
                    path, (long long)lumen_image_dim(im, 0), (long long)lumen_image_dim(im, 1),
                    (long long)lumen_image_dim(im, 2), (long long)lumen_image_dim(im, 3), ref, (long long)run->nx,
                    (long long)run->ny, (long long)run->nz);
  if (st == LUMEN_OK) st = pipe_check_grid(run, role, path, im, ref);
  if (st == LUMEN_OK) {
    *out = malloc(sizeof(float) * (size_t)run->nvox);
    if (!*out) st = lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", role);
    else memcpy(*out, lumen_image_const_data(im), sizeof(float) * (size_t)run->nvox);
  }
  lumen_image_free(im);
  return st;
}

/* Median of the finite positive values inside the mask. */
static double mask_median(pipe_run *run, const float *v, int64_t *n_bad) {
  double *tmp = malloc(sizeof(double) * (size_t)run->n_mask);
  if (!tmp) return NAN;
  int64_t n = 0, bad = 0;
  for (int64_t i = 0; i < run->nvox; ++i) {
    if (!run->mask[i]) continue;
    if (isfinite(v[i]) && v[i] > 0) tmp[n++] = v[i];
    else ++bad;
  }
  double m = pipe_median(tmp, n);
  free(tmp);
  if (n_bad) *n_bad = bad;
  return m;
}

static void map_name(char *buf, size_t size, const char *prefix, const char *model, const char *param) {
  snprintf(buf, size, "%s_model-%s_param-%s.nii.gz", prefix, model, param);
}

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
  lumen_fit_results r;
  memset(&r, 0, sizeof r);
  r.params = params;
  r.derived = derived;
  r.state = state;
  r.chi2 = chi2;
  r.r2 = r2;
  r.delay = delay;
  lumen_status st = data ? lumen_fit_execute(ctx, plan, k, data, consts, &r)
                         : lumen_fit_execute_series(ctx, plan, k, src->base, src->list, src->nvox, consts, &r);
  if (st != LUMEN_OK) {
    lumen_ctx_clear_error(ctx);
    return 0;
  }
  return k;
}

/* Stage D for one model; fills maps and the summary. aic_map/k_map (nvox) kept for selection. */
typedef struct model_out {
  float *aic, *ktrans, *ve, *vp;
  int32_t *state;
  int json_first;  /* the first member of the run log's "models" object */
} model_out;

/* The fit inputs of one model: FXR fits R1 = R10 + r1 C (data: its own curves, consts: R10, B1
   per curve), the other models the concentration curves themselves (data NULL: read from src,
   consts NULL); all == 1 (an executor of the caller's, which takes one array): the concentration
   curves gathered into data. */
static lumen_status model_data(lumen_ctx *ctx, lumen_model model, const pipe_curves *src, int all, const float *t10,
                               double t10_const, const float *b1, double r1, float **data, float **consts) {
  const int64_t nlist = src->nlist, nt = src->nt, *list = src->list;
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
    pipe_judge_model(run, mname, model, &res, nlist, ms->at_bound, ms->failed, bound_text);
    if (strcmp(res.backend_used, res.backend_selected))
      pipe_warn(run, "%s: backend selected %s but used %s (%s)", mname, res.backend_selected, res.backend_used,
                res.reason);
    pipe_curve_in ci = {model, plan, &res, list, nlist, nt, data, consts, t_min, 1.0,
                        "time from the first frame (min)",
                        model == LUMEN_MODEL_FXR ? "R1 (1/s)" : "concentration (mM)", NULL, data ? NULL : src};
    pipe_curve_figure(run, &ci);
}

/* What a map of a model holds at each fitted voxel (write_model_maps). */
typedef enum {
  MAP_PARAM, MAP_CI_LO, MAP_CI_HI, MAP_DERIVED, MAP_SSE, MAP_R2, MAP_AIC, MAP_DELAY, MAP_STATE
} model_map_kind;
enum { MODEL_MAPS_MAX = 3 * LUMEN_FIT_MAX_PARAMS + LUMEN_FIT_MAX_DERIVED + 5 };

/* The maps of one model: what each holds (kind, parameter or derived index) and the fit's results. */
typedef struct model_maps {
  lumen_model model;
  const lumen_fit_results *res;
  const int64_t *list;
  int64_t nlist, nt, nvox;
  int np, nd, npar_aic;
  model_out *mo;
  int n;
  model_map_kind kind[MODEL_MAPS_MAX];
  int index[MODEL_MAPS_MAX];
} model_maps;

/* A map of the list: the kind and index in mm, the name, intent and sidecar fields in maps[mm->n]. */
static void add_model_map(model_maps *mm, pipe_map_out *maps, const pipe_run *run, model_map_kind kind, int index,
                          const char *param, const char *unit, const char *bu, int figure, const char *desc) {
  const char *mname = lumen_model_name(mm->model);
  pipe_map_out *m = &maps[mm->n];
  mm->kind[mm->n] = kind;
  mm->index[mm->n++] = index;
  map_name(m->name, sizeof m->name, run->prefix, mname, param);
  snprintf(m->param, sizeof m->param, "%s", param);
  snprintf(m->description, sizeof m->description, "%s", desc);
  m->data = NULL;
  m->unit = unit;
  m->model = mname;
  m->backend_used = bu;
  m->figure = figure;
}

/* The list, in the order the maps are written and recorded: parameters (each with its CIs), derived
   values, sse, r2, AIC, delay, state. */
static void model_map_list(model_maps *mm, pipe_map_out *maps, const pipe_run *run, const char *bu) {
  const lumen_model model = mm->model;
  const char *mname = lumen_model_name(model);
  char pname[48], desc[200];
  for (int p = 0; p < mm->np; ++p) {
    const char *pn = lumen_model_param_name(model, p), *unit = lumen_model_param_unit(model, p);
    snprintf(desc, sizeof desc, "lumen %s %s (%s)", mname, pn, unit);
    add_model_map(mm, maps, run, MAP_PARAM, p, pn, unit, bu, 1, desc);
    if (!mm->res->ci_lo) continue;
    snprintf(pname, sizeof pname, "%s_cilo", pn);
    snprintf(desc, sizeof desc, "lumen %s %s lower 95%% confidence bound", mname, pn);
    add_model_map(mm, maps, run, MAP_CI_LO, p, pname, unit, bu, 0, desc);
    snprintf(pname, sizeof pname, "%s_cihi", pn);
    snprintf(desc, sizeof desc, "lumen %s %s upper 95%% confidence bound", mname, pn);
    add_model_map(mm, maps, run, MAP_CI_HI, p, pname, unit, bu, 0, desc);
  }
  for (int d = 0; d < mm->nd; ++d) {
    const char *dn = lumen_fit_derived_name(model, d);
    snprintf(desc, sizeof desc, "lumen %s %s (derived)", mname, dn);
    add_model_map(mm, maps, run, MAP_DERIVED, d, dn, lumen_fit_derived_unit(model, d), bu, 1, desc);
  }
  if (mm->np > 0) {
    add_model_map(mm, maps, run, MAP_SSE, 0, "sse", "mM^2", bu, 0, "sum of squared residuals");
    add_model_map(mm, maps, run, MAP_R2, 0, "r2", "", bu, 1, "coefficient of determination");
    add_model_map(mm, maps, run, MAP_AIC, 0, "aic", "", bu, 0, "AIC = n ln(sse/n) + 2k");
    if (mm->res->delay) add_model_map(mm, maps, run, MAP_DELAY, 0, "delay", "s", bu, 1, "fitted arterial delay");
  }
  char legend[256];
  pipe_state_legend(legend, sizeof legend);
  add_model_map(mm, maps, run, MAP_STATE, 0, "state", "", bu, 1, legend);
}

/* Map i of the list: the background (NaN; "not fitted" for the state map), then each fitted voxel's
   value. Thread-safe for different maps. */
static void fill_model_map(void *user, int i, float *map) {
  const model_maps *mm = user;
  const lumen_fit_results *r = mm->res;
  const int64_t *list = mm->list, n = mm->nlist;
  const int j = mm->index[i], np = mm->np, nd = mm->nd;
  const float background = mm->kind[i] == MAP_STATE ? (float)LUMEN_FIT_NOT_FITTED : NAN;
  for (int64_t v = 0; v < mm->nvox; ++v) map[v] = background;
  switch (mm->kind[i]) {
    case MAP_PARAM: for (int64_t k = 0; k < n; ++k) map[list[k]] = (float)r->params[k * np + j]; break;
    case MAP_CI_LO: for (int64_t k = 0; k < n; ++k) map[list[k]] = (float)r->ci_lo[k * np + j]; break;
    case MAP_CI_HI: for (int64_t k = 0; k < n; ++k) map[list[k]] = (float)r->ci_hi[k * np + j]; break;
    case MAP_DERIVED: for (int64_t k = 0; k < n; ++k) map[list[k]] = (float)r->derived[k * nd + j]; break;
    case MAP_SSE: for (int64_t k = 0; k < n; ++k) map[list[k]] = (float)r->chi2[k]; break;
    case MAP_R2: for (int64_t k = 0; k < n; ++k) map[list[k]] = (float)r->r2[k]; break;
    case MAP_AIC: {
      const double nt = (double)mm->nt;
      for (int64_t k = 0; k < n; ++k)
        map[list[k]] = (float)(isfinite(r->chi2[k]) ? nt * log(fmax(r->chi2[k], 1e-300) / nt) + 2.0 * mm->npar_aic : NAN);
      break;
    }
    case MAP_DELAY: for (int64_t k = 0; k < n; ++k) map[list[k]] = (float)(r->delay[k] * 60.0); break;
    case MAP_STATE: for (int64_t k = 0; k < n; ++k) map[list[k]] = (float)r->state[k]; break;
  }
}

/* The maps the run keeps for the model selection (best-model maps): copies, in the list's order. */
static void keep_model_map(void *user, int i, const float *map) {
  const model_maps *mm = user;
  model_out *mo = mm->mo;
  const size_t bytes = sizeof(float) * (size_t)mm->nvox;
  const char *name = mm->kind[i] == MAP_PARAM ? lumen_model_param_name(mm->model, mm->index[i])
                     : mm->kind[i] == MAP_DERIVED ? lumen_fit_derived_name(mm->model, mm->index[i]) : "";
  if (mm->kind[i] == MAP_PARAM && !strcmp(name, "Ktrans") && mo->ktrans) memcpy(mo->ktrans, map, bytes);
  if (mm->kind[i] == MAP_PARAM && !strcmp(name, "ve") && mo->ve) memcpy(mo->ve, map, bytes);
  if ((mm->kind[i] == MAP_PARAM || mm->kind[i] == MAP_DERIVED) && !strcmp(name, "vp") && mo->vp) memcpy(mo->vp, map, bytes);
  if (mm->kind[i] == MAP_AIC && mo->aic) memcpy(mo->aic, map, bytes);
  if (mm->kind[i] == MAP_STATE && mo->state)
    for (int64_t v = 0; v < mm->nvox; ++v) mo->state[v] = (int32_t)map[v];
}

/* The maps of one model: parameters (and their CIs), derived values, sse, r2, AIC, delay, state.
   They are filled and written together (pipe_write_map_list): memory for np x 3 + nd + 5 maps of
   nvox floats at most, or 2 per thread where that is fewer (Tofts with CIs: 11 maps, 92 MB for
   256x256x32 voxels; 4 maps with 2 threads; the series being fitted is 80 frames of the same size);
   where memory runs short they go in smaller batches, down to one at a time through map. The
   pipeline has no memory limit of its own to charge them to (--memory-limit checks the inputs
   before the run). */
static lumen_status write_model_maps(pipe_run *run, lumen_model model, const int64_t *list, int64_t nlist, int64_t nt,
                                     const lumen_fit_results *resp, model_out *mo, float *map) {
  model_maps *mm = calloc(1, sizeof *mm);
  pipe_map_out *maps = calloc(MODEL_MAPS_MAX, sizeof *maps);
  lumen_status st = LUMEN_OK;
  if (!mm || !maps) {
    st = lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "stage D (%s): out of memory for the map list",
                    lumen_model_name(model));
  } else {
    const int np = lumen_model_param_count(model);
    *mm = (model_maps){model, resp, list, nlist, nt, run->nvox, np, lumen_fit_derived_count(model),
                       np + (run->cfg->fit_delay ? 1 : 0), mo, 0, {0}, {0}};
    model_map_list(mm, maps, run, resp->backend_used);
    /* each voxel's fit state, for the figures: window of the converged voxels, at-bound voxels hatched */
    uint8_t *vstate = run->cfg->report ? malloc((size_t)run->nvox) : NULL;
    if (vstate) {
      memset(vstate, 255, (size_t)run->nvox);
      for (int64_t k = 0; k < nlist; ++k) vstate[list[k]] = (uint8_t)resp->state[k];
      for (int i = 0; i < mm->n; ++i)
        if (mm->kind[i] == MAP_PARAM || mm->kind[i] == MAP_DERIVED || mm->kind[i] == MAP_R2 || mm->kind[i] == MAP_DELAY)
          maps[i].state = vstate;
    }
    pipe_map_fill f = {fill_model_map, keep_model_map, mm};
    st = pipe_write_map_list(run, maps, mm->n, map, &f);
    free(vstate);
  }
  free(maps);
  free(mm);
  return st;
}

static lumen_status fit_model(pipe_run *run, lumen_model model, const pipe_curves *src, const double *t_min,
                              const double *cp, const float *t10, double t10_const, const float *b1, double r1,
                              lumen_pipe_model_summary *ms, model_out *mo, double *write_s) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  const char *mname = lumen_model_name(model);
  const int64_t nlist = src->nlist, nt = src->nt, *list = src->list;
  lumen_fit_options o;
  pipe_fit_options_dce(cfg, model, r1, &o); /* as lumen_pipe_config_check tried them */
  lumen_fit_plan *plan = NULL;
  lumen_status st = lumen_fit_plan_create(ctx, &o, (int)nt, t_min, cp, &plan);
  if (st != LUMEN_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", lumen_ctx_last_error(ctx));
    return lumen_fail(ctx, st, "stage D (%s): %s", mname, msg);
  }
  float *data = NULL, *consts = NULL;
  st = model_data(ctx, model, src, cfg->fit_executor != NULL, t10, t10_const, b1, r1, &data, &consts);
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
  if (st == LUMEN_OK)
    st = cfg->fit_executor ? cfg->fit_executor(cfg->fit_executor_user, ctx, plan, model, nlist, nt, data, consts, &res)
                    : pipe_fit_chunked(run, plan, &o, nlist, nt, data, src, consts, t_min, cp, &res);
  if (st == LUMEN_OK) st = lumen_progress(ctx, 1.0, label);
  lumen_progress_scope_pop(ctx);
  if (st != LUMEN_OK && !oom) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", lumen_ctx_last_error(ctx));
    st = lumen_fail(ctx, st, "stage D (%s): %s", mname, msg);
  }
  if (st == LUMEN_OK) {
    model_fit f = {model, &o, plan, &res, list, nlist, nt, warm, data, src, consts, t_min};
    record_model_fit(run, &f, ms, mo);
    double tw = pipe_now();
    snprintf(label, sizeof label, "D %s maps", mname);
    lumen_progress_scope_push(ctx, 0, 1, label);
    st = lumen_progress(ctx, 0.0, label);
    if (st == LUMEN_OK) st = write_model_maps(run, model, list, nlist, nt, &res, mo, map);
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

/* A DICOM series without frame times (pipe_read_dicom_series leaves no frame interval). */
static int dicom_without_times(const lumen_nifti_info *info) { return info->version == 0 && isnan(info->time_step_s); }

/* Frame times in minutes from the first frame. */
static lumen_status frame_times(pipe_run *run, const lumen_nifti_info *info, const lumen_acquisition *acq, int64_t nt,
                                double *t_min, char *how, size_t how_size) {
  const lumen_pipe_config *cfg = run->cfg;
  if (isfinite(cfg->dt_s)) {
    for (int64_t i = 0; i < nt; ++i) t_min[i] = (double)i * cfg->dt_s / 60.0;
    snprintf(how, how_size, "--dt %g s", cfg->dt_s);
    return LUMEN_OK;
  }
  if (acq->n_frame_times > 0) {
    if (acq->n_frame_times != nt)
      return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                        "DCE series '%s': the sidecar's %s has %lld times, the series %lld frames (give --dt)", cfg->dce,
                        acq->frame_times_key, (long long)acq->n_frame_times, (long long)nt);
    for (int64_t i = 0; i < nt; ++i) {
      t_min[i] = (acq->frame_times_s[i] - acq->frame_times_s[0]) / 60.0;
      if (i > 0 && !(t_min[i] > t_min[i - 1]))
        return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT, "DCE series '%s': sidecar %s is not increasing at frame %lld (give --dt)",
                          cfg->dce, acq->frame_times_key, (long long)i);
    }
    char src[LUMEN_PIPE_PATH_MAX + 64];
    const int dicom = !strncmp(acq->frame_times_key, "DICOM ", 6);  /* pipe_read_dicom_series' keys */
    snprintf(src, sizeof src, "DCE series '%s' %s %s (mean frame interval)", cfg->dce, dicom ? "header" : "sidecar",
             acq->frame_times_key);
    lumen_status st = pipe_check_dt(run->ctx, src, t_min[nt - 1] * 60.0 / (double)(nt - 1));
    if (st != LUMEN_OK) return st;
    snprintf(how, how_size, "%s%s", dicom ? "the headers' " : "sidecar ", dicom ? acq->frame_times_key + 6 : acq->frame_times_key);
    return LUMEN_OK;
  }
  double dt = info->time_step_s;
  /* dcm2niix writes RepetitionTime into pixdim[4]; for a 4-D series with RepetitionTimeExcitation
     that RepetitionTime is the volume time (acq->volume_time_s), so pixdim[4] is the frame interval */
  const int volume_time = isfinite(acq->volume_time_s) && fabs(dt - acq->volume_time_s) < 1e-9 * fmax(1.0, dt);
  if (!volume_time && isfinite(acq->repetition_time_s) && fabs(dt - acq->repetition_time_s) < 1e-9 * fmax(1.0, dt))
    return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "DCE series '%s': the header's frame interval pixdim[4] = %g s equals the RepetitionTime "
                      "(dcm2niix writes the TR there); give the frame interval with --dt SECONDS",
                      cfg->dce, dt);
  if (dicom_without_times(info))
    return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "DCE series '%s': no timing: none of TriggerTime (0018,1060), the acquisition times "
                      "(0008,002A / 0008,0032), ContentTime (0008,0033) and FrameReferenceTime (0054,1300) is in every "
                      "file and rises from frame to frame (GE writes one AcquisitionTime for a whole series; "
                      "'lumen convert FOLDER' prints what each tag held); give the frame interval with --dt SECONDS",
                      cfg->dce);
  if (!(dt > 0) || !isfinite(dt))
    return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "DCE series '%s': no frame interval (pixdim[4] is %g, no FrameTimesStart/AcquisitionTime list in "
                      "the sidecar); give --dt SECONDS",
                      cfg->dce, dt);
  char src[LUMEN_PIPE_PATH_MAX + 64];
  snprintf(src, sizeof src, "DCE series '%s' header pixdim[4] (frame interval)", cfg->dce);
  lumen_status st = pipe_check_dt(run->ctx, src, dt);
  if (st != LUMEN_OK) return st;
  for (int64_t i = 0; i < nt; ++i) t_min[i] = (double)i * dt / 60.0;
  snprintf(how, how_size, "header pixdim[4] = %g s%s", dt,
           volume_time ? " (= the sidecar's RepetitionTime, dcm2niix's volume time; TR from RepetitionTimeExcitation)" : "");
  return LUMEN_OK;
}

/* The relaxivity in the sidecar: ContrastAgentRelaxivity, else Relaxivity; *key = NULL when
   neither is there. */
static void sidecar_relaxivity(lumen_ctx *ctx, const lumen_json *side, double *r1, const char **key) {
  static const char *const keys[] = {"ContrastAgentRelaxivity", "Relaxivity"};
  *key = NULL;
  for (int i = 0; side && i < 2; ++i) {
    int f = 0;
    double v = NAN;
    lumen_json_get_number(ctx, side, keys[i], &v, &f);
    if (f) {
      *r1 = v;
      *key = keys[i];
      return;
    }
  }
}

/* A sidecar value that is there but not a finite number (1e999 reads as inf): says so, rather than
   "missing". */
static lumen_status finite_or_absent(lumen_ctx *ctx, const char *sc, const char *key, double v, const char *expected) {
  if (isnan(v) || isfinite(v)) return LUMEN_OK;
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "sidecar '%s' %s = %g: not a finite number; expected %s", sc, key,
                    v, expected);
}

/* Flip angle, TR and relaxivity of the series: the options, else its sidecar; sidecar values
   get the checks the options got (lumen_pipe_config_check), as data errors naming the field. */
static lumen_status acquisition_values(pipe_run *run, const lumen_acquisition *acq, const lumen_json *side, int found,
                                       int dicom, double *fa_deg, double *tr, double *r1, char *fa_how, char *tr_how,
                                       char *r1_how, size_t how_size) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  const int signal = cfg->input_type == LUMEN_PIPE_INPUT_SIGNAL;
  const char *rkey = NULL;
  *fa_deg = isfinite(cfg->flip_angle_deg) ? cfg->flip_angle_deg : acq->flip_angle_deg;
  *tr = isfinite(cfg->tr_s) ? cfg->tr_s : acq->repetition_time_s;
  *r1 = cfg->relaxivity;
  if (!isfinite(*r1)) sidecar_relaxivity(ctx, side, r1, &rkey);
  char sc[LUMEN_PIPE_PATH_MAX], src[LUMEN_PIPE_PATH_MAX + 64];
  const char *where = dicom ? "DICOM headers" : "sidecar";
  if (dicom) snprintf(sc, sizeof sc, "%s", cfg->dce);
  else lumen_sidecar_path(ctx, cfg->dce, sc, sizeof sc);
  /* the run log says where FA and TR came from */
  if (isfinite(cfg->flip_angle_deg)) snprintf(fa_how, how_size, "--flip-angle");
  else snprintf(fa_how, how_size, "%s '%s' FlipAngle", where, sc);
  if (isfinite(cfg->tr_s)) snprintf(tr_how, how_size, "--tr");
  else snprintf(tr_how, how_size, "%s '%s' %s", where, sc,
                acq->repetition_time_key ? acq->repetition_time_key : "RepetitionTime");
  const char *tkey = acq->repetition_time_key ? acq->repetition_time_key : "RepetitionTime";
  if (isfinite(cfg->relaxivity))
    snprintf(r1_how, how_size, "%s", cfg->relaxivity_source[0] ? cfg->relaxivity_source : "option");
  else if (rkey)
    snprintf(r1_how, how_size, "sidecar '%s' %s", sc, rkey);
  lumen_status st = LUMEN_OK;
  if (!signal) {
    if (!(*r1 > 0) || !isfinite(*r1)) {
      *r1 = LUMEN_DEFAULT_RELAXIVITY; /* concentration input: only FXR uses it */
      snprintf(r1_how, how_size, "default (concentration input: used by fxr only)");
    }
    return LUMEN_OK;
  }
  st = finite_or_absent(ctx, sc, "FlipAngle", *fa_deg, "a flip angle in degrees (1..90)");
  if (st == LUMEN_OK) st = finite_or_absent(ctx, sc, tkey, *tr, "a repetition time in seconds");
  if (st == LUMEN_OK && rkey)
    st = finite_or_absent(ctx, sc, rkey, *r1, "a relaxivity in 1/(mM s), e.g. 4.5 for gadoterate at 1.5 T");
  if (st != LUMEN_OK) return st;
  if (!isfinite(*fa_deg))
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "flip angle missing for '%s': give --flip-angle DEG or FlipAngle in %s '%s'%s",
                      cfg->dce, where, sc, found || dicom ? "" : " (no sidecar found)");
  if (!isfinite(*tr))
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "repetition time missing for '%s': give --tr SECONDS or RepetitionTime in %s '%s'%s",
                      cfg->dce, where, sc, found || dicom ? "" : " (no sidecar found)");
  if (!isfinite(*r1) && dicom)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "relaxivity missing for '%s': give --relaxivity R (1/(mM s), e.g. 4.5 for gadoterate at 1.5 T) or "
                      "'relaxivity = R' in a config file (DICOM has no relaxivity attribute: ContrastBolusAgent "
                      "(0018,0010) names the agent only)", cfg->dce);
  if (!isfinite(*r1))
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "relaxivity missing for '%s': give --relaxivity R (1/(mM s), e.g. 4.5 for gadoterate at 1.5 T), "
                      "'relaxivity = R' in a config file, or ContrastAgentRelaxivity in '%s'",
                      cfg->dce, sc);
  if (!isfinite(cfg->flip_angle_deg)) {
    snprintf(src, sizeof src, "%s '%s' FlipAngle", where, sc);
    st = pipe_check_flip(ctx, src, *fa_deg);
  }
  if (st == LUMEN_OK && !isfinite(cfg->tr_s)) {
    snprintf(src, sizeof src, "%s '%s' %s", where, sc, tkey);
    st = pipe_check_tr(ctx, src, *tr, 1);
  }
  if (st == LUMEN_OK && rkey) {
    snprintf(src, sizeof src, "sidecar '%s' %s", sc, rkey);
    st = pipe_check_relaxivity(ctx, src, *r1);
  }
  return st;
}

/* The state of one `lumen dce` run between its steps (the inputs, stage A's curves, the AIF, the
   per-model maps kept for the selection). */
typedef struct dce_job {
  lumen_model models[LUMEN_MODEL_COUNT];
  int nmodels;
  lumen_image *dce;
  lumen_nifti_info info;
  lumen_acquisition acq;
  lumen_json *side;
  int found;               /* a sidecar was found */
  int signal;              /* the input is SPGR signal (else concentration) */
  int64_t nt;
  double fa_deg, tr, r1;
  int dicom;               /* the series is a DICOM folder or file */
  char how_t[256], t1_how[512], base_how[256], fa_how[LUMEN_PIPE_PATH_MAX + 64], tr_how[LUMEN_PIPE_PATH_MAX + 64],
      r1_how[LUMEN_PIPE_PATH_MAX + 64];
  float *t10, *b1, *ninv_map;
  pipe_curves curves;      /* the concentration curves, converted in place over the series (dce) */
  int64_t *list;
  int32_t *ninv;
  uint8_t *bad;
  int64_t nlist, n_bad, n_interp, n_flag;
  double *t_min, *tissue_mean;
  pipe_spgr sp;
  pipe_aif aif;
  model_out mo[LUMEN_MODEL_COUNT];
  double t0, write_s;
  double seconds_b_signal; /* stage B's reading of the series, done within stage A (before the conversion) */
} dce_job;

static void dce_job_free(dce_job *j) {
  for (int m = 0; m < LUMEN_MODEL_COUNT; ++m) {
    free(j->mo[m].aic); free(j->mo[m].ktrans); free(j->mo[m].ve); free(j->mo[m].vp); free(j->mo[m].state);
  }
  lumen_image_free(j->dce);
  lumen_json_free(j->side);
  lumen_acquisition_clear(&j->acq);
  free(j->t10); free(j->b1); free(j->ninv_map); free(j->list); free(j->ninv); free(j->bad);
  free(j->t_min); free(j->tissue_mean);
  pipe_aif_free(&j->aif);
}

/* Every required value the run cannot find, in one message (issue 39 item 6: QIBA v6 took three
   failed runs, one value each). Only when two or more are missing: one missing value keeps its own
   message below, with the detail of what was looked at. For a DICOM series the hints name the
   DICOM attribute, never a sidecar that does not exist. */
static lumen_status missing_values(pipe_run *run, const dce_job *j) {
  const lumen_pipe_config *cfg = run->cfg;
  const lumen_acquisition *acq = &j->acq;
  char sc[LUMEN_PIPE_PATH_MAX];
  if (!j->dicom) lumen_sidecar_path(run->ctx, cfg->dce, sc, sizeof sc);
  const char *what[5];
  char hint[5][LUMEN_PIPE_PATH_MAX + 200];
  int n = 0;
  if (j->signal) {
    double r1 = cfg->relaxivity;
    const char *rkey = NULL;
    if (!isfinite(r1)) sidecar_relaxivity(run->ctx, j->side, &r1, &rkey);
    if (!isfinite(cfg->flip_angle_deg) && isnan(acq->flip_angle_deg)) {
      what[n] = "flip angle";
      if (j->dicom) snprintf(hint[n], sizeof hint[n], "--flip-angle DEG (the headers have no FlipAngle (0018,1314))");
      else snprintf(hint[n], sizeof hint[n], "--flip-angle DEG or FlipAngle in '%s'%s", sc, j->found ? "" : " (not found)");
      n++;
    }
    if (!isfinite(cfg->tr_s) && isnan(acq->repetition_time_s)) {
      what[n] = "repetition time";
      if (j->dicom) snprintf(hint[n], sizeof hint[n], "--tr SECONDS (the headers have no RepetitionTime (0018,0080))");
      else snprintf(hint[n], sizeof hint[n], "--tr SECONDS or RepetitionTime in '%s'", sc);
      n++;
    }
    if (isnan(r1)) {
      what[n] = "relaxivity";
      if (j->dicom)
        snprintf(hint[n], sizeof hint[n], "--relaxivity R (1/(mM s), e.g. 4.5 for gadoterate at 1.5 T; DICOM has no "
                 "relaxivity attribute: ContrastBolusAgent (0018,0010) names the agent only)");
      else
        snprintf(hint[n], sizeof hint[n], "--relaxivity R (1/(mM s), e.g. 4.5 for gadoterate at 1.5 T) or "
                 "ContrastAgentRelaxivity in '%s'", sc);
      n++;
    }
  }
  const double dt = j->info.time_step_s;
  const int header_dt = dt > 0 && isfinite(dt) && !dicom_without_times(&j->info) &&
                        !(isfinite(acq->repetition_time_s) && fabs(dt - acq->repetition_time_s) < 1e-9 * fmax(1.0, dt) &&
                          !(isfinite(acq->volume_time_s) && fabs(dt - acq->volume_time_s) < 1e-9 * fmax(1.0, dt)));
  if (!isfinite(cfg->dt_s) && acq->n_frame_times == 0 && !header_dt) {
    what[n] = "frame times";
    if (j->dicom)
      snprintf(hint[n], sizeof hint[n], "--dt SECONDS (no TriggerTime (0018,1060), acquisition or content time rises "
               "from frame to frame: 'lumen convert FOLDER' shows each tag)");
    else
      snprintf(hint[n], sizeof hint[n], "--dt SECONDS, or FrameTimesStart in '%s' (pixdim[4] = %g s %s)", sc, dt,
               dt > 0 && isfinite(dt) ? "is the RepetitionTime, as dcm2niix writes it" : "is no frame interval");
    n++;
  }
  if (j->signal && !cfg->t1map && cfg->n_vfa == 0 && !isfinite(cfg->t1_default_s)) {
    what[n] = "pre-contrast T1";
    snprintf(hint[n], sizeof hint[n], "--t1map FILE, --vfa FILE..., or --t1 SECONDS");
    n++;
  }
  if (n < 2) return LUMEN_OK;
  char msg[6 * (LUMEN_PIPE_PATH_MAX + 240)];
  int len = snprintf(msg, sizeof msg, "'%s' lacks %d required values:", cfg->dce, n);
  for (int i = 0; i < n && len > 0 && (size_t)len < sizeof msg; ++i)
    len += snprintf(msg + len, sizeof msg - (size_t)len, "%s %s: give %s", i ? ";" : "", what[i], hint[i]);
  return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s", msg);
}

/* The series (4-D, every frame with a finite value), its sidecar, the acquisition values, the
   frame times and the mask. */
static lumen_status dce_read_inputs(pipe_run *run, dce_job *j) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  lumen_pipe_summary *sum = run->sum;
  lumen_status st = LUMEN_OK;
  /* ---------------- inputs */
  j->dicom = lumen_dicom_is_series_input(cfg->dce);
  if (st == LUMEN_OK && j->dicom)
    st = pipe_read_dicom_series(run, "DCE series", cfg->dce, cfg->series, &j->dce, &j->info, &j->acq);
  else if (st == LUMEN_OK && cfg->series)
    st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "--series %s: the DCE series '%s' is not a DICOM folder or file",
                    cfg->series, cfg->dce);
  else if (st == LUMEN_OK) st = pipe_read_input(run, "DCE series", cfg->dce, &j->dce, &j->info);
  if (st == LUMEN_OK && (lumen_image_ndim(j->dce) != 4 || lumen_image_dim(j->dce, 3) < 3))
    st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "DCE series '%s' is %d-D (%lldx%lldx%lldx%lld): expected a 4-D series (x, y, z, time) with at least 3 frames",
                    cfg->dce, lumen_image_ndim(j->dce), (long long)lumen_image_dim(j->dce, 0), (long long)lumen_image_dim(j->dce, 1),
                    (long long)lumen_image_dim(j->dce, 2), (long long)lumen_image_dim(j->dce, 3));
  if (st == LUMEN_OK && !j->dicom) st = lumen_sidecar_read_for(ctx, cfg->dce, &j->acq, &j->side, &j->found);
  if (st == LUMEN_OK) {
    pipe_set_geometry(run, j->dce, &j->info);
    j->nt = lumen_image_dim(j->dce, 3);
    sum->voxels = run->nvox;
    /* frames that are entirely NaN/Inf (a frame's scan stops at its first finite value) */
    const float *d = lumen_image_const_data(j->dce);
    for (int64_t i = 0; i < j->nt && st == LUMEN_OK; ++i) {
      int64_t v = 0;
      while (v < run->nvox && !isfinite(d[i * run->nvox + v])) ++v;
      if (v == run->nvox)
        st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "DCE series '%s': frame %lld of %lld has no finite value (all NaN/Inf)",
                        cfg->dce, (long long)i, (long long)j->nt);
    }
  }
  if (st == LUMEN_OK) st = missing_values(run, j);
  if (st == LUMEN_OK) st = acquisition_values(run, &j->acq, j->side, j->found, j->dicom, &j->fa_deg, &j->tr, &j->r1, j->fa_how,
                                            j->tr_how, j->r1_how, sizeof j->fa_how);
  if (st == LUMEN_OK) {
    j->t_min = malloc(sizeof(double) * (size_t)j->nt);
    j->tissue_mean = calloc((size_t)j->nt, sizeof(double));
    if (!j->t_min || !j->tissue_mean) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  if (st == LUMEN_OK) st = frame_times(run, &j->info, &j->acq, j->nt, j->t_min, j->how_t, sizeof j->how_t);
  if (st == LUMEN_OK) {
    char src[LUMEN_PIPE_PATH_MAX + 96];
    snprintf(src, sizeof src, "DCE series '%s' (frame times from %s)", cfg->dce, j->how_t);
    st = pipe_check_duration(ctx, src, j->t_min[j->nt - 1] * 60.0, j->nt);
  }
  if (st == LUMEN_OK) st = pipe_load_mask(run, cfg->dce);
  return st;
}

/* The pre-contrast T1 (a map in s or ms, VFA inputs, or a constant) and the B1 map (fraction or
   percent); unit corrections are warnings. */
static lumen_status dce_read_t1_b1(pipe_run *run, dce_job *j) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  lumen_status st = LUMEN_OK;
  if (st == LUMEN_OK && j->signal) {
    if (cfg->t1map) {
      st = read_map3(run, "T1 map", cfg->t1map, cfg->dce, &j->t10);
      if (st == LUMEN_OK) {
        int64_t nbad = 0;
        double med = mask_median(run, j->t10, &nbad);
        if (!isfinite(med))
          st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                          "T1 map '%s': every voxel in the mask has T1 <= 0 or not finite (zero or negative T1)", cfg->t1map);
        else {
          int ms = med > 10;
          if (ms) for (int64_t v = 0; v < run->nvox; ++v) j->t10[v] *= 0.001f;
          /* the run log prints "T1 <how>": the how starts after the word T1 */
          snprintf(j->t1_how, sizeof j->t1_how, "map '%s' in %s (detected: median %.4g %s inside the mask %s 10)%s", cfg->t1map,
                   ms ? "ms" : "s", med, ms ? "ms" : "s", ms ? ">" : "<=", nbad ? "" : "");
          if (ms)
            pipe_warn(run, "unit correction: T1 map '%s' read as milliseconds (median %.4g inside the mask > 10) and "
                            "converted to seconds", cfg->t1map, med);
          if (nbad) {
            pipe_warn(run, "T1 map '%s': %lld voxels inside the mask have T1 <= 0 or not finite (zero or negative T1); "
                            "they are not fitted (state invalid_input)", cfg->t1map, (long long)nbad);
            size_t l = strlen(j->t1_how);
            snprintf(j->t1_how + l, sizeof j->t1_how - l, "; %lld voxels with T1 <= 0 or not finite", (long long)nbad);
          }
        }
      }
    } else if (cfg->n_vfa > 0) {
      double tv = pipe_now();
      st = pipe_t1_run(run, LUMEN_MODEL_VFA, (const char *const *)cfg->vfa, cfg->n_vfa, 1, &j->t10);
      snprintf(j->t1_how, sizeof j->t1_how, "computed from %d VFA inputs (nonlinear SPGR fit, %.2f s)", cfg->n_vfa, pipe_now() - tv);
    } else if (isfinite(cfg->t1_default_s)) {
      snprintf(j->t1_how, sizeof j->t1_how, "constant %g s (--t1)", cfg->t1_default_s);
    } else {
      st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "pre-contrast T1 missing for '%s': give --t1map FILE, --vfa FILE..., or --t1 SECONDS", cfg->dce);
    }
  }
  if (st == LUMEN_OK && cfg->b1 && j->signal) {
    st = read_map3(run, "B1 map", cfg->b1, cfg->dce, &j->b1);
    if (st == LUMEN_OK) {
      double med = mask_median(run, j->b1, NULL);
      if (med > 10) {
        for (int64_t v = 0; v < run->nvox; ++v) j->b1[v] *= 0.01f;
        pipe_warn(run, "unit correction: B1 map '%s' read as percent (median %.4g inside the mask > 10) and divided "
                        "by 100", cfg->b1, med);
      }
    }
  }
  return st;
}

/* j->list: the masked voxels in order. */
static lumen_status masked_list(pipe_run *run, dce_job *j) {
  /* in parts on the threads: each part's count, then each part's indices from its offset */
  enum { PARTS = 64 };
  int64_t start[PARTS + 1] = {0};
  const int64_t nvox = run->nvox;
  const int nth = lumen_ctx_threads(run->ctx) > 0 ? lumen_ctx_threads(run->ctx) : 1;
  (void)nth;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for schedule(static) num_threads(nth) if (nth > 1 && nvox >= (1 << 20))
#endif
  for (int q = 0; q < PARTS; ++q) {
    int64_t k = 0;
    for (int64_t v = nvox * q / PARTS; v < nvox * (q + 1) / PARTS; ++v) k += run->mask[v] != 0;
    start[q + 1] = k;
  }
  for (int q = 0; q < PARTS; ++q) start[q + 1] += start[q];
  j->list = malloc(sizeof(int64_t) * (size_t)(start[PARTS] + 1));
  if (!j->list)
    return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "stage A: out of memory for the list of %lld voxels",
                      (long long)start[PARTS]);
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for schedule(static) num_threads(nth) if (nth > 1 && nvox >= (1 << 20))
#endif
  for (int q = 0; q < PARTS; ++q) {
    int64_t k = start[q];
    for (int64_t v = nvox * q / PARTS; v < nvox * (q + 1) / PARTS; ++v)
      if (run->mask[v]) j->list[k++] = v;
  }
  j->nlist = start[PARTS];
  return LUMEN_OK;
}

/* Stage A: the baseline (given or detected from the mean curve), signal to concentration for the
   masked voxels, the mean tissue curve, and stage A's run-log entries. */
static lumen_status dce_stage_a(pipe_run *run, dce_job *j) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  lumen_pipe_summary *sum = run->sum;
  lumen_status st = LUMEN_OK;
  sum->masked = run->n_mask;
  sum->seconds_read = pipe_now() - j->t0;
  /* ---------------- stage A */
  double ta = pipe_now();
  j->sp.fa_rad = j->fa_deg * PI / 180.0;
  j->sp.tr = j->tr;
  j->sp.r1 = j->r1;
  j->sp.max_invalid_fraction = cfg->max_invalid_fraction;
  st = masked_list(run, j);
  if (st == LUMEN_OK) {
    if (cfg->baseline > 0) {
      if (cfg->baseline > j->nt - 1)
        st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "--baseline %d: the series has %lld frames", cfg->baseline, (long long)j->nt);
      j->sp.b1 = cfg->baseline;
      snprintf(j->base_how, sizeof j->base_how, "given");
    } else {
      /* mean signal over (about 20000) masked voxels: every step-th group of 16 list neighbours */
      int64_t step = run->n_mask > 20000 ? run->n_mask / 20000 : 1, used = 0;
      double *y = calloc((size_t)j->nt, sizeof(double));
      if (!y) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory");
      if (y) used = pipe_mean_signal_sample(lumen_image_const_data(j->dce), run->nvox, j->nt, j->list, j->nlist, step,
                                            lumen_ctx_threads(ctx), y);
      if (used < 0) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory");
      int64_t nb0 = j->nt / 10 < 2 ? 2 : j->nt / 10 > 5 ? 5 : j->nt / 10;
      int64_t a = y && used > 0 ? lumen_pipe_detect_arrival(y, j->nt, 0, nb0) : -1;
      free(y);
      if (st == LUMEN_OK && a < 1)
        st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                        "DCE series '%s': no bolus arrival found in the mean curve, so the baseline cannot be detected; give --baseline N",
                        cfg->dce);
      j->sp.b1 = a + 1;
      snprintf(j->base_how, sizeof j->base_how, "detected (bolus arrival after frame %lld of the mean signal)", (long long)a);
    }
    j->sp.b0 = cfg->baseline_start >= 0 ? cfg->baseline_start : (j->sp.b1 >= 3 ? 1 : 0);
    if (st == LUMEN_OK && j->sp.b0 >= j->sp.b1)
      st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "baseline frames [%lld, %lld) are empty", (long long)j->sp.b0, (long long)j->sp.b1);
  }
  /* stage B's reading of the series (its vessels' or ROI's curve), timed as stage B's */
  if (st == LUMEN_OK) {
    double tbs = pipe_now();
    pipe_stage_b_in in = {lumen_image_const_data(j->dce), run->nvox, j->nt, j->t_min, &j->sp, j->b1, NULL, cfg->dce, !j->signal};
    st = pipe_stage_b_signal(run, &in, &j->aif);
    j->seconds_b_signal = pipe_now() - tbs;
  }
  if (st == LUMEN_OK) {
    j->ninv = malloc(sizeof(int32_t) * (size_t)run->n_mask);
    j->bad = malloc((size_t)run->n_mask);
    if (!j->ninv || !j->bad)
      st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "stage A: out of memory for %lld curves of %lld frames", (long long)run->n_mask, (long long)j->nt);
  }
  if (st == LUMEN_OK) {
    int64_t used = 0, count[3] = {0, 0, 0};
    /* the curves overwrite the series (stage B has read it): no second array of the series' size */
    if (pipe_convert_in_place(lumen_image_data(j->dce), run->nvox, j->nt, j->list, j->nlist, j->t10,
                              isfinite(cfg->t1_default_s) ? cfg->t1_default_s : NAN, j->b1, &j->sp, !j->signal,
                              lumen_ctx_threads(ctx), lumen_ctx_cpu_simd(ctx), j->ninv, j->bad, j->tissue_mean,
                              &used, count) != 0)
      st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "stage A: out of memory for the mean tissue curve");
    j->curves = (pipe_curves){lumen_image_const_data(j->dce), run->nvox, j->nt, j->list, j->nlist};
    if (st == LUMEN_OK) {
      j->n_bad += count[0];
      j->n_flag += count[1];
      j->n_interp += count[2];
    }
    if (st == LUMEN_OK && used == 0)
      st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "stage A: no voxel of '%s' gives a usable concentration curve (check T1, flip angle, TR, baseline)", cfg->dce);
  }
  sum->seconds_a = pipe_now() - ta - j->seconds_b_signal;
  if (st == LUMEN_OK) {
    pipe_sb *b = &run->stages;
    /* `dce --vfa` has written the T1 stage before: members are separated by commas */
    pipe_sb_printf(b, "%s\n\t\t\"read\": {\"seconds\": %.4f, \"frames\": %lld, \"frame_times\": ", b->n ? "," : "",
                   sum->seconds_read, (long long)j->nt);
    pipe_sb_json_str(b, j->how_t);
    pipe_sb_printf(b, ", \"duration_min\": %.6g},\n\t\t\"A\": {\"name\": \"signal to concentration\", \"seconds\": %.4f, \"input_type\": ",
                   j->t_min[j->nt - 1], sum->seconds_a);
    pipe_sb_json_str(b, j->signal ? "signal" : "concentration");
    pipe_sb_printf(b, ", \"t1\": ");
    pipe_sb_json_str(b, j->t1_how);
    pipe_sb_printf(b, ", \"flip_angle_deg\": ");
    pipe_sb_json_num(b, j->fa_deg);
    pipe_sb_printf(b, ", \"flip_angle_source\": ");
    pipe_sb_json_str(b, j->fa_how);
    pipe_sb_printf(b, ", \"tr_s\": ");
    pipe_sb_json_num(b, j->tr);
    pipe_sb_printf(b, ", \"tr_source\": ");
    pipe_sb_json_str(b, j->tr_how);
    pipe_sb_printf(b, ", \"relaxivity\": %g, \"relaxivity_source\": ", j->r1);
    pipe_sb_json_str(b, j->r1_how);
    pipe_sb_printf(b, ", \"hematocrit\": %g, \"hematocrit_source\": ", cfg->hematocrit);
    pipe_sb_json_str(b, cfg->hematocrit_source[0] ? cfg->hematocrit_source : "default");
    pipe_sb_printf(b, ", \"blood_t1_s\": %g, \"blood_t1_source\": ", cfg->blood_t1_s);
    pipe_sb_json_str(b, cfg->blood_t1_source[0] ? cfg->blood_t1_source : "default");
    pipe_sb_printf(b, ", \"b1_map\": %s, \"baseline_frames\": [%lld, %lld], \"baseline\": ",
                   j->b1 ? "true" : "false", (long long)j->sp.b0, (long long)j->sp.b1);
    pipe_sb_json_str(b, j->base_how);
    pipe_sb_printf(b, ", \"voxels\": %lld, \"voxels_unusable\": %lld, \"voxels_with_interpolated_samples\": %lld, "
                      "\"flagged_samples\": %lld, \"max_invalid_fraction\": %g, \"logarithm\": \"%s\"}",
                   (long long)j->nlist, (long long)j->n_bad, (long long)j->n_interp, (long long)j->n_flag, cfg->max_invalid_fraction,
                   pipe_conc_name(pipe_conc_level(lumen_ctx_cpu_simd(ctx))));
    pipe_sb_printf(&run->text,
                   "read: %lld frames, times from %s, %.3f s\n"
                   "stage A (%s): T1 %s; FA %g deg (%s), TR %g s (%s), r1 %g /mM/s (%s), baseline frames [%lld, %lld) %s; %lld voxels, "
                   "%lld unusable, %lld with interpolated samples (%lld flagged samples); %.3f s\n",
                   (long long)j->nt, j->how_t, sum->seconds_read, j->signal ? "signal to concentration" : "skipped: concentration input",
                   j->t1_how, j->fa_deg, j->fa_how, j->tr, j->tr_how, j->r1, j->r1_how, (long long)j->sp.b0, (long long)j->sp.b1, j->base_how, (long long)j->nlist, (long long)j->n_bad,
                   (long long)j->n_interp, (long long)j->n_flag, sum->seconds_a);
  }
  return st;
}

/* Stage B: the AIF, and its run-log entries. */
static lumen_status dce_stage_b(pipe_run *run, dce_job *j) {
  const lumen_pipe_config *cfg = run->cfg;
  lumen_pipe_summary *sum = run->sum;
  lumen_status st = LUMEN_OK;
  /* ---------------- stage B */
  double tb = pipe_now();
  if (st == LUMEN_OK) {
    pipe_stage_b_in in = {NULL, run->nvox, j->nt, j->t_min, &j->sp, j->b1, j->tissue_mean, cfg->dce, !j->signal};
    st = pipe_stage_b(run, &in, &j->aif);
  }
  sum->seconds_b = pipe_now() - tb + j->seconds_b_signal;
  if (st == LUMEN_OK) {
    snprintf(sum->aif_method, sizeof sum->aif_method, "%s", j->aif.method);
    sum->aif_fallback = j->aif.fallback;
    double pk = 0;
    for (int64_t i = 0; i < j->nt; ++i) pk = fmax(pk, j->aif.cp[i]);
    pipe_sb *b = &run->stages;
    pipe_sb_printf(b, ",\n\t\t\"B\": {\"name\": \"arterial input function\", \"seconds\": %.4f, \"method\": ", sum->seconds_b);
    pipe_sb_json_str(b, j->aif.method);
    pipe_sb_printf(b, ", \"detail\": ");
    pipe_sb_json_str(b, j->aif.detail);
    char aif_file[300];
    snprintf(aif_file, sizeof aif_file, "%s_aif.tsv", run->prefix);
    pipe_sb_printf(b, ", \"bolus_arrival_min\": %.6g, \"arrival_frame\": %lld, \"voxels\": %lld, \"peak_plasma_mM\": %.6g, \"file\": ",
                   j->aif.delay_min, (long long)j->aif.arrival, (long long)j->aif.n_voxels, pk);
    pipe_sb_json_str(b, aif_file); /* the prefix is the user's: escaped (issue 15) */
    pipe_sb_printf(b, "}");
    pipe_sb_printf(&run->text, "stage B (AIF %s): %s; plasma peak %.4g mM; %.3f s\n", j->aif.method, j->aif.detail, pk, sum->seconds_b);
    if (!(pk >= PIPE_AIF_PEAK_MIN_MM)) {
      char why[400];
      snprintf(why, sizeof why, "the AIF (%s) peaks at %.3g mM plasma, far below a contrast dose's 2-20 mM: every "
               "Ktrans scales with 1/AIF", j->aif.method, pk);
      pipe_mark_unreliable(run, why);
    }
  }
  return st;
}

/* Stage A's maps, written only after stage B has read its inputs. */
static lumen_status dce_stage_a_maps(pipe_run *run, dce_job *j) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  lumen_status st = LUMEN_OK;
  /* Stage A's maps are written only now, after stage B has read its inputs (AIF file, ROI), so
     that a bad input leaves nothing under the final names (docs/RELIABILITY.md). */
  if (st == LUMEN_OK) {
    double tw = pipe_now();
    j->ninv_map = malloc(sizeof(float) * (size_t)run->nvox);
    if (!j->ninv_map) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory");
    else {
      for (int64_t v = 0; v < run->nvox; ++v) j->ninv_map[v] = NAN;
      for (int64_t k = 0; k < j->nlist; ++k) j->ninv_map[j->list[k]] = (float)j->ninv[k];
      char name[300];
      snprintf(name, sizeof name, "%s_param-ninvalid.nii.gz", run->prefix);
      st = pipe_write_map(run, name, j->ninv_map, "ninvalid", "samples", "", "",
                          "flagged (out-of-range or non-finite) concentration samples per voxel", 0);
    }
    if (st == LUMEN_OK && cfg->save_conc) {
      int64_t dims[4] = {run->nx, run->ny, run->nz, j->nt};
      lumen_image *ci = NULL;
      st = lumen_image_create(ctx, 4, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &ci);
      if (st == LUMEN_OK) {
        float *cd = lumen_image_data(ci);
        const float *c = j->curves.base; /* frame-major, as the image; the listed voxels are the masked ones */
        for (int64_t i = 0; i < j->nt; ++i)
          for (int64_t v = 0; v < run->nvox; ++v) cd[i * run->nvox + v] = run->mask[v] ? c[i * run->nvox + v] : NAN;
        lumen_image_set_affine(ctx, ci, run->affine);
        double spc[4] = {run->spacing[0], run->spacing[1], run->spacing[2], j->nt > 1 ? (j->t_min[1] - j->t_min[0]) * 60 : 1};
        lumen_image_set_spacing(ctx, ci, spc, 4);
        char name[300], path[LUMEN_PIPE_PATH_MAX];
        snprintf(name, sizeof name, "%s_desc-conc_dce.nii.gz", run->prefix);
        pipe_join(path, sizeof path, run->out, name);
        lumen_nifti_write_opts wo;
        memset(&wo, 0, sizeof wo);
        wo.overwrite = cfg->overwrite;
        wo.intent_name = "conc_mM";
        wo.compress_level = cfg->compress_level;
        st = pipe_before_write(run);
        if (st == LUMEN_OK) st = lumen_nifti_write(ctx, path, ci, &wo);
        if (st == LUMEN_OK) pipe_record_output(run, name);
      }
      lumen_image_free(ci);
    }
    j->write_s += pipe_now() - tw;
  }
  return st;
}

/* Per-voxel model selection by AIC over the fitted models: the best-model maps and counts. */
static lumen_status dce_select_models(pipe_run *run, dce_job *j) {
  const int want_sel = run->cfg->select && !strcmp(run->cfg->select, "aic");
  lumen_ctx *ctx = run->ctx;
  lumen_pipe_summary *sum = run->sum;
  lumen_status st = LUMEN_OK;
  int nsel = 0;
  for (int m = 0; m < j->nmodels; ++m) nsel += j->mo[m].aic != NULL;
  if (st == LUMEN_OK && want_sel && nsel >= 2) {
    double tw = pipe_now();
    float *best = malloc(sizeof(float) * (size_t)run->nvox), *bk = malloc(sizeof(float) * (size_t)run->nvox);
    float *bve = malloc(sizeof(float) * (size_t)run->nvox), *bvp = malloc(sizeof(float) * (size_t)run->nvox);
    int64_t counts[LUMEN_MODEL_COUNT] = {0};
    char bu[256] = ""; /* the backends of the models chosen from, "tofts:cpu,etofts:cpu" */
    for (int m = 0, n = 0; m < sum->n_models; ++m) {
      const lumen_pipe_model_summary *ms = &sum->models[m];
      if (!(lumen_model_flags(ms->model) & LUMEN_MF_AIF)) continue; /* the T1 fit of --vfa */
      size_t l = strlen(bu);
      snprintf(bu + l, sizeof bu - l, "%s%s:%s", n++ ? "," : "", lumen_model_name(ms->model), ms->backend_used);
    }
    if (!best || !bk || !bve || !bvp) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory");
    for (int64_t v = 0; st == LUMEN_OK && v < run->nvox; ++v) {
      int bm = -1;
      for (int m = 0; m < j->nmodels; ++m)
        if (j->mo[m].aic && isfinite(j->mo[m].aic[v]) && (bm < 0 || j->mo[m].aic[v] < j->mo[bm].aic[v])) bm = m;
      best[v] = bm >= 0 ? (float)j->models[bm] : NAN;
      bk[v] = bm >= 0 ? j->mo[bm].ktrans[v] : NAN;
      bve[v] = bm >= 0 ? j->mo[bm].ve[v] : NAN;
      bvp[v] = bm >= 0 ? (isfinite(j->mo[bm].vp[v]) ? j->mo[bm].vp[v] : 0.0f) : NAN;
      if (bm >= 0) counts[j->models[bm]]++;
    }
    char name[300];
    if (st == LUMEN_OK) {
      map_name(name, sizeof name, run->prefix, "best", "model");
      st = pipe_write_map(run, name, best, "model", "", "best", bu,
                          "model chosen by AIC: 0 tofts 1 etofts 2 patlak 3 2cum 4 2cxm 5 fxr", 1);
    }
    if (st == LUMEN_OK) {
      map_name(name, sizeof name, run->prefix, "best", "Ktrans");
      st = pipe_write_map(run, name, bk, "Ktrans", "1/min", "best", bu, "Ktrans of the model chosen by AIC", 1);
    }
    if (st == LUMEN_OK) {
      map_name(name, sizeof name, run->prefix, "best", "ve");
      st = pipe_write_map(run, name, bve, "ve", "1", "best", bu, "ve of the model chosen by AIC (NaN: no ve)", 1);
    }
    if (st == LUMEN_OK) {
      map_name(name, sizeof name, run->prefix, "best", "vp");
      st = pipe_write_map(run, name, bvp, "vp", "1", "best", bu, "vp of the model chosen by AIC (0 for Tofts)", 1);
    }
    if (st == LUMEN_OK) {
      pipe_sb_printf(&run->stages, ", \"selection\": {\"criterion\": \"aic\", \"voxels_per_model\": {");
      pipe_sb_printf(&run->text, "model selection by AIC:");
      int first = 1;
      for (int m = 0; m < j->nmodels; ++m) {
        if (!j->mo[m].aic) continue;
        pipe_sb_printf(&run->stages, "%s", first ? "" : ", ");
        pipe_sb_json_str(&run->stages, lumen_model_name(j->models[m]));
        pipe_sb_printf(&run->stages, ": %lld", (long long)counts[j->models[m]]);
        pipe_sb_printf(&run->text, " %s %lld", lumen_model_name(j->models[m]), (long long)counts[j->models[m]]);
        first = 0;
      }
      pipe_sb_printf(&run->stages, "}}");
      pipe_sb_printf(&run->text, " voxels\n");
    }
    free(best); free(bk); free(bve); free(bvp);
    j->write_s += pipe_now() - tw;
  }
  return st;
}

/* Stage D: every model's fit and maps, the selection, stage D's timings. */
static lumen_status dce_stage_d(pipe_run *run, dce_job *j) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  lumen_pipe_summary *sum = run->sum;
  lumen_status st = LUMEN_OK;
  double td = pipe_now();
  if (st == LUMEN_OK) {
    pipe_sb_printf(&run->stages, ",\n\t\t\"D\": {\"name\": \"model fitting\", \"models\": {");
    int want_sel = cfg->select && !strcmp(cfg->select, "aic");
    for (int m = 0; m < j->nmodels && st == LUMEN_OK; ++m) {
      if (want_sel && j->models[m] != LUMEN_MODEL_AUC) {
        j->mo[m].aic = malloc(sizeof(float) * (size_t)run->nvox);
        j->mo[m].ktrans = malloc(sizeof(float) * (size_t)run->nvox);
        j->mo[m].ve = malloc(sizeof(float) * (size_t)run->nvox);
        j->mo[m].vp = malloc(sizeof(float) * (size_t)run->nvox);
        if (!j->mo[m].aic || !j->mo[m].ktrans || !j->mo[m].ve || !j->mo[m].vp) { st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory"); break; }
        for (int64_t v = 0; v < run->nvox; ++v) j->mo[m].ktrans[v] = j->mo[m].ve[v] = j->mo[m].vp[v] = NAN;
      }
      j->mo[m].json_first = m == 0;
      st = fit_model(run, j->models[m], &j->curves, j->t_min, j->aif.cp, j->t10,
                     isfinite(cfg->t1_default_s) ? cfg->t1_default_s : 1.0, j->b1, j->r1, &sum->models[sum->n_models], &j->mo[m],
                     &j->write_s);
      if (st == LUMEN_OK) sum->n_models++;
    }
    if (st == LUMEN_OK) pipe_sb_printf(&run->stages, "}");
    if (st == LUMEN_OK) st = dce_select_models(run, j);
    sum->seconds_d = pipe_now() - td;
    sum->seconds_write = j->write_s;
    if (st == LUMEN_OK) {
      pipe_sb_printf(&run->stages, ", \"seconds\": %.4f, \"seconds_fitting\": %.4f, \"seconds_writing_maps\": %.4f}",
                     sum->seconds_d, sum->seconds_d - j->write_s, j->write_s);
      pipe_sb_printf(&run->text, "stage D: %.3f s (fitting %.3f s, writing maps %.3f s)\n", sum->seconds_d,
                     sum->seconds_d - j->write_s, j->write_s);
    }
  }
  return st;
}

/* The report as a step of the run (its own progress bar). */
static lumen_status report_step(pipe_run *run, dce_job *j) {
  (void)j;
  return pipe_write_report(run);
}

/* One stage of the run under its own progress bar: 0 % before, 100 % after, and whatever the
   stage reports inside (a big file's read or write) within that bar. */
static lumen_status pipe_stage_step(pipe_run *run, const char *label, lumen_status (*step)(pipe_run *, dce_job *),
                                    dce_job *j) {
  lumen_progress_scope_push(run->ctx, 0, 1, label);
  lumen_status st = lumen_progress(run->ctx, 0.0, label);
  if (st == LUMEN_OK) st = step(run, j);
  if (st == LUMEN_OK) st = lumen_progress(run->ctx, 1.0, label);
  lumen_progress_scope_pop(run->ctx);
  return st;
}

lumen_status lumen_pipeline_dce(lumen_ctx *ctx, const lumen_pipe_config *cfg, lumen_pipe_summary *sum) {
  LUMEN_REQUIRE_NOT_NULL(ctx, cfg);
  lumen_pipe_summary dummy;
  sum = pipe_summary_start(sum, &dummy);
  if (!cfg->dce) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "no DCE series: give --dce FILE");
  /* The run state is about 1.5 MB (output and input path tables) and the job holds every model's
     maps: on the heap, so that a small thread stack or an exhausted address space gives an error,
     not a crash (docs/RELIABILITY.md). */
  dce_job *j = calloc(1, sizeof *j);
  if (!j) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of host memory for the run state");
  lumen_status st = lumen_pipe_config_check(ctx, cfg, "dce");
  if (st == LUMEN_OK) st = pipe_parse_models(ctx, cfg->models, j->models, &j->nmodels);
  pipe_run *run = st == LUMEN_OK ? malloc(sizeof *run) : NULL;
  if (st == LUMEN_OK && !run) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of host memory for the run state");
  if (st != LUMEN_OK) {
    free(j);
    return st;
  }
  j->signal = cfg->input_type == LUMEN_PIPE_INPUT_SIGNAL;
  j->fa_deg = NAN;
  j->tr = NAN;
  j->r1 = cfg->relaxivity;
  snprintf(j->t1_how, sizeof j->t1_how, "none (concentration input)");
  st = pipe_setup_run(ctx, cfg, run, "dce", cfg->dce, sum);
  if (st == LUMEN_OK && !cfg->fit_executor) st = pipe_checkpoint_check(run, j->models, j->nmodels);
  j->t0 = pipe_now();
  if (st == LUMEN_OK) st = dce_read_inputs(run, j);
  if (st == LUMEN_OK) st = dce_read_t1_b1(run, j);
  sum->masked = run->n_mask;
  sum->seconds_read = pipe_now() - j->t0;
  if (st == LUMEN_OK) st = pipe_stage_step(run, "A signal to concentration", dce_stage_a, j);
  if (st == LUMEN_OK) st = pipe_stage_step(run, "B AIF", dce_stage_b, j);
  if (st == LUMEN_OK) st = pipe_stage_step(run, "A maps", dce_stage_a_maps, j);
  if (st == LUMEN_OK) st = dce_stage_d(run, j);
  if (st == LUMEN_OK) st = pipe_stage_step(run, "report", report_step, j);
  /* every output is written: the checkpoints go before the run log, so that a run log never
     stands beside a checkpoint (a kill in between leaves outputs without a run log: --resume
     then fits again, from scratch) */
  if (st == LUMEN_OK) pipe_checkpoint_remove(run, j->models, j->nmodels);
  if (st == LUMEN_OK) st = pipe_write_runlog(run);
  sum->n_outputs = run->n_outputs;
  dce_job_free(j);
  free(j);
  pipe_run_free(run);
  free(run);
  return st;
}
