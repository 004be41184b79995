/* The run log (runlog.c), report.html and its figures (report.c), the fitted-curve plots
   (curves.c). */
#ifndef LUMEN_PIPE_REPORT_H
#define LUMEN_PIPE_REPORT_H

#include <stdint.h>
#include "lumen/fit.h"
#include "pipeline/pipe_run.h"

lumen_status pipe_write_runlog(pipe_run *run);
lumen_status pipe_write_report(pipe_run *run);
/* Window (2nd..98th percentile: of the converged voxels when state is given and has some, else of
   every finite value inside the mask), median, finite count and histogram of a map inside the mask. */
void pipe_map_stats(pipe_run *run, const float *data, const uint8_t *state, pipe_output *o);
/* The map's standalone figure PNG: colour montage with title, colour bar or legend; o's window and
   histogram come from pipe_map_stats, which the caller (pipe_write_map) has run. */
lumen_status pipe_render_montage(pipe_run *run, const float *data, const uint8_t *state, pipe_output *o);
struct pipe_plot;
/* A standalone line-plot PNG (figures/NAME): title, numbered axes, legend. */
lumen_status pipe_render_plot_png(pipe_run *run, const char *name, const struct pipe_plot *p);
/* figures/NAME: the slices holding any of the n voxels (up to 12), background in grey (2nd..98th
   percentile of the image), the voxels in red: which voxels made the AIF (issue 39 item 1). */
lumen_status pipe_render_voxel_overlay(pipe_run *run, const char *name, const char *title, const float *background,
                                       const int64_t *voxels, int64_t n);

/* The fitted-curve figure of one model (curves.c): measured samples and fitted model curves at
   the voxels at the 10th, 50th and 90th percentile of the headline parameter (Ktrans; T1) among
   the converged voxels, appended to run->curves_svg. Optional: out of memory skips it. */
struct pipe_curves;
typedef struct pipe_curve_in {
  lumen_model model;
  const lumen_fit_plan *plan;
  const lumen_fit_results *res;
  const int64_t *list;     /* voxel index of each fitted curve */
  int64_t nlist, nt;
  const float *data;       /* nlist x nt, the data fitted */
  const float *consts;     /* nlist x LUMEN_FIT_NCONSTS, or NULL */
  const double *x;         /* nt sample positions of the plan */
  double x_scale;          /* displayed x = x * x_scale (radians -> degrees) */
  const char *xlabel, *ylabel;
  const lumen_fit_options *dense; /* non-NULL (T1 fits of a few volumes): the model is drawn on
                                     PIPE_CURVE_DENSE points across the samples, from a plan of
                                     these options */
  const struct pipe_curves *src;  /* data NULL: the curves fitted are these */
} pipe_curve_in;
#define PIPE_CURVE_DENSE 97
void pipe_curve_figure(pipe_run *run, const pipe_curve_in *in);

#endif
