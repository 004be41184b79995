/* Stage "convert" of `lumen dce` (stage A of the run log): the baseline (given or detected from
   the mean signal), then signal to concentration for the masked voxels, written back over the series
   (pipe_conc.h), with the mean tissue curve; stage A's run-log entries (and the read stage's, whose
   values are known only now). Before the conversion overwrites the series, the aif stage reads
   the curve it needs from the signal (dce_aif_from_signal). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/conc_f32.h"
#include "pipeline/dce_stages.h"
#include "pipeline/pipe_conc.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_strbuf.h"
#include "pipeline/pipe_util.h"
#include "lumen_build_config.h"

#define PI 3.14159265358979323846

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

/* The baseline frames [j->sp.b0, j->sp.b1): --baseline N, else the bolus arrival of the mean
   signal of (about 20000 of) the masked voxels. */
static lumen_status find_baseline(pipe_run *run, dce_job *j) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  lumen_status st = LUMEN_OK;
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
  return st;
}

/* The curves of the masked voxels, over the series (the aif stage has read it): no second array
   of the series' size; the flags' totals and the mean tissue curve. */
static lumen_status convert_curves(pipe_run *run, dce_job *j) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  lumen_status st = LUMEN_OK;
  j->ninv = malloc(sizeof(int32_t) * (size_t)run->n_mask);
  j->bad = malloc((size_t)run->n_mask);
  if (!j->ninv || !j->bad)
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "stage A: out of memory for %lld curves of %lld frames",
                      (long long)run->n_mask, (long long)j->nt);
  int64_t used = 0, count[3] = {0, 0, 0};
  const pipe_convert_in in = {.nvox = run->nvox, .nt = j->nt, .list = j->list, .nlist = j->nlist, .t10 = j->t10,
                              .t10_const = isfinite(cfg->t1_default_s) ? cfg->t1_default_s : NAN, .b1 = j->b1,
                              .sp = &j->sp, .input_conc = !j->signal, .threads = lumen_ctx_threads(ctx),
                              .simd = lumen_ctx_cpu_simd(ctx)};
  const pipe_convert_out out = {.ninvalid = j->ninv, .bad = j->bad, .mean = j->tissue_mean, .used = &used,
                                .count = count};
  if (pipe_convert_in_place(lumen_image_data(j->dce), &in, &out) != 0)
    st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "stage A: out of memory for the mean tissue curve");
  j->curves = (pipe_curves){.base = lumen_image_const_data(j->dce), .nvox = run->nvox, .nt = j->nt, .list = j->list,
                            .nlist = j->nlist};
  if (st == LUMEN_OK) {
    j->n_bad += count[0];
    j->n_flag += count[1];
    j->n_interp += count[2];
  }
  if (st == LUMEN_OK && used == 0)
    st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "stage A: no voxel of '%s' gives a usable concentration curve (check T1, flip angle, TR, baseline)", cfg->dce);
  return st;
}

/* The run log's "read" and "A" members and their text lines. */
static void record_convert(pipe_run *run, const dce_job *j) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  const lumen_pipe_summary *sum = run->sum;
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

/* convert (dce_stages.h) */
lumen_status dce_stage_convert(pipe_run *run, dce_job *j) {
  lumen_pipe_summary *sum = run->sum;
  sum->masked = run->n_mask;
  sum->seconds_read = pipe_now() - j->t0;
  double ta = pipe_now();
  j->sp = (pipe_spgr){.fa_rad = j->fa_deg * PI / 180.0, .tr = j->tr, .r1 = j->r1,
                      .max_invalid_fraction = run->cfg->max_invalid_fraction};
  lumen_status st = masked_list(run, j);
  if (st == LUMEN_OK) st = find_baseline(run, j);
  if (st == LUMEN_OK) st = dce_aif_from_signal(run, j); /* before the conversion overwrites the signal */
  if (st == LUMEN_OK) st = convert_curves(run, j);
  sum->seconds_a = pipe_now() - ta - j->seconds_aif_signal;
  if (st == LUMEN_OK) record_convert(run, j);
  return st;
}
