/* Small helpers of the pipelines (util.c): time, paths, medians and percentiles, the arrival of a
   bolus in a curve. */
#ifndef LUMEN_PIPE_UTIL_H
#define LUMEN_PIPE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include "lumen/pipeline.h"

double pipe_now(void);
lumen_status pipe_mkdir_p(lumen_ctx *ctx, const char *dir);
void pipe_join(char *buf, size_t size, const char *dir, const char *name);
/* The summary a pipeline entry point fills, zeroed: sum, or dummy when the caller gave NULL. */
lumen_pipe_summary *pipe_summary_start(lumen_pipe_summary *sum, lumen_pipe_summary *dummy);
const char *pipe_basename(const char *path);
void pipe_prefix_from(const char *path, char *out, size_t size);
int pipe_file_exists(const char *path);
int64_t pipe_detect_arrival_frac(const double *y, int64_t n, int64_t b0, int64_t b1, double frac);
double pipe_median(double *v, int64_t n);            /* sorts v; NaNs must be removed */
double pipe_percentile(double *v, int64_t n, double p); /* sorts v */

#endif
