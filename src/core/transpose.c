/* Transposing a block of floats (lumen_transpose_f32, core/internal.h): stage A's curves from the
   frames of a series and back, stage D's curves from a converted series. Moves only: the bits are
   kept at every vector level. */
#include <stdint.h>
#include "core/internal.h"
#include "lumen_build_config.h"

/* The transposition of a block: dst[b * ds + a] = src[a * ss + b] for a < na, b in [b0, b1),
   a in [a0, na): contiguous writes; the reads walk one column of src, whose lines the next b
   reuse from cache. nan (or NULL): nan[b] |= whether one of the values is NaN. */
static void transpose_plain(const float *src, int64_t ss, int64_t a0, int64_t na, int64_t b0, int64_t b1, float *dst,
                            int64_t ds, uint8_t *nan) {
  for (int64_t b = b0; b < b1; ++b) {
    int any = 0;
    for (int64_t a = a0; a < na; ++a) {
      const float v = src[a * ss + b];
      any |= v != v;
      dst[b * ds + a] = v;
    }
    if (nan) nan[b] |= (uint8_t)any;
  }
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define TRANSPOSE_X86 1

/* Rows t[r * ts], r < 8, 8 floats each, into the 8 rows d[c * ds], c < 8 (a transposition in
   registers: moves only, the bits are kept); nan[c] gets row c's NaN lanes. */
__attribute__((target("avx"))) static inline void transpose8(const float *t, int64_t ts, float *d, int64_t ds,
                                                             __m256 nan[8]) {
  __m256 r[8], u[8];
  for (int q = 0; q < 8; ++q) r[q] = _mm256_loadu_ps(t + q * ts);
  for (int q = 0; q < 8; q += 2) { /* pairs of rows interleaved */
    u[q] = _mm256_unpacklo_ps(r[q], r[q + 1]);
    u[q + 1] = _mm256_unpackhi_ps(r[q], r[q + 1]);
  }
  for (int q = 0; q < 8; q += 4) { /* columns (c, c + 4) of rows q..q+3, c = 0..3 */
    r[q] = _mm256_shuffle_ps(u[q], u[q + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[q + 1] = _mm256_shuffle_ps(u[q], u[q + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[q + 2] = _mm256_shuffle_ps(u[q + 1], u[q + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[q + 3] = _mm256_shuffle_ps(u[q + 1], u[q + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int c = 0; c < 4; ++c) {
    u[c] = _mm256_permute2f128_ps(r[c], r[c + 4], 0x20);
    u[c + 4] = _mm256_permute2f128_ps(r[c], r[c + 4], 0x31);
  }
  for (int c = 0; c < 8; ++c) {
    _mm256_storeu_ps(d + c * ds, u[c]);
    nan[c] = _mm256_or_ps(nan[c], _mm256_cmp_ps(u[c], u[c], _CMP_UNORD_Q));
  }
}

/* transpose_plain by 8 x 8 transpositions; the edges (na or nb not a multiple of 8) plainly. */
__attribute__((target("avx"))) static void transpose_avx(const float *src, int64_t ss, int64_t na, int64_t nb,
                                                           float *dst, int64_t ds, uint8_t *nan) {
  const int64_t nb8 = nb & ~(int64_t)7, na8 = na & ~(int64_t)7;
  for (int64_t b = 0; b < nb8; b += 8) {
    __m256 nv[8];
    for (int c = 0; c < 8; ++c) nv[c] = _mm256_setzero_ps();
    for (int64_t a = 0; a < na8; a += 8) transpose8(src + a * ss + b, ss, dst + b * ds + a, ds, nv);
    if (nan)
      for (int c = 0; c < 8; ++c) nan[b + c] |= _mm256_movemask_ps(nv[c]) != 0;
    transpose_plain(src, ss, na8, na, b, b + 8, dst, ds, nan);
  }
  transpose_plain(src, ss, 0, na, nb8, nb, dst, ds, nan);
}
#else
#define TRANSPOSE_X86 0
#endif

void lumen_transpose_f32(const float *src, int64_t ss, int64_t na, int64_t nb, float *dst, int64_t ds, int level,
                         uint8_t *nan) {
  if (nan)
    for (int64_t b = 0; b < nb; ++b) nan[b] = 0;
#if TRANSPOSE_X86
  if (level >= 1) {
    transpose_avx(src, ss, na, nb, dst, ds, nan);
    return;
  }
#endif
  (void)level;
  transpose_plain(src, ss, 0, na, 0, nb, dst, ds, nan);
}


/* Blocks of BLK curves (a row of 256 bytes per frame: the transposes' columns), super-blocks of
   SBLK (rows of 4 KB). */
enum { BLK = 64, SBLK = 1024 };

void lumen_series_gather(const float *series, int64_t stride, const int64_t *index, int64_t n, int64_t nt, float *dst,
                         int threads, int level) {
  const int64_t nsb = (n + SBLK - 1) / SBLK;
  int nth = threads > 0 ? threads : 1;
  if (nsb < nth) nth = nsb > 0 ? (int)nsb : 1;
  (void)nth;
  /* consecutive voxels are transposed 64 at a time straight from the rows, the rows of the 64
     after the next asked for ahead; others are read one sample at a time */
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for schedule(static) num_threads(nth) if (nth > 1)
#endif
  for (int64_t q = 0; q < nsb; ++q) {
    const int64_t s0 = q * SBLK, ns = s0 + SBLK <= n ? SBLK : n - s0;
    const int consecutive = index[s0 + ns - 1] - index[s0] == ns - 1;
    for (int64_t b = 0; b < ns; b += BLK) {
      const int64_t a = s0 + b, nb = b + BLK <= ns ? BLK : ns - b;
      float *d = dst + a * nt;
      if (consecutive) { /* frame i's row at + i * stride */
        if (b + 2 * BLK <= ns)
          for (int64_t i = 0; i < nt; ++i)
            for (int64_t v = 0; v < BLK; v += 16) __builtin_prefetch(series + i * stride + index[a] + 2 * BLK + v);
        lumen_transpose_f32(series + index[a], stride, nt, nb, d, nt, level, NULL);
        continue;
      }
      for (int64_t j = 0; j < nb; ++j)
        for (int64_t i = 0; i < nt; ++i) d[j * nt + i] = series[i * stride + index[a + j]];
    }
  }
}
