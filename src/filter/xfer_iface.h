/* Asynchronous host <-> CUDA transfers for a device worker of an image batch (src/scale/xfer.c,
   docs/SCALE.md): per worker two non-blocking streams (uploads, downloads) and an event per
   staging slot, so that copies overlap the filter kernels, which run on the legacy default
   stream (src/cuda/filter_common.cuh). Implemented in src/cuda/runtime_iface.cu; without CUDA
   (src/filter/xfer_stub.c) every call returns LUMEN_ERR_NOT_BUILT. Slots are 0 or 1. */
#ifndef LUMEN_FILTER_XFER_IFACE_H
#define LUMEN_FILTER_XFER_IFACE_H

#include <stddef.h>
#include "core/internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lumen_cudai_xfer lumen_cudai_xfer;
lumen_status lumen_cudai_xfer_create(lumen_ctx *ctx, int device, lumen_cudai_xfer **out);
void lumen_cudai_xfer_destroy(lumen_cudai_xfer *x); /* waits for both streams */
/* Device memory from the default pool, ordered on the upload stream. */
lumen_status lumen_cudai_xfer_alloc(lumen_ctx *ctx, lumen_cudai_xfer *x, size_t bytes, void **dev);
/* Frees device memory after the work enqueued so far on the default stream (the op). */
void lumen_cudai_xfer_free(lumen_cudai_xfer *x, void *dev);
/* Enqueues pinned -> dev on the upload stream and records the slot's upload event. */
lumen_status lumen_cudai_xfer_h2d(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot, void *dev, const void *pinned,
                                  size_t bytes);
/* The host waits for the slot's last upload (its pinned buffer may then be refilled). */
lumen_status lumen_cudai_xfer_wait_h2d(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot);
/* The default stream (the op's kernels) waits for the slot's upload; the host does not. */
lumen_status lumen_cudai_xfer_before_op(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot);
/* After the op: the download stream waits for the default stream's work so far, then enqueues
   dev -> pinned and records the slot's download event. */
lumen_status lumen_cudai_xfer_d2h(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot, void *pinned, const void *dev,
                                  size_t bytes);
/* The host waits for the slot's last download. */
lumen_status lumen_cudai_xfer_wait_d2h(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot);

#ifdef __cplusplus
}
#endif
#endif
