/* The arithmetic of stage A (signal -> concentration) in float, one sample at a time or along a
   row: C = log1p(u) k + c0 with x = s a, u = E1 - 1 = (x om) / (x ca - 1), where per voxel
   a = 1 / (M0 sin a), ca = cos a, om = 1 - cos a (rounded from double), c0 = -(1 / T10) / r1, and
   k = -1 / (TR r1); the valid range 0 < E1 < 1 is -1 < u < 0, and every other sample (NaN, an
   out-of-range signal) gives NaN.
   Why u and log1p: E1 is within ~1 % of 1 for most tissue samples, so log(E1) computed from E1
   would lose the low bits of E1 - 1; u is formed directly and log1p keeps them. The logarithm is
   lumen's own (conc_f32.c: a degree-7 polynomial after the exponent is split off, ~0.1 float ulp
   of approximation error), written once over a vector type and instantiated for 1, 4 (the baseline
   instruction set's vectors), 8 (AVX2) and 16 (AVX-512) lanes without fused multiply-adds, so that
   every level gives the same bits.
   Against lumen_spgr_signal_to_conc (double) a concentration differs by a few float ulps of the
   two terms it is the difference of, R1 / r1 and R10 / r1: ~5e-8 mM for a tissue T10 of 1 s
   (tests/unit/test_pipe_conc.c bounds it). */
#ifndef LUMEN_PIPELINE_CONC_F32_H
#define LUMEN_PIPELINE_CONC_F32_H
#include <stdint.h>
#include "lumen/context.h"

/* The level this CPU allows under the context's limit (lumen_ctx_cpu_simd): 0 the baseline
   instruction set (4 lanes; one at a time for a row's last samples), 1 AVX2 (8 lanes), 2 AVX-512
   (16 lanes). */
int pipe_conc_level(lumen_cpu_simd limit);

/* What the run log records for a level. */
const char *pipe_conc_name(int level);

/* out[j] = the concentration of sample s[j] with voxel constants a[j], ca[j], om[j], c0[j]
   (j < n), at the given level; the result does not depend on the level or on j's position.
   pf: NULL, or a row of n floats whose cache lines are prefetched one per 16 samples converted
   (spread over the row, not in a burst: the line fill buffers stay free for the row's own
   misses; a later row of the same voxels, frame-major, is asked for while this one converts). */
void pipe_conc_spgr_row(int level, int64_t n, const float *s, const float *a, const float *ca, const float *om,
                        const float *c0, float k, float *out, const float *pf);

/* The same for one sample (the rows' reference in tests/unit/test_pipe_conc.c). */
float pipe_conc_spgr_one(float s, float a, float ca, float om, float c0, float k);

#endif
