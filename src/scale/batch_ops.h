/* The library ops a public image batch runs by name (lumen_batch_callbacks.op, include/lumen/batch.h):
   filter ops and segmentation algorithms, each with its options struct. Internal to src/scale. */
#ifndef LUMEN_DIST_BATCH_OPS_H
#define LUMEN_DIST_BATCH_OPS_H

#include <stddef.h>
#include "lumen/context.h"
#include "lumen/image.h"

typedef struct lumen_batch_named_op {
  const char *name;    /* "gaussian", "febds", ... */
  const char *cmd;     /* "filter" or "segment": the scratch table's command (src/scale/charge.c) */
  size_t opts_size;    /* sizeof its options struct (which starts with a lumen_filter_exec) */
  void (*init)(void *opts);
  /* runs the op; *value: its number (threshold, count, bits) or left NaN */
  lumen_status (*run)(lumen_ctx *ctx, const lumen_image *in, const void *opts, lumen_image **out, double *value);
} lumen_batch_named_op;

/* The op called name (NULL when none). */
const lumen_batch_named_op *lumen_batch_named_op_find(const char *name);
/* The scratch table's name of the op with these options ("log" for gaussian_laplace, the
   morphology's operation for "morphology"), for lumen_dist_op_scratch. */
const char *lumen_batch_named_op_charge_name(const lumen_batch_named_op *op, const void *opts);

#endif
