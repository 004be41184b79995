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

enum { BLK = 64 };        /* voxels per block: the block's float rows (nt x 64) stay in L1 */
enum { MEAN_BLK = 4096 }; /* curves per partial sum of the mean curve (a multiple of BLK) */

/* Per-thread scratch of one block of nb voxels: the gathered samples of a scattered block
   (sig[i * nb + j]), the block's concentrations frame by frame (tile, same layout), one frame's
   work row, the per-voxel constants 1 / (M0 sin a), cos a and -(1 / T10) / r1
   (lumen_spgr_signal_to_conc's), and one voxel's curve and flags for the flagged-sample path. */
typedef struct conc_block {
  float *sig, *tile;
  double *c;
  uint8_t *flag;
  double row[BLK];
  double inv_m0sa[BLK], ca[BLK], c0[BLK];
  int valid[BLK];
} conc_block;

/* The voxel constants of block voxels [0, nb), whose frame i starts at rows + i * rs: the
   baseline signal, M0 sin(a) and the constants derived from it exactly as
   lumen_spgr_signal_to_conc computes them; valid[j] = 0 for a bad T10, B1 or baseline. */
static void spgr_constants(conc_block *cb, int64_t nb, const float *rows, int64_t rs, const double *t10,
                           const double *b1, const pipe_spgr *sp, int run_ok) {
  double s0[BLK];
  for (int64_t j = 0; j < nb; ++j) s0[j] = 0;
  if (run_ok)
    for (int64_t i = sp->b0; i < sp->b1; ++i)
      for (int64_t j = 0; j < nb; ++j) s0[j] += (double)rows[i * rs + j];
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

/* E1 of one sample: x = s (1 / M0sa), E1 = (1 - x) / (1 - x cos a); one function for the frame
   rows and for the per-voxel path, so that both give the same bits. */
static inline double spgr_e1(float s, double inv_m0sa, double ca) {
  double x = (double)s * inv_m0sa;
  return (1 - x) / (1 - x * ca);
}

/* Signal -> concentration of one frame of the block (s: nb samples) into out (nb floats): the
   arithmetic around the logarithm runs across voxels in vector registers, in a row that stays
   in L1; a flagged sample (not finite, out of range) becomes NaN, which no valid sample can be.
   Per sample the operations are those of lumen_spgr_signal_to_conc:
   C = log(E1) (-1 / (TR r1)) - (1 / T10) / r1, i.e. (R1 - R10) / r1 with R1 = -log(E1) / TR, with
   one division per sample (a non-finite s gives a NaN E1, which fails the range test). */
static void spgr_frame(conc_block *cb, int64_t nb, const float *s, double k, int log_level, float *out) {
  for (int64_t j = 0; j < nb; ++j) cb->row[j] = spgr_e1(s[j], cb->inv_m0sa[j], cb->ca[j]);
  pipe_conc_log(cb->row, nb, log_level);
  for (int64_t j = 0; j < nb; ++j) out[j] = (float)(cb->row[j] * k + cb->c0[j]);
}

/* The block's curves from the tile into dst (curve-major, nt floats each), voxel by voxel
   (contiguous writes; the reads walk one column of the tile, whose lines the next voxels reuse
   from L1), and nflag[j]: the flagged (NaN) samples of voxel j, counted in a register. A voxel
   with flagged samples is rewritten afterwards (interpolation or NaN). */
static void store_curves(const float *tile, int64_t nb, int64_t nt, float *dst, int64_t *nflag) {
  for (int64_t j = 0; j < nb; ++j) {
    const float *src = tile + j;
    float *d = dst + j * nt;
    int64_t nf = 0;
    for (int64_t i = 0; i < nt; ++i) {
      const float v = src[i * nb];
      nf += v != v;
      d[i] = v;
    }
    nflag[j] = nf;
  }
}

/* Voxel j of the block (frame i at s[i * rs]), valid: its curve in double into c (0 where
   flagged, as the library writes its invalid_value) and flag, by the operations of spgr_frame
   (the logarithm's value does not depend on its position in the array). Returns the number of
   flagged samples. */
static int64_t spgr_curve(const conc_block *cb, int64_t j, const float *s, int64_t rs, int64_t nt, double k,
                          int log_level, double *c, uint8_t *flag) {
  for (int64_t i = 0; i < nt; ++i) c[i] = spgr_e1(s[i * rs], cb->inv_m0sa[j], cb->ca[j]);
  pipe_conc_log(c, nt, log_level);
  int64_t nbad = 0;
  for (int64_t i = 0; i < nt; ++i) {
    double v = c[i] * k + cb->c0[j];
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

/* What every block of a run shares. */
typedef struct conc_job {
  const float *sig; /* nvox x nt, voxel fastest */
  int64_t nvox, nt;
  const int64_t *list;
  const float *t10, *b1;
  double t10_const;
  const pipe_spgr *sp;
  int input_conc, run_ok, log_level;
  float *conc;
  int32_t *ninvalid;
  uint8_t *bad;
} conc_job;

/* Frame 0 of block list[k0, k0 + nb): the series itself when the voxels are consecutive (frame i
   at + i * nvox), else their samples gathered into cb->sig (frame i at + i * nb, one cache miss
   per sample); *rs = the frame stride. */
static const float *block_rows(const conc_job *jb, int64_t k0, int64_t nb, conc_block *cb, int64_t *rs) {
  const int64_t *list = jb->list;
  if (list[k0 + nb - 1] - list[k0] == nb - 1) {
    *rs = jb->nvox;
    return jb->sig + list[k0];
  }
  for (int64_t i = 0; i < jb->nt; ++i)
    for (int64_t j = 0; j < nb; ++j) cb->sig[i * nb + j] = jb->sig[i * jb->nvox + list[k0 + j]];
  *rs = nb;
  return cb->sig;
}

/* Signal -> concentration of block list[k0, k0 + nb) whose frames are rows (stride rs). */
static void convert_signal(const conc_job *jb, int64_t k0, int64_t nb, const float *rows, int64_t rs, conc_block *cb) {
  const int64_t nt = jb->nt;
  const pipe_spgr *sp = jb->sp;
  const double k = -1.0 / (sp->tr * sp->r1);
  double t10v[BLK], b1v[BLK];
  for (int64_t j = 0; j < nb; ++j) {
    t10v[j] = jb->t10 ? (double)jb->t10[jb->list[k0 + j]] : jb->t10_const;
    b1v[j] = jb->b1 ? (double)jb->b1[jb->list[k0 + j]] : 1.0;
  }
  spgr_constants(cb, nb, rows, rs, t10v, b1v, sp, jb->run_ok);
  for (int64_t i = 0; i < nt; ++i) spgr_frame(cb, nb, rows + i * rs, k, jb->log_level, cb->tile + i * nb);
  int64_t nflag[BLK];
  store_curves(cb->tile, nb, nt, jb->conc + k0 * nt, nflag);
  for (int64_t j = 0; j < nb; ++j) {
    int32_t *ninv = &jb->ninvalid[k0 + j];
    uint8_t *bad = &jb->bad[k0 + j];
    if (cb->valid[j] && nflag[j] == 0) { *ninv = 0; *bad = 0; continue; } /* stored */
    int64_t nbad = cb->valid[j] ? spgr_curve(cb, j, rows + j, rs, nt, k, jb->log_level, cb->c, cb->flag) : -1;
    finish_voxel(nbad, nt, sp, cb->c, cb->flag, jb->conc + (k0 + j) * nt, ninv, bad);
  }
}

/* Block list[k0, k1): reads its samples frame by frame, converts, writes the curves. */
static void convert_block(const conc_job *jb, int64_t k0, int64_t k1, conc_block *cb) {
  const int64_t nb = k1 - k0, nt = jb->nt;
  int64_t rs;
  const float *rows = block_rows(jb, k0, nb, cb, &rs);
  if (!jb->input_conc) {
    convert_signal(jb, k0, nb, rows, rs, cb);
    return;
  }
  for (int64_t j = 0; j < nb; ++j) {
    int64_t nbad = conc_curve(rows + j, rs, nt, cb->c, cb->flag);
    finish_voxel(nbad, nt, jb->sp, cb->c, cb->flag, jb->conc + (k0 + j) * nt, &jb->ninvalid[k0 + j], &jb->bad[k0 + j]);
  }
}

/* Adds the usable curves of list[k0, k1) to part (nt), in list order; cnt: how many. */
static void add_curves(const conc_job *jb, int64_t k0, int64_t k1, double *part, int64_t *cnt) {
  for (int64_t k = k0; k < k1; ++k) {
    if (jb->bad[k]) continue;
    ++*cnt;
    const float *c = jb->conc + k * jb->nt;
    for (int64_t i = 0; i < jb->nt; ++i) part[i] += c[i];
  }
}

static conc_block *block_scratch_new(int64_t nt) {
  conc_block *cb = calloc(1, sizeof *cb);
  if (!cb) return NULL;
  cb->sig = malloc(sizeof(float) * (size_t)nt * BLK);
  cb->tile = malloc(sizeof(float) * (size_t)nt * BLK);
  cb->c = malloc(sizeof(double) * (size_t)nt);
  cb->flag = malloc((size_t)nt);
  if (cb->sig && cb->tile && cb->c && cb->flag) return cb;
  free(cb->sig); free(cb->tile); free(cb->c); free(cb->flag);
  free(cb);
  return NULL;
}

static void block_scratch_free(conc_block *cb) {
  if (!cb) return;
  free(cb->sig); free(cb->tile); free(cb->c); free(cb->flag);
  free(cb);
}

/* The mean of the usable curves from the partial sums of each unit (part: nunit x nt, cnt), added
   in unit order. */
static void mean_from_parts(const double *part, const int64_t *cnt, int64_t nunit, int64_t nt, double *mean,
                            int64_t *used) {
  int64_t u = 0;
  for (int64_t i = 0; i < nt; ++i) mean[i] = 0;
  for (int64_t ui = 0; ui < nunit; ++ui) {
    u += cnt[ui];
    for (int64_t i = 0; i < nt; ++i) mean[i] += part[ui * nt + i];
  }
  for (int64_t i = 0; i < nt; ++i) mean[i] = u ? mean[i] / (double)u : 0;
  *used = u;
}

int pipe_convert(const float *sig, int64_t nvox, int64_t nt, const int64_t *list, int64_t nlist,
                 const float *t10, double t10_const, const float *b1, const pipe_spgr *sp, int input_conc,
                 int threads, lumen_cpu_simd simd, float *conc, int32_t *ninvalid, uint8_t *bad, double *mean,
                 int64_t *used) {
  const conc_job jb = {sig, nvox, nt, list, t10, b1, t10_const, sp, input_conc, run_options_valid(sp, nt),
                       pipe_conc_log_level(simd), conc, ninvalid, bad};
  /* a work unit: one block, or MEAN_BLK curves when the mean is summed (its partial sum is made
     while the unit's curves are in cache) */
  const int64_t unit = mean ? MEAN_BLK : BLK, nunit = (nlist + unit - 1) / unit;
  double *part = mean ? calloc((size_t)(nunit > 0 ? nunit : 1) * (size_t)nt, sizeof(double)) : NULL;
  int64_t *cnt = mean ? calloc((size_t)(nunit > 0 ? nunit : 1), sizeof(int64_t)) : NULL;
  if (mean && (!part || !cnt)) {
    free(part);
    free(cnt);
    return -1;
  }
  int nth = threads > 0 ? threads : 1;
  if (nunit < nth) nth = nunit > 0 ? (int)nunit : 1;
  (void)nth;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel num_threads(nth) if (nth > 1)
#endif
  {
    conc_block *cb = block_scratch_new(nt);
#if LUMEN_HAVE_OPENMP
#pragma omp for schedule(dynamic, mean ? 1 : 4)
#endif
    for (int64_t ui = 0; ui < nunit; ++ui) {
      const int64_t u0 = ui * unit, u1 = u0 + unit < nlist ? u0 + unit : nlist;
      for (int64_t k0 = u0; k0 < u1; k0 += BLK) {
        const int64_t k1 = k0 + BLK < u1 ? k0 + BLK : u1;
        if (cb) convert_block(&jb, k0, k1, cb);
        else
          for (int64_t k = k0; k < k1; ++k) { ninvalid[k] = (int32_t)nt; bad[k] = 1; }
        if (mean) add_curves(&jb, k0, k1, part + ui * nt, &cnt[ui]);
      }
    }
    block_scratch_free(cb);
  }
  if (mean) mean_from_parts(part, cnt, nunit, nt, mean, used);
  free(part);
  free(cnt);
  return 0;
}
