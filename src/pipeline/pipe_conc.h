/* Stage "convert" (stage A of the run log): SPGR signal to concentration for the listed voxels
   (conc.c), the curves as they lie after the conversion in place, the sampled mean signal that
   the baseline detection reads. */
#ifndef LUMEN_PIPE_CONC_H
#define LUMEN_PIPE_CONC_H

#include <stdint.h>
#include "lumen/context.h"

typedef struct pipe_spgr {
  double fa_rad, tr, r1;
  int64_t b0, b1;          /* baseline frames [b0, b1) */
  double max_invalid_fraction;
} pipe_spgr;

/* What a conversion reads. */
typedef struct pipe_convert_in {
  const float *sig;        /* the signal (nvox x nt, voxel fastest); pipe_convert_in_place ignores it */
  int64_t nvox, nt;
  const int64_t *list;     /* the voxels converted */
  int64_t nlist;
  const float *t10;        /* T10 (s) per voxel, or NULL: t10_const */
  double t10_const;
  const float *b1;         /* B1 per voxel, or NULL: 1 */
  const pipe_spgr *sp;
  int input_conc;          /* the signal is concentration already (only flags non-finite samples) */
  int threads;             /* how many (the context's); the curves do not depend on it */
  lumen_cpu_simd simd;     /* the context's limit of the vector instructions (conc_f32.h: the
                              curves are the same at every level) */
} pipe_convert_in;

/* What a conversion writes; mean, used and count may be NULL. */
typedef struct pipe_convert_out {
  float *conc;             /* pipe_convert: nlist x nt, curve-major (pipe_convert_in_place: unused) */
  int32_t *ninvalid;       /* nlist: flagged samples of list[k] */
  uint8_t *bad;            /* nlist: 1 when the curve is unusable */
  double *mean;            /* nt: the mean of the usable curves (bad[k] == 0), 0 when none; summed
                              while the curves are written: each group of 4096 curves in 16 lanes
                              (lane l the curves k with (k - group start) % 16 == l, in list order:
                              conc_sum.h), a group's lanes added in lane order, the groups' sums in
                              group order, so the same bits for any thread count */
  int64_t *used;           /* the count of the usable curves */
  int64_t *count;          /* 3 totals of the flags: unusable voxels (sum of bad), flagged samples
                              (sum of ninvalid), voxels with interpolated samples (bad 0, ninvalid > 0) */
} pipe_convert_out;

/* Converts the curves of the listed voxels of in->sig into out->conc. 0, or -1 when out of
   memory for the mean's partial sums (nothing converted). */
int pipe_convert(const pipe_convert_in *in, const pipe_convert_out *out);
/* pipe_convert with the curves written back over series (the signal, frame-major: list[k]'s
   sample i at series[i * nvox + list[k]], the same values as pipe_convert's conc[k * nt + i]); the
   voxels not listed keep their samples. No curve array: what `lumen dce` uses (pipe_curves_get
   reads them). */
int pipe_convert_in_place(float *series, const pipe_convert_in *in, const pipe_convert_out *out);

/* The concentration curves of the fitted voxels as pipe_convert_in_place leaves them: list[k]'s
   sample i at base[i * nvox + list[k]], k < nlist. */
typedef struct pipe_curves {
  const float *base;
  int64_t nvox, nt;
  const int64_t *list;
  int64_t nlist;
} pipe_curves;
/* Curves [k0, k0 + n) into dst (n x nt, curve-major), on threads; simd: the vector level allowed
   (moves only: the same bits at every level). */
void pipe_curves_get(const pipe_curves *c, int64_t k0, int64_t n, float *dst, int threads, lumen_cpu_simd simd);

/* The sum of the signal (sig: nvox x nt) over the listed voxels of every step-th group of
   PIPE_SAMPLE_GROUP consecutive list entries (list[0..15], list[16 step..16 step + 15], ...) whose
   frames are all finite, frame by frame into y (nt), each in list order: what the baseline
   detection of `lumen dce` reads. Threads split the frames: the same bits for any thread count.
   Returns how many voxels were summed, or -1 when out of memory. */
enum { PIPE_SAMPLE_GROUP = 16 };
int64_t pipe_mean_signal_sample(const float *sig, int64_t nvox, int64_t nt, const int64_t *list, int64_t nlist,
                                int64_t step, int threads, double *y);

#endif
