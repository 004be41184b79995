/* lumen_filter_otsu_linspace: medical-image-std's Otsu threshold (Threshold.otsu_threshold) and
 * its mask. Bins: 256 when the maximum is <= 255, else 4096, over [min, max] with numpy's edges;
 * the class split is lumen's (lf_otsu_threshold, as lumen_filter_otsu); the threshold is the
 * reference's bin centre, linspace(min, max, bins)[i] as numpy computes it (float64, rounded to
 * float32). Passes: the finite range (and whether every value is an integer); the histogram (for
 * integer data with a range below 2^16: counts per integer value, then each value's bin, which
 * needs no per-voxel float arithmetic); the mask x > threshold. All threaded. Integers in
 * [-2^15, 2^16) (12- and 16-bit images) take the range and the counts in one pass. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "filter/cpu_values.h"
#include "filter/filter_internal.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct otsu_bins {
  int nb;
  float mn, mx, scale; /* scale: nb / (mx - mn) */
  int use_scale;       /* the product estimate (else the quotient, for ranges near float's limits) */
  float *edges;        /* nb + 1: numpy.histogram's edges */
} otsu_bins;

/* the bin whose edges hold v (numpy's rule: [e_i, e_i+1), the last bin closed): an estimate,
   then moved against the edges until they hold it */
static inline int bin_of(const otsu_bins *b, float v) {
  const float f = b->use_scale ? (v - b->mn) * b->scale : (v - b->mn) / (b->mx - b->mn) * (float)b->nb;
  int i = f >= (float)b->nb ? b->nb - 1 : f > 0.0f ? (int)f : 0;
  while (i > 0 && v < b->edges[i]) i--;
  while (i < b->nb - 1 && v >= b->edges[i + 1]) i++;
  return i;
}

/* float data: per thread private counts (4 interleaved copies, summed in order) */
static void float_counts(const otsu_bins *b, const float *x, int64_t n, int threads, int64_t *counts, int64_t *priv) {
  const int nb = b->nb;
  int used = 1;
#pragma omp parallel num_threads(threads)
  {
    LF_THREAD_OF_TEAM(int, t, nt);
    int64_t *c = priv + (size_t)t * 4 * (size_t)nb;
    const int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
    int64_t i = lo;
    for (; i + 4 <= hi; i += 4)
      for (int j = 0; j < 4; j++) {
        const float v = x[i + j];
        if (v - v == 0.0f) c[(size_t)j * (size_t)nb + (size_t)bin_of(b, v)]++;
      }
    for (; i < hi; i++)
      if (x[i] - x[i] == 0.0f) c[bin_of(b, x[i])]++;
    if (t == 0) used = nt;
  }
  memset(counts, 0, (size_t)nb * sizeof *counts);
  for (int t = 0; t < 4 * used; t++)
    for (int k = 0; k < nb; k++) counts[k] += priv[(size_t)t * (size_t)nb + (size_t)k];
}

/* the histogram of the finite voxels (known: the counts of the integers from r->min, already
   made by the first pass, or NULL); -1 when out of memory */
static int histogram(const otsu_bins *b, const float *x, int64_t n, int threads, const lf_value_range *r,
                     const int64_t *known, int64_t *counts) {
  const double span = (double)r->max - (double)r->min + 1.0;
  if (r->integral && span <= 65536.0) {
    const int64_t lo = (int64_t)r->min, ns = (int64_t)span;
    int64_t *vc = known ? NULL : malloc((size_t)ns * sizeof *vc);
    if (!known && (!vc || lf_integer_counts_f32(x, n, threads, lo, ns, vc) != 0)) {
      free(vc);
      return -1;
    }
    const int64_t *c = known ? known : vc;
    memset(counts, 0, (size_t)b->nb * sizeof *counts);
    for (int64_t k = 0; k < ns; k++)
      if (c[k]) counts[bin_of(b, (float)(lo + k))] += c[k];
    free(vc);
    return 0;
  }
  int64_t *priv = calloc((size_t)threads * 4 * (size_t)b->nb, sizeof *priv);
  if (!priv) return -1;
  float_counts(b, x, n, threads, counts, priv);
  free(priv);
  return 0;
}

/* the reference's threshold of data with range [mn, mx] (mn < mx): lumen's bin centre t mapped
   back to its bin index, then that index's linspace centre */
static lumen_status threshold_of(lumen_ctx *ctx, const float *x, int64_t n, int threads, const lf_value_range *r,
                                 const int64_t *known, float *thr) {
  otsu_bins b = {.nb = r->max <= 255.0f ? 256 : 4096, .mn = r->min, .mx = r->max};
  const double lo = r->min, hi = r->max, scale = (double)b.nb / (hi - lo);
  b.scale = (float)scale;
  b.use_scale = scale < 1e30;
  b.edges = malloc((size_t)(b.nb + 1) * sizeof *b.edges);
  int64_t *counts = malloc((size_t)b.nb * sizeof *counts);
  double *work = malloc((size_t)b.nb * 4 * sizeof *work);
  float *centre = malloc((size_t)b.nb * sizeof *centre);
  lumen_status s = LUMEN_OK;
  if (b.edges && counts && work && centre) {
    const double step = (hi - lo) / b.nb;
    for (int i = 0; i < b.nb; i++) b.edges[i] = (float)((double)i * step + lo);
    b.edges[b.nb] = r->max;
    if (histogram(&b, x, n, threads, r, known, counts) == 0) {
      const double t = lf_otsu_threshold(counts, b.edges, b.nb, work, centre);
      /* the compat layer's former Python: round((t - lo) / ((hi - lo) / bins) - 0.5), ties to even */
      double fi = nearbyint((t - lo) / ((hi - lo) / b.nb) - 0.5);
      const int i = fi < 0 ? 0 : fi > b.nb - 1 ? b.nb - 1 : (int)fi;
      *thr = i == b.nb - 1 ? r->max : (float)((double)i * ((hi - lo) / (b.nb - 1)) + lo);
    } else {
      s = LUMEN_ERR_OUT_OF_MEMORY;
    }
  } else {
    s = LUMEN_ERR_OUT_OF_MEMORY;
  }
  free(b.edges);
  free(counts);
  free(work);
  free(centre);
  return s == LUMEN_OK ? s : lumen_fail(ctx, s, "lumen_filter_otsu_linspace: out of host memory");
}

/* m = x > t as 0/1 bytes; SSE2: 16 compares packed to 16 bytes */
static void write_mask(const float *x, int64_t n, int threads, float t, uint8_t *m) {
#pragma omp parallel num_threads(threads)
  {
    LF_THREAD_OF_TEAM(int64_t, th, nt);
    int64_t i = n * th / nt;
    const int64_t hi = n * (th + 1) / nt;
#if defined(__SSE2__)
    const __m128 vt = _mm_set1_ps(t);
    const __m128i one = _mm_set1_epi8(1);
    for (; i + 16 <= hi; i += 16) {
      const __m128i a = _mm_castps_si128(_mm_cmpgt_ps(_mm_loadu_ps(x + i), vt));
      const __m128i b = _mm_castps_si128(_mm_cmpgt_ps(_mm_loadu_ps(x + i + 4), vt));
      const __m128i c = _mm_castps_si128(_mm_cmpgt_ps(_mm_loadu_ps(x + i + 8), vt));
      const __m128i d = _mm_castps_si128(_mm_cmpgt_ps(_mm_loadu_ps(x + i + 12), vt));
      /* -1 / 0 lanes pack (signed saturation) to -1 / 0 bytes */
      const __m128i p = _mm_packs_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d));
      _mm_storeu_si128((__m128i *)(void *)(m + i), _mm_and_si128(p, one));
    }
#endif
    for (; i < hi; i++) m[i] = x[i] > t;
  }
}

lumen_status lumen_filter_otsu_linspace(lumen_ctx *ctx, const lumen_image *in, lumen_image *mask, double *threshold) {
  static const char fn[] = "lumen_filter_otsu_linspace";
  LUMEN_REQUIRE(ctx, ctx != NULL, "%s: ctx is NULL", fn);
  LUMEN_REQUIRE(ctx, threshold != NULL, "%s: threshold is NULL", fn);
  lumen_status s = lf_values_check(ctx, fn, "in", in, LUMEN_DTYPE_FLOAT32, -1);
  if (s != LUMEN_OK) return s;
  const int64_t n = lumen_image_count(in);
  if (mask && (s = lf_values_check(ctx, fn, "mask", mask, LUMEN_DTYPE_UINT8, n)) != LUMEN_OK) return s;
  const float *x = lumen_image_const_data(in);
  const int threads = lf_values_threads(ctx, n);
  /* 12- and 16-bit images (integers in [-2^15, 2^16)): the range and the counts in one pass; any
     other data: the range pass, then the histogram's */
  enum { WINDOW_LO = -32768, WINDOW_SPAN = 98304 };
  int64_t *window = n >= 65536 ? malloc(WINDOW_SPAN * sizeof *window) : NULL;
  lf_value_range r;
  const int w = window ? lf_integer_window_f32(x, n, threads, WINDOW_LO, WINDOW_SPAN, window, &r) : 0;
  if (w <= 0) lf_value_range_f32(x, n, threads, &r);
  const int64_t *known = w > 0 ? window + ((int64_t)r.min - WINDOW_LO) : NULL;
  float thr = r.min; /* a constant image (or none finite): its value, the mask empty */
  if (r.min < r.max) s = threshold_of(ctx, x, n, threads, &r, known, &thr);
  free(window);
  if (s != LUMEN_OK) return s;
  *threshold = thr;
  if (mask) write_mask(x, n, threads, thr, lumen_image_data(mask));
  return LUMEN_OK;
}
