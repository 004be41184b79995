/* CPU linear filters: separable Gaussian passes (Gaussian, DoG, LoG) and generic convolution.
 *
 * The separable engine streams the image once: in 2-D each source row is x-filtered into a ring of
 * 2r+2 rows and the y kernel combines ring rows two output rows at a time (col2_body: each source
 * vector loaded once for both); in 3-D the xy result of a band of rows of each plane goes into a
 * ring of 2r+2 slabs that stays in L2 and the z kernel combines slabs, so there is no volume-sized
 * intermediate. The x pass reads interior columns straight from the source (only the r-wide ends
 * go through a boundary-extended copy). Work items (bands of rows, x tiles of very wide rows,
 * parts of z) are scheduled dynamically over OpenMP threads: the machine may be shared. Every
 * output is w[r] c + sum_k w[k] (a_k + b_k) in float32 in the same order on every path (tested
 * bit-for-bit against a naive pass-by-pass reference); kernels are computed in float64 like
 * scipy.ndimage and rounded once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "filter/filter_internal.h"

void lf_gaussian_kernel(double sigma, int order, int radius, float *w) {
  double sum = 0;
  double *phi = malloc((size_t)(2 * radius + 1) * sizeof *phi);
  if (!phi) return;
  for (int i = -radius; i <= radius; i++) {
    phi[i + radius] = exp(-0.5 / (sigma * sigma) * (double)i * (double)i);
    sum += phi[i + radius];
  }
  for (int i = -radius; i <= radius; i++) {
    double v = phi[i + radius] / sum;
    if (order == 2) {
      double s2 = sigma * sigma;
      v *= ((double)i * (double)i / (s2 * s2) - 1.0 / s2);
    }
    w[i + radius] = (float)v;
  }
  free(phi);
}

/* Inner kernels, register-blocked: LF_BLK outputs accumulate all taps in registers before one
   store. The same source is compiled for the baseline ISA and, on x86, for AVX2 and AVX-512 (chosen
   at run time); no FMA contraction in ISO C mode, so every variant gives the same bits. */
#define LF_BLK 32
/* GCC/clang vector extensions: one 16-float vector type, lowered to whatever the target ISA has */
typedef float lf_v16 __attribute__((vector_size(64)));
#define LDV(v, p) memcpy(&(v), (p), sizeof(v))
#define STV(p, v) memcpy((p), &(v), sizeof(v))

/* nv vectors (16 floats each) of the x kernel from i0: nv independent accumulator chains, so that
   the adds are not bound by their latency. */
static inline __attribute__((always_inline)) void row_block(const float *restrict buf, float *restrict out,
                                                            int64_t i0, const float *restrict w, int r, int nv) {
  lf_v16 acc[4], a, b;
  for (int j = 0; j < nv; j++) {
    LDV(a, buf + i0 + r + 16 * j);
    acc[j] = w[r] * a;
  }
  for (int k = 0; k < r; k++) {
    const float wk = w[k];
    for (int j = 0; j < nv; j++) {
      LDV(a, buf + i0 + k + 16 * j);
      LDV(b, buf + i0 + 2 * r - k + 16 * j);
      acc[j] += wk * (a + b);
    }
  }
  for (int j = 0; j < nv; j++) STV(out + i0 + 16 * j, acc[j]);
}

/* out[i] = w[r] buf[i + r] + sum_k w[k] (buf[i + k] + buf[i + 2r - k]), i < n. A partial last block
   is done as the full block ending at n (recomputing a few outputs with the same arithmetic). */
static inline __attribute__((always_inline)) void row_body(const float *restrict buf, float *restrict out, int64_t n,
                                                           const float *restrict w, int r) {
  if (n >= 64) {
    int64_t i0 = 0;
    for (; i0 + 64 <= n; i0 += 64) row_block(buf, out, i0, w, r, 4);
    if (i0 < n) row_block(buf, out, n - 64, w, r, 4);
    return;
  }
  if (n >= 32) {
    row_block(buf, out, 0, w, r, 2);
    if (n > 32) row_block(buf, out, n - 32, w, r, 2);
    return;
  }
  if (n >= 16) {
    row_block(buf, out, 0, w, r, 1);
    if (n > 16) row_block(buf, out, n - 16, w, r, 1);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    float acc = w[r] * buf[i + r];
    for (int k = 0; k < r; k++) acc += w[k] * (buf[i + k] + buf[i + 2 * r - k]);
    out[i] = acc;
  }
}

/* rows[0..2r]: the source rows of taps -r..r for one output row */
static inline __attribute__((always_inline)) void col_body(const float *const *rows, float *restrict out, int64_t n,
                                                           const float *restrict w, int r) {
  const float wc = w[r];
  const float *c = rows[r];
  int64_t i0 = 0;
  for (;; i0 += LF_BLK) {
    if (i0 + LF_BLK > n) {
      if (i0 >= n || n < LF_BLK) break;
      i0 = n - LF_BLK;
    }
    lf_v16 c0, c1, a0, a1, b0, b1;
    LDV(c0, c + i0);
    LDV(c1, c + i0 + 16);
    lf_v16 acc0 = wc * c0, acc1 = wc * c1;
    for (int k = 0; k < r; k++) {
      const float wk = w[k];
      const float *a = rows[k] + i0, *b = rows[2 * r - k] + i0;
      LDV(a0, a);
      LDV(a1, a + 16);
      LDV(b0, b);
      LDV(b1, b + 16);
      acc0 += wk * (a0 + b0);
      acc1 += wk * (a1 + b1);
    }
    STV(out + i0, acc0);
    STV(out + i0 + 16, acc1);
  }
  for (int64_t i = i0; i < n; i++) {
    float acc = wc * c[i];
    for (int k = 0; k < r; k++) acc += w[k] * (rows[k][i] + rows[2 * r - k][i]);
    out[i] = acc;
  }
}

/* Two adjacent output rows at once: rows[0..2r+1], out0 from rows[0..2r], out1 from rows[1..2r+1].
   Each source vector is loaded once for both (about half the loads of two col_body calls); each
   output accumulates exactly as in col_body, so the bits are the same. */
static inline __attribute__((always_inline)) void col2_body(const float *const *rows, float *restrict out0,
                                                            float *restrict out1, int64_t n,
                                                            const float *restrict w, int r) {
  const float wc = w[r];
  int64_t i0 = 0;
  for (;; i0 += LF_BLK) {
    if (i0 + LF_BLK > n) {
      if (i0 >= n || n < LF_BLK) break;
      i0 = n - LF_BLK;
    }
    lf_v16 lo0, lo1, hi0, hi1, c0, c1, d0, d1; /* lo: rows[k], hi: rows[2r+1-k] */
    LDV(c0, rows[r] + i0);
    LDV(c1, rows[r] + i0 + 16);
    LDV(d0, rows[r + 1] + i0);
    LDV(d1, rows[r + 1] + i0 + 16);
    lf_v16 p0 = wc * c0, p1 = wc * c1, q0 = wc * d0, q1 = wc * d1;
    LDV(lo0, rows[0] + i0);
    LDV(lo1, rows[0] + i0 + 16);
    LDV(hi0, rows[2 * r + 1] + i0);
    LDV(hi1, rows[2 * r + 1] + i0 + 16);
    for (int k = 0; k < r; k++) {
      const float wk = w[k];
      lf_v16 nl0, nl1, nh0, nh1; /* rows[k + 1], rows[2r - k] */
      LDV(nl0, rows[k + 1] + i0);
      LDV(nl1, rows[k + 1] + i0 + 16);
      LDV(nh0, rows[2 * r - k] + i0);
      LDV(nh1, rows[2 * r - k] + i0 + 16);
      p0 += wk * (lo0 + nh0);
      p1 += wk * (lo1 + nh1);
      q0 += wk * (nl0 + hi0);
      q1 += wk * (nl1 + hi1);
      lo0 = nl0;
      lo1 = nl1;
      hi0 = nh0;
      hi1 = nh1;
    }
    STV(out0 + i0, p0);
    STV(out0 + i0 + 16, p1);
    STV(out1 + i0, q0);
    STV(out1 + i0 + 16, q1);
  }
  for (int64_t i = i0; i < n; i++) {
    float a = wc * rows[r][i], b = wc * rows[r + 1][i];
    for (int k = 0; k < r; k++) {
      a += w[k] * (rows[k][i] + rows[2 * r - k][i]);
      b += w[k] * (rows[k + 1][i] + rows[2 * r + 1 - k][i]);
    }
    out0[i] = a;
    out1[i] = b;
  }
}

typedef void (*row_fn)(const float *, float *, int64_t, const float *, int);
typedef void (*col2_fn)(const float *const *, float *, float *, int64_t, const float *, int);
typedef void (*col_fn)(const float *const *, float *, int64_t, const float *, int);

static void row_base(const float *buf, float *out, int64_t n, const float *w, int r) { row_body(buf, out, n, w, r); }
static void col_base(const float *const *rows, float *out, int64_t n, const float *w, int r) {
  col_body(rows, out, n, w, r);
}
static void col2_base(const float *const *rows, float *out0, float *out1, int64_t n, const float *w, int r) {
  col2_body(rows, out0, out1, n, w, r);
}
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2"))) static void row_avx2(const float *buf, float *out, int64_t n, const float *w, int r) {
  row_body(buf, out, n, w, r);
}
__attribute__((target("avx2"))) static void col_avx2(const float *const *rows, float *out, int64_t n, const float *w,
                                                     int r) {
  col_body(rows, out, n, w, r);
}
__attribute__((target("avx512f"))) static void row_avx512(const float *buf, float *out, int64_t n, const float *w,
                                                          int r) {
  row_body(buf, out, n, w, r);
}
__attribute__((target("avx512f"))) static void col_avx512(const float *const *rows, float *out, int64_t n,
                                                          const float *w, int r) {
  col_body(rows, out, n, w, r);
}
/* 2: AVX-512, 1: AVX2, 0: generic, within the context's limit (lumen_ctx_cpu_simd). */
static int simd_level(const lumen_ctx *ctx) { return lumen_cpu_vector_level(lumen_ctx_cpu_simd(ctx)); }
__attribute__((target("avx2"))) static void col2_avx2(const float *const *rows, float *out0, float *out1, int64_t n,
                                                      const float *w, int r) {
  col2_body(rows, out0, out1, n, w, r);
}
__attribute__((target("avx512f"))) static void col2_avx512(const float *const *rows, float *out0, float *out1,
                                                           int64_t n, const float *w, int r) {
  col2_body(rows, out0, out1, n, w, r);
}
static col2_fn pick_col2(const lumen_ctx *ctx) {
  int l = simd_level(ctx);
  return l == 2 ? col2_avx512 : l == 1 ? col2_avx2 : col2_base;
}
static row_fn pick_row(const lumen_ctx *ctx) {
  int l = simd_level(ctx);
  return l == 2 ? row_avx512 : l == 1 ? row_avx2 : row_base;
}
static col_fn pick_col(const lumen_ctx *ctx) {
  int l = simd_level(ctx);
  return l == 2 ? col_avx512 : l == 1 ? col_avx2 : col_base;
}
#else
static row_fn pick_row(const lumen_ctx *ctx) { (void)ctx; return row_base; }
static col_fn pick_col(const lumen_ctx *ctx) { (void)ctx; return col_base; }
static col2_fn pick_col2(const lumen_ctx *ctx) { (void)ctx; return col2_base; }
#endif

static void extend_row(const float *restrict src, float *restrict buf, int64_t n, int left, int right,
                       lumen_boundary mode, float cval) {
  memcpy(buf + left, src, (size_t)n * sizeof *src);
  for (int i = 1; i <= left; i++) {
    int64_t j = lf_ext(-i, n, mode);
    buf[left - i] = j < 0 ? cval : src[j];
  }
  for (int i = 0; i < right; i++) {
    int64_t j = lf_ext(n + i, n, mode);
    buf[left + n + i] = j < 0 ? cval : src[j];
  }
}

static float *alloc_f(int64_t n) { return lf_malloc_big((size_t)(n > 0 ? n : 1) * sizeof(float)); }

static inline int64_t mod_i64(int64_t a, int64_t m) {
  int64_t r = a % m;
  return r < 0 ? r + m : r;
}

/* Rows padded to a multiple of 16 floats plus one cache line, so that the 2r+1 rows (or planes) a
   column pass reads do not all map to the same cache sets. */
static int64_t padded_stride(int64_t n) { return (n + 15) / 16 * 16 + 16; }

/* Cache budgets (bytes) of the blocked passes, both meant for a core's L2: the y ring of x-filtered
   rows (rows wider than that are cut into x tiles; measured: whole rows streamed from memory beat
   L1-sized tiles here), the z ring of xy-filtered slabs. Only speed depends on them, never results. */
#define LF_Y_RING (768 * 1024)
#define LF_Z_RING (1024 * 1024)

typedef struct sep_plan {
  const lf_geom *g;
  const float *w[3];
  int r[3];
  lumen_boundary mode;
  float cval;
  row_fn rowk;
  col_fn colk;
  col2_fn col2k;
  const float *crow; /* a row of cval, n[0] long (unfiltered constant rows and planes) */
  const int64_t *xext; /* x boundary: source column of x = -r..-1 at [x + r], of n0 + i at [r + i]; -1: cval */
  int sub;           /* 1: out -= result (DoG), through a per-thread row buffer */
  int64_t tile;      /* x-tile width of the xy pass */
} sep_plan;

/* Per-thread work buffers. */
typedef struct sep_bufs {
  float *ring;         /* 2*r[1]+2 x-filtered tile rows */
  int64_t rstride;
  float *ext;          /* one boundary-extended source segment */
  const float **slot;  /* ring slot -> row (or crow) */
  const float **rp;    /* the 2r+2 source rows of two output rows */
  float *row;          /* sub: two result rows (n[0] each) before out -= row */
  float *zring;        /* 3-D: 2*r[2]+2 xy-filtered slabs */
  int64_t zstride;
  const float **zslot; /* z ring slot -> slab, or NULL for a constant plane */
} sep_bufs;

/* One output row of n from the 2r+1 rows rp: into out, or (sub) into row and then out -= row. */
static inline void col_out(const sep_plan *p, int sub, const float **rp, float *out, float *row, int64_t n,
                           const float *w, int r) {
  if (!sub) {
    p->colk(rp, out, n, w, r);
    return;
  }
  p->colk(rp, row, n, w, r);
  for (int64_t i = 0; i < n; i++) out[i] -= row[i];
}

/* Output rows out0 (from rp[0..2r]) and out1 (from rp[1..2r+1]), like two col_out calls. */
static inline void col_out2(const sep_plan *p, int sub, const float **rp, float *out0, float *out1, float *row,
                            int64_t n, const float *w, int r) {
  if (!sub) {
    p->col2k(rp, out0, out1, n, w, r);
    return;
  }
  float *row1 = row + p->g->n[0];
  p->col2k(rp, row, row1, n, w, r);
  for (int64_t i = 0; i < n; i++) out0[i] -= row[i];
  for (int64_t i = 0; i < n; i++) out1[i] -= row1[i];
}

/* Fills rp[0..cnt) with ring slots start, start+1, ... (mod m). */
static inline void ring_rows(const float **rp, const float *const *slot, int64_t start, int64_t m, int64_t cnt) {
  for (int64_t k = 0, sk = mod_i64(start, m); k < cnt; k++, sk = sk + 1 < m ? sk + 1 : 0) rp[k] = slot[sk];
}

/* Columns [x0 - r, x1 + r) of the source row src with the boundary extension of x: a pointer into
   src itself when they all lie inside the row (no copy), else a copy in ext. */
static const float *row_segment(const sep_plan *p, const float *src, int64_t x0, int64_t x1, float *ext) {
  const int64_t n0 = p->g->n[0], r = p->r[0], a = x0 - r, b = x1 + r;
  if (a >= 0 && b <= n0) return src + a;
  const int64_t lo = a < 0 ? 0 : a, hi = b > n0 ? n0 : b;
  for (int64_t i = a; i < lo; i++) {
    const int64_t j = p->xext[i + r];
    ext[i - a] = j < 0 ? p->cval : src[j];
  }
  for (int64_t i = lo; i < hi; i++) ext[i - a] = src[i];
  for (int64_t i = hi; i < b; i++) {
    const int64_t j = p->xext[r + i - n0];
    ext[i - a] = j < 0 ? p->cval : src[j];
  }
  return ext;
}

/* The x filter of columns [x0, x1) of the source row src into dst: the interior straight from src,
   only the (at most r wide) ends through a boundary-extended copy. */
static void x_filter(const sep_plan *p, const float *src, int64_t x0, int64_t x1, float *dst, float *ext) {
  const int64_t n0 = p->g->n[0], r = p->r[0];
  const int64_t e = r > LF_BLK ? r : LF_BLK; /* ends at least one vector block wide */
  const int64_t a = x0 >= r ? x0 : (x1 < e ? x1 : e); /* [x0, a): left end */
  const int64_t c = x1 <= n0 - r ? x1 : (n0 - e > a ? n0 - e : a); /* [c, x1): right end */
  if (a > x0) p->rowk(row_segment(p, src, x0, a, ext), dst, a - x0, p->w[0], (int)r);
  if (c > a) p->rowk(src + a - r, dst + (a - x0), c - a, p->w[0], (int)r);
  if (x1 > c) p->rowk(row_segment(p, src, c, x1, ext), dst + (c - x0), x1 - c, p->w[0], (int)r);
}

/* x then y over output rows [y0, y1) and columns [x0, x1) of one plane in: each source row segment
   is x-filtered once into a ring of 2r+2 tile rows that stays in L2, then the y kernel combines
   ring rows into dst (row y at dst + (y - y0) * ds). Same arithmetic as an x pass over the whole
   plane followed by a y pass. */
static void fused_xy(const sep_plan *p, const sep_bufs *b, int sub, const float *in, float *dst, int64_t ds,
                     int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
  const int64_t n0 = p->g->n[0], n1 = p->g->n[1], n = x1 - x0;
  const int ry = p->r[1];
  const int64_t m = 2 * (int64_t)ry + 2;
  int64_t y = y0; /* next output row */
  for (int64_t e = y0 - ry; e < y1 + ry; e++) {
    const int64_t sl = mod_i64(e, m);
    const int64_t jj = lf_ext(e, n1, p->mode);
    if (jj < 0) {
      b->slot[sl] = p->crow;
    } else {
      float *ring_row = b->ring + sl * b->rstride;
      x_filter(p, in + jj * n0, x0, x1, ring_row, b->ext);
      b->slot[sl] = ring_row;
    }
    if (y + 1 < y1 && e == y + 1 + ry) { /* rows y and y + 1 */
      ring_rows(b->rp, b->slot, y - ry, m, m);
      col_out2(p, sub, b->rp, dst + (y - y0) * ds, dst + (y + 1 - y0) * ds, b->row, n, p->w[1], ry);
      y += 2;
    }
  }
  if (y < y1) { /* an odd last row */
    ring_rows(b->rp, b->slot, y - ry, m, m - 1);
    col_out(p, sub, b->rp, dst + (y - y0) * ds, b->row, n, p->w[1], ry);
  }
}

/* The xy filter of rows [y0, y1), columns [x0, x1) of one plane, tile by tile (row y at
   dst + (y - y0) * (x1 - x0)). */
static void xy_rows(const sep_plan *p, const sep_bufs *b, int sub, const float *in, float *dst, int64_t y0,
                    int64_t y1, int64_t x0, int64_t x1) {
  for (int64_t t0 = x0; t0 < x1; t0 += p->tile) {
    const int64_t t1 = t0 + p->tile < x1 ? t0 + p->tile : x1;
    fused_xy(p, b, sub, in, dst + (t0 - x0), x1 - x0, y0, y1, t0, t1);
  }
}

/* 3-D, rows [y0, y1) x columns [x0, x1) of output planes [z0, z1): each source plane's slab is
   xy-filtered once into a ring of 2r+2 slabs that stays in L2, then the z kernel combines slabs,
   so the volume is read once and written once. Same arithmetic as xy then z over whole planes. */
static void fused_xyz(const sep_plan *p, const sep_bufs *b, const float *in, float *out, int64_t y0, int64_t y1,
                      int64_t x0, int64_t x1, int64_t z0, int64_t z1) {
  const int64_t n0 = p->g->n[0], n1 = p->g->n[1], n2 = p->g->n[2], wz = x1 - x0;
  const int rz = p->r[2];
  const int64_t m = 2 * (int64_t)rz + 2;
  int64_t z = z0; /* next output plane */
  for (int64_t e = z0 - rz; e < z1 + rz; e++) {
    const int64_t sl = mod_i64(e, m);
    const int64_t jj = lf_ext(e, n2, p->mode);
    if (jj < 0) {
      b->zslot[sl] = NULL;
    } else {
      float *slab = b->zring + sl * b->zstride;
      xy_rows(p, b, 0, in + jj * n0 * n1, slab, y0, y1, x0, x1);
      b->zslot[sl] = slab;
    }
    const int pair = z + 1 < z1 && e == z + 1 + rz;
    if (!pair && !(z + 1 == z1 && e == z1 + rz - 1)) continue;
    const int64_t cnt = pair ? m : m - 1;
    for (int64_t y = y0; y < y1; y++) {
      for (int64_t k = 0, sk = mod_i64(z - rz, m); k < cnt; k++, sk = sk + 1 < m ? sk + 1 : 0) {
        const float *sb = b->zslot[sk];
        b->rp[k] = sb ? sb + (y - y0) * wz : p->crow;
      }
      float *o = out + (z * n1 + y) * n0 + x0;
      if (pair)
        col_out2(p, p->sub, b->rp, o, o + n0 * n1, b->row, wz, p->w[2], rz);
      else
        col_out(p, p->sub, b->rp, o, b->row, wz, p->w[2], rz);
    }
    z += pair ? 2 : 1;
  }
}

static void bufs_free(sep_bufs *b) {
  free(b->ring);
  free(b->ext);
  free(b->slot);
  free(b->rp);
  free(b->row);
  free(b->zring);
  free(b->zslot);
}

/* Allocates one thread's buffers for slabs of band x width (3-D); returns 0 when out of memory. */
static int bufs_alloc(sep_bufs *b, const sep_plan *p, int S, int64_t band, int64_t width) {
  const int64_t n0 = p->g->n[0], my = 2 * (int64_t)p->r[1] + 2, mz = 2 * (int64_t)p->r[2] + 2;
  const int rxy = p->r[0] > p->r[1] ? p->r[0] : p->r[1], rmax = rxy > p->r[2] ? rxy : p->r[2];
  memset(b, 0, sizeof *b);
  b->rstride = padded_stride(p->tile);
  b->ring = alloc_f(my * b->rstride);
  b->ext = alloc_f(p->tile + 2 * (int64_t)p->r[0]);
  b->slot = malloc((size_t)my * sizeof *b->slot);
  b->rp = malloc((size_t)(2 * rmax + 2) * sizeof *b->rp);
  b->row = p->sub ? alloc_f(2 * n0) : NULL;
  if (S == 3) {
    b->zstride = padded_stride(band * width);
    b->zring = alloc_f(mz * b->zstride);
    b->zslot = malloc((size_t)mz * sizeof *b->zslot);
  }
  return b->ring && b->ext && b->slot && b->rp && (!p->sub || b->row) && (S < 3 || (b->zring && b->zslot));
}

/* Splits n into parts of at most `most` (balanced); returns the part length. */
static int64_t part_len(int64_t n, int64_t most) {
  if (most < 1) most = 1;
  const int64_t parts = (n + most - 1) / most;
  return (n + parts - 1) / parts;
}

/* The x-tile width: the y ring of 2r+2 tile rows in LF_Y_RING, a multiple of 16 floats. */
static int64_t tile_width(int64_t n0, int ry) {
  int64_t w = LF_Y_RING / ((2 * (int64_t)ry + 2) * (int64_t)sizeof(float));
  w = w / 16 * 16;
  if (w < 64) w = 64;
  w = part_len(n0, w);
  return (w + 15) / 16 * 16;
}

typedef struct sep_split {
  int64_t band, bands;    /* rows per work item */
  int64_t zlen, zparts;   /* 3-D: planes per work item; 2-D: planes (batch-like) */
  int64_t tiles;          /* x tiles per work item row */
  int64_t ztile;          /* 3-D: slab width (x tile) */
} sep_split;

/* Work items of one block: enough for dynamic scheduling on `threads` threads (a shared machine
   preempts threads), without making the halos (2r rows or planes per item) dominate. */
static sep_split plan_split(const sep_plan *p, int S, int threads) {
  const int64_t n0 = p->g->n[0], n1 = p->g->n[1], n2 = p->g->n[2];
  const int64_t want = 4 * (int64_t)threads;
  sep_split s;
  if (S == 3) {
    const int64_t mz = 2 * (int64_t)p->r[2] + 2, floats = LF_Z_RING / (mz * (int64_t)sizeof(float));
    /* slabs of whole rows unless that leaves bands under 4r rows (wide planes): then x tiles */
    const int64_t bmin = n1 < 4 * (int64_t)p->r[1] + 8 ? n1 : 4 * (int64_t)p->r[1] + 8;
    s.ztile = n0;
    if (floats / n0 < bmin) {
      int64_t wz = floats / bmin / 16 * 16;
      s.ztile = part_len(n0, wz < 64 ? 64 : wz);
    }
    s.tiles = (n0 + s.ztile - 1) / s.ztile;
    /* bands of rows (their 2r-row halos cost x work only), a multiple of the thread count when
       bands of 8 rows or more allow; else parts of z (whose 2r-plane halos cost xy work) */
    const int64_t most = floats / s.ztile;
    int64_t bands = (n1 + (most > 0 ? most : 1) - 1) / (most > 0 ? most : 1);
    const int64_t up = (bands + threads - 1) / threads * threads;
    if (n1 / up >= 8) bands = up;
    s.band = (n1 + bands - 1) / bands;
    s.bands = (n1 + s.band - 1) / s.band;
    s.zparts = 1;
    while (s.bands * s.tiles * s.zparts < threads && n2 / (s.zparts + 1) >= 4 * mz) s.zparts++;
    s.zlen = (n2 + s.zparts - 1) / s.zparts;
    return s;
  }
  s.zlen = 1;
  s.zparts = n2;
  s.ztile = p->tile;
  s.tiles = (n0 + p->tile - 1) / p->tile;
  const int64_t minband = 16 * (2 * (int64_t)p->r[1] + 1);
  int64_t bands = 1;
  while (s.tiles * n2 * bands < want && n1 / (bands + 1) >= minband) bands++;
  s.band = (n1 + bands - 1) / bands;
  s.bands = (n1 + s.band - 1) / s.band;
  return s;
}

/* One work item of a 2-D or 3-D block. */
static void run_item(const sep_plan *p, const sep_bufs *b, const sep_split *s, int S, const float *src, float *dst,
                     int64_t item) {
  const int64_t n0 = p->g->n[0], n1 = p->g->n[1], n2 = p->g->n[2];
  const int64_t y0 = (item % s->bands) * s->band, y1 = y0 + s->band < n1 ? y0 + s->band : n1;
  const int64_t rest = item / s->bands, t = rest % s->tiles, zi = rest / s->tiles;
  const int64_t x0 = t * s->ztile, x1 = x0 + s->ztile < n0 ? x0 + s->ztile : n0;
  if (S == 3) {
    const int64_t z0 = zi * s->zlen, z1 = z0 + s->zlen < n2 ? z0 + s->zlen : n2;
    if (y0 < y1 && x0 < x1 && z0 < z1) fused_xyz(p, b, src, dst, y0, y1, x0, x1, z0, z1);
    return;
  }
  const int64_t z = zi;
  const int64_t off = z * n0 * n1 + y0 * n0;
  if (y0 < y1) fused_xy(p, b, p->sub, src + z * n0 * n1, dst + off + x0, n0, y0, y1, x0, x1);
}

/* 1-D: each row of the block (n[1] = n[2] = 1) filtered along x. */
static int run_1d(const sep_plan *p, const float *src, float *dst) {
  const int64_t n0 = p->g->n[0];
  const int r = p->r[0];
  float *ext = alloc_f(n0 + 2 * (int64_t)r);
  float *row = p->sub ? alloc_f(n0) : NULL;
  int ok = ext && (!p->sub || row);
  if (ok) {
    extend_row(src, ext, n0, r, r, p->mode, p->cval);
    p->rowk(ext, p->sub ? row : dst, n0, p->w[0], r);
    if (p->sub)
      for (int64_t i = 0; i < n0; i++) dst[i] -= row[i];
  }
  free(ext);
  free(row);
  return ok;
}

/* Separable filter over the spatial axes with per-axis kernels (orders[a]); in -> out. */
static lumen_status separable_ex(lumen_ctx *ctx, const char *fn, const float *in, float *out, const lf_geom *g,
                                 const double *sigma, const int *radius, const int *orders, lumen_boundary mode,
                                 float cval, int threads, int sub) {
  const int S = g->spatial;
  const int64_t n0 = g->n[0];
  sep_plan p = {
      .g = g, .mode = mode, .cval = cval, .sub = sub, .rowk = pick_row(ctx), .colk = pick_col(ctx), .col2k = pick_col2(ctx)};
  float *w[3] = {NULL, NULL, NULL};
  int failed = 0;
  for (int a = 0; a < S; a++) {
    w[a] = malloc((size_t)(2 * radius[a] + 1) * sizeof(float));
    if (!w[a])
      failed = 1;
    else
      lf_gaussian_kernel(sigma[a], orders[a], radius[a], w[a]);
    p.w[a] = w[a];
    p.r[a] = radius[a];
  }
  float *crow = alloc_f(n0);
  if (crow)
    for (int64_t i = 0; i < n0; i++) crow[i] = cval;
  else
    failed = 1;
  p.crow = crow;
  int64_t *xext = malloc((size_t)(2 * radius[0] + 1) * sizeof *xext);
  if (xext)
    for (int64_t i = 0; i < radius[0]; i++) {
      xext[i] = lf_ext(i - radius[0], n0, mode);
      xext[radius[0] + i] = lf_ext(n0 + i, n0, mode);
    }
  else
    failed = 1;
  p.xext = xext;
  p.tile = S >= 2 ? tile_width(n0, radius[1]) : n0;
  const sep_split split = S >= 2 ? plan_split(&p, S, threads) : (sep_split){1, 1, 1, 1, 1, n0};
  const int64_t items = split.bands * split.zparts * split.tiles;
  for (int64_t b = 0; b < g->batch && !failed; b++) {
    const float *src = in + b * g->block;
    float *dst = out + b * g->block;
    if (S == 1) {
      failed = !run_1d(&p, src, dst);
      continue;
    }
#pragma omp parallel num_threads(threads)
    {
      sep_bufs bufs;
      const int ok = bufs_alloc(&bufs, &p, S, split.band, split.ztile);
      if (!ok) {
#pragma omp atomic write
        failed = 1;
      }
#pragma omp for schedule(dynamic, 1)
      for (int64_t item = 0; item < items; item++)
        if (ok) run_item(&p, &bufs, &split, S, src, dst, item);
      bufs_free(&bufs);
    }
  }
  for (int a = 0; a < 3; a++) free(w[a]);
  free(crow);
  free(xext);
  if (failed)
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory for work buffers (%lld voxels)", fn,
                      (long long)g->total);
  return LUMEN_OK;
}

static lumen_status separable(lumen_ctx *ctx, const char *fn, const float *in, float *out, const lf_geom *g,
                              const double *sigma, const int *radius, const int *orders, lumen_boundary mode,
                              float cval, int threads) {
  return separable_ex(ctx, fn, in, out, g, sigma, radius, orders, mode, cval, threads, 0);
}

lumen_status lf_cpu_gaussian(lumen_ctx *ctx, lf_call *call) {
  const lf_gauss_params *p = call->params;
  const int orders[3] = {0, 0, 0};
  return separable(ctx, "lumen_filter_gaussian", call->in_f32[0], lumen_image_data(call->out), &call->geom,
                   p->sigma[0], p->radius[0], orders, p->mode, p->cval, call->threads);
}

lumen_status lf_cpu_dog(lumen_ctx *ctx, lf_call *call) {
  const lf_gauss_params *p = call->params;
  const int orders[3] = {0, 0, 0};
  float *out = lumen_image_data(call->out);
  /* low into out, then the high-sigma result is subtracted row by row as it is produced (no
     full-size second buffer); the same float arithmetic as out[i] - hi[i]. */
  lumen_status s = separable(ctx, "lumen_filter_dog", call->in_f32[0], out, &call->geom, p->sigma[0], p->radius[0],
                             orders, p->mode, p->cval, call->threads);
  if (s == LUMEN_OK)
    s = separable_ex(ctx, "lumen_filter_dog", call->in_f32[0], out, &call->geom, p->sigma[1], p->radius[1], orders,
                     p->mode, p->cval, call->threads, 1);
  return s;
}

lumen_status lf_cpu_laplace(lumen_ctx *ctx, lf_call *call) {
  static const char fn[] = "lumen_filter_gaussian_laplace";
  const lf_gauss_params *p = call->params;
  const lf_geom *g = &call->geom;
  float *out = lumen_image_data(call->out);
  float *tmp = alloc_f(g->total);
  if (!tmp) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  lumen_status s = LUMEN_OK;
  const int64_t n = g->total;
  if (p->discrete) {
    /* reference form: Gaussian, then the discrete 2*S+1-point Laplacian with mirror borders */
    const int orders[3] = {0, 0, 0};
    s = separable(ctx, fn, call->in_f32[0], tmp, g, p->sigma[0], p->radius[0], orders, p->mode, p->cval,
                  call->threads);
    if (s == LUMEN_OK) {
      const int64_t n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
      const int S = g->spatial;
#pragma omp parallel for schedule(static) num_threads(call->threads)
      for (int64_t i = 0; i < n; i++) {
        int64_t x = i % n0, y = (i / n0) % n1, z = (i / (n0 * n1)) % n2;
        const float *blk = tmp + (i / g->block) * g->block;
        float c = tmp[i], acc = 0.0f;
        acc += blk[z * n0 * n1 + y * n0 + lf_ext(x - 1, n0, LUMEN_BOUNDARY_MIRROR)] +
               blk[z * n0 * n1 + y * n0 + lf_ext(x + 1, n0, LUMEN_BOUNDARY_MIRROR)] - 2.0f * c;
        if (S > 1)
          acc += blk[z * n0 * n1 + lf_ext(y - 1, n1, LUMEN_BOUNDARY_MIRROR) * n0 + x] +
                 blk[z * n0 * n1 + lf_ext(y + 1, n1, LUMEN_BOUNDARY_MIRROR) * n0 + x] - 2.0f * c;
        if (S > 2)
          acc += blk[lf_ext(z - 1, n2, LUMEN_BOUNDARY_MIRROR) * n0 * n1 + y * n0 + x] +
                 blk[lf_ext(z + 1, n2, LUMEN_BOUNDARY_MIRROR) * n0 * n1 + y * n0 + x] - 2.0f * c;
        out[i] = acc;
      }
    }
    free(tmp);
    return s;
  }
  /* scipy.ndimage.gaussian_laplace: sum over axes of the second derivative along that axis */
  for (int a = 0; a < g->spatial && s == LUMEN_OK; a++) {
    int orders[3] = {0, 0, 0};
    orders[a] = 2;
    s = separable(ctx, fn, call->in_f32[0], a == 0 ? out : tmp, g, p->sigma[0], p->radius[0], orders, p->mode,
                  p->cval, call->threads);
    if (s == LUMEN_OK && a > 0) {
#pragma omp parallel for schedule(static) num_threads(call->threads)
      for (int64_t i = 0; i < n; i++) out[i] += tmp[i];
    }
  }
  free(tmp);
  return s;
}

/* Generic correlation with the (possibly pre-flipped) kernel: out[i] = sum_j k[j] in[i + j - c]. */
lumen_status lf_cpu_convolve(lumen_ctx *ctx, lf_call *call) {
  const lf_conv_params *p = call->params;
  const lf_geom *g = &call->geom;
  const float *in = call->in_f32[0];
  float *out = lumen_image_data(call->out);
  const int64_t n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
  const int64_t rows = n1 * n2 * g->batch;
  const int64_t kx = p->kd[0], ky = p->kd[1], kz = p->kd[2];
  const int64_t left = p->centre[0], right = kx - 1 - p->centre[0];
  int failed = 0;
#pragma omp parallel num_threads(call->threads)
  {
    float *buf = malloc((size_t)(n0 + kx) * sizeof *buf);
    float *crow = malloc((size_t)n0 * sizeof *crow);
    if (!buf || !crow) {
#pragma omp atomic write
      failed = 1;
    } else {
      for (int64_t i = 0; i < n0; i++) crow[i] = p->cval;
    }
#pragma omp for schedule(static)
    for (int64_t R = 0; R < rows; R++) {
      if (!buf || !crow) continue;
      const int64_t y = R % n1, z = (R / n1) % n2, b = R / (n1 * n2);
      float *restrict o = out + R * n0;
      for (int64_t i = 0; i < n0; i++) o[i] = 0.0f;
      for (int64_t dz = 0; dz < kz; dz++) {
        int64_t zz = lf_ext(z + dz - p->centre[2], n2, p->mode);
        for (int64_t dy = 0; dy < ky; dy++) {
          int64_t yy = lf_ext(y + dy - p->centre[1], n1, p->mode);
          const float *src = (zz < 0 || yy < 0) ? crow : in + b * g->block + zz * n0 * n1 + yy * n0;
          extend_row(src, buf, n0, (int)left, (int)right, p->mode, p->cval);
          const float *kr = p->kernel + (dz * ky + dy) * kx;
          for (int64_t dx = 0; dx < kx; dx++) {
            const float wk = kr[dx];
            if (wk == 0.0f) continue;
            const float *restrict s = buf + dx;
            for (int64_t i = 0; i < n0; i++) o[i] += wk * s[i];
          }
        }
      }
    }
    free(buf);
    free(crow);
  }
  if (failed) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_filter_convolve: out of host memory");
  return LUMEN_OK;
}
