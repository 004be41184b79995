/* lumen_fit_execute on curves stored frame-major in a series (internal: `lumen dce` fits the
   concentration curves stage A leaves in place over the series, src/pipeline/conc.c). */
#ifndef LUMEN_FIT_SERIES_H
#define LUMEN_FIT_SERIES_H
#include <stdint.h>
#include "lumen/fit.h"

/* lumen_fit_execute with curve c's sample i at series[index[c] + i * stride] (c < n_curves,
   i < the plan's samples): the same results bit for bit as on those curves gathered curve-major.
   The lane path gathers each thread's block of curves at once (transposed where index[c] runs
   consecutively); the cuda tier gets them gathered curve-major. */
lumen_status lumen_fit_execute_series(lumen_ctx *ctx, const lumen_fit_plan *plan, int64_t n_curves,
                                      const float *series, const int64_t *index, int64_t stride, const float *consts,
                                      lumen_fit_results *results);

#endif
