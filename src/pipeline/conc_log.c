/* Vector logarithm of stage A (conc_log.h). glibc's libmvec exports the x86-64 vector variants of
   log under their vector-ABI names (_ZGVdN4v_log: AVX2, 4 doubles; _ZGVeN8v_log: AVX-512, 8);
   CMake defines LUMEN_HAVE_LIBMVEC when it links. A tail shorter than a vector is padded, so that
   every value goes through the same routine whatever its position. */
#include "pipeline/conc_log.h"
#include "core/internal.h"
#include <math.h>
#include <string.h>

const char *pipe_conc_log_name(int level) {
  return level >= 2 ? "libmvec AVX-512 vector log" : level == 1 ? "libmvec AVX2 vector log" : "libm scalar log";
}

static void log_scalar(double *w, int64_t n) {
  for (int64_t k = 0; k < n; ++k) w[k] = w[k] > 0 && w[k] < 1 ? log(w[k]) : NAN;
}

#if defined(LUMEN_HAVE_LIBMVEC) && defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

__m256d _ZGVdN4v_log(__m256d x);
__m512d _ZGVeN8v_log(__m512d x);

__attribute__((target("avx2"))) static __m256d log4(__m256d v) {
  const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0), nan = _mm256_set1_pd(NAN);
  __m256d in = _mm256_and_pd(_mm256_cmp_pd(v, zero, _CMP_GT_OQ), _mm256_cmp_pd(v, one, _CMP_LT_OQ));
  __m256d safe = _mm256_blendv_pd(_mm256_set1_pd(0.5), v, in); /* no log of NaN, 0 or negatives */
  return _mm256_blendv_pd(nan, _ZGVdN4v_log(safe), in);
}

__attribute__((target("avx2"))) static void log_avx2(double *w, int64_t n) {
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) _mm256_storeu_pd(w + k, log4(_mm256_loadu_pd(w + k)));
  if (k < n) {
    double t[4] = {0.5, 0.5, 0.5, 0.5};
    memcpy(t, w + k, sizeof(double) * (size_t)(n - k));
    _mm256_storeu_pd(t, log4(_mm256_loadu_pd(t)));
    memcpy(w + k, t, sizeof(double) * (size_t)(n - k));
  }
}

__attribute__((target("avx512f"))) static __m512d log8(__m512d v) {
  __mmask8 in = _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_GT_OQ) &
                _mm512_cmp_pd_mask(v, _mm512_set1_pd(1.0), _CMP_LT_OQ);
  __m512d safe = _mm512_mask_blend_pd(in, _mm512_set1_pd(0.5), v);
  return _mm512_mask_blend_pd(in, _mm512_set1_pd(NAN), _ZGVeN8v_log(safe));
}

__attribute__((target("avx512f"))) static void log_avx512(double *w, int64_t n) {
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) _mm512_storeu_pd(w + k, log8(_mm512_loadu_pd(w + k)));
  if (k < n) {
    double t[8] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
    memcpy(t, w + k, sizeof(double) * (size_t)(n - k));
    _mm512_storeu_pd(t, log8(_mm512_loadu_pd(t)));
    memcpy(w + k, t, sizeof(double) * (size_t)(n - k));
  }
}

int pipe_conc_log_level(lumen_cpu_simd limit) { return lumen_cpu_vector_level(limit); }

void pipe_conc_log(double *w, int64_t n, int level) {
  if (level >= 2) log_avx512(w, n);
  else if (level == 1) log_avx2(w, n);
  else log_scalar(w, n);
}
#else
int pipe_conc_log_level(lumen_cpu_simd limit) {
  (void)limit;
  return 0;
}

void pipe_conc_log(double *w, int64_t n, int level) {
  (void)level;
  log_scalar(w, n);
}
#endif
