/* Stage D checkpoints of lumen dce (docs/RELIABILITY.md "Resume"): the fit of each model runs in
   chunks of cfg->chunk_voxels curves; every completed chunk is appended, with a checksum, to
   OUT/.PREFIX_model-MODEL.ckpt and fsynced. With cfg->resume the chunks already in that file
   (same inputs and options: a fingerprint of the curves, AIF, times and fit options) are loaded
   instead of refitted, so a killed run continues from its last completed chunk; the per-voxel
   fits are independent, so the maps are byte for byte those of an uninterrupted run. The files
   are removed once the run log (written last) exists. */
#ifndef LUMEN_PIPE_CHECKPOINT_H
#define LUMEN_PIPE_CHECKPOINT_H

#include <stdint.h>
#include "lumen/fit.h"
#include "pipeline/pipe_conc.h"
#include "pipeline/pipe_run.h"

/* Default curves per chunk (cfg->chunk_voxels = 0). */
#define PIPE_CHUNK_DEFAULT 65536

/* What pipe_fit_chunked fits: nlist curves of nt samples, data (nlist x nt), or when data is NULL
   those of src, read where they lie (lumen_fit_execute_series); the frame times and the AIF are
   part of the checkpoint's fingerprint. */
typedef struct pipe_fit_job {
  const lumen_fit_plan *plan;
  const lumen_fit_options *o; /* the options the plan was made from */
  int64_t nlist, nt;
  const float *data;
  const pipe_curves *src;
  const float *consts;        /* nlist x LUMEN_FIT_NCONSTS, or NULL */
  const double *t_min, *cp;
} pipe_fit_job;
/* lumen_fit_execute over the job's curves in chunks, with checkpoints (see above). res has its
   arrays allocated by the caller as for lumen_fit_execute. */
lumen_status pipe_fit_chunked(pipe_run *run, const pipe_fit_job *job, lumen_fit_results *res);
/* Refuses, before anything is written, a checkpoint name of these models that holds anything but
   a regular file (a planted symbolic link, FIFO, folder...): it is never followed or replaced. */
lumen_status pipe_checkpoint_check(pipe_run *run, const lumen_model *models, int n);
/* Removes the checkpoint files of a finished run. */
void pipe_checkpoint_remove(pipe_run *run, const lumen_model *models, int n);
/* --resume: removes the temporary files (.NAME.tmp-PID-N) that killed runs left in OUT and
   OUT/figures (only those of processes that no longer exist). */
void pipe_checkpoint_clean_tmp(pipe_run *run);

#endif
