/* The finite range of float32 data and the counts of integer values, in threaded passes
 * (declarations and contracts: cpu_values.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "filter/cpu_values.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

int lf_values_threads(const lumen_ctx *ctx, int64_t n) {
  int t = lumen_ctx_threads(ctx);
  return n >= 65536 && t > 1 ? t : 1;
}

lumen_status lf_values_check(lumen_ctx *ctx, const char *fn, const char *what, const lumen_image *img,
                             lumen_dtype dtype, int64_t count) {
  LUMEN_REQUIRE(ctx, img != NULL, "%s: %s is NULL", fn, what);
  LUMEN_REQUIRE(ctx, lumen_image_device(img).kind == LUMEN_DEVICE_CPU, "%s: %s is on a device, expected a host image",
                fn, what);
  LUMEN_REQUIRE(ctx, lumen_image_dtype(img) == dtype, "%s: %s is %s, expected %s", fn, what,
                lumen_dtype_name(lumen_image_dtype(img)), lumen_dtype_name(dtype));
  LUMEN_REQUIRE(ctx, lumen_image_count(img) > 0, "%s: %s is empty, expected at least one voxel", fn, what);
  LUMEN_REQUIRE(ctx, count < 0 || lumen_image_count(img) == count, "%s: %s has %lld voxels, expected %lld", fn, what,
                (long long)lumen_image_count(img), (long long)count);
  return LUMEN_OK;
}

/* one thread's part: x - x is 0 exactly for finite x; the integer test converts only
   magnitudes <= 2^24, where the conversion is exact and defined */
static void range_scalar(const float *x, int64_t lo, int64_t hi, lf_value_range *r) {
  for (int64_t i = lo; i < hi; i++) {
    const float v = x[i];
    if (!(v - v == 0.0f)) continue;
    r->min = v < r->min ? v : r->min;
    r->max = v > r->max ? v : r->max;
    r->finite++;
    if (!(fabsf(v) <= 16777216.0f && (float)(int32_t)v == v)) r->integral = 0;
  }
}

#if defined(__SSE2__)
/* 8 lanes at a time (SSE2, the x86-64 baseline). The sums of v - v stay 0 while every voxel is
   finite (NaN otherwise: the part is then redone by the scalar loop, which skips them); the
   ORs of v - (float)(int)v stay 0 while every voxel is an integer (a magnitude of 2^31 or more
   converts to INT_MIN and shows as not one, which only sends such data down the float paths);
   minps / maxps take the other operand when one is NaN, which no longer matters then. */
static void range_part(const float *x, int64_t lo, int64_t hi, lf_value_range *r) {
  r->min = INFINITY;
  r->max = -INFINITY;
  r->finite = 0;
  r->integral = 1;
  int64_t i = lo;
  if (hi - lo >= 8) {
    __m128 mn0 = _mm_loadu_ps(x + lo), mx0 = mn0, mn1 = mn0, mx1 = mn0;
    __m128 nf0 = _mm_setzero_ps(), nf1 = nf0, ni0 = nf0, ni1 = nf0;
    for (; i + 8 <= hi; i += 8) {
      const __m128 v = _mm_loadu_ps(x + i), w = _mm_loadu_ps(x + i + 4);
      mn0 = _mm_min_ps(v, mn0);
      mx0 = _mm_max_ps(v, mx0);
      mn1 = _mm_min_ps(w, mn1);
      mx1 = _mm_max_ps(w, mx1);
      nf0 = _mm_add_ps(nf0, _mm_sub_ps(v, v));
      nf1 = _mm_add_ps(nf1, _mm_sub_ps(w, w));
      ni0 = _mm_or_ps(ni0, _mm_sub_ps(v, _mm_cvtepi32_ps(_mm_cvttps_epi32(v))));
      ni1 = _mm_or_ps(ni1, _mm_sub_ps(w, _mm_cvtepi32_ps(_mm_cvttps_epi32(w))));
    }
    const __m128 nf = _mm_add_ps(nf0, nf1), zero = _mm_setzero_ps();
    if (_mm_movemask_ps(_mm_cmpeq_ps(nf, zero)) != 15) { /* a non-finite voxel: the exact loop */
      range_scalar(x, lo, hi, r);
      return;
    }
    float l[8], h[8];
    _mm_storeu_ps(l, mn0);
    _mm_storeu_ps(l + 4, mn1);
    _mm_storeu_ps(h, mx0);
    _mm_storeu_ps(h + 4, mx1);
    for (int j = 0; j < 8; j++) {
      r->min = l[j] < r->min ? l[j] : r->min;
      r->max = h[j] > r->max ? h[j] : r->max;
    }
    r->finite = i - lo;
    r->integral = _mm_movemask_epi8(_mm_cmpeq_epi32(_mm_castps_si128(_mm_or_ps(ni0, ni1)), _mm_setzero_si128())) ==
                  0xffff;
  }
  range_scalar(x, i, hi, r);
}
#else
static void range_part(const float *x, int64_t lo, int64_t hi, lf_value_range *r) {
  r->min = INFINITY;
  r->max = -INFINITY;
  r->finite = 0;
  r->integral = 1;
  range_scalar(x, lo, hi, r);
}
#endif

void lf_value_range_f32(const float *x, int64_t n, int threads, lf_value_range *r) {
  enum { MAXT = 256 };
  lf_value_range part[MAXT];
  const int T = threads < MAXT ? threads : MAXT;
  int used = 1;
#pragma omp parallel num_threads(T)
  {
    LF_THREAD_OF_TEAM(int, t, nt);
    range_part(x, n * t / nt, n * (t + 1) / nt, &part[t]);
    if (t == 0) used = nt;
  }
  *r = part[0];
  for (int t = 1; t < used; t++) {
    r->min = part[t].min < r->min ? part[t].min : r->min;
    r->max = part[t].max > r->max ? part[t].max : r->max;
    r->finite += part[t].finite;
    r->integral = r->integral && part[t].integral;
  }
  if (r->finite == 0) r->min = r->max = 0.0f;
  if (r->min < -16777216.0f || r->max > 16777216.0f) r->integral = 0; /* the lanes let 2^24..2^31 through */
}

/* the counter slot of v: v - base for the integers in [base, base + span), else span (a slot
   that is not reported) */
static inline int64_t slot_of(float v, int64_t base, int64_t span) {
  const int64_t k = fabsf(v) <= 16777216.0f ? (int64_t)v - base : span; /* NaN, Inf: span */
  return k >= 0 && k < span ? k : span;
}

/* x[lo, hi) counted into c (span int64, zeroed) through 4 interleaved uint32 copies (c4: 4 x
   (span + 1)), so that runs of one value (a flat background) do not wait on one counter; the
   copies are folded into c every 2^30 voxels, before a uint32 could overflow. The slots of 4
   voxels at a time are computed in SSE2 lanes (x is integer-valued: truncation is the value). */
/* check: also tell (*odd) whether a voxel was not counted: a NaN, an infinity, a value that is not
   an integer or lies outside [base, base + span) (a constant, so each caller's loop is its own) */
static inline void count_part_checked(const float *x, int64_t lo, int64_t hi, int64_t base, int64_t span, int64_t *c,
                                      uint32_t *c4, const int check, int *odd) {
  const int64_t S = span + 1;
  int64_t outside = 0;
#if defined(__SSE2__)
  __m128 frac = _mm_setzero_ps();
#endif
  for (int64_t s = lo; s < hi; s += (int64_t)1 << 30) {
    const int64_t e = hi - s > ((int64_t)1 << 30) ? s + ((int64_t)1 << 30) : hi;
    memset(c4, 0, (size_t)(4 * S) * sizeof *c4);
    int64_t i = s;
#if defined(__SSE2__)
    /* slot = clamp(int(v) - base, -> span when outside [0, span)) + the copy's offset; a NaN or a
       magnitude of 2^31 or more converts to INT_MIN, outside */
    const __m128i vb = _mm_set1_epi32((int32_t)base), vs = _mm_set1_epi32((int32_t)span);
    const __m128i off = _mm_setr_epi32(0, (int32_t)S, (int32_t)(2 * S), (int32_t)(3 * S));
    const __m128i m1 = _mm_set1_epi32(-1);
    for (; i + 4 <= e; i += 4) {
      const __m128 v = _mm_loadu_ps(x + i);
      const __m128i t = _mm_cvttps_epi32(v);
      if (check) frac = _mm_or_ps(frac, _mm_sub_ps(v, _mm_cvtepi32_ps(t))); /* NaN, Inf, fractions: not 0 */
      const __m128i k = _mm_sub_epi32(t, vb);
      const __m128i in = _mm_and_si128(_mm_cmpgt_epi32(k, m1), _mm_cmplt_epi32(k, vs));
      const __m128i slot = _mm_add_epi32(_mm_or_si128(_mm_and_si128(in, k), _mm_andnot_si128(in, vs)), off);
      int32_t q[4];
      _mm_storeu_si128((__m128i *)(void *)q, slot);
      c4[q[0]]++;
      c4[q[1]]++;
      c4[q[2]]++;
      c4[q[3]]++;
    }
#endif
    for (; i < e; i++) {
      c4[slot_of(x[i], base, span)]++;
      if (check && !(fabsf(x[i]) <= 16777216.0f && (float)(int32_t)x[i] == x[i])) outside++;
    }
    for (int j = 0; j < 4; j++) {
      for (int64_t k = 0; k < span; k++) c[k] += c4[j * S + k];
      outside += c4[j * S + span];
    }
  }
#if defined(__SSE2__)
  if (check && _mm_movemask_epi8(_mm_cmpeq_epi32(_mm_castps_si128(frac), _mm_setzero_si128())) != 0xffff) outside++;
#endif
  if (check) *odd = outside != 0;
}

static void count_part(const float *x, int64_t lo, int64_t hi, int64_t base, int64_t span, int64_t *c, uint32_t *c4) {
  count_part_checked(x, lo, hi, base, span, c, c4, 0, NULL);
}

static void count_part_check(const float *x, int64_t lo, int64_t hi, int64_t base, int64_t span, int64_t *c,
                             uint32_t *c4, int *odd) {
  count_part_checked(x, lo, hi, base, span, c, c4, 1, odd);
}

/* both counting passes: check 0 counts (lf_integer_counts_f32), check 1 also reports *odd */
static int counts_pass(const float *x, int64_t n, int threads, int64_t lo, int64_t span, int64_t *counts, int check,
                       int *odd);

int lf_integer_counts_f32(const float *x, int64_t n, int threads, int64_t lo, int64_t span, int64_t *counts) {
  return counts_pass(x, n, threads, lo, span, counts, 0, NULL);
}

int lf_integer_window_f32(const float *x, int64_t n, int threads, int64_t lo, int64_t span, int64_t *counts,
                          lf_value_range *r) {
  int odd = 0;
  if (counts_pass(x, n, threads, lo, span, counts, 1, &odd) != 0) return -1;
  if (odd) return 0;
  int64_t a = 0, b = span - 1;
  while (a < span && counts[a] == 0) a++;
  while (b > a && counts[b] == 0) b--;
  if (a == span) return 0; /* nothing counted (n voxels all odd cannot be: odd would be set) */
  r->min = (float)(lo + a);
  r->max = (float)(lo + b);
  r->finite = n;
  r->integral = 1;
  return 1;
}

static int counts_pass(const float *x, int64_t n, int threads, int64_t lo, int64_t span, int64_t *counts, int check,
                       int *odd) {
  enum { MAXT = 256 };
  const int T = threads < MAXT ? threads : MAXT;
  /* per thread: span int64 counts, then 4 (span + 1) uint32 copies */
  const size_t per = (size_t)span * sizeof(int64_t) + (size_t)(4 * (span + 1)) * sizeof(uint32_t);
  char *work = calloc((size_t)T, per);
  if (!work) return -1;
  int used = 1, odd_of[MAXT] = {0};
#pragma omp parallel num_threads(T)
  {
    LF_THREAD_OF_TEAM(int, t, nt);
    int64_t *c = (int64_t *)(void *)(work + (size_t)t * per);
    int o = 0;
    if (check) count_part_check(x, n * t / nt, n * (t + 1) / nt, lo, span, c, (uint32_t *)(void *)(c + span), &o);
    else count_part(x, n * t / nt, n * (t + 1) / nt, lo, span, c, (uint32_t *)(void *)(c + span));
    odd_of[t] = o;
    if (t == 0) used = nt;
  }
  if (check) {
    *odd = 0;
    for (int t = 0; t < used; t++) *odd |= odd_of[t];
  }
  memset(counts, 0, (size_t)span * sizeof *counts);
  for (int t = 0; t < used; t++) {
    const int64_t *c = (const int64_t *)(const void *)(work + (size_t)t * per);
    for (int64_t k = 0; k < span; k++) counts[k] += c[k];
  }
  free(work);
  return 0;
}
