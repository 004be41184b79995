/* Stage A: SPGR signal -> concentration for a list of voxels, in parallel, with per-voxel flags,
   and the mean of the usable curves summed on the way.
   Flagged samples (out of range, not finite) are replaced by linear interpolation between the
   nearest valid samples when the voxel has at most max_invalid_fraction of them; otherwise the
   voxel is unusable (bad = 1) and is not fitted.
   Blocks of 64 voxels are converted frame by frame, straight from the series' rows when the voxels
   are consecutive (the next block's rows prefetched), gathered otherwise: the conversion runs
   across the voxels of a frame in float (conc_f32.h: 16 lanes with AVX-512, 8 with AVX2, one
   otherwise, the same bits at every level) into a float tile that stays in L1; the tile is
   transposed into curves 8 x 8 in registers, the curves with a flagged sample are finished one by
   one (interpolation in double, finish_block), and the block's curves are copied out from L1 into pages mapped
   beforehand in one call per work unit (lumen_populate_pages). The per-voxel constants are those
   of lumen_spgr_signal_to_conc (src/fit/aif.c), computed in double and rounded to float; a
   concentration is within a few float ulps of R1 / r1 and R10 / r1 of the double conversion
   (conc_f32.h, tests/unit/test_pipe_conc.c).
   The mean curve is summed per group of 4096 curves in 16 lanes per frame (conc_sum.h) while the
   block's frames are in cache, a group's lanes added in lane order, the groups' sums in group
   order (the work unit is then the group).
   Threads split the blocks (or groups), never a sum: the result does not depend on the thread
   count.
   In place (pipe_convert_in_place, what `lumen dce` runs), the curves go back over the series
   instead of into an array: a run of 32 to 1024 consecutive voxels (a mask's row is one) is
   converted row by row where it lies (rows of up to 4 KB, about 4 KB ahead prefetched on the way)
   and each row summed into the mean's lanes while in L1; when no sample came out NaN (the sums are
   finite) the block is done, else it is transposed 64 voxels at a time from cache for the flags, a
   flagged or unusable voxel's curve written back, and its rows summed again without the unusable
   voxels; scattered voxels go the way above, 16 at a time, and are written back through a
   transposition. The values, flags and mean are
   those of pipe_convert bit for bit. Stage D's fit reads them where they lie
   (lumen_fit_execute_series); pipe_curves_get gathers them into an array (FXR's R1 curves, a
   caller's executor). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "pipeline/conc_f32.h"
#include "pipeline/conc_sum.h"
#include "pipeline/pipe_conc.h"
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
enum { SBLK = 1024 };     /* voxels per super-block in place: rows of 4 KB, the block's constants */
enum { MEAN_BLK = 4096 }; /* curves per partial sum of the mean curve (a multiple of SBLK) */
enum { PF_ROWS = 2 };     /* in place: how many rows ahead of the row converted are prefetched */
enum { RUN_MIN = 32 };    /* in place: the shortest run of consecutive voxels converted where it lies */

/* Per-thread scratch of one block of nb voxels: the gathered samples of a scattered block
   (sig[i * nb + j]), the block's concentrations frame by frame (tile, same layout), the per-voxel
   constants of conc_f32.h (1 / (M0 sin a), cos a, 1 - cos a, -(1 / T10) / r1: those of
   lumen_spgr_signal_to_conc, rounded to float), and one voxel's curve and flags for the
   flagged-sample path. */
typedef struct conc_block {
  float *sig, *tile, *out; /* out: the block's curves (curve-major), copied out from L1 */
  double *c;
  double *lanes; /* the mean's lanes of the group being converted (nt x 16, conc_sum.h) */
  double *acc;   /* in place: those lanes while a super-block is summed (kept if it has no NaN) */
  uint8_t *flag;
  float a[SBLK], ca[SBLK], om[SBLK], c0[SBLK];
  int valid[SBLK];
  uint8_t flagged[BLK]; /* the voxel has a NaN (flagged) sample */
  int64_t count[3];     /* this thread's unusable voxels, flagged samples, interpolated voxels */
} conc_block;

/* The voxel constants of block voxels [0, nb), whose frame i starts at rows + i * rs: the
   baseline signal, M0 sin(a) and the constants derived from it exactly as
   lumen_spgr_signal_to_conc computes them; valid[j] = 0 for a bad T10, B1 or baseline. */
static void spgr_constants(conc_block *cb, int64_t nb, const float *rows, int64_t rs, const double *t10,
                           const double *b1, const pipe_spgr *sp, int run_ok) {
  double s0[SBLK];
  for (int64_t j = 0; j < nb; ++j) s0[j] = 0;
  if (run_ok)
    for (int64_t i = sp->b0; i < sp->b1; ++i)
      for (int64_t j = 0; j < nb; ++j) s0[j] += (double)rows[i * rs + j];
  double b1_last = NAN, ca = 0, t10_last = NAN, e10 = 0; /* neighbours often share T10 and B1 */
  for (int64_t j = 0; j < nb; ++j) {
    cb->valid[j] = 0;
    cb->a[j] = NAN;
    cb->ca[j] = 0;
    cb->om[j] = 0;
    cb->c0[j] = 0;
    if (!run_ok || !voxel_valid(t10[j], b1[j], sp)) continue;
    double s = s0[j] / (double)(sp->b1 - sp->b0);
    if (!(isfinite(s) && s > 0)) continue;
    if (b1[j] != b1_last) { b1_last = b1[j]; ca = cos(b1[j] * sp->fa_rad); } /* (both > 0 here: no +-0) */
    if (t10[j] != t10_last) { t10_last = t10[j]; e10 = exp(-sp->tr / t10[j]); }
    double m0sa = s * (1 - ca * e10) / (1 - e10);
    if (!(isfinite(m0sa) && m0sa > 0)) continue;
    cb->valid[j] = 1;
    cb->a[j] = (float)(1.0 / m0sa);
    cb->ca[j] = (float)ca;
    cb->om[j] = (float)(1 - ca);
    cb->c0[j] = (float)(-(1.0 / t10[j]) / sp->r1);
  }
}

/* A converted curve (a flagged sample is NaN) in double into c (0 where flagged, as the library
   writes its invalid_value) and flag. Returns the number of flagged samples. */
static int64_t nan_curve(const float *s, int64_t nt, double *c, uint8_t *flag) {
  int64_t nbad = 0;
  for (int64_t i = 0; i < nt; ++i) {
    double v = (double)s[i];
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
  int64_t nlist;
  const float *t10, *b1;
  double t10_const;
  const pipe_spgr *sp;
  int input_conc, run_ok, level; /* level: the vector level (conc_f32.h), also that of the transposes and sums */
  float *conc;   /* the curves (nlist x nt), or NULL when in place: */
  float *series; /* the curves written back over sig (the same buffer), frame-major */
  int32_t *ninvalid;
  uint8_t *bad;
} conc_job;

/* The flags of the voxels list[k0, k0 + nb) whose curves are in cb->out (curve-major): ninvalid
   and bad, a curve with flagged samples interpolated there, an unusable one NaN. Signal input:
   the flagged samples are the NaN ones (cb->flagged[j]: curve j has one), valid[j] = 0 an
   unusable voxel (its constants); concentration input: every non-finite sample (valid unread). */
static void finish_block(const conc_job *jb, int64_t k0, int64_t nb, const int *valid, conc_block *cb) {
  const int64_t nt = jb->nt;
  for (int64_t j = 0; j < nb; ++j) {
    int32_t *ninv = &jb->ninvalid[k0 + j];
    uint8_t *bad = &jb->bad[k0 + j];
    float *c = cb->out + j * nt;
    int64_t nbad;
    if (jb->input_conc) {
      nbad = conc_curve(c, 1, nt, cb->c, cb->flag);
    } else {
      if (valid[j] && !cb->flagged[j]) { *ninv = 0; *bad = 0; continue; } /* as converted */
      nbad = valid[j] ? nan_curve(c, nt, cb->c, cb->flag) : -1;
    }
    finish_voxel(nbad, nt, jb->sp, cb->c, cb->flag, c, ninv, bad);
    cb->count[0] += *bad;
    cb->count[1] += *ninv;
    cb->count[2] += !*bad && *ninv > 0;
  }
}

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

/* The constants (spgr_constants) of block list[k0, k0 + nb), nb <= SBLK, whose frames are rows
   (stride rs). */
static void block_constants(const conc_job *jb, int64_t k0, int64_t nb, const float *rows, int64_t rs,
                            conc_block *cb) {
  double t10v[SBLK], b1v[SBLK];
  for (int64_t j = 0; j < nb; ++j) {
    t10v[j] = jb->t10 ? (double)jb->t10[jb->list[k0 + j]] : jb->t10_const;
    b1v[j] = jb->b1 ? (double)jb->b1[jb->list[k0 + j]] : 1.0;
  }
  spgr_constants(cb, nb, rows, rs, t10v, b1v, jb->sp, jb->run_ok);
}

/* Signal -> concentration of block list[k0, k0 + nb) whose frames are rows (stride rs). */
static void convert_signal(const conc_job *jb, int64_t k0, int64_t nb, const float *rows, int64_t rs, conc_block *cb) {
  const int64_t nt = jb->nt;
  const pipe_spgr *sp = jb->sp;
  const float k = (float)(-1.0 / (sp->tr * sp->r1));
  block_constants(jb, k0, nb, rows, rs, cb);
  const int pf = rs == jb->nvox && k0 + 2 * nb <= jb->nlist && jb->list[k0 + 2 * nb - 1] - jb->list[k0] == 2 * nb - 1;
  for (int64_t i = 0; i < nt; ++i) {
    if (pf)
      for (int64_t q = 0; q < nb; q += 16) __builtin_prefetch(rows + i * rs + nb + q);
    /* a flagged sample (not finite, out of range) becomes NaN, which no valid sample can be */
    pipe_conc_spgr_row(jb->level, nb, rows + i * rs, cb->a, cb->ca, cb->om, cb->c0, k, cb->tile + i * nb, NULL);
  }
  lumen_transpose_f32(cb->tile, nb, nt, nb, cb->out, nt, jb->level, cb->flagged); /* the block's curves, flagged voxels */
  finish_block(jb, k0, nb, cb->valid, cb);
}

/* Block list[k0, k1): reads its samples frame by frame, converts, writes the curves into cb->out. */
static void convert_block(const conc_job *jb, int64_t k0, int64_t k1, conc_block *cb) {
  const int64_t nb = k1 - k0, nt = jb->nt;
  int64_t rs;
  const float *rows = block_rows(jb, k0, nb, cb, &rs);
  if (!jb->input_conc) {
    convert_signal(jb, k0, nb, rows, rs, cb);
    return;
  }
  lumen_transpose_f32(rows, rs, nt, nb, cb->out, nt, jb->level, NULL);
  finish_block(jb, k0, nb, NULL, cb);
}

/* The block's curves (cb->out) back over the series at list[k0, k0 + nb), frame-major: straight
   into the rows when the voxels are consecutive, else through cb->sig and scattered. Returns the
   block's frames as written (frame i at + i * *rs: the series' rows, or cb->sig). */
static const float *write_back(const conc_job *jb, int64_t k0, int64_t nb, conc_block *cb, int64_t *rs) {
  const int64_t nt = jb->nt, nvox = jb->nvox, *list = jb->list;
  if (list[k0 + nb - 1] - list[k0] == nb - 1) {
    lumen_transpose_f32(cb->out, nt, nb, nt, jb->series + list[k0], nvox, jb->level, NULL);
    *rs = nvox;
    return jb->series + list[k0];
  }
  lumen_transpose_f32(cb->out, nt, nb, nt, cb->sig, nb, jb->level, NULL);
  for (int64_t i = 0; i < nt; ++i)
    for (int64_t j = 0; j < nb; ++j) jb->series[i * nvox + list[k0 + j]] = cb->sig[i * nb + j];
  *rs = nb;
  return cb->sig;
}

/* The usable curves of block list[k0, k0 + nb), frame i at rows + i * rs, added to the group's
   mean lanes (part: nt x 16, conc_sum.h); *cnt += how many. */
static void add_block_to_mean(const conc_job *jb, int64_t k0, int64_t nb, const float *rows, int64_t rs, double *part,
                              int64_t *cnt) {
  pipe_rows_sum16(jb->level, rows, rs, jb->nt, nb, jb->bad + k0, part);
  for (int64_t j = 0; j < nb; ++j) *cnt += !jb->bad[k0 + j];
}

/* In place, the consecutive voxels list[k0, k0 + nb), nb <= SBLK, whose frame i is the row
   rows + i * nvox: each row converted where it lies (rows of up to 4 KB: few pages) and summed into
   the mean's lanes while in L1 (cb->acc, from part). A block without a NaN sample (the sums all
   finite: every voxel usable, none flagged) is done: its flags are 0 and the sums go to part. Else
   its curves are transposed 64 at a time from cache for their flags (finish_block), a flagged or
   unusable voxel written back, and the rows summed again without the unusable voxels. */
static void convert_rows_in_place(const conc_job *jb, int64_t k0, int64_t nb, conc_block *cb, double *part,
                                  int64_t *cnt) {
  const int64_t nt = jb->nt, rs = jb->nvox;
  float *rows = jb->series + jb->list[k0];
  double *acc = cb->acc;
  if (part) memcpy(acc, part, sizeof(double) * PIPE_SUM_LANES * (size_t)nt);
  else memset(acc, 0, sizeof(double) * PIPE_SUM_LANES * (size_t)nt);
  if (!jb->input_conc) {
    const pipe_spgr *sp = jb->sp;
    const float k = (float)(-1.0 / (sp->tr * sp->r1));
    block_constants(jb, k0, nb, rows, rs, cb);
    /* a flagged sample (not finite, out of range) becomes NaN, which no valid sample can be. The
       row PF_ROWS frames on (more for short rows: about 4 KB ahead) is asked for on the way, a
       line per 16 samples: the hardware's prefetcher stops at each row (a page of its own) */
    const int64_t short_rows = (1024 + nb - 1) / nb, ahead = short_rows > PF_ROWS ? short_rows : PF_ROWS;
    for (int64_t i = 0; i < nt; ++i) {
      const float *pf = i + ahead < nt ? rows + (i + ahead) * rs : NULL;
      pipe_conc_spgr_row(jb->level, nb, rows + i * rs, cb->a, cb->ca, cb->om, cb->c0, k, rows + i * rs, pf);
      pipe_rows_sum16(jb->level, rows + i * rs, rs, 1, nb, NULL, acc + i * PIPE_SUM_LANES);
    }
  } else {
    pipe_rows_sum16(jb->level, rows, rs, nt, nb, NULL, acc);
  }
  int clean = 1;
  for (int64_t q = 0; q < PIPE_SUM_LANES * nt; ++q) clean &= isfinite(acc[q]) != 0;
  if (clean) {
    memset(jb->ninvalid + k0, 0, sizeof(int32_t) * (size_t)nb);
    memset(jb->bad + k0, 0, (size_t)nb);
    if (part) {
      memcpy(part, acc, sizeof(double) * PIPE_SUM_LANES * (size_t)nt);
      *cnt += nb;
    }
    return;
  }
  for (int64_t b0 = 0; b0 < nb; b0 += BLK) {
    const int64_t n = b0 + BLK < nb ? BLK : nb - b0;
    lumen_transpose_f32(rows + b0, rs, nt, n, cb->out, nt, jb->level, cb->flagged);
    finish_block(jb, k0 + b0, n, cb->valid + b0, cb);
    for (int64_t j = 0; j < n; ++j)
      if (jb->ninvalid[k0 + b0 + j] != 0) /* interpolated, or NaN when unusable: written back */
        for (int64_t i = 0; i < nt; ++i) rows[i * rs + b0 + j] = cb->out[j * nt + i];
  }
  if (part) add_block_to_mean(jb, k0, nb, rows, rs, part, cnt);
}

static conc_block *block_scratch_new(int64_t nt) {
  conc_block *cb = calloc(1, sizeof *cb);
  if (!cb) return NULL;
  cb->sig = malloc(sizeof(float) * (size_t)nt * BLK);
  cb->tile = malloc(sizeof(float) * (size_t)nt * BLK);
  cb->out = malloc(sizeof(float) * (size_t)nt * BLK);
  cb->c = malloc(sizeof(double) * (size_t)nt);
  cb->flag = malloc((size_t)nt);
  cb->acc = malloc(sizeof(double) * PIPE_SUM_LANES * (size_t)nt);
  cb->lanes = malloc(sizeof(double) * PIPE_SUM_LANES * (size_t)nt);
  if (cb->sig && cb->tile && cb->out && cb->c && cb->flag && cb->acc && cb->lanes) return cb;
  free(cb->sig); free(cb->tile); free(cb->out); free(cb->c); free(cb->flag); free(cb->acc); free(cb->lanes);
  free(cb);
  return NULL;
}

static void block_scratch_free(conc_block *cb) {
  if (!cb) return;
  free(cb->sig); free(cb->tile); free(cb->out); free(cb->c); free(cb->flag); free(cb->acc); free(cb->lanes);
  free(cb);
}

/* A group's sum (part: nt) from its lanes (nt x 16, conc_sum.h), added in lane order. */
static void group_sum(const double *lanes, int64_t nt, double *part) {
  for (int64_t i = 0; i < nt; ++i) {
    double g = 0;
    for (int q = 0; q < PIPE_SUM_LANES; ++q) g += lanes[i * PIPE_SUM_LANES + q];
    part[i] = g;
  }
}

/* The mean of the usable curves from the groups' sums (part: nunit x nt) and counts, added in
   group order. */
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

/* pipe_convert and pipe_convert_in_place: jb->conc or jb->series gets the curves; count (or
   NULL): the totals of the flags (pipe_conc.h). */
static int convert_list(const conc_job *jbp, int threads, double *mean, int64_t *used, int64_t count[3]) {
  const conc_job jb = *jbp;
  const int64_t nt = jb.nt, nlist = jb.nlist;
  float *conc = jb.conc;
  int32_t *ninvalid = jb.ninvalid;
  uint8_t *bad = jb.bad;
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
  int64_t n_bad = 0, n_flag = 0, n_interp = 0;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel num_threads(nth) if (nth > 1) reduction(+ : n_bad, n_flag, n_interp)
#endif
  {
    conc_block *cb = block_scratch_new(nt);
#if LUMEN_HAVE_OPENMP
#pragma omp for schedule(dynamic, mean ? 1 : 4)
#endif
    for (int64_t ui = 0; ui < nunit; ++ui) {
      const int64_t u0 = ui * unit, u1 = u0 + unit < nlist ? u0 + unit : nlist;
      if (cb && conc) lumen_populate_pages(conc + u0 * nt, sizeof(float) * (size_t)((u1 - u0) * nt));
      if (cb && mean) memset(cb->lanes, 0, sizeof(double) * PIPE_SUM_LANES * (size_t)nt);
      for (int64_t k0 = u0; k0 < u1;) {
        int64_t k1 = k0 + BLK < u1 ? k0 + BLK : u1;
        if (!cb) {
          for (int64_t k = k0; k < k1; ++k) { ninvalid[k] = (int32_t)nt; bad[k] = 1; }
          n_bad += k1 - k0;
          n_flag += (k1 - k0) * nt;
          k0 = k1;
          continue;
        }
        if (jb.series) { /* in place: a run of consecutive voxels from k0 (up to SBLK) where it lies */
          const int64_t lim = k0 + SBLK < u1 ? k0 + SBLK : u1;
          int64_t r = lim - k0;
          if (jb.list[lim - 1] - jb.list[k0] != r - 1)
            for (r = 1; k0 + r < lim && jb.list[k0 + r] == jb.list[k0] + r;) ++r;
          /* every block but a group's last starts a multiple of 16 voxels into it (conc_sum.h) */
          const int64_t nb = k0 + r == u1 ? r : r - r % PIPE_SUM_LANES;
          if (nb >= RUN_MIN) {
            convert_rows_in_place(&jb, k0, nb, cb, mean ? cb->lanes : NULL, mean ? &cnt[ui] : NULL);
            k0 += nb;
            continue;
          }
          k1 = k0 + PIPE_SUM_LANES < u1 ? k0 + PIPE_SUM_LANES : u1; /* scattered: 16 at a time */
        }
        convert_block(&jb, k0, k1, cb);
        const int64_t nb = k1 - k0;
        int64_t rs = nb;
        const float *frames = cb->tile; /* the block's curves frame-major, for the mean */
        if (conc) {
          memcpy(conc + k0 * nt, cb->out, sizeof(float) * (size_t)(nb * nt)); /* whole lines, in order */
          if (mean) lumen_transpose_f32(cb->out, nt, nb, nt, cb->tile, nb, jb.level, NULL);
        } else {
          frames = write_back(&jb, k0, nb, cb, &rs);
        }
        if (mean) add_block_to_mean(&jb, k0, nb, frames, rs, cb->lanes, &cnt[ui]);
        k0 = k1;
      }
      if (cb && mean) group_sum(cb->lanes, nt, part + ui * nt);
    }
    if (cb) {
      n_bad += cb->count[0];
      n_flag += cb->count[1];
      n_interp += cb->count[2];
    }
    block_scratch_free(cb);
  }
  if (count) {
    count[0] = n_bad;
    count[1] = n_flag;
    count[2] = n_interp;
  }
  if (mean) mean_from_parts(part, cnt, nunit, nt, mean, used);
  free(part);
  free(cnt);
  return 0;
}

/* The job of a conversion: the curves go to conc, or back over series (in place). */
static int convert(const pipe_convert_in *in, const float *sig, float *conc, float *series,
                   const pipe_convert_out *out) {
  const conc_job jb = {.sig = sig, .nvox = in->nvox, .nt = in->nt, .list = in->list, .nlist = in->nlist,
                       .t10 = in->t10, .b1 = in->b1, .t10_const = in->t10_const, .sp = in->sp,
                       .input_conc = in->input_conc, .run_ok = run_options_valid(in->sp, in->nt),
                       .level = pipe_conc_level(in->simd), .conc = conc, .series = series,
                       .ninvalid = out->ninvalid, .bad = out->bad};
  return convert_list(&jb, in->threads, out->mean, out->used, out->count);
}
int pipe_convert(const pipe_convert_in *in, const pipe_convert_out *out) {
  return convert(in, in->sig, out->conc, NULL, out);
}
int pipe_convert_in_place(float *series, const pipe_convert_in *in, const pipe_convert_out *out) {
  return convert(in, series, NULL, series, out);
}

void pipe_curves_get(const pipe_curves *c, int64_t k0, int64_t n, float *dst, int threads, lumen_cpu_simd simd) {
  lumen_series_gather(c->base, c->nvox, c->list + k0, n, c->nt, dst, threads, pipe_conc_level(simd));
}

/* Frame i of the sampled mean signal: *y = the sum of frame i over the sampled voxels idx[m] with
   ok[m] (all when ok is NULL), in sample order. Returns how many of the values read are not
   finite. The voxels come in groups of 16 neighbours in the list (usually one or two cache lines
   a frame): 16 times fewer cache misses than as many voxels taken one by one. */
static int64_t sum_sampled_frame(const float *sig, int64_t nvox, const int64_t *idx, int64_t nsamp, const uint8_t *ok,
                                 int64_t i, double *y) {
  enum { AHEAD = 32 }; /* samples prefetched ahead: one cache miss each, at a constant stride */
  const float *f = sig + i * nvox;
  double s = 0;
  int64_t nonfinite = 0;
  for (int64_t m = 0; m < nsamp; ++m) {
    if (m + AHEAD < nsamp) __builtin_prefetch(f + idx[m + AHEAD]);
    if (ok && !ok[m]) continue;
    const float v = f[idx[m]];
    nonfinite += !isfinite(v);
    s += v;
  }
  *y = s;
  return nonfinite;
}

int64_t pipe_mean_signal_sample(const float *sig, int64_t nvox, int64_t nt, const int64_t *list, int64_t nlist,
                                int64_t step, int threads, double *y) {
  enum { G = PIPE_SAMPLE_GROUP };
  const int64_t ngroup = (nlist + G - 1) / G, nsampled_groups = (ngroup + step - 1) / step;
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)(nsampled_groups > 0 ? nsampled_groups * G : 1));
  uint8_t *ok = NULL;
  if (!idx) return -1;
  int64_t nsamp = 0;
  for (int64_t g = 0; g < ngroup; g += step)
    for (int64_t m = g * G; m < nlist && m < (g + 1) * G; ++m) idx[nsamp++] = list[m];
  int64_t nonfinite = 0, used = nsamp;
  int nth = threads > 0 ? threads : 1;
  (void)nth;
  /* frame by frame: constant strides within a frame instead of one frame per page */
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for schedule(static) reduction(+ : nonfinite) num_threads(nth) if (nth > 1 && nt > 1)
#endif
  for (int64_t i = 0; i < nt; ++i) nonfinite += sum_sampled_frame(sig, nvox, idx, nsamp, NULL, i, &y[i]);
  if (nonfinite > 0) { /* some samples are not finite: those voxels are left out of every frame */
    ok = malloc((size_t)(nsamp > 0 ? nsamp : 1));
    used = ok ? 0 : -1;
    for (int64_t m = 0; ok && m < nsamp; ++m) ok[m] = 1;
    for (int64_t i = 0; ok && i < nt; ++i)
      for (int64_t m = 0; m < nsamp; ++m) ok[m] &= isfinite(sig[i * nvox + idx[m]]) != 0;
    for (int64_t m = 0; ok && m < nsamp; ++m) used += ok[m];
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for schedule(static) num_threads(nth) if (ok && nth > 1 && nt > 1)
#endif
    for (int64_t i = 0; i < nt; ++i)
      if (ok) (void)sum_sampled_frame(sig, nvox, idx, nsamp, ok, i, &y[i]);
  }
  free(ok);
  free(idx);
  return used;
}
