// The core's window onto the CUDA runtime (see src/core/cuda_iface.h). Every call reports the
// CUDA error by name, so a machine without a driver or GPU gets a reason, never a crash.
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include "core/cuda_iface.h"

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
