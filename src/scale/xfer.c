/* Pinned double buffers of a pipelining device worker (src/scale/xfer.h). */
#include <stdlib.h>
#include <string.h>
#include "scale/xfer.h"
#include "core/cuda_iface.h"
#include "filter/xfer_iface.h"

struct lumen_dist_xfer {
  const lumen_dist_xfer_ops *ops;
  void *state;
  size_t cap_in, cap_out;
  void *pin_in[2], *pin_out[2];
};

/* ------------------------------------------------------------------ the CUDA primitives */

static lumen_status cu_create(lumen_ctx *ctx, int device, void **state) {
  lumen_cudai_xfer *x = NULL;
  lumen_status s = lumen_cudai_xfer_create(ctx, device, &x);
  *state = x;
  return s;
}
static void cu_destroy(void *state) { lumen_cudai_xfer_destroy(state); }
static lumen_status cu_alloc(lumen_ctx *ctx, void *state, size_t bytes, void **dev) {
  return lumen_cudai_xfer_alloc(ctx, state, bytes, dev);
}
static void cu_free(void *state, void *dev) { lumen_cudai_xfer_free(state, dev); }
static lumen_status cu_h2d(lumen_ctx *ctx, void *state, int slot, void *dev, const void *pinned, size_t bytes) {
  return lumen_cudai_xfer_h2d(ctx, state, slot, dev, pinned, bytes);
}
static lumen_status cu_wait_h2d(lumen_ctx *ctx, void *state, int slot) {
  return lumen_cudai_xfer_wait_h2d(ctx, state, slot);
}
static lumen_status cu_before_op(lumen_ctx *ctx, void *state, int slot) {
  return lumen_cudai_xfer_before_op(ctx, state, slot);
}
static lumen_status cu_d2h(lumen_ctx *ctx, void *state, int slot, void *pinned, const void *dev, size_t bytes) {
  return lumen_cudai_xfer_d2h(ctx, state, slot, pinned, dev, bytes);
}
static lumen_status cu_wait_d2h(lumen_ctx *ctx, void *state, int slot) {
  return lumen_cudai_xfer_wait_d2h(ctx, state, slot);
}

static const lumen_dist_xfer_ops cuda_ops = {cu_create, cu_destroy, lumen_cudai_host_alloc, lumen_cudai_host_free,
                                             cu_alloc, cu_free, cu_h2d, cu_wait_h2d, cu_before_op, cu_d2h,
                                             cu_wait_d2h};

const lumen_dist_xfer_ops *lumen_dist_xfer_cuda(void) { return &cuda_ops; }

/* ------------------------------------------------------------------ the slots */

lumen_status lumen_dist_xfer_open(lumen_ctx *ctx, const lumen_dist_xfer_ops *ops, int device, size_t cap_in,
                                  size_t cap_out, lumen_dist_xfer **out) {
  *out = NULL;
  lumen_dist_xfer *x = calloc(1, sizeof *x);
  if (!x) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dist_xfer_open: out of host memory");
  x->ops = ops;
  x->cap_in = cap_in;
  x->cap_out = cap_out;
  lumen_status s = ops->create(ctx, device, &x->state);
  for (int k = 0; k < 2 && s == LUMEN_OK; k++) {
    s = ops->host_alloc(ctx, cap_in ? cap_in : 1, &x->pin_in[k]);
    if (s == LUMEN_OK) s = ops->host_alloc(ctx, cap_out ? cap_out : 1, &x->pin_out[k]);
  }
  if (s != LUMEN_OK) {
    lumen_dist_xfer_close(x);
    return s;
  }
  *out = x;
  return LUMEN_OK;
}

int64_t lumen_dist_xfer_pinned(const lumen_dist_xfer *x) {
  return x ? 2 * (int64_t)(x->cap_in + x->cap_out) : 0;
}

lumen_status lumen_dist_xfer_upload(lumen_ctx *ctx, lumen_dist_xfer *x, int slot, const void *host, size_t bytes,
                                    void **dev) {
  *dev = NULL;
  slot &= 1;
  if (bytes > x->cap_in) return LUMEN_OK;
  lumen_status s = x->ops->wait_h2d(ctx, x->state, slot); /* the slot's pinned buffer is free */
  if (s != LUMEN_OK) return s;
  void *d = NULL;
  s = x->ops->alloc(ctx, x->state, bytes, &d);
  if (s == LUMEN_ERR_DEVICE_OUT_OF_MEMORY) { /* the op's own staging decides (and falls back) */
    lumen_ctx_clear_error(ctx);
    return LUMEN_OK;
  }
  if (s != LUMEN_OK) return s;
  memcpy(x->pin_in[slot], host, bytes);
  s = x->ops->h2d(ctx, x->state, slot, d, x->pin_in[slot], bytes);
  if (s != LUMEN_OK) {
    lumen_dist_xfer_abandon(x, slot, d);
    return s;
  }
  *dev = d;
  return LUMEN_OK;
}

lumen_status lumen_dist_xfer_ready(lumen_ctx *ctx, lumen_dist_xfer *x, int slot) {
  return x->ops->before_op(ctx, x->state, slot & 1);
}

void lumen_dist_xfer_release(lumen_dist_xfer *x, void *dev) {
  if (x && dev) x->ops->free(x->state, dev);
}

void lumen_dist_xfer_abandon(lumen_dist_xfer *x, int slot, void *dev) {
  if (!x || !dev) return;
  (void)x->ops->wait_h2d(NULL, x->state, slot & 1);
  x->ops->free(x->state, dev);
}

lumen_status lumen_dist_xfer_download(lumen_ctx *ctx, lumen_dist_xfer *x, int slot, const void *dev, size_t bytes,
                                      int *queued) {
  *queued = 0;
  if (bytes > x->cap_out) return LUMEN_OK;
  lumen_status s = x->ops->d2h(ctx, x->state, slot & 1, x->pin_out[slot & 1], dev, bytes);
  *queued = s == LUMEN_OK;
  return s;
}

lumen_status lumen_dist_xfer_collect(lumen_ctx *ctx, lumen_dist_xfer *x, int slot, void *host, size_t bytes) {
  if (bytes > x->cap_out) bytes = x->cap_out;
  lumen_status s = x->ops->wait_d2h(ctx, x->state, slot & 1);
  if (s == LUMEN_OK && bytes) memcpy(host, x->pin_out[slot & 1], bytes);
  return s;
}

void lumen_dist_xfer_close(lumen_dist_xfer *x) {
  if (!x) return;
  if (x->state) {
    for (int k = 0; k < 2; k++) {
      (void)x->ops->wait_h2d(NULL, x->state, k);
      (void)x->ops->wait_d2h(NULL, x->state, k);
    }
    x->ops->destroy(x->state);
  }
  for (int k = 0; k < 2; k++) {
    if (x->pin_in[k]) x->ops->host_free(x->pin_in[k]);
    if (x->pin_out[k]) x->ops->host_free(x->pin_out[k]);
  }
  free(x);
}
