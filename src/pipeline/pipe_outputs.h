/* The output folder of a run and the files written into it (run_outputs.c, outdir.c): the
   overwrite rule, the folder's lock, the list of outputs the run log records, text files. Maps
   have their own header (pipe_maps.h). */
#ifndef LUMEN_PIPE_OUTPUTS_H
#define LUMEN_PIPE_OUTPUTS_H

#include "pipeline/pipe_run.h"

/* Records a non-map output (TSV, PNG, JSON ...) written elsewhere. */
void pipe_record_output(pipe_run *run, const char *name);
/* Refuses when NAME exists in out without overwrite. */
lumen_status pipe_check_overwrite(pipe_run *run, const char *name);
lumen_status pipe_write_text_file(pipe_run *run, const char *name, const char *text);

/* The lock file of an output folder: one run at a time writes into a folder. */
#define PIPE_LOCK_NAME ".lumen.lock"
/* Takes the folder's lock (flock LOCK_EX|LOCK_NB on OUT/.lumen.lock, the holder's PID inside):
   refuses at once when another run holds it, naming that run's PID. */
lumen_status pipe_lock_out(pipe_run *run);
/* Releases the lock (removing the lock file while still holding it); pipe_run_free calls it. */
void pipe_unlock_out(pipe_run *run);
/* Called before each output is written: the first call removes the run log of an earlier run
   under this prefix ({prefix}_runlog.json/.txt), so that an interrupted --overwrite run never leaves
   an old run log (which marks a complete run) beside new files. */
lumen_status pipe_before_write(pipe_run *run);

#endif
