// The core's window onto the CUDA runtime (see src/core/cuda_iface.h). Every call reports the
// CUDA error by name, so a machine without a driver or GPU gets a reason, never a crash.
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include <new>
#include "core/cuda_iface.h"
#include "filter/xfer_iface.h"

static lumen_status fail_cuda(lumen_ctx *ctx, cudaError_t err, const char *what) {
  lumen_status s = LUMEN_ERR_DEVICE;
  if (err == cudaErrorMemoryAllocation) s = LUMEN_ERR_DEVICE_OUT_OF_MEMORY;
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver || err == cudaErrorInvalidDevice)
    s = LUMEN_ERR_NO_DEVICE;
  const char *hint = "";
  if (err == cudaErrorInsufficientDriver) hint = " (no NVIDIA driver, or one older than this CUDA runtime)";
  if (err == cudaErrorNoDevice) hint = " (the driver sees no CUDA-capable GPU)";
  return lumen_fail(ctx, s, "%s: %s: %s%s", what, cudaGetErrorName(err), cudaGetErrorString(err), hint);
}

// Runs body with device `index` current, restoring the caller's current device afterwards.
#define WITH_DEVICE(ctx, index, what)                         \
  int previous_device_ = -1;                                  \
  cudaGetDevice(&previous_device_);                           \
  cudaError_t set_err_ = cudaSetDevice(index);                \
  if (set_err_ != cudaSuccess) return fail_cuda(ctx, set_err_, what);
#define RESTORE_DEVICE() \
  if (previous_device_ >= 0) cudaSetDevice(previous_device_)

extern "C" int lumen_cudai_built(void) { return 1; }

extern "C" lumen_status lumen_cudai_probe(lumen_ctx *ctx, int *count) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (count) *count = 0;
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error of a failed initialisation
    return fail_cuda(ctx, err, "CUDA probe");
  }
  if (n == 0) return lumen_fail(ctx, LUMEN_ERR_NO_DEVICE, "CUDA probe: the driver reports 0 devices");
  if (count) *count = n;
  return LUMEN_OK;
}

extern "C" lumen_status lumen_cudai_versions(lumen_ctx *ctx, int *driver, int *runtime) {
  int d = 0, r = 0;
  cudaError_t e1 = cudaDriverGetVersion(&d);
  cudaError_t e2 = cudaRuntimeGetVersion(&r);
  if (driver) *driver = e1 == cudaSuccess ? d : 0;
  if (runtime) *runtime = e2 == cudaSuccess ? r : 0;
  if (e2 != cudaSuccess) return fail_cuda(ctx, e2, "CUDA runtime version");
  return LUMEN_OK;
}

extern "C" lumen_status lumen_cudai_device_info(lumen_ctx *ctx, int index, lumen_device_info *out) {
  if (!out) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_cudai_device_info: out is NULL");
  memset(out, 0, sizeof *out);
  out->device.kind = LUMEN_DEVICE_CUDA;
  out->device.index = index;
  cudaDeviceProp prop;
  cudaError_t err = cudaGetDeviceProperties(&prop, index);
  if (err != cudaSuccess) return fail_cuda(ctx, err, "CUDA device properties");
  snprintf(out->name, sizeof out->name, "%s", prop.name);
  out->compute_major = prop.major;
  out->compute_minor = prop.minor;
  out->multiprocessors = prop.multiProcessorCount;
  WITH_DEVICE(ctx, index, "CUDA memory info");
  size_t free_b = 0, total_b = 0;
  err = cudaMemGetInfo(&free_b, &total_b);
  RESTORE_DEVICE();
  if (err != cudaSuccess) return fail_cuda(ctx, err, "CUDA memory info");
  out->memory_free = (int64_t)free_b;
  out->memory_total = (int64_t)total_b;
  return LUMEN_OK;
}

extern "C" lumen_status lumen_cudai_malloc(lumen_ctx *ctx, int index, size_t bytes, void **out) {
  if (!out) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_cudai_malloc: out is NULL");
  *out = NULL;
  WITH_DEVICE(ctx, index, "CUDA allocation");
  void *p = NULL;
  cudaError_t err = cudaMallocAsync(&p, bytes ? bytes : 1, 0);
  if (err == cudaSuccess) err = cudaStreamSynchronize(0);
  RESTORE_DEVICE();
  if (err != cudaSuccess) {
    cudaGetLastError();
    char what[96];
    snprintf(what, sizeof what, "CUDA allocation of %zu bytes on cuda:%d", bytes, index);
    return fail_cuda(ctx, err, what);
  }
  *out = p;
  return LUMEN_OK;
}

extern "C" void lumen_cudai_free(int index, void *ptr) {
  if (!ptr) return;
  int previous = -1;
  cudaGetDevice(&previous);
  if (cudaSetDevice(index) == cudaSuccess) {
    cudaFreeAsync(ptr, 0);
    cudaStreamSynchronize(0);
  }
  if (previous >= 0) cudaSetDevice(previous);
}

extern "C" lumen_status lumen_cudai_memset_zero(lumen_ctx *ctx, int index, void *ptr, size_t bytes) {
  WITH_DEVICE(ctx, index, "CUDA memset");
  cudaError_t err = cudaMemset(ptr, 0, bytes);
  RESTORE_DEVICE();
  return err == cudaSuccess ? LUMEN_OK : fail_cuda(ctx, err, "CUDA memset");
}

extern "C" lumen_status lumen_cudai_copy(lumen_ctx *ctx, void *dst, int dst_device, const void *src, int src_device,
                                         size_t bytes) {
  // Unified addressing lets cudaMemcpyDefault infer the direction from the pointers.
  int index = dst_device >= 0 ? dst_device : src_device;
  if (index < 0) {
    memcpy(dst, src, bytes);
    return LUMEN_OK;
  }
  WITH_DEVICE(ctx, index, "CUDA copy");
  cudaError_t err = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
  RESTORE_DEVICE();
  return err == cudaSuccess ? LUMEN_OK : fail_cuda(ctx, err, "CUDA copy");
}

extern "C" lumen_status lumen_cudai_host_alloc(lumen_ctx *ctx, size_t bytes, void **out) {
  *out = NULL;
  cudaError_t err = cudaMallocHost(out, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    *out = NULL;
    return fail_cuda(ctx, err, "pinned host allocation");
  }
  return LUMEN_OK;
}

extern "C" void lumen_cudai_host_free(void *ptr) {
  if (ptr) cudaFreeHost(ptr);
}

extern "C" lumen_status lumen_cudai_release_cache(lumen_ctx *ctx, int index) {
  cudaMemPool_t pool;
  cudaError_t err = cudaDeviceGetDefaultMemPool(&pool, index);
  if (err == cudaSuccess) err = cudaMemPoolTrimTo(pool, 0);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return fail_cuda(ctx, err, "CUDA cache release");
  }
  return LUMEN_OK;
}

// ---------------------------------------------------------------- batch transfers (xfer_iface.h)
// One per device worker of an image batch: uploads and downloads on two non-blocking streams
// (no implicit synchronisation with the legacy default stream the filter kernels use), ordered
// against the kernels with events only, so the copy engines work while the kernels run.
struct lumen_cudai_xfer {
  int device;
  cudaStream_t up, down;
  cudaEvent_t up_done[2], down_done[2], op_done[2];
};

#define XFER_SCOPE(ctx, x, what)                         \
  int prev_dev_ = -1;                                    \
  cudaGetDevice(&prev_dev_);                             \
  cudaError_t xerr_ = cudaSetDevice((x)->device);        \
  if (xerr_ != cudaSuccess) return fail_cuda(ctx, xerr_, what);
#define XFER_END(ctx, err, what)                                              \
  if (prev_dev_ >= 0) cudaSetDevice(prev_dev_);                               \
  if ((err) != cudaSuccess) {                                                 \
    cudaGetLastError();                                                       \
    return fail_cuda(ctx, err, what);                                         \
  }                                                                           \
  return LUMEN_OK

extern "C" void lumen_cudai_xfer_destroy(lumen_cudai_xfer *x) {
  if (!x) return;
  int previous = -1;
  cudaGetDevice(&previous);
  if (cudaSetDevice(x->device) == cudaSuccess) {
    if (x->up) cudaStreamSynchronize(x->up);
    if (x->down) cudaStreamSynchronize(x->down);
    for (int s = 0; s < 2; s++) {
      if (x->up_done[s]) cudaEventDestroy(x->up_done[s]);
      if (x->down_done[s]) cudaEventDestroy(x->down_done[s]);
      if (x->op_done[s]) cudaEventDestroy(x->op_done[s]);
    }
    if (x->up) cudaStreamDestroy(x->up);
    if (x->down) cudaStreamDestroy(x->down);
  }
  cudaGetLastError();
  if (previous >= 0) cudaSetDevice(previous);
  delete x;
}

extern "C" lumen_status lumen_cudai_xfer_create(lumen_ctx *ctx, int device, lumen_cudai_xfer **out) {
  *out = NULL;
  lumen_cudai_xfer *x = new (std::nothrow) lumen_cudai_xfer();
  if (!x) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "CUDA transfer streams: out of host memory");
  x->device = device;
  int previous = -1;
  cudaGetDevice(&previous);
  cudaError_t err = cudaSetDevice(device);
  if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&x->up, cudaStreamNonBlocking);
  if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&x->down, cudaStreamNonBlocking);
  for (int s = 0; s < 2 && err == cudaSuccess; s++) {
    err = cudaEventCreateWithFlags(&x->up_done[s], cudaEventDisableTiming);
    if (err == cudaSuccess) err = cudaEventCreateWithFlags(&x->down_done[s], cudaEventDisableTiming);
    if (err == cudaSuccess) err = cudaEventCreateWithFlags(&x->op_done[s], cudaEventDisableTiming);
  }
  if (previous >= 0) cudaSetDevice(previous);
  if (err != cudaSuccess) {
    cudaGetLastError();
    lumen_cudai_xfer_destroy(x);
    return fail_cuda(ctx, err, "CUDA transfer streams");
  }
  *out = x;
  return LUMEN_OK;
}

extern "C" lumen_status lumen_cudai_xfer_alloc(lumen_ctx *ctx, lumen_cudai_xfer *x, size_t bytes, void **dev) {
  *dev = NULL;
  XFER_SCOPE(ctx, x, "CUDA allocation");
  cudaError_t err = cudaMallocAsync(dev, bytes ? bytes : 1, x->up);
  if (err != cudaSuccess) *dev = NULL;
  XFER_END(ctx, err, "CUDA allocation (batch input)");
}

extern "C" void lumen_cudai_xfer_free(lumen_cudai_xfer *x, void *dev) {
  if (!x || !dev) return;
  int previous = -1;
  cudaGetDevice(&previous);
  if (cudaSetDevice(x->device) == cudaSuccess) cudaFreeAsync(dev, 0);
  cudaGetLastError();
  if (previous >= 0) cudaSetDevice(previous);
}

extern "C" lumen_status lumen_cudai_xfer_h2d(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot, void *dev,
                                             const void *pinned, size_t bytes) {
  XFER_SCOPE(ctx, x, "CUDA upload");
  cudaError_t err = cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, x->up);
  if (err == cudaSuccess) err = cudaEventRecord(x->up_done[slot & 1], x->up);
  XFER_END(ctx, err, "CUDA upload");
}

extern "C" lumen_status lumen_cudai_xfer_wait_h2d(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot) {
  cudaError_t err = cudaEventSynchronize(x->up_done[slot & 1]);  // never recorded: returns at once
  if (err != cudaSuccess) {
    cudaGetLastError();
    return fail_cuda(ctx, err, "CUDA upload wait");
  }
  return LUMEN_OK;
}

extern "C" lumen_status lumen_cudai_xfer_before_op(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot) {
  XFER_SCOPE(ctx, x, "CUDA stream wait");
  cudaError_t err = cudaStreamWaitEvent(0, x->up_done[slot & 1], 0);
  XFER_END(ctx, err, "CUDA stream wait");
}

extern "C" lumen_status lumen_cudai_xfer_d2h(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot, void *pinned,
                                             const void *dev, size_t bytes) {
  XFER_SCOPE(ctx, x, "CUDA download");
  cudaError_t err = cudaEventRecord(x->op_done[slot & 1], 0);
  if (err == cudaSuccess) err = cudaStreamWaitEvent(x->down, x->op_done[slot & 1], 0);
  if (err == cudaSuccess) err = cudaMemcpyAsync(pinned, dev, bytes, cudaMemcpyDeviceToHost, x->down);
  if (err == cudaSuccess) err = cudaEventRecord(x->down_done[slot & 1], x->down);
  XFER_END(ctx, err, "CUDA download");
}

extern "C" lumen_status lumen_cudai_xfer_wait_d2h(lumen_ctx *ctx, lumen_cudai_xfer *x, int slot) {
  cudaError_t err = cudaEventSynchronize(x->down_done[slot & 1]);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return fail_cuda(ctx, err, "CUDA download wait");
  }
  return LUMEN_OK;
}
