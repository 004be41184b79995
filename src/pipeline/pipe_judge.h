/* Judging a fit (judge.c): voxels on a bound or failed, the run log's at_bound and bounds
   members, the state legend, results marked unreliable (exit 3). */
#ifndef LUMEN_PIPE_JUDGE_H
#define LUMEN_PIPE_JUDGE_H

#include <stddef.h>
#include <stdint.h>
#include "lumen/fit.h"
#include "pipeline/pipe_run.h"

/* "0 converged 1 max_iterations ... 7 at_bound": the state maps' description. */
void pipe_state_legend(char *buf, size_t size);
/* Appends `, "at_bound": {"PARAM": {"lower": n, "upper": m}, ...}` (fit parameters) to b and
   writes a readable summary of the parameters on a bound into text (" (ve lower 30)", or ""). */
void pipe_at_bound_json(pipe_sb *b, char *text, size_t size, lumen_model model, const lumen_fit_results *res);
/* Appends `"PARAM": [lo, hi, start], ...` for every fit parameter: the plan's effective values. */
void pipe_bounds_json(pipe_sb *b, const lumen_fit_plan *plan, lumen_model model);
/* A plasma AIF peaking below this (mM) is far below what a contrast dose gives (about 2-20 mM for
   0.05-0.2 mmol/kg): a broken vessel search or ROI, or an AIF file in another unit (issue 39 item 1). */
#define PIPE_AIF_PEAK_MIN_MM 1.0
/* One fitted model (or the T1 fit) to judge: its results and their counts. */
typedef struct pipe_judge_in {
  const char *what;        /* the model's name, "T1" */
  lumen_model model;
  const lumen_fit_results *res;
  int64_t fitted, at_bound, failed;
  const char *bound_text;  /* pipe_at_bound_json's summary */
} pipe_judge_in;
/* Judges one fitted model: a warning for voxels on a bound and for failed voxels; more than half the
   voxels failing, or more than half at the upper bound of one parameter, marks the run's results unreliable
   (summary, exit 3) with a warning. */
void pipe_judge_model(pipe_run *run, const pipe_judge_in *in);

#endif
