/* libFuzzer target: lumen_png_read (libpng through lumen's setjmp error handler, limits on
   width, height, bytes and chunks) with every to_float mode. */
#include "fuzz_common.h"
#include "lumen/image.h"
#include "lumen/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lumen_ctx *ctx = fuzz_ctx();
  if (size < 1) return 0;
  const char *path = fuzz_file("png", ".png", data + 1, size - 1);
  lumen_png_read_opts o = {.to_float = data[0] % 3, .max_bytes = INT64_C(64) << 20};
  lumen_image *im = NULL;
  int bits = 0;
  lumen_status s = lumen_png_read(ctx, path, &o, &im, &bits);
  if (s != LUMEN_OK && im) abort();
  lumen_image_free(im);
  unlink(path);
  return 0;
}
