/* One NIfTI volume of a run folder as `lumen view` reads it: a lumen-written .nii.gz is reached
   member by member (io/gz_index.h: a voxel's 80 frames of a 670 MB concentration series cost a
   few milliseconds), any other file is read whole on first use. Not thread-safe (view_run's mutex). */
#ifndef LUMEN_VIEW_VOLUME_H
#define LUMEN_VIEW_VOLUME_H
#include <stdint.h>
#include "io/gz_index.h"
#include "lumen/lumen.h"

typedef struct view_volume {
  char *path;              /* DIR/FILE (malloc) */
  int64_t count;           /* float32 values the run's grid gives it (nvox or nvox x nt) */
  size_t cache_bytes;      /* inflated members kept */
  int opened;              /* 1 ready, -1 failed (the reason went to the context), 0 not tried */
  lumen_gz_index *gz;      /* members on demand, or */
  float *data;             /* the whole volume */
  int64_t vox_offset;
} view_volume;

/* LUMEN_ERR_OUT_OF_MEMORY when the path cannot be kept */
lumen_status view_volume_init(view_volume *v, const char *dir, const char *file, int64_t count, size_t cache_bytes);
/* Reads the header and, for lumen's members, their index (done by the first read otherwise).
   whole_ok 0: a file that would be read whole is left for the first read (LUMEN_ERR_UNSUPPORTED). */
lumen_status view_volume_open(lumen_ctx *ctx, view_volume *v, const int64_t dims[4], int whole_ok);
/* values [first, first + n) into dst; LUMEN_ERR_* with the file named on ctx */
lumen_status view_volume_read(lumen_ctx *ctx, view_volume *v, const int64_t dims[4], int64_t first, int64_t n, float *dst);
void view_volume_free(view_volume *v);

#endif
