/* pipe_rows_sum16 (conc_sum.h): one loop, compiled for the baseline (SSE2 pairs), AVX2 and AVX-512 with
   the 16 lanes held in native double vectors (8 pairs, 4 quads, 2 octets). Every lane is a chain
   of additions in voxel order, so the width changes no bit. */
#include "pipeline/conc_sum.h"

/* Loads and stores go through these types (any alignment, aliasing their elements), not memcpy,
   and each accumulator is one native register: under target("avx2") GCC 12 copied a 32-byte
   memcpy through the stack in 16-byte halves and kept 64-byte vectors in memory. */
#define SUM_TYPES(H)                                                                                  \
  typedef float sum_vf##H __attribute__((vector_size(4 * H), aligned(4), may_alias));                 \
  typedef int32_t sum_vi##H __attribute__((vector_size(4 * H), aligned(4)));                          \
  typedef double sum_vd##H __attribute__((vector_size(8 * H), aligned(8), may_alias));                \
  typedef int8_t sum_vc##H __attribute__((vector_size(H), aligned(1), may_alias));
SUM_TYPES(2)
SUM_TYPES(4)
SUM_TYPES(8)

/* H samples at p as doubles; with MASKED, the skipped ones (s[q] != 0) as +0 (acc + 0 is acc: a
   lane starts at +0 and a sum of finite values is never -0). */
#define SUM_LOAD(H, p, MASKED, s)                                                                     \
  __builtin_convertvector(                                                                           \
      (MASKED) ? (sum_vf##H)((sum_vi##H)*(const sum_vf##H *)(p) &                                     \
                             __builtin_convertvector(*(const sum_vc##H *)(s) == 0, sum_vi##H))        \
               : *(const sum_vf##H *)(p),                                                             \
      sum_vd##H)

/* the rows, with H doubles per accumulator (PIPE_SUM_LANES / H accumulators) */
#define SUM_ROWS(NAME, TARGET, H)                                                                     \
  TARGET static void NAME(const float *rows, int64_t rs, int64_t nrows, int64_t n, const uint8_t *skip,\
                          double *acc) {                                                              \
    enum { L = PIPE_SUM_LANES, NA = L / H };                                                          \
    const int64_t nv = n - n % L;                                                                     \
    for (int64_t i = 0; i < nrows; ++i) {                                                             \
      const float *r = rows + i * rs;                                                                 \
      double *a = acc + i * L;                                                                        \
      sum_vd##H v[NA];                                                                                \
      for (int q = 0; q < NA; ++q) v[q] = *(const sum_vd##H *)(a + q * H);                            \
      if (skip)                                                                                       \
        for (int64_t j = 0; j < nv; j += L)                                                           \
          for (int q = 0; q < NA; ++q) v[q] += SUM_LOAD(H, r + j + q * H, 1, skip + j + q * H);       \
      else                                                                                            \
        for (int64_t j = 0; j < nv; j += L)                                                           \
          for (int q = 0; q < NA; ++q) v[q] += SUM_LOAD(H, r + j + q * H, 0, r);                      \
      for (int q = 0; q < NA; ++q) *(sum_vd##H *)(a + q * H) = v[q];                                  \
      for (int64_t j = nv; j < n; ++j)                                                                \
        if (!skip || !skip[j]) a[j % L] += r[j];                                                      \
    }                                                                                                 \
  }

SUM_ROWS(sum_rows_plain, , 2)
#if defined(__GNUC__) && defined(__x86_64__)
SUM_ROWS(sum_rows_avx2, __attribute__((target("avx2"))), 4)
SUM_ROWS(sum_rows_avx512, __attribute__((target("avx512f"))), 8)
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
