/* libFuzzer target: lumen_png_read (libpng through lumen's setjmp error handler, limits on
   width, height, bytes and chunks) with every to_float mode. Chunk CRCs are made valid unless
   bit 7 of the first byte is set. */
#include <zlib.h>
#include "fuzz_common.h"
#include "lumen/image.h"
#include "lumen/io.h"

/* Rewrites the CRC of every whole chunk after the 8-byte signature, so that mutations reach the
   decoder and lumen's conversions instead of stopping at libpng's CRC check. */
static void fix_crcs(uint8_t *p, size_t size) {
  size_t pos = 8;
  while (pos + 12 <= size) {
    uint32_t len = (uint32_t)p[pos] << 24 | (uint32_t)p[pos + 1] << 16 | (uint32_t)p[pos + 2] << 8 | p[pos + 3];
    if (len > size - pos - 12) break;
    uLong crc = crc32(0L, p + pos + 4, (uInt)len + 4);
    uint8_t *c = p + pos + 8 + len;
    c[0] = (uint8_t)(crc >> 24); c[1] = (uint8_t)(crc >> 16); c[2] = (uint8_t)(crc >> 8); c[3] = (uint8_t)crc;
    pos += 12 + (size_t)len;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lumen_ctx *ctx = fuzz_ctx();
  if (size < 1) return 0;
  uint8_t *copy = malloc(size);
  if (!copy) abort();
  memcpy(copy, data + 1, size - 1);
  if (!(data[0] & 0x80)) fix_crcs(copy, size - 1);
  const char *path = fuzz_file("png", ".png", copy, size - 1);
  free(copy);
  lumen_png_read_opts o = {.to_float = (data[0] & 0x7f) % 3, .max_bytes = INT64_C(64) << 20};
  lumen_image *im = NULL;
  int bits = 0;
  lumen_status s = lumen_png_read(ctx, path, &o, &im, &bits);
  if (s != LUMEN_OK && im) abort();
  lumen_image_free(im);
  unlink(path);
  return 0;
}
