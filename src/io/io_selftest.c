/* NIfTI round trip through nifti_clib, used by `lumen backends`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <nifti2_io.h>
#include "io/io_internal.h"
#include "lumen/io.h"

lumen_status lumen_io_selftest(lumen_ctx *ctx, char *detail, size_t detail_size) {
  LUMEN_REQUIRE_NOT_NULL(ctx, detail);
  char dir[] = "/tmp/lumen-io-XXXXXX";
  if (!mkdtemp(dir)) {
    snprintf(detail, detail_size, "cannot create a temporary folder under /tmp");
    return lumen_fail(ctx, LUMEN_ERR_IO, "%s", detail);
  }
  char prefix[64], path[80];
  snprintf(prefix, sizeof prefix, "%s/probe", dir);
  snprintf(path, sizeof path, "%s/probe.nii.gz", dir);
  const int64_t dims[8] = {3, 4, 3, 2, 1, 1, 1, 1};
  nifti_set_debug_level(0);
  nifti_image *out = nifti_make_new_nim(dims, NIFTI_TYPE_FLOAT32, 1);
  lumen_status s = LUMEN_OK;
  if (!out) {
    snprintf(detail, detail_size, "nifti_make_new_nim failed");
    s = LUMEN_ERR_IO;
  } else {
    float *v = out->data;
    for (int i = 0; i < 24; i++) v[i] = 0.25f * (float)i - 1.0f;
    nifti_set_filenames(out, path, 0, 1);
    nifti_image_write(out);
    /* nifti_clib opens the path itself: only hand it a regular file (a FIFO would block) */
    nifti_image *in = lumen_io_is_regular_file(path) ? nifti_image_read(path, 1) : NULL;
    if (!in) {
      snprintf(detail, detail_size, "nifti_clib could not read back %s", path);
      s = LUMEN_ERR_IO;
    } else {
      int same = in->nx == 4 && in->ny == 3 && in->nz == 2 && in->datatype == NIFTI_TYPE_FLOAT32 &&
                 memcmp(in->data, out->data, 24 * sizeof(float)) == 0;
      if (same)
        snprintf(detail, detail_size, "nifti_clib wrote and read back a 4x3x2 float32 .nii.gz");
      else
        snprintf(detail, detail_size, "nifti_clib read back different dimensions or voxels");
      if (!same) s = LUMEN_ERR_IO;
      nifti_image_free(in);
    }
    nifti_image_free(out);
  }
  unlink(path);
  rmdir(dir);
  if (s != LUMEN_OK) return lumen_fail(ctx, s, "NIfTI self-test: %s", detail);
  return LUMEN_OK;
}
