/* lumen dce: the driver. The stages run in this order (dce_stages.h says where each lives;
   docs/PIPELINES.md "Reading the pipeline"):
     read     the series, its acquisition values and frame times, the mask, T1, B1
     convert  signal to concentration (run log "A")
     aif      the arterial input function (run log "B")
     maps     the convert stage's maps
     fit      every model's fit and maps, the selection by AIC (run log "D")
     report   report.html, then the run log, written last: it marks a complete run */
#include <math.h>
#include <stdlib.h>
#include "pipeline/checkpoint.h"
#include "pipeline/dce_stages.h"
#include "pipeline/pipe_aif.h"
#include "pipeline/pipe_options.h"
#include "pipeline/pipe_report.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_util.h"

/* One stage under its own progress bar: 0 % before, 100 % after, and whatever the stage reports
   inside (a big file's read or write) within that bar. The labels are what users see; they keep
   the run log's stage letters. */
static lumen_status with_progress(pipe_run *run, const char *label, lumen_status (*stage)(pipe_run *, dce_job *),
                                  dce_job *j) {
  lumen_progress_scope_push(run->ctx, 0, 1, label);
  lumen_status st = lumen_progress(run->ctx, 0.0, label);
  if (st == LUMEN_OK) st = stage(run, j);
  if (st == LUMEN_OK) st = lumen_progress(run->ctx, 1.0, label);
  lumen_progress_scope_pop(run->ctx);
  return st;
}

static lumen_status stage_report(pipe_run *run, dce_job *j) {
  (void)j;
  return pipe_write_report(run);
}

/* Every output is written: the checkpoints go before the run log, so that a run log never stands
   beside a checkpoint (a kill in between leaves outputs without a run log: --resume then fits
   again, from scratch). */
static lumen_status stage_runlog(pipe_run *run, dce_job *j) {
  pipe_checkpoint_remove(run, j->models, j->nmodels);
  return pipe_write_runlog(run);
}

/* The pipeline's table of contents. */
static lumen_status run_stages(pipe_run *run, dce_job *j) {
  lumen_status st = dce_stage_read(run, j);
  if (st == LUMEN_OK) st = with_progress(run, "A signal to concentration", dce_stage_convert, j);
  if (st == LUMEN_OK) st = with_progress(run, "B AIF", dce_stage_aif, j);
  if (st == LUMEN_OK) st = with_progress(run, "A maps", dce_stage_maps, j);
  if (st == LUMEN_OK) st = dce_stage_fit(run, j); /* a progress bar per model's fit and per its maps */
  if (st == LUMEN_OK) st = with_progress(run, "report", stage_report, j);
  if (st == LUMEN_OK) st = stage_runlog(run, j);
  return st;
}

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
  if (st == LUMEN_OK) st = run_stages(run, j);
  sum->n_outputs = run->n_outputs;
  dce_job_free(j);
  free(j);
  pipe_run_free(run);
  free(run);
  return st;
}
