/* Stand-in for the CUDA runtime interface in builds without CUDA (-DLUMEN_CUDA=OFF or no nvcc). */
#include "core/cuda_iface.h"

#define NOT_BUILT(ctx, what) \
  lumen_fail((ctx), LUMEN_ERR_NOT_BUILT, "%s: this lumen was built without CUDA (reconfigure with nvcc present)", what)

int lumen_cudai_built(void) { return 0; }

lumen_status lumen_cudai_probe(lumen_ctx *ctx, int *count) {
  if (count) *count = 0;
  return NOT_BUILT(ctx, "CUDA probe");
}

lumen_status lumen_cudai_versions(lumen_ctx *ctx, int *driver, int *runtime) {
  if (driver) *driver = 0;
  if (runtime) *runtime = 0;
  return NOT_BUILT(ctx, "CUDA versions");
}

lumen_status lumen_cudai_device_info(lumen_ctx *ctx, int index, lumen_device_info *out) {
  (void)index;
  (void)out;
  return NOT_BUILT(ctx, "CUDA device info");
}

lumen_status lumen_cudai_malloc(lumen_ctx *ctx, int index, size_t bytes, void **out) {
  (void)index;
  (void)bytes;
  if (out) *out = NULL;
  return NOT_BUILT(ctx, "CUDA allocation");
}

void lumen_cudai_free(int index, void *ptr) {
  (void)index;
  (void)ptr;
}

lumen_status lumen_cudai_memset_zero(lumen_ctx *ctx, int index, void *ptr, size_t bytes) {
  (void)index;
  (void)ptr;
  (void)bytes;
  return NOT_BUILT(ctx, "CUDA memset");
}

lumen_status lumen_cudai_copy(lumen_ctx *ctx, void *dst, int dst_device, const void *src, int src_device,
                              size_t bytes) {
  (void)dst;
  (void)dst_device;
  (void)src;
  (void)src_device;
  (void)bytes;
  return NOT_BUILT(ctx, "CUDA copy");
}

lumen_status lumen_cudai_host_alloc(lumen_ctx *ctx, size_t bytes, void **out) {
  (void)bytes;
  if (out) *out = NULL;
  return NOT_BUILT(ctx, "pinned host allocation");
}

void lumen_cudai_host_free(void *ptr) { (void)ptr; }

lumen_status lumen_cudai_release_cache(lumen_ctx *ctx, int index) {
  (void)index;
  return NOT_BUILT(ctx, "CUDA cache release");
}
