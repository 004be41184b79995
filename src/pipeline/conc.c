/* Stage A: SPGR signal -> concentration for a list of voxels, in parallel, with per-voxel flags.
   Flagged samples (out of range, not finite) are replaced by linear interpolation between the
   nearest valid samples when the voxel has at most max_invalid_fraction of them; otherwise the
   voxel is unusable (bad = 1) and is not fitted.
   Blocks of 256 voxels are read frame by frame from the series; the arithmetic around the
   logarithm runs across the voxels of a frame (vector registers), and so does the logarithm
   (conc_log.h: glibc's vector log where the CPU has AVX2 or AVX-512 and the context's SIMD limit
   allows, libm's scalar log otherwise). Each sample goes through the operations of
   lumen_spgr_signal_to_conc (src/fit/aif.c) in the same order, so with the scalar log the curves
   are bit-identical to it, and within one float ulp with the vector log
   (tests/unit/test_pipe_conc.c); only checks that do not depend on the sample are hoisted.
   Threads split the blocks, never a sum: the result does not depend on the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/conc_log.h"
#include "pipeline/pipe_internal.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_OPENMP
#include <omp.h>
#endif

/* The run-wide conditions under which lumen_spgr_signal_to_conc accepts its options. */
static int run_options_valid(const pipe_spgr *sp, int64_t nt) {
  return nt >= 1 && isfinite(sp->tr) && sp->tr > 0 && isfinite(sp->r1) && sp->r1 > 0 && sp->b0 >= 0 &&
         sp->b0 < sp->b1 && sp->b1 <= nt;
}

/* The per-voxel conditions: those of this stage (a bad T10 or B1 flags every sample) and those
   of lumen_spgr_signal_to_conc's option check (B1 scale, flip angle x B1 in (0, pi)). */
static int voxel_valid(double t10, double b1, const pipe_spgr *sp) {
  const double pi = 3.14159265358979323846;
  if (!(t10 > 0) || !isfinite(t10) || !(b1 > 0) || !(sp->fa_rad * b1 < 3.14159)) return 0;
  double a = b1 * sp->fa_rad;
  return isfinite(b1) && isfinite(a) && a > 0 && a < pi;
}

enum { BLK = 256 }; /* voxels per block */

/* Per-thread scratch of one block of nb voxels: their samples frame by frame (sig[i * nb + j]),
   the work rows (w, same layout) and the per-voxel constants: 1 / (M0 sin a), cos a and
   -(1 / T10) / r1 (lumen_spgr_signal_to_conc's). */
typedef struct conc_block {
  float *sig;
  double *w;
  double inv_m0sa[BLK], ca[BLK], c0[BLK];
  int valid[BLK];
} conc_block;

/* The voxel constants of block voxels [0, nb): the baseline signal, M0 sin(a) and the constants
   derived from it exactly as lumen_spgr_signal_to_conc computes them; valid[j] = 0 for a bad T10,
   B1 or baseline. */
static void spgr_constants(conc_block *cb, int64_t nb, const double *t10, const double *b1, const pipe_spgr *sp,
                           int run_ok) {
  double s0[BLK];
  for (int64_t j = 0; j < nb; ++j) s0[j] = 0;
  if (run_ok)
    for (int64_t i = sp->b0; i < sp->b1; ++i)
      for (int64_t j = 0; j < nb; ++j) s0[j] += (double)cb->sig[i * nb + j];
  for (int64_t j = 0; j < nb; ++j) {
    cb->valid[j] = 0;
    cb->inv_m0sa[j] = NAN;
    cb->ca[j] = 0;
    cb->c0[j] = 0;
    if (!run_ok || !voxel_valid(t10[j], b1[j], sp)) continue;
    double s = s0[j] / (double)(sp->b1 - sp->b0);
    if (!(isfinite(s) && s > 0)) continue;
    double ca = cos(b1[j] * sp->fa_rad), e10 = exp(-sp->tr / t10[j]);
    double m0sa = s * (1 - ca * e10) / (1 - e10);
    if (!(isfinite(m0sa) && m0sa > 0)) continue;
    cb->valid[j] = 1;
    cb->inv_m0sa[j] = 1.0 / m0sa;
    cb->ca[j] = ca;
    cb->c0[j] = -(1.0 / t10[j]) / sp->r1;
  }
}

/* Signal -> concentration of the whole block into w, frame by frame so that the arithmetic
   around the logarithm runs across voxels in vector registers; a flagged sample (not finite,
   out of range) becomes NaN, which no valid sample can be. Per sample the operations are those
   of lumen_spgr_signal_to_conc: x = s (1 / M0sa), E1 = (1 - x) / (1 - x cos a),
   C = log(E1) (-1 / (TR r1)) - (1 / T10) / r1, i.e. (R1 - R10) / r1 with R1 = -log(E1) / TR, with
   one division per sample (a non-finite s gives a NaN E1, which fails the range test). */
static void spgr_block(conc_block *cb, int64_t nb, int64_t nt, const pipe_spgr *sp, int log_level) {
  const double k = -1.0 / (sp->tr * sp->r1);
  for (int64_t i = 0; i < nt; ++i) {
    const float *s = cb->sig + i * nb;
    double *w = cb->w + i * nb;
    for (int64_t j = 0; j < nb; ++j) {
      double x = (double)s[j] * cb->inv_m0sa[j];
      w[j] = (1 - x) / (1 - x * cb->ca[j]);
    }
  }
  pipe_conc_log(cb->w, nt * nb, log_level);
  for (int64_t i = 0; i < nt; ++i) {
    double *w = cb->w + i * nb;
    for (int64_t j = 0; j < nb; ++j) w[j] = w[j] * k + cb->c0[j];
  }
}

/* The block's curves from w into dst (curve-major, nt floats each), voxel by voxel (contiguous
   writes; the reads walk one column of w, whose lines the next voxels reuse from L1), and
   nflag[j]: the flagged (NaN) samples of voxel j, counted in a register. A voxel with flagged
   samples is rewritten afterwards (interpolation or NaN). */
static void store_curves(const conc_block *cb, int64_t nb, int64_t nt, float *dst, int64_t *nflag) {
  for (int64_t j = 0; j < nb; ++j) {
    const double *src = cb->w + j;
    float *d = dst + j * nt;
    int64_t nf = 0;
    for (int64_t i = 0; i < nt; ++i) {
      const double v = src[i * nb];
      nf += v != v;
      d[i] = (float)v;
    }
    nflag[j] = nf;
  }
}

/* Voxel j of the block: its curve from w into c (0 where flagged, as the library writes its
   invalid_value) and flag. Returns the number of flagged samples, or -1 for a bad voxel. */
static int64_t spgr_curve(const conc_block *cb, int64_t j, int64_t nb, int64_t nt, double *c, uint8_t *flag) {
  if (!cb->valid[j]) return -1;
  int64_t nbad = 0;
  for (int64_t i = 0; i < nt; ++i) {
    double v = cb->w[i * nb + j];
    flag[i] = isnan(v);
    c[i] = flag[i] ? 0 : v;
    nbad += flag[i];
  }
  return nbad;
}

/* Concentration samples as given: only non-finite ones are flagged. */
static int64_t conc_curve(const float *s, int64_t stride, int64_t nt, double *c, uint8_t *flag) {
  int64_t nbad = 0;
  for (int64_t i = 0; i < nt; ++i) {
    c[i] = (double)s[i * stride];
    flag[i] = !isfinite(c[i]);
    nbad += flag[i];
  }
  return nbad;
}

/* Replaces flagged samples by linear interpolation between their nearest valid neighbours. */
static void interpolate_flagged(double *c, const uint8_t *flag, int64_t nt) {
  for (int64_t i = 0; i < nt; ++i) {
    if (!flag[i]) continue;
    int64_t a = i - 1, b = i + 1;
    while (a >= 0 && flag[a]) --a;
    while (b < nt && flag[b]) ++b;
    if (a >= 0 && b < nt) c[i] = c[a] + (c[b] - c[a]) * (double)(i - a) / (double)(b - a);
    else c[i] = a >= 0 ? c[a] : c[b];
  }
}

/* Voxel k's flags and curve: dst (nt floats) gets c with its flagged samples interpolated, or NaN
   when the voxel is bad (nbad < 0, or too many flagged samples). */
static void finish_voxel(int64_t nbad, int64_t nt, const pipe_spgr *sp, double *c, const uint8_t *flag, float *dst,
                         int32_t *ninv, uint8_t *bad) {
  *ninv = (int32_t)(nbad < 0 ? nt : nbad);
  *bad = nbad < 0 || (nbad > 0 && ((double)nbad > sp->max_invalid_fraction * (double)nt || nbad == nt));
  if (*bad) {
    for (int64_t i = 0; i < nt; ++i) dst[i] = NAN;
    return;
  }
  if (nbad > 0) interpolate_flagged(c, flag, nt);
  for (int64_t i = 0; i < nt; ++i) dst[i] = (float)c[i];
}

/* Block list[k0, k1): reads its samples frame by frame (contiguous rows of the series when the
   voxels are consecutive, one cache miss per sample otherwise), converts, writes the curves. */
static void convert_block(const float *sig, int64_t nvox, int64_t nt, const int64_t *list, int64_t k0, int64_t k1,
                          const float *t10, double t10_const, const float *b1, const pipe_spgr *sp, int input_conc,
                          int run_ok, int log_level, conc_block *cb, double *c, uint8_t *flag, float *conc,
                          int32_t *ninvalid, uint8_t *bad) {
  const int64_t nb = k1 - k0;
  if (list[k1 - 1] - list[k0] == nb - 1)
    for (int64_t i = 0; i < nt; ++i) memcpy(cb->sig + i * nb, sig + i * nvox + list[k0], sizeof(float) * (size_t)nb);
  else
    for (int64_t i = 0; i < nt; ++i)
      for (int64_t j = 0; j < nb; ++j) cb->sig[i * nb + j] = sig[i * nvox + list[k0 + j]];
  if (!input_conc) {
    double t10v[BLK], b1v[BLK];
    for (int64_t j = 0; j < nb; ++j) {
      t10v[j] = t10 ? (double)t10[list[k0 + j]] : t10_const;
      b1v[j] = b1 ? (double)b1[list[k0 + j]] : 1.0;
    }
    spgr_constants(cb, nb, t10v, b1v, sp, run_ok);
    spgr_block(cb, nb, nt, sp, log_level);
    int64_t nflag[BLK];
    store_curves(cb, nb, nt, conc + k0 * nt, nflag);
    for (int64_t j = 0; j < nb; ++j) {
      if (cb->valid[j] && nflag[j] == 0) { ninvalid[k0 + j] = 0; bad[k0 + j] = 0; continue; } /* stored */
      int64_t nbad = spgr_curve(cb, j, nb, nt, c, flag);
      finish_voxel(nbad, nt, sp, c, flag, conc + (k0 + j) * nt, &ninvalid[k0 + j], &bad[k0 + j]);
    }
    return;
  }
  for (int64_t j = 0; j < nb; ++j) {
    int64_t nbad = conc_curve(cb->sig + j, nb, nt, c, flag);
    finish_voxel(nbad, nt, sp, c, flag, conc + (k0 + j) * nt, &ninvalid[k0 + j], &bad[k0 + j]);
  }
}

void pipe_convert(const float *sig, int64_t nvox, int64_t nt, const int64_t *list, int64_t nlist,
                  const float *t10, double t10_const, const float *b1, const pipe_spgr *sp, int input_conc,
                  int threads, lumen_cpu_simd simd, float *conc, int32_t *ninvalid, uint8_t *bad) {
  const int log_level = pipe_conc_log_level(simd);
  const int64_t nblk = (nlist + BLK - 1) / BLK;
  const int run_ok = run_options_valid(sp, nt);
  int nth = threads > 0 ? threads : 1;
  if (nblk < nth) nth = nblk > 0 ? (int)nblk : 1;
  (void)nth;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel num_threads(nth) if (nth > 1)
#endif
  {
    conc_block *cb = malloc(sizeof *cb);
    double *c = malloc(sizeof(double) * (size_t)nt);
    uint8_t *flag = malloc((size_t)nt);
    if (cb) {
      cb->sig = malloc(sizeof(float) * (size_t)nt * BLK);
      cb->w = malloc(sizeof(double) * (size_t)nt * BLK);
    }
    int ok = cb && cb->sig && cb->w && c && flag;
#if LUMEN_HAVE_OPENMP
#pragma omp for schedule(dynamic, 4)
#endif
    for (int64_t bi = 0; bi < nblk; ++bi) {
      int64_t k0 = bi * BLK, k1 = k0 + BLK < nlist ? k0 + BLK : nlist;
      if (ok)
        convert_block(sig, nvox, nt, list, k0, k1, t10, t10_const, b1, sp, input_conc, run_ok, log_level, cb, c, flag,
                      conc, ninvalid, bad);
      else
        for (int64_t k = k0; k < k1; ++k) { ninvalid[k] = (int32_t)nt; bad[k] = 1; }
    }
    if (cb) { free(cb->sig); free(cb->w); }
    free(cb);
    free(c);
    free(flag);
  }
}

enum { MEAN_BLK = 4096 }; /* curves per partial sum of pipe_mean_curve */

int pipe_mean_curve(const float *conc, const uint8_t *bad, int64_t nlist, int64_t nt, int threads, double *mean,
                    int64_t *used) {
  const int64_t nblk = (nlist + MEAN_BLK - 1) / MEAN_BLK;
  double *part = calloc((size_t)(nblk > 0 ? nblk : 1) * (size_t)nt, sizeof(double));
  int64_t *cnt = calloc((size_t)(nblk > 0 ? nblk : 1), sizeof(int64_t));
  if (!part || !cnt) {
    free(part);
    free(cnt);
    return -1;
  }
  int nth = threads > 0 ? threads : 1;
  (void)nth;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for schedule(dynamic, 4) num_threads(nth) if (nth > 1 && nblk > 1)
#endif
  for (int64_t bi = 0; bi < nblk; ++bi) {
    double *p = part + bi * nt;
    const int64_t k1 = (bi + 1) * MEAN_BLK < nlist ? (bi + 1) * MEAN_BLK : nlist;
    for (int64_t k = bi * MEAN_BLK; k < k1; ++k) {
      if (bad[k]) continue;
      ++cnt[bi];
      const float *c = conc + k * nt;
      for (int64_t i = 0; i < nt; ++i) p[i] += c[i];
    }
  }
  int64_t u = 0;
  for (int64_t i = 0; i < nt; ++i) mean[i] = 0;
  for (int64_t bi = 0; bi < nblk; ++bi) {
    u += cnt[bi];
    for (int64_t i = 0; i < nt; ++i) mean[i] += part[bi * nt + i];
  }
  for (int64_t i = 0; i < nt; ++i) mean[i] = u ? mean[i] / (double)u : 0;
  *used = u;
  free(part);
  free(cnt);
  return 0;
}
