/* Stage "fit" of `lumen dce` (stage D of the run log): every model of --models fitted on the
   converted curves (fit_model.c) and its maps written before the next model is fitted
   (model_maps.c: one model's results in memory at a time), then the selection by AIC
   (model_select.c); the run log's stage D and its timings. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/dce_stages.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_strbuf.h"
#include "pipeline/pipe_util.h"

/* fit (dce_stages.h): every model's fit and maps, the selection, stage D's timings. */
lumen_status dce_stage_fit(pipe_run *run, dce_job *j) {
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
      const dce_fit_in in = {.model = j->models[m], .curves = &j->curves, .t_min = j->t_min, .cp = j->aif.cp,
                             .t10 = j->t10, .t10_const = isfinite(cfg->t1_default_s) ? cfg->t1_default_s : 1.0,
                             .b1 = j->b1, .r1 = j->r1};
      st = dce_fit_model(run, &in, &sum->models[sum->n_models], &j->mo[m], &j->write_s);
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
