/* lumen: images of 1 to 4 dimensions, on the host or on a CUDA device. */
#ifndef LUMEN_IMAGE_H
#define LUMEN_IMAGE_H
#include "lumen/export.h"

#include <stddef.h>
#include <stdint.h>
#include "lumen/context.h"
#include "lumen/device.h"
#include "lumen/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LUMEN_IMAGE_MAX_DIMS 4

typedef struct lumen_image lumen_image;

/* Flags for lumen_image_create. */
enum {
  LUMEN_IMAGE_ZERO   = 1u << 0,  /* fill with zero bits */
  LUMEN_IMAGE_PINNED = 1u << 1   /* host image in page-locked memory when CUDA is present
                                    (falls back to ordinary memory otherwise; see is_pinned) */
};

/* Allocates an image. dims[0] varies fastest (x, y, z, t as in NIfTI). Every dim >= 1, the
   byte size must fit in int64. Spacing defaults to 1, the affine to the identity. */
LUMEN_API lumen_status lumen_image_create(lumen_ctx *ctx, int ndim, const int64_t *dims, lumen_dtype dtype,
                                lumen_device device, unsigned flags, lumen_image **out);
/* Wraps caller memory without copying; the caller keeps ownership and must keep it alive
   (and, for a device pointer, on that device) until the image is freed. */
LUMEN_API lumen_status lumen_image_wrap(lumen_ctx *ctx, void *data, int ndim, const int64_t *dims,
                              lumen_dtype dtype, lumen_device device, lumen_image **out);
/* Deep copy on the same device, geometry included. */
LUMEN_API lumen_status lumen_image_clone(lumen_ctx *ctx, const lumen_image *src, lumen_image **out);
/* Copy onto another device (host <-> CUDA, CUDA <-> CUDA, or host -> host). */
LUMEN_API lumen_status lumen_image_to_device(lumen_ctx *ctx, const lumen_image *src, lumen_device device,
                                   lumen_image **out);
/* Copy converted to another element type (on the host: float types and integers to float32,
   float32 to float16/bfloat16 and back). */
LUMEN_API lumen_status lumen_image_convert(lumen_ctx *ctx, const lumen_image *src, lumen_dtype dtype,
                                 lumen_image **out);
LUMEN_API void lumen_image_free(lumen_image *image);  /* NULL is allowed */

LUMEN_API int          lumen_image_ndim(const lumen_image *image);
LUMEN_API int64_t      lumen_image_dim(const lumen_image *image, int axis);   /* 1 for axes >= ndim */
LUMEN_API int64_t      lumen_image_count(const lumen_image *image);           /* number of elements */
LUMEN_API int64_t      lumen_image_nbytes(const lumen_image *image);
LUMEN_API lumen_dtype  lumen_image_dtype(const lumen_image *image);
LUMEN_API lumen_device lumen_image_device(const lumen_image *image);
LUMEN_API int          lumen_image_owns_data(const lumen_image *image);
LUMEN_API int          lumen_image_is_pinned(const lumen_image *image);
LUMEN_API void        *lumen_image_data(lumen_image *image);
LUMEN_API const void  *lumen_image_const_data(const lumen_image *image);

/* Voxel spacing per axis (mm, or seconds for a time axis), as in NIfTI pixdim. */
LUMEN_API lumen_status lumen_image_set_spacing(lumen_ctx *ctx, lumen_image *image, const double *spacing, int n);
LUMEN_API lumen_status lumen_image_get_spacing(const lumen_image *image, double *spacing, int n);
/* Voxel-to-world affine (row-major 4x4, NIfTI sform/qform convention). */
LUMEN_API lumen_status lumen_image_set_affine(lumen_ctx *ctx, lumen_image *image, const double affine[16]);
LUMEN_API lumen_status lumen_image_get_affine(const lumen_image *image, double affine[16]);

/* Page-locked host memory for transfers (ordinary aligned memory when CUDA is absent or
   pinning fails; *pinned tells which). Free with lumen_host_free. */
LUMEN_API lumen_status lumen_host_alloc(lumen_ctx *ctx, size_t bytes, int want_pinned, void **out, int *pinned);
LUMEN_API void lumen_host_free(void *ptr, int pinned);

#ifdef __cplusplus
}
#endif
#endif
