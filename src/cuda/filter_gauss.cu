// CUDA linear filters: separable Gaussian passes (Gaussian, Gaussian batches, DoG, LoG) and generic
// convolution.
//
// Gaussian, 2-D planes: one fused kernel per plane tile (64 x 32 outputs): the tile and its halo are
// loaded once into shared memory (boundary mode applied, float16/bfloat16 input decoded on load),
// the x pass writes a second shared tile, the y pass writes the output in its storage type. One
// launch, one read and one write of the image. 3-D with larger radii: the fused xy kernel writes a
// float32 intermediate, then a z pass stages 32 + 2r planes of a column strip in shared memory. Radii whose
// tiles do not fit in 48 KB of shared memory use one generic launch per axis.
// 3-D with radii up to about 8 (sigma 2): one fully fused kernel (k_fused_xyz, a ring of xy-filtered
// planes in shared memory), so FULL and HALF move only the input and the output.
// Every tap sum is evaluated in the CPU path's order (centre tap, then w[k] * (left + right) for
// k = 0..r-1) with __fmul_rn/__fadd_rn, so float32 results equal the CPU path bit for bit.
#include <stdlib.h>
#include <string.h>
#include <vector>
#include "cuda/filter_common.cuh"

namespace lfc {

#define GX 64  // fused tile: outputs along x
#define GY 32  // fused tile: outputs along y
#define ZB 32  // z pass: outputs per thread column
#define ZT 128 // z pass: threads (plane positions) per block
#define SMEM_MAX (48 * 1024)

__device__ __forceinline__ int exti(int i, int n, int mode) {
  return (i >= 0 && i < n) ? i : (int)ext(i, n, mode);
}

// symmetric taps, CPU order
__device__ __forceinline__ float taps(const float *w, int r, float c, const float *lo, const float *hi, int step) {
  float acc = __fmul_rn(w[r], c);
  for (int k = 0; k < r; k++) acc = __fadd_rn(acc, __fmul_rn(w[k], __fadd_rn(lo[k * step], hi[-k * step])));
  return acc;
}

// fused x+y pass over planes (z * batch of them); wx, wy in global memory
template <class In, class Out>
__global__ void __launch_bounds__(256) k_fused_xy(const In *__restrict__ in, Out *__restrict__ out, int n0, int n1,
                                                  int64_t planes, const float *__restrict__ wx, int rx,
                                                  const float *__restrict__ wy, int ry, int mode, float cval) {
  extern __shared__ float sm[];
  const int TW = GX + 2 * rx, TH = GY + 2 * ry;
  float *sw = sm;                  // 2rx+1 + 2ry+1 weights
  float *tin = sw + (2 * rx + 1) + (2 * ry + 1);
  float *tmid = tin + TH * TW;
  float *swy = sw + 2 * rx + 1;
  const int tid = threadIdx.x, nt = blockDim.x;
  for (int i = tid; i <= 2 * rx; i += nt) sw[i] = wx[i];
  for (int i = tid; i <= 2 * ry; i += nt) swy[i] = wy[i];
  const int x0 = blockIdx.x * GX, y0 = blockIdx.y * GY;
  const bool cst = mode == LUMEN_BOUNDARY_CONSTANT;
  for (int64_t p = blockIdx.z; p < planes; p += gridDim.z) {
    const In *src = in + p * (int64_t)n0 * n1;
    __syncthreads();
    for (int i = tid; i < TH * TW; i += nt) {
      const int row = i / TW, col = i - row * TW;
      const int ey = exti(y0 - ry + row, n1, mode), ex = exti(x0 - rx + col, n0, mode);
      tin[i] = (ey < 0 || ex < 0) ? cval : ld(src, (int64_t)ey * n0 + ex);
    }
    __syncthreads();
    for (int i = tid; i < TH * GX; i += nt) {
      const int row = i / GX, col = i - row * GX;
      const int gy = y0 - ry + row;
      float v;
      if (cst && (gy < 0 || gy >= n1)) {
        v = cval;  // rows outside the image are the constant itself (not x-filtered), as on the CPU
      } else {
        const float *t = tin + row * TW + col;
        v = taps(sw, rx, t[rx], t, t + 2 * rx, 1);
      }
      tmid[i] = v;
    }
    __syncthreads();
    Out *dst = out + p * (int64_t)n0 * n1;
    for (int i = tid; i < GY * GX; i += nt) {
      const int oy = i / GX, col = i - oy * GX;
      const int x = x0 + col, y = y0 + oy;
      if (x < n0 && y < n1) {
        const float *t = tmid + oy * GX + col;
        st(dst, (int64_t)y * n0 + x, taps(swy, ry, t[ry * GX], t, t + 2 * ry * GX, GX));
      }
    }
  }
}

static size_t fused_smem(int rx, int ry) {
  return sizeof(float) * ((size_t)(2 * rx + 1) + (2 * ry + 1) + (size_t)(GY + 2 * ry) * (GX + 2 * rx) +
                          (size_t)(GY + 2 * ry) * GX);
}

// 3-D, fully fused: a block owns a 32 x 16 column of outputs and marches along z through a chunk
// of ZC output planes; every input plane of the chunk (+- rz) is xy-filtered once into a ring of
// 2rz+1 planes in shared memory and the z taps combine ring planes. One read of the input (halo
// re-reads hit L2), one write of the output, no intermediate in device memory.
#define FX 32
#define FY 16
#define ZC 64
template <class In, class Out>
__global__ void __launch_bounds__(256) k_fused_xyz(const In *__restrict__ in, Out *__restrict__ out, int n0, int n1,
                                                   int n2, int64_t batch, const float *__restrict__ wx, int rx,
                                                   const float *__restrict__ wy, int ry, const float *__restrict__ wz,
                                                   int rz, int mode, float cval) {
  extern __shared__ float sm[];
  const int TW = FX + 2 * rx, TH = FY + 2 * ry, M = 2 * rz + 1, P = FX * FY;
  float *swx = sm, *swy = swx + 2 * rx + 1, *swz = swy + 2 * ry + 1;
  float *tin = swz + M, *tmid = tin + TH * TW, *ring = tmid + TH * FX;
  const int tid = threadIdx.x, nt = blockDim.x;
  for (int i = tid; i <= 2 * rx; i += nt) swx[i] = wx[i];
  for (int i = tid; i <= 2 * ry; i += nt) swy[i] = wy[i];
  for (int i = tid; i < M; i += nt) swz[i] = wz[i];
  const int x0 = blockIdx.x * FX, y0 = blockIdx.y * FY;
  const int chunks = (n2 + ZC - 1) / ZC;
  const bool cst = mode == LUMEN_BOUNDARY_CONSTANT;
  const int64_t plane = (int64_t)n0 * n1;
  for (int64_t item = blockIdx.z; item < batch * chunks; item += gridDim.z) {
    const int64_t b = item / chunks;
    const int z0 = (int)(item % chunks) * ZC, z1 = min(z0 + ZC, n2);
    const In *src = in + b * plane * n2;
    Out *dst = out + b * plane * n2;
    for (int zi = z0 - rz; zi < z1 + rz; zi++) {
      const int slot = (zi - (z0 - rz)) % M;
      float *rp = ring + slot * P;
      const int ez = exti(zi, n2, mode);
      __syncthreads();  // the previous z step has read the ring slot and the tiles
      if (ez < 0) {
        for (int i = tid; i < P; i += nt) rp[i] = cval;  // planes outside: the constant (CPU: a cval row)
      } else {
        const In *pl = src + (int64_t)ez * plane;
        for (int i = tid; i < TH * TW; i += nt) {
          const int row = i / TW, col = i - row * TW;
          const int ey = exti(y0 - ry + row, n1, mode), ex = exti(x0 - rx + col, n0, mode);
          tin[i] = (ey < 0 || ex < 0) ? cval : ld(pl, (int64_t)ey * n0 + ex);
        }
        __syncthreads();
        for (int i = tid; i < TH * FX; i += nt) {
          const int row = i / FX, col = i - row * FX;
          const int gy = y0 - ry + row;
          float v;
          if (cst && (gy < 0 || gy >= n1)) {
            v = cval;
          } else {
            const float *t = tin + row * TW + col;
            v = taps(swx, rx, t[rx], t, t + 2 * rx, 1);
          }
          tmid[i] = v;
        }
        __syncthreads();
        for (int i = tid; i < P; i += nt) {
          const int oy = i / FX, col = i - oy * FX;
          const float *t = tmid + oy * FX + col;
          rp[i] = taps(swy, ry, t[ry * FX], t, t + 2 * ry * FX, FX);
        }
      }
      if (zi < z0 + rz) continue;
      __syncthreads();
      const int z = zi - rz;  // every plane z - rz .. z + rz is in the ring now
      const int base = z - z0;  // plane z + d sits in slot (base + rz + d) % M
      for (int i = tid; i < P; i += nt) {
        const int oy = i / FX, col = i - oy * FX;
        const int x = x0 + col, y = y0 + oy;
        if (x >= n0 || y >= n1) continue;
        float acc = __fmul_rn(swz[rz], ring[((base + rz) % M) * P + i]);
        for (int k = 0; k < rz; k++)
          acc = __fadd_rn(acc, __fmul_rn(swz[k], __fadd_rn(ring[((base + k) % M) * P + i],
                                                           ring[((base + 2 * rz - k) % M) * P + i])));
        st(dst, (int64_t)z * plane + (int64_t)y * n0 + x, acc);
      }
    }
  }
}

static size_t fused3_smem(int rx, int ry, int rz) {
  return sizeof(float) * ((size_t)(2 * rx + 1) + (2 * ry + 1) + (2 * rz + 1) + (size_t)(FY + 2 * ry) * (FX + 2 * rx) +
                          (size_t)(FY + 2 * ry) * FX + (size_t)(2 * rz + 1) * FX * FY);
}

// one axis, any radius: one thread per output, reads through the cache
template <class In, class Out>
__global__ void k_pass(const In *__restrict__ src, Out *__restrict__ dst, int64_t n0, int64_t n1, int64_t n2,
                       int64_t total, int axis, const float *__restrict__ w, int r, int mode, float cval) {
  const int64_t L = axis == 0 ? n0 : axis == 1 ? n1 : n2;
  const int64_t stride = axis == 0 ? 1 : axis == 1 ? n0 : n0 * n1;
  for (int64_t i = gtid(); i < total; i += gstride()) {
    const int64_t c = (i / stride) % L;
    const int64_t base = i - c * stride;
    int64_t e = ext(c, L, mode);
    float acc = __fmul_rn(w[r], ld(src, base + e * stride));
    for (int k = 0; k < r; k++) {
      int64_t ea = ext(c + k - r, L, mode), eb = ext(c + r - k, L, mode);
      float a = ea < 0 ? cval : ld(src, base + ea * stride);
      float b = eb < 0 ? cval : ld(src, base + eb * stride);
      acc = __fadd_rn(acc, __fmul_rn(w[k], __fadd_rn(a, b)));
    }
    st(dst, i, acc);
  }
}

// z pass: a block stages ZB + 2r planes of ZT plane positions in shared memory
template <class Out>
__global__ void __launch_bounds__(ZT) k_zpass(const float *__restrict__ src, Out *__restrict__ dst, int64_t plane,
                                              int n2, int64_t batch, const float *__restrict__ w, int r, int mode,
                                              float cval) {
  extern __shared__ float sm[];
  float *sw = sm, *col = sm + 2 * r + 1;
  const int t = threadIdx.x;
  for (int i = t; i <= 2 * r; i += ZT) sw[i] = w[i];
  const int64_t pos = (int64_t)blockIdx.x * ZT + t;
  const int z0 = blockIdx.y * ZB;
  const int H = ZB + 2 * r;
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
    const float *s = src + b * plane * n2;
    __syncthreads();
    if (pos < plane)
      for (int k = 0; k < H; k++) {
        int e = exti(z0 - r + k, n2, mode);
        col[k * ZT + t] = e < 0 ? cval : s[(int64_t)e * plane + pos];
      }
    __syncthreads();
    if (pos < plane)
      for (int j = 0; j < ZB && z0 + j < n2; j++) {
        const float *c = col + j * ZT + t;
        st(dst, b * plane * n2 + (int64_t)(z0 + j) * plane + pos, taps(sw, r, c[r * ZT], c, c + 2 * r * ZT, ZT));
      }
  }
}

static size_t zpass_smem(int r) { return sizeof(float) * ((size_t)(2 * r + 1) + (size_t)(ZB + 2 * r) * ZT); }

// --------------------------------------------------------------- host: launch by storage type
enum st_kind { ST_F32 = 0, ST_F16, ST_BF16 };
static st_kind kind_of(lumen_dtype t) {
  return t == LUMEN_DTYPE_FLOAT16 ? ST_F16 : t == LUMEN_DTYPE_BFLOAT16 ? ST_BF16 : ST_F32;
}

template <class In, class Out>
static void launch_fused(const void *in, void *out, const lf_geom *g, const float *wx, int rx, const float *wy,
                         int ry, int mode, float cval) {
  const int64_t planes = g->n[2] * g->batch;
  dim3 grid((unsigned)((g->n[0] + GX - 1) / GX), (unsigned)((g->n[1] + GY - 1) / GY),
            (unsigned)(planes < 65535 ? planes : 65535));
  k_fused_xy<In, Out><<<grid, 256, fused_smem(rx, ry)>>>((const In *)in, (Out *)out, (int)g->n[0], (int)g->n[1],
                                                         planes, wx, rx, wy, ry, mode, cval);
}

template <class In>
static void fused_out(st_kind o, const void *in, void *out, const lf_geom *g, const float *wx, int rx,
                      const float *wy, int ry, int mode, float cval) {
  if (o == ST_F16)
    launch_fused<In, __half>(in, out, g, wx, rx, wy, ry, mode, cval);
  else if (o == ST_BF16)
    launch_fused<In, __nv_bfloat16>(in, out, g, wx, rx, wy, ry, mode, cval);
  else
    launch_fused<In, float>(in, out, g, wx, rx, wy, ry, mode, cval);
}

static void fused(st_kind i, st_kind o, const void *in, void *out, const lf_geom *g, const float *wx, int rx,
                  const float *wy, int ry, int mode, float cval) {
  if (i == ST_F16)
    fused_out<__half>(o, in, out, g, wx, rx, wy, ry, mode, cval);
  else if (i == ST_BF16)
    fused_out<__nv_bfloat16>(o, in, out, g, wx, rx, wy, ry, mode, cval);
  else
    fused_out<float>(o, in, out, g, wx, rx, wy, ry, mode, cval);
}

template <class In, class Out>
static void launch_fused3(const void *in, void *out, const lf_geom *g, const float *const *w, const int *r, int mode,
                          float cval) {
  const int64_t items = g->batch * ((g->n[2] + ZC - 1) / ZC);
  dim3 grid((unsigned)((g->n[0] + FX - 1) / FX), (unsigned)((g->n[1] + FY - 1) / FY),
            (unsigned)(items < 65535 ? items : 65535));
  k_fused_xyz<In, Out><<<grid, 256, fused3_smem(r[0], r[1], r[2])>>>(
      (const In *)in, (Out *)out, (int)g->n[0], (int)g->n[1], (int)g->n[2], g->batch, w[0], r[0], w[1], r[1], w[2], r[2],
      mode, cval);
}

template <class In>
static void fused3_out(st_kind o, const void *in, void *out, const lf_geom *g, const float *const *w, const int *r,
                       int mode, float cval) {
  if (o == ST_F16)
    launch_fused3<In, __half>(in, out, g, w, r, mode, cval);
  else if (o == ST_BF16)
    launch_fused3<In, __nv_bfloat16>(in, out, g, w, r, mode, cval);
  else
    launch_fused3<In, float>(in, out, g, w, r, mode, cval);
}

static void fused3(st_kind i, st_kind o, const void *in, void *out, const lf_geom *g, const float *const *w,
                   const int *r, int mode, float cval) {
  if (i == ST_F16)
    fused3_out<__half>(o, in, out, g, w, r, mode, cval);
  else if (i == ST_BF16)
    fused3_out<__nv_bfloat16>(o, in, out, g, w, r, mode, cval);
  else
    fused3_out<float>(o, in, out, g, w, r, mode, cval);
}

// generic pass: (any storage -> float32) or (float32 -> any storage)
static void pass(st_kind i, st_kind o, const void *in, void *out, const lf_geom *g, int axis, const float *w, int r,
                 int mode, float cval) {
  const int64_t n = g->total;
  const unsigned grid = grid_for(n);
  const int64_t n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
  if (i == ST_F16)
    k_pass<__half, float><<<grid, 256>>>((const __half *)in, (float *)out, n0, n1, n2, n, axis, w, r, mode, cval);
  else if (i == ST_BF16)
    k_pass<__nv_bfloat16, float><<<grid, 256>>>((const __nv_bfloat16 *)in, (float *)out, n0, n1, n2, n, axis, w, r,
                                                mode, cval);
  else if (o == ST_F16)
    k_pass<float, __half><<<grid, 256>>>((const float *)in, (__half *)out, n0, n1, n2, n, axis, w, r, mode, cval);
  else if (o == ST_BF16)
    k_pass<float, __nv_bfloat16><<<grid, 256>>>((const float *)in, (__nv_bfloat16 *)out, n0, n1, n2, n, axis, w, r,
                                                mode, cval);
  else
    k_pass<float, float><<<grid, 256>>>((const float *)in, (float *)out, n0, n1, n2, n, axis, w, r, mode, cval);
}

static void zpass(st_kind o, const float *in, void *out, const lf_geom *g, const float *w, int r, int mode,
                  float cval) {
  const int64_t plane = g->n[0] * g->n[1];
  dim3 grid((unsigned)((plane + ZT - 1) / ZT), (unsigned)((g->n[2] + ZB - 1) / ZB),
            (unsigned)(g->batch < 65535 ? g->batch : 65535));
  const size_t sm = zpass_smem(r);
  const int n2 = (int)g->n[2];
  if (o == ST_F16)
    k_zpass<__half><<<grid, ZT, sm>>>(in, (__half *)out, plane, n2, g->batch, w, r, mode, cval);
  else if (o == ST_BF16)
    k_zpass<__nv_bfloat16><<<grid, ZT, sm>>>(in, (__nv_bfloat16 *)out, plane, n2, g->batch, w, r, mode, cval);
  else
    k_zpass<float><<<grid, ZT, sm>>>(in, (float *)out, plane, n2, g->batch, w, r, mode, cval);
}

// Separable filter with per-axis Gaussian kernels of the given derivative orders: in (float32,
// float16 or bfloat16, kind ik) -> out (kind ok). Returns a launch status; no host sync.
static lumen_status separable(lumen_ctx *ctx, const char *fn, const void *in, st_kind ik, void *out, st_kind ok,
                              const lf_geom *g, const double *sigma, const int *radius, const int *orders, int mode,
                              float cval) {
  const int S = g->spatial;
  std::vector<float> hw;
  int off[3] = {0, 0, 0};
  for (int a = 0; a < S; a++) {
    off[a] = (int)hw.size();
    hw.resize(hw.size() + 2 * (size_t)radius[a] + 1);
    lf_gaussian_kernel(sigma[a], orders[a], radius[a], hw.data() + off[a]);
  }
  scratch<float> w;
  LFC_TRY(w.alloc(ctx, fn, (int64_t)hw.size()));
  cudaError_t err = cudaMemcpyAsync(w.p, hw.data(), hw.size() * sizeof(float), cudaMemcpyHostToDevice, 0);
  if (err != cudaSuccess) return fail(ctx, err, fn, "kernel taps copy");
  const float *wa[3] = {w.p + off[0], w.p + off[1], w.p + off[2]};
  const bool int_ok = g->n[0] < INT32_MAX && g->n[1] < INT32_MAX && g->n[2] < INT32_MAX;
  if (S == 1) {
    if (ik != ST_F32 && ok != ST_F32)
      return lumen_fail(ctx, LUMEN_ERR_INTERNAL, "%s: 1-D pass from reduced to reduced precision", fn);
    pass(ik, ok, in, out, g, 0, wa[0], radius[0], mode, cval);
    return launched(ctx, fn, "Gaussian pass");
  }
  if (S == 3 && int_ok && fused3_smem(radius[0], radius[1], radius[2]) <= SMEM_MAX &&
      lumen_ctx_cuda_fused_gaussian_3d(ctx)) {
    fused3(ik, ok, in, out, g, wa, radius, mode, cval);
    return launched(ctx, fn, "Gaussian xyz kernel");
  }
  scratch<float> tmp;
  const bool fast_xy = int_ok && fused_smem(radius[0], radius[1]) <= SMEM_MAX;
  const bool fast_z = S == 3 && int_ok && zpass_smem(radius[2]) <= SMEM_MAX;
  const st_kind xy_out = S == 3 ? ST_F32 : ok;
  void *xy = out;
  if (S == 3 || !fast_xy) LFC_TRY(tmp.alloc(ctx, fn, g->total));
  if (S == 3) xy = tmp.p;
  if (fast_xy) {
    fused(ik, xy_out, in, xy, g, wa[0], radius[0], wa[1], radius[1], mode, cval);
  } else {
    scratch<float> t2;
    float *xpass = tmp.p;
    if (S == 3) {
      LFC_TRY(t2.alloc(ctx, fn, g->total));
      xpass = t2.p;
    }
    pass(ik, ST_F32, in, xpass, g, 0, wa[0], radius[0], mode, cval);
    pass(ST_F32, xy_out, xpass, xy, g, 1, wa[1], radius[1], mode, cval);
    LFC_TRY(launched(ctx, fn, "Gaussian xy passes"));
  }
  if (S == 3) {
    if (fast_z)
      zpass(ok, tmp.p, out, g, wa[2], radius[2], mode, cval);
    else
      pass(ST_F32, ok, tmp.p, out, g, 2, wa[2], radius[2], mode, cval);
  }
  return launched(ctx, fn, "Gaussian passes");
}

// --------------------------------------------------------------- combining kernels
template <class Out>
__global__ void k_sub(const float *__restrict__ a, const float *__restrict__ b, int64_t n, Out *__restrict__ out) {
  for (int64_t i = gtid(); i < n; i += gstride()) st(out, i, __fsub_rn(a[i], b[i]));
}
// a += b (float), or out = a + b (storage) on the last term
template <class Out>
__global__ void k_add(float *__restrict__ a, const float *__restrict__ b, int64_t n, Out *__restrict__ out) {
  for (int64_t i = gtid(); i < n; i += gstride()) {
    float v = __fadd_rn(a[i], b[i]);
    if (out)
      st(out, i, v);
    else
      a[i] = v;
  }
}

// reference LoG: the 2S+1-point Laplacian with MIRROR borders of the Gaussian tmp
template <class Out>
__global__ void k_laplace_discrete(const float *__restrict__ t, int64_t n0, int64_t n1, int64_t n2, int64_t block,
                                   int64_t total, int S, Out *__restrict__ out) {
  const int M = LUMEN_BOUNDARY_MIRROR;
  for (int64_t i = gtid(); i < total; i += gstride()) {
    const int64_t x = i % n0, y = (i / n0) % n1, z = (i / (n0 * n1)) % n2;
    const float *blk = t + (i / block) * block;
    const float c = t[i], c2 = __fmul_rn(2.0f, c);
    const int64_t row = z * n0 * n1 + y * n0;
    float acc = __fadd_rn(0.0f, __fsub_rn(__fadd_rn(blk[row + ext(x - 1, n0, M)], blk[row + ext(x + 1, n0, M)]), c2));
    if (S > 1)
      acc = __fadd_rn(acc, __fsub_rn(__fadd_rn(blk[z * n0 * n1 + ext(y - 1, n1, M) * n0 + x],
                                               blk[z * n0 * n1 + ext(y + 1, n1, M) * n0 + x]),
                                     c2));
    if (S > 2)
      acc = __fadd_rn(acc, __fsub_rn(__fadd_rn(blk[ext(z - 1, n2, M) * n0 * n1 + y * n0 + x],
                                               blk[ext(z + 1, n2, M) * n0 * n1 + y * n0 + x]),
                                     c2));
    st(out, i, acc);
  }
}

// generic correlation with the pre-flipped kernel: out[i] = sum_j k[j] in[i + j - centre]
template <class Out>
__global__ void k_convolve(const float *__restrict__ in, int64_t n0, int64_t n1, int64_t n2, int64_t total,
                           const float *__restrict__ k, int64_t kx, int64_t ky, int64_t kz, int64_t cx, int64_t cy,
                           int64_t cz, int mode, float cval, Out *__restrict__ out) {
  for (int64_t i = gtid(); i < total; i += gstride()) {
    const int64_t x = i % n0, y = (i / n0) % n1, z = (i / (n0 * n1)) % n2;
    const float *blk = in + (i / (n0 * n1 * n2)) * (n0 * n1 * n2);
    float acc = 0.0f;
    for (int64_t dz = 0; dz < kz; dz++) {
      const int64_t zz = ext(z + dz - cz, n2, mode);
      for (int64_t dy = 0; dy < ky; dy++) {
        const int64_t yy = ext(y + dy - cy, n1, mode);
        const float *kr = k + (dz * ky + dy) * kx;
        const float *row = (zz < 0 || yy < 0) ? nullptr : blk + (zz * n1 + yy) * n0;
        for (int64_t dx = 0; dx < kx; dx++) {
          const float wk = kr[dx];
          if (wk == 0.0f) continue;
          const int64_t xx = row ? ext(x + dx - cx, n0, mode) : -1;
          const float v = xx < 0 ? cval : __ldg(row + xx);
          acc = __fadd_rn(acc, __fmul_rn(wk, v));
        }
      }
    }
    st(out, i, acc);
  }
}

// The call's input as float32/float16/bfloat16 device data (other dtypes converted to float32).
static lumen_status storage_input(lumen_ctx *ctx, const char *fn, const lumen_image *im, const void **p, st_kind *k,
                                  scratch<float> *owned) {
  lumen_dtype t = lumen_image_dtype(im);
  if (t == LUMEN_DTYPE_FLOAT16 || t == LUMEN_DTYPE_BFLOAT16) {
    *p = lumen_image_const_data(im);
    *k = kind_of(t);
    return LUMEN_OK;
  }
  const float *f;
  LFC_TRY(input_f32(ctx, fn, im, &f, owned));
  *p = f;
  *k = ST_F32;
  return LUMEN_OK;
}

}  // namespace lfc

using namespace lfc;

extern "C" lumen_status lf_cuda_gaussian(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_gaussian (cuda)");
  const lf_gauss_params *p = (const lf_gauss_params *)call->params;
  const int orders[3] = {0, 0, 0};
  const void *in;
  st_kind ik;
  scratch<float> conv;
  LFC_TRY(storage_input(ctx, fn, call->in[0], &in, &ik, &conv));
  const st_kind ok = kind_of(lumen_image_dtype(call->out));
  if (call->geom.spatial == 1 && ik != ST_F32 && ok != ST_F32) {
    // 1-D with reduced precision in and out: through a float32 intermediate
    scratch<float> t;
    LFC_TRY(t.alloc(ctx, fn, call->geom.total));
    LFC_TRY(separable(ctx, fn, in, ik, t.p, ST_F32, &call->geom, p->sigma[0], p->radius[0], orders, p->mode, p->cval));
    return store_f32(ctx, fn, t.p, call->out, call->geom.total);
  }
  return separable(ctx, fn, in, ik, lumen_image_data(call->out), ok, &call->geom, p->sigma[0], p->radius[0], orders,
                   p->mode, p->cval);
}

extern "C" lumen_status lf_cuda_dog(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_dog (cuda)");
  const lf_gauss_params *p = (const lf_gauss_params *)call->params;
  const int orders[3] = {0, 0, 0};
  const int64_t n = call->geom.total;
  const void *in;
  st_kind ik;
  scratch<float> conv, lo, hi;
  LFC_TRY(storage_input(ctx, fn, call->in[0], &in, &ik, &conv));
  LFC_TRY(lo.alloc(ctx, fn, n));
  LFC_TRY(hi.alloc(ctx, fn, n));
  LFC_TRY(separable(ctx, fn, in, ik, lo.p, ST_F32, &call->geom, p->sigma[0], p->radius[0], orders, p->mode, p->cval));
  LFC_TRY(separable(ctx, fn, in, ik, hi.p, ST_F32, &call->geom, p->sigma[1], p->radius[1], orders, p->mode, p->cval));
  LFC_LAUNCH_OUT(call->out, k_sub, grid_for(n), 256, lo.p, hi.p, n);
  return launched(ctx, fn, "difference kernel");
}

extern "C" lumen_status lf_cuda_laplace(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_gaussian_laplace (cuda)");
  const lf_gauss_params *p = (const lf_gauss_params *)call->params;
  const lf_geom *g = &call->geom;
  const int64_t n = g->total;
  const void *in;
  st_kind ik;
  scratch<float> conv, acc, term;
  LFC_TRY(storage_input(ctx, fn, call->in[0], &in, &ik, &conv));
  LFC_TRY(acc.alloc(ctx, fn, n));
  if (p->discrete) {
    const int orders[3] = {0, 0, 0};
    LFC_TRY(separable(ctx, fn, in, ik, acc.p, ST_F32, g, p->sigma[0], p->radius[0], orders, p->mode, p->cval));
    LFC_LAUNCH_OUT(call->out, k_laplace_discrete, grid_for(n), 256, acc.p, g->n[0], g->n[1], g->n[2], g->block, n,
               g->spatial);
    return launched(ctx, fn, "Laplacian kernel");
  }
  // scipy.ndimage.gaussian_laplace: sum over axes of the second derivative along that axis
  if (g->spatial > 1) LFC_TRY(term.alloc(ctx, fn, n));
  for (int a = 0; a < g->spatial; a++) {
    int orders[3] = {0, 0, 0};
    orders[a] = 2;
    LFC_TRY(separable(ctx, fn, in, ik, a == 0 ? acc.p : term.p, ST_F32, g, p->sigma[0], p->radius[0], orders, p->mode,
                      p->cval));
    if (a > 0 && a < g->spatial - 1) k_add<float><<<grid_for(n), 256>>>(acc.p, term.p, n, (float *)nullptr);
    if (a > 0 && a == g->spatial - 1) LFC_LAUNCH_OUT(call->out, k_add, grid_for(n), 256, acc.p, term.p, n);
  }
  if (g->spatial == 1) return store_f32(ctx, fn, acc.p, call->out, n);
  return launched(ctx, fn, "LoG sum");
}

extern "C" lumen_status lf_cuda_convolve(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_convolve (cuda)");
  const lf_conv_params *p = (const lf_conv_params *)call->params;
  const lf_geom *g = &call->geom;
  const int64_t n = g->total;
  const float *x;
  scratch<float> conv, k;
  LFC_TRY(input_f32(ctx, fn, call->in[0], &x, &conv));
  const int64_t kn = p->kd[0] * p->kd[1] * p->kd[2];
  LFC_TRY(k.alloc(ctx, fn, kn));
  cudaError_t err = cudaMemcpyAsync(k.p, p->kernel, (size_t)kn * sizeof(float), cudaMemcpyHostToDevice, 0);
  if (err != cudaSuccess) return fail(ctx, err, fn, "kernel copy");
  LFC_LAUNCH_OUT(call->out, k_convolve, grid_for(n), 256, x, g->n[0], g->n[1], g->n[2], n, k.p, p->kd[0], p->kd[1],
             p->kd[2], p->centre[0], p->centre[1], p->centre[2], (int)p->mode, p->cval);
  return launched(ctx, fn, "convolution kernel");
}
