/* The PNG header probe (src/io/png_probe.c): a PNG's size and bit depth from its IHDR chunk,
   without decoding it, so that a batch checks its inputs and its memory budget before any work. */
#ifndef LUMEN_IO_PNG_PROBE_H
#define LUMEN_IO_PNG_PROBE_H

#include <stdint.h>
#include "lumen/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads the IHDR chunk that must follow the signature. *found = 1 with width, height and bit
   depth set when it is there, 0 when the file starts with no PNG header (the full read
   decides). Refuses (a status and the context's error) a path that is no regular file (a FIFO
   would block) and a side over LUMEN_PNG_MAX_SIDE (the reader's cap), before any arithmetic. */
lumen_status lumen_png_probe(lumen_ctx *ctx, const char *path, int64_t *width, int64_t *height, int *bit_depth,
                             int *found);

#ifdef __cplusplus
}
#endif
#endif
