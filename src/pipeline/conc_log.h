/* The logarithm of stage A (signal -> concentration): w[k] = log(w[k]) for 0 < w[k] < 1, NaN for
   every other value (NaN included), over whole arrays. Level 0 is libm's scalar log, bit for bit
   what lumen_spgr_signal_to_conc computes; levels 1 (AVX2, 4 lanes) and 2 (AVX-512, 8 lanes) call
   glibc's vector log (libmvec), which differs from the scalar log in the last bit of about one
   double in four (at most 4 ulp by glibc's tables): the float concentrations stored by the stage
   differ from the scalar path's by at most one float ulp, and only where a value sits on a float
   rounding boundary. Each value depends only on its input, never on its position in the array. */
#ifndef LUMEN_PIPELINE_CONC_LOG_H
#define LUMEN_PIPELINE_CONC_LOG_H
#include <stdint.h>
#include "lumen/context.h"

/* The level this CPU and this build allow under the context's limit (lumen_ctx_cpu_simd):
   OFF gives 0, AVX2 at most 1. */
int pipe_conc_log_level(lumen_cpu_simd limit);

void pipe_conc_log(double *w, int64_t n, int level);

/* What the run log records: "libm scalar log", "libmvec AVX2 vector log", "libmvec AVX-512 vector log". */
const char *pipe_conc_log_name(int level);

#endif
