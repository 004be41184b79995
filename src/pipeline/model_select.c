/* --select aic: per voxel the fitted model of lowest AIC, and its Ktrans, ve and vp, as the
   model-best maps; the run log's "selection" member. Part of the fit stage (stage_fit.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "models/model.h"
#include "pipeline/dce_stages.h"
#include "pipeline/pipe_maps.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_strbuf.h"
#include "pipeline/pipe_util.h"

/* Per-voxel model selection by AIC over the fitted models: the best-model maps and counts. */
lumen_status dce_select_models(pipe_run *run, dce_job *j) {
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
    const struct {
      const char *param, *unit, *description;
      const float *data;
    } maps[] = {
        {"model", "", "model chosen by AIC: 0 tofts 1 etofts 2 patlak 3 2cum 4 2cxm 5 fxr", best},
        {"Ktrans", "1/min", "Ktrans of the model chosen by AIC", bk},
        {"ve", "1", "ve of the model chosen by AIC (NaN: no ve)", bve},
        {"vp", "1", "vp of the model chosen by AIC (0 for Tofts)", bvp},
    };
    for (size_t i = 0; st == LUMEN_OK && i < sizeof maps / sizeof maps[0]; ++i) {
      dce_map_name(name, sizeof name, run->prefix, "best", maps[i].param);
      st = pipe_write_map(run, &(pipe_map_desc){.name = name, .data = maps[i].data, .param = maps[i].param,
                                                .unit = maps[i].unit, .model = "best", .backend_used = bu,
                                                .figure = 1, .description = maps[i].description});
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
