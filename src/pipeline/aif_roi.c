/* --aif roi:FILE (the mean of a vascular ROI) and fitted:FILE (its biexponential fit), and the
   mean blood curve of a list of voxels, which --aif auto uses for its vessels too (pipe_aif.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/pipe_aif.h"
#include "pipeline/pipe_conc.h"
#include "pipeline/pipe_inputs.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_util.h"

/* ------------------------------------------------------------ ROI mean (whole blood) */
lumen_status pipe_aif_blood_curve(pipe_run *run, const pipe_aif_in *in, const int64_t *list, int64_t nlist, double *cb,
                                  int64_t *n_used) {
  float *conc = malloc(sizeof(float) * (size_t)(nlist * in->nt));
  int32_t *ninv = malloc(sizeof(int32_t) * (size_t)nlist);
  uint8_t *bad = malloc((size_t)nlist);
  if (!conc || !ninv || !bad) {
    free(conc); free(ninv); free(bad);
    return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "AIF: out of memory");
  }
  /* The vessel fills before the tissue: its baseline ends at its own arrival when that is earlier
     than the tissue's (else its upslope would raise S0 and lower the whole AIF). */
  pipe_spgr sp = *in->sp;
  if (!in->input_conc) {
    double *y = calloc((size_t)in->nt, sizeof(double));
    if (y) {
      for (int64_t i = 0; i < in->nt; ++i) {
        const float *f = in->sig + i * in->nvox;
        for (int64_t k = 0; k < nlist; ++k) y[i] += isfinite(f[list[k]]) ? f[list[k]] : 0;
      }
      int64_t nb0 = in->nt / 10 < 2 ? 2 : in->nt / 10 > 5 ? 5 : in->nt / 10;
      int64_t a = pipe_detect_arrival_frac(y, in->nt, 0, nb0, 0.02);
      if (a >= 1 && a + 1 < sp.b1 && a + 1 > sp.b0) sp.b1 = a + 1;
      free(y);
    }
  }
  const pipe_convert_in cin = {.sig = in->sig, .nvox = in->nvox, .nt = in->nt, .list = list, .nlist = nlist,
                               .t10_const = run->cfg->blood_t1_s, .b1 = in->b1, .sp = &sp, .input_conc = in->input_conc,
                               .threads = lumen_ctx_threads(run->ctx), .simd = lumen_ctx_cpu_simd(run->ctx)};
  pipe_convert(&cin, &(pipe_convert_out){.conc = conc, .ninvalid = ninv, .bad = bad});
  int64_t used = 0;
  for (int64_t i = 0; i < in->nt; ++i) cb[i] = 0;
  for (int64_t k = 0; k < nlist; ++k) {
    if (bad[k]) continue;
    ++used;
    for (int64_t i = 0; i < in->nt; ++i) cb[i] += conc[k * in->nt + i];
  }
  for (int64_t i = 0; i < in->nt; ++i) cb[i] = used ? cb[i] / (double)used : NAN;
  free(conc); free(ninv); free(bad);
  *n_used = used;
  if (!used)
    return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "AIF: none of the %lld ROI voxels gives a usable concentration curve "
                      "(baseline <= 0 or too many out-of-range samples with blood T1 %g s)",
                      (long long)nlist, run->cfg->blood_t1_s);
  return LUMEN_OK;
}

/* ------------------------------------------------------------ the ROI's voxels */
lumen_status pipe_aif_roi_list(pipe_run *run, const char *path, const char *ref_path, int64_t **list, int64_t *n) {
  lumen_image *m = NULL;
  lumen_nifti_info info;
  *list = NULL;
  lumen_status st = pipe_read_input(run, "AIF ROI", path, &m, &info);
  if (st != LUMEN_OK) return st;
  if (lumen_image_count(m) != run->nvox)
    st = lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "AIF ROI '%s' is on another grid: %lld voxels, the series '%s' has %lld per frame", path,
                    (long long)lumen_image_count(m), ref_path, (long long)run->nvox);
  if (st == LUMEN_OK) st = pipe_check_grid(run, "AIF ROI", path, m, ref_path);
  if (st == LUMEN_OK) {
    const float *v = lumen_image_const_data(m);
    int64_t k = 0;
    for (int64_t i = 0; i < run->nvox; ++i) k += v[i] > 0.5f;
    if (k == 0) st = lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT, "AIF ROI '%s' selects no voxel", path);
    else if (!(*list = malloc(sizeof(int64_t) * (size_t)k))) st = lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "AIF: out of memory");
    else {
      k = 0;
      for (int64_t i = 0; i < run->nvox; ++i) if (v[i] > 0.5f) (*list)[k++] = i;
      *n = k;
    }
  }
  lumen_image_free(m);
  return st;
}

/* --aif roi:FILE (the mean of the ROI) or fitted:FILE (its biexponential fit) */
lumen_status pipe_aif_roi(pipe_run *run, const pipe_aif_in *in, pipe_aif *aif, const char *spec) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  const double hct = cfg->hematocrit;
  const int64_t nt = in->nt;
  int fitted = spec[0] == 'f';
  const char *path = spec + (fitted ? 7 : 4);
  const int64_t used = aif->n_voxels; /* the ROI's curve from the series (pipe_aif_from_signal) */
  lumen_status st = LUMEN_OK;
  if (fitted) {
    double *raw = malloc(sizeof(double) * (size_t)nt);
    if (!raw) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "AIF: out of memory");
    memcpy(raw, aif->cb, sizeof(double) * (size_t)nt);
    st = lumen_pipe_fit_biexp_aif(ctx, nt, in->t_min, raw, aif->cb, aif->biexp);
    free(raw);
    if (st != LUMEN_OK) return st;
  }
  for (int64_t i = 0; i < nt; ++i) aif->cp[i] = aif->cb[i] / (1 - hct);
  snprintf(aif->method, sizeof aif->method, fitted ? "fitted" : "roi");
  if (fitted)
    snprintf(aif->detail, sizeof aif->detail,
             "biexponential fit (ROCKETSHIP style) of the mean of %lld ROI voxels of '%s' (blood T1 %g s): "
             "A %.4g, B %.4g mM, c %.4g, d %.4g /min, peak at %.4g min, ramp from %.4g min; Cp = Cb/(1 - %g)",
             (long long)used, path, cfg->blood_t1_s, aif->biexp[0], aif->biexp[1], aif->biexp[2], aif->biexp[3],
             aif->biexp[4], aif->biexp[5], hct);
  else
    snprintf(aif->detail, sizeof aif->detail, "mean of %lld ROI voxels of '%s' (blood T1 %g s); Cp = Cb/(1 - %g)",
             (long long)used, path, cfg->blood_t1_s, hct);
  return LUMEN_OK;
}
