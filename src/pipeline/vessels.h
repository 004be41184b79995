/* The vessels of a DCE signal series, for --aif auto (src/pipeline/vessels.c; the rule is
   docs/PIPELINES.md's "AIF auto"): behind this small interface so that the detection is tested on
   synthetic images (tests/unit/test_pipe_vessels.c) without a run. */
#ifndef LUMEN_PIPE_VESSELS_H
#define LUMEN_PIPE_VESSELS_H
#include <stdint.h>

/* sig: nt frames of nv voxels (frame-major, voxel fastest); b0, b1: the baseline frames the
   stability of a candidate's baseline is judged on. *out: the voxels of the vessels, by enhancement
   (largest first), at most max(8, min(200, candidates / 20)); returns their count (0: none, *out
   may then be NULL; owned by the caller). */
int64_t pipe_detect_vessels(const float *sig, int64_t nv, int64_t nt, int64_t b0, int64_t b1, int64_t **out);

#endif
