// CUDA point operations, thresholds, window moments and statistics: gamma, contrast, Otsu (min/max
// and histogram on the device, the threshold from the counts on the host exactly as the CPU path),
// Sauvola, local variance, local-variance binarisation, entropy, mutual information, variance.
// Also the shared helpers of filter_common.cuh (input conversion, storage conversion, min/max).
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <vector>
#include "cuda/filter_common.cuh"

namespace lfc {

// ------------------------------------------------------------------ shared helpers

template <class T>
__device__ __forceinline__ float to_f(T v) {
  return (float)v;
}
template <>
__device__ __forceinline__ float to_f<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <class T>
__global__ void k_to_f32(const T *__restrict__ src, float *__restrict__ dst, int64_t n) {
  for (int64_t i = gtid(); i < n; i += gstride()) dst[i] = to_f(src[i]);
}

template <class T>
static void launch_to_f32(const void *src, float *dst, int64_t n) {
  k_to_f32<T><<<grid_for(n), 256>>>((const T *)src, dst, n);
}

lumen_status input_f32(lumen_ctx *ctx, const char *fn, const lumen_image *im, const float **out,
                       scratch<float> *owned) {
  const int64_t n = lumen_image_count(im);
  const void *src = lumen_image_const_data(im);
  lumen_dtype t = lumen_image_dtype(im);
  if (t == LUMEN_DTYPE_FLOAT32) {
    *out = (const float *)src;
    return LUMEN_OK;
  }
  LFC_TRY(owned->alloc(ctx, fn, n));
  switch (t) {
    case LUMEN_DTYPE_FLOAT16: launch_to_f32<__half>(src, owned->p, n); break;
    case LUMEN_DTYPE_BFLOAT16: launch_to_f32<__nv_bfloat16>(src, owned->p, n); break;
    case LUMEN_DTYPE_FLOAT64: launch_to_f32<double>(src, owned->p, n); break;
    case LUMEN_DTYPE_UINT8: launch_to_f32<uint8_t>(src, owned->p, n); break;
    case LUMEN_DTYPE_INT8: launch_to_f32<int8_t>(src, owned->p, n); break;
    case LUMEN_DTYPE_UINT16: launch_to_f32<uint16_t>(src, owned->p, n); break;
    case LUMEN_DTYPE_INT16: launch_to_f32<int16_t>(src, owned->p, n); break;
    case LUMEN_DTYPE_UINT32: launch_to_f32<uint32_t>(src, owned->p, n); break;
    case LUMEN_DTYPE_INT32: launch_to_f32<int32_t>(src, owned->p, n); break;
    case LUMEN_DTYPE_UINT64: launch_to_f32<uint64_t>(src, owned->p, n); break;
    case LUMEN_DTYPE_INT64: launch_to_f32<int64_t>(src, owned->p, n); break;
    default:
      return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "%s: input dtype %s is not supported on CUDA", fn,
                        lumen_dtype_name(t));
  }
  *out = owned->p;
  return launched(ctx, fn, "input conversion");
}

template <class Out>
__global__ void k_from_f32(const float *__restrict__ src, Out *__restrict__ dst, int64_t n) {
  for (int64_t i = gtid(); i < n; i += gstride()) st(dst, i, src[i]);
}

lumen_status store_f32(lumen_ctx *ctx, const char *fn, const float *src, lumen_image *out, int64_t n) {
  void *dst = lumen_image_data(out);
  switch (lumen_image_dtype(out)) {
    case LUMEN_DTYPE_FLOAT32: {
      if (dst == (const void *)src) return LUMEN_OK;
      cudaError_t err = cudaMemcpyAsync(dst, src, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice, 0);
      if (err != cudaSuccess) return fail(ctx, err, fn, "device copy");
      return LUMEN_OK;
    }
    case LUMEN_DTYPE_FLOAT16: k_from_f32<<<grid_for(n), 256>>>(src, (__half *)dst, n); break;
    case LUMEN_DTYPE_BFLOAT16: k_from_f32<<<grid_for(n), 256>>>(src, (__nv_bfloat16 *)dst, n); break;
    default:
      return lumen_fail(ctx, LUMEN_ERR_INTERNAL, "%s: output dtype %s is not a float storage type", fn,
                        lumen_dtype_name(lumen_image_dtype(out)));
  }
  return launched(ctx, fn, "output conversion");
}

// min/max: per-block partials, then one block folds them (comparisons skip NaN like the CPU loop)
#define MM_BLOCKS 1024
// Folds each thread's (lo, hi) over the block (blockDim.x a power of two <= 256): slo[0], shi[0].
__device__ __forceinline__ void block_minmax(float *slo, float *shi, float lo, float hi) {
  slo[threadIdx.x] = lo;
  shi[threadIdx.x] = hi;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) {
      float a = slo[threadIdx.x + s], b = shi[threadIdx.x + s];
      slo[threadIdx.x] = a < slo[threadIdx.x] ? a : slo[threadIdx.x];
      shi[threadIdx.x] = b > shi[threadIdx.x] ? b : shi[threadIdx.x];
    }
    __syncthreads();
  }
}

__global__ void k_minmax_part(const float *__restrict__ x, int64_t n, float *__restrict__ part) {
  __shared__ float slo[256], shi[256];
  float lo = INFINITY, hi = -INFINITY;
  for (int64_t i = gtid(); i < n; i += gstride()) {
    float v = x[i];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  block_minmax(slo, shi, lo, hi);
  if (threadIdx.x == 0) {
    part[2 * blockIdx.x] = slo[0];
    part[2 * blockIdx.x + 1] = shi[0];
  }
}

__global__ void k_minmax_fold(const float *__restrict__ part, int nparts, float *__restrict__ res) {
  __shared__ float slo[256], shi[256];
  float lo = INFINITY, hi = -INFINITY;
  for (int i = threadIdx.x; i < nparts; i += blockDim.x) {
    lo = part[2 * i] < lo ? part[2 * i] : lo;
    hi = part[2 * i + 1] > hi ? part[2 * i + 1] : hi;
  }
  block_minmax(slo, shi, lo, hi);
  if (threadIdx.x == 0) {
    res[0] = slo[0];
    res[1] = shi[0];
  }
}

lumen_status minmax(lumen_ctx *ctx, const char *fn, const float *x, int64_t n, float *dev) {
  int blocks = (int)((n + 255) / 256);
  if (blocks > MM_BLOCKS) blocks = MM_BLOCKS;
  if (blocks < 1) blocks = 1;
  scratch<float> part;
  LFC_TRY(part.alloc(ctx, fn, 2 * (int64_t)blocks));
  k_minmax_part<<<blocks, 256>>>(x, n, part.p);
  k_minmax_fold<<<1, 256>>>(part.p, blocks, dev);
  return launched(ctx, fn, "min/max reduction");
}

// Synchronous copy of a small result back to the host.
static lumen_status fetch(lumen_ctx *ctx, const char *fn, void *host, const void *dev, size_t bytes) {
  cudaError_t err = cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost);
  return err == cudaSuccess ? LUMEN_OK : fail(ctx, err, fn, "result copy to the host");
}

// The smallest and largest of x[0..n), on the host in range[0], range[1].
static lumen_status host_range(lumen_ctx *ctx, const char *fn, const float *x, int64_t n, float range[2]) {
  scratch<float> mm;
  LFC_TRY(mm.alloc(ctx, fn, 2));
  LFC_TRY(minmax(ctx, fn, x, n, mm.p));
  return fetch(ctx, fn, range, mm.p, 2 * sizeof(float));
}

static lumen_status upload(lumen_ctx *ctx, const char *fn, void *dev, const void *host, size_t bytes) {
  cudaError_t err = cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, 0);
  return err == cudaSuccess ? LUMEN_OK : fail(ctx, err, fn, "parameter copy to the device");
}

// ------------------------------------------------------------------ gamma, contrast

}  // namespace lfc

using namespace lfc;

namespace lfc {
// argument order adapters (the output pointer last, for LFC_LAUNCH_OUT)
template <class Out>
__global__ void k_gamma_o(const float *in, int64_t n, float m, float g, Out *out) {
  for (int64_t i = gtid(); i < n; i += gstride()) {
    float v = __fdiv_rn(in[i], m);
    st(out, i, __fmul_rn(m, powf(v > 0.0f ? v : 0.0f, g)));
  }
}
template <class Out>
__global__ void k_abs_o(const float *in, int64_t n, Out *out) {
  for (int64_t i = gtid(); i < n; i += gstride()) st(out, i, fabsf(in[i]));
}
template <class Out>
__global__ void k_contrast_o(const float *in, int64_t n, double contrast, double brightness, double bins,
                             const float *mm, Out *out) {
  if (bins <= 0) bins = mm[1] <= 255.0f ? 255.0 : 4095.0;
  const float a = (float)__dadd_rn(__ddiv_rn(contrast, __ddiv_rn(bins, 2.0)), 1.0);
  const float b = (float)__dsub_rn(brightness, contrast);
  const float top = (float)bins;
  for (int64_t i = gtid(); i < n; i += gstride()) {
    float v = __fadd_rn(__fmul_rn(a, in[i]), b);
    v = v < 0.0f ? 0.0f : v;
    st(out, i, v > top ? top : v);
  }
}
}  // namespace lfc

extern "C" lumen_status lf_cuda_gamma(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_gamma (cuda)");
  const lumen_gamma_opts *o = (const lumen_gamma_opts *)call->opts;
  const int64_t n = call->geom.total;
  f32_input src;
  LFC_TRY(src.get(ctx, fn, call->in[0]));
  LFC_LAUNCH_OUT(call->out, k_gamma_o, grid_for(n), 256, src.x, n, (float)o->max_value, (float)o->gamma);
  return launched(ctx, fn, "gamma kernel");
}

extern "C" lumen_status lf_cuda_abs(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_abs (cuda)");
  const int64_t n = call->geom.total;
  f32_input src;
  LFC_TRY(src.get(ctx, fn, call->in[0]));
  LFC_LAUNCH_OUT(call->out, k_abs_o, grid_for(n), 256, src.x, n);
  return launched(ctx, fn, "abs kernel");
}

extern "C" lumen_status lf_cuda_contrast(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_contrast (cuda)");
  const lumen_contrast_opts *o = (const lumen_contrast_opts *)call->opts;
  const int64_t n = call->geom.total;
  f32_input src;
  scratch<float> mm;
  LFC_TRY(src.get(ctx, fn, call->in[0]));
  LFC_TRY(mm.alloc(ctx, fn, 2));
  if (o->bins == 0) LFC_TRY(minmax(ctx, fn, src.x, n, mm.p));
  LFC_LAUNCH_OUT(call->out, k_contrast_o, grid_for(n), 256, src.x, n, o->contrast, o->brightness, (double)o->bins, mm.p);
  return launched(ctx, fn, "contrast kernel");
}

// ------------------------------------------------------------------ histograms (numpy rules)

namespace lfc {

struct hspec {
  int nb;
  float mn, mx;
  const float *edges;  // device, nb + 1
};

// the CPU path's hist_bin, with the float operations unfused
__device__ __forceinline__ int hbin(const hspec &h, float v) {
  float f = __fmul_rn(__fdiv_rn(__fsub_rn(v, h.mn), __fsub_rn(h.mx, h.mn)), (float)h.nb);
  int idx = (int)f;
  if (idx >= h.nb) idx = h.nb - 1;
  if (idx < 0) idx = 0;
  if (idx > 0 && v < h.edges[idx]) idx--;
  if (idx < h.nb - 1 && v >= h.edges[idx + 1]) idx++;
  return idx;
}

#define HIST_SHARED_MAX 8192
__global__ void k_hist(const float *__restrict__ x, int64_t n, hspec h, unsigned long long *__restrict__ counts) {
  extern __shared__ unsigned int sh[];
  const bool shared = h.nb <= HIST_SHARED_MAX;
  if (shared) {
    for (int i = threadIdx.x; i < h.nb; i += blockDim.x) sh[i] = 0;
    __syncthreads();
  }
  for (int64_t i = gtid(); i < n; i += gstride()) {
    int b = hbin(h, x[i]);
    if (shared)
      atomicAdd(&sh[b], 1u);
    else
      atomicAdd(&counts[b], 1ull);
  }
  if (shared) {
    __syncthreads();
    for (int i = threadIdx.x; i < h.nb; i += blockDim.x)
      if (sh[i]) atomicAdd(&counts[i], (unsigned long long)sh[i]);
  }
}

__global__ void k_hist_joint(const float *__restrict__ a, const float *__restrict__ b, int64_t n, hspec ha, hspec hb,
                             unsigned long long *__restrict__ joint, unsigned long long *__restrict__ ca,
                             unsigned long long *__restrict__ cb) {
  for (int64_t i = gtid(); i < n; i += gstride()) {
    int ia = hbin(ha, a[i]), ib = hbin(hb, b[i]);
    atomicAdd(&joint[(int64_t)ia * ha.nb + ib], 1ull);
    atomicAdd(&ca[ia], 1ull);
    atomicAdd(&cb[ib], 1ull);
  }
}

// A histogram of x on the device with the CPU path's rules: mn/mx from the device (one host sync),
// float edges computed on the host as the CPU does, counts back on the host.
struct host_hist {
  int nb = 0;
  float mn = 0, mx = 0;
  std::vector<float> edges;
  scratch<float> dedges;
  lumen_status init(lumen_ctx *ctx, const char *fn, const float *x, int64_t n, int bins, const float *mm_host) {
    (void)x;
    (void)n;
    mn = mm_host[0];
    mx = mm_host[1];
    if (mn == mx) {
      mn = (float)((double)mn - 0.5);
      mx = (float)((double)mx + 0.5);
    }
    nb = bins;
    edges.resize((size_t)nb + 1);
    double step = ((double)mx - (double)mn) / nb;
    for (int i = 0; i < nb; i++) edges[i] = (float)((double)i * step + (double)mn);
    edges[nb] = mx;
    LFC_TRY(dedges.alloc(ctx, fn, nb + 1));
    return upload(ctx, fn, dedges.p, edges.data(), edges.size() * sizeof(float));
  }
  hspec spec() const { return hspec{nb, mn, mx, dedges.p}; }
};

static lumen_status histogram(lumen_ctx *ctx, const char *fn, const float *x, int64_t n, const host_hist &h,
                              std::vector<int64_t> &counts) {
  scratch<unsigned long long> dc;
  LFC_TRY(dc.alloc(ctx, fn, h.nb));
  cudaError_t err = cudaMemsetAsync(dc.p, 0, (size_t)h.nb * sizeof(unsigned long long), 0);
  if (err != cudaSuccess) return fail(ctx, err, fn, "histogram clear");
  int blocks = (int)((n + 255) / 256);
  if (blocks > 1024) blocks = 1024;
  if (blocks < 1) blocks = 1;
  size_t shm = h.nb <= HIST_SHARED_MAX ? (size_t)h.nb * sizeof(unsigned int) : 0;
  k_hist<<<blocks, 256, shm>>>(x, n, h.spec(), dc.p);
  LFC_TRY(launched(ctx, fn, "histogram kernel"));
  counts.resize((size_t)h.nb);
  return fetch(ctx, fn, counts.data(), dc.p, (size_t)h.nb * sizeof(int64_t));
}

__global__ void k_gt_mask(const float *__restrict__ x, int64_t n, float t, uint8_t *__restrict__ m) {
  for (int64_t i = gtid(); i < n; i += gstride()) m[i] = x[i] > t;
}

}  // namespace lfc

// ------------------------------------------------------------------ Otsu

extern "C" lumen_status lf_cuda_otsu(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_otsu (cuda)");
  const lumen_otsu_opts *o = (const lumen_otsu_opts *)call->opts;
  const int64_t n = call->geom.total;
  f32_input src;
  LFC_TRY(src.get(ctx, fn, call->in[0]));
  float mmh[2];
  LFC_TRY(host_range(ctx, fn, src.x, n, mmh));
  double thr;
  if (mmh[0] == mmh[1]) {
    thr = mmh[0];
  } else {
    const int nb = o->bins ? o->bins : (mmh[0] >= 0.0f && mmh[1] <= 255.0f ? 256 : 4096);
    host_hist h;
    LFC_TRY(h.init(ctx, fn, src.x, n, nb, mmh));
    std::vector<int64_t> c;
    LFC_TRY(histogram(ctx, fn, src.x, n, h, c));
    std::vector<double> work((size_t)nb * 4);
    std::vector<float> centre((size_t)nb);
    thr = lf_otsu_threshold(c.data(), h.edges.data(), nb, work.data(), centre.data());
  }
  call->scalar[0] = thr;
  if (call->out) {
    k_gt_mask<<<grid_for(n), 256>>>(src.x, n, (float)thr, (uint8_t *)lumen_image_data(call->out));
    return launched(ctx, fn, "mask kernel");
  }
  return LUMEN_OK;
}

// ------------------------------------------------------------------ entropy, MI, variance

extern "C" lumen_status lf_cuda_entropy(lumen_ctx *ctx, lf_call *call) {
  static const char fn[] = "lumen_filter_entropy (cuda)";
  const lumen_stats_opts *o = (const lumen_stats_opts *)call->opts;
  if (o->bins == 0)
    return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT,
                      "%s: bins = 0 (one bin per distinct value) needs a sort and runs on the CPU", fn);
  LFC_ENTER(ctx, call, fn);
  const int64_t n = call->geom.total;
  f32_input src;
  LFC_TRY(src.get(ctx, fn, call->in[0]));
  float mmh[2];
  LFC_TRY(host_range(ctx, fn, src.x, n, mmh));
  host_hist h;
  LFC_TRY(h.init(ctx, fn, src.x, n, o->bins, mmh));
  std::vector<int64_t> c;
  LFC_TRY(histogram(ctx, fn, src.x, n, h, c));
  call->scalar[0] = lf_entropy_of(c.data(), o->bins, n);
  return LUMEN_OK;
}

extern "C" lumen_status lf_cuda_mutual_information(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_mutual_information (cuda)");
  const lumen_stats_opts *o = (const lumen_stats_opts *)call->opts;
  const int nb = o->bins;
  const int64_t n = call->geom.total;
  const float *a, *b;
  scratch<float> ain, bin, mm;
  LFC_TRY(input_f32(ctx, fn, call->in[0], &a, &ain));
  LFC_TRY(input_f32(ctx, fn, call->in[1], &b, &bin));
  LFC_TRY(mm.alloc(ctx, fn, 4));
  LFC_TRY(minmax(ctx, fn, a, n, mm.p));
  LFC_TRY(minmax(ctx, fn, b, n, mm.p + 2));
  float mmh[4];
  LFC_TRY(fetch(ctx, fn, mmh, mm.p, sizeof mmh));
  host_hist ha, hb;
  LFC_TRY(ha.init(ctx, fn, a, n, nb, mmh));
  LFC_TRY(hb.init(ctx, fn, b, n, nb, mmh + 2));
  const int64_t nj = (int64_t)nb * nb + 2 * (int64_t)nb;
  scratch<unsigned long long> dj;
  LFC_TRY(dj.alloc(ctx, fn, nj));
  cudaError_t err = cudaMemsetAsync(dj.p, 0, (size_t)nj * sizeof(unsigned long long), 0);
  if (err != cudaSuccess) return fail(ctx, err, fn, "histogram clear");
  unsigned long long *ca = dj.p + (int64_t)nb * nb, *cb = ca + nb;
  k_hist_joint<<<grid_for(n), 256>>>(a, b, n, ha.spec(), hb.spec(), dj.p, ca, cb);
  LFC_TRY(launched(ctx, fn, "joint histogram kernel"));
  std::vector<int64_t> j((size_t)nj);
  LFC_TRY(fetch(ctx, fn, j.data(), dj.p, (size_t)nj * sizeof(int64_t)));
  const int64_t *hca = j.data() + (int64_t)nb * nb, *hcb = hca + nb;
  double Ha = lf_entropy_of(hca, nb, n), Hb = lf_entropy_of(hcb, nb, n), Hj = lf_entropy_of(j.data(), (int64_t)nb * nb, n);
  call->scalar[0] = Ha + Hb - Hj;
  call->scalar[1] = Ha;
  call->scalar[2] = Hb;
  call->scalar[3] = Hj;
  return LUMEN_OK;
}

namespace lfc {

// double sum of x (pass 0) or of (x - mean)^2 with mean = acc[0] / n (pass 1), into acc[pass]
__global__ void k_moment(const float *__restrict__ x, int64_t n, int pass, double *acc) {
  __shared__ double sh[256];
  double s = 0;
  const double m = pass ? acc[0] / (double)n : 0.0;
  for (int64_t i = gtid(); i < n; i += gstride()) {
    double v = (double)x[i];
    if (pass) {
      double d = __dsub_rn(v, m);
      v = __dmul_rn(d, d);
    }
    s += v;
  }
  sh[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if ((int)threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(&acc[pass], sh[0]);
}

// acc[0] = sum, acc[1] = sum of squared deviations; no host sync
static lumen_status mean_var(lumen_ctx *ctx, const char *fn, const float *x, int64_t n, double *acc) {
  cudaError_t err = cudaMemsetAsync(acc, 0, 2 * sizeof(double), 0);
  if (err != cudaSuccess) return fail(ctx, err, fn, "accumulator clear");
  int blocks = (int)((n + 255) / 256);
  if (blocks > 1024) blocks = 1024;
  if (blocks < 1) blocks = 1;
  k_moment<<<blocks, 256>>>(x, n, 0, acc);
  k_moment<<<blocks, 256>>>(x, n, 1, acc);
  return launched(ctx, fn, "moment reduction");
}

}  // namespace lfc

extern "C" lumen_status lf_cuda_variance(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_variance (cuda)");
  const lumen_stats_opts *o = (const lumen_stats_opts *)call->opts;
  const int64_t n = call->geom.total;
  f32_input src;
  scratch<double> acc;
  LFC_TRY(src.get(ctx, fn, call->in[0]));
  LFC_TRY(acc.alloc(ctx, fn, 2));
  LFC_TRY(mean_var(ctx, fn, src.x, n, acc.p));
  double h[2];
  LFC_TRY(fetch(ctx, fn, h, acc.p, sizeof h));
  call->scalar[0] = h[0] / (double)n;
  call->scalar[1] = n > o->ddof ? h[1] / (double)(n - o->ddof) : 0.0;
  return LUMEN_OK;
}

// ------------------------------------------------------------------ window moments (float64)
// The CPU path's box_sum, in the same order: running sums along each axis (x: one thread per row;
// y, z: one thread per column, coalesced across x), so the sums are bit-identical.

namespace lfc {

__global__ void k_box_init(const float *__restrict__ x, int64_t n, int power, double *__restrict__ dst) {
  for (int64_t i = gtid(); i < n; i += gstride()) dst[i] = power == 1 ? (double)x[i] : (double)x[i] * (double)x[i];
}

__global__ void k_box_x(const double *__restrict__ src, double *__restrict__ dst, int64_t rows, int64_t n0, int w,
                        int mode, double cv) {
  const int h = w / 2;
  for (int64_t R = gtid(); R < rows; R += gstride()) {
    const double *s = src + R * n0;
    double *d = dst + R * n0;
    double acc = 0;
    for (int k = 0; k < w; k++) {
      int64_t j = ext(k - h, n0, mode);
      acc += j < 0 ? cv : s[j];
    }
    d[0] = acc;
    for (int64_t i = 1; i < n0; i++) {
      int64_t ja = ext(i + h, n0, mode), jr = ext(i - h - 1, n0, mode);
      acc += (ja < 0 ? cv : s[ja]) - (jr < 0 ? cv : s[jr]);
      d[i] = acc;
    }
  }
}

// axis 1 or 2: lines of length L with stride; outer index q, x in [0, n0)
__global__ void k_box_yz(const double *__restrict__ src, double *__restrict__ dst, int64_t n0, int64_t n1, int64_t n2,
                         int64_t block, int64_t outer, int axis, int w, int mode, double cv) {
  const int h = w / 2;
  const int64_t L = axis == 1 ? n1 : n2, stride = axis == 1 ? n0 : n0 * n1;
  for (int64_t t = gtid(); t < outer * n0; t += gstride()) {
    const int64_t x = t % n0, q = t / n0;
    int64_t base = axis == 1 ? (q / n2) * block + (q % n2) * n0 * n1 : (q / n1) * block + (q % n1) * n0;
    base += x;
    double acc = 0;
    for (int64_t k = -h; k <= h; k++) {
      int64_t j = ext(k, L, mode);
      acc += j < 0 ? cv : src[base + j * stride];
    }
    dst[base] = acc;
    for (int64_t c = 1; c < L; c++) {
      int64_t ja = ext(c + h, L, mode), jr = ext(c - h - 1, L, mode);
      acc += (ja < 0 ? cv : src[base + ja * stride]) - (jr < 0 ? cv : src[base + jr * stride]);
      dst[base + c * stride] = acc;
    }
  }
}

static lumen_status box_sum(lumen_ctx *ctx, const char *fn, const float *x, int power, double *out, double *tmp,
                            const lf_geom *g, int w, int mode, double cval) {
  const int64_t n = g->total;
  double *src = (g->spatial % 2 == 1) ? tmp : out;
  double *dst = src == tmp ? out : tmp;
  k_box_init<<<grid_for(n), 256>>>(x, n, power, src);
  double cv = power == 1 ? cval : cval * cval;
  for (int axis = 0; axis < g->spatial; axis++) {
    if (axis == 0) {
      const int64_t rows = g->n[1] * g->n[2] * g->batch;
      k_box_x<<<grid_for(rows, 64), 64>>>(src, dst, rows, g->n[0], w, mode, cv);
    } else {
      const int64_t outer = axis == 1 ? g->n[2] * g->batch : g->n[1] * g->batch;
      k_box_yz<<<grid_for(outer * g->n[0], 128), 128>>>(src, dst, g->n[0], g->n[1], g->n[2], g->block, outer, axis,
                                                         w, mode, cv);
    }
    cv *= w;
    double *t = src;
    src = dst;
    dst = t;
  }
  return launched(ctx, fn, "window sums");
}

// The window sums of x (s1) and x^2 (s2) over a window of width w on every spatial axis, and the
// window's voxel count N.
struct moments {
  scratch<double> s1, s2, tmp;
  double N = 1;
  lumen_status run(lumen_ctx *ctx, const char *fn, const float *x, const lf_geom *g, int w, int mode, double cval) {
    N = 1;
    for (int a = 0; a < g->spatial; a++) N *= w;
    LFC_TRY(s1.alloc(ctx, fn, g->total));
    LFC_TRY(s2.alloc(ctx, fn, g->total));
    LFC_TRY(tmp.alloc(ctx, fn, g->total));
    LFC_TRY(box_sum(ctx, fn, x, 1, s1.p, tmp.p, g, w, mode, cval));
    return box_sum(ctx, fn, x, 2, s2.p, tmp.p, g, w, mode, cval);
  }
};

// A call's input as float32 (src) and its window moments mo.
struct windowed_input {
  f32_input src;
  moments mo;
  lumen_status run(lumen_ctx *ctx, const char *fn, const lf_call *call, int w, int mode, double cval) {
    LFC_TRY(src.get(ctx, fn, call->in[0]));
    return mo.run(ctx, fn, src.x, &call->geom, w, mode, cval);
  }
};

__device__ __forceinline__ double win_var(double s1, double s2, double N, double *mean) {
  double m = __ddiv_rn(s1, N);
  double v = __dsub_rn(__ddiv_rn(s2, N), __dmul_rn(m, m));
  *mean = m;
  return v;
}

// Sauvola: mask (I > T) * fg, or the threshold map T
template <class Out>
__global__ void k_sauvola(const float *__restrict__ x, const double *__restrict__ s1, const double *__restrict__ s2,
                          int64_t n, double N, double k, double r, uint8_t fg, uint8_t *__restrict__ mask, Out *tmap) {
  for (int64_t i = gtid(); i < n; i += gstride()) {
    double m, v = win_var(s1[i], s2[i], N, &m);
    double sd = sqrt(v > 0 ? v : 0);
    float t = (float)__dmul_rn(m, __dadd_rn(1.0, __dmul_rn(k, __dsub_rn(__ddiv_rn(sd, r), 1.0))));
    if (tmap)
      st(tmap, i, t);
    else
      mask[i] = x[i] > t ? fg : 0;
  }
}

template <class Out>
__global__ void k_local_var(const double *__restrict__ s1, const double *__restrict__ s2, int64_t n, double N,
                            Out *__restrict__ out) {
  for (int64_t i = gtid(); i < n; i += gstride()) {
    double m, v = win_var(s1[i], s2[i], N, &m);
    st(out, i, (float)(v > 0 ? v : 0));
  }
}

// uint8 (lv^2 >= alpha * gv^2), gv = acc[1] / n (population variance), as the CPU path
__global__ void k_var_binarize(const double *__restrict__ s1, const double *__restrict__ s2, int64_t n, double N,
                               double alpha, const double *__restrict__ acc, uint8_t *__restrict__ out) {
  const double gv = acc[1] / (double)n;
  const double t = __dmul_rn(__dmul_rn(alpha, gv), gv);
  for (int64_t i = gtid(); i < n; i += gstride()) {
    double m, v = win_var(s1[i], s2[i], N, &m);
    v = v > 0 ? v : 0;
    out[i] = __dmul_rn(v, v) >= t;
  }
}

}  // namespace lfc

extern "C" lumen_status lf_cuda_sauvola(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_sauvola (cuda)");
  const lumen_sauvola_opts *o = (const lumen_sauvola_opts *)call->opts;
  const int64_t n = call->geom.total;
  windowed_input w;
  LFC_TRY(w.run(ctx, fn, call, o->window, LUMEN_BOUNDARY_MIRROR, 0.0));
  void *dst = lumen_image_data(call->out);
  const unsigned grid = grid_for(n);
  if (!o->output_threshold) {
    k_sauvola<float><<<grid, 256>>>(w.src.x, w.mo.s1.p, w.mo.s2.p, n, w.mo.N, o->k, o->r, (uint8_t)o->foreground,
                                    (uint8_t *)dst, (float *)nullptr);
  } else {
    LFC_LAUNCH_OUT(call->out, k_sauvola, grid, 256, w.src.x, w.mo.s1.p, w.mo.s2.p, n, w.mo.N, o->k, o->r, 0, nullptr);
  }
  return launched(ctx, fn, "Sauvola kernel");
}

extern "C" lumen_status lf_cuda_local_variance(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_local_variance (cuda)");
  const lumen_local_variance_opts *o = (const lumen_local_variance_opts *)call->opts;
  const int64_t n = call->geom.total;
  windowed_input w;
  LFC_TRY(w.run(ctx, fn, call, o->window, (int)o->mode, o->cval));
  LFC_LAUNCH_OUT(call->out, k_local_var, grid_for(n), 256, w.mo.s1.p, w.mo.s2.p, n, w.mo.N);
  return launched(ctx, fn, "local variance kernel");
}

extern "C" lumen_status lf_cuda_variance_binarize(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_variance_binarize (cuda)");
  const lumen_local_variance_opts *o = (const lumen_local_variance_opts *)call->opts;
  const int64_t n = call->geom.total;
  windowed_input w;
  scratch<double> acc;
  LFC_TRY(w.run(ctx, fn, call, o->window, (int)o->mode, o->cval));
  LFC_TRY(acc.alloc(ctx, fn, 2));
  LFC_TRY(mean_var(ctx, fn, w.src.x, n, acc.p));
  k_var_binarize<<<grid_for(n), 256>>>(w.mo.s1.p, w.mo.s2.p, n, w.mo.N, o->alpha, acc.p,
                                       (uint8_t *)lumen_image_data(call->out));
  return launched(ctx, fn, "binarisation kernel");
}
