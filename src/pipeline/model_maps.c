/* The maps of one fitted model (part of the fit stage of `lumen dce`): every parameter with its
   confidence bounds, the derived values, sse, r2, AIC, delay and state, filled from the fit's
   results and written together (pipe_write_map_list); the maps that the selection by AIC needs
   are kept (model_out). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/dce_stages.h"
#include "pipeline/pipe_judge.h"
#include "pipeline/pipe_maps.h"
#include "pipeline/pipe_run.h"

void dce_map_name(char *buf, size_t size, const char *prefix, const char *model, const char *param) {
  snprintf(buf, size, "%s_model-%s_param-%s.nii.gz", prefix, model, param);
}

/* What a map of a model holds at each fitted voxel (dce_write_model_maps). */
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

/* One map of a model's list (add_model_map), built with designated initializers. */
typedef struct model_map_def {
  model_map_kind kind;
  int index;               /* the parameter or derived value */
  const char *param, *unit, *description;
  int figure;
} model_map_def;

/* A map of the list: the kind and index in mm, the name, intent and sidecar fields in maps[mm->n]. */
static void add_model_map(model_maps *mm, pipe_map_out *maps, const pipe_run *run, const char *bu, const model_map_def *d) {
  const char *mname = lumen_model_name(mm->model);
  pipe_map_out *m = &maps[mm->n];
  mm->kind[mm->n] = d->kind;
  mm->index[mm->n++] = d->index;
  dce_map_name(m->name, sizeof m->name, run->prefix, mname, d->param);
  snprintf(m->param, sizeof m->param, "%s", d->param);
  snprintf(m->description, sizeof m->description, "%s", d->description);
  m->data = NULL;
  m->unit = d->unit;
  m->model = mname;
  m->backend_used = bu;
  m->figure = d->figure;
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
    add_model_map(mm, maps, run, bu, &(model_map_def){.kind = MAP_PARAM, .index = p, .param = pn, .unit = unit,
                                                      .figure = 1, .description = desc});
    if (!mm->res->ci_lo) continue;
    snprintf(pname, sizeof pname, "%s_cilo", pn);
    snprintf(desc, sizeof desc, "lumen %s %s lower 95%% confidence bound", mname, pn);
    add_model_map(mm, maps, run, bu, &(model_map_def){.kind = MAP_CI_LO, .index = p, .param = pname, .unit = unit,
                                                      .description = desc});
    snprintf(pname, sizeof pname, "%s_cihi", pn);
    snprintf(desc, sizeof desc, "lumen %s %s upper 95%% confidence bound", mname, pn);
    add_model_map(mm, maps, run, bu, &(model_map_def){.kind = MAP_CI_HI, .index = p, .param = pname, .unit = unit,
                                                      .description = desc});
  }
  for (int d = 0; d < mm->nd; ++d) {
    const char *dn = lumen_fit_derived_name(model, d);
    snprintf(desc, sizeof desc, "lumen %s %s (derived)", mname, dn);
    add_model_map(mm, maps, run, bu, &(model_map_def){.kind = MAP_DERIVED, .index = d, .param = dn,
                                                      .unit = lumen_fit_derived_unit(model, d), .figure = 1,
                                                      .description = desc});
  }
  if (mm->np > 0) {
    add_model_map(mm, maps, run, bu, &(model_map_def){.kind = MAP_SSE, .param = "sse", .unit = "mM^2",
                                                      .description = "sum of squared residuals"});
    add_model_map(mm, maps, run, bu, &(model_map_def){.kind = MAP_R2, .param = "r2", .unit = "", .figure = 1,
                                                      .description = "coefficient of determination"});
    add_model_map(mm, maps, run, bu, &(model_map_def){.kind = MAP_AIC, .param = "aic", .unit = "",
                                                      .description = "AIC = n ln(sse/n) + 2k"});
    if (mm->res->delay) add_model_map(mm, maps, run, bu, &(model_map_def){.kind = MAP_DELAY, .param = "delay",
                                                                          .unit = "s", .figure = 1,
                                                                          .description = "fitted arterial delay"});
  }
  char legend[256];
  pipe_state_legend(legend, sizeof legend);
  add_model_map(mm, maps, run, bu, &(model_map_def){.kind = MAP_STATE, .param = "state", .unit = "", .figure = 1,
                                                    .description = legend});
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
lumen_status dce_write_model_maps(pipe_run *run, const dce_fit_in *in, const lumen_fit_results *resp, model_out *mo,
                                  float *map) {
  const lumen_model model = in->model;
  const int64_t *list = in->curves->list, nlist = in->curves->nlist, nt = in->curves->nt;
  model_maps *mm = calloc(1, sizeof *mm);
  pipe_map_out *maps = calloc(MODEL_MAPS_MAX, sizeof *maps);
  lumen_status st = LUMEN_OK;
  if (!mm || !maps) {
    st = lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "stage D (%s): out of memory for the map list",
                    lumen_model_name(model));
  } else {
    const int np = lumen_model_param_count(model);
    *mm = (model_maps){.model = model, .res = resp, .list = list, .nlist = nlist, .nt = nt, .nvox = run->nvox,
                       .np = np, .nd = lumen_fit_derived_count(model),
                       .npar_aic = np + (run->cfg->fit_delay ? 1 : 0), .mo = mo};
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
    const pipe_map_fill f = {.fill = fill_model_map, .keep = keep_model_map, .user = mm};
    st = pipe_write_map_list(run, maps, mm->n, map, &f);
    free(vstate);
  }
  free(maps);
  free(mm);
  return st;
}
