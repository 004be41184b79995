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

#if PIPE_CONC_LOG_VEC
__attribute__((target("avx2"))) static void log_avx2(double *w, int64_t n) {
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) _mm256_storeu_pd(w + k, pipe_conc_log4(_mm256_loadu_pd(w + k)));
  if (k < n) {
    double t[4] = {0.5, 0.5, 0.5, 0.5};
    memcpy(t, w + k, sizeof(double) * (size_t)(n - k));
    _mm256_storeu_pd(t, pipe_conc_log4(_mm256_loadu_pd(t)));
    memcpy(w + k, t, sizeof(double) * (size_t)(n - k));
  }
}

__attribute__((target("avx512f"))) static void log_avx512(double *w, int64_t n) {
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) _mm512_storeu_pd(w + k, pipe_conc_log8(_mm512_loadu_pd(w + k)));
  if (k < n) {
    double t[8] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
    memcpy(t, w + k, sizeof(double) * (size_t)(n - k));
    _mm512_storeu_pd(t, pipe_conc_log8(_mm512_loadu_pd(t)));
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
