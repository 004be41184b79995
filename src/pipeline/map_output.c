/* A parameter map of a run: the NIfTI file with its intent, the JSON sidecar, the report's
   statistics and figure. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "io/io_internal.h"
#include "pipeline/pipe_internal.h"

lumen_status pipe_write_map(pipe_run *run, const char *name, const float *data, const char *param,
                            const char *unit, const char *model, const char *backend_used, const char *description,
                            int figure) {
  lumen_ctx *ctx = run->ctx;
  int64_t dims[3] = {run->nx, run->ny, run->nz};
  lumen_image *im = NULL;
  lumen_status st = pipe_before_write(run);
  if (st != LUMEN_OK) return st;
  st = lumen_image_wrap(ctx, (void *)data, 3, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), &im);
  if (st != LUMEN_OK) return st;
  lumen_image_set_affine(ctx, im, run->affine);
  lumen_image_set_spacing(ctx, im, run->spacing, 3);
  char path[LUMEN_PIPE_PATH_MAX];
  pipe_join(path, sizeof path, run->out, name);
  lumen_nifti_write_opts wo;
  memset(&wo, 0, sizeof wo);
  wo.overwrite = run->cfg->overwrite;
  wo.intent_name = param;
  wo.intent_code = LUMEN_NIFTI_INTENT_ESTIMATE;
  wo.description = description;
  wo.sform_code = run->sform_code > 0 ? run->sform_code : 1;
  wo.qform_code = run->qform_code > 0 ? run->qform_code : 1;
  wo.compress_level = run->cfg->compress_level;
  st = lumen_nifti_write(ctx, path, im, &wo);
  lumen_image_free(im);
  if (st != LUMEN_OK) return st;
  /* sidecar */
  char sname[300], spath[LUMEN_PIPE_PATH_MAX];
  lumen_sidecar_path(ctx, name, sname, sizeof sname);
  pipe_join(spath, sizeof spath, run->out, sname);
  lumen_json *j = NULL;
  st = lumen_json_create(ctx, &j);
  if (st != LUMEN_OK) return st;
  lumen_json_set_string(ctx, j, "Parameter", param);
  lumen_json_set_string(ctx, j, "Units", unit ? unit : "");
  lumen_json_set_string(ctx, j, "Model", model ? model : "");
  lumen_json_set_string(ctx, j, "Description", description ? description : "");
  lumen_json_set_string(ctx, j, "BackendUsed", backend_used ? backend_used : "");
  lumen_json_set_string(ctx, j, "SoftwareName", "lumen");
  lumen_json_set_string(ctx, j, "SoftwareVersion", lumen_version());
  lumen_json_set_string(ctx, j, "Command", run->command);
  const char *srcs[PIPE_MAX_INPUTS];
  for (int i = 0; i < run->n_inputs; ++i) srcs[i] = run->inputs[i].path;
  lumen_json_set_strings(ctx, j, "Sources", srcs, run->n_inputs);
  st = lumen_json_write(ctx, j, spath, run->cfg->overwrite);
  lumen_json_free(j);
  if (st != LUMEN_OK) return st;
  pipe_record_output(run, name);
  pipe_output *o = &run->outputs[run->n_outputs - 1];
  snprintf(o->param, sizeof o->param, "%s", param);
  snprintf(o->unit, sizeof o->unit, "%s", unit ? unit : "");
  snprintf(o->model, sizeof o->model, "%s", model ? model : "");
  o->is_map = 1;
  pipe_record_output(run, sname);
  if (run->cfg->report) pipe_map_stats(run, data, o);  /* every map's row in the report table */
  if (figure && run->cfg->report) {
    st = pipe_render_montage(run, data, o);
    if (st == LUMEN_ERR_NOT_BUILT) { lumen_ctx_clear_error(ctx); st = LUMEN_OK; }
  }
  return st;
}
