/* lumen fit's numbers from text tables (lumen_read_table): sample grids, AIF values and curves,
   each value checked, messages naming the option and the line; fit_cli.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO
#include "cli/fit_cli.h"
#include "lumen/io.h"

#define CMD "fit"

/* Makes room for `more` values after the n there are (n + more < INT32_MAX / 2); 0, or -1. */
int lumen_fitcli_list_reserve(lumen_fitcli_list *l, int64_t more) {
  if (l->n + more > INT32_MAX / 2) return -1;
  double *v = realloc(l->v, sizeof(double) * (size_t)(l->n + more > 0 ? l->n + more : 1));
  if (!v) return -1;
  l->v = v;
  return 0;
}

/* The library's message without the function name it starts with. */
static const char *table_error(lumen_ctx *ctx) {
  const char *m = lumen_ctx_last_error(ctx);
  const char *prefix = "lumen_read_table: ";
  return strncmp(m, prefix, strlen(prefix)) == 0 ? m + strlen(prefix) : m;
}

/* Refuses a file larger than limit (> 0) before it is read: --memory-limit. */
static int within_limit(const char *what, const char *path, int64_t limit) {
  struct stat st;
  if (limit <= 0 || stat(path, &st) != 0 || (int64_t)st.st_size <= limit) return 0;
  lumen_cli_error(CMD, "--memory-limit: %s file '%s' has %lld bytes, over the memory limit of %lld bytes", what,
                  path, (long long)st.st_size, (long long)limit);
  return -1;
}

/* Every value of a table (rows of any length, read in order) into out; all must be finite.
   source: the file (is_file 1) or the inline list, for messages. */
static int table_values(const lumen_table *t, const char *what, const char *source, int is_file, lumen_fitcli_list *out) {
  int64_t count = 0;
  for (int64_t r = 0; r < t->rows; ++r)
    for (int64_t c = 0; c < t->row_cols[r]; ++c, ++count) { /* checked in order, then copied */
      double v = t->values[r * t->cols + c];
      if (!isfinite(v)) {
        if (is_file)
          lumen_cli_error(CMD, "%s file '%s' line %lld, value %lld: %g, expected a finite number", what, source,
                          (long long)t->row_line[r], (long long)c + 1, v);
        else
          lumen_cli_error(CMD, "%s '%s': value %lld is %g, expected a finite number", what, source, (long long)c + 1,
                          v);
        return -1;
      }
      if (out->n + count >= INT32_MAX / 2) goto too_many;
    }
  if (count == 0) return 0;
  if (lumen_fitcli_list_reserve(out, count) == 0) {
    for (int64_t r = 0; r < t->rows; ++r)
      for (int64_t c = 0; c < t->row_cols[r]; ++c) out->v[out->n++] = t->values[r * t->cols + c];
    return 0;
  }
too_many:
  lumen_cli_error(CMD, "%s '%s': out of memory or too many values", what, source);
  return -1;
}

/* Reads every number of a file (lumen_read_table: numbers separated by newlines, commas,
   semicolons or spaces, '#' comments) into out; each must be finite. */
int lumen_fitcli_read_file(lumen_ctx *ctx, const char *path, const char *what, int64_t limit, lumen_fitcli_list *out) {
  if (within_limit(what, path, limit)) return -1;
  lumen_table_opts o = {.allow_ragged = 1, .allow_header = 0, .max_bytes = limit};
  lumen_table t;
  if (lumen_read_table(ctx, path, &o, &t) != LUMEN_OK) {
    lumen_cli_error(CMD, "%s: %s", what, table_error(ctx));
    return -1;
  }
  int rc = table_values(&t, what, path, 1, out);
  lumen_table_clear(&t);
  return rc;
}

/* A FILE or an inline comma list. */
int lumen_fitcli_read_list(lumen_ctx *ctx, const char *arg, const char *what, int64_t limit, lumen_fitcli_list *out) {
  struct stat st;
  if (stat(arg, &st) == 0) return lumen_fitcli_read_file(ctx, arg, what, limit, out);
  lumen_table_opts o = {.allow_ragged = 1, .allow_header = 0, .max_bytes = 0};
  lumen_table t;
  char name[64];
  snprintf(name, sizeof name, "%s list", what);
  if (lumen_parse_table(ctx, arg, strlen(arg), name, &o, &t) != LUMEN_OK) {
    lumen_cli_error(CMD, "%s (expected a file or a comma-separated list of numbers)", lumen_ctx_last_error(ctx));
    return -1;
  }
  int rc = table_values(&t, what, arg, 0, out);
  lumen_table_clear(&t);
  return rc;
}

/* The curves: one per line, n finite-or-NaN values each (a NaN sample marks the curve invalid,
   state 3); the table's values are taken over as *curves (rows x n). */
int lumen_fitcli_read_curves(lumen_ctx *ctx, const char *path, int n, const char *per, int64_t limit, double **curves,
                       int64_t *count) {
  if (within_limit("--curves", path, limit)) return -1;
  lumen_table_opts o = {.allow_ragged = 1, .allow_header = 0,
                        .max_bytes = limit > 0 ? limit : lumen_io_default_max_bytes()};
  lumen_table t;
  if (lumen_read_table(ctx, path, &o, &t) != LUMEN_OK) {
    lumen_cli_error(CMD, "--curves: %s", table_error(ctx));
    return -1;
  }
  for (int64_t r = 0; r < t.rows; ++r)
    if (t.row_cols[r] != n) {
      lumen_cli_error(CMD, "--curves file '%s' line %lld has %lld values, expected %d (one per %s)", path,
                      (long long)t.row_line[r], (long long)t.row_cols[r], n, per);
      lumen_table_clear(&t);
      return -1;
    }
  for (int64_t k = 0; k < t.rows * n; ++k)
    if (isinf(t.values[k])) {
      lumen_cli_error(CMD, "--curves file '%s' line %lld, value %lld: %g, expected a finite number or nan", path,
                      (long long)t.row_line[k / n], (long long)(k % n) + 1, t.values[k]);
      lumen_table_clear(&t);
      return -1;
    }
  *curves = t.values;
  *count = t.rows;
  t.values = NULL;
  lumen_table_clear(&t);
  return 0;
}
#endif
