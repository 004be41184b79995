/* The asynchronous transfer calls of src/filter/xfer_iface.h in a build without the CUDA
   kernels: every call says LUMEN_ERR_NOT_BUILT, so a batch worker copies as before. */
#include "filter/xfer_iface.h"

#if !defined(LUMEN_FILTER_CUDA_KERNELS)
static lumen_status not_built(lumen_ctx *ctx) {
  return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT, "asynchronous CUDA transfers: this build has no CUDA");
}
/* not_built for the calls that take a transfer and a slot only. */
static lumen_status no_cuda(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot) {
  (void)x, (void)slot;
  return not_built(ctx);
}
lumen_status lumen_cudai_xfer_create(lumen_ctx *ctx, int device, lumen_cudai_xfer **out) {
  (void)device;
  if (out) *out = NULL;
  return not_built(ctx);
}
void lumen_cudai_xfer_destroy(lumen_cudai_xfer *x) { (void)x; }
lumen_status lumen_cudai_xfer_alloc(lumen_ctx *ctx, lumen_cudai_xfer *x, size_t bytes, void **dev) {
  (void)x, (void)bytes;
  if (dev) *dev = NULL;
  return not_built(ctx);
}
void lumen_cudai_xfer_free(lumen_cudai_xfer *x, void *dev) { (void)x, (void)dev; }
lumen_status lumen_cudai_xfer_h2d(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot, void *dev, const void *pinned,
                                  size_t bytes) {
  (void)x, (void)slot, (void)dev, (void)pinned, (void)bytes;
  return not_built(ctx);
}
lumen_status lumen_cudai_xfer_wait_h2d(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot) { return no_cuda(ctx, x, slot); }
lumen_status lumen_cudai_xfer_before_op(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot) { return no_cuda(ctx, x, slot); }
lumen_status lumen_cudai_xfer_d2h(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot, void *pinned, const void *dev,
                                  size_t bytes) {
  (void)x, (void)slot, (void)pinned, (void)dev, (void)bytes;
  return not_built(ctx);
}
lumen_status lumen_cudai_xfer_wait_d2h(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot) { return no_cuda(ctx, x, slot); }
#else
typedef int lumen_xfer_stub_unused; /* ISO C: no empty translation unit */
#endif
