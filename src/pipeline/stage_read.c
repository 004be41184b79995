/* Stage "read" of `lumen dce`: the DCE series (NIfTI with its sidecar, or DICOM), the acquisition
   values and frame times (read_acquisition.c), the mask, the pre-contrast T1 (a map in s or ms,
   VFA inputs fitted on the fly, or a constant) and the B1 map. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/dce_stages.h"
#include "pipeline/pipe_inputs.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_t1.h"
#include "pipeline/pipe_util.h"

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

/* The series (4-D, every frame with a finite value), its sidecar, the acquisition values, the
   frame times and the mask. */
static lumen_status read_series(pipe_run *run, dce_job *j) {
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
  if (st == LUMEN_OK) st = dce_read_acquisition(run, j);
  if (st == LUMEN_OK) st = pipe_load_mask(run, cfg->dce);
  return st;
}

/* The pre-contrast T1 (a map in s or ms, VFA inputs, or a constant) and the B1 map (fraction or
   percent); unit corrections are warnings. */
static lumen_status read_t1_b1(pipe_run *run, dce_job *j) {
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

/* read (dce_stages.h): the series and its values, then the pre-contrast T1 and the B1 map. */
lumen_status dce_stage_read(pipe_run *run, dce_job *j) {
  j->t0 = pipe_now();
  lumen_status st = read_series(run, j);
  if (st == LUMEN_OK) st = read_t1_b1(run, j);
  run->sum->masked = run->n_mask;
  run->sum->seconds_read = pipe_now() - j->t0;
  return st;
}
