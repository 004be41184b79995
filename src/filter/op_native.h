/* One-file image operations (docs/ADDING_A_FILTER.md): an op whose options struct, defaults,
 * checks, CPU kernel and registry row all live in one file of src/filter/ops/, registered without
 * an edit anywhere else. CMake lists every file of that folder (cmake/LumenNativeOps.cmake writes
 * generated/lumen_native_ops.inc, one LUMEN_NATIVE_OP(NAME) per file) and op_table.c appends their
 * rows to the table, so the command line, the batch engine and Python find the op by name.
 *
 * A file src/filter/ops/NAME.c (NAME a C identifier) ends with
 *
 *     LUMEN_NATIVE_FILTER(NAME, "aliases" or NULL, "one doc line", OUTPUT, NAME_opts, NAME_options,
 *                         NAME_init, NAME_check, NAME_cpu)
 *
 * where NAME_opts starts with `lumen_filter_exec exec` (device, precision, report), NAME_options is
 * its lumen_op_option array (LUMEN_NATIVE_OPTION below), NAME_init(NAME_opts *) sets the defaults,
 * NAME_check(ctx, const NAME_opts *) refuses bad values (the descriptors' ranges bind only text
 * options, lumen_op_args_set; a C caller's struct is checked here) and NAME_cpu is an lf_impl: it reads call->in_f32[0] (the input
 * as float32, geometry call->geom) and fills call->out (float32; the dispatcher rounds to the
 * storage precision and copies spacing and affine). A CUDA request runs it on the CPU with the reason
 * "no CUDA kernel for NAME yet". The op is reached by name only (lumen_op_run, `lumen filter NAME`,
 * lumen.run_op): its info.entry is NULL. */
#ifndef LUMEN_FILTER_OP_NATIVE_H
#define LUMEN_FILTER_OP_NATIVE_H

#include <stddef.h>
#include "filter/filter_internal.h"
#include "filter/op_registry.h"

/* What the registry needs to run a one-file op besides its row. */
typedef struct lumen_native_op {
  const char *name;
  lumen_op_output output;                                   /* IMAGE: float, MASK: uint8 */
  lumen_status (*check)(lumen_ctx *ctx, const void *opts);  /* NULL: no check of its own */
  lf_op kernel;                                             /* {name, CPU kernel, NULL} */
} lumen_native_op;

/* Checks the input, runs op->check, then dispatches op->kernel over the whole image (spatial dims
   = the image's, up to 3): what every one-file op's run is. */
lumen_status lumen_native_op_run(lumen_ctx *ctx, const lumen_native_op *op, const lumen_image *in, const void *opts,
                                 lumen_image **out);

/* The dispatcher (dispatch.c) for an op that is not in its table: device and precision from exec,
   inputs staged as float32, output allocated and rounded, the CPU rerun of a CUDA request. */
lumen_status lf_dispatch_native(lumen_ctx *ctx, lf_call *call, const lf_op *op, const lumen_filter_exec *exec,
                                lumen_image **out);

/* A descriptor of option FIELD of options struct T: LUMEN_NATIVE_OPTION(T, DOUBLE, lo, min, max,
   flags, enum names, "doc"); types INT DOUBLE BOOL ENUM UINT64 DOUBLE3 (include/lumen/ops.h). */
#define LUMEN_NATIVE_OPTION(T, TYPE, field, ...) {#field, NULL, LUMEN_OPT_##TYPE, offsetof(T, field), 0, __VA_ARGS__}
/* The same with other accepted names (space separated). */
#define LUMEN_NATIVE_OPTION_ALIAS(T, TYPE, field, aliases, ...) \
  {#field, aliases, LUMEN_OPT_##TYPE, offsetof(T, field), 0, __VA_ARGS__}

/* The row of filter NAME, named lumen_op_native_NAME (the name cmake/LumenNativeOps.cmake lists),
   with the one-signature wrappers of its init, check and run. OUTPUT: IMAGE or MASK. */
#define LUMEN_NATIVE_FILTER(NAME, ALIASES, DOC, OUTPUT, T, OPTIONS, INIT, CHECK, CPU)                             \
  static void native_init_##NAME(void *o) { INIT((T *)o); }                                                      \
  static lumen_status native_check_##NAME(lumen_ctx *ctx, const void *o) { return CHECK(ctx, (const T *)o); }    \
  static const lumen_native_op native_op_##NAME = {#NAME, LUMEN_OP_OUTPUT_##OUTPUT, native_check_##NAME,         \
                                                   {#NAME, CPU, NULL}};                                          \
  static lumen_status native_run_##NAME(lumen_ctx *ctx, const lumen_image *in, const void *o, lumen_image **out,  \
                                        double *scalar) {                                                        \
    (void)scalar;                                                                                                \
    return lumen_native_op_run(ctx, &native_op_##NAME, in, o, out);                                              \
  }                                                                                                              \
  extern const lumen_op_row lumen_op_native_##NAME;                                                              \
  const lumen_op_row lumen_op_native_##NAME = {                                                                  \
      {#NAME, ALIASES, DOC, LUMEN_OP_KIND_FILTER, LUMEN_OP_OUTPUT_##OUTPUT, NULL, NULL, sizeof(T),              \
       (int)(sizeof OPTIONS / sizeof OPTIONS[0]), OPTIONS},                                                      \
      native_init_##NAME, native_run_##NAME, NULL, NULL, 0, NULL}

#endif
