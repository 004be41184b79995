/* CPU linear filters: separable Gaussian passes (Gaussian, DoG, LoG) and generic convolution.
 *
 * Every pass works on contiguous x-rows: the x pass copies a row with its boundary extension
 * into a line buffer and runs the symmetric kernel over it; the y and z passes combine whole rows
 * (out_row = sum_k w_k * row(ext(c + k - r))), so the inner loops are unit-stride and vectorise.
 * Rows are distributed over OpenMP threads. Arithmetic in float32, kernels computed in float64
 * like scipy.ndimage and rounded once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
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

static inline __attribute__((always_inline)) void row_body(const float *restrict buf, float *restrict out, int64_t n,
                                                           const float *restrict w, int r) {
  const float wc = w[r];
  int64_t i0 = 0;
  for (; i0 + LF_BLK <= n; i0 += LF_BLK) {
    lf_v16 c0, c1, a0, a1, b0, b1;
    LDV(c0, buf + i0 + r);
    LDV(c1, buf + i0 + r + 16);
    lf_v16 acc0 = wc * c0, acc1 = wc * c1;
    for (int k = 0; k < r; k++) {
      const float wk = w[k];
      LDV(a0, buf + i0 + k);
      LDV(a1, buf + i0 + k + 16);
      LDV(b0, buf + i0 + 2 * r - k);
      LDV(b1, buf + i0 + 2 * r - k + 16);
      acc0 += wk * (a0 + b0);
      acc1 += wk * (a1 + b1);
    }
    STV(out + i0, acc0);
    STV(out + i0 + 16, acc1);
  }
  for (int64_t i = i0; i < n; i++) {
    float acc = wc * buf[i + r];
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
  for (; i0 + LF_BLK <= n; i0 += LF_BLK) {
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

typedef void (*row_fn)(const float *, float *, int64_t, const float *, int);
typedef void (*col_fn)(const float *const *, float *, int64_t, const float *, int);

static void row_base(const float *buf, float *out, int64_t n, const float *w, int r) { row_body(buf, out, n, w, r); }
static void col_base(const float *const *rows, float *out, int64_t n, const float *w, int r) {
  col_body(rows, out, n, w, r);
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
static int simd_level(void) {
  __builtin_cpu_init();
  if (getenv("LUMEN_FILTER_NO_SIMD")) return 0;
  return __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
}
static row_fn pick_row(void) {
  int l = simd_level();
  return l == 2 ? row_avx512 : l == 1 ? row_avx2 : row_base;
}
static col_fn pick_col(void) {
  int l = simd_level();
  return l == 2 ? col_avx512 : l == 1 ? col_avx2 : col_base;
}
#else
static row_fn pick_row(void) { return row_base; }
static col_fn pick_col(void) { return col_base; }
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

typedef struct sep_plan {
  const lf_geom *g;
  const float *w[3];
  int r[3];
  lumen_boundary mode;
  float cval;
  row_fn rowk;
  col_fn colk;
  const float *crow; /* a row of cval (CONSTANT) or NULL */
  int sub;           /* 1: out -= result (DoG), through a per-thread row buffer */
} sep_plan;

/* One output row: the column kernel into out, or (sub) into row and then out -= row. */
static inline void col_out(const sep_plan *p, const float **rp, float *out, float *row, const float *w, int r) {
  const int64_t n0 = p->g->n[0];
  if (!p->sub) {
    p->colk(rp, out, n0, w, r);
    return;
  }
  p->colk(rp, row, n0, w, r);
  for (int64_t i = 0; i < n0; i++) out[i] -= row[i];
}

/* x then y over output rows [y0, y1) of one plane: each source row is x-filtered once into a ring
   of 2r+1 rows that stays in cache, then the y kernel combines ring rows. Same arithmetic as an x
   pass over the whole image followed by a y pass. */
static void fused_xy(const sep_plan *p, const float *in, float *out, int64_t y0, int64_t y1, float *ring,
                     int64_t rstride, float *ext, const float **slot, const float **rp, float *row) {
  const int64_t n0 = p->g->n[0], n1 = p->g->n[1];
  const int rx = p->r[0], ry = p->r[1];
  const int64_t m = 2 * (int64_t)ry + 1;
  for (int64_t e = y0 - ry; e < y1 + ry; e++) {
    const int64_t sl = mod_i64(e, m);
    const int64_t jj = lf_ext(e, n1, p->mode);
    if (jj < 0) {
      slot[sl] = p->crow;
    } else {
      extend_row(in + jj * n0, ext, n0, rx, rx, p->mode, p->cval);
      p->rowk(ext, ring + sl * rstride, n0, p->w[0], rx);
      slot[sl] = ring + sl * rstride;
    }
    if (e >= y0 + ry) {
      const int64_t y = e - ry;
      for (int64_t k = 0; k < m; k++) rp[k] = slot[mod_i64(y + k - ry, m)];
      col_out(p, rp, out + y * n0, row, p->w[1], ry);
    }
  }
}

/* Separable filter over the spatial axes with per-axis kernels (orders[a]); in -> out. */
static lumen_status separable_ex(lumen_ctx *ctx, const char *fn, const float *in, float *out, const lf_geom *g,
                                 const double *sigma, const int *radius, const int *orders, lumen_boundary mode,
                                 float cval, int threads, int sub) {
  const int S = g->spatial;
  const int64_t n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
  sep_plan p;
  memset(&p, 0, sizeof p);
  p.g = g;
  p.mode = mode;
  p.cval = cval;
  p.sub = sub;
  p.rowk = pick_row();
  p.colk = pick_col();
  float *w[3] = {NULL, NULL, NULL};
  float *crow = NULL, *tmp = NULL;
  int rmax = 0, failed = 0;
  for (int a = 0; a < S; a++) {
    w[a] = malloc((size_t)(2 * radius[a] + 1) * sizeof(float));
    if (!w[a])
      failed = 1;
    else
      lf_gaussian_kernel(sigma[a], orders[a], radius[a], w[a]);
    p.w[a] = w[a];
    p.r[a] = radius[a];
    rmax = radius[a] > rmax ? radius[a] : rmax;
  }
  crow = alloc_f(n0);
  if (crow)
    for (int64_t i = 0; i < n0; i++) crow[i] = cval;
  p.crow = crow;
  const int64_t P = padded_stride(n0 * n1); /* plane stride of the xy result before the z pass */
  if (S == 3) tmp = alloc_f(P * n2);
  if (failed || !crow || (S == 3 && !tmp)) failed = 1;
  const int64_t rstride = padded_stride(n0);
  for (int64_t b = 0; b < g->batch && !failed; b++) {
    const float *src = in + b * g->block;
    float *dst = out + b * g->block;
    if (S == 1) {
      float *ext = alloc_f(n0 + 2 * radius[0]);
      if (!ext) {
        failed = 1;
        break;
      }
      extend_row(src, ext, n0, radius[0], radius[0], mode, cval);
      if (sub) {
        float *row = alloc_f(n0);
        if (!row) {
          free(ext);
          failed = 1;
          break;
        }
        p.rowk(ext, row, n0, w[0], radius[0]);
        for (int64_t i = 0; i < n0; i++) dst[i] -= row[i];
        free(row);
      } else {
        p.rowk(ext, dst, n0, w[0], radius[0]);
      }
      free(ext);
      continue;
    }
    /* xy: planes x bands of rows */
    const int64_t planes = n2;
    int64_t bands = planes >= 2 * threads ? 1 : (2 * threads + planes - 1) / planes;
    if (bands > n1) bands = n1;
    const int64_t band = (n1 + bands - 1) / bands;
    float *xy = S == 3 ? tmp : dst;
    const int xysub = S == 3 ? 0 : sub; /* in 3-D the z pass subtracts */
    const int64_t pstride = S == 3 ? P : n0 * n1;
#pragma omp parallel num_threads(threads)
    {
      const int64_t m = 2 * (int64_t)radius[1] + 1;
      float *ring = alloc_f(m * rstride);
      float *ext = alloc_f(n0 + 2 * radius[0]);
      const float **slot = malloc((size_t)m * sizeof *slot);
      const float **rp = malloc((size_t)(2 * rmax + 1) * sizeof *rp);
      float *row = sub ? alloc_f(n0) : NULL;
      const int ok = ring && ext && slot && rp && (!sub || row);
      if (!ok) {
#pragma omp atomic write
        failed = 1;
      }
#pragma omp for schedule(static)
      for (int64_t item = 0; item < planes * bands; item++) {
        if (!ok) continue;
        const int64_t z = item / bands, y0 = (item % bands) * band;
        const int64_t y1 = y0 + band < n1 ? y0 + band : n1;
        if (y0 < y1) {
          sep_plan q = p;
          q.sub = xysub;
          fused_xy(&q, src + z * n0 * n1, xy + z * pstride, y0, y1, ring, rstride, ext, slot, rp, row);
        }
      }
      if (S == 3) {
        /* z pass: out row (z, y) from the xy planes ext(z + k - r) (the for's barrier has passed) */
        const int rz = radius[2];
#pragma omp for schedule(static)
        for (int64_t R = 0; R < n1 * n2; R++) {
          if (!ok) continue;
          const int64_t y = R % n1, z = R / n1;
          for (int k = 0; k <= 2 * rz; k++) {
            int64_t j = lf_ext(z + k - rz, n2, mode);
            rp[k] = j < 0 ? crow : tmp + j * P + y * n0;
          }
          col_out(&p, rp, dst + R * n0, row, w[2], rz);
        }
      }
      free(ring);
      free(ext);
      free(slot);
      free(rp);
      free(row);
    }
  }
  for (int a = 0; a < 3; a++) free(w[a]);
  free(crow);
  free(tmp);
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
