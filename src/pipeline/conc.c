/* Stage A: SPGR signal -> concentration for a list of voxels, in parallel, with per-voxel flags.
   Flagged samples (out of range, not finite) are replaced by linear interpolation between the
   nearest valid samples when the voxel has at most max_invalid_fraction of them; otherwise the
   voxel is unusable (bad = 1) and is not fitted. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/pipe_internal.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_OPENMP
#include <omp.h>
#endif

static void convert_one(const double *s, int64_t nt, double t10, double b1, const pipe_spgr *sp, int input_conc,
                        double *c, uint8_t *flag, int32_t *ninv, uint8_t *bad) {
  int64_t nbad = 0;
  *bad = 0;
  if (input_conc) {
    for (int64_t i = 0; i < nt; ++i) {
      flag[i] = !isfinite(s[i]);
      c[i] = s[i];
      nbad += flag[i];
    }
  } else {
    /* lumen_spgr_signal_to_conc (src/fit/aif.c) holds the formula; a bad baseline or T10 flags
       every sample. */
    if (!(t10 > 0) || !isfinite(t10) || !(b1 > 0) || !(sp->fa_rad * b1 < 3.14159)) {
      *ninv = (int32_t)nt;
      *bad = 1;
      return;
    }
    lumen_spgr_options o;
    lumen_spgr_options_init(&o);
    o.flip_angle = sp->fa_rad;
    o.tr = sp->tr;
    o.r1 = sp->r1;
    o.b1 = b1;
    o.baseline_start = sp->b0;
    o.baseline_end = sp->b1;
    int64_t n_inv = 0;
    if (lumen_spgr_signal_to_conc(NULL, &o, t10, nt, s, c, flag, &n_inv) != LUMEN_OK) {
      *ninv = (int32_t)nt;
      *bad = 1;
      return;
    }
    for (int64_t i = 0; i < nt; ++i) {
      if (flag[i] == LUMEN_CONC_BAD_BASELINE) { *ninv = (int32_t)nt; *bad = 1; return; }
      flag[i] = flag[i] != LUMEN_CONC_OK;
    }
    nbad = n_inv;
  }
  *ninv = (int32_t)nbad;
  if (nbad == 0) return;
  if ((double)nbad > sp->max_invalid_fraction * (double)nt || nbad == nt) { *bad = 1; return; }
  /* interpolate flagged samples from their valid neighbours */
  for (int64_t i = 0; i < nt; ++i) {
    if (!flag[i]) continue;
    int64_t a = i - 1, b = i + 1;
    while (a >= 0 && flag[a]) --a;
    while (b < nt && flag[b]) ++b;
    if (a >= 0 && b < nt) c[i] = c[a] + (c[b] - c[a]) * (double)(i - a) / (double)(b - a);
    else c[i] = a >= 0 ? c[a] : c[b];
  }
}

void pipe_convert(const float *sig, int64_t nvox, int64_t nt, const int64_t *list, int64_t nlist,
                  const float *t10, double t10_const, const float *b1, const pipe_spgr *sp, int input_conc,
                  float *conc, int32_t *ninvalid, uint8_t *bad) {
  /* Blocks of up to 256 list entries; a block of consecutive voxels is gathered frame by frame
     (contiguous rows of the series) instead of voxel by voxel (one cache miss per sample). */
  enum { BLK = 256 };
  const int64_t nblk = (nlist + BLK - 1) / BLK;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel
#endif
  {
    double *s = malloc(sizeof(double) * (size_t)nt * 2);
    uint8_t *flag = malloc((size_t)nt);
    float *blk = malloc(sizeof(float) * (size_t)nt * BLK);
    int ok = s && flag && blk;
#if LUMEN_HAVE_OPENMP
#pragma omp for schedule(dynamic, 16)
#endif
    for (int64_t bi = 0; bi < nblk; ++bi) {
      int64_t k0 = bi * BLK, k1 = k0 + BLK < nlist ? k0 + BLK : nlist, nb = k1 - k0;
      int contiguous = list[k1 - 1] - list[k0] == nb - 1;
      if (ok && contiguous)
        for (int64_t i = 0; i < nt; ++i) memcpy(blk + i * nb, sig + i * nvox + list[k0], sizeof(float) * (size_t)nb);
      for (int64_t k = k0; k < k1; ++k) {
        if (!ok) { ninvalid[k] = (int32_t)nt; bad[k] = 1; continue; }
        int64_t v = list[k];
        if (contiguous) for (int64_t i = 0; i < nt; ++i) s[i] = blk[i * nb + (k - k0)];
        else for (int64_t i = 0; i < nt; ++i) s[i] = sig[i * nvox + v];
        double *c = s + nt;
        convert_one(s, nt, t10 ? (double)t10[v] : t10_const, b1 ? (double)b1[v] : 1.0, sp, input_conc, c, flag,
                    &ninvalid[k], &bad[k]);
        float *dst = conc + k * nt;
        if (bad[k]) for (int64_t i = 0; i < nt; ++i) dst[i] = NAN;
        else for (int64_t i = 0; i < nt; ++i) dst[i] = (float)c[i];
      }
    }
    free(s);
    free(flag);
    free(blk);
  }
}
