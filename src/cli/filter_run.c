/* lumen filter's and lumen segment's op on one image: the registry's args with the worker's
   exec (src/filter/op_args.c), and whether the result is written as a mask; filter_cli.h. */
#include <string.h>
#include "cli/filter_cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO /* the image commands' options and runners: not in a build without NIfTI/JSON I/O */

int lumen_opcli_is_mask(const fvals *f, const lumen_image *out) {
  if (!out || lumen_image_dtype(out) != LUMEN_DTYPE_UINT8) return 0;
  if (f->op->output == LUMEN_OP_OUTPUT_MASK) return 1;
  if (f->op->output != LUMEN_OP_OUTPUT_VARIES) return 0;
  const lumen_op_option *labels = lumen_op_option_find(f->op, "labels");
  return !labels || lumen_opcli_value(f, "labels") == 0;
}

lumen_status lumen_filtercli_run(lumen_ctx *ctx, const fvals *f, lumen_filter_exec ex, const lumen_image *in,
                                 lumen_image **out, int *is_mask, double *scalar) {
  lumen_status s = lumen_op_args_run_with(ctx, f->args, &ex, NULL, NULL, in, out, scalar);
  *is_mask = s == LUMEN_OK && lumen_opcli_is_mask(f, *out);
  return s;
}
#endif /* LUMEN_HAVE_IO */
