// CUDA hole filling (lumen_filter_fill_holes, scipy.ndimage.binary_fill_holes): the background that
// the border reaches through background stays background, everything else becomes foreground.
//
// A flood fill is sequential; on the device it is a fixpoint of monotone sweeps. State per voxel
// in the output: 1 = foreground, 2 = background not (yet) reached, 0 = background reached from the
// border (the border's background starts at 0). One round is a sweep along every axis (one thread
// per line, forward then backward, so a reached voxel passes "reached" along a whole run of
// background in one pass) and, for connectivity > 1, one pass over the diagonal neighbours. Rounds
// repeat until one changes nothing; every change turns a 2 into a 0 next to a 0 within the
// connectivity, so the fixpoint is exactly the set the CPU's scanline flood fill reaches (the test
// in tests/gpu compares them). A mammogram's calcification mask takes two rounds (the second finds
// nothing to do); a maze-like background needs about one round per turn of the maze, so after
// kMaxRounds the op hands over to the CPU (LUMEN_ERR_NOT_BUILT with the reason: the dispatcher
// reruns it there).
#include "cuda/filter_common.cuh"

namespace lfc {

static const int kMaxRounds = 256;
static const int kTile = 16;  // values a sweeping thread loads before it works on them

// where voxel i lies: x, y, z within its block
struct coords {
  int64_t x, y, z;
};
__device__ __forceinline__ coords where(int64_t i, const lf_geom &g) {
  const int64_t r = i % g.block, n0 = g.n[0], n1 = g.n[1];
  coords c;
  c.x = r % n0;
  c.y = (r / n0) % n1;
  c.z = r / (n0 * n1);
  return c;
}

template <class T>
__device__ __forceinline__ bool nonzero(T v) {
  return v != (T)0;
}
template <>
__device__ __forceinline__ bool nonzero<float>(float v) {
  return v != 0.0f;  // NaN counts as foreground, as on the CPU
}

template <class T>
__global__ void k_fill_init(const T *__restrict__ in, uint8_t *__restrict__ m, lf_geom g) {
  for (int64_t i = gtid(); i < g.total; i += gstride()) {
    if (nonzero(in[i])) {
      m[i] = 1;
      continue;
    }
    const coords c = where(i, g);
    const bool border = c.x == 0 || c.x == g.n[0] - 1 || (g.spatial > 1 && (c.y == 0 || c.y == g.n[1] - 1)) ||
                        (g.spatial > 2 && (c.z == 0 || c.z == g.n[2] - 1));
    m[i] = border ? 0 : 2;
  }
}

// One voxel of a sweep: a foreground voxel stops "reached", a reached one starts it, and an
// unreached background voxel under it becomes reached.
__device__ __forceinline__ void pass_reached(uint8_t *m, int64_t i, uint8_t v, bool &carry, bool &any) {
  if (v == 1) {
    carry = false;
  } else if (v == 0) {
    carry = true;
  } else if (carry) {
    m[i] = 0;
    any = true;
  }
}

// One thread per line along an axis: the line starts at `first` and steps by `stride` for `len`
// voxels. Forward and backward, "reached" (0) passes along runs of 2 until a foreground voxel.
__device__ void sweep_line(uint8_t *m, int64_t first, int64_t stride, int64_t len, int *changed) {
  uint8_t v[kTile];
  bool carry = false, any = false;
  for (int64_t k0 = 0; k0 < len; k0 += kTile) {
    const int cnt = len - k0 < kTile ? (int)(len - k0) : kTile;
#pragma unroll
    for (int j = 0; j < kTile; ++j)
      if (j < cnt) v[j] = m[first + (k0 + j) * stride];
#pragma unroll
    for (int j = 0; j < kTile; ++j)
      if (j < cnt) pass_reached(m, first + (k0 + j) * stride, v[j], carry, any);
  }
  carry = false;
  for (int64_t k1 = len; k1 > 0; k1 -= kTile) {
    const int cnt = k1 < kTile ? (int)k1 : kTile;
    const int64_t k0 = k1 - cnt;
#pragma unroll
    for (int j = 0; j < kTile; ++j)
      if (j < cnt) v[j] = m[first + (k0 + j) * stride];
#pragma unroll
    for (int j = kTile - 1; j >= 0; --j)
      if (j < cnt) pass_reached(m, first + (k0 + j) * stride, v[j], carry, any);
  }
  if (any) *changed = 1;
}

// axis 0: lines along x (one per row); axis 1: along y (one per (block, z, x)); axis 2: along z
__global__ void k_sweep(uint8_t *m, lf_geom g, int axis, int *changed) {
  const int64_t n0 = g.n[0], n1 = g.n[1], n2 = g.n[2];
  const int64_t lines = axis == 0 ? g.total / n0 : axis == 1 ? g.batch * n2 * n0 : g.batch * n1 * n0;
  for (int64_t l = gtid(); l < lines; l += gstride()) {
    int64_t first, stride, len;
    if (axis == 0) {
      first = l * n0;
      stride = 1;
      len = n0;
    } else if (axis == 1) {  // l = (b * n2 + z) * n0 + x
      const int64_t x = l % n0, bz = l / n0;
      first = bz * n1 * n0 + x;
      stride = n0;
      len = n1;
    } else {  // l = b * n1 * n0 + (y * n0 + x)
      const int64_t b = l / (n1 * n0), yx = l % (n1 * n0);
      first = b * g.block + yx;
      stride = n1 * n0;
      len = n2;
    }
    sweep_line(m, first, stride, len, changed);
  }
}

// connectivity > 1: a voxel still at 2 with a reached neighbour across an edge or corner is reached
// (races between threads only delay a change to the next round: states only go from 2 to 0)
__global__ void k_diagonal(uint8_t *m, lf_geom g, int connectivity, int *changed) {
  const int zr = g.spatial > 2 ? 1 : 0, yr = g.spatial > 1 ? 1 : 0;
  bool any = false;
  for (int64_t i = gtid(); i < g.total; i += gstride()) {
    if (m[i] != 2) continue;
    const coords c = where(i, g);
    bool reach = false;
    for (int dz = -zr; dz <= zr && !reach; ++dz)
      for (int dy = -yr; dy <= yr && !reach; ++dy)
        for (int dx = -1; dx <= 1 && !reach; ++dx) {
          const int d = abs(dx) + abs(dy) + abs(dz);
          if (d < 2 || d > connectivity) continue;  // the axis neighbours are the sweeps' work
          const int64_t x = c.x + dx, y = c.y + dy, z = c.z + dz;
          if (x < 0 || x >= g.n[0] || y < 0 || y >= g.n[1] || z < 0 || z >= g.n[2]) continue;
          reach = m[i + (dz * g.n[1] + dy) * g.n[0] + dx] == 0;
        }
    if (reach) {
      m[i] = 0;
      any = true;
    }
  }
  if (any) *changed = 1;
}

__global__ void k_fill_final(uint8_t *m, int64_t n) {
  for (int64_t i = gtid(); i < n; i += gstride()) m[i] = m[i] != 0;
}

}  // namespace lfc

using namespace lfc;

extern "C" lumen_status lf_cuda_fill_holes(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_fill_holes (cuda)");
  const lumen_region_opts *o = (const lumen_region_opts *)call->opts;
  const lf_geom g = call->geom;
  uint8_t *m = (uint8_t *)lumen_image_data(call->out);
  if (g.total == 0) return LUMEN_OK;
  if (lumen_image_dtype(call->in[0]) == LUMEN_DTYPE_UINT8) {
    k_fill_init<<<grid_for(g.total), 256>>>((const uint8_t *)lumen_image_const_data(call->in[0]), m, g);
    LFC_TRY(launched(ctx, fn, "initial states"));
  } else {
    const float *x = nullptr;
    scratch<float> xin;
    LFC_TRY(input_f32(ctx, fn, call->in[0], &x, &xin));
    k_fill_init<<<grid_for(g.total), 256>>>(x, m, g);
    LFC_TRY(launched(ctx, fn, "initial states"));
  }
  scratch<int> changed;
  LFC_TRY(changed.alloc(ctx, fn, 1));
  const int axes = g.spatial;
  const int64_t n0 = g.n[0], n1 = g.n[1], n2 = g.n[2];
  int rounds = 0;
  for (;; ++rounds) {
    if (rounds == kMaxRounds)
      return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT,
                        "%s: the background did not settle in %d rounds of device sweeps (a maze-like mask): "
                        "the CPU's flood fill takes it",
                        fn, kMaxRounds);
    cudaError_t err = cudaMemsetAsync(changed.p, 0, sizeof(int), 0);
    if (err != cudaSuccess) return fail(ctx, err, fn, "flag reset");
    for (int a = 0; a < axes; ++a) {
      const int64_t lines = a == 0 ? g.total / n0 : a == 1 ? g.batch * n2 * n0 : g.batch * n1 * n0;
      k_sweep<<<grid_for(lines, 128), 128>>>(m, g, a, changed.p);
    }
    if (o->connectivity > 1) k_diagonal<<<grid_for(g.total), 256>>>(m, g, o->connectivity, changed.p);
    LFC_TRY(launched(ctx, fn, "sweeps"));
    int h = 0;
    err = cudaMemcpy(&h, changed.p, sizeof h, cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) return fail(ctx, err, fn, "flag copy to the host");
    if (!h) break;
  }
  k_fill_final<<<grid_for(g.total), 256>>>(m, g.total);
  return launched(ctx, fn, "final states");
}
