/* The PNG header probe (src/io/png_probe.h): 8 signature bytes, then the IHDR chunk's length,
   type, width, height and bit depth, all big-endian. */
#include <stdio.h>
#include <string.h>
#include "io/io_internal.h"
#include "io/png_probe.h"

static uint32_t big_endian32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

lumen_status lumen_png_probe(lumen_ctx *ctx, const char *path, int64_t *width, int64_t *height, int *bit_depth,
                             int *found) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  unsigned char h[26];
  FILE *f = NULL;
  *found = 0;
  lumen_status s = lumen_io_fopen_regular(ctx, "PNG input", path, &f);
  if (s != LUMEN_OK) return s;
  size_t got = fread(h, 1, sizeof h, f);
  fclose(f);
  if (got != sizeof h || memcmp(h, sig, 8) != 0 || memcmp(h + 12, "IHDR", 4) != 0) return LUMEN_OK;
  uint32_t w = big_endian32(h + 16), ht = big_endian32(h + 20);
  if (w == 0 || ht == 0) return LUMEN_OK;
  if (w > LUMEN_PNG_MAX_SIDE || ht > LUMEN_PNG_MAX_SIDE)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_DATA,
                      "'%s': PNG IHDR width %lu x height %lu, expected at most %u per side (the PNG reader's cap): "
                      "a corrupt or hostile header, or not an image to process whole",
                      path, (unsigned long)w, (unsigned long)ht, LUMEN_PNG_MAX_SIDE);
  *width = w;
  *height = ht;
  *bit_depth = h[24];
  *found = 1;
  return LUMEN_OK;
}
