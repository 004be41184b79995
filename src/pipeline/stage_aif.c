/* Stage "aif" of `lumen dce` (stage B of the run log): --aif dispatched in two steps, the curve
   of the vessels or the ROI from the signal (before the convert stage overwrites it), then the AIF
   itself once the mean tissue curve is known; population and file AIFs; the run log's stage B and
   the check of the AIF's peak. pipe_aif.h lists where each kind of AIF lives (--aif auto:
   aif_auto.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/dce_stages.h"
#include "pipeline/pipe_aif.h"
#include "pipeline/pipe_inputs.h"
#include "pipeline/pipe_judge.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_strbuf.h"
#include "pipeline/pipe_util.h"

void pipe_aif_free(pipe_aif *aif) {
  free(aif->cp);
  free(aif->cb);
  free(aif->voxels);
  free(aif->background);
  aif->cp = aif->cb = NULL;
  aif->voxels = NULL;
  aif->background = NULL;
}

/* A population AIF (plasma and whole blood) starting at the bolus arrival. */
static lumen_status aif_population(pipe_run *run, const pipe_aif_in *in, pipe_aif *aif, lumen_aif_kind kind,
                                   const char *fallback) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  const double hct = cfg->hematocrit;
  const int64_t nt = in->nt;
  lumen_aif_options ao;
  lumen_aif_options_init(&ao);
  ao.kind = kind;
  ao.hct = hct;
  ao.delay = aif->delay_min;
  double *tt = malloc(sizeof(double) * (size_t)nt);
  if (!tt) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "AIF: out of memory");
  for (int64_t i = 0; i < nt; ++i) tt[i] = in->t_min[i] - in->t_min[0];
  ao.plasma = 1;
  lumen_status st = lumen_aif_population(ctx, &ao, nt, tt, aif->cp);
  if (st == LUMEN_OK) {
    ao.plasma = 0;
    st = lumen_aif_population(ctx, &ao, nt, tt, aif->cb);
  }
  free(tt);
  if (st != LUMEN_OK) return st;
  snprintf(aif->method, sizeof aif->method, "%spopulation:%s", fallback[0] ? "auto:" : "", lumen_aif_name(kind));
  snprintf(aif->detail, sizeof aif->detail,
           "%s population AIF, hematocrit %g, bolus arrival %.4g min (%s)%s%s", lumen_aif_name(kind), hct,
           aif->delay_min,
           isfinite(cfg->injection_time_s) ? "given" : aif->arrival >= 0 ? "detected: last frame before the mean tissue curve rises" : "not detected: 0",
           fallback[0] ? "; auto-selection fell back because " : "", fallback);
  return LUMEN_OK;
}

/* --aif file:FILE */
static lumen_status aif_file(pipe_run *run, const pipe_aif_in *in, pipe_aif *aif, const char *path) {
  char how[512];
  lumen_status st = pipe_aif_read_file(run->ctx, path, in->nt, in->t_min, run->cfg->hematocrit, aif->cp, aif->cb, how,
                                       sizeof how);
  if (st != LUMEN_OK) return st;
  pipe_record_input(run, "AIF file", path);
  snprintf(aif->method, sizeof aif->method, "file");
  snprintf(aif->detail, sizeof aif->detail, "%s", how);
  return LUMEN_OK;
}

/* Step 1 (pipe_aif.h): the vessels' or the ROI's curve from the signal. */
lumen_status pipe_aif_from_signal(pipe_run *run, const pipe_aif_in *in, pipe_aif *aif) {
  lumen_ctx *ctx = run->ctx;
  const char *spec = run->cfg->aif ? run->cfg->aif : "auto";
  memset(aif, 0, sizeof *aif);
  aif->cp = malloc(sizeof(double) * (size_t)in->nt);
  aif->cb = malloc(sizeof(double) * (size_t)in->nt);
  if (!aif->cp || !aif->cb) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "AIF: out of memory");
  int64_t *list = NULL, n = 0, used = 0;
  lumen_status st = LUMEN_OK;
  if (!strcmp(spec, "auto")) {
    pipe_aif_auto_signal(run, in, aif->cb, &list, &n, &used);
  } else if (!strncmp(spec, "roi:", 4) || !strncmp(spec, "fitted:", 7)) {
    st = pipe_aif_roi_list(run, spec + (spec[0] == 'f' ? 7 : 4), in->ref_path, &list, &n);
    if (st == LUMEN_OK) st = pipe_aif_blood_curve(run, in, list, n, aif->cb, &used);
  }
  /* kept for the report: the voxels and the baseline image they are drawn over */
  if (st == LUMEN_OK && n > 0 && run->cfg->report) {
    aif->background = malloc(sizeof(float) * (size_t)in->nvox);
    if (aif->background) {
      const int64_t b0 = in->sp->b0, b1 = in->sp->b1 > b0 ? in->sp->b1 : b0 + 1;
      for (int64_t v = 0; v < in->nvox; ++v) {
        double s = 0;
        for (int64_t i = b0; i < b1; ++i) s += in->sig[i * in->nvox + v];
        aif->background[v] = (float)(s / (double)(b1 - b0));
      }
      aif->voxels = list;
      aif->n_list = n;
      list = NULL;
    }
  }
  free(list);
  aif->n_voxels = used;
  return st;
}

/* Step 2 (pipe_aif.h): the AIF of --aif, checked, written. */
lumen_status pipe_aif_choose(pipe_run *run, const pipe_aif_in *in, pipe_aif *aif) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  const int64_t nt = in->nt;
  const char *spec = cfg->aif ? cfg->aif : "auto";
  /* bolus arrival from the mean tissue curve */
  aif->arrival = lumen_pipe_detect_arrival(in->tissue_mean, nt, in->sp->b0, in->sp->b1);
  if (isfinite(cfg->injection_time_s)) {
    aif->delay_min = cfg->injection_time_s / 60.0;
  } else {
    aif->delay_min = aif->arrival >= 0 ? in->t_min[aif->arrival] - in->t_min[0] : 0;
  }
  lumen_status st = LUMEN_OK;
  lumen_aif_kind kind;
  char fallback[512] = "";
  if (!strcmp(spec, "auto")) {
    pipe_aif_auto_choose(run, in, aif, fallback, sizeof fallback);
    if (fallback[0]) spec = "parker";
  }
  if (!strcmp(spec, "auto")) {
    /* detected vessels accepted above */
  } else if (lumen_aif_parse(spec, &kind) == LUMEN_OK) {
    st = aif_population(run, in, aif, kind, fallback);
  } else if (!strncmp(spec, "roi:", 4) || !strncmp(spec, "fitted:", 7)) {
    st = pipe_aif_roi(run, in, aif, spec);
  } else if (!strncmp(spec, "file:", 5)) {
    st = aif_file(run, in, aif, spec + 5);
  } else {
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "--aif '%s': expected auto, parker, georgiou, weinmann, fritz-hansen, roi:FILE, fitted:FILE or file:FILE",
                      spec);
  }
  if (st != LUMEN_OK) return st;
  for (int64_t i = 0; i < nt; ++i)
    if (!isfinite(aif->cp[i])) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "AIF (%s): value at frame %lld is not finite", aif->method, (long long)i);
  return pipe_aif_write(run, in, aif);
}

/* The AIF's curve from the signal (dce_stages.h), timed as the aif stage's. */
lumen_status dce_aif_from_signal(pipe_run *run, dce_job *j) {
  double t = pipe_now();
  const pipe_aif_in in = {.sig = lumen_image_const_data(j->dce), .nvox = run->nvox, .nt = j->nt, .t_min = j->t_min,
                          .sp = &j->sp, .b1 = j->b1, .ref_path = run->cfg->dce, .input_conc = !j->signal};
  lumen_status st = pipe_aif_from_signal(run, &in, &j->aif);
  j->seconds_aif_signal = pipe_now() - t;
  return st;
}

/* aif (dce_stages.h): the AIF, and the run log's stage B. */
lumen_status dce_stage_aif(pipe_run *run, dce_job *j) {
  const lumen_pipe_config *cfg = run->cfg;
  lumen_pipe_summary *sum = run->sum;
  lumen_status st = LUMEN_OK;
  double tb = pipe_now();
  if (st == LUMEN_OK) {
    const pipe_aif_in in = {.nvox = run->nvox, .nt = j->nt, .t_min = j->t_min, .sp = &j->sp, .b1 = j->b1,
                            .tissue_mean = j->tissue_mean, .ref_path = cfg->dce, .input_conc = !j->signal};
    st = pipe_aif_choose(run, &in, &j->aif);
  }
  sum->seconds_b = pipe_now() - tb + j->seconds_aif_signal;
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
