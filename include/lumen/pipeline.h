/* lumen: DCE-MRI and T1-mapping pipelines from NIfTI files to parameter maps, a run log and a
   report (docs/PIPELINES.md). Lives in the library lumen_pipeline (needs lumen_io).

   Stages of `lumen dce` (as ROCKETSHIP users know them):
     A  signal -> concentration (SPGR, T1 map or VFA inputs, baseline, relaxivity, B1)
     B  arterial input function (population with bolus arrival from the data, ROI mean, fitted
        biexponential, automatic selection, or a file)
     D  model fitting through lumen_fit_* on masked voxels, maps, model selection
   then the run log (JSON + text) and report.html.

   Usage: lumen_pipe_config_init(&cfg); set fields directly or with lumen_pipe_config_set (the
   keys of the command-line options, and of config files); lumen_pipeline_dce(ctx, &cfg, &sum);
   lumen_pipe_config_clear(&cfg). The library never prints: messages go to the context's log,
   progress of stage D to its progress callback. */
#ifndef LUMEN_PIPELINE_H
#define LUMEN_PIPELINE_H
#include "lumen/export.h"

#include <stdint.h>
#include <stdio.h>
#include "lumen/context.h"
#include "lumen/models.h"
#include "lumen/fit.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LUMEN_PIPE_MAX_FILES 32
#define LUMEN_PIPE_PATH_MAX 4096

typedef enum lumen_pipe_input_type {
  LUMEN_PIPE_INPUT_SIGNAL = 0,     /* SPGR signal: stage A converts it */
  LUMEN_PIPE_INPUT_CONCENTRATION   /* tissue concentration in mM already: stage A skipped */
} lumen_pipe_input_type;

/* A stage D executor of `lumen dce`: fits the n curves (nt samples each; consts may be NULL) in
   place of the pipeline's own lumen_fit_execute calls and fills res as lumen_fit_execute would.
   The distributed runs set one (src/scale: a --shard part fits its range, MPI ranks share the
   work); NULL (the default) fits in this process. */
typedef lumen_status (*lumen_pipe_fit_fn)(void *user, lumen_ctx *ctx, const lumen_fit_plan *plan, lumen_model model,
                                          int64_t n, int64_t nt, const float *data, const float *consts,
                                          lumen_fit_results *res);

/* Everything a run can be told. Strings are owned by the struct (set through
   lumen_pipe_config_set or strdup'ed by the caller; freed by lumen_pipe_config_clear). NaN or
   negative / 0 numbers mean "not given" where noted. */
typedef struct lumen_pipe_config {
  /* files */
  char *dce;                       /* 4-D DCE series: NIfTI, or a DICOM folder / file (docs/DICOM.md) */
  char *series;                    /* SeriesInstanceUID to take from a DICOM folder of several series */
  char *out;                       /* output folder (created when missing) */
  char *t1map;                     /* pre-contrast T1 map (s or ms, detected) */
  char *vfa[LUMEN_PIPE_MAX_FILES]; /* VFA series to compute T1 from (dce), or T1 inputs (t1) */
  int n_vfa;
  char *mask;                      /* tissue mask (> 0 = fit) */
  char *b1;                        /* B1 map (flip-angle scale; percent detected) */
  char *aif;                       /* "auto" (default), parker|georgiou|weinmann|fritz-hansen,
                                      roi:FILE, fitted:FILE (biexponential fit of the ROI mean),
                                      file:FILE (time s, conc mM) */
  char *prefix;                    /* output prefix; NULL = BIDS entities of the input or "lumen" */
  char *models;                    /* comma list, default "tofts" */
  char *backend;                   /* fit backend request, default "auto" */
  char *select;                    /* per-voxel model selection: NULL/"none" or "aic" */
  char *method;                    /* t1: vfa, vfa-linear, vfa-2pt, ir, sr */
  char *config_path;               /* recorded in the run log */
  char *command_line;              /* the whole command line, recorded in the run log (may be NULL) */
  lumen_pipe_input_type input_type;
  /* acquisition (NaN = from the sidecar) */
  double flip_angle_deg;           /* DCE flip angle */
  double tr_s;                     /* repetition time */
  double dt_s;                     /* frame interval (NaN: sidecar frame times, else pixdim[4]) */
  double flip_angles_deg[LUMEN_PIPE_MAX_FILES]; int n_flip_angles;  /* t1 / vfa per input */
  double times_s[64]; int n_times; /* t1 ir/sr: inversion / recovery times per input frame */
  /* stage A */
  double relaxivity;               /* r1, 1/(mM s); NaN = sidecar "ContrastAgentRelaxivity" or config, else error */
  double hematocrit;               /* default 0.45 */
  double blood_t1_s;               /* default 1.44 s (blood T1 for ROI AIFs) */
  /* where relaxivity, hematocrit and blood_t1_s were set ("--hematocrit", "cfg.txt:3"), filled by
     lumen_pipe_config_set; "" = not set there (the default; for the relaxivity, the sidecar or
     headers): the run log's *_source entries */
  char relaxivity_source[96], hematocrit_source[96], blood_t1_source[96];
  double t1_default_s;             /* T1 when no map is given (NaN: a map is required) */
  int baseline;                    /* baseline end frame (exclusive); 0 = detect */
  int baseline_start;              /* first baseline frame; -1 = 1 when baseline >= 3, else 0 */
  double max_invalid_fraction;     /* voxels with more flagged samples are not fitted; 0.1 */
  double injection_time_s;         /* NaN = detected bolus arrival */
  /* stage D */
  lumen_fit_bounds_preset bounds_preset; /* default bounds: physical (default) or rocketship */
  int allow_failures;              /* 1: more than half the voxels failing is not an error (exit 0) */
  double tolerance;                /* 1e-6 */
  int max_iterations;              /* 200 */
  int force_cpu;
  int fit_delay;
  lumen_fit_conv conv;
  lumen_fit_precision precision;
  /* per model and parameter overrides: NaN = default; index [model][fit parameter] */
  double start[LUMEN_MODEL_COUNT][LUMEN_FIT_MAX_PARAMS];
  double lo[LUMEN_MODEL_COUNT][LUMEN_FIT_MAX_PARAMS];
  double hi[LUMEN_MODEL_COUNT][LUMEN_FIT_MAX_PARAMS];
  double fxr_fw;                   /* recorded; lumen's FXR uses fw = 0.8 */
  int write_ci;                    /* 1: CI maps (default 1) */
  int save_conc;                   /* 1: write the concentration series */
  int report;                      /* 1: report.html (default 1) */
  /* run */
  int overwrite;
  int quiet;
  int threads;
  int compress_level;              /* gzip level of the maps, default 1 (fast) */
  int resume;                      /* dce: continue a killed run from its stage D checkpoints (implies overwrite) */
  int chunk_voxels;                /* dce: curves per stage D checkpoint chunk; 0 = 65536 */
  lumen_pipe_fit_fn fit_executor;  /* dce stage D executor (NULL: fit here); not owned */
  void *fit_executor_user;
} lumen_pipe_config;

LUMEN_API void lumen_pipe_config_init(lumen_pipe_config *cfg);
LUMEN_API void lumen_pipe_config_clear(lumen_pipe_config *cfg);

/* Sets one key (the long option name without "--", '-' and '_' alike, e.g. "blood-t1", or a
   ROCKETSHIP dce_preferences.txt key). *known (may be NULL) = 0 for an unknown key, which is
   then ignored with LUMEN_OK; a bad value is LUMEN_ERR_INVALID_ARGUMENT naming key and value.
   where names the source in messages ("--relaxivity", "cfg.txt:12"). */
LUMEN_API lumen_status lumen_pipe_config_set(lumen_ctx *ctx, lumen_pipe_config *cfg, const char *key, const char *value,
                                   const char *where, int *known);
/* Reads a config file of `key = value` lines ('#' and '%' comments, blank lines; ROCKETSHIP's
   dce_preferences.txt format). Keys it does not understand are logged as warnings. Values set in
   the file are overridden by later lumen_pipe_config_set calls (command line after file). */
LUMEN_API lumen_status lumen_pipe_config_read(lumen_ctx *ctx, lumen_pipe_config *cfg, const char *path);
/* Checks the plausibility of the acquisition values in cfg where a unit is easily confused (a TR
   in ms given as seconds, a flip angle in radians, a frame interval in ms, a relaxivity per ms,
   a T1 or blood T1 in ms, a hematocrit in percent): LUMEN_ERR_INVALID_ARGUMENT with a message
   naming the option, the value, the expected range and the likely mistake. command: "dce" or "t1"
   (t1 --method ir/sr allows TRs up to 30 s). The pipelines call it first; front ends call it
   after parsing to report a usage error. Values read from sidecars and headers get the same
   checks inside the pipelines (as data errors naming the file and the field).
   It also checks every other option before anything is read or written (issue 15): the prefix
   (a file-name part: not empty, no '/', not starting with '.', no control characters, UTF-8),
   the models, the t1 method, the AIF name, the baseline range, and the fit options of every
   model the run fits, by building a test fit plan (backend name, bounds vs starts, ...). */
LUMEN_API lumen_status lumen_pipe_config_check(lumen_ctx *ctx, const lumen_pipe_config *cfg, const char *command);
/* Records the command line (argv[0..argc), shell-quoted, space-separated) for the run log. */
LUMEN_API lumen_status lumen_pipe_config_set_command_line(lumen_ctx *ctx, lumen_pipe_config *cfg, int argc,
                                                const char *const *argv);

/* Per-model stage D summary (also in the run log). */
typedef struct lumen_pipe_model_summary {
  lumen_model model;
  char backend_requested[LUMEN_FIT_NAME_MAX];
  char backend_selected[LUMEN_FIT_NAME_MAX];
  char backend_used[LUMEN_FIT_NAME_MAX];
  char backend_reason[LUMEN_FIT_REASON_MAX];
  int64_t fitted, converged, failed;
  int64_t at_bound;                /* converged on a bound (values kept, state at_bound) */
  double seconds, fits_per_s;
} lumen_pipe_model_summary;

typedef struct lumen_pipe_summary {
  char prefix[256];
  char runlog[LUMEN_PIPE_PATH_MAX];
  char report[LUMEN_PIPE_PATH_MAX];
  int64_t voxels, masked;
  double seconds_read, seconds_a, seconds_b, seconds_d, seconds_write, seconds_total;
  int n_models;
  lumen_pipe_model_summary models[LUMEN_MODEL_COUNT];
  char aif_method[128];
  int aif_fallback;                /* 1: --aif auto found no usable vessel and used a population AIF */
  int n_outputs;
  /* 1 when more than half of the fitted voxels of a model (or of the T1 fit) failed: the maps
     are written, but a front end must not report success unless cfg->allow_failures (the CLI
     exits with 3); unreliable_why says which model and how many. */
  int unreliable;
  char unreliable_why[512];
} lumen_pipe_summary;

/* Runs `lumen dce` (stages A, B, D, outputs, run log, report). summary may be NULL. */
LUMEN_API lumen_status lumen_pipeline_dce(lumen_ctx *ctx, const lumen_pipe_config *cfg, lumen_pipe_summary *summary);
/* Runs `lumen t1` (cfg->method, cfg->vfa[] as inputs, flip angles / times from sidecars or cfg). */
LUMEN_API lumen_status lumen_pipeline_t1(lumen_ctx *ctx, const lumen_pipe_config *cfg, lumen_pipe_summary *summary);

/* The embedded synthetic phantom (`lumen demo`): writes DIR/sub-demo_dce.nii.gz (+ sidecar),
   DIR/sub-demo_T1map.nii.gz, DIR/sub-demo_mask.nii.gz, runs lumen_pipeline_dce on them (tofts,
   etofts, Parker AIF with the bolus arrival from the data), and prints a truth-versus-estimate
   table to out (may be NULL). backend may be NULL (auto). */
LUMEN_API lumen_status lumen_pipeline_demo(lumen_ctx *ctx, const char *out_dir, int overwrite, const char *backend,
                                 FILE *out, lumen_pipe_summary *summary);

/* ---- helpers (public for tests and bindings) */

/* XXH3 64-bit hash (xxHash) of a file's bytes, as 16 hex digits (the run log's checksum). */
LUMEN_API lumen_status lumen_pipe_checksum_file(lumen_ctx *ctx, const char *path, char hex[17]);
/* Lin's concordance correlation coefficient of n pairs. */
LUMEN_API double lumen_pipe_ccc(const double *a, const double *b, int64_t n);
/* Bolus arrival: the index of the last frame before the mean curve y (n frames) rises above its
   baseline (frames [b0, b1)) by max(4 SD, 2 % of its peak rise); -1 when it never does. */
LUMEN_API int64_t lumen_pipe_detect_arrival(const double *y, int64_t n, int64_t b0, int64_t b1);
/* ROCKETSHIP-style biexponential AIF fitted to (t in min, c): zero before t_start, a linear
   ramp to A + B at the peak time t0, then A e^{-c (t - t0)} + B e^{-d (t - t0)}. Writes the
   model evaluated at t into fitted; params (may be NULL) = {A, B, c, d, t0, t_start}. */
LUMEN_API lumen_status lumen_pipe_fit_biexp_aif(lumen_ctx *ctx, int64_t n, const double *t, const double *c, double *fitted,
                                      double params[6]);

#ifdef __cplusplus
}
#endif
#endif
