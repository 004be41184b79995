#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* LUMEN_SIMD=off|avx2|avx512|auto caps the CPU vector instructions (lumen_ctx_set_cpu_simd): the
   library reads no environment, the tool does it for the user. 0 with a message for another value. */
static int apply_simd_env(const char *command, lumen_ctx *ctx) {
  static const struct { const char *name; lumen_cpu_simd limit; } names[] = {
      {"auto", LUMEN_CPU_SIMD_AUTO}, {"off", LUMEN_CPU_SIMD_OFF},   {"scalar", LUMEN_CPU_SIMD_OFF},
      {"0", LUMEN_CPU_SIMD_OFF},     {"avx2", LUMEN_CPU_SIMD_AVX2}, {"avx512", LUMEN_CPU_SIMD_AVX512}};
  const char *v = getenv("LUMEN_SIMD");
  if (!v || !*v) return 1;
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    if (!strcmp(v, names[k].name)) return lumen_ctx_set_cpu_simd(ctx, names[k].limit) == LUMEN_OK;
  lumen_cli_error(command, "LUMEN_SIMD is '%s' in the environment, expected off, avx2, avx512 or auto", v);
  return 0;
}

lumen_ctx *lumen_cli_context(const char *command, int verbose) {
  lumen_ctx *ctx = NULL;
  if (lumen_ctx_create(&ctx) != LUMEN_OK) {
    lumen_cli_error(command, "out of memory creating a context");
    return NULL;
  }
  if (!apply_simd_env(command, ctx)) {
    lumen_ctx_destroy(ctx);
    return NULL;
  }
  /* Errors are printed by the command itself with context; the log carries warnings and more. */
  lumen_ctx_set_log(ctx, log_to_stderr, (void *)command, verbose ? LUMEN_LOG_DEBUG : LUMEN_LOG_WARNING);
  return ctx;
}

int64_t lumen_cli_parse_size(const char *s) {
  /* plain decimal digits only: no sign, space, exponent, hex, "inf" or "nan" */
  size_t digits = s ? strspn(s, "0123456789.") : 0;
  if (digits == 0) return -1;
  char *end;
  double v = strtod(s, &end);
  if (end != s + digits || !isfinite(v) || v < 0) return -1;
  double scale = 1;
  switch (*end) {
    case 'k': case 'K': scale = 1024.0; ++end; break;
    case 'm': case 'M': scale = 1024.0 * 1024; ++end; break;
    case 'g': case 'G': scale = 1024.0 * 1024 * 1024; ++end; break;
    case 't': case 'T': scale = 1024.0 * 1024 * 1024 * 1024; ++end; break;
    default: break;
  }
  if (scale > 1 && *end == 'i') ++end;
  if (*end == 'B' || *end == 'b') ++end;
  if (*end) return -1;
  v *= scale;
  /* 2^63 is exactly representable: anything at or above it does not fit int64_t */
  if (!(v < 9223372036854775808.0)) return -1;
  return (int64_t)v;
}

int lumen_cli_finish_stdout(const char *command) {
  errno = 0;
  int bad = fflush(stdout) != 0 || ferror(stdout);
  int e = errno;
  if (!bad) return LUMEN_EXIT_OK;
  lumen_cli_error(command, "writing standard output failed: %s (the output is incomplete)",
                  e ? strerror(e) : "write error");
  return LUMEN_EXIT_FAILURE;
}

int lumen_cli_asks_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
  return 0;
}

int lumen_cli_no_io(const char *command) {
  lumen_cli_error(command, "this build has no NIfTI/JSON I/O (nifti_clib, cJSON): rebuild with them");
  return LUMEN_EXIT_FAILURE;
}

double lumen_cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
