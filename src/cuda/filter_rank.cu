// CUDA rank filters: median (3x3, 5x5 and 3x3x3 through the CPU path's pruned selection networks in
// registers; other windows up to 128 values by a per-thread selection) and morphology (grey and
// binary erosion, dilation, opening, closing, white top-hat with disk, square, ball and cube
// elements, the element as x-runs as on the CPU; pixels outside the image never win).
// Medians and min/max are exact data values, so results equal the CPU path bit for bit (NaN inputs
// excepted: the order of NaN in comparisons is not specified across backends).
#include <math.h>
#include <vector>
#include "cuda/filter_common.cuh"
#include "filter/median_nets.h"

namespace lfc {

__device__ __forceinline__ void st(uint8_t *p, int64_t i, float v) { p[i] = v > 0.5f; }

#define MED_LOCAL 128

// neighbour offsets along one axis with the boundary mode; -1 = cval
__device__ __forceinline__ void axis_idx(int64_t c, int64_t n, int h, int mode, int64_t *idx) {
  for (int d = -h; d <= h; d++) idx[d + h] = ext(c + d, n, mode);
}

#define CE(a, b)              \
  {                           \
    float t_ = fminf(a, b);   \
    b = fmaxf(a, b);          \
    a = t_;                   \
  }
#define MN(a, b) a = fminf(a, b);
#define MX(a, b) b = fmaxf(a, b);

// The 2-D window of half-width H around voxel i of a stack of n0 x n1 planes: the plane's data and,
// per axis, the window's indices in it (-1: outside, cval).
template <int H>
struct plane_window {
  const float *blk;
  int64_t xs[2 * H + 1], ys[2 * H + 1];
  __device__ __forceinline__ plane_window(const float *in, int64_t i, int64_t n0, int64_t n1, int mode) {
    const int64_t x = i % n0, y = (i / n0) % n1;
    blk = in + (i / (n0 * n1)) * (n0 * n1);
    axis_idx(x, n0, H, mode, xs);
    axis_idx(y, n1, H, mode, ys);
  }
};

template <class Out>
__global__ void k_med9(const float *__restrict__ in, int64_t n0, int64_t n1, int64_t total, int mode, float cval,
                       Out *__restrict__ out) {
  for (int64_t i = gtid(); i < total; i += gstride()) {
    const plane_window<1> w(in, i, n0, n1, mode);
    float r0, r1, r2, r3, r4, r5, r6, r7, r8;
#define L9(j, a, b) r##j = (w.xs[a] < 0 || w.ys[b] < 0) ? cval : __ldg(w.blk + w.ys[b] * n0 + w.xs[a]);
    L9(0, 0, 0) L9(1, 1, 0) L9(2, 2, 0) L9(3, 0, 1) L9(4, 1, 1) L9(5, 2, 1) L9(6, 0, 2) L9(7, 1, 2) L9(8, 2, 2)
#undef L9
    LF_MED9_NET
    st(out, i, LF_MED9_OUT);
  }
}

template <class Out>
__global__ void k_med25(const float *__restrict__ in, int64_t n0, int64_t n1, int64_t total, int mode, float cval,
                        Out *__restrict__ out) {
  for (int64_t i = gtid(); i < total; i += gstride()) {
    const plane_window<2> w(in, i, n0, n1, mode);
    float r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15, r16, r17, r18, r19, r20, r21, r22,
        r23, r24;
#define L25(j, a, b) r##j = (w.xs[a] < 0 || w.ys[b] < 0) ? cval : __ldg(w.blk + w.ys[b] * n0 + w.xs[a]);
#define ROW25(b, j0, j1, j2, j3, j4) L25(j0, 0, b) L25(j1, 1, b) L25(j2, 2, b) L25(j3, 3, b) L25(j4, 4, b)
    ROW25(0, 0, 1, 2, 3, 4) ROW25(1, 5, 6, 7, 8, 9) ROW25(2, 10, 11, 12, 13, 14) ROW25(3, 15, 16, 17, 18, 19)
    ROW25(4, 20, 21, 22, 23, 24)
#undef ROW25
#undef L25
    LF_MED25_NET
    st(out, i, LF_MED25_OUT);
  }
}

template <class Out>
__global__ void k_med27(const float *__restrict__ in, int64_t n0, int64_t n1, int64_t n2, int64_t total, int mode,
                        float cval, Out *__restrict__ out) {
  for (int64_t i = gtid(); i < total; i += gstride()) {
    const int64_t x = i % n0, y = (i / n0) % n1, z = (i / (n0 * n1)) % n2;
    const float *blk = in + (i / (n0 * n1 * n2)) * (n0 * n1 * n2);
    int64_t xs[3], ys[3], zs[3];
    axis_idx(x, n0, 1, mode, xs);
    axis_idx(y, n1, 1, mode, ys);
    axis_idx(z, n2, 1, mode, zs);
    float r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15, r16, r17, r18, r19, r20, r21, r22,
        r23, r24, r25, r26;
#define L27(j, a, b, c) \
  r##j = (xs[a] < 0 || ys[b] < 0 || zs[c] < 0) ? cval : __ldg(blk + (zs[c] * n1 + ys[b]) * n0 + xs[a]);
#define ROW27(b, c, j0, j1, j2) L27(j0, 0, b, c) L27(j1, 1, b, c) L27(j2, 2, b, c)
    ROW27(0, 0, 0, 1, 2) ROW27(1, 0, 3, 4, 5) ROW27(2, 0, 6, 7, 8) ROW27(0, 1, 9, 10, 11) ROW27(1, 1, 12, 13, 14)
    ROW27(2, 1, 15, 16, 17) ROW27(0, 2, 18, 19, 20) ROW27(1, 2, 21, 22, 23) ROW27(2, 2, 24, 25, 26)
#undef ROW27
#undef L27
    LF_MED27_NET
    st(out, i, LF_MED27_OUT);
  }
}

// any window of up to MED_LOCAL values: gather, then select the middle element (Wirth)
template <class Out>
__global__ void k_med_any(const float *__restrict__ in, int64_t n0, int64_t n1, int64_t n2, int64_t total, int S,
                          int size, int mode, float cval, Out *__restrict__ out) {
  float v[MED_LOCAL];
  const int h = size / 2, hy = S > 1 ? h : 0, hz = S > 2 ? h : 0;
  for (int64_t i = gtid(); i < total; i += gstride()) {
    const int64_t x = i % n0, y = (i / n0) % n1, z = (i / (n0 * n1)) % n2;
    const float *blk = in + (i / (n0 * n1 * n2)) * (n0 * n1 * n2);
    int m = 0;
    for (int dz = -hz; dz <= hz; dz++) {
      const int64_t zz = ext(z + dz, n2, mode);
      for (int dy = -hy; dy <= hy; dy++) {
        const int64_t yy = ext(y + dy, n1, mode);
        for (int dx = -h; dx <= h; dx++) {
          const int64_t xx = ext(x + dx, n0, mode);
          v[m++] = (xx < 0 || yy < 0 || zz < 0) ? cval : __ldg(blk + (zz * n1 + yy) * n0 + xx);
        }
      }
    }
    st(out, i, lf_quickselect(v, m, m / 2));
  }
}

// --------------------------------------------------------------- morphology
typedef lf_run3 run3;  // filter/filter_hd.h

// erosion (is_max = 0) or dilation (1): pixels outside the image are skipped (they are the identity)
template <class Out>
__global__ void k_minmax(const float *__restrict__ src, int64_t n0, int64_t n1, int64_t n2, int64_t total,
                         const run3 *__restrict__ runs, int nr, int is_max, Out *__restrict__ dst) {
  const float ident = is_max ? -INFINITY : INFINITY;
  for (int64_t i = gtid(); i < total; i += gstride()) {
    const int64_t x = i % n0, y = (i / n0) % n1, z = (i / (n0 * n1)) % n2;
    const float *blk = src + (i / (n0 * n1 * n2)) * (n0 * n1 * n2);
    float acc = ident;
    for (int k = 0; k < nr; k++) {
      const run3 r = runs[k];
      const int64_t yy = y + r.dy, zz = z + r.dz;
      if (yy < 0 || yy >= n1 || zz < 0 || zz >= n2) continue;
      const float *row = blk + (zz * n1 + yy) * n0;
      const int64_t xa = x - r.hw < 0 ? 0 : x - r.hw, xb = x + r.hw >= n0 ? n0 - 1 : x + r.hw;
      if (is_max)
        for (int64_t xx = xa; xx <= xb; xx++) {
          const float s = __ldg(row + xx);
          acc = s > acc ? s : acc;
        }
      else
        for (int64_t xx = xa; xx <= xb; xx++) {
          const float s = __ldg(row + xx);
          acc = s < acc ? s : acc;
        }
    }
    st(dst, i, acc);
  }
}

template <class Out>
__global__ void k_tophat(const float *__restrict__ src, const float *__restrict__ open, int64_t n, Out *__restrict__ dst) {
  for (int64_t i = gtid(); i < n; i += gstride()) {
    const float d = __fsub_rn(src[i], open[i]);
    st(dst, i, d > 0.0f ? d : 0.0f);
  }
}

__global__ void k_binarize(const float *__restrict__ x, int64_t n, float *__restrict__ b) {
  for (int64_t i = gtid(); i < n; i += gstride()) b[i] = x[i] != 0.0f ? 1.0f : 0.0f;
}

// the element's runs, computed as the CPU path does (filter/filter_hd.h)
static std::vector<run3> element_runs(const lumen_morph_opts *o) {
  std::vector<run3> runs((size_t)lf_element_runs_max(o));
  int ry, rz, rx;
  runs.resize((size_t)lf_element_runs(o, runs.data(), (int)runs.size(), &ry, &rz, &rx));
  return runs;
}

}  // namespace lfc

using namespace lfc;

extern "C" lumen_status lf_cuda_median(lumen_ctx *ctx, lf_call *call) {
  static const char fn[] = "lumen_filter_median (cuda)";
  const lumen_median_opts *o = (const lumen_median_opts *)call->opts;
  const lf_geom *g = &call->geom;
  int count = 1;
  for (int a = 0; a < g->spatial; a++) count *= o->size;
  if (count > MED_LOCAL)
    return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT, "%s: a window of %d values (> %d) runs on the CPU", fn, count,
                      MED_LOCAL);
  LFC_ENTER(ctx, call, fn);
  const float *x;
  scratch<float> conv;
  LFC_TRY(input_f32(ctx, fn, call->in[0], &x, &conv));
  const int64_t n = g->total, n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
  const int mode = (int)o->mode;
  const float cval = (float)o->cval;
  const unsigned grid = grid_for(n);
  if (g->spatial == 2 && o->size == 3) {
    LFC_LAUNCH_OUT(call->out, k_med9, grid, 256, x, n0, n1, n, mode, cval);
  } else if (g->spatial == 2 && o->size == 5) {
    LFC_LAUNCH_OUT(call->out, k_med25, grid, 256, x, n0, n1, n, mode, cval);
  } else if (g->spatial == 3 && o->size == 3) {
    LFC_LAUNCH_OUT(call->out, k_med27, grid, 256, x, n0, n1, n2, n, mode, cval);
  } else {
    LFC_LAUNCH_OUT(call->out, k_med_any, grid, 128, x, n0, n1, n2, n, g->spatial, o->size, mode, cval);
  }
  return launched(ctx, fn, "median kernel");
}

extern "C" lumen_status lf_cuda_morphology(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_morphology (cuda)");
  const lumen_morph_opts *o = (const lumen_morph_opts *)call->opts;
  const lf_geom *g = &call->geom;
  const int64_t n = g->total, n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
  const float *x;
  scratch<float> conv, bin, tmp, res;
  scratch<run3> druns;
  LFC_TRY(input_f32(ctx, fn, call->in[0], &x, &conv));
  std::vector<run3> runs = element_runs(o);
  LFC_TRY(druns.alloc(ctx, fn, (int64_t)runs.size()));
  cudaError_t err = cudaMemcpyAsync(druns.p, runs.data(), runs.size() * sizeof(run3), cudaMemcpyHostToDevice, 0);
  if (err != cudaSuccess) return fail(ctx, err, fn, "element copy");
  const int nr = (int)runs.size();
  const unsigned grid = grid_for(n);
  if (o->binary) {
    LFC_TRY(bin.alloc(ctx, fn, n));
    k_binarize<<<grid, 256>>>(x, n, bin.p);
    x = bin.p;
  }
  switch (o->op) {
    case LUMEN_MORPH_ERODE:
    case LUMEN_MORPH_DILATE:
      LFC_LAUNCH_OUT_U8(call->out, k_minmax, grid, 256, x, n0, n1, n2, n, druns.p, nr, o->op == LUMEN_MORPH_DILATE);
      break;
    case LUMEN_MORPH_OPEN:
    case LUMEN_MORPH_CLOSE: {
      const int first_max = o->op == LUMEN_MORPH_CLOSE;
      LFC_TRY(tmp.alloc(ctx, fn, n));
      k_minmax<float><<<grid, 256>>>(x, n0, n1, n2, n, druns.p, nr, first_max, tmp.p);
      LFC_LAUNCH_OUT_U8(call->out, k_minmax, grid, 256, tmp.p, n0, n1, n2, n, druns.p, nr, !first_max);
      break;
    }
    default: {  // white top-hat: I - open(I), >= 0
      LFC_TRY(tmp.alloc(ctx, fn, n));
      LFC_TRY(res.alloc(ctx, fn, n));
      k_minmax<float><<<grid, 256>>>(x, n0, n1, n2, n, druns.p, nr, 0, tmp.p);
      k_minmax<float><<<grid, 256>>>(tmp.p, n0, n1, n2, n, druns.p, nr, 1, res.p);
      LFC_LAUNCH_OUT_U8(call->out, k_tophat, grid, 256, x, res.p, n);
    }
  }
  return launched(ctx, fn, "morphology kernels");
}
