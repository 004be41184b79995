/* The registry of image operations behind include/lumen/ops.h: one row per op (op_table.c) with
   its public description (lumen_op_info, first, so that a row and its info share an address),
   its options' init and a run wrapper with one signature for all. The batch engine
   (src/scale/batch_ops.c) and the command line use the rows directly. */
#ifndef LUMEN_FILTER_OP_REGISTRY_H
#define LUMEN_FILTER_OP_REGISTRY_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "lumen/filter.h"
#include "lumen/ops.h"

/* What a list option held when the op runs: the values of its FLOATS option and the coordinates
   per point of its POINTS option (0 when none was given). */
typedef struct lumen_op_lists {
  int64_t n_floats;
  int point_dims;
} lumen_op_lists;

typedef struct lumen_op_row {
  lumen_op_info info;
  /* the defaults (lumen_OP_opts_init; calling it through a void (*)(void *) would be undefined,
     hence a wrapper per options type) */
  void (*init)(void *opts);
  /* runs the op on one image; *scalar: its number (threshold, count, bits) or left as given.
     NULL: no single-image run (mutual_information takes two images). */
  lumen_status (*run)(lumen_ctx *ctx, const lumen_image *in, const void *opts, lumen_image **out, double *scalar);
  /* lists given by name against the image (kernel size, seed coordinates) before run; NULL: none */
  lumen_status (*prepare)(lumen_ctx *ctx, void *opts, const lumen_image *in, const lumen_op_lists *lists);
  const char *dispatch;  /* filters: the kernel table's op (lumen_filter_op_has_cuda); NULL: cuda_steps */
  int cuda_steps;        /* ops without a kernel of their own: 1 when some step runs on CUDA */
  const char *charge;    /* its name in the batch's scratch table (src/scale/charge.c); NULL = info.name */
} lumen_op_row;

/* The table (op_table.c). */
int lumen_op_row_count(void);
const lumen_op_row *lumen_op_row_at(int index);
/* The row of an info the registry returned (NULL for any other pointer). */
const lumen_op_row *lumen_op_row_of(const lumen_op_info *op);
/* The index of a row in the table (-1 when none). */
int lumen_op_row_index(const lumen_op_info *op);

/* Runs the op of args with its options copied, exec set to *ex (NULL: as set) and edit(copy, user)
   applied (NULL: none): what a batch worker calls, args shared read-only between workers. */
lumen_status lumen_op_args_run_with(lumen_ctx *ctx, const lumen_op_args *args, const lumen_filter_exec *ex,
                                    void (*edit)(void *opts, void *user), void *user, const lumen_image *in,
                                    lumen_image **out, double *scalar);
/* Coordinates per point of the POINTS option given (0 when none). */
int lumen_op_args_point_dims(const lumen_op_args *args);

/* Common pieces of the rows: a range without bounds. */
#define LUMEN_OP_ANY_MIN (-HUGE_VAL)
#define LUMEN_OP_ANY_MAX HUGE_VAL

#endif
