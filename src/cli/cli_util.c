#include <stdarg.h>
#include <stdio.h>
#include "cli/cli.h"

void lumen_cli_error(const char *command, const char *fmt, ...) {
  fprintf(stderr, "lumen %s: ", command);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

void lumen_cli_json_string(FILE *out, const char *s) {
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
      case '"': fputs("\\\"", out); break;
      case '\\': fputs("\\\\", out); break;
      case '\n': fputs("\\n", out); break;
      case '\r': fputs("\\r", out); break;
      case '\t': fputs("\\t", out); break;
      default:
        if (*p < 0x20)
          fprintf(out, "\\u%04x", *p);
        else
          fputc(*p, out);
    }
  }
  fputc('"', out);
}

static void log_to_stderr(void *user, lumen_log_level level, const char *message) {
  static const char *const names[] = {"error", "warning", "info", "debug"};
  fprintf(stderr, "lumen %s: %s: %s\n", (const char *)user, names[level], message);
}

lumen_ctx *lumen_cli_context(const char *command, int verbose) {
  lumen_ctx *ctx = NULL;
  if (lumen_ctx_create(&ctx) != LUMEN_OK) {
    lumen_cli_error(command, "out of memory creating a context");
    return NULL;
  }
  /* Errors are printed by the command itself with context; the log carries warnings and more. */
  lumen_ctx_set_log(ctx, log_to_stderr, (void *)command, verbose ? LUMEN_LOG_DEBUG : LUMEN_LOG_WARNING);
  return ctx;
}
