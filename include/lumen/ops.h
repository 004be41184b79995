/* lumen: one registry of the image operations (filters, segmentations, statistics).
 *
 * Every op of filter.h and segment.h is one row of a table (src/filter/op_table.c), and every
 * one-file op of src/filter/ops/ (e.g. "clip": no C function of its own, entry NULL) one row
 * appended to it by the build (src/filter/op_native.h). A row holds its name and
 * aliases, one doc line, its kind, what it outputs, whether a CUDA path exists, and a descriptor
 * per option (name, type, offset in the op's options struct, range, doc; the default is read
 * from the op's lumen_OP_opts_init). The command line (`lumen filter`, `lumen segment`: op
 * lists, option parsing, range errors), the image batch engine (lumen_batch_callbacks.op), the
 * Python binding and the docs table (scripts/ops_table.py) are derived from it, so an op added
 * there appears everywhere (docs/ADDING_A_FILTER.md).
 *
 *     lumen_image *out = NULL;
 *     double thr = 0;
 *     lumen_op_run(ctx, "otsu", in, "bins=256", &out, &thr);
 *     lumen_op_run(ctx, "gaussian", in, "sigma=2 mode=reflect device=cpu", &out, NULL);
 *
 * Names: an op is found by its name or any alias (exact names first, '-' reads as '_'), e.g.
 * "gaussian_laplace" = "log" = "laplace", "abs" = "absolute". An option is found the same way
 * ("alpha" for FEBDS's variance_alpha); a bool option also reads "no_NAME" (= false).
 */
#ifndef LUMEN_OPS_H
#define LUMEN_OPS_H
#include "lumen/export.h"

#include <stddef.h>
#include "lumen/context.h"
#include "lumen/image.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lumen_op_kind {
  LUMEN_OP_KIND_FILTER = 0,   /* filter.h: one image in, one image out */
  LUMEN_OP_KIND_SEGMENT,      /* segment.h: algorithms composed of filters */
  LUMEN_OP_KIND_STATISTIC,    /* filter.h statistics: numbers, no image */
  LUMEN_OP_KIND_COUNT
} lumen_op_kind;

typedef enum lumen_op_output {
  LUMEN_OP_OUTPUT_IMAGE = 0,  /* a float image in the storage precision */
  LUMEN_OP_OUTPUT_MASK,       /* uint8 0/1 (or 0/foreground) */
  LUMEN_OP_OUTPUT_LABELS,     /* integer labels */
  LUMEN_OP_OUTPUT_VARIES,     /* a float image or a mask, by an option (binary, output_mask, labels) */
  LUMEN_OP_OUTPUT_NONE,       /* numbers only (statistics) */
  LUMEN_OP_OUTPUT_COUNT
} lumen_op_output;

typedef enum lumen_opt_type {
  LUMEN_OPT_INT = 0,          /* int */
  LUMEN_OPT_DOUBLE,           /* double */
  LUMEN_OPT_BOOL,             /* int 0/1; "NAME" alone = 1, "no_NAME" = 0 */
  LUMEN_OPT_ENUM,             /* an int-sized enum; values by name (enum_names) or number */
  LUMEN_OPT_UINT64,           /* uint64_t (a seed) */
  LUMEN_OPT_DOUBLE3,          /* double[3], x y z: "X[,Y[,Z]]" (the rest 0) */
  LUMEN_OPT_INT64_3,          /* int64_t[3] "X[,Y[,Z]]"; the count given goes to the int at count_offset */
  LUMEN_OPT_FLOATS,           /* const float *: "V,V,...", kept by the lumen_op_args */
  LUMEN_OPT_POINTS,           /* const int64_t *: one "X,Y[,Z]" point per setting (repeatable, appended);
                                 the number of points goes to the int64_t at count_offset */
  LUMEN_OPT_TYPE_COUNT
} lumen_opt_type;

/* lumen_op_option.flags */
#define LUMEN_OPT_MIN_OPEN 0x1u   /* value > min (else >= min) */
#define LUMEN_OPT_MAX_OPEN 0x2u   /* value < max (else <= max) */
#define LUMEN_OPT_ODD      0x4u   /* an odd integer */
#define LUMEN_OPT_ZERO_OK  0x8u   /* 0 is accepted besides the range (0 = automatic / off) */
#define LUMEN_OPT_NAN_OK   0x10u  /* NaN is accepted (= automatic); "auto" and "nan" read as NaN */

typedef struct lumen_op_option {
  const char *name;               /* the options struct's field name */
  const char *aliases;            /* other accepted names, space separated, or NULL */
  lumen_opt_type type;
  size_t offset;                  /* of the field in the op's options struct */
  size_t count_offset;            /* INT64_3 (an int), POINTS (an int64_t): where the count goes */
  double min, max;                /* range of INT, DOUBLE, UINT64, ENUM, DOUBLE3 (every value) and
                                     INT64_3 values; -HUGE_VAL / HUGE_VAL = unbounded */
  unsigned flags;                 /* LUMEN_OPT_* above */
  const char *const *enum_names;  /* ENUM: the names of values 0, 1, ..., NULL-terminated */
  const char *doc;                /* one line */
} lumen_op_option;

typedef struct lumen_op_info {
  const char *name;               /* "gaussian", "gaussian_laplace", "febds", ... */
  const char *aliases;            /* space separated, or NULL ("log laplace") */
  const char *doc;                /* one line */
  lumen_op_kind kind;
  lumen_op_output output;
  const char *scalar;             /* the number it returns besides the image ("threshold", "count",
                                     "bits", "entropy", "variance"), or NULL */
  const char *entry;              /* the C function it calls ("lumen_filter_gaussian"), or NULL (one-file
                                     ops of src/filter/ops/: run by name only) */
  size_t opts_size;               /* sizeof its options struct (which starts with a lumen_filter_exec) */
  int n_options;
  const lumen_op_option *options;
} lumen_op_info;

/* The ops in table order; lumen_op_at returns NULL out of range. */
LUMEN_API int lumen_op_count(void);
LUMEN_API const lumen_op_info *lumen_op_at(int index);
/* The op called name or with that alias (exact names first); NULL when none. */
LUMEN_API const lumen_op_info *lumen_op_find(const char *name);
/* The same among ops of one kind (the command line: `lumen filter tophat` is the morphology). */
LUMEN_API const lumen_op_info *lumen_op_find_kind(lumen_op_kind kind, const char *name);
/* The option of op called name or with that alias ('-' reads as '_'); NULL when none. */
LUMEN_API const lumen_op_option *lumen_op_option_find(const lumen_op_info *op, const char *name);
/* 1 when a CUDA path exists (a filter's kernel, or some step of a segmentation). */
LUMEN_API int lumen_op_has_cuda(const lumen_op_info *op);
/* The default of option index (from the op's opts_init) as a double (ENUM, BOOL: the number;
   DOUBLE3: the x value; lists: 0). LUMEN_ERR_INVALID_ARGUMENT for a bad op or index. */
LUMEN_API lumen_status lumen_op_option_default(const lumen_op_info *op, int index, double *value);
/* The default as the command line and docs write it ("1", "nearest", "auto", "off", "0,0,0"). */
LUMEN_API lumen_status lumen_op_option_default_text(const lumen_op_info *op, int index, char *buf, size_t size);
/* The allowed values in words ("> 0", "an odd size 1..255", "0 or 1..64", "reflect, nearest, ..."). */
LUMEN_API void lumen_op_option_range_text(const lumen_op_option *opt, char *buf, size_t size);
/* 1 when value lies in the option's range (numbers; ENUM: a valid index; BOOL: 0 or 1). */
LUMEN_API int lumen_op_option_value_ok(const lumen_op_option *opt, double value);
/* Fills opts (opts_size bytes at least) with the op's defaults (its lumen_OP_opts_init). */
LUMEN_API lumen_status lumen_op_opts_init(const lumen_op_info *op, void *opts, size_t size);

/* ------------------------------------------------------------------ running by name */

/* An op's options struct and the lists it points to, filled by name. */
typedef struct lumen_op_args lumen_op_args;

LUMEN_API lumen_status lumen_op_args_create(lumen_ctx *ctx, const char *op, lumen_op_args **out);
LUMEN_API void lumen_op_args_free(lumen_op_args *args);   /* NULL is allowed */
LUMEN_API const lumen_op_info *lumen_op_args_op(const lumen_op_args *args);
/* The options struct (the op's lumen_OP_opts; its exec member may be set directly). */
LUMEN_API void *lumen_op_args_opts(lumen_op_args *args);
/* Sets one option from text, checked against its range: "sigma" "2", "mode" "reflect",
   "binary" NULL (a bool alone = 1), "no_fill_holes" NULL, "kernel" "1,2,1". Also "device"
   ("cpu", "cuda:N": copied) and "precision" ("full", "half", "bfloat16"). Errors name the op,
   the option, the value and the range: "gaussian: sigma is -1, expected > 0". */
LUMEN_API lumen_status lumen_op_args_set(lumen_ctx *ctx, lumen_op_args *args, const char *key, const char *value);
/* Sets "key=value" items separated by spaces, tabs or ';' (a bare key is a bool switch). */
LUMEN_API lumen_status lumen_op_args_parse(lumen_ctx *ctx, lumen_op_args *args, const char *text);
/* Runs the op on in: *out the image (NULL for statistics), *scalar (may be NULL) its number, NaN
   when it has none. Checks of lists against the image (kernel size, seed coordinates) are here. */
LUMEN_API lumen_status lumen_op_args_run(lumen_ctx *ctx, lumen_op_args *args, const lumen_image *in,
                                         lumen_image **out, double *scalar);
/* The same in one call: options as lumen_op_args_parse text (NULL or "" = defaults). */
LUMEN_API lumen_status lumen_op_run(lumen_ctx *ctx, const char *op, const lumen_image *in, const char *options,
                                    lumen_image **out, double *scalar);
/* With keys[i] = values[i], i < n (values[i] NULL: a bool switch). */
LUMEN_API lumen_status lumen_op_run_kv(lumen_ctx *ctx, const char *op, const lumen_image *in, int n,
                                       const char *const *keys, const char *const *values, lumen_image **out,
                                       double *scalar);
/* With the op's own options struct (NULL = defaults), as the batch engine calls it. */
LUMEN_API lumen_status lumen_op_run_opts(lumen_ctx *ctx, const lumen_op_info *op, const lumen_image *in,
                                         const void *opts, lumen_image **out, double *scalar);

#ifdef __cplusplus
}
#endif
#endif
