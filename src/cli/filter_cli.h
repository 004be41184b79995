/* lumen filter and lumen segment over the op registry (include/lumen/ops.h): the op options as
   the command line spells them (filter_args.c: --low-sigma for low_sigma, --no-fill-holes, range
   errors naming the option), the op lists of --help, and the op runner (filter_run.c). */
#ifndef LUMEN_CLI_FILTER_CLI_H
#define LUMEN_CLI_FILTER_CLI_H

#include <stdio.h>
#include "cli/image_cli.h"
#include "filter/op_registry.h"

/* How a command words its usage errors (kept as each command always wrote them). */
typedef enum {
  LUMEN_OPCLI_FILTER = 0, /* "--sigma is -1, expected > 0"; "--mode is 'x', expected reflect, ..." */
  LUMEN_OPCLI_SEGMENT     /* "--k: k is 1, expected 2..16"; "--method is 'x', expected one of dog, ..." */
} lumen_opcli_style;

/* The op options given: the registry's args of the op. */
typedef struct fvals {
  const lumen_op_info *op;
  lumen_op_args *args;
  lumen_ctx *ctx; /* its own: the library's messages of list values (the command's starts later) */
} fvals;

/* An option of f->op at argv[*i] (its value, if any, steps *i): 1 consumed, 0 not one of the op's
   options, -1 a bad value (message printed: a usage error). */
int lumen_opcli_opt(const char *cmd, lumen_opcli_style style, fvals *f, int argc, char **argv, int *i);
/* Fresh args of op (and a context for their messages): 1, or 0 (out of memory: message printed). */
int lumen_opcli_begin(const char *cmd, const lumen_op_info *op, fvals *f);
void lumen_opcli_free(fvals *f);
/* The ops of kind with their options and defaults, for --help (kind2: a second kind, or -1). */
void lumen_opcli_help_ops(FILE *out, int kind, int kind2);
/* The names of the ops of kind (and kind2) for an error message: "gaussian, dog, ..." */
void lumen_opcli_op_names(char *buf, size_t size, int kind, int kind2);
/* A number of the options struct (a DOUBLE or INT field): for the cross checks of a command. */
double lumen_opcli_value(const fvals *f, const char *option);

/* The filter's cross checks that no single range says (dog: high_sigma > low_sigma): 1, or 0
   with the message printed. */
int lumen_filtercli_check_values(const fvals *f);
/* Runs the op on one image with the worker's exec. *is_mask tells the writer; *scalar is the
   op's number (otsu: the threshold, label: the count). */
lumen_status lumen_filtercli_run(lumen_ctx *ctx, const fvals *f, lumen_filter_exec ex, const lumen_image *in,
                                 lumen_image **out, int *is_mask, double *scalar);
/* 1 when the op's output is written as a mask (0/255 PNG): a uint8 result of a MASK op, or of a
   VARIES op whose labels option is off. */
int lumen_opcli_is_mask(const fvals *f, const lumen_image *out);

#endif
