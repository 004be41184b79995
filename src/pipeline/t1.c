/* lumen t1 (VFA nonlinear / DESPOT1 / two-angle, inversion recovery, saturation recovery), and
   the T1 computation `lumen dce --vfa` uses. Fitting goes through lumen_fit_* with the same
   backend selection as DCE fitting. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/pipe_internal.h"

#define PI 3.14159265358979323846

lumen_status pipe_t1_run(pipe_run *run, lumen_model method, const char *const *files, int nfiles, int write_maps,
                         float **t1_out) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  const char *mname = lumen_model_name(method);
  if (t1_out) *t1_out = NULL;
  if (nfiles < 1) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "T1 (%s): no input files (--in FILE...)", mname);
  lumen_image *ims[LUMEN_PIPE_MAX_FILES] = {0};
  double xs[64];
  int n = 0;
  double tr = cfg->tr_s;
  lumen_status st = LUMEN_OK;
  int vfa = method == LUMEN_MODEL_VFA || method == LUMEN_MODEL_VFA_LINEAR || method == LUMEN_MODEL_VFA_2PT;
  const char *given = vfa ? "--flip-angles" : "--times";
  int ngiven = vfa ? cfg->n_flip_angles : cfg->n_times;
  const double *gv = vfa ? cfg->flip_angles_deg : cfg->times_s;
  int64_t frames_per[LUMEN_PIPE_MAX_FILES];
  for (int f = 0; f < nfiles && st == LUMEN_OK; ++f) {
    lumen_nifti_info info;
    char role[48];
    snprintf(role, sizeof role, "T1 input %d", f + 1);
    st = pipe_read_input(run, role, files[f], &ims[f], &info);
    if (st != LUMEN_OK) break;
    if (run->nvox == 0) pipe_set_geometry(run, ims[f], &info);
    int64_t nv = lumen_image_dim(ims[f], 0) * lumen_image_dim(ims[f], 1) * lumen_image_dim(ims[f], 2);
    if (nv != run->nvox) {
      st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s '%s' is on another grid: %lldx%lldx%lld voxels, expected %lldx%lldx%lld",
                      role, files[f], (long long)lumen_image_dim(ims[f], 0), (long long)lumen_image_dim(ims[f], 1),
                      (long long)lumen_image_dim(ims[f], 2), (long long)run->nx, (long long)run->ny, (long long)run->nz);
      break;
    }
    st = pipe_check_grid(run, role, files[f], ims[f], files[0]);
    if (st != LUMEN_OK) break;
    frames_per[f] = lumen_image_dim(ims[f], 3);
    lumen_acquisition acq;
    int found = 0;
    st = lumen_sidecar_read_for(ctx, files[f], &acq, NULL, &found);
    if (st != LUMEN_OK) break;
    if (!isfinite(cfg->tr_s) && isfinite(acq.repetition_time_s)) {
      /* every input's sidecar TR is checked; the first one is used */
      char sc[LUMEN_PIPE_PATH_MAX], src[LUMEN_PIPE_PATH_MAX + 64];
      lumen_sidecar_path(ctx, files[f], sc, sizeof sc);
      snprintf(src, sizeof src, "sidecar '%s' %s", sc, acq.repetition_time_key ? acq.repetition_time_key : "RepetitionTime");
      st = pipe_check_tr(ctx, src, acq.repetition_time_s, vfa);
      if (st != LUMEN_OK) { lumen_acquisition_clear(&acq); break; }
      if (!isfinite(tr)) tr = acq.repetition_time_s;
    }
    for (int64_t j = 0; j < frames_per[f] && st == LUMEN_OK; ++j) {
      if (n >= 64) { st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "T1: more than 64 input volumes"); break; }
      double v = NAN;
      if (ngiven > 0) {
        if (n < ngiven) v = gv[n];
      } else if (frames_per[f] == 1) {
        v = vfa ? acq.flip_angle_deg : method == LUMEN_MODEL_IR ? acq.inversion_time_s : NAN;
        if (vfa && isfinite(v)) {
          char sc[LUMEN_PIPE_PATH_MAX], src[LUMEN_PIPE_PATH_MAX + 64];
          lumen_sidecar_path(ctx, files[f], sc, sizeof sc);
          snprintf(src, sizeof src, "sidecar '%s' FlipAngle", sc);
          st = pipe_check_flip(ctx, src, v);
          if (st != LUMEN_OK) break;
        }
      }
      if (!isfinite(v)) {
        char sc[LUMEN_PIPE_PATH_MAX];
        lumen_sidecar_path(ctx, files[f], sc, sizeof sc);
        st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s missing for volume %d ('%s'): give %s LIST%s%s%s",
                        vfa ? "flip angle" : method == LUMEN_MODEL_IR ? "inversion time" : "recovery time", n + 1, files[f],
                        given, vfa ? " or FlipAngle in '" : method == LUMEN_MODEL_IR ? " or InversionTime in '" : "",
                        (vfa || method == LUMEN_MODEL_IR) ? sc : "", (vfa || method == LUMEN_MODEL_IR) ? "'" : "");
        break;
      }
      xs[n++] = vfa ? v * PI / 180.0 : v;
    }
    lumen_acquisition_clear(&acq);
  }
  if (st == LUMEN_OK && ngiven > 0 && ngiven != n)
    st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s has %d values, the inputs have %d volumes", given, ngiven, n);
  if (st == LUMEN_OK && vfa && !(tr > 0))
    st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "repetition time missing for the VFA inputs ('%s'): give --tr SECONDS or RepetitionTime in its sidecar", files[0]);
  if (st == LUMEN_OK && n < 2) st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "T1 (%s): %d volume(s), need at least 2", mname, n);
  if (st == LUMEN_OK && !run->mask) st = pipe_load_mask(run, files[0]);
  float *b1 = NULL;
  if (st == LUMEN_OK && cfg->b1) {
    lumen_image *bi = NULL;
    lumen_nifti_info info;
    st = pipe_read_input(run, "B1 map", cfg->b1, &bi, &info);
    if (st == LUMEN_OK && lumen_image_count(bi) != run->nvox)
      st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "B1 map '%s' is on another grid (%lld voxels, expected %lld)", cfg->b1,
                      (long long)lumen_image_count(bi), (long long)run->nvox);
    if (st == LUMEN_OK) st = pipe_check_grid(run, "B1 map", cfg->b1, bi, files[0]);
    if (st == LUMEN_OK && (b1 = malloc(sizeof(float) * (size_t)run->nvox))) {
      memcpy(b1, lumen_image_const_data(bi), sizeof(float) * (size_t)run->nvox);
      double s = 0; int64_t c = 0;
      for (int64_t v = 0; v < run->nvox; ++v) if (run->mask[v] && isfinite(b1[v])) { s += b1[v]; ++c; }
      if (c && s / (double)c > 10) {
        for (int64_t v = 0; v < run->nvox; ++v) b1[v] *= 0.01f;
        pipe_warn(run, "unit correction: B1 map '%s' read as percent (mean %.4g inside the mask > 10) and divided by "
                       "100", cfg->b1, s / (double)c);
      }
    }
    lumen_image_free(bi);
  }
  /* curves of the masked voxels */
  int64_t nl = 0, *list = NULL;
  float *data = NULL, *consts = NULL;
  if (st == LUMEN_OK) {
    list = malloc(sizeof(int64_t) * (size_t)run->n_mask);
    data = malloc(sizeof(float) * (size_t)run->n_mask * (size_t)n);
    consts = malloc(sizeof(float) * (size_t)run->n_mask * LUMEN_FIT_NCONSTS);
    if (!list || !data || !consts) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "T1: out of memory");
  }
  if (st == LUMEN_OK) {
    for (int64_t v = 0; v < run->nvox; ++v) if (run->mask[v]) list[nl++] = v;
    int j = 0;
    for (int f = 0; f < nfiles; ++f)
      for (int64_t fr = 0; fr < frames_per[f]; ++fr, ++j) {
        const float *d = (const float *)lumen_image_const_data(ims[f]) + fr * run->nvox;
        for (int64_t k = 0; k < nl; ++k) data[k * n + j] = d[list[k]];
      }
    for (int64_t k = 0; k < nl; ++k) {
      consts[k * LUMEN_FIT_NCONSTS + LUMEN_FIT_CONST_R10] = 1.0f;
      consts[k * LUMEN_FIT_NCONSTS + LUMEN_FIT_CONST_B1] = b1 ? b1[list[k]] : 1.0f;
    }
  }
  for (int f = 0; f < nfiles; ++f) lumen_image_free(ims[f]);
  free(b1);
  /* fit */
  lumen_fit_options o;
  pipe_fit_options_t1(cfg, method, tr, &o); /* as lumen_pipe_config_check tried them */
  /* sort by x for IR/SR grids (must increase) */
  if (st == LUMEN_OK && !vfa) {
    for (int a = 1; a < n; ++a)
      for (int b = a; b > 0 && xs[b - 1] > xs[b]; --b) {
        double tx = xs[b]; xs[b] = xs[b - 1]; xs[b - 1] = tx;
        for (int64_t k = 0; k < nl; ++k) { float tf = data[k * n + b]; data[k * n + b] = data[k * n + b - 1]; data[k * n + b - 1] = tf; }
      }
  }
  lumen_fit_plan *plan = NULL;
  lumen_fit_results res;
  memset(&res, 0, sizeof res);
  const int np = lumen_model_param_count(method), nd = lumen_fit_derived_count(method);
  if (st == LUMEN_OK) {
    st = lumen_fit_plan_create(ctx, &o, n, xs, NULL, &plan);
    if (st != LUMEN_OK) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", lumen_ctx_last_error(ctx));
      st = lumen_fail(ctx, st, "T1 (%s): %s", mname, msg);
    }
  }
  if (st == LUMEN_OK) {
    res.params = malloc(sizeof(double) * (size_t)nl * (size_t)np);
    res.state = malloc(sizeof(int32_t) * (size_t)nl);
    res.r2 = malloc(sizeof(double) * (size_t)nl);
    res.chi2 = malloc(sizeof(double) * (size_t)nl);
    res.derived = malloc(sizeof(double) * (size_t)nl * (size_t)(nd > 0 ? nd : 1));
    if (!res.params || !res.state || !res.r2 || !res.chi2 || !res.derived) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "T1: out of memory");
  }
  double tf = pipe_now();
  if (st == LUMEN_OK) st = lumen_progress(ctx, 0.0, "T1 fit");
  if (st == LUMEN_OK) st = lumen_fit_execute(ctx, plan, nl, data, consts, &res);
  if (st == LUMEN_OK) st = lumen_progress(ctx, 1.0, "T1 fit");
  tf = pipe_now() - tf;
  float *t1 = NULL, *map = NULL;
  if (st == LUMEN_OK) {
    t1 = malloc(sizeof(float) * (size_t)run->nvox);
    map = malloc(sizeof(float) * (size_t)run->nvox);
    if (!t1 || !map) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "T1: out of memory");
  }
  if (st == LUMEN_OK) {
    int64_t conv = res.state_counts[LUMEN_FIT_CONVERGED], atb = res.state_counts[LUMEN_FIT_AT_BOUND];
    int64_t failed = nl - conv - atb;
    char bound_text[512];
    double fps = res.seconds > 0 ? (double)nl / res.seconds : 0;
    pipe_sb *b = &run->stages;
    pipe_sb_printf(b, "%s\n\t\t\"T1\": {\"method\": ", run->stages.n ? "," : "");
    pipe_sb_json_str(b, mname);
    pipe_sb_printf(b, ", \"volumes\": %d, \"x\": [", n);
    for (int j = 0; j < n; ++j) pipe_sb_printf(b, "%s%.6g", j ? ", " : "", vfa ? xs[j] * 180 / PI : xs[j]);
    pipe_sb_printf(b, "], \"x_unit\": ");
    pipe_sb_json_str(b, vfa ? "deg" : "s");
    pipe_sb_printf(b, ", \"tr_s\": ");
    pipe_sb_json_num(b, tr);
    pipe_sb_printf(b, ", \"b1_map\": %s, \"backend_requested\": ", cfg->b1 ? "true" : "false");
    pipe_sb_json_str(b, res.backend_requested);
    pipe_sb_printf(b, ", \"backend_selected\": ");
    pipe_sb_json_str(b, res.backend_selected);
    pipe_sb_printf(b, ", \"backend_used\": ");
    pipe_sb_json_str(b, res.backend_used);
    pipe_sb_printf(b, ", \"backend_reason\": ");
    pipe_sb_json_str(b, res.reason);
    pipe_sb_printf(b, ", \"voxels_fitted\": %lld, \"voxels_converged\": %lld, \"voxels_at_bound\": %lld, "
                      "\"voxels_failed\": %lld, \"seconds\": %.4f, \"fits_per_s\": %.1f, \"state_counts\": {",
                   (long long)nl, (long long)conv, (long long)atb, (long long)failed, tf, fps);
    for (int s = 0; s < LUMEN_FIT_STATE_COUNT; ++s) {
      pipe_sb_printf(b, "%s", s ? ", " : "");
      pipe_sb_json_str(b, lumen_fit_state_name((lumen_fit_state)s));
      pipe_sb_printf(b, ": %lld", (long long)res.state_counts[s]);
    }
    pipe_sb_printf(b, "}");
    pipe_at_bound_json(b, bound_text, sizeof bound_text, method, &res);
    pipe_sb_printf(b, ", \"bounds_preset\": ");
    pipe_sb_json_str(b, lumen_fit_bounds_preset_name(o.bounds_preset));
    pipe_sb_printf(b, ", \"bounds\": {");
    pipe_bounds_json(b, plan, method);
    pipe_sb_printf(b, "}, \"tolerance\": %g, \"max_iterations\": %d}", o.tolerance, o.max_iterations);
    pipe_sb_printf(&run->text, "T1 (%s, %d volumes): %lld voxels, %lld converged, %lld at a bound%s, %lld failed; backend requested %s, selected %s, used %s (%s); %.3f s, %.0f fits/s\n",
                   mname, n, (long long)nl, (long long)conv, (long long)atb, bound_text, (long long)failed,
                   res.backend_requested, res.backend_selected, res.backend_used, res.reason, tf, fps);
    pipe_judge_model(run, "T1", nl, atb, failed, bound_text);
    if (strcmp(res.backend_used, res.backend_selected))
      pipe_warn(run, "T1: backend selected %s but used %s (%s)", res.backend_selected, res.backend_used, res.reason);
    pipe_curve_in ci = {method, plan, &res, list, nl, n, data, consts, xs, vfa ? 180 / PI : 1.0,
                        vfa ? "flip angle (deg)" : method == LUMEN_MODEL_IR ? "inversion time (s)" : "recovery time (s)",
                        "signal (a.u.)", &o};
    pipe_curve_figure(run, &ci);
    lumen_log(ctx, LUMEN_LOG_INFO, "T1 %s: backend requested %s, selected %s, used %s (%s)", mname, res.backend_requested,
              res.backend_selected, res.backend_used, res.reason);
    if (run->sum && run->sum->n_models < LUMEN_MODEL_COUNT) {
      lumen_pipe_model_summary *ms = &run->sum->models[run->sum->n_models++];
      ms->model = method;
      snprintf(ms->backend_requested, sizeof ms->backend_requested, "%s", res.backend_requested);
      snprintf(ms->backend_selected, sizeof ms->backend_selected, "%s", res.backend_selected);
      snprintf(ms->backend_used, sizeof ms->backend_used, "%s", res.backend_used);
      snprintf(ms->backend_reason, sizeof ms->backend_reason, "%s", res.reason);
      ms->fitted = nl; ms->converged = conv; ms->at_bound = atb; ms->failed = failed; ms->seconds = tf; ms->fits_per_s = fps;
    }
    for (int64_t v = 0; v < run->nvox; ++v) t1[v] = NAN;
    for (int64_t k = 0; k < nl; ++k) t1[list[k]] = (float)res.params[k * np + 0];
  }
  if (st == LUMEN_OK && write_maps) {
    char name[300];
    const char *bu = res.backend_used;
    snprintf(name, sizeof name, "%s_T1map.nii.gz", run->prefix);
    st = pipe_write_map(run, name, t1, "T1", "s", mname, bu, "T1 in seconds", 1);
#define SCAT(expr) do { for (int64_t v = 0; v < run->nvox; ++v) map[v] = NAN; for (int64_t k = 0; k < nl; ++k) map[list[k]] = (float)(expr); } while (0)
    if (st == LUMEN_OK) {
      SCAT(res.params[k * np + 1]);
      snprintf(name, sizeof name, "%s_M0map.nii.gz", run->prefix);
      st = pipe_write_map(run, name, map, "M0", "a.u.", mname, bu, "equilibrium signal M0", 1);
    }
    if (st == LUMEN_OK) {
      SCAT(res.params[k * np + 0] > 0 ? 1.0 / res.params[k * np + 0] : NAN);
      snprintf(name, sizeof name, "%s_R1map.nii.gz", run->prefix);
      st = pipe_write_map(run, name, map, "R1", "1/s", mname, bu, "R1 = 1/T1 in 1/s", 1);
    }
    if (st == LUMEN_OK) {
      SCAT(res.r2[k]);
      snprintf(name, sizeof name, "%s_model-%s_param-r2.nii.gz", run->prefix, mname);
      st = pipe_write_map(run, name, map, "r2", "", mname, bu, "coefficient of determination", 1);
    }
    if (st == LUMEN_OK) {
      SCAT(res.chi2[k]);
      snprintf(name, sizeof name, "%s_model-%s_param-sse.nii.gz", run->prefix, mname);
      st = pipe_write_map(run, name, map, "sse", "a.u.^2", mname, bu, "sum of squared residuals", 0);
    }
    if (st == LUMEN_OK) {
      for (int64_t v = 0; v < run->nvox; ++v) map[v] = LUMEN_FIT_NOT_FITTED;
      for (int64_t k = 0; k < nl; ++k) map[list[k]] = (float)res.state[k];
      snprintf(name, sizeof name, "%s_model-%s_param-state.nii.gz", run->prefix, mname);
      char legend[256];
      pipe_state_legend(legend, sizeof legend);
      st = pipe_write_map(run, name, map, "state", "", mname, bu, legend, 1);
    }
#undef SCAT
  }
  if (st == LUMEN_OK && t1_out) { *t1_out = t1; t1 = NULL; }
  free(t1); free(map); free(list); free(data); free(consts);
  free(res.params); free(res.state); free(res.r2); free(res.chi2); free(res.derived);
  lumen_fit_plan_destroy(plan);
  return st;
}

lumen_status lumen_pipeline_t1(lumen_ctx *ctx, const lumen_pipe_config *cfg, lumen_pipe_summary *sum) {
  LUMEN_REQUIRE_NOT_NULL(ctx, cfg);
  lumen_pipe_summary dummy;
  if (!sum) sum = &dummy;
  memset(sum, 0, sizeof *sum);
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
    else st = lumen_nifti_read_header(ctx, cfg->vfa[0], NULL, &info);
    if (st == LUMEN_OK) {
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
