/* The stages of `lumen dce`, in the order dce.c runs them, and the state they hand on (dce_job).
   Each stage is one file, named after it:
     stage_read.c       read: the series, its acquisition values (read_acquisition.c: flip angle,
                        TR, relaxivity, frame times, and where each came from), the mask, T1, B1
     stage_convert.c    convert (run log "A"): the baseline, signal to concentration in place
     stage_aif.c        aif (run log "B"): the arterial input function (pipe_aif.h lists its parts;
                        --aif auto is aif_auto.c); its curve is read from the signal within
                        convert, before the conversion overwrites the series
     stage_maps.c       maps: the convert stage's maps (ninvalid, --save-conc), written only once
                        the aif stage has read its inputs
     stage_fit.c        fit (run log "D"): per model the fit (fit_model.c) and its maps
                        (model_maps.c), then the selection by AIC (model_select.c)
     dce.c              report and run log, and the driver itself
   A stage returns LUMEN_OK or the error it set on the context; it fills the summary's fields
   of its own and appends its run-log entry (run->stages) and text line (run->text). */
#ifndef LUMEN_PIPE_DCE_STAGES_H
#define LUMEN_PIPE_DCE_STAGES_H

#include <stddef.h>
#include <stdint.h>
#include "pipeline/pipe_aif.h"
#include "pipeline/pipe_conc.h"
#include "pipeline/pipe_run.h"

/* What a model's fit keeps of its maps for the selection by AIC (NULL: not kept). */
typedef struct model_out {
  float *aic, *ktrans, *ve, *vp;
  int32_t *state;
  int json_first;  /* the first member of the run log's "models" object */
} model_out;

/* The state of one `lumen dce` run between its stages. */
typedef struct dce_job {
  lumen_model models[LUMEN_MODEL_COUNT];
  int nmodels;
  /* read */
  lumen_image *dce;        /* the series; after convert, the concentration curves over it */
  lumen_nifti_info info;
  lumen_acquisition acq;
  lumen_json *side;
  int found;               /* a sidecar was found */
  int signal;              /* the input is SPGR signal (else concentration) */
  int dicom;               /* the series is a DICOM folder or file */
  int64_t nt;
  double fa_deg, tr, r1;
  char how_t[256], t1_how[512], base_how[256], fa_how[LUMEN_PIPE_PATH_MAX + 64], tr_how[LUMEN_PIPE_PATH_MAX + 64],
      r1_how[LUMEN_PIPE_PATH_MAX + 64];
  double *t_min;           /* frame times, minutes from the first frame */
  float *t10, *b1;         /* per voxel, or NULL */
  /* convert */
  pipe_spgr sp;
  int64_t *list;           /* the masked voxels, in order */
  int64_t nlist, n_bad, n_interp, n_flag;
  int32_t *ninv;
  uint8_t *bad;
  double *tissue_mean;
  pipe_curves curves;      /* the concentration curves, converted in place over the series */
  double seconds_aif_signal; /* the aif stage's reading of the series, done within convert */
  /* aif */
  pipe_aif aif;
  /* maps */
  float *ninv_map;
  /* fit */
  model_out mo[LUMEN_MODEL_COUNT];
  double t0, write_s;
} dce_job;

/* read (stage_read.c) */
lumen_status dce_stage_read(pipe_run *run, dce_job *j);
/* read_acquisition.c: flip angle, TR and relaxivity (options, else sidecar or DICOM headers), the
   frame times and the series' duration, every missing value named in one message. */
lumen_status dce_read_acquisition(pipe_run *run, dce_job *j);
/* convert (stage_convert.c) */
lumen_status dce_stage_convert(pipe_run *run, dce_job *j);
/* aif (stage_aif.c): the AIF's curve from the signal (called by convert before the conversion),
   then the stage itself. */
lumen_status dce_aif_from_signal(pipe_run *run, dce_job *j);
lumen_status dce_stage_aif(pipe_run *run, dce_job *j);
/* maps (stage_maps.c) */
lumen_status dce_stage_maps(pipe_run *run, dce_job *j);
/* fit (stage_fit.c) */
lumen_status dce_stage_fit(pipe_run *run, dce_job *j);

/* The parts of the fit stage. */
/* What fit_model.c fits: one model over the converted curves. */
typedef struct dce_fit_in {
  lumen_model model;
  const pipe_curves *curves;
  const double *t_min, *cp; /* frame times (min), the AIF's plasma curve (mM) */
  const float *t10;         /* per voxel, or NULL: t10_const (FXR's R10) */
  double t10_const;
  const float *b1;          /* per voxel, or NULL */
  double r1;                /* relaxivity */
} dce_fit_in;
/* Fits one model and writes its maps: the summary ms, the maps kept in mo, *write_s += the time
   spent writing maps. */
lumen_status dce_fit_model(pipe_run *run, const dce_fit_in *in, lumen_pipe_model_summary *ms, model_out *mo,
                           double *write_s);
/* model_maps.c: the maps of one fitted model (parameters and their CIs, derived values, sse, r2,
   AIC, delay, state); map is nvox floats of scratch. */
lumen_status dce_write_model_maps(pipe_run *run, const dce_fit_in *in, const lumen_fit_results *res, model_out *mo,
                                  float *map);
/* model_select.c: per voxel the model of lowest AIC (--select aic): the best-model maps. */
lumen_status dce_select_models(pipe_run *run, dce_job *j);
/* PREFIX_model-MODEL_param-PARAM.nii.gz */
void dce_map_name(char *buf, size_t size, const char *prefix, const char *model, const char *param);

#endif
