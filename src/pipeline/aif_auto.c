/* --aif auto, in one place (docs/PIPELINES.md "Stage B"): where the vessels are searched (step 1,
   from the signal before the conversion overwrites it), their mean blood curve, and the checks
   that accept it as the AIF or fall back to the Parker population AIF with a warning (step 2,
   against the mean tissue curve). The voxel rule itself (stable positive baseline, enhancement,
   early peak, the strongest few) is vessels.c, tested in tests/unit/test_pipe_vessels.c; the
   checks are tested in tests/unit/test_pipe_aif_auto.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pipeline/pipe_aif.h"
#include "pipeline/pipe_run.h"
#include "pipeline/vessels.h"

/* Step 1 (pipe_aif.h). The vessels' baseline statistics come from the first half of the
   baseline: the baseline ends where the mean of the fitted voxels rises, and vessels rise earlier;
   with a mask on the tissue alone its last frames already hold the arterial upslope, which made
   every vessel voxel "unstable" (QIBA v6: a tissue AIF of 0.57 mM instead of 9.6). */
void pipe_aif_auto_signal(pipe_run *run, const pipe_aif_in *in, double *cb, int64_t **list, int64_t *n, int64_t *used) {
  const int64_t b0 = in->sp->b0, b1 = in->sp->b1;
  const int64_t half = b0 + ((b1 - b0) / 2 > 2 ? (b1 - b0) / 2 : 2);
  *list = NULL;
  *used = 0;
  *n = in->input_conc ? 0 : pipe_detect_vessels(in->sig, in->nvox, in->nt, b0, half < b1 ? half : b1, list);
  /* a failure to convert the candidates is no error: auto falls back to a population AIF */
  if (*n >= 3 && pipe_aif_blood_curve(run, in, *list, *n, cb, used) != LUMEN_OK) {
    lumen_ctx_clear_error(run->ctx);
    *used = 0;
  }
}

static int64_t argmax(const double *y, int64_t n) {
  int64_t k = 0;
  for (int64_t i = 1; i < n; ++i) if (y[i] > y[k]) k = i;
  return k;
}

/* The checks (pipe_aif.h): the first that fails is the reason. */
void pipe_aif_judge_vessels(const pipe_aif_vessel_curves *c, char *why, size_t size) {
  const int64_t nt = c->nt;
  if (size) why[0] = '\0';
  double tissue_peak = c->tissue_mean[argmax(c->tissue_mean, nt)];
  if (c->input_conc) {
    snprintf(why, size, "concentration input: no signal to find vessels in");
    return;
  }
  if (c->used < 3) {
    snprintf(why, size, "fewer than 3 usable vascular candidate voxels (%lld)", (long long)c->used);
    return;
  }
  int64_t ip = argmax(c->cb, nt), it = argmax(c->tissue_mean, nt);
  double late = 0;
  int64_t nl = 0;
  for (int64_t i = nt - nt / 4; i < nt; ++i) { late += c->cb[i]; ++nl; }
  late /= (double)(nl ? nl : 1);
  double cpk = c->cb[ip] / (1 - c->hct);
  if (!(cpk >= 3 * tissue_peak)) snprintf(why, size, "candidate plasma peak %.3g mM is below 3x the tissue peak %.3g mM", cpk, tissue_peak);
  else if (ip > it) snprintf(why, size, "candidate peaks (frame %lld) after the tissue (frame %lld)", (long long)ip, (long long)it);
  else if (!(late <= 0.7 * c->cb[ip])) snprintf(why, size, "candidate has no washout (late mean %.3g >= 70%% of peak %.3g mM)", late, c->cb[ip]);
}

/* Step 2 (pipe_aif.h): the vessels' mean when it passes the checks; otherwise the warning, and
   fallback says why (the caller uses the Parker population AIF). */
void pipe_aif_auto_choose(pipe_run *run, const pipe_aif_in *in, pipe_aif *aif, char *fallback, size_t size) {
  const lumen_pipe_config *cfg = run->cfg;
  const double hct = cfg->hematocrit;
  const int64_t nt = in->nt;
  const int64_t used = aif->n_voxels; /* the vessels' curve from the series (pipe_aif_auto_signal) */
  const pipe_aif_vessel_curves c = {.cb = aif->cb, .tissue_mean = in->tissue_mean, .nt = nt, .used = used, .hct = hct,
                                    .input_conc = in->input_conc};
  pipe_aif_judge_vessels(&c, fallback, size);
  if (fallback[0]) {
    pipe_warn(run, "AIF auto: no usable vessel (%s); using the Parker population AIF instead: give --aif roi:FILE "
                   "with a vessel mask, or --aif parker to choose it", fallback);
    aif->fallback = 1;
    aif->n_voxels = 0;
    return;
  }
  for (int64_t i = 0; i < nt; ++i) aif->cp[i] = aif->cb[i] / (1 - hct);
  aif->n_voxels = used;
  snprintf(aif->method, sizeof aif->method, "auto:detected-vessels");
  snprintf(aif->detail, sizeof aif->detail,
           "mean of %lld automatically detected vascular voxels (enhancement >= half the 99th percentile, early peak), converted with "
           "blood T1 %g s, Cp = Cb/(1 - %g); passed: peak >= 3x tissue peak, peaks before tissue, washout",
           (long long)used, cfg->blood_t1_s, hct);
}
