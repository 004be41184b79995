/* pipe_rows_sum16 (conc_sum.h): one loop over a vector type, compiled for one lane, AVX2 and
   AVX-512. Every lane is a chain of additions in voxel order, so the width changes no bit. */
#include "pipeline/conc_sum.h"
#include <string.h>

typedef float sum_vf8 __attribute__((vector_size(32), aligned(4)));
typedef int32_t sum_vi8 __attribute__((vector_size(32), aligned(4)));
typedef double sum_vd8 __attribute__((vector_size(64), aligned(8)));
typedef int8_t sum_vc8 __attribute__((vector_size(8), aligned(1)));

/* Eight samples at p as doubles (out); with MASKED, the skipped ones (s[q] != 0) as +0 (acc + 0
   is acc: a lane starts at +0 and a sum of finite values is never -0). */
#define SUM_LOAD8(p, MASKED, s, out)                                                                            \
  do {                                                                                                         \
    sum_vf8 x_;                                                                                                \
    memcpy(&x_, (p), sizeof x_);                                                                               \
    if (MASKED) {                                                                                              \
      sum_vc8 c_;                                                                                              \
      memcpy(&c_, (s), sizeof c_);                                                                             \
      x_ = (sum_vf8)((sum_vi8)x_ & __builtin_convertvector(c_ == 0, sum_vi8));                                  \
    }                                                                                                          \
    (out) = __builtin_convertvector(x_, sum_vd8);                                                              \
  } while (0)

#define SUM_ROWS(NAME, TARGET)                                                                                 \
  TARGET static void NAME(const float *rows, int64_t rs, int64_t nrows, int64_t n, const uint8_t *skip,        \
                          double *acc) {                                                                       \
    const int64_t nv = n - n % 16;                                                                             \
    for (int64_t i = 0; i < nrows; ++i) {                                                                      \
      const float *r = rows + i * rs;                                                                          \
      double *a = acc + i * 16;                                                                                \
      sum_vd8 lo, hi;                                                                                          \
      memcpy(&lo, a, sizeof lo);                                                                               \
      memcpy(&hi, a + 8, sizeof hi);                                                                           \
      sum_vd8 x;                                                                                               \
      if (skip)                                                                                                \
        for (int64_t j = 0; j < nv; j += 16) {                                                                 \
          SUM_LOAD8(r + j, 1, skip + j, x);                                                                    \
          lo += x;                                                                                             \
          SUM_LOAD8(r + j + 8, 1, skip + j + 8, x);                                                            \
          hi += x;                                                                                             \
        }                                                                                                      \
      else                                                                                                     \
        for (int64_t j = 0; j < nv; j += 16) {                                                                 \
          SUM_LOAD8(r + j, 0, r, x);                                                                           \
          lo += x;                                                                                             \
          SUM_LOAD8(r + j + 8, 0, r, x);                                                                       \
          hi += x;                                                                                             \
        }                                                                                                      \
      memcpy(a, &lo, sizeof lo);                                                                               \
      memcpy(a + 8, &hi, sizeof hi);                                                                           \
      for (int64_t j = nv; j < n; ++j)                                                                         \
        if (!skip || !skip[j]) a[j % 16] += r[j];                                                              \
    }                                                                                                          \
  }

SUM_ROWS(sum_rows_plain, )
#if defined(__GNUC__) && defined(__x86_64__)
SUM_ROWS(sum_rows_avx2, __attribute__((target("avx2"))))
SUM_ROWS(sum_rows_avx512, __attribute__((target("avx512f"))))
#endif

void pipe_rows_sum16(int level, const float *rows, int64_t rs, int64_t nrows, int64_t n, const uint8_t *skip,
                     double *acc) {
#if defined(__GNUC__) && defined(__x86_64__)
  if (level >= 2) { sum_rows_avx512(rows, rs, nrows, n, skip, acc); return; }
  if (level == 1) { sum_rows_avx2(rows, rs, nrows, n, skip, acc); return; }
#endif
  (void)level;
  sum_rows_plain(rows, rs, nrows, n, skip, acc);
}
