/* Shared helpers of the libFuzzer targets (fuzz/README.md). The readers that take a path get
   the input through a per-process temporary file; a quiet context collects the errors. */
#ifndef LUMEN_FUZZ_COMMON_H
#define LUMEN_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lumen/context.h"

static inline void fuzz_quiet_log(void *user, lumen_log_level level, const char *message) {
  (void)user; (void)level; (void)message;
}

static inline lumen_ctx *fuzz_ctx(void) {
  static lumen_ctx *ctx;
  if (!ctx) {
    if (lumen_ctx_create(&ctx) != LUMEN_OK) abort();
    lumen_ctx_set_log(ctx, fuzz_quiet_log, NULL, LUMEN_LOG_DEBUG);
  }
  return ctx;
}

/* Writes data to /tmp (or $TMPDIR)/lumen-fuzz-PID-TAG.SUFFIX and returns that path. */
static inline const char *fuzz_file(const char *tag, const char *suffix, const uint8_t *data, size_t size) {
  static char path[512];
  const char *tmp = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/lumen-fuzz-%ld-%s%s", tmp && *tmp ? tmp : "/tmp", (long)getpid(), tag, suffix);
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  if (fclose(f) != 0) abort();
  return path;
}

#endif
