/* lumen_filter_finite_range and lumen_filter_scale_clamp: the data range and the linear map
 * clamp((x - offset) / divisor, 0, 1) * out_max of float32 host images in one threaded pass each.
 * The map is evaluated in float32 in the order of torch's ((x - o) / d).clamp(0, 1) * m (each
 * step rounded to float, a true division), so that it gives the reference's values bit for bit
 * where medical-image-std's DICOM windowing and bit-depth normalisation make four passes. */
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

lumen_status lumen_filter_scale_clamp(lumen_ctx *ctx, const lumen_image *in, double offset, double divisor,
                                      double out_max, lumen_image *out) {
  static const char fn[] = "lumen_filter_scale_clamp";
  LUMEN_REQUIRE(ctx, ctx != NULL, "%s: ctx is NULL", fn);
  lumen_status s = lf_values_check(ctx, fn, "in", in, LUMEN_DTYPE_FLOAT32, -1);
  if (s != LUMEN_OK) return s;
  const int64_t n = lumen_image_count(in);
  if ((s = lf_values_check(ctx, fn, "out", out, LUMEN_DTYPE_FLOAT32, n)) != LUMEN_OK) return s;
  const float o = (float)offset, d = (float)divisor, m = (float)out_max;
  LUMEN_REQUIRE(ctx, isfinite(o) && isfinite(d) && d != 0.0f && isfinite(m),
                "%s: offset %g, divisor %g, out_max %g: expected finite numbers and a non-zero divisor (in float)",
                fn, offset, divisor, out_max);
  const float *x = lumen_image_const_data(in);
  float *y = lumen_image_data(out);
  const int threads = lf_values_threads(ctx, n);
  (void)threads;
  /* v < 0 ? 0 : v and v > 1 ? 1 : v (NaN stays NaN, as torch's clamp): SSE's maxps / minps
     return their second operand when either is NaN, hence max(0, v), min(1, v) */
#pragma omp parallel num_threads(threads)
  {
#ifdef _OPENMP
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
    const int64_t t = 0, nt = 1;
#endif
    int64_t i = n * t / nt;
    const int64_t hi = n * (t + 1) / nt;
#if defined(__SSE2__)
    const __m128 vo = _mm_set1_ps(o), vd = _mm_set1_ps(d), vm = _mm_set1_ps(m);
    const __m128 zero = _mm_setzero_ps(), one = _mm_set1_ps(1.0f);
    for (; i + 4 <= hi; i += 4) {
      const __m128 v = _mm_div_ps(_mm_sub_ps(_mm_loadu_ps(x + i), vo), vd);
      _mm_storeu_ps(y + i, _mm_mul_ps(_mm_min_ps(one, _mm_max_ps(zero, v)), vm));
    }
#endif
    for (; i < hi; i++) {
      float v = (x[i] - o) / d;
      v = v < 0.0f ? 0.0f : v;
      v = v > 1.0f ? 1.0f : v;
      y[i] = v * m;
    }
  }
  return LUMEN_OK;
}
