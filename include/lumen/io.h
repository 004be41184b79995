/* lumen: file input and output (NIfTI through nifti_clib, JSON sidecars through cJSON).
   Lives in the separate library lumen_io so the core builds without these packages. */
#ifndef LUMEN_IO_H
#define LUMEN_IO_H

#include <stddef.h>
#include "lumen/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes a small NIfTI-1 file (gzip-compressed) to a temporary folder with nifti_clib, reads
   it back and compares dimensions and voxels. LUMEN_OK when it all matches; detail describes
   what was done or what failed. */
lumen_status lumen_io_selftest(lumen_ctx *ctx, char *detail, size_t detail_size);

#ifdef __cplusplus
}
#endif
#endif
