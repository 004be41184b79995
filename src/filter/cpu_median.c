/* CPU median filter.
 *
 * Windows of up to 128 voxels (3x3, 5x5, 7x7, 9x9, 11x11; 3x3x3, 5x5x5) use a selection network:
 * Batcher's odd-even merge sort for the next power of two, with the padding lanes fixed at +inf
 * and every comparator that does not reach the median removed (and half-comparators where only
 * the min or the max is used). The network runs on blocks of 64 neighbouring output voxels at
 * once, each comparator a min/max over 64 contiguous floats (vectorised). Larger windows use a
 * per-voxel quickselect. The image is first copied into a padded buffer with the boundary mode,
 * so every window read is a contiguous load. */
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "filter/filter_internal.h"

#define MED_BLOCK 64
#define MED_NET_MAX 128

/* ---- x86: the 3x3, 5x5 and 3x3x3 networks as straight-line SIMD code (SSE, AVX2, AVX-512 chosen
   at run time; the values stay in registers). Every variant computes the same min/max sequence. */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include "filter/median_nets.h"
#define LF_MED_X86 1

#define CE(a, b) { VT t_ = VMIN(a, b); b = VMAX(a, b); a = t_; }
#define MN(a, b) a = VMIN(a, b);
#define MX(a, b) b = VMAX(a, b);
#define LD(j) VT r##j = LOADU(base + offs[j]);
#define LOADS9 LD(0) LD(1) LD(2) LD(3) LD(4) LD(5) LD(6) LD(7) LD(8)
#define LOADS25                                                                                        \
  LOADS9 LD(9) LD(10) LD(11) LD(12) LD(13) LD(14) LD(15) LD(16) LD(17) LD(18) LD(19) LD(20) LD(21) \
  LD(22) LD(23) LD(24)
#define LOADS27 LOADS25 LD(25) LD(26)

#define MED_KERNEL(NAME, ATTR, W, LOADS, NET, OUTR)                                            \
  ATTR static int64_t NAME(const float *origin, const int64_t *offs, float *orow, int64_t n0) { \
    int64_t x = 0;                                                                             \
    for (; x + (W) <= n0; x += (W)) {                                                          \
      const float *base = origin + x;                                                          \
      LOADS NET STOREU(orow + x, OUTR);                                                        \
    }                                                                                          \
    return x;                                                                                  \
  }

/* The vector type and intrinsics of the instruction set ISA (SSE, AVX2 or AVX512: defined around
   each group of kernels below), and the function attribute that enables it. */
#define MED_CAT_(a, b) a##b
#define MED_CAT(a, b) MED_CAT_(a, b)
#define VT MED_CAT(VT_, ISA)
#define LOADU MED_CAT(LOADU_, ISA)
#define STOREU MED_CAT(STOREU_, ISA)
#define VMIN MED_CAT(VMIN_, ISA)
#define VMAX MED_CAT(VMAX_, ISA)
#define VT_SSE __m128
#define VT_AVX2 __m256
#define VT_AVX512 __m512
#define LOADU_SSE _mm_loadu_ps
#define LOADU_AVX2 _mm256_loadu_ps
#define LOADU_AVX512 _mm512_loadu_ps
#define STOREU_SSE _mm_storeu_ps
#define STOREU_AVX2 _mm256_storeu_ps
#define STOREU_AVX512 _mm512_storeu_ps
#define VMIN_SSE _mm_min_ps
#define VMIN_AVX2 _mm256_min_ps
#define VMIN_AVX512 _mm512_min_ps
#define VMAX_SSE _mm_max_ps
#define VMAX_AVX2 _mm256_max_ps
#define VMAX_AVX512 _mm512_max_ps
#define ATTR_SSE
#define ATTR_AVX2 __attribute__((target("avx2")))
#define ATTR_AVX512 __attribute__((target("avx512f")))

/* The 3x3, 5x5 and 3x3x3 kernels of ISA, W floats a vector: med9_SUFFIX, med25_SUFFIX, med27_SUFFIX. */
#define MED_KERNELS(SUFFIX, W)                                                             \
  MED_KERNEL(med9_##SUFFIX, MED_CAT(ATTR_, ISA), W, LOADS9, LF_MED9_NET, LF_MED9_OUT)     \
  MED_KERNEL(med25_##SUFFIX, MED_CAT(ATTR_, ISA), W, LOADS25, LF_MED25_NET, LF_MED25_OUT) \
  MED_KERNEL(med27_##SUFFIX, MED_CAT(ATTR_, ISA), W, LOADS27, LF_MED27_NET, LF_MED27_OUT)

#define ISA SSE
MED_KERNELS(sse, 4)
#undef ISA
#define ISA AVX2
MED_KERNELS(avx2, 8)
#undef ISA
#define ISA AVX512
MED_KERNELS(avx512, 16)
#undef ISA
#undef VT
#undef LOADU
#undef STOREU
#undef VMIN
#undef VMAX
#undef CE
#undef MN
#undef MX

typedef int64_t (*med_kernel_fn)(const float *, const int64_t *, float *, int64_t);

/* The fastest straight-line kernel for this window (NULL: use the generic network). */
/* The CPU's widest (2 AVX-512, 1 AVX2, 0 SSE) within the context's limit; OFF: the generic network. */
static med_kernel_fn pick_kernel(const lumen_ctx *ctx, int count, int spatial) {
  const lumen_cpu_simd limit = lumen_ctx_cpu_simd(ctx);
  if (limit == LUMEN_CPU_SIMD_OFF) return NULL;
  const int lvl = lumen_cpu_vector_level(limit);
  if (count == 9 && spatial == 2) return lvl == 2 ? med9_avx512 : lvl == 1 ? med9_avx2 : med9_sse;
  if (count == 25 && spatial == 2) return lvl == 2 ? med25_avx512 : lvl == 1 ? med25_avx2 : med25_sse;
  if (count == 27 && spatial == 3) return lvl == 2 ? med27_avx512 : lvl == 1 ? med27_avx2 : med27_sse;
  return NULL;
}
#else
typedef int64_t (*med_kernel_fn)(const float *, const int64_t *, float *, int64_t);
static med_kernel_fn pick_kernel(const lumen_ctx *ctx, int count, int spatial) {
  (void)ctx;
  (void)count;
  (void)spatial;
  return NULL;
}
#endif

typedef struct med_op {
  unsigned short a, b;
  unsigned char kind; /* 0: both, 1: min only (into a), 2: max only (into b) */
} med_op;

/* Builds the pruned network for count inputs; returns the op count, *median the register. */
static int build_network(int count, med_op *ops, int cap, int *median) {
  int N = 1;
  while (N < count) N <<= 1;
  int pos[MED_NET_MAX];
  for (int i = 0; i < N; i++) pos[i] = i < count ? i : -1;
  med_op *tmp = malloc(sizeof(med_op) * (size_t)(N * N));
  if (!tmp) return -1;
  int n = 0;
  for (int p = 1; p < N; p <<= 1)
    for (int k = p; k >= 1; k >>= 1)
      for (int j = k % p; j + k < N; j += 2 * k)
        for (int i = 0; i < k && i + j + k < N; i++)
          if ((i + j) / (2 * p) == (i + j + k) / (2 * p)) {
            int a = i + j, b = i + j + k;
            if (pos[b] < 0) continue;           /* b is +inf: nothing moves */
            if (pos[a] < 0) {                   /* a is +inf: the value moves down */
              pos[a] = pos[b];
              pos[b] = -1;
              continue;
            }
            tmp[n].a = (unsigned short)pos[a];
            tmp[n].b = (unsigned short)pos[b];
            tmp[n].kind = 0;
            n++;
          }
  int target = pos[count / 2];
  *median = target;
  /* backward liveness pruning */
  unsigned char live[MED_NET_MAX] = {0};
  live[target] = 1;
  int kept = 0;
  for (int i = n - 1; i >= 0; i--) {
    int la = live[tmp[i].a], lb = live[tmp[i].b];
    if (!la && !lb) {
      tmp[i].kind = 255;
      continue;
    }
    tmp[i].kind = (unsigned char)(la && lb ? 0 : la ? 1 : 2);
    live[tmp[i].a] = live[tmp[i].b] = 1;
    kept++;
  }
  if (kept > cap) {
    free(tmp);
    return -1;
  }
  int m = 0;
  for (int i = 0; i < n; i++)
    if (tmp[i].kind != 255) ops[m++] = tmp[i];
  free(tmp);
  return m;
}

static void run_network(float (*restrict v)[MED_BLOCK], const med_op *ops, int nops, int w) {
  for (int o = 0; o < nops; o++) {
    float *restrict a = v[ops[o].a];
    float *restrict b = v[ops[o].b];
    switch (ops[o].kind) {
      case 0:
        for (int i = 0; i < w; i++) {
          float x = a[i], y = b[i];
          a[i] = x < y ? x : y;
          b[i] = x < y ? y : x;
        }
        break;
      case 1:
        for (int i = 0; i < w; i++) a[i] = a[i] < b[i] ? a[i] : b[i];
        break;
      default:
        for (int i = 0; i < w; i++) b[i] = a[i] < b[i] ? b[i] : a[i];
        break;
    }
  }
}

lumen_status lf_cpu_median(lumen_ctx *ctx, lf_call *call) {
  static const char fn[] = "lumen_filter_median";
  const lumen_median_opts *o = call->opts;
  const lf_geom *g = &call->geom;
  const int S = g->spatial;
  const int size = o->size, h = size / 2;
  const float cval = (float)o->cval;
  int count = 1;
  for (int a = 0; a < S; a++) count *= size;
  const int64_t n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
  const int64_t pw = n0 + 2 * h, ph = S > 1 ? n1 + 2 * h : 1, pd = S > 2 ? n2 + 2 * h : 1;
  const int hy = S > 1 ? h : 0, hz = S > 2 ? h : 0;
  float *pad = lf_scratch_get((size_t)(pw * ph * pd) * sizeof *pad);
  int64_t *offs = malloc((size_t)count * sizeof *offs);
  med_op *ops = malloc(sizeof(med_op) * 8192);
  if (!pad || !offs || !ops) {
    lf_scratch_put(pad);
    free(offs);
    free(ops);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory for the padded image", fn);
  }
  int nops = -1, med = 0;
  if (count <= MED_NET_MAX) nops = build_network(count, ops, 8192, &med);
  const med_kernel_fn kern = pick_kernel(ctx, count, S);
  {
    int j = 0;
    for (int dz = -hz; dz <= hz; dz++)
      for (int dy = -hy; dy <= hy; dy++)
        for (int dx = -h; dx <= h; dx++) offs[j++] = ((int64_t)(dz + hz) * ph + (dy + hy)) * pw + (dx + h);
  }
  const float *in = call->in_f32[0];
  float *out = lumen_image_data(call->out);
  int failed = 0;
  for (int64_t b = 0; b < g->batch; b++) {
    const float *src = in + b * g->block;
    float *dst = out + b * g->block;
    /* padded copy */
#pragma omp parallel for schedule(static) num_threads(call->threads)
    for (int64_t r = 0; r < ph * pd; r++) {
      int64_t py = r % ph, pz = r / ph;
      int64_t y = lf_ext(py - hy, n1, o->mode), z = lf_ext(pz - hz, n2, o->mode);
      float *prow = pad + r * pw;
      if (y < 0 || z < 0) {
        for (int64_t i = 0; i < pw; i++) prow[i] = cval;
        continue;
      }
      const float *srow = src + (z * n1 + y) * n0;
      memcpy(prow + h, srow, (size_t)n0 * sizeof *srow);
      for (int i = 1; i <= h; i++) {
        int64_t jl = lf_ext(-i, n0, o->mode), jr = lf_ext(n0 - 1 + i, n0, o->mode);
        prow[h - i] = jl < 0 ? cval : srow[jl];
        prow[h + n0 - 1 + i] = jr < 0 ? cval : srow[jr];
      }
    }
    const int64_t rows = n1 * n2;
#pragma omp parallel num_threads(call->threads)
    {
      float(*v)[MED_BLOCK] = nops >= 0 ? malloc(sizeof(float) * MED_BLOCK * (size_t)count) : NULL;
      float *win = nops < 0 ? malloc(sizeof(float) * (size_t)count) : NULL;
      if (!v && !win) {
#pragma omp atomic write
        failed = 1;
      }
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; r++) {
        if (!v && !win) continue;
        const int64_t y = r % n1, z = r / n1;
        const float *origin = pad + (z * ph + y) * pw; /* window corner of x = 0 */
        float *orow = dst + r * n0;
        if (v) {
          int64_t x0 = kern ? kern(origin, offs, orow, n0) : 0;
          for (int64_t x = x0; x < n0; x += MED_BLOCK) {
            int w = (int)(n0 - x < MED_BLOCK ? n0 - x : MED_BLOCK);
            for (int j = 0; j < count; j++) {
              const float *s = origin + offs[j] + x;
              for (int i = 0; i < w; i++) v[j][i] = s[i];
            }
            run_network(v, ops, nops, w);
            memcpy(orow + x, v[med], (size_t)w * sizeof(float));
          }
        } else {
          for (int64_t x = 0; x < n0; x++) {
            for (int j = 0; j < count; j++) win[j] = origin[offs[j] + x];
            orow[x] = lf_quickselect(win, count, count / 2);
          }
        }
      }
      free(v);
      free(win);
    }
    if (failed) break;
  }
  lf_scratch_put(pad);
  free(offs);
  free(ops);
  if (failed) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  return LUMEN_OK;
}
