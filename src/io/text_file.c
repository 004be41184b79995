/* lumen_text_file_read: a small text file read whole, through the regular-file opener (io_open.c). */
#include "io/io_internal.h"

lumen_status lumen_text_file_read(lumen_ctx *ctx, const char *path, int64_t max_bytes, char **out, size_t *length) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  if (length) *length = 0;
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  LUMEN_REQUIRE(ctx, max_bytes >= 0, "lumen_text_file_read: max_bytes is %lld, expected >= 0", (long long)max_bytes);
  return lumen_io_slurp(ctx, "lumen_text_file_read", path, max_bytes ? max_bytes : INT64_C(64) << 20, out, length);
}
