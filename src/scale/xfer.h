/* Staging for a pipelining device worker of an image batch (lumen_dist_stages' begin / end /
   finish, docs/SCALE.md): two pinned input buffers and two pinned output buffers (slots 0 and 1)
   and the transfer primitives of a device. The primitives are a table so that the slot logic
   runs without a GPU: lumen_dist_xfer_cuda() is the CUDA one (src/filter/xfer_iface.h), the
   tests pass a fake device whose copies happen only when they are waited for. */
#ifndef LUMEN_DIST_XFER_H
#define LUMEN_DIST_XFER_H

#include <stddef.h>
#include "core/internal.h"

typedef struct lumen_dist_xfer_ops {
  lumen_status (*create)(lumen_ctx *ctx, int device, void **state);
  void (*destroy)(void *state);
  lumen_status (*host_alloc)(lumen_ctx *ctx, size_t bytes, void **out); /* pinned */
  void (*host_free)(void *ptr);
  lumen_status (*alloc)(lumen_ctx *ctx, void *state, size_t bytes, void **dev);
  void (*free)(void *state, void *dev); /* after the op enqueued so far */
  lumen_status (*h2d)(lumen_ctx *ctx, void *state, int slot, void *dev, const void *pinned, size_t bytes);
  lumen_status (*wait_h2d)(lumen_ctx *ctx, void *state, int slot);
  lumen_status (*before_op)(lumen_ctx *ctx, void *state, int slot);
  lumen_status (*d2h)(lumen_ctx *ctx, void *state, int slot, void *pinned, const void *dev, size_t bytes);
  lumen_status (*wait_d2h)(lumen_ctx *ctx, void *state, int slot);
} lumen_dist_xfer_ops;

const lumen_dist_xfer_ops *lumen_dist_xfer_cuda(void);

typedef struct lumen_dist_xfer lumen_dist_xfer;

/* Creates the device's streams and the four pinned buffers (cap_in bytes for each input slot,
   cap_out for each output slot). */
lumen_status lumen_dist_xfer_open(lumen_ctx *ctx, const lumen_dist_xfer_ops *ops, int device, size_t cap_in,
                                  size_t cap_out, lumen_dist_xfer **out);
/* Pinned bytes held: 2 x (cap_in + cap_out). */
int64_t lumen_dist_xfer_pinned(const lumen_dist_xfer *x);
/* Starts moving bytes of host memory to new device memory through input slot `slot`: waits for
   the slot's previous upload, copies into its pinned buffer, enqueues the upload. *dev = NULL
   with LUMEN_OK when the bytes exceed the slot or the device has no memory for them: the
   caller keeps the host copy (the op stages it itself, or falls back to the CPU). */
lumen_status lumen_dist_xfer_upload(lumen_ctx *ctx, lumen_dist_xfer *x, int slot, const void *host, size_t bytes,
                                    void **dev);
/* Orders the op after the slot's upload (the host does not wait). */
lumen_status lumen_dist_xfer_ready(lumen_ctx *ctx, lumen_dist_xfer *x, int slot);
/* Frees uploaded device memory after the op (stream-ordered). */
void lumen_dist_xfer_release(lumen_dist_xfer *x, void *dev);
/* Frees uploaded device memory of an item that will not run: waits for the slot's upload. */
void lumen_dist_xfer_abandon(lumen_dist_xfer *x, int slot, void *dev);
/* After the op: enqueues dev -> output slot `slot`. *queued = 0 (LUMEN_OK) when the bytes
   exceed the slot: the caller copies synchronously. */
lumen_status lumen_dist_xfer_download(lumen_ctx *ctx, lumen_dist_xfer *x, int slot, const void *dev, size_t bytes,
                                      int *queued);
/* Waits for the slot's download and copies its bytes into host memory. */
lumen_status lumen_dist_xfer_collect(lumen_ctx *ctx, lumen_dist_xfer *x, int slot, void *host, size_t bytes);
void lumen_dist_xfer_close(lumen_dist_xfer *x);

#endif
