/* The library ops a public image batch runs by name (lumen_batch_callbacks.op, include/lumen/batch.h):
   the image-producing rows of the op registry (src/filter/op_table.c, include/lumen/ops.h), each
   with its options struct. Internal to src/scale. */
#ifndef LUMEN_DIST_BATCH_OPS_H
#define LUMEN_DIST_BATCH_OPS_H

#include <stddef.h>
#include "lumen/context.h"
#include "lumen/image.h"

typedef struct lumen_batch_named_op {
  const char *name;    /* the registry's name: "gaussian", "febds", ... */
  const char *cmd;     /* "filter" or "segment": the scratch table's command (src/scale/charge.c) */
  size_t opts_size;    /* sizeof its options struct (which starts with a lumen_filter_exec) */
  void (*init)(void *opts);
  /* runs the op; *value: its number (threshold, count, bits) or left NaN */
  lumen_status (*run)(lumen_ctx *ctx, const lumen_image *in, const void *opts, lumen_image **out, double *value);
  const char *charge;  /* the scratch table's name (NULL: by the morphology's operation) */
} lumen_batch_named_op;

/* The op called name or with that alias (lumen_op_find), when it writes an image; NULL otherwise. */
const lumen_batch_named_op *lumen_batch_named_op_find(const char *name);
/* The scratch table's name of the op with these options ("log" for gaussian_laplace, the
   morphology's operation for "morphology"), for lumen_dist_op_scratch. */
const char *lumen_batch_named_op_charge_name(const lumen_batch_named_op *op, const void *opts);

#endif
