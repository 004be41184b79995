/* view_volume.h. The header is checked as lumen_nifti_read checks it; a file whose voxels need
   conversion (not float32, swapped, scaled) is read whole, where lumen_nifti_read converts. */
#include "view/view_volume.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "lumen/io.h"

lumen_status view_volume_init(view_volume *v, const char *dir, const char *file, int64_t count, size_t cache_bytes) {
  memset(v, 0, sizeof *v);
  const size_t n = strlen(dir) + strlen(file) + 2;
  v->path = malloc(n);
  if (!v->path) return LUMEN_ERR_OUT_OF_MEMORY;
  snprintf(v->path, n, "%s/%s", dir, file);
  v->count = count;
  v->cache_bytes = cache_bytes;
  return LUMEN_OK;
}

static int grid_ok(const lumen_nifti_info *info, const int64_t dims[4], int64_t count) {
  int64_t n = 1;
  for (int k = 0; k < 4; ++k) n *= info->dims[k];
  return info->dims[0] == dims[0] && info->dims[1] == dims[1] && info->dims[2] == dims[2] && n == count;
}

static lumen_status open_volume(lumen_ctx *ctx, view_volume *v, const int64_t dims[4], int whole_ok) {
  lumen_nifti_info info;
  lumen_status st = lumen_nifti_read_header(ctx, v->path, NULL, &info);
  if (st != LUMEN_OK) return st;
  if (info.stored_dtype != LUMEN_DTYPE_FLOAT32 || !grid_ok(&info, dims, v->count))
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen view: '%s' is not a float32 volume of the run's grid", v->path);
  const int raw = info.compressed && !info.swapped && (info.scl_slope == 0 || (info.scl_slope == 1 && info.scl_inter == 0));
  v->gz = raw ? lumen_gz_index_open(v->path, v->cache_bytes) : NULL;
  if (v->gz && lumen_gz_index_size(v->gz) >= (uint64_t)info.vox_offset + sizeof(float) * (uint64_t)v->count) {
    v->vox_offset = info.vox_offset;
    return LUMEN_OK;
  }
  lumen_gz_index_close(v->gz); /* another writer's gzip (one stream), or an uncompressed file */
  v->gz = NULL;
  if (!whole_ok) return LUMEN_ERR_UNSUPPORTED;
  lumen_image *im = NULL;
  st = lumen_nifti_read(ctx, v->path, NULL, &im, NULL);
  if (st != LUMEN_OK) return st;
  v->data = malloc(sizeof(float) * (size_t)v->count);
  if (v->data) memcpy(v->data, lumen_image_const_data(im), sizeof(float) * (size_t)v->count);
  lumen_image_free(im);
  return v->data ? LUMEN_OK : lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen view: out of memory reading '%s'", v->path);
}

lumen_status view_volume_open(lumen_ctx *ctx, view_volume *v, const int64_t dims[4], int whole_ok) {
  if (v->opened) return v->opened > 0 ? LUMEN_OK : LUMEN_ERR_IO;
  lumen_status st = open_volume(ctx, v, dims, whole_ok);
  if (st != LUMEN_OK && !whole_ok) return st; /* left for the first read, which reports it */
  v->opened = st == LUMEN_OK ? 1 : -1;
  return st;
}

lumen_status view_volume_read(lumen_ctx *ctx, view_volume *v, const int64_t dims[4], int64_t first, int64_t n, float *dst) {
  if (v->opened == 0) {
    lumen_status st = view_volume_open(ctx, v, dims, 1);
    if (st != LUMEN_OK) return st;
  }
  if (v->opened < 0) return lumen_fail(ctx, LUMEN_ERR_IO, "lumen view: '%s' cannot be read (see the first error)", v->path);
  if (first < 0 || n < 0 || first > v->count - n)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen view: values %lld..%lld outside '%s'", (long long)first,
                      (long long)(first + n), v->path);
  if (v->data) {
    memcpy(dst, v->data + first, sizeof(float) * (size_t)n);
    return LUMEN_OK;
  }
  int e = lumen_gz_index_read(v->gz, (uint64_t)v->vox_offset + sizeof(float) * (uint64_t)first, sizeof(float) * (size_t)n, dst);
  return e ? lumen_fail(ctx, e == ENOMEM ? LUMEN_ERR_OUT_OF_MEMORY : LUMEN_ERR_FORMAT,
                        "lumen view: '%s' is damaged or cannot be read (%s)", v->path, strerror(e))
           : LUMEN_OK;
}

void view_volume_free(view_volume *v) {
  lumen_gz_index_close(v->gz);
  free(v->data);
  free(v->path);
  memset(v, 0, sizeof *v);
}
