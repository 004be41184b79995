/* The read stage's acquisition values of `lumen dce`: flip angle, TR and relaxivity (the options,
   else the series' sidecar or DICOM headers, checked as the options are), the frame times (--dt,
   the sidecar's or headers' list, or pixdim[4]), and where each came from for the run log; the
   values that cannot be found are named in one message. docs/PIPELINES.md "lumen dce". */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/dce_stages.h"
#include "pipeline/pipe_options.h"
#include "pipeline/pipe_run.h"

/* A DICOM series without frame times (pipe_read_dicom_series leaves no frame interval). */
static int dicom_without_times(const lumen_nifti_info *info) { return info->version == 0 && isnan(info->time_step_s); }

/* Frame times in minutes from the first frame into j->t_min, and how they were found into j->how_t. */
static lumen_status frame_times(pipe_run *run, dce_job *j) {
  const lumen_nifti_info *info = &j->info;
  const lumen_acquisition *acq = &j->acq;
  const int64_t nt = j->nt;
  double *t_min = j->t_min;
  char *how = j->how_t;
  const size_t how_size = sizeof j->how_t;
  const lumen_pipe_config *cfg = run->cfg;
  if (isfinite(cfg->dt_s)) {
    for (int64_t i = 0; i < nt; ++i) t_min[i] = (double)i * cfg->dt_s / 60.0;
    snprintf(how, how_size, "--dt %g s", cfg->dt_s);
    return LUMEN_OK;
  }
  if (acq->n_frame_times > 0) {
    if (acq->n_frame_times != nt)
      return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                        "DCE series '%s': the sidecar's %s has %lld times, the series %lld frames (give --dt)", cfg->dce,
                        acq->frame_times_key, (long long)acq->n_frame_times, (long long)nt);
    for (int64_t i = 0; i < nt; ++i) {
      t_min[i] = (acq->frame_times_s[i] - acq->frame_times_s[0]) / 60.0;
      if (i > 0 && !(t_min[i] > t_min[i - 1]))
        return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT, "DCE series '%s': sidecar %s is not increasing at frame %lld (give --dt)",
                          cfg->dce, acq->frame_times_key, (long long)i);
    }
    char src[LUMEN_PIPE_PATH_MAX + 64];
    const int dicom = !strncmp(acq->frame_times_key, "DICOM ", 6);  /* pipe_read_dicom_series' keys */
    snprintf(src, sizeof src, "DCE series '%s' %s %s (mean frame interval)", cfg->dce, dicom ? "header" : "sidecar",
             acq->frame_times_key);
    lumen_status st = pipe_check_dt(run->ctx, src, t_min[nt - 1] * 60.0 / (double)(nt - 1));
    if (st != LUMEN_OK) return st;
    snprintf(how, how_size, "%s%s", dicom ? "the headers' " : "sidecar ", dicom ? acq->frame_times_key + 6 : acq->frame_times_key);
    return LUMEN_OK;
  }
  double dt = info->time_step_s;
  /* dcm2niix writes RepetitionTime into pixdim[4]; for a 4-D series with RepetitionTimeExcitation
     that RepetitionTime is the volume time (acq->volume_time_s), so pixdim[4] is the frame interval */
  const int volume_time = isfinite(acq->volume_time_s) && fabs(dt - acq->volume_time_s) < 1e-9 * fmax(1.0, dt);
  if (!volume_time && isfinite(acq->repetition_time_s) && fabs(dt - acq->repetition_time_s) < 1e-9 * fmax(1.0, dt))
    return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "DCE series '%s': the header's frame interval pixdim[4] = %g s equals the RepetitionTime "
                      "(dcm2niix writes the TR there); give the frame interval with --dt SECONDS",
                      cfg->dce, dt);
  if (dicom_without_times(info))
    return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "DCE series '%s': no timing: none of TriggerTime (0018,1060), the acquisition times "
                      "(0008,002A / 0008,0032), ContentTime (0008,0033) and FrameReferenceTime (0054,1300) is in every "
                      "file and rises from frame to frame (GE writes one AcquisitionTime for a whole series; "
                      "'lumen convert FOLDER' prints what each tag held); give the frame interval with --dt SECONDS",
                      cfg->dce);
  if (!(dt > 0) || !isfinite(dt))
    return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "DCE series '%s': no frame interval (pixdim[4] is %g, no FrameTimesStart/AcquisitionTime list in "
                      "the sidecar); give --dt SECONDS",
                      cfg->dce, dt);
  char src[LUMEN_PIPE_PATH_MAX + 64];
  snprintf(src, sizeof src, "DCE series '%s' header pixdim[4] (frame interval)", cfg->dce);
  lumen_status st = pipe_check_dt(run->ctx, src, dt);
  if (st != LUMEN_OK) return st;
  for (int64_t i = 0; i < nt; ++i) t_min[i] = (double)i * dt / 60.0;
  snprintf(how, how_size, "header pixdim[4] = %g s%s", dt,
           volume_time ? " (= the sidecar's RepetitionTime, dcm2niix's volume time; TR from RepetitionTimeExcitation)" : "");
  return LUMEN_OK;
}

/* The relaxivity in the sidecar: ContrastAgentRelaxivity, else Relaxivity; *key = NULL when
   neither is there. */
static void sidecar_relaxivity(lumen_ctx *ctx, const lumen_json *side, double *r1, const char **key) {
  static const char *const keys[] = {"ContrastAgentRelaxivity", "Relaxivity"};
  *key = NULL;
  for (int i = 0; side && i < 2; ++i) {
    int f = 0;
    double v = NAN;
    lumen_json_get_number(ctx, side, keys[i], &v, &f);
    if (f) {
      *r1 = v;
      *key = keys[i];
      return;
    }
  }
}

/* A sidecar value that is there but not a finite number (1e999 reads as inf): says so, rather than
   "missing". */
static lumen_status finite_or_absent(lumen_ctx *ctx, const char *sc, const char *key, double v, const char *expected) {
  if (isnan(v) || isfinite(v)) return LUMEN_OK;
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "sidecar '%s' %s = %g: not a finite number; expected %s", sc, key,
                    v, expected);
}

/* Flip angle, TR and relaxivity of the series: the options, else its sidecar; sidecar values
   get the checks the options got (lumen_pipe_config_check), as data errors naming the field. */
static lumen_status acquisition_values(pipe_run *run, dce_job *j) {
  const lumen_acquisition *acq = &j->acq;
  const lumen_json *side = j->side;
  const int found = j->found, dicom = j->dicom;
  double *fa_deg = &j->fa_deg, *tr = &j->tr, *r1 = &j->r1;
  char *fa_how = j->fa_how, *tr_how = j->tr_how, *r1_how = j->r1_how;
  const size_t how_size = sizeof j->fa_how;
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  const int signal = cfg->input_type == LUMEN_PIPE_INPUT_SIGNAL;
  const char *rkey = NULL;
  *fa_deg = isfinite(cfg->flip_angle_deg) ? cfg->flip_angle_deg : acq->flip_angle_deg;
  *tr = isfinite(cfg->tr_s) ? cfg->tr_s : acq->repetition_time_s;
  *r1 = cfg->relaxivity;
  if (!isfinite(*r1)) sidecar_relaxivity(ctx, side, r1, &rkey);
  char sc[LUMEN_PIPE_PATH_MAX], src[LUMEN_PIPE_PATH_MAX + 64];
  const char *where = dicom ? "DICOM headers" : "sidecar";
  if (dicom) snprintf(sc, sizeof sc, "%s", cfg->dce);
  else lumen_sidecar_path(ctx, cfg->dce, sc, sizeof sc);
  /* the run log says where FA and TR came from */
  if (isfinite(cfg->flip_angle_deg)) snprintf(fa_how, how_size, "--flip-angle");
  else snprintf(fa_how, how_size, "%s '%s' FlipAngle", where, sc);
  if (isfinite(cfg->tr_s)) snprintf(tr_how, how_size, "--tr");
  else snprintf(tr_how, how_size, "%s '%s' %s", where, sc,
                acq->repetition_time_key ? acq->repetition_time_key : "RepetitionTime");
  const char *tkey = acq->repetition_time_key ? acq->repetition_time_key : "RepetitionTime";
  if (isfinite(cfg->relaxivity))
    snprintf(r1_how, how_size, "%s", cfg->relaxivity_source[0] ? cfg->relaxivity_source : "option");
  else if (rkey)
    snprintf(r1_how, how_size, "sidecar '%s' %s", sc, rkey);
  lumen_status st = LUMEN_OK;
  if (!signal) {
    if (!(*r1 > 0) || !isfinite(*r1)) {
      *r1 = LUMEN_DEFAULT_RELAXIVITY; /* concentration input: only FXR uses it */
      snprintf(r1_how, how_size, "default (concentration input: used by fxr only)");
    }
    return LUMEN_OK;
  }
  st = finite_or_absent(ctx, sc, "FlipAngle", *fa_deg, "a flip angle in degrees (1..90)");
  if (st == LUMEN_OK) st = finite_or_absent(ctx, sc, tkey, *tr, "a repetition time in seconds");
  if (st == LUMEN_OK && rkey)
    st = finite_or_absent(ctx, sc, rkey, *r1, "a relaxivity in 1/(mM s), e.g. 4.5 for gadoterate at 1.5 T");
  if (st != LUMEN_OK) return st;
  if (!isfinite(*fa_deg))
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "flip angle missing for '%s': give --flip-angle DEG or FlipAngle in %s '%s'%s",
                      cfg->dce, where, sc, found || dicom ? "" : " (no sidecar found)");
  if (!isfinite(*tr))
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "repetition time missing for '%s': give --tr SECONDS or RepetitionTime in %s '%s'%s",
                      cfg->dce, where, sc, found || dicom ? "" : " (no sidecar found)");
  if (!isfinite(*r1) && dicom)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "relaxivity missing for '%s': give --relaxivity R (1/(mM s), e.g. 4.5 for gadoterate at 1.5 T) or "
                      "'relaxivity = R' in a config file (DICOM has no relaxivity attribute: ContrastBolusAgent "
                      "(0018,0010) names the agent only)", cfg->dce);
  if (!isfinite(*r1))
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "relaxivity missing for '%s': give --relaxivity R (1/(mM s), e.g. 4.5 for gadoterate at 1.5 T), "
                      "'relaxivity = R' in a config file, or ContrastAgentRelaxivity in '%s'",
                      cfg->dce, sc);
  if (!isfinite(cfg->flip_angle_deg)) {
    snprintf(src, sizeof src, "%s '%s' FlipAngle", where, sc);
    st = pipe_check_flip(ctx, src, *fa_deg);
  }
  if (st == LUMEN_OK && !isfinite(cfg->tr_s)) {
    snprintf(src, sizeof src, "%s '%s' %s", where, sc, tkey);
    st = pipe_check_tr(ctx, src, *tr, 1);
  }
  if (st == LUMEN_OK && rkey) {
    snprintf(src, sizeof src, "sidecar '%s' %s", sc, rkey);
    st = pipe_check_relaxivity(ctx, src, *r1);
  }
  return st;
}

/* Every required value the run cannot find, in one message (issue 39 item 6: QIBA v6 took three
   failed runs, one value each). Only when two or more are missing: one missing value keeps its own
   message below, with the detail of what was looked at. For a DICOM series the hints name the
   DICOM attribute, never a sidecar that does not exist. */
static lumen_status missing_values(pipe_run *run, const dce_job *j) {
  const lumen_pipe_config *cfg = run->cfg;
  const lumen_acquisition *acq = &j->acq;
  char sc[LUMEN_PIPE_PATH_MAX];
  if (!j->dicom) lumen_sidecar_path(run->ctx, cfg->dce, sc, sizeof sc);
  const char *what[5];
  char hint[5][LUMEN_PIPE_PATH_MAX + 200];
  int n = 0;
  if (j->signal) {
    double r1 = cfg->relaxivity;
    const char *rkey = NULL;
    if (!isfinite(r1)) sidecar_relaxivity(run->ctx, j->side, &r1, &rkey);
    if (!isfinite(cfg->flip_angle_deg) && isnan(acq->flip_angle_deg)) {
      what[n] = "flip angle";
      if (j->dicom) snprintf(hint[n], sizeof hint[n], "--flip-angle DEG (the headers have no FlipAngle (0018,1314))");
      else snprintf(hint[n], sizeof hint[n], "--flip-angle DEG or FlipAngle in '%s'%s", sc, j->found ? "" : " (not found)");
      n++;
    }
    if (!isfinite(cfg->tr_s) && isnan(acq->repetition_time_s)) {
      what[n] = "repetition time";
      if (j->dicom) snprintf(hint[n], sizeof hint[n], "--tr SECONDS (the headers have no RepetitionTime (0018,0080))");
      else snprintf(hint[n], sizeof hint[n], "--tr SECONDS or RepetitionTime in '%s'", sc);
      n++;
    }
    if (isnan(r1)) {
      what[n] = "relaxivity";
      if (j->dicom)
        snprintf(hint[n], sizeof hint[n], "--relaxivity R (1/(mM s), e.g. 4.5 for gadoterate at 1.5 T; DICOM has no "
                 "relaxivity attribute: ContrastBolusAgent (0018,0010) names the agent only)");
      else
        snprintf(hint[n], sizeof hint[n], "--relaxivity R (1/(mM s), e.g. 4.5 for gadoterate at 1.5 T) or "
                 "ContrastAgentRelaxivity in '%s'", sc);
      n++;
    }
  }
  const double dt = j->info.time_step_s;
  const int header_dt = dt > 0 && isfinite(dt) && !dicom_without_times(&j->info) &&
                        !(isfinite(acq->repetition_time_s) && fabs(dt - acq->repetition_time_s) < 1e-9 * fmax(1.0, dt) &&
                          !(isfinite(acq->volume_time_s) && fabs(dt - acq->volume_time_s) < 1e-9 * fmax(1.0, dt)));
  if (!isfinite(cfg->dt_s) && acq->n_frame_times == 0 && !header_dt) {
    what[n] = "frame times";
    if (j->dicom)
      snprintf(hint[n], sizeof hint[n], "--dt SECONDS (no TriggerTime (0018,1060), acquisition or content time rises "
               "from frame to frame: 'lumen convert FOLDER' shows each tag)");
    else
      snprintf(hint[n], sizeof hint[n], "--dt SECONDS, or FrameTimesStart in '%s' (pixdim[4] = %g s %s)", sc, dt,
               dt > 0 && isfinite(dt) ? "is the RepetitionTime, as dcm2niix writes it" : "is no frame interval");
    n++;
  }
  if (j->signal && !cfg->t1map && cfg->n_vfa == 0 && !isfinite(cfg->t1_default_s)) {
    what[n] = "pre-contrast T1";
    snprintf(hint[n], sizeof hint[n], "--t1map FILE, --vfa FILE..., or --t1 SECONDS");
    n++;
  }
  if (n < 2) return LUMEN_OK;
  char msg[6 * (LUMEN_PIPE_PATH_MAX + 240)];
  int len = snprintf(msg, sizeof msg, "'%s' lacks %d required values:", cfg->dce, n);
  for (int i = 0; i < n && len > 0 && (size_t)len < sizeof msg; ++i)
    len += snprintf(msg + len, sizeof msg - (size_t)len, "%s %s: give %s", i ? ";" : "", what[i], hint[i]);
  return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s", msg);
}

/* read_acquisition.c: the acquisition values (dce_stages.h). */
lumen_status dce_read_acquisition(pipe_run *run, dce_job *j) {
  lumen_status st = missing_values(run, j);
  if (st == LUMEN_OK) st = acquisition_values(run, j);
  if (st == LUMEN_OK) {
    j->t_min = malloc(sizeof(double) * (size_t)j->nt);
    j->tissue_mean = calloc((size_t)j->nt, sizeof(double));
    if (!j->t_min || !j->tissue_mean) st = lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  if (st == LUMEN_OK) st = frame_times(run, j);
  if (st == LUMEN_OK) {
    char src[LUMEN_PIPE_PATH_MAX + 96];
    snprintf(src, sizeof src, "DCE series '%s' (frame times from %s)", run->cfg->dce, j->how_t);
    st = pipe_check_duration(run->ctx, src, j->t_min[j->nt - 1] * 60.0, j->nt);
  }
  return st;
}
