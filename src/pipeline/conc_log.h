/* The logarithm of stage A (signal -> concentration): w[k] = log(w[k]) for 0 < w[k] < 1, NaN for
   every other value (NaN included), over whole arrays. Level 0 is libm's scalar log, bit for bit
   what lumen_spgr_signal_to_conc computes; levels 1 (AVX2, 4 lanes) and 2 (AVX-512, 8 lanes) call
   glibc's vector log (libmvec), which differs from the scalar log in the last bit of about one
   double in four (at most 4 ulp by glibc's tables): the float concentrations stored by the stage
   differ from the scalar path's by at most one float ulp, and only where a value sits on a float
   rounding boundary. Each value depends only on its input, never on its position in the array. */
#ifndef LUMEN_PIPELINE_CONC_LOG_H
#define LUMEN_PIPELINE_CONC_LOG_H
#include <math.h>
#include <stdint.h>
#include "lumen/context.h"

/* The level this CPU and this build allow under the context's limit (lumen_ctx_cpu_simd):
   OFF gives 0, AVX2 at most 1. */
int pipe_conc_log_level(lumen_cpu_simd limit);

void pipe_conc_log(double *w, int64_t n, int level);

#if defined(LUMEN_HAVE_LIBMVEC) && defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define PIPE_CONC_LOG_VEC 1

__m256d _ZGVdN4v_log(__m256d x);
__m512d _ZGVeN8v_log(__m512d x);

/* The log of 4 lanes (level 1) and of 8 lanes (level 2) by pipe_conc_log's rule, for kernels
   that keep their values in registers. */
__attribute__((target("avx2"))) static inline __m256d pipe_conc_log4(__m256d v) {
  const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0), nan = _mm256_set1_pd(NAN);
  __m256d in = _mm256_and_pd(_mm256_cmp_pd(v, zero, _CMP_GT_OQ), _mm256_cmp_pd(v, one, _CMP_LT_OQ));
  __m256d safe = _mm256_blendv_pd(_mm256_set1_pd(0.5), v, in); /* no log of NaN, 0 or negatives */
  return _mm256_blendv_pd(nan, _ZGVdN4v_log(safe), in);
}

__attribute__((target("avx512f"))) static inline __m512d pipe_conc_log8(__m512d v) {
  __mmask8 in = _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_GT_OQ) &
                _mm512_cmp_pd_mask(v, _mm512_set1_pd(1.0), _CMP_LT_OQ);
  __m512d safe = _mm512_mask_blend_pd(in, _mm512_set1_pd(0.5), v);
  return _mm512_mask_blend_pd(in, _mm512_set1_pd(NAN), _ZGVeN8v_log(safe));
}
#else
#define PIPE_CONC_LOG_VEC 0
#endif

/* What the run log records: "libm scalar log", "libmvec AVX2 vector log", "libmvec AVX-512 vector log". */
const char *pipe_conc_log_name(int level);

#endif
