/* CPU point operations, thresholds and statistics: gamma, contrast, Otsu, Sauvola, local variance,
 * local-variance binarisation, entropy, mutual information, variance. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "filter/cpu_values.h"
#include "filter/filter_internal.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* ------------------------------------------------------------------ point operations */

/* min and max of x[lo, hi) into *mn, *mx (which hold a start value), as the serial loop
   m = x < m ? x : m (NaNs skipped): SSE's minps / maxps are exactly that, 16 lanes at a time */
#if defined(__SSE2__)
#include <emmintrin.h>
static void min_max_part(const float *x, int64_t lo, int64_t hi, float *mn, float *mx) {
  __m128 l[4], h[4];
  for (int j = 0; j < 4; j++) l[j] = _mm_set1_ps(*mn), h[j] = _mm_set1_ps(*mx);
  int64_t i = lo;
  for (; i + 16 <= hi; i += 16)
    for (int j = 0; j < 4; j++) {
      const __m128 v = _mm_loadu_ps(x + i + 4 * j);
      l[j] = _mm_min_ps(v, l[j]);
      h[j] = _mm_max_ps(v, h[j]);
    }
  float lv[16], hv[16];
  for (int j = 0; j < 4; j++) _mm_storeu_ps(lv + 4 * j, l[j]), _mm_storeu_ps(hv + 4 * j, h[j]);
  for (int j = 0; j < 16; j++) {
    *mn = lv[j] < *mn ? lv[j] : *mn;
    *mx = hv[j] > *mx ? hv[j] : *mx;
  }
  for (; i < hi; i++) {
    *mn = x[i] < *mn ? x[i] : *mn;
    *mx = x[i] > *mx ? x[i] : *mx;
  }
}
#else
static void min_max_part(const float *x, int64_t lo, int64_t hi, float *mn, float *mx) {
  for (int64_t i = lo; i < hi; i++) {
    *mn = x[i] < *mn ? x[i] : *mn;
    *mx = x[i] > *mx ? x[i] : *mx;
  }
}
#endif

static void min_max(const float *x, int64_t n, int threads, float *mn, float *mx) {
  enum { MAXT = 256 };
  float pl[MAXT], ph[MAXT];
  const int T = threads > 1 && n >= 65536 ? (threads < MAXT ? threads : MAXT) : 1;
  int used = 1;
  pl[0] = ph[0] = x[0];
#pragma omp parallel num_threads(T)
  {
    LF_THREAD_OF_TEAM(int, t, nt);
    float l = x[0], h = x[0];
    min_max_part(x, n * t / nt, n * (t + 1) / nt, &l, &h);
    pl[t] = l;
    ph[t] = h;
    if (t == 0) used = nt;
  }
  *mn = *mx = x[0];
  for (int t = 0; t < used; t++) {
    *mn = pl[t] < *mn ? pl[t] : *mn;
    *mx = ph[t] > *mx ? ph[t] : *mx;
  }
}

/* m * powf(max(x / m, 0), g) without the scalar powf: v^g = 2^(g log2 v) evaluated in double
   (log2 from the exponent bits plus an atanh series on [sqrt(1/2), sqrt(2)), relative error
   ~1e-14; 2^f by a degree-13 Taylor series on [-1/2, 1/2]), then rounded to float. The double
   result is far more accurate than float, so the float result matches powf to within its ulp
   (powf itself is not always correctly rounded). Branch-free so that it vectorises. */
#define GAMMA_BODY                                                                                      \
  _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                               \
    float v = in[i] / m;                                                                              \
    uint32_t bits;                                                                                    \
    memcpy(&bits, &v, sizeof bits);                                                                   \
    /* right for positive normal finite quotients; the rest are redone by the scalar fixup */         \
    bits &= 0x7fffffffu;                                                                              \
    int32_t e = (int32_t)(bits >> 23) - 127;                                                          \
    uint32_t mb = (bits & 0x007fffffu) | 0x3f800000u;                                                 \
    uint32_t adj = (uint32_t)(mb > 0x3fb504f3u); /* mantissa > sqrt(2): halve it */                  \
    mb -= adj << 23;                                                                                  \
    e += (int32_t)adj;                                                                                \
    float mf;                                                                                         \
    memcpy(&mf, &mb, sizeof mf);                                                                      \
    double mt = (double)mf;                                                                           \
    double sx = (mt - 1.0) / (mt + 1.0), s2 = sx * sx;                                                \
    double ps = 1.0 / 17.0;                                                                           \
    ps = ps * s2 + 1.0 / 15.0;                                                                        \
    ps = ps * s2 + 1.0 / 13.0;                                                                        \
    ps = ps * s2 + 1.0 / 11.0;                                                                        \
    ps = ps * s2 + 1.0 / 9.0;                                                                         \
    ps = ps * s2 + 1.0 / 7.0;                                                                         \
    ps = ps * s2 + 1.0 / 5.0;                                                                         \
    ps = ps * s2 + 1.0 / 3.0;                                                                         \
    ps = ps * s2 + 1.0;                                                                               \
    double l2 = (double)e + 2.0 * sx * ps * 1.4426950408889634074; /* log2(v) */                      \
    double y = gd * l2;                                                                               \
    double nr = (y + 6755399441055744.0) - 6755399441055744.0;                                        \
    double f = (y - nr) * 0.69314718055994530942;                                                     \
    double q = 1.0 / 6227020800.0;                                                                    \
    q = q * f + 1.0 / 479001600.0;                                                                    \
    q = q * f + 1.0 / 39916800.0;                                                                     \
    q = q * f + 1.0 / 3628800.0;                                                                      \
    q = q * f + 1.0 / 362880.0;                                                                       \
    q = q * f + 1.0 / 40320.0;                                                                        \
    q = q * f + 1.0 / 5040.0;                                                                         \
    q = q * f + 1.0 / 720.0;                                                                          \
    q = q * f + 1.0 / 120.0;                                                                          \
    q = q * f + 1.0 / 24.0;                                                                           \
    q = q * f + 1.0 / 6.0;                                                                            \
    q = q * f + 0.5;                                                                                  \
    q = q * f + 1.0;                                                                                  \
    q = q * f + 1.0;                                                                                  \
    int32_t ni = (int32_t)nr, n1 = ni >> 1, n2 = ni - n1;                                             \
    uint64_t b1 = (uint64_t)(int64_t)(n1 + 1023) << 52, b2 = (uint64_t)(int64_t)(n2 + 1023) << 52;    \
    double s1, s2d;                                                                                   \
    memcpy(&s1, &b1, sizeof s1);                                                                      \
    memcpy(&s2d, &b2, sizeof s2d);                                                                    \
    out[i] = m * (float)(q * s1 * s2d);                                                               \
  }

static void gamma_generic(const float *restrict in, float *restrict out, int64_t n, float m, double gd) {
  GAMMA_BODY
}
__attribute__((target("avx2,fma"))) static void gamma_avx2(const float *restrict in, float *restrict out, int64_t n,
                                                           float m, double gd) {
  GAMMA_BODY
}
__attribute__((target("avx512f,avx512dq"))) static void gamma_avx512(const float *restrict in, float *restrict out,
                                                                     int64_t n, float m, double gd) {
  GAMMA_BODY
}
#undef GAMMA_BODY

lumen_status lf_cpu_abs(lumen_ctx *ctx, lf_call *call) {
  (void)ctx;
  const float *in = call->in_f32[0];
  float *out = lumen_image_data(call->out);
  const int64_t n = call->geom.total;
#pragma omp parallel for schedule(static) num_threads(call->threads)
  for (int64_t i = 0; i < n; i++) out[i] = fabsf(in[i]);
  return LUMEN_OK;
}

lumen_status lf_cpu_gamma(lumen_ctx *ctx, lf_call *call) {
  (void)ctx;
  const lumen_gamma_opts *o = call->opts;
  const float *in = call->in_f32[0];
  float *out = lumen_image_data(call->out);
  const float m = (float)o->max_value, g = (float)o->gamma;
  const double gd = (double)g;
  const int64_t n = call->geom.total;
  const int isa = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") ? 2
                  : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")     ? 1
                                                                                        : 0;
  const int64_t chunk = 16384;
#pragma omp parallel for schedule(static) num_threads(call->threads)
  for (int64_t c = 0; c < n; c += chunk) {
    const int64_t len = n - c < chunk ? n - c : chunk;
    if (!(gd <= 7.0)) /* |g log2 v| <= 7 * 150 keeps 2^y a normal double */
      for (int64_t i = c; i < c + len; i++) out[i] = 0.0f;
    else if (isa == 2)
      gamma_avx512(in + c, out + c, len, m, gd);
    else if (isa == 1)
      gamma_avx2(in + c, out + c, len, m, gd);
    else
      gamma_generic(in + c, out + c, len, m, gd);
    /* zero, NaN, subnormal and non-finite quotients: the scalar formula */
    int bad = !(gd <= 7.0);
    for (int64_t i = c; i < c + len; i++) {
      const float v = in[i] / m;
      bad |= (v >= 1.17549435e-38f) ^ 1;
      bad |= (v <= 3.40282347e+38f) ^ 1;
    }
    for (int64_t i = c; bad && i < c + len; i++) {
      float v = in[i] / m;
      if (!(gd <= 7.0) || !(v >= 1.17549435e-38f && v <= 3.40282347e+38f)) out[i] = m * powf(v > 0.0f ? v : 0.0f, g);
    }
  }
  return LUMEN_OK;
}

lumen_status lf_cpu_contrast(lumen_ctx *ctx, lf_call *call) {
  (void)ctx;
  const lumen_contrast_opts *o = call->opts;
  const float *in = call->in_f32[0];
  float *out = lumen_image_data(call->out);
  const int64_t n = call->geom.total;
  double bins = o->bins;
  if (bins == 0) {
    float mn, mx;
    min_max(in, n, call->threads, &mn, &mx);
    bins = mx <= 255.0f ? 255.0 : 4095.0;
  }
  const float a = (float)(o->contrast / (bins / 2.0) + 1.0);
  const float b = (float)(o->brightness - o->contrast);
  const float top = (float)bins;
#pragma omp parallel for schedule(static) num_threads(call->threads)
  for (int64_t i = 0; i < n; i++) {
    float v = a * in[i] + b;
    v = v < 0.0f ? 0.0f : v;
    out[i] = v > top ? top : v;
  }
  return LUMEN_OK;
}

/* ------------------------------------------------------------------ histograms (numpy rules) */

/* numpy.histogram(x, bins=nb) for float32 data: range [min, max] (+-0.5 when equal), float32
   edges from linspace computed in float64, the bin of each value corrected against the edges. */
typedef struct hist_spec {
  int nb;
  float mn, mx;
  float scale_f; /* nb / (mx - mn) */
  int use_f;     /* the product estimate: nb <= 2^16 and a scale far from float's range */
  float *edges; /* nb + 1 */
} hist_spec;

static int hist_init_mm(hist_spec *h, float mn, float mx, int nb) {
  if (mn == mx) {
    mn = (float)((double)mn - 0.5);
    mx = (float)((double)mx + 0.5);
  }
  h->nb = nb;
  h->mn = mn;
  h->mx = mx;
  const double scale = (double)nb / ((double)mx - (double)mn);
  h->scale_f = (float)scale;
  h->use_f = nb <= 65536 && scale < 1e30;
  h->edges = malloc((size_t)(nb + 1) * sizeof *h->edges);
  if (!h->edges) return -1;
  double step = ((double)mx - (double)mn) / nb;
  for (int i = 0; i < nb; i++) h->edges[i] = (float)((double)i * step + (double)mn);
  h->edges[nb] = mx;
  return 0;
}

static int hist_init(hist_spec *h, const float *x, int64_t n, int nb, int threads) {
  float mn, mx;
  min_max(x, n, threads, &mn, &mx);
  return hist_init_mm(h, mn, mx, nb);
}

/* the bin of v: numpy's estimate f = (v - mn) / (mx - mn) nb (up to 2^16 bins a product by
   nb / (mx - mn) instead, within 0.02 bins of it and faster), corrected by one against the edges
   (numpy's rule; the branches are predictable, a branch-free form is slower) */
static inline int hist_bin(const hist_spec *h, float v) {
  const int nb = h->nb;
  int idx;
  if (h->use_f) {
    const float f = (v - h->mn) * h->scale_f;
    idx = f >= (float)nb ? nb - 1 : f > 0.0f ? (int)f : 0;
  } else {
    const float f = ((v - h->mn) / (h->mx - h->mn)) * (float)nb;
    idx = f >= (float)nb ? nb - 1 : f > 0.0f ? (int)f : 0;
  }
  if (idx > 0 && v < h->edges[idx]) idx--;
  if (idx < nb - 1 && v >= h->edges[idx + 1]) idx++;
  return idx;
}

/* counts of x[lo, hi) into pc (nb bins) through 4 interleaved copies (pc4: 4 nb zeroed
   counters), so that runs of equal bins (a flat background) do not serialise on one counter */
static void hist_part(const hist_spec *h, const float *x, int64_t lo, int64_t hi, int64_t *pc, int64_t *pc4) {
  const int nb = h->nb;
  int64_t i = lo;
  for (; i + 4 <= hi; i += 4) {
    pc4[hist_bin(h, x[i])]++;
    pc4[nb + hist_bin(h, x[i + 1])]++;
    pc4[2 * nb + hist_bin(h, x[i + 2])]++;
    pc4[3 * nb + hist_bin(h, x[i + 3])]++;
  }
  for (; i < hi; i++) pc4[hist_bin(h, x[i])]++;
  for (int b = 0; b < nb; b++) pc[b] += pc4[b] + pc4[nb + b] + pc4[2 * nb + b] + pc4[3 * nb + b];
}

/* Counts per bin; *known (may be NULL) holds the data's min and max when the caller has them.
   Threads count their own contiguous parts into private arrays, summed in order (integers, so
   the counts are those of the serial loop). */
static lumen_status histogram_mm(lumen_ctx *ctx, const float *x, int64_t n, int nb, int threads, hist_spec *h,
                                 int64_t **counts, const float *known) {
  *counts = NULL;
  int bad = known ? hist_init_mm(h, known[0], known[1], nb) : hist_init(h, x, n, nb, threads);
  if (bad != 0 || !(*counts = calloc((size_t)nb, sizeof **counts))) {
    free(h->edges);
    h->edges = NULL;
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "histogram: out of host memory for %d bins", nb);
  }
  int64_t *c = *counts;
  int T = threads > 1 && n >= 65536 ? threads : 1;
  /* per thread: its counts (nb) and 4 interleaved copies (4 nb) */
  int64_t *priv = calloc((size_t)T * 5 * (size_t)nb, sizeof *priv);
  if (!priv) {
    for (int64_t i = 0; i < n; i++) c[hist_bin(h, x[i])]++;
    return LUMEN_OK;
  }
#pragma omp parallel num_threads(T)
  {
    LF_THREAD_OF_TEAM(int, t, nt);
    int64_t *pc = priv + (size_t)t * 5 * (size_t)nb;
    hist_part(h, x, n * t / nt, n * (t + 1) / nt, pc, pc + nb);
  }
  for (int t = 0; t < T; t++)
    for (int b = 0; b < nb; b++) c[b] += priv[(size_t)t * 5 * (size_t)nb + b];
  free(priv);
  return LUMEN_OK;
}

static lumen_status histogram(lumen_ctx *ctx, const float *x, int64_t n, int nb, int threads, hist_spec *h,
                              int64_t **counts) {
  return histogram_mm(ctx, x, n, nb, threads, h, counts, NULL);
}

/* ------------------------------------------------------------------ Otsu */

lumen_status lf_cpu_otsu(lumen_ctx *ctx, lf_call *call) {
  const lumen_otsu_opts *o = call->opts;
  const float *x = call->in_f32[0];
  const int64_t n = call->geom.total;
  float mn, mx;
  min_max(x, n, call->threads, &mn, &mx);
  double thr;
  if (mn == mx) {
    thr = mn; /* skimage: a constant image returns its value */
  } else {
    int nb = o->bins ? o->bins : (mn >= 0.0f && mx <= 255.0f ? 256 : 4096);
    hist_spec h;
    int64_t *c;
    const float known[2] = {mn, mx};
    lumen_status s = histogram_mm(ctx, x, n, nb, call->threads, &h, &c, known);
    if (s != LUMEN_OK) return s;
    double *work = malloc(sizeof(double) * (size_t)nb * 4);
    float *centre = malloc(sizeof(float) * (size_t)nb);
    if (!work || !centre) {
      free(work);
      free(centre);
      free(c);
      free(h.edges);
      return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_filter_otsu: out of host memory");
    }
    thr = lf_otsu_threshold(c, h.edges, nb, work, centre);
    free(work);
    free(centre);
    free(c);
    free(h.edges);
  }
  call->scalar[0] = thr;
  if (call->out) {
    uint8_t *m = lumen_image_data(call->out);
    const float t = (float)thr;
#pragma omp parallel for schedule(static) num_threads(call->threads)
    for (int64_t i = 0; i < n; i++) m[i] = x[i] > t;
  }
  return LUMEN_OK;
}

/* ------------------------------------------------------------------ window moments */

/* one sliding-window pass along axis with window w over double data (src -> dst) */
static void box_pass(const double *src, double *dst, const lf_geom *g, int axis, int w, lumen_boundary mode,
                     double cval_row, int threads) {
  const int h = w / 2;
  const int64_t n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
  if (axis == 0) {
    const int64_t rows = n1 * n2 * g->batch;
#pragma omp parallel num_threads(threads)
    {
      double *e = malloc((size_t)(n0 + 2 * h + 1) * sizeof *e);
#pragma omp for schedule(static)
      for (int64_t R = 0; R < rows; R++) {
        if (!e) continue;
        const double *s = src + R * n0;
        double *d = dst + R * n0;
        for (int64_t i = -h; i < n0 + h; i++) {
          int64_t j = lf_ext(i, n0, mode);
          e[i + h] = j < 0 ? cval_row : s[j];
        }
        double acc = 0;
        for (int k = 0; k < w; k++) acc += e[k];
        d[0] = acc;
        for (int64_t i = 1; i < n0; i++) {
          acc += e[i + w - 1] - e[i - 1];
          d[i] = acc;
        }
      }
      free(e);
    }
    return;
  }
  /* lines along y (axis 1) or z (axis 2), all x at once in chunks */
  const int64_t L = g->n[axis];
  const int64_t stride = axis == 1 ? n0 : n0 * n1;
  const int64_t outer = axis == 1 ? n2 * g->batch : n1 * g->batch;
  const int64_t chunk = 256;
  const int64_t nch = (n0 + chunk - 1) / chunk;
#pragma omp parallel num_threads(threads)
  {
    double *acc = malloc((size_t)chunk * sizeof *acc);
#pragma omp for schedule(static)
    for (int64_t item = 0; item < outer * nch; item++) {
      if (!acc) continue;
      const int64_t q = item / nch, x0 = (item % nch) * chunk;
      const int64_t cw = n0 - x0 < chunk ? n0 - x0 : chunk;
      int64_t base;
      if (axis == 1) {
        base = (q / n2) * g->block + (q % n2) * n0 * n1;
      } else {
        base = (q / n1) * g->block + (q % n1) * n0;
      }
      base += x0;
      for (int64_t i = 0; i < cw; i++) acc[i] = 0;
      for (int64_t k = -h; k <= h; k++) {
        int64_t j = lf_ext(k, L, mode);
        if (j < 0)
          for (int64_t i = 0; i < cw; i++) acc[i] += cval_row;
        else
          for (int64_t i = 0; i < cw; i++) acc[i] += src[base + j * stride + i];
      }
      for (int64_t i = 0; i < cw; i++) dst[base + i] = acc[i];
      for (int64_t c = 1; c < L; c++) {
        int64_t ja = lf_ext(c + h, L, mode), jr = lf_ext(c - h - 1, L, mode);
        const double *ra = ja < 0 ? NULL : src + base + ja * stride;
        const double *rr = jr < 0 ? NULL : src + base + jr * stride;
        double *d = dst + base + c * stride;
        for (int64_t i = 0; i < cw; i++) {
          acc[i] += (ra ? ra[i] : cval_row) - (rr ? rr[i] : cval_row);
          d[i] = acc[i];
        }
      }
    }
    free(acc);
  }
}

/* window sum of in^power into out (scratch: tmp), ping-ponging so that the last pass lands in out */
static void box_sum(const float *in, int power, double *out, double *tmp, const lf_geom *g, int window,
                    lumen_boundary mode, double cval, int threads) {
  const int64_t n = g->total;
  double *src = (g->spatial % 2 == 1) ? tmp : out;
  double *dst = src == tmp ? out : tmp;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; i++) src[i] = power == 1 ? (double)in[i] : (double)in[i] * (double)in[i];
  double cv = power == 1 ? cval : cval * cval;
  for (int axis = 0; axis < g->spatial; axis++) {
    box_pass(src, dst, g, axis, window, mode, cv, threads);
    cv *= window;
    double *t = src;
    src = dst;
    dst = t;
  }
}

lumen_status lf_cpu_box_moments(lumen_ctx *ctx, const float *in, const lf_geom *g, int window, lumen_boundary mode,
                                double cval, double **sum, double **sumsq, int threads) {
  const int64_t n = g->total;
  double *a = lf_malloc_big((size_t)n * sizeof *a);
  double *b = lf_malloc_big((size_t)n * sizeof *b);
  double *c = lf_malloc_big((size_t)n * sizeof *c);
  *sum = *sumsq = NULL;
  if (!a || !b || !c) {
    free(a);
    free(b);
    free(c);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "window moments: out of host memory for %lld voxels",
                      (long long)n);
  }
  box_sum(in, 1, a, c, g, window, mode, cval, threads);
  box_sum(in, 2, b, c, g, window, mode, cval, threads);
  free(c);
  *sum = a;
  *sumsq = b;
  return LUMEN_OK;
}

/* ------------------------------------------------------------------ Sauvola, local variance */

lumen_status lf_cpu_sauvola(lumen_ctx *ctx, lf_call *call) {
  const lumen_sauvola_opts *o = call->opts;
  const float *x = call->in_f32[0];
  double *s1, *s2;
  lumen_status s = lf_cpu_box_moments(ctx, x, &call->geom, o->window, LUMEN_BOUNDARY_MIRROR, 0.0, &s1, &s2,
                                      call->threads);
  if (s != LUMEN_OK) return s;
  double N = 1;
  for (int a = 0; a < call->geom.spatial; a++) N *= o->window;
  const int64_t n = call->geom.total;
  const double k = o->k, r = o->r;
  float *tf = o->output_threshold ? lumen_image_data(call->out) : NULL;
  uint8_t *tm = o->output_threshold ? NULL : lumen_image_data(call->out);
  const uint8_t fg = (uint8_t)o->foreground;
#pragma omp parallel for schedule(static) num_threads(call->threads)
  for (int64_t i = 0; i < n; i++) {
    double m = s1[i] / N, v = s2[i] / N - m * m;
    double sd = sqrt(v > 0 ? v : 0);
    float t = (float)(m * (1.0 + k * (sd / r - 1.0)));
    if (tf)
      tf[i] = t;
    else
      tm[i] = x[i] > t ? fg : 0;
  }
  free(s1);
  free(s2);
  return LUMEN_OK;
}

static lumen_status local_var(lumen_ctx *ctx, lf_call *call, double **var) {
  const lumen_local_variance_opts *o = call->opts;
  double *s1, *s2;
  lumen_status s = lf_cpu_box_moments(ctx, call->in_f32[0], &call->geom, o->window, o->mode, o->cval, &s1, &s2,
                                      call->threads);
  if (s != LUMEN_OK) return s;
  double N = 1;
  for (int a = 0; a < call->geom.spatial; a++) N *= o->window;
  const int64_t n = call->geom.total;
#pragma omp parallel for schedule(static) num_threads(call->threads)
  for (int64_t i = 0; i < n; i++) {
    double m = s1[i] / N, v = s2[i] / N - m * m;
    s1[i] = v > 0 ? v : 0;
  }
  free(s2);
  *var = s1;
  return LUMEN_OK;
}

lumen_status lf_cpu_local_variance(lumen_ctx *ctx, lf_call *call) {
  double *v;
  lumen_status s = local_var(ctx, call, &v);
  if (s != LUMEN_OK) return s;
  float *out = lumen_image_data(call->out);
  const int64_t n = call->geom.total;
#pragma omp parallel for schedule(static) num_threads(call->threads)
  for (int64_t i = 0; i < n; i++) out[i] = (float)v[i];
  free(v);
  return LUMEN_OK;
}

static void mean_var(const float *x, int64_t n, int ddof, int threads, double *mean, double *var) {
  double s = 0;
#pragma omp parallel for schedule(static) reduction(+ : s) num_threads(threads)
  for (int64_t i = 0; i < n; i++) s += x[i];
  double m = s / (double)n, q = 0;
#pragma omp parallel for schedule(static) reduction(+ : q) num_threads(threads)
  for (int64_t i = 0; i < n; i++) q += ((double)x[i] - m) * ((double)x[i] - m);
  *mean = m;
  *var = n > ddof ? q / (double)(n - ddof) : 0.0;
}

lumen_status lf_cpu_variance_binarize(lumen_ctx *ctx, lf_call *call) {
  const lumen_local_variance_opts *o = call->opts;
  double *v;
  lumen_status s = local_var(ctx, call, &v);
  if (s != LUMEN_OK) return s;
  double gm, gv;
  const int64_t n = call->geom.total;
  mean_var(call->in_f32[0], n, 0, call->threads, &gm, &gv);
  const double t = o->alpha * gv * gv;
  uint8_t *out = lumen_image_data(call->out);
#pragma omp parallel for schedule(static) num_threads(call->threads)
  for (int64_t i = 0; i < n; i++) out[i] = v[i] * v[i] >= t;
  free(v);
  return LUMEN_OK;
}

/* ------------------------------------------------------------------ statistics */

/* Ascending, NaNs last (a total order: qsort needs one, and the run loop below ends on them). */
static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  if (isnan(x) || isnan(y)) return isnan(x) - isnan(y);
  return (x > y) - (x < y);
}

lumen_status lf_cpu_entropy(lumen_ctx *ctx, lf_call *call) {
  const lumen_stats_opts *o = call->opts;
  const float *x = call->in_f32[0];
  const int64_t n = call->geom.total;
  if (o->bins == 0) {
    float *t = malloc((size_t)n * sizeof *t);
    if (!t) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_filter_entropy: out of host memory");
    memcpy(t, x, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_float);
    double h = 0;
    for (int64_t i = 0; i < n;) {  /* runs of equal values; the NaNs are one value */
      int64_t j = i + 1;
      while (j < n && (t[j] == t[i] || (isnan(t[j]) && isnan(t[i])))) j++;
      double p = (double)(j - i) / (double)n;
      h -= p * log2(p);
      i = j;
    }
    free(t);
    call->scalar[0] = h;
    return LUMEN_OK;
  }
  hist_spec h;
  int64_t *c;
  lumen_status s = histogram(ctx, x, n, o->bins, call->threads, &h, &c);
  if (s != LUMEN_OK) return s;
  call->scalar[0] = lf_entropy_of(c, o->bins, n);
  free(c);
  free(h.edges);
  return LUMEN_OK;
}

lumen_status lf_cpu_mutual_information(lumen_ctx *ctx, lf_call *call) {
  const lumen_stats_opts *o = call->opts;
  const int nb = o->bins;
  const int64_t n = call->geom.total;
  hist_spec ha, hb;
  if (hist_init(&ha, call->in_f32[0], n, nb, call->threads) != 0)
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_filter_mutual_information: out of host memory");
  if (hist_init(&hb, call->in_f32[1], n, nb, call->threads) != 0) {
    free(ha.edges);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_filter_mutual_information: out of host memory");
  }
  int64_t *joint = calloc((size_t)nb * (size_t)nb + 2 * (size_t)nb, sizeof *joint);
  if (!joint) {
    free(ha.edges);
    free(hb.edges);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_filter_mutual_information: out of host memory");
  }
  int64_t *ca = joint + (size_t)nb * nb, *cb = ca + nb;
  for (int64_t i = 0; i < n; i++) {
    int ia = hist_bin(&ha, call->in_f32[0][i]), ib = hist_bin(&hb, call->in_f32[1][i]);
    joint[(int64_t)ia * nb + ib]++;
    ca[ia]++;
    cb[ib]++;
  }
  double Ha = lf_entropy_of(ca, nb, n), Hb = lf_entropy_of(cb, nb, n), Hj = lf_entropy_of(joint, (int64_t)nb * nb, n);
  call->scalar[0] = Ha + Hb - Hj;
  call->scalar[1] = Ha;
  call->scalar[2] = Hb;
  call->scalar[3] = Hj;
  free(joint);
  free(ha.edges);
  free(hb.edges);
  return LUMEN_OK;
}

lumen_status lf_cpu_variance(lumen_ctx *ctx, lf_call *call) {
  (void)ctx;
  const lumen_stats_opts *o = call->opts;
  mean_var(call->in_f32[0], call->geom.total, o->ddof, call->threads, &call->scalar[0], &call->scalar[1]);
  return LUMEN_OK;
}
