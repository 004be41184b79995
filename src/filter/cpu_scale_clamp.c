/* lumen_filter_finite_range and lumen_filter_scale_clamp: the data range and the linear map
 * clamp((x - offset) * scale, 0, 1) * out_max of float32 host images in one threaded pass each;
 * lumen_filter_normalize_bits_detect: the map with the bit depth medical-image-std infers from
 * the largest voxel, found in the map's own pass (the depth guessed from a sample beforehand).
 * The map is lumen_segment_window's and lumen_segment_normalize_bits' point operation (float64
 * arithmetic, rounded to float once), vectorised: the same values without their per-call image
 * allocation, two float64 SSE2 lanes (four with AVX2) where their loop is scalar. */
#include <math.h>
#include "filter/cpu_values.h"
#include "lumen/filter.h"
#if defined(__GNUC__) && defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

lumen_status lumen_filter_finite_range(lumen_ctx *ctx, const lumen_image *in, double *min, double *max,
                                       int64_t *finite, int *integral) {
  static const char fn[] = "lumen_filter_finite_range";
  LUMEN_REQUIRE(ctx, ctx != NULL, "%s: ctx is NULL", fn);
  LUMEN_REQUIRE(ctx, min != NULL && max != NULL, "%s: min and max must not be NULL", fn);
  lumen_status s = lf_values_check(ctx, fn, "in", in, LUMEN_DTYPE_FLOAT32, -1);
  if (s != LUMEN_OK) return s;
  const int64_t n = lumen_image_count(in);
  lf_value_range r;
  lf_value_range_f32(lumen_image_const_data(in), n, lf_values_threads(ctx, n), &r);
  *min = r.min;
  *max = r.max;
  if (finite) *finite = r.finite;
  if (integral) *integral = r.integral;
  return LUMEN_OK;
}

/* The largest voxel as numpy's max sees it: NaN when one is NaN, +-Inf counted */
typedef struct peak {
  float max;
  int nan;
} peak;

/* y[i] = (float)(clamp((x[i] - offset) * scale, 0, 1) * out_max) for i in [i, hi), and x's peak
   over the same voxels into *pk (started at -Inf, no NaN). v < 0 ? 0 : v and v > 1 ? 1 : v (NaN
   stays NaN): SSE's maxpd / minpd return their second operand when either is NaN, hence
   max(0, v), min(1, v); maxps(v, m) keeps m when v is NaN, which the unordered compare notes. */
static void map_tail(const float *x, float *y, int64_t i, int64_t hi, double offset, double scale, double out_max,
                     peak *pk) {
  for (; i < hi; i++) {
    const float f = x[i];
    if (f != f) pk->nan = 1;
    pk->max = f > pk->max ? f : pk->max;
    double v = ((double)f - offset) * scale;
    v = v < 0 ? 0 : v;
    v = v > 1 ? 1 : v;
    y[i] = (float)(v * out_max);
  }
}

#if defined(__SSE2__)
static void map_part_sse2(const float *x, float *y, int64_t i, int64_t hi, double offset, double scale,
                          double out_max, peak *pk) {
  const __m128d vo = _mm_set1_pd(offset), vs = _mm_set1_pd(scale), vm = _mm_set1_pd(out_max);
  const __m128d zero = _mm_setzero_pd(), one = _mm_set1_pd(1.0);
  __m128 mx = _mm_set1_ps(-INFINITY), nan = _mm_setzero_ps();
  for (; i + 4 <= hi; i += 4) {
    const __m128 v = _mm_loadu_ps(x + i);
    mx = _mm_max_ps(v, mx);
    nan = _mm_or_ps(nan, _mm_cmpunord_ps(v, v));
    __m128d a = _mm_mul_pd(_mm_sub_pd(_mm_cvtps_pd(v), vo), vs);
    __m128d b = _mm_mul_pd(_mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(v, v)), vo), vs);
    a = _mm_mul_pd(_mm_min_pd(one, _mm_max_pd(zero, a)), vm);
    b = _mm_mul_pd(_mm_min_pd(one, _mm_max_pd(zero, b)), vm);
    _mm_storeu_ps(y + i, _mm_movelh_ps(_mm_cvtpd_ps(a), _mm_cvtpd_ps(b)));
  }
  float m[4];
  _mm_storeu_ps(m, mx);
  for (int j = 0; j < 4; j++) pk->max = m[j] > pk->max ? m[j] : pk->max;
  pk->nan |= _mm_movemask_ps(nan) != 0;
  map_tail(x, y, i, hi, offset, scale, out_max, pk);
}
#endif

#if defined(__GNUC__) && defined(__x86_64__) && defined(__SSE2__)
#define SC_AVX2 1
/* The same with 8 voxels a step: four float64 lanes (AVX2; no FMA, the same roundings) */
__attribute__((target("avx2"))) static void map_part_avx2(const float *x, float *y, int64_t i, int64_t hi,
                                                          double offset, double scale, double out_max, peak *pk) {
  const __m256d vo = _mm256_set1_pd(offset), vs = _mm256_set1_pd(scale), vm = _mm256_set1_pd(out_max);
  const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
  __m256 mx = _mm256_set1_ps(-INFINITY), nan = _mm256_setzero_ps();
  for (; i + 8 <= hi; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    mx = _mm256_max_ps(v, mx);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    __m256d a = _mm256_mul_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), vo), vs);
    __m256d b = _mm256_mul_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), vo), vs);
    a = _mm256_mul_pd(_mm256_min_pd(one, _mm256_max_pd(zero, a)), vm);
    b = _mm256_mul_pd(_mm256_min_pd(one, _mm256_max_pd(zero, b)), vm);
    _mm256_storeu_ps(y + i, _mm256_set_m128(_mm256_cvtpd_ps(b), _mm256_cvtpd_ps(a)));
  }
  float m[8];
  _mm256_storeu_ps(m, mx);
  for (int j = 0; j < 8; j++) pk->max = m[j] > pk->max ? m[j] : pk->max;
  pk->nan |= _mm256_movemask_ps(nan) != 0;
  map_tail(x, y, i, hi, offset, scale, out_max, pk);
}
#else
#define SC_AVX2 0
#endif

/* The map of x into y over n voxels in threads, x's peak into *pk */
static void map_threaded(const float *x, float *y, int64_t n, int threads, double offset, double scale,
                         double out_max, peak *pk) {
#if SC_AVX2
  __builtin_cpu_init();
  const int avx2 = __builtin_cpu_supports("avx2");
#endif
  pk->max = -INFINITY;
  pk->nan = 0;
  (void)threads;
#pragma omp parallel num_threads(threads)
  {
    LF_THREAD_OF_TEAM(int64_t, t, nt);
    const int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
    peak p = {-INFINITY, 0};
#if SC_AVX2
    if (avx2)
      map_part_avx2(x, y, lo, hi, offset, scale, out_max, &p);
    else
#endif
#if defined(__SSE2__)
      map_part_sse2(x, y, lo, hi, offset, scale, out_max, &p);
#else
      map_tail(x, y, lo, hi, offset, scale, out_max, &p);
#endif
#pragma omp critical(lumen_scale_clamp_peak)
    {
      pk->max = p.max > pk->max ? p.max : pk->max;
      pk->nan |= p.nan;
    }
  }
}

lumen_status lumen_filter_scale_clamp(lumen_ctx *ctx, const lumen_image *in, double offset, double scale,
                                      double out_max, lumen_image *out) {
  static const char fn[] = "lumen_filter_scale_clamp";
  LUMEN_REQUIRE(ctx, ctx != NULL, "%s: ctx is NULL", fn);
  lumen_status s = lf_values_check(ctx, fn, "in", in, LUMEN_DTYPE_FLOAT32, -1);
  if (s != LUMEN_OK) return s;
  const int64_t n = lumen_image_count(in);
  if ((s = lf_values_check(ctx, fn, "out", out, LUMEN_DTYPE_FLOAT32, n)) != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, isfinite(offset) && isfinite(scale) && isfinite(out_max),
                "%s: offset %g, scale %g, out_max %g: expected finite numbers", fn, offset, scale, out_max);
  peak pk;
  map_threaded(lumen_image_const_data(in), lumen_image_data(out), n, lf_values_threads(ctx, n), offset, scale, out_max,
               &pk);
  return LUMEN_OK;
}

/* medical-image-std's bit depth for a peak: NaN (no comparison holds) gives 16 */
static int bits_of_peak(float p) { return p <= 255.0f ? 8 : p <= 4095.0f ? 12 : 16; }

lumen_status lumen_filter_normalize_bits_detect(lumen_ctx *ctx, const lumen_image *in, double out_max,
                                                lumen_image *out, int *bits) {
  static const char fn[] = "lumen_filter_normalize_bits_detect";
  LUMEN_REQUIRE(ctx, ctx != NULL, "%s: ctx is NULL", fn);
  lumen_status s = lf_values_check(ctx, fn, "in", in, LUMEN_DTYPE_FLOAT32, -1);
  if (s != LUMEN_OK) return s;
  const int64_t n = lumen_image_count(in);
  if ((s = lf_values_check(ctx, fn, "out", out, LUMEN_DTYPE_FLOAT32, n)) != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, isfinite(out_max), "%s: out_max %g: expected a finite number", fn, out_max);
  const float *x = lumen_image_const_data(in);
  float *y = lumen_image_data(out);
  const int threads = lf_values_threads(ctx, n);
  /* the guess: the peak of up to 1024 evenly spaced voxels (a few microseconds); in place, the
     map would overwrite what a wrong guess needs again, so there the peak comes first */
  int guess = 8;
  if ((const float *)y != x) {
    peak sp = {-INFINITY, 0};
    const int64_t step = n > 1024 ? n / 1024 : 1;
    for (int64_t i = 0; i < n; i += step) {
      if (x[i] != x[i]) sp.nan = 1;
      sp.max = x[i] > sp.max ? x[i] : sp.max;
    }
    guess = sp.nan ? 16 : bits_of_peak(sp.max);
  } else {
    lf_value_range r;
    lf_value_range_f32(x, n, threads, &r);
    /* finite range first; a NaN or +Inf (finite < n) then decides as numpy's max would */
    peak p = {r.finite ? r.max : -INFINITY, 0};
    if (r.finite < n)
      for (int64_t i = 0; i < n; i++) {
        if (x[i] != x[i]) p.nan = 1;
        p.max = x[i] > p.max ? x[i] : p.max;
      }
    guess = p.nan ? 16 : bits_of_peak(p.max);
  }
  peak pk;
  map_threaded(x, y, n, threads, 0.0, 1.0 / (ldexp(1.0, guess) - 1.0), out_max, &pk);
  const int b = pk.nan ? 16 : bits_of_peak(pk.max);
  if (b != guess) /* a wrong guess (not in place): the map again with the data's bit depth */
    map_threaded(x, y, n, threads, 0.0, 1.0 / (ldexp(1.0, b) - 1.0), out_max, &pk);
  if (bits) *bits = b;
  return LUMEN_OK;
}
