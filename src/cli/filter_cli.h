/* lumen filter (cmd_filter.c) in parts: its op options (filter_args.c) and the op runners
   (filter_run.c). */
#ifndef LUMEN_CLI_FILTER_CLI_H
#define LUMEN_CLI_FILTER_CLI_H

#include "cli/image_cli.h"

/* The op options as given: a value and, where the op's default must be kept otherwise, a has_ flag. */
typedef struct fvals {
  double sigma, sigma_axis[3], truncate, cval, low, high, gamma, max_value, contrast, brightness, d0, width, k, r,
      alpha;
  int has_sigma, has_sigma_axis, has_truncate, has_cval, has_mode, has_low, has_high, has_gamma, has_max, has_bins,
      has_d0, has_width, has_order, has_window, has_k, has_r, has_alpha, has_size, has_radius, has_element, has_conn,
      has_units, has_spatial;
  lumen_boundary mode;
  lumen_units units;
  lumen_element element;
  int spatial, size, bins, order, window, fg, has_fg, outthr, discrete, correlate, binary, radius, conn, ddof;
  float *kernel;
  int nkernel;
  int64_t kdims[3];
  int kndim;
} fvals;

/* An op option at argv[*i] (its value, if any, steps *i): 1 consumed, 0 not an op option, -1 a bad
   value (message printed). */
int lumen_filtercli_opt(fvals *f, int argc, char **argv, int *i);
/* 1 when the values of the op's options are within the library's ranges that do not depend on
   the image; 0 with the message printed (a usage error). */
int lumen_filtercli_check_values(const char *op, const fvals *f);
/* The lumen_morph_op of erode, dilate, open, close, tophat; -1 for another op. */
int lumen_filtercli_morph_op(const char *op);
/* Runs the op on one image (the statistics ops excepted). *is_mask tells the writer; *scalar is
   the op's number (otsu: the threshold, label: the count). */
lumen_status lumen_filtercli_run(lumen_ctx *ctx, const char *op, const fvals *f, lumen_filter_exec ex,
                                 const lumen_image *in, lumen_image **out, int *is_mask, double *scalar);

#endif
