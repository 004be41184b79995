/* Stage "maps" of `lumen dce`: the convert stage's maps, {prefix}_param-ninvalid.nii.gz (flagged
   samples per voxel) and, with --save-conc, {prefix}_desc-conc_dce.nii.gz (the concentration
   series, NaN outside the mask). They are written only after the aif stage has read its inputs
   (AIF file, ROI), so that a bad input leaves nothing under the final names (docs/RELIABILITY.md).
   The fitted models' maps are written by the fit stage, model by model (model_maps.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/dce_stages.h"
#include "pipeline/pipe_maps.h"
#include "pipeline/pipe_outputs.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_util.h"

/* maps (dce_stages.h) */
lumen_status dce_stage_maps(pipe_run *run, dce_job *j) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  lumen_status st = LUMEN_OK;
  /* Stage A's maps are written only now, after stage B has read its inputs (AIF file, ROI), so
     that a bad input leaves nothing under the final names (docs/RELIABILITY.md). */
  if (st == LUMEN_OK) {
    double tw = pipe_now();
    j->ninv_map = malloc(sizeof(float) * (size_t)run->nvox);
    if (!j->ninv_map) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory");
    else {
      for (int64_t v = 0; v < run->nvox; ++v) j->ninv_map[v] = NAN;
      for (int64_t k = 0; k < j->nlist; ++k) j->ninv_map[j->list[k]] = (float)j->ninv[k];
      char name[300];
      snprintf(name, sizeof name, "%s_param-ninvalid.nii.gz", run->prefix);
      st = pipe_write_map(run, &(pipe_map_desc){.name = name, .data = j->ninv_map, .param = "ninvalid", .unit = "samples",
                                                .model = "", .backend_used = "",
                                                .description = "flagged (out-of-range or non-finite) concentration "
                                                               "samples per voxel"});
    }
    if (st == LUMEN_OK && cfg->save_conc) {
      int64_t dims[4] = {run->nx, run->ny, run->nz, j->nt};
      lumen_image *ci = NULL;
      st = lumen_image_create(ctx, 4, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &ci);
      if (st == LUMEN_OK) {
        float *cd = lumen_image_data(ci);
        const float *c = j->curves.base; /* frame-major, as the image; the listed voxels are the masked ones */
        for (int64_t i = 0; i < j->nt; ++i)
          for (int64_t v = 0; v < run->nvox; ++v) cd[i * run->nvox + v] = run->mask[v] ? c[i * run->nvox + v] : NAN;
        lumen_image_set_affine(ctx, ci, run->affine);
        double spc[4] = {run->spacing[0], run->spacing[1], run->spacing[2], j->nt > 1 ? (j->t_min[1] - j->t_min[0]) * 60 : 1};
        lumen_image_set_spacing(ctx, ci, spc, 4);
        char name[300], path[LUMEN_PIPE_PATH_MAX];
        snprintf(name, sizeof name, "%s_desc-conc_dce.nii.gz", run->prefix);
        pipe_join(path, sizeof path, run->out, name);
        lumen_nifti_write_opts wo;
        memset(&wo, 0, sizeof wo);
        wo.overwrite = cfg->overwrite;
        wo.intent_name = "conc_mM";
        wo.compress_level = cfg->compress_level;
        st = pipe_before_write(run);
        if (st == LUMEN_OK) st = lumen_nifti_write(ctx, path, ci, &wo);
        if (st == LUMEN_OK) pipe_record_output(run, name);
      }
      lumen_image_free(ci);
    }
    j->write_s += pipe_now() - tw;
  }
  return st;
}
