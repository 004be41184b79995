/* A run's lifetime: setting it up (output folder, lock, prefix), its geometry, freeing it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pipeline/checkpoint.h"
#include "pipeline/pipe_outputs.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_strbuf.h"
#include "pipeline/pipe_util.h"

lumen_status pipe_setup_run(lumen_ctx *ctx, const lumen_pipe_config *cfg, pipe_run *run, const char *command,
                              const char *prefix_src, lumen_pipe_summary *sum) {
  memset(run, 0, sizeof *run);
  run->ctx = ctx;
  run->cfg = cfg;
  run->command = command;
  run->t_start = pipe_now();
  run->sum = sum;
  run->lock_fd = -1;
  if (!cfg->out) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "no output folder: give --out DIR");
  snprintf(run->out, sizeof run->out, "%s", cfg->out);
  if (cfg->prefix) snprintf(run->prefix, sizeof run->prefix, "%s", cfg->prefix);
  else pipe_prefix_from(prefix_src, run->prefix, sizeof run->prefix);
  if (sum) snprintf(sum->prefix, sizeof sum->prefix, "%s", run->prefix);
  lumen_status st = pipe_mkdir_p(ctx, run->out);
  if (st != LUMEN_OK) return st;
  if (access(run->out, W_OK | X_OK) != 0)
    return lumen_fail(ctx, LUMEN_ERR_IO, "output folder '%s' is not writable: %s", run->out, strerror(errno));
  /* one run at a time in a folder: two would mix their maps under one run log */
  st = pipe_lock_out(run);
  if (st != LUMEN_OK) return st;
  char name[300];
  snprintf(name, sizeof name, "%s_runlog.json", run->prefix);
  st = pipe_check_overwrite(run, name);
  if (st == LUMEN_OK) st = pipe_check_overwrite(run, "report.html");
  if (cfg->threads > 0) lumen_ctx_set_threads(ctx, cfg->threads);
  if (st == LUMEN_OK && cfg->resume) pipe_checkpoint_clean_tmp(run);
  return st;
}

void pipe_set_geometry(pipe_run *run, const lumen_image *im, const lumen_nifti_info *info) {
  run->nx = lumen_image_dim(im, 0);
  run->ny = lumen_image_dim(im, 1);
  run->nz = lumen_image_dim(im, 2);
  run->nvox = run->nx * run->ny * run->nz;
  lumen_image_get_affine(im, run->affine);
  lumen_image_get_spacing(im, run->spacing, 3);
  run->sform_code = info->sform_code;
  run->qform_code = info->qform_code;
}

void pipe_run_free(pipe_run *run) {
  pipe_unlock_out(run);
  free(run->mask);
  run->mask = NULL;
  pipe_sb_free(&run->stages);
  pipe_sb_free(&run->text);
  pipe_sb_free(&run->aif_json);
  pipe_sb_free(&run->warnings);
  pipe_sb_free(&run->aif_svg);
  pipe_sb_free(&run->curves_svg);
}
