/* The run of a one-file op (src/filter/op_native.h): the input checks every filter entry makes,
   the op's own checks, then the dispatcher with the op's kernel. */
#include <string.h>
#include "filter/op_native.h"

lumen_status lumen_native_op_run(lumen_ctx *ctx, const lumen_native_op *op, const lumen_image *in, const void *opts,
                                 lumen_image **out) {
  if (out) *out = NULL;
  if (!ctx) return LUMEN_ERR_INVALID_ARGUMENT;
  LUMEN_REQUIRE(ctx, op != NULL && opts != NULL, "lumen_native_op_run: op or opts is NULL");
  LUMEN_REQUIRE(ctx, in != NULL, "%s: argument 'in' is NULL, expected an image", op->name);
  LUMEN_REQUIRE(ctx, out != NULL, "%s: the output argument is NULL", op->name);
  LUMEN_REQUIRE(ctx, lumen_image_count(in) >= 1, "%s: the input image is empty", op->name);
  lumen_status s = op->check ? op->check(ctx, opts) : LUMEN_OK;
  if (s != LUMEN_OK) return s;
  lf_call c;
  memset(&c, 0, sizeof c);
  c.opts = opts;
  c.nin = 1;
  c.in[0] = in;
  c.has_out = 1;
  /* FLOAT32 = the storage precision (the dispatcher resolves it); masks are uint8 */
  c.out_dtype = op->output == LUMEN_OP_OUTPUT_MASK ? LUMEN_DTYPE_UINT8 : LUMEN_DTYPE_FLOAT32;
  if ((s = lf_geom_make(ctx, op->name, in, 0, &c.geom)) != LUMEN_OK) return s;
  return lf_dispatch_native(ctx, &c, &op->kernel, (const lumen_filter_exec *)opts, out);
}
