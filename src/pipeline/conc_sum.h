/* Stage A's mean curve, summed across the voxels of a frame (rows of the frame-major series, or a
   block's frame-major tile) while they are in cache. Each frame's sum has 16 lanes: lane l takes
   the samples of the voxels j with j % 16 == l, in increasing j, in double; a block (of 64 or
   1024 voxels) starts at a multiple of 16 voxels from its group's start (conc.c's MEAN_BLK), so
   lane l of a group is the chain of its voxels k with (k - group start) % 16 == l, whichever way
   and on whichever thread the group's blocks were converted. conc.c adds a group's 16 lanes in
   lane order, then the groups in order: the mean does not depend on the path, the vector level
   or the thread count. */
#ifndef LUMEN_PIPELINE_CONC_SUM_H
#define LUMEN_PIPELINE_CONC_SUM_H
#include <stdint.h>

enum { PIPE_SUM_LANES = 16 };

/* acc[i * 16 + j % 16] += rows[i * rs + j] for rows i < nrows and voxels j < n with skip[j] == 0
   (skip NULL: every voxel), at the vector level of conc_f32.h (the same bits at every level). A
   skipped voxel's samples are not read as numbers (NaN there is fine). */
void pipe_rows_sum16(int level, const float *rows, int64_t rs, int64_t nrows, int64_t n, const uint8_t *skip,
                     double *acc);

#endif
