/* One pipeline run (lumen dce, lumen t1, the demo): its configuration, geometry and mask, the
   inputs read and outputs written (for the run log), the run log's and report's text being built,
   the warnings. Set up and freed in run_setup.c; warnings in run_outputs.c and judge.c. */
#ifndef LUMEN_PIPE_RUN_H
#define LUMEN_PIPE_RUN_H

#include <stdint.h>
#include "core/internal.h"
#include "lumen/io.h"
#include "lumen/pipeline.h"
#include "pipeline/pipe_strbuf.h"

#define PIPE_MAX_OUTPUTS 256
#define PIPE_HIST_BINS 48
#define PIPE_MAX_INPUTS 48

typedef struct pipe_output {
  char path[LUMEN_PIPE_PATH_MAX];
  char name[256];          /* file name inside out */
  char param[32], unit[32], model[32];
  char png[320];           /* the map's figure (figures/...), "" when none */
  double lo, hi, median;   /* display window and median inside the mask */
  int64_t n_finite;
  int categorical;         /* state and best-model maps: values are categories, not a scale */
  int has_hist;            /* hist holds the map's histogram (report.html) */
  int64_t hist[PIPE_HIST_BINS]; /* finite values in the mask: bins over [lo, hi], or category counts */
  int64_t n_below, n_above;/* finite values in the mask outside the window */
  int window_converged;    /* the window is that of the converged voxels (pipe_map_stats) */
  int64_t n_at_bound;      /* voxels at a bound (hatched in the figure) */
  int is_map;
  char checksum[17];
} pipe_output;

typedef struct pipe_input {
  char role[32];
  char path[LUMEN_PIPE_PATH_MAX];
  char checksum[17];
} pipe_input;

typedef struct pipe_run {
  lumen_ctx *ctx;
  const lumen_pipe_config *cfg;
  const char *command;     /* "dce", "t1" */
  char out[LUMEN_PIPE_PATH_MAX];
  char prefix[256];
  int64_t nx, ny, nz, nvox;
  double affine[16], spacing[4];
  int sform_code, qform_code;
  uint8_t *mask;           /* nvox, 1 = inside (owned) */
  int64_t n_mask;
  pipe_output outputs[PIPE_MAX_OUTPUTS];
  int n_outputs;
  pipe_input inputs[PIPE_MAX_INPUTS];
  int n_inputs;
  pipe_sb stages;          /* JSON members of "stages" (without braces) */
  pipe_sb text;            /* readable summary lines */
  pipe_sb aif_json;        /* AIF curve summary for the report */
  pipe_sb warnings;        /* the run's warnings, one line each ('\n'-terminated; run log, report) */
  char aif_png[320];
  char aif_voxels_png[320]; /* the AIF's voxels over the baseline image (figures/...), "" when none */
  char aif_caption[512];
  pipe_sb aif_svg;         /* the AIF plot for report.html */
  pipe_sb curves_svg;      /* fitted-curve plots for report.html (curves.c) */
  double t_start;
  lumen_pipe_summary *sum;
  int locked;              /* lock_fd holds OUT/.lumen.lock (outdir.c) */
  int lock_fd;
  int old_runlog_removed;  /* pipe_before_write has run */
  char backend_reason_said[512]; /* the last stage line's backend reason: the next says "as above" */
} pipe_run;

/* Starts a run (run_setup.c): the output folder (created, writable, locked), the prefix (from
   cfg->prefix, else prefix_src's BIDS entities), the overwrite rule for the run log and report. */
lumen_status pipe_setup_run(lumen_ctx *ctx, const lumen_pipe_config *cfg, pipe_run *run, const char *command,
                            const char *prefix_src, lumen_pipe_summary *sum);
/* The run's grid (dims, affine, spacing, sform/qform codes) from its reference image. */
void pipe_set_geometry(pipe_run *run, const lumen_image *im, const lumen_nifti_info *info);
void pipe_run_free(pipe_run *run);

/* A warning of the run: logged (LUMEN_LOG_WARNING) and listed in the run log and the report. */
void pipe_warn(pipe_run *run, const char *fmt, ...) LUMEN_PRINTF(2, 3);
/* Iterates the run's warnings: copies the line at w (start: run->warnings.s, may be NULL) into line
   and returns the next position, or NULL when there is none. */
const char *pipe_next_warning(const char *w, char *line, size_t size);
/* Marks the run's results unreliable (exit 3, the report's banner, the run log's "unreliable") with why,
   and warns; the first reason is kept (judge.c). */
void pipe_mark_unreliable(pipe_run *run, const char *why);

#endif
