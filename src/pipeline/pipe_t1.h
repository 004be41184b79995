/* The T1 fit shared by `lumen t1` and `lumen dce --vfa` (t1.c). */
#ifndef LUMEN_PIPE_T1_H
#define LUMEN_PIPE_T1_H

#include "pipeline/pipe_run.h"

/* Fits T1 with method over the volumes of files[0..nfiles) on the run's grid; writes the T1 maps
   when write_maps; *t1_out (when not NULL) gets the T1 map (nvox, s; owned by the caller). */
lumen_status pipe_t1_run(pipe_run *run, lumen_model method, const char *const *files, int nfiles,
                         int write_maps, float **t1_out);

#endif
