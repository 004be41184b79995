/* lumen t1 (VFA nonlinear / DESPOT1 / two-angle, inversion recovery, saturation recovery), and
   the T1 computation `lumen dce --vfa` uses. Fitting goes through lumen_fit_* with the same
   backend selection as DCE fitting. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/pipe_inputs.h"
#include "pipeline/pipe_judge.h"
#include "pipeline/pipe_maps.h"
#include "pipeline/pipe_options.h"
#include "pipeline/pipe_report.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_strbuf.h"
#include "pipeline/pipe_t1.h"
#include "pipeline/pipe_util.h"
#include "models/model.h"

#define PI 3.14159265358979323846

/* The state of one T1 fit between its steps. */
typedef struct t1_job {
  lumen_model method;
  const char *mname;
  const char *const *files;
  int nfiles;
  lumen_image *ims[LUMEN_PIPE_MAX_FILES];
  int64_t frames_per[LUMEN_PIPE_MAX_FILES];
  double xs[64];           /* the x of each volume: flip angle (rad), TI or recovery time (s) */
  int n;                   /* volumes */
  double tr;
  int vfa;
  const char *given;       /* the option that gives the x values */
  int ngiven;
  const double *gv;
  float *b1;
  int64_t nl, *list;       /* fitted voxels */
  float *data, *consts;
  lumen_fit_options o;
  lumen_fit_plan *plan;
  lumen_fit_results res;
  int np, nd;
  double tf;               /* fit seconds */
  float *t1, *map;
} t1_job;

static void t1_job_free(t1_job *job) {
  for (int f = 0; f < job->nfiles; ++f) lumen_image_free(job->ims[f]);
  free(job->b1); free(job->t1); free(job->map); free(job->list); free(job->data); free(job->consts);
  free(job->res.params); free(job->res.state); free(job->res.r2); free(job->res.chi2); free(job->res.derived);
  lumen_fit_plan_destroy(job->plan);
}

/* The input volumes (on one grid), their x values (options or sidecars, checked for plausible
   units), TR, and the mask. */
static lumen_status t1_read_inputs(pipe_run *run, t1_job *job) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  lumen_status st = LUMEN_OK;
  int tr_from = 0;  /* the input whose header TR is job->tr */
  for (int f = 0; f < job->nfiles && st == LUMEN_OK; ++f) {
    lumen_nifti_info info;
    char role[48];
    snprintf(role, sizeof role, "T1 input %d", f + 1);
    lumen_acquisition acq;
    int found = 0;
    const int dicom = lumen_dicom_is_series_input(job->files[f]);  /* FA and TR from its headers */
    const char *where = dicom ? "DICOM headers" : "sidecar";
    if (dicom) st = pipe_read_dicom_series(run, role, job->files[f], cfg->series, &job->ims[f], &info, &acq);
    else st = pipe_read_input(run, role, job->files[f], &job->ims[f], &info);
    if (st != LUMEN_OK) break;
    if (!dicom) st = lumen_sidecar_read_for(ctx, job->files[f], &acq, NULL, &found);
    if (st != LUMEN_OK) break;
    if (run->nvox == 0) pipe_set_geometry(run, job->ims[f], &info);
    int64_t nv = lumen_image_dim(job->ims[f], 0) * lumen_image_dim(job->ims[f], 1) * lumen_image_dim(job->ims[f], 2);
    if (nv != run->nvox) {
      st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s '%s' is on another grid: %lldx%lldx%lld voxels, expected %lldx%lldx%lld",
                      role, job->files[f], (long long)lumen_image_dim(job->ims[f], 0), (long long)lumen_image_dim(job->ims[f], 1),
                      (long long)lumen_image_dim(job->ims[f], 2), (long long)run->nx, (long long)run->ny, (long long)run->nz);
      lumen_acquisition_clear(&acq);
      break;
    }
    if (st == LUMEN_OK) st = pipe_check_grid(run, role, job->files[f], job->ims[f], job->files[0]);
    if (st != LUMEN_OK) { lumen_acquisition_clear(&acq); break; }
    job->frames_per[f] = lumen_image_dim(job->ims[f], 3);
    if (!isfinite(cfg->tr_s) && isfinite(acq.repetition_time_s)) {
      /* every input's sidecar TR is checked and must equal the first one's */
      char sc[LUMEN_PIPE_PATH_MAX], src[LUMEN_PIPE_PATH_MAX + 64];
      if (dicom) snprintf(sc, sizeof sc, "%s", job->files[f]);
      else lumen_sidecar_path(ctx, job->files[f], sc, sizeof sc);
      snprintf(src, sizeof src, "%s '%s' %s", where, sc, acq.repetition_time_key ? acq.repetition_time_key : "RepetitionTime");
      st = pipe_check_tr(ctx, src, acq.repetition_time_s, job->vfa);
      if (st == LUMEN_OK && isfinite(job->tr) && job->vfa &&
          fabs(acq.repetition_time_s - job->tr) > 1e-6 * job->tr)  /* one fit, one TR: never the first's for all */
        st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                        "VFA inputs with different TR: %s is %g s, but input %d ('%s') has %g s; the signal equation "
                        "of one fit has one TR: give the inputs of one protocol (or --tr SECONDS if the headers are "
                        "wrong)", src, acq.repetition_time_s, tr_from + 1, job->files[tr_from], job->tr);
      if (st != LUMEN_OK) { lumen_acquisition_clear(&acq); break; }
      if (!isfinite(job->tr)) job->tr = acq.repetition_time_s, tr_from = f;
    }
    for (int64_t j = 0; j < job->frames_per[f] && st == LUMEN_OK; ++j) {
      if (job->n >= 64) { st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "T1: more than 64 input volumes"); break; }
      double v = NAN;
      if (job->ngiven > 0) {
        if (job->n < job->ngiven) v = job->gv[job->n];
      } else if (job->frames_per[f] == 1) {
        v = job->vfa ? acq.flip_angle_deg : (lumen_model_flags(job->method) & LUMEN_MF_X_TI) ? acq.inversion_time_s : NAN;
        if (job->vfa && isfinite(v)) {
          char sc[LUMEN_PIPE_PATH_MAX], src[LUMEN_PIPE_PATH_MAX + 64];
          if (dicom) snprintf(sc, sizeof sc, "%s", job->files[f]);
          else lumen_sidecar_path(ctx, job->files[f], sc, sizeof sc);
          snprintf(src, sizeof src, "%s '%s' FlipAngle", where, sc);
          st = pipe_check_flip(ctx, src, v);
          if (st != LUMEN_OK) break;
        }
      }
      if (!isfinite(v)) {
        const char *what = job->vfa ? "flip angle" : (lumen_model_flags(job->method) & LUMEN_MF_X_TI) ? "inversion time" : "recovery time";
        const char *field = job->vfa ? "FlipAngle" : (lumen_model_flags(job->method) & LUMEN_MF_X_TI) ? "InversionTime" : NULL;
        char where_x[LUMEN_PIPE_PATH_MAX + 96] = "";
        if (job->frames_per[f] > 1)  /* one header value cannot give each volume of a 4-D input its own */
          snprintf(where_x, sizeof where_x, " (%lld values for the %lld volumes of this 4-D input)",
                   (long long)job->frames_per[f], (long long)job->frames_per[f]);
        else if (field && dicom)
          snprintf(where_x, sizeof where_x, " or %s (%s) in the DICOM headers of '%s'", field,
                   job->vfa ? "0018,1314" : "0018,0082", job->files[f]);
        else if (field) {
          char sc[LUMEN_PIPE_PATH_MAX];
          lumen_sidecar_path(ctx, job->files[f], sc, sizeof sc);
          snprintf(where_x, sizeof where_x, " or %s in '%s'", field, sc);
        }
        st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s missing for volume %d ('%s'): give %s LIST%s", what,
                        job->n + 1, job->files[f], job->given, where_x);
        break;
      }
      job->xs[job->n++] = job->vfa ? v * PI / 180.0 : v;
    }
    lumen_acquisition_clear(&acq);
  }
  if (st == LUMEN_OK && job->ngiven > 0 && job->ngiven != job->n)
    st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s has %d values, the inputs have %d volumes", job->given, job->ngiven, job->n);
  if (st == LUMEN_OK && job->vfa && !(job->tr > 0))
    st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "repetition time missing for the VFA inputs ('%s'): give --tr SECONDS or RepetitionTime in its sidecar", job->files[0]);
  if (st == LUMEN_OK && job->n < 2) st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "T1 (%s): %d volume(s), need at least 2", job->mname, job->n);
  if (st == LUMEN_OK && !run->mask) st = pipe_load_mask(run, job->files[0]);
  return st;
}

/* The B1 map (fraction, or percent: a unit correction and a warning). */
static lumen_status t1_read_b1(pipe_run *run, t1_job *job) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  lumen_status st = LUMEN_OK;
  if (st == LUMEN_OK && cfg->b1) {
    lumen_image *bi = NULL;
    lumen_nifti_info info;
    st = pipe_read_input(run, "B1 map", cfg->b1, &bi, &info);
    if (st == LUMEN_OK && lumen_image_count(bi) != run->nvox)
      st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "B1 map '%s' is on another grid (%lld voxels, expected %lld)", cfg->b1,
                      (long long)lumen_image_count(bi), (long long)run->nvox);
    if (st == LUMEN_OK) st = pipe_check_grid(run, "B1 map", cfg->b1, bi, job->files[0]);
    if (st == LUMEN_OK && (job->b1 = malloc(sizeof(float) * (size_t)run->nvox))) {
      memcpy(job->b1, lumen_image_const_data(bi), sizeof(float) * (size_t)run->nvox);
      double s = 0; int64_t c = 0;
      for (int64_t v = 0; v < run->nvox; ++v) if (run->mask[v] && isfinite(job->b1[v])) { s += job->b1[v]; ++c; }
      if (c && s / (double)c > 10) {
        for (int64_t v = 0; v < run->nvox; ++v) job->b1[v] *= 0.01f;
        pipe_warn(run, "unit correction: B1 map '%s' read as percent (mean %.4g inside the mask > 10) and divided by "
                       "100", cfg->b1, s / (double)c);
      }
    }
    lumen_image_free(bi);
  }
  return st;
}

/* The curves of the masked voxels, with their consts (B1). */
static lumen_status t1_curves(pipe_run *run, t1_job *job) {
  lumen_ctx *ctx = run->ctx;
  lumen_status st = LUMEN_OK;
  /* curves of the masked voxels */
  if (st == LUMEN_OK) {
    job->list = malloc(sizeof(int64_t) * (size_t)run->n_mask);
    job->data = malloc(sizeof(float) * (size_t)run->n_mask * (size_t)job->n);
    job->consts = malloc(sizeof(float) * (size_t)run->n_mask * LUMEN_FIT_NCONSTS);
    if (!job->list || !job->data || !job->consts) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "T1: out of memory");
  }
  if (st == LUMEN_OK) {
    for (int64_t v = 0; v < run->nvox; ++v) if (run->mask[v]) job->list[job->nl++] = v;
    int j = 0;
    for (int f = 0; f < job->nfiles; ++f)
      for (int64_t fr = 0; fr < job->frames_per[f]; ++fr, ++j) {
        const float *d = (const float *)lumen_image_const_data(job->ims[f]) + fr * run->nvox;
        for (int64_t k = 0; k < job->nl; ++k) job->data[k * job->n + j] = d[job->list[k]];
      }
    for (int64_t k = 0; k < job->nl; ++k) {
      job->consts[k * LUMEN_FIT_NCONSTS + LUMEN_FIT_CONST_R10] = 1.0f;
      job->consts[k * LUMEN_FIT_NCONSTS + LUMEN_FIT_CONST_B1] = job->b1 ? job->b1[job->list[k]] : 1.0f;
    }
  }
  return st;
}

/* The plan (x sorted for IR/SR) and the fit. */
static lumen_status t1_fit(pipe_run *run, t1_job *job) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  lumen_status st = LUMEN_OK;
  /* fit */
  pipe_fit_options_t1(cfg, job->method, job->tr, &job->o); /* as lumen_pipe_config_check tried them */
  /* sort by x: IR/SR grids must increase, and a VFA fit, its plots and its maps must not depend on
     the order the inputs were given in (a shell glob gives 15, 24, 3, 35, 6, 9); stable on ties */
  if (st == LUMEN_OK) {
    for (int a = 1; a < job->n; ++a)
      for (int b = a; b > 0 && job->xs[b - 1] > job->xs[b]; --b) {
        double tx = job->xs[b]; job->xs[b] = job->xs[b - 1]; job->xs[b - 1] = tx;
        for (int64_t k = 0; k < job->nl; ++k) { float tmp = job->data[k * job->n + b]; job->data[k * job->n + b] = job->data[k * job->n + b - 1]; job->data[k * job->n + b - 1] = tmp; }
      }
  }
  if (st == LUMEN_OK) {
    st = lumen_fit_plan_create(ctx, &job->o, job->n, job->xs, NULL, &job->plan);
    if (st != LUMEN_OK) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", lumen_ctx_last_error(ctx));
      st = lumen_fail(ctx, st, "T1 (%s): %s", job->mname, msg);
    }
  }
  if (st == LUMEN_OK) {
    job->res.params = malloc(sizeof(double) * (size_t)job->nl * (size_t)job->np);
    job->res.state = malloc(sizeof(int32_t) * (size_t)job->nl);
    job->res.r2 = malloc(sizeof(double) * (size_t)job->nl);
    job->res.chi2 = malloc(sizeof(double) * (size_t)job->nl);
    job->res.derived = malloc(sizeof(double) * (size_t)job->nl * (size_t)(job->nd > 0 ? job->nd : 1));
    if (!job->res.params || !job->res.state || !job->res.r2 || !job->res.chi2 || !job->res.derived) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "T1: out of memory");
  }
  job->tf = pipe_now();
  if (st == LUMEN_OK) st = lumen_progress(ctx, 0.0, "T1 fit");
  if (st == LUMEN_OK) st = lumen_fit_execute(ctx, job->plan, job->nl, job->data, job->consts, &job->res);
  if (st == LUMEN_OK) st = lumen_progress(ctx, 1.0, "T1 fit");
  job->tf = pipe_now() - job->tf;
  return st;
}

/* The run log, text and summary entries, warnings, the fitted-curve figure; the T1 values. */
static lumen_status t1_record(pipe_run *run, t1_job *job) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  lumen_status st = LUMEN_OK;
  if (st == LUMEN_OK) {
    job->t1 = malloc(sizeof(float) * (size_t)run->nvox);
    job->map = malloc(sizeof(float) * (size_t)run->nvox);
    if (!job->t1 || !job->map) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "T1: out of memory");
  }
  if (st == LUMEN_OK) {
    int64_t conv = job->res.state_counts[LUMEN_FIT_CONVERGED], atb = job->res.state_counts[LUMEN_FIT_AT_BOUND];
    int64_t failed = job->nl - conv - atb;
    char bound_text[512];
    double fps = job->res.seconds > 0 ? (double)job->nl / job->res.seconds : 0;
    pipe_sb *b = &run->stages;
    pipe_sb_printf(b, "%s\n\t\t\"T1\": {\"method\": ", run->stages.n ? "," : "");
    pipe_sb_json_str(b, job->mname);
    pipe_sb_printf(b, ", \"volumes\": %d, \"x\": [", job->n);
    for (int j = 0; j < job->n; ++j) pipe_sb_printf(b, "%s%.6g", j ? ", " : "", job->vfa ? job->xs[j] * 180 / PI : job->xs[j]);
    pipe_sb_printf(b, "], \"x_unit\": ");
    pipe_sb_json_str(b, job->vfa ? "deg" : "s");
    pipe_sb_printf(b, ", \"tr_s\": ");
    pipe_sb_json_num(b, job->tr);
    pipe_sb_printf(b, ", \"b1_map\": %s, \"backend_requested\": ", cfg->b1 ? "true" : "false");
    pipe_sb_json_str(b, job->res.backend_requested);
    pipe_sb_printf(b, ", \"backend_selected\": ");
    pipe_sb_json_str(b, job->res.backend_selected);
    pipe_sb_printf(b, ", \"backend_used\": ");
    pipe_sb_json_str(b, job->res.backend_used);
    pipe_sb_printf(b, ", \"backend_reason\": ");
    pipe_sb_json_str(b, job->res.reason);
    pipe_sb_printf(b, ", \"voxels_fitted\": %lld, \"voxels_converged\": %lld, \"voxels_at_bound\": %lld, "
                      "\"voxels_failed\": %lld, \"seconds\": %.4f, \"fits_per_s\": %.1f, \"state_counts\": {",
                   (long long)job->nl, (long long)conv, (long long)atb, (long long)failed, job->tf, fps);
    for (int s = 0; s < LUMEN_FIT_STATE_COUNT; ++s) {
      pipe_sb_printf(b, "%s", s ? ", " : "");
      pipe_sb_json_str(b, lumen_fit_state_name((lumen_fit_state)s));
      pipe_sb_printf(b, ": %lld", (long long)job->res.state_counts[s]);
    }
    pipe_sb_printf(b, "}");
    pipe_at_bound_json(b, bound_text, sizeof bound_text, job->method, &job->res);
    pipe_sb_printf(b, ", \"bounds_preset\": ");
    pipe_sb_json_str(b, lumen_fit_bounds_preset_name(job->o.bounds_preset));
    pipe_sb_printf(b, ", \"bounds\": {");
    pipe_bounds_json(b, job->plan, job->method);
    pipe_sb_printf(b, "}, \"tolerance\": %g, \"max_iterations\": %d}", job->o.tolerance, job->o.max_iterations);
    pipe_sb_printf(&run->text, "T1 (%s, %d volumes): %lld voxels, %lld converged, %lld at a bound%s, %lld failed; backend requested %s, selected %s, used %s (%s); %.3f s, %.0f fits/s\n",
                   job->mname, job->n, (long long)job->nl, (long long)conv, (long long)atb, bound_text, (long long)failed,
                   job->res.backend_requested, job->res.backend_selected, job->res.backend_used, job->res.reason, job->tf, fps);
    pipe_judge_model(run, &(pipe_judge_in){.what = "T1", .model = job->method, .res = &job->res, .fitted = job->nl,
                                           .at_bound = atb, .failed = failed, .bound_text = bound_text});
    if (strcmp(job->res.backend_used, job->res.backend_selected))
      pipe_warn(run, "T1: backend selected %s but used %s (%s)", job->res.backend_selected, job->res.backend_used, job->res.reason);
    pipe_curve_in ci = {job->method, job->plan, &job->res, job->list, job->nl, job->n, job->data, job->consts, job->xs, job->vfa ? 180 / PI : 1.0,
                        job->vfa ? "flip angle (deg)" : (lumen_model_flags(job->method) & LUMEN_MF_X_TI) ? "inversion time (s)" : "recovery time (s)",
                        "signal (a.u.)", &job->o, NULL};
    pipe_curve_figure(run, &ci);
    lumen_log(ctx, LUMEN_LOG_INFO, "T1 %s: backend requested %s, selected %s, used %s (%s)", job->mname, job->res.backend_requested,
              job->res.backend_selected, job->res.backend_used, job->res.reason);
    if (run->sum && run->sum->n_models < LUMEN_MODEL_COUNT) {
      lumen_pipe_model_summary *ms = &run->sum->models[run->sum->n_models++];
      ms->model = job->method;
      snprintf(ms->backend_requested, sizeof ms->backend_requested, "%s", job->res.backend_requested);
      snprintf(ms->backend_selected, sizeof ms->backend_selected, "%s", job->res.backend_selected);
      snprintf(ms->backend_used, sizeof ms->backend_used, "%s", job->res.backend_used);
      snprintf(ms->backend_reason, sizeof ms->backend_reason, "%s", job->res.reason);
      ms->fitted = job->nl; ms->converged = conv; ms->at_bound = atb; ms->failed = failed; ms->seconds = job->tf; ms->fits_per_s = fps;
    }
    for (int64_t v = 0; v < run->nvox; ++v) job->t1[v] = NAN;
    for (int64_t k = 0; k < job->nl; ++k) job->t1[job->list[k]] = (float)job->res.params[k * job->np + 0];
  }
  return st;
}

/* The T1 maps in the order they are written; the first is job->t1 (t1_record fills it). */
enum { T1_MAP_T1, T1_MAP_M0, T1_MAP_R1, T1_MAP_R2, T1_MAP_SSE, T1_MAP_STATE, T1_MAPS };

typedef struct t1_maps {
  const t1_job *job;
  int64_t nvox;
} t1_maps;

/* Map i (not T1_MAP_T1): NaN ("not fitted" for the state map), then each fitted voxel's value.
   Thread-safe for different maps. */
static void t1_fill_map(void *user, int i, float *map) {
  const t1_job *job = ((const t1_maps *)user)->job;
  const int64_t nvox = ((const t1_maps *)user)->nvox;
  const lumen_fit_results *r = &job->res;
  const int64_t *list = job->list, n = job->nl;
  const int np = job->np;
  for (int64_t v = 0; v < nvox; ++v) map[v] = i == T1_MAP_STATE ? (float)LUMEN_FIT_NOT_FITTED : NAN;
  switch (i) {
    case T1_MAP_M0: for (int64_t k = 0; k < n; ++k) map[list[k]] = (float)r->params[k * np + 1]; break;
    case T1_MAP_R1:
      for (int64_t k = 0; k < n; ++k) map[list[k]] = (float)(r->params[k * np + 0] > 0 ? 1.0 / r->params[k * np + 0] : NAN);
      break;
    case T1_MAP_R2: for (int64_t k = 0; k < n; ++k) map[list[k]] = (float)r->r2[k]; break;
    case T1_MAP_SSE: for (int64_t k = 0; k < n; ++k) map[list[k]] = (float)r->chi2[k]; break;
    case T1_MAP_STATE: for (int64_t k = 0; k < n; ++k) map[list[k]] = (float)r->state[k]; break;
    default: break;
  }
}

static void t1_map(pipe_map_out *m, const t1_job *job, const char *name, const char *param, const char *unit,
                   const char *desc) {
  snprintf(m->name, sizeof m->name, "%s", name);
  snprintf(m->param, sizeof m->param, "%s", param);
  snprintf(m->description, sizeof m->description, "%s", desc);
  m->data = NULL;
  m->unit = unit;
  m->model = job->mname;
  m->backend_used = job->res.backend_used;
  m->figure = strcmp(param, "sse") != 0;
}

/* The maps: T1, M0, R1, r2, sse, state, filled and written together (pipe_write_map_list; six
   maps of nvox floats at most, fewer where memory runs short). */
static lumen_status t1_write_maps(pipe_run *run, t1_job *job) {
  pipe_map_out *maps = calloc(T1_MAPS, sizeof *maps);
  if (!maps) return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "T1: out of memory for the map list");
  const char *p = run->prefix, *mn = job->mname;
  char name[300], legend[256];
  snprintf(name, sizeof name, "%s_T1map.nii.gz", p);
  t1_map(&maps[T1_MAP_T1], job, name, "T1", "s", "T1 in seconds");
  maps[T1_MAP_T1].data = job->t1;
  snprintf(name, sizeof name, "%s_M0map.nii.gz", p);
  t1_map(&maps[T1_MAP_M0], job, name, "M0", "a.u.", "equilibrium signal M0");
  snprintf(name, sizeof name, "%s_R1map.nii.gz", p);
  t1_map(&maps[T1_MAP_R1], job, name, "R1", "1/s", "R1 = 1/T1 in 1/s");
  snprintf(name, sizeof name, "%s_model-%s_param-r2.nii.gz", p, mn);
  t1_map(&maps[T1_MAP_R2], job, name, "r2", "", "coefficient of determination");
  snprintf(name, sizeof name, "%s_model-%s_param-sse.nii.gz", p, mn);
  t1_map(&maps[T1_MAP_SSE], job, name, "sse", "a.u.^2", "sum of squared residuals");
  snprintf(name, sizeof name, "%s_model-%s_param-state.nii.gz", p, mn);
  pipe_state_legend(legend, sizeof legend);
  t1_map(&maps[T1_MAP_STATE], job, name, "state", "", legend);
  t1_maps tm = {job, run->nvox};
  pipe_map_fill f = {t1_fill_map, NULL, &tm};
  lumen_status st = pipe_write_map_list(run, maps, T1_MAPS, job->map, &f);
  free(maps);
  return st;
}

lumen_status pipe_t1_run(pipe_run *run, lumen_model method, const char *const *files, int nfiles, int write_maps,
                         float **t1_out) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  const char *mname = lumen_model_name(method);
  if (t1_out) *t1_out = NULL;
  if (nfiles < 1) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "T1 (%s): no input files (--in FILE...)", mname);
  t1_job *job = calloc(1, sizeof *job);
  if (!job) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "T1: out of memory");
  job->method = method;
  job->mname = mname;
  job->files = files;
  job->nfiles = nfiles < LUMEN_PIPE_MAX_FILES ? nfiles : LUMEN_PIPE_MAX_FILES;
  job->tr = cfg->tr_s;
  job->vfa = (lumen_model_flags(method) & LUMEN_MF_X_FLIP) != 0;
  job->given = job->vfa ? "--flip-angles" : "--times";
  job->ngiven = job->vfa ? cfg->n_flip_angles : cfg->n_times;
  job->gv = job->vfa ? cfg->flip_angles_deg : cfg->times_s;
  job->np = lumen_model_param_count(method);
  job->nd = lumen_fit_derived_count(method);
  lumen_status st = t1_read_inputs(run, job);
  if (st == LUMEN_OK) st = t1_read_b1(run, job);
  if (st == LUMEN_OK) st = t1_curves(run, job);
  for (int f = 0; f < job->nfiles; ++f) { /* the volumes are in the curves now */
    lumen_image_free(job->ims[f]);
    job->ims[f] = NULL;
  }
  free(job->b1);
  job->b1 = NULL;
  if (st == LUMEN_OK) st = t1_fit(run, job);
  if (st == LUMEN_OK) st = t1_record(run, job);
  if (st == LUMEN_OK && write_maps) st = t1_write_maps(run, job);
  if (st == LUMEN_OK && t1_out) {
    *t1_out = job->t1;
    job->t1 = NULL;
  }
  t1_job_free(job);
  free(job);
  return st;
}

lumen_status lumen_pipeline_t1(lumen_ctx *ctx, const lumen_pipe_config *cfg, lumen_pipe_summary *sum) {
  LUMEN_REQUIRE_NOT_NULL(ctx, cfg);
  lumen_pipe_summary dummy;
  sum = pipe_summary_start(sum, &dummy);
  lumen_status st0 = lumen_pipe_config_check(ctx, cfg, "t1");
  if (st0 != LUMEN_OK) return st0;
  lumen_model method;
  st0 = pipe_parse_t1_method(ctx, cfg->method, &method);
  if (st0 != LUMEN_OK) return st0;
  if (cfg->n_vfa < 1) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "no input: give --in FILE...");
  /* The run state is about 1.5 MB (output and input path tables): on the heap, so that a small
     thread stack or an exhausted address space gives an error, not a crash (docs/RELIABILITY.md). */
  pipe_run *runp = malloc(sizeof *runp);
  if (!runp) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of host memory for the run state");
#define run (*runp)
  lumen_status st = pipe_setup_run(ctx, cfg, &run, "t1", cfg->vfa[0], sum);
  if (st == LUMEN_OK) {
    /* geometry from the first input's header, then the mask, then the fit */
    lumen_nifti_info info;
    if (!pipe_file_exists(cfg->vfa[0])) st = lumen_fail(ctx, LUMEN_ERR_IO, "T1 input 1 '%s': file not found", cfg->vfa[0]);
    else if (lumen_dicom_is_series_input(cfg->vfa[0])) info.ndim = 0;  /* geometry from the series, when read */
    else st = lumen_nifti_read_header(ctx, cfg->vfa[0], NULL, &info);
    if (st == LUMEN_OK && info.ndim > 0) {
      run.nx = info.dims[0]; run.ny = info.dims[1]; run.nz = info.ndim >= 3 ? info.dims[2] : 1;
      run.nvox = run.nx * run.ny * run.nz;
      memcpy(run.affine, info.affine, sizeof run.affine);
      for (int i = 0; i < 3; ++i) run.spacing[i] = fabs(info.pixdim[i + 1]) > 0 ? fabs(info.pixdim[i + 1]) : 1;
      run.sform_code = info.sform_code;
      run.qform_code = info.qform_code;
      sum->voxels = run.nvox;
      st = pipe_load_mask(&run, cfg->vfa[0]);
    }
  }
  double t0 = pipe_now();
  if (st == LUMEN_OK) st = pipe_t1_run(&run, method, (const char *const *)cfg->vfa, cfg->n_vfa, 1, NULL);
  sum->seconds_d = pipe_now() - t0;
  sum->masked = run.n_mask;
  if (st == LUMEN_OK) st = pipe_write_report(&run);
  if (st == LUMEN_OK) st = pipe_write_runlog(&run);
  sum->n_outputs = run.n_outputs;
  pipe_run_free(&run);
  free(runp);
#undef run
  return st;
}
