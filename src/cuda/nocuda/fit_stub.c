/* Stand-in for the CUDA fitting tier (src/cuda/fit_host.cu) in builds without CUDA: no devices. */
#include <stdio.h>
#include "fit/fit_cuda.h"
#include "core/internal.h"

static int stub_count(char *why, size_t why_size) {
  snprintf(why, why_size, "this lumen was built without CUDA");
  return 0;
}

static int stub_supports(int dev, const lumen_fitcu_problem *pb, char *why, size_t why_size) {
  (void)dev;
  (void)pb;
  snprintf(why, why_size, "not built");
  return 0;
}

static lumen_status stub_open(int dev, const lumen_fitcu_problem *pb, const lumen_fitcu_input *in, void **handle,
                              int64_t *free_bytes, char *why, size_t why_size) {
  (void)dev;
  (void)pb;
  (void)in;
  *handle = NULL;
  *free_bytes = 0;
  snprintf(why, why_size, "this lumen was built without CUDA");
  return LUMEN_ERR_NOT_BUILT;
}

static void stub_bytes(void *handle, int64_t *per_curve, int64_t *fixed) {
  (void)handle;
  *per_curve = 1;
  *fixed = 0;
}

static lumen_status stub_alloc(void *handle, int64_t chunk, char *why, size_t why_size) {
  (void)handle;
  (void)chunk;
  snprintf(why, why_size, "not built");
  return LUMEN_ERR_NOT_BUILT;
}

static lumen_status stub_submit(void *handle, int slot, int64_t first, int64_t count, char *why, size_t why_size) {
  (void)handle;
  (void)slot;
  (void)first;
  (void)count;
  snprintf(why, why_size, "not built");
  return LUMEN_ERR_NOT_BUILT;
}

static lumen_status stub_finish(void *handle, int slot, char *why, size_t why_size) {
  (void)handle;
  (void)slot;
  snprintf(why, why_size, "not built");
  return LUMEN_ERR_NOT_BUILT;
}

static double stub_kernel_seconds(void *handle) {
  (void)handle;
  return 0.0;
}

static void stub_close(void *handle) { (void)handle; }

static const lumen_fitcu_ops stub_ops = {stub_count,  stub_supports, stub_open,           stub_bytes, stub_alloc,
                                         stub_submit, stub_finish,   stub_kernel_seconds, stub_close};

const lumen_fitcu_ops *lumen_fitcu_real_ops(void) { return &stub_ops; }

int lumen_fitcu_is_device_ptr(const void *p) {
  (void)p;
  return 0;
}

lumen_status lumen_fitcu_copy_to_host(void *dst, const void *src, size_t bytes) {
  (void)dst;
  (void)src;
  (void)bytes;
  return LUMEN_ERR_NOT_BUILT;
}
