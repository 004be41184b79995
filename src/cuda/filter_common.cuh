// Shared pieces of lumen's CUDA filter kernels (src/cuda/filter_*.cu): storage loads/stores for
// float32/float16/bfloat16, scipy boundary extension on the device, error mapping, stream-ordered
// scratch buffers and a few host helpers defined once in filter_point.cu.
//
// Conventions: every op runs on the legacy default stream (stream 0, the stream the core's
// allocations and copies use), so launches are ordered with the dispatcher's staging and frees
// and no op synchronises the host unless a result must come back (Otsu, the statistics).
// Arithmetic that the CPU path does in float32 is written with __fadd_rn/__fmul_rn where the
// order matters, so nvcc cannot contract it into FMAs and the results match the CPU bit for bit.
#ifndef LUMEN_CUDA_FILTER_COMMON_CUH
#define LUMEN_CUDA_FILTER_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include "filter/filter_cuda.h"

namespace lfc {

// ---------------------------------------------------------------- storage types
__device__ __forceinline__ float ld(const float *p, int64_t i) { return __ldg(p + i); }
__device__ __forceinline__ float ld(const __half *p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float ld(const __nv_bfloat16 *p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void st(float *p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__half *p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void st(__nv_bfloat16 *p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

// scipy.ndimage boundary extension: lf_ext (filter/filter_hd.h) under the kernels' short name
__host__ __device__ __forceinline__ int64_t ext(int64_t i, int64_t n, int mode) { return lf_ext(i, n, mode); }

// grid-stride helpers
__device__ __forceinline__ int64_t gtid() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t gstride() { return (int64_t)gridDim.x * blockDim.x; }
static inline unsigned grid_for(int64_t n, int block = 256) {
  int64_t g = (n + block - 1) / block;
  if (g > 65535LL * 32) g = 65535LL * 32;  // grid-stride loops cover the rest
  return (unsigned)(g < 1 ? 1 : g);
}

// ---------------------------------------------------------------- host side
// A CUDA error as a lumen status: allocation failures -> DEVICE_OUT_OF_MEMORY, a missing device
// -> NO_DEVICE, anything else -> DEVICE (all three make the dispatcher rerun the op on the CPU).
static inline lumen_status fail(lumen_ctx *ctx, cudaError_t err, const char *fn, const char *what) {
  lumen_status s = LUMEN_ERR_DEVICE;
  if (err == cudaErrorMemoryAllocation) s = LUMEN_ERR_DEVICE_OUT_OF_MEMORY;
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver || err == cudaErrorInvalidDevice)
    s = LUMEN_ERR_NO_DEVICE;
  cudaGetLastError();  // clear a non-sticky error so the CPU rerun starts clean
  return lumen_fail(ctx, s, "%s: %s: %s: %s", fn, what, cudaGetErrorName(err), cudaGetErrorString(err));
}

// The launch status of the kernels enqueued so far.
static inline lumen_status launched(lumen_ctx *ctx, const char *fn, const char *what) {
  cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? LUMEN_OK : fail(ctx, err, fn, what);
}

// Makes call->device current for the lifetime of the object and restores the previous device.
struct device_scope {
  int previous = -1;
  cudaError_t err = cudaSuccess;
  explicit device_scope(int index) {
    cudaGetDevice(&previous);
    err = cudaSetDevice(index);
  }
  ~device_scope() {
    if (previous >= 0) cudaSetDevice(previous);
  }
  device_scope(const device_scope &) = delete;
  device_scope &operator=(const device_scope &) = delete;
};

// Stream-ordered scratch memory from the device's default pool (freed when the object dies).
template <class T>
struct scratch {
  T *p = nullptr;
  scratch() = default;
  scratch(const scratch &) = delete;
  scratch &operator=(const scratch &) = delete;
  lumen_status alloc(lumen_ctx *ctx, const char *fn, int64_t count) {
    size_t bytes = (size_t)(count > 0 ? count : 1) * sizeof(T);
    cudaError_t err = cudaMallocAsync((void **)&p, bytes, 0);
    if (err != cudaSuccess) {
      p = nullptr;
      char what[96];
      snprintf(what, sizeof what, "scratch allocation of %zu bytes", bytes);
      return fail(ctx, err, fn, what);
    }
    return LUMEN_OK;
  }
  ~scratch() {
    if (p) cudaFreeAsync(p, 0);
  }
};

// Enter an op: the device of the call, or a status.
#define LFC_ENTER(ctx, call, fn)                                                                 \
  lfc::device_scope lfc_scope_((call)->device.index);                                            \
  if (lfc_scope_.err != cudaSuccess) return lfc::fail((ctx), lfc_scope_.err, (fn), "cudaSetDevice")

// LFC_ENTER with fn, the name the entry's messages start with, defined here.
#define LFC_ENTRY(ctx, call, name) \
  static const char fn[] = name;   \
  LFC_ENTER(ctx, call, fn)

#define LFC_TRY(expr)                   \
  do {                                  \
    lumen_status lfc_s_ = (expr);       \
    if (lfc_s_ != LUMEN_OK) return lfc_s_; \
  } while (0)

// Launches KERNEL<T> with the output image's data as its last argument, T its storage type
// (float32, float16, bfloat16; with _U8 also uint8 masks). Used outside namespace lfc.
#define LFC_LAUNCH_OUT(img, KERNEL, GRID, BLOCK, ...)                                                      \
  switch (lumen_image_dtype(img)) {                                                                 \
    case LUMEN_DTYPE_FLOAT32: KERNEL<float><<<GRID, BLOCK>>>(__VA_ARGS__, (float *)lumen_image_data(img)); break; \
    case LUMEN_DTYPE_FLOAT16: KERNEL<__half><<<GRID, BLOCK>>>(__VA_ARGS__, (__half *)lumen_image_data(img)); break; \
    default: KERNEL<__nv_bfloat16><<<GRID, BLOCK>>>(__VA_ARGS__, (__nv_bfloat16 *)lumen_image_data(img)); break; \
  }
// the same with uint8 masks (binary morphology)
#define LFC_LAUNCH_OUT_U8(img, KERNEL, GRID, BLOCK, ...)                                                   \
  if (lumen_image_dtype(img) == LUMEN_DTYPE_UINT8) {                                                \
    KERNEL<uint8_t><<<GRID, BLOCK>>>(__VA_ARGS__, (uint8_t *)lumen_image_data(img));                 \
  } else {                                                                                          \
    LFC_LAUNCH_OUT(img, KERNEL, GRID, BLOCK, __VA_ARGS__)                                               \
  }

// Defined in filter_point.cu.
// in[i] of a call as float32 on the device: the staged data itself when it is float32, else a
// converted copy in *owned (any lumen_dtype, converted as lumen_image_convert does).
lumen_status input_f32(lumen_ctx *ctx, const char *fn, const lumen_image *im, const float **out, scratch<float> *owned);
// An input as float32 by input_f32: x, pointing into owned when the input was converted.
struct f32_input {
  const float *x = nullptr;
  scratch<float> owned;
  lumen_status get(lumen_ctx *ctx, const char *fn, const lumen_image *im) { return input_f32(ctx, fn, im, &x, &owned); }
};
// float32 device data -> the output image's storage dtype (float32 copy, float16, bfloat16).
lumen_status store_f32(lumen_ctx *ctx, const char *fn, const float *src, lumen_image *out, int64_t n);
// min and max of n floats (NaN ignored as in the CPU path) into dev[0], dev[1] (no host sync).
lumen_status minmax(lumen_ctx *ctx, const char *fn, const float *x, int64_t n, float *dev);

}  // namespace lfc

#endif
