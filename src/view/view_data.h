/* What `lumen view` reads from a finished `lumen dce` output folder and the answers it gives
   (src/view/view_data.c; docs/VIEW.md). Everything is read from the folder the user names, as
   untrusted input: map names come from the folder's listing, never from a request; maps and the
   concentration series are opened on first use and read a slice or a voxel at a time
   (view_volume.h). Thread-safe (one mutex). */
#ifndef LUMEN_VIEW_DATA_H
#define LUMEN_VIEW_DATA_H
#include <pthread.h>
#include <stdint.h>
#include "lumen/lumen.h"
#include "pipeline/pipe_strbuf.h"
#include "view/view_volume.h"

#define VIEW_MAX_MAPS 512
#define VIEW_MAX_MODELS LUMEN_MODEL_COUNT
#define VIEW_MAX_FRAMES 100000

typedef struct view_map {
  char file[300];   /* PREFIX_model-M_param-P.nii.gz */
  char model[32], param[48];
  view_volume vol;  /* its nvox values */
} view_map;

typedef struct view_model {
  lumen_model id;
  char name[32];
  lumen_fit_plan *plan;          /* the model on the run's time grid and AIF (curves), NULL for auc */
  int param_map[LUMEN_FIT_MAX_PARAMS], lo_map[LUMEN_FIT_MAX_PARAMS], hi_map[LUMEN_FIT_MAX_PARAMS];
  int state_map, r2_map, aic_map, delay_map; /* indices into maps, -1 when absent */
} view_model;

typedef struct view_run {
  lumen_ctx *ctx;
  char dir[4096], prefix[256];
  int64_t nx, ny, nz, nvox, nt;
  double *t_min, *cp;            /* the AIF table's times (min) and plasma concentration */
  view_map maps[VIEW_MAX_MAPS];
  int n_maps;
  view_model models[VIEW_MAX_MODELS];
  int n_models;
  char conc_file[300];           /* PREFIX_desc-conc_dce.nii.gz, "" when the run did not save it */
  view_volume conc;              /* nt x nvox values (when conc_file is set) */
  pthread_mutex_t mu;
  pthread_t warm;                /* opens the volumes while the page loads */
  int warm_started;
  volatile int closing;
} view_run;

/* Reads the folder's run log, AIF table and map listing (not the maps), then opens the maps and
   the series on a thread of its own (their headers and member indexes: ~10,000 member headers for
   a 2.1 M-voxel series), so that the first click finds them open. LUMEN_ERR_* with a message
   naming the folder and what is missing. */
lumen_status view_open(lumen_ctx *ctx, const char *dir, view_run *run);
void view_close(view_run *run);

/* JSON answers into b; a request the run cannot answer (an unknown map, a voxel outside the image)
   is LUMEN_ERR_INVALID_ARGUMENT with the reason on run->ctx. */
lumen_status view_info_json(view_run *run, pipe_sb *b);
lumen_status view_slice_json(view_run *run, const char *map, int64_t z, pipe_sb *b);
lumen_status view_voxel_json(view_run *run, int64_t x, int64_t y, int64_t z, pipe_sb *b);
/* The rectangle [x0, x1] x [y0, y1] of slice z: its mean measured curve and, per map, the mean,
   median and quartiles of its finite values; csv: the same as a table. */
lumen_status view_roi(view_run *run, int64_t x0, int64_t y0, int64_t x1, int64_t y1, int64_t z, int csv, pipe_sb *b);

#endif
