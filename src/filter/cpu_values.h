/* Internal helpers of the fused host primitives for the compat layers (cpu_scale_clamp.c,
 * cpu_otsu_linspace.c, cpu_fcm_values.c): the argument checks of a float32 host image, one
 * threaded pass for the finite range of float32 data (and whether every finite value is an
 * integer), and the counts of integer values. */
#ifndef LUMEN_FILTER_CPU_VALUES_H
#define LUMEN_FILTER_CPU_VALUES_H

#include <stdint.h>
#include "core/internal.h"

/* In a parallel region: this thread's number and the team's size as `type` t, nt (0 and 1
   without OpenMP); a thread's part of n voxels is [n * t / nt, n * (t + 1) / nt). */
#ifdef _OPENMP
#include <omp.h>
#define LF_THREAD_OF_TEAM(type, t, nt) const type t = (type)omp_get_thread_num(), nt = (type)omp_get_num_threads()
#else
#define LF_THREAD_OF_TEAM(type, t, nt) const type t = 0, nt = 1
#endif

typedef struct lf_value_range {
  float min, max;   /* of the finite voxels (0, 0 when there is none) */
  int64_t finite;   /* number of finite voxels */
  int integral;     /* every finite voxel is an integer of magnitude <= 2^24 */
} lf_value_range;

/* Threads for a pass over n voxels: the context's, one below 2^16 voxels. */
int lf_values_threads(const lumen_ctx *ctx, int64_t n);

/* Fails (LUMEN_ERR_INVALID_ARGUMENT, the message naming fn and what) unless img is a non-empty
   host image of dtype; count (may be -1: any) is its required voxel count. */
lumen_status lf_values_check(lumen_ctx *ctx, const char *fn, const char *what, const lumen_image *img,
                             lumen_dtype dtype, int64_t count);

void lf_value_range_f32(const float *x, int64_t n, int threads, lf_value_range *r);

/* counts[v - lo] = how many finite x equal v, for the integers v in [lo, lo + span) (x integral:
   lf_value_range said so; other values are not counted; |lo| <= 2^24, 1 <= span <= 2^24, and
   each thread takes 4 (span + 1) uint32 of scratch). counts has span entries; it is
   overwritten. Returns 0, or -1 when out of memory (counts then unset). */
int lf_integer_counts_f32(const float *x, int64_t n, int threads, int64_t lo, int64_t span, int64_t *counts);

/* One pass for data that are likely integers in [lo, lo + span) (12- or 16-bit images as float32):
   the counts as lf_integer_counts_f32 gives them and the range at once. 1 when every voxel is a
   finite integer inside the window (counts and *r set: r->integral 1, r->finite n), 0 when one is
   not (a NaN, an infinity, a fraction, a value outside: take lf_value_range_f32's pass instead;
   counts then unusable), -1 when out of memory. */
int lf_integer_window_f32(const float *x, int64_t n, int threads, int64_t lo, int64_t span, int64_t *counts,
                          lf_value_range *r);

#endif
