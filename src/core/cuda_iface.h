/* The narrow C interface between the core and the CUDA runtime. Implemented in the .cu files in src/cuda/
   when CUDA is built, and by src/cuda/nocuda/cuda_stub.c (every call: LUMEN_ERR_NOT_BUILT)
   otherwise, so the core never includes a CUDA header. Device indices are CUDA ordinals. */
#ifndef LUMEN_CORE_CUDA_IFACE_H
#define LUMEN_CORE_CUDA_IFACE_H

#include <stddef.h>
#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

int lumen_cudai_built(void);
/* Number of usable devices; on failure a status and a reason that names the CUDA error. */
lumen_status lumen_cudai_probe(lumen_ctx *ctx, int *count);
lumen_status lumen_cudai_versions(lumen_ctx *ctx, int *driver, int *runtime);
lumen_status lumen_cudai_device_info(lumen_ctx *ctx, int index, lumen_device_info *out);
/* Stream-ordered allocation from the device's default pool, completed before returning. */
lumen_status lumen_cudai_malloc(lumen_ctx *ctx, int index, size_t bytes, void **out);
void lumen_cudai_free(int index, void *ptr);
lumen_status lumen_cudai_memset_zero(lumen_ctx *ctx, int index, void *ptr, size_t bytes);
/* Copies between any two of host (device -1) and CUDA devices; synchronous. */
lumen_status lumen_cudai_copy(lumen_ctx *ctx, void *dst, int dst_device, const void *src, int src_device,
                              size_t bytes);
lumen_status lumen_cudai_host_alloc(lumen_ctx *ctx, size_t bytes, void **out);
void lumen_cudai_host_free(void *ptr);
/* Returns the default pool's unused memory to the driver. */
lumen_status lumen_cudai_release_cache(lumen_ctx *ctx, int index);

#ifdef __cplusplus
}
#endif
#endif
