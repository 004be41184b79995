/* lumen_filter_butterworth_kernel: medical-image-std's Butterworth band-pass transfer function
 * (Filters.butterworth_kernel) written into a float32 host image in one threaded pass. The
 * original's float32 torch steps in the same order (squares, sum, sqrt, D * D, 8 W D, the
 * 1e-6 in place of a zero cutoff, quotient, reciprocal), so the values are the same but for
 * r^(2n), taken here as float64 products of r^2 rounded once (torch: pow in float32). SSE2
 * intrinsics (the x86-64 baseline), AVX2 where the CPU has it (no FMA: every step rounds as the
 * original's), a scalar loop elsewhere. */
#include <math.h>
#include <stdlib.h>
#include "filter/cpu_values.h"
#include "lumen/filter.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && defined(__SSE2__)
#define BW_X86 1
#include <immintrin.h>
#else
#define BW_X86 0
#endif

/* p = x^n in float64 (x = r^2 exact there), rounded to float32 once: nearer torch's pow than
   float32 products, whose roundings add up with n */
static inline double bw_pow(double x, int n) {
  double p = x;
  for (int j = 1; j < n; j++) p *= x;
  return p;
}

/* One voxel, the vector loops' tails: sqrtf, the products in float64, 1 / (1 + p) in float32 */
static inline float bw_value(float d2, float c0, float k8, int n) {
  const float d = sqrtf(d2);
  float cut = k8 * d;
  cut = cut == 0.0f ? 1e-6f : cut;
  const double r = (double)((d * d - c0) / cut);
  return 1.0f / (1.0f + (float)bw_pow(r * r, n));
}

#if BW_X86
/* 4 voxels a step (SSE2, the x86-64 baseline); sqrt and division are IEEE-rounded in every lane */
static void bw_rows_sse2(float *y, const float *du2, const float *dv2, int64_t v0, int64_t v1, int64_t width,
                         float c0, float k8, int n) {
  const __m128 vc0 = _mm_set1_ps(c0), vk8 = _mm_set1_ps(k8), zero = _mm_setzero_ps(), tiny = _mm_set1_ps(1e-6f),
               one = _mm_set1_ps(1.0f);
  for (int64_t v = v0; v < v1; v++) {
    float *row = y + v * width;
    const __m128 vdv = _mm_set1_ps(dv2[v]);
    int64_t u = 0;
    for (; u + 4 <= width; u += 4) {
      const __m128 d = _mm_sqrt_ps(_mm_add_ps(vdv, _mm_loadu_ps(du2 + u)));
      __m128 cut = _mm_mul_ps(vk8, d);
      const __m128 z = _mm_cmpeq_ps(cut, zero);
      cut = _mm_or_ps(_mm_andnot_ps(z, cut), _mm_and_ps(z, tiny));
      const __m128 r = _mm_div_ps(_mm_sub_ps(_mm_mul_ps(d, d), vc0), cut);
      __m128d a = _mm_cvtps_pd(r), b = _mm_cvtps_pd(_mm_movehl_ps(r, r));
      a = _mm_mul_pd(a, a);
      b = _mm_mul_pd(b, b);
      __m128d pa = a, pb = b;
      for (int j = 1; j < n; j++) pa = _mm_mul_pd(pa, a), pb = _mm_mul_pd(pb, b);
      const __m128 p = _mm_movelh_ps(_mm_cvtpd_ps(pa), _mm_cvtpd_ps(pb));
      _mm_storeu_ps(row + u, _mm_div_ps(one, _mm_add_ps(one, p)));
    }
    for (; u < width; u++) row[u] = bw_value(dv2[v] + du2[u], c0, k8, n);
  }
}

/* The same with 8 voxels a step (AVX2; no FMA: every step rounded as the original's) */
__attribute__((target("avx2"))) static void bw_rows_avx2(float *y, const float *du2, const float *dv2, int64_t v0,
                                                         int64_t v1, int64_t width, float c0, float k8, int n) {
  const __m256 vc0 = _mm256_set1_ps(c0), vk8 = _mm256_set1_ps(k8), zero = _mm256_setzero_ps(),
               tiny = _mm256_set1_ps(1e-6f), one = _mm256_set1_ps(1.0f);
  for (int64_t v = v0; v < v1; v++) {
    float *row = y + v * width;
    const __m256 vdv = _mm256_set1_ps(dv2[v]);
    int64_t u = 0;
    for (; u + 8 <= width; u += 8) {
      const __m256 d = _mm256_sqrt_ps(_mm256_add_ps(vdv, _mm256_loadu_ps(du2 + u)));
      __m256 cut = _mm256_mul_ps(vk8, d);
      const __m256 z = _mm256_cmp_ps(cut, zero, _CMP_EQ_OQ);
      cut = _mm256_blendv_ps(cut, tiny, z);
      const __m256 r = _mm256_div_ps(_mm256_sub_ps(_mm256_mul_ps(d, d), vc0), cut);
      __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(r)), b = _mm256_cvtps_pd(_mm256_extractf128_ps(r, 1));
      a = _mm256_mul_pd(a, a);
      b = _mm256_mul_pd(b, b);
      __m256d pa = a, pb = b;
      for (int j = 1; j < n; j++) pa = _mm256_mul_pd(pa, a), pb = _mm256_mul_pd(pb, b);
      const __m256 p = _mm256_set_m128(_mm256_cvtpd_ps(pb), _mm256_cvtpd_ps(pa));
      _mm256_storeu_ps(row + u, _mm256_div_ps(one, _mm256_add_ps(one, p)));
    }
    for (; u < width; u++) row[u] = bw_value(dv2[v] + du2[u], c0, k8, n);
  }
}
#else
/* Rows v0 .. v1 - 1 of y: y[v][u] = bw_value(dv2[v] + du2[u]) */
static void bw_rows_scalar(float *y, const float *du2, const float *dv2, int64_t v0, int64_t v1, int64_t width,
                           float c0, float k8, int n) {
  for (int64_t v = v0; v < v1; v++)
    for (int64_t u = 0; u < width; u++) y[v * width + u] = bw_value(dv2[v] + du2[u], c0, k8, n);
}
#endif

/* (i - size / 2)^2 in float32 for i < size: the original's (arange - size / 2) ** 2 */
static void centred_squares(float *s, int64_t size) {
  const float c = (float)((double)size / 2.0);
  for (int64_t i = 0; i < size; i++) {
    const float d = (float)i - c;
    s[i] = d * d;
  }
}

lumen_status lumen_filter_butterworth_kernel(lumen_ctx *ctx, int64_t height, int64_t width, double d0, double w,
                                             int order, lumen_image *out) {
  static const char fn[] = "lumen_filter_butterworth_kernel";
  LUMEN_REQUIRE(ctx, ctx != NULL, "%s: ctx is NULL", fn);
  /* 2^24: every index and its offset from the centre exact in float32, as in the original */
  LUMEN_REQUIRE(ctx, height >= 1 && width >= 1 && height <= (1 << 24) && width <= (1 << 24),
                "%s: height %lld, width %lld: expected 1 .. 2^24 each", fn, (long long)height, (long long)width);
  LUMEN_REQUIRE(ctx, order >= 1 && order <= 64, "%s: order %d: expected 1 .. 64", fn, order);
  LUMEN_REQUIRE(ctx, isfinite(d0) && isfinite(w) && fabs(d0) <= 1e18 && fabs(w) <= 1e18,
                "%s: d0 %g, w %g: expected finite numbers of magnitude <= 1e18", fn, d0, w);
  lumen_status s = lf_values_check(ctx, fn, "out", out, LUMEN_DTYPE_FLOAT32, -1);
  if (s != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, lumen_image_count(out) / height == width && lumen_image_count(out) % height == 0,
                "%s: out has %lld voxels, expected height x width = %lld x %lld", fn,
                (long long)lumen_image_count(out), (long long)height, (long long)width);
  float *sq = malloc((size_t)(height + width) * sizeof *sq);
  if (!sq) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  float *du2 = sq, *dv2 = sq + width;
  centred_squares(du2, width);
  centred_squares(dv2, height);
  const float c0 = (float)(d0 * d0), k8 = (float)(8.0 * w);
  float *y = lumen_image_data(out);
  const int threads = lf_values_threads(ctx, height * width);
  (void)threads;
#if BW_X86
  __builtin_cpu_init();
  const int avx2 = __builtin_cpu_supports("avx2");
#endif
#pragma omp parallel num_threads(threads)
  {
    LF_THREAD_OF_TEAM(int64_t, t, nt);
    const int64_t v0 = height * t / nt, v1 = height * (t + 1) / nt;
#if BW_X86
    if (avx2)
      bw_rows_avx2(y, du2, dv2, v0, v1, width, c0, k8, order);
    else
      bw_rows_sse2(y, du2, dv2, v0, v1, width, c0, k8, order);
#else
    bw_rows_scalar(y, du2, dv2, v0, v1, width, c0, k8, order);
#endif
  }
  free(sq);
  return LUMEN_OK;
}
