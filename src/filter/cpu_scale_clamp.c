/* lumen_filter_finite_range and lumen_filter_scale_clamp: the data range and the linear map
 * clamp((x - offset) * scale, 0, 1) * out_max of float32 host images in one threaded pass each.
 * The map is lumen_segment_window's and lumen_segment_normalize_bits' point operation (float64
 * arithmetic, rounded to float once), vectorised: the same values without their per-call image
 * allocation, and two float64 SSE2 lanes where their loop is scalar. */
#include <math.h>
#include "filter/cpu_values.h"
#include "lumen/filter.h"
#if defined(__SSE2__)
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
  const float *x = lumen_image_const_data(in);
  float *y = lumen_image_data(out);
  const int threads = lf_values_threads(ctx, n);
  (void)threads;
  /* v < 0 ? 0 : v and v > 1 ? 1 : v (NaN stays NaN): SSE's maxpd / minpd return their second
     operand when either is NaN, hence max(0, v), min(1, v) */
#pragma omp parallel num_threads(threads)
  {
    LF_THREAD_OF_TEAM(int64_t, t, nt);
    int64_t i = n * t / nt;
    const int64_t hi = n * (t + 1) / nt;
#if defined(__SSE2__)
    const __m128d vo = _mm_set1_pd(offset), vs = _mm_set1_pd(scale), vm = _mm_set1_pd(out_max);
    const __m128d zero = _mm_setzero_pd(), one = _mm_set1_pd(1.0);
    for (; i + 4 <= hi; i += 4) {
      const __m128 v = _mm_loadu_ps(x + i);
      __m128d a = _mm_mul_pd(_mm_sub_pd(_mm_cvtps_pd(v), vo), vs);
      __m128d b = _mm_mul_pd(_mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(v, v)), vo), vs);
      a = _mm_mul_pd(_mm_min_pd(one, _mm_max_pd(zero, a)), vm);
      b = _mm_mul_pd(_mm_min_pd(one, _mm_max_pd(zero, b)), vm);
      _mm_storeu_ps(y + i, _mm_movelh_ps(_mm_cvtpd_ps(a), _mm_cvtpd_ps(b)));
    }
#endif
    for (; i < hi; i++) {
      double v = ((double)x[i] - offset) * scale;
      v = v < 0 ? 0 : v;
      v = v > 1 ? 1 : v;
      y[i] = (float)(v * out_max);
    }
  }
  return LUMEN_OK;
}
