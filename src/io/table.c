/* Numeric text tables: curves, frame times and AIFs for `lumen fit` (format in lumen/io.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/io_internal.h"

#define TABLE_DEFAULT_MAX ((int64_t)256 << 20)
#define TOKEN_MAX 127

typedef struct grow {
  void *p;
  size_t n, cap, elem;
} grow;

static int grow_push(grow *g, const void *v) {
  if (g->n == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 64;
    if (cap > SIZE_MAX / g->elem) return 0;
    void *q = realloc(g->p, cap * g->elem);
    if (!q) return 0;
    g->p = q;
    g->cap = cap;
  }
  memcpy((char *)g->p + g->n * g->elem, v, g->elem);
  g->n++;
  return 1;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
static int is_sep(char c) { return c == ',' || c == ';'; }

void lumen_table_clear(lumen_table *t) {
  if (!t) return;
  free(t->values);
  free(t->row_cols);
  free(t->row_line);
  if (t->names) {
    for (int64_t c = 0; c < t->cols; c++) free(t->names[c]);
    free(t->names);
  }
  memset(t, 0, sizeof *t);
}

typedef struct token {
  const char *p;
  size_t len;
  size_t col;  /* 1-based */
} token;

static void show(char *dst, const token *tk) {
  size_t n = tk->len > 40 ? 40 : tk->len;
  for (size_t i = 0; i < n; i++) dst[i] = (unsigned char)tk->p[i] >= 32 && (unsigned char)tk->p[i] < 127 ? tk->p[i] : '?';
  dst[n] = '\0';
  if (tk->len > 40) strcpy(dst + n, "...");
}

/* Splits one line (without '\n' and comment) into tokens; fails on empty fields. */
static lumen_status split_line(lumen_ctx *ctx, const char *name, int64_t line_no, const char *line, size_t len,
                               grow *tokens) {
  tokens->n = 0;
  size_t i = 0;
  while (i < len && is_space(line[i])) i++;
  if (i == len) return LUMEN_OK;
  for (;;) {
    if (i >= len || is_sep(line[i]))
      return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s:%lld:%zu: empty field (expected a number%s)", name,
                        (long long)line_no, i + 1, i < len ? " before the separator" : " after the separator");
    token tk = {line + i, 0, i + 1};
    while (i < len && !is_space(line[i]) && !is_sep(line[i])) i++;
    tk.len = (size_t)(line + i - tk.p);
    if (!grow_push(tokens, &tk)) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
    while (i < len && is_space(line[i])) i++;
    if (i == len) return LUMEN_OK;
    if (is_sep(line[i])) {
      i++;
      while (i < len && is_space(line[i])) i++;
    }
  }
}

/* 1: a number in *out; 0: not a number; -1: a number out of the range of a double (1e999). */
static int parse_number(const token *tk, double *out) {
  if (tk->len == 0 || tk->len > TOKEN_MAX) return 0;
  char buf[TOKEN_MAX + 1];
  memcpy(buf, tk->p, tk->len);
  buf[tk->len] = '\0';
  char *end = NULL;
  errno = 0;
  double v = strtod(buf, &end);
  if (end != buf + tk->len) return 0;
  if (errno == ERANGE && isinf(v)) return -1;  /* 1e999: out of range */
  *out = v;
  return 1;
}

lumen_status lumen_parse_table(lumen_ctx *ctx, const char *text, size_t length, const char *name,
                               const lumen_table_opts *opts, lumen_table *out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  memset(out, 0, sizeof *out);
  LUMEN_REQUIRE(ctx, text || length == 0, "lumen_parse_table: argument 'text' is NULL");
  if (!name) name = "<text>";
  int ragged = opts && opts->allow_ragged;
  int header = opts && opts->allow_header;
  grow tokens = {NULL, 0, 0, sizeof(token)};
  grow vals = {NULL, 0, 0, sizeof(double)};
  grow cols = {NULL, 0, 0, sizeof(int64_t)};
  grow lines = {NULL, 0, 0, sizeof(int64_t)};
  char **names = NULL;
  int64_t names_n = 0;
  lumen_status s = LUMEN_OK;
  size_t pos = 0;
  if (length >= 3 && (unsigned char)text[0] == 0xef && (unsigned char)text[1] == 0xbb && (unsigned char)text[2] == 0xbf)
    pos = 3;
  int64_t line_no = 0, first_cols = -1, first_line = 0;
  while (s == LUMEN_OK && pos < length) {
    line_no++;
    const char *line = text + pos;
    const char *nl = memchr(line, '\n', length - pos);
    size_t len = nl ? (size_t)(nl - line) : length - pos;
    pos += len + (nl ? 1 : 0);
    const char *hash = memchr(line, '#', len);
    if (hash) len = (size_t)(hash - line);
    const char *nul = memchr(line, '\0', len);
    if (nul) {
      s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s:%lld:%zu: a NUL byte: this is not a text file", name,
                     (long long)line_no, (size_t)(nul - line) + 1);
      break;
    }
    s = split_line(ctx, name, line_no, line, len, &tokens);
    if (s != LUMEN_OK || tokens.n == 0) continue;
    token *tk = tokens.p;
    int64_t row_start = (int64_t)vals.n;
    for (size_t k = 0; k < tokens.n; k++) {
      double v;
      int got = parse_number(&tk[k], &v);
      if (got < 0) {
        char shown[48];
        show(shown, &tk[k]);
        s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s:%lld:%zu: '%s' is out of the range of a double (magnitude at most "
                       "1.8e308)", name, (long long)line_no, tk[k].col, shown);
        break;
      }
      if (!got) {
        if (header && lines.n == 0 && !names) {
          /* the first row is a header: every token becomes a column name */
          names = calloc(tokens.n, sizeof *names);
          if (!names) {
            s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
            break;
          }
          names_n = (int64_t)tokens.n;
          for (size_t c = 0; c < tokens.n && s == LUMEN_OK; c++) {
            names[c] = malloc(tk[c].len + 1);
            if (!names[c]) {
              s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
              break;
            }
            memcpy(names[c], tk[c].p, tk[c].len);
            names[c][tk[c].len] = '\0';
          }
          vals.n = (size_t)row_start;
          header = 0;
          goto next_line;
        }
        char shown[48];
        show(shown, &tk[k]);
        s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s:%lld:%zu: '%s' is not a number", name, (long long)line_no,
                       tk[k].col, shown);
        break;
      }
      if (!grow_push(&vals, &v)) {
        s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
        break;
      }
    }
    if (s != LUMEN_OK) break;
    {
      int64_t n = (int64_t)tokens.n;
      header = 0;  /* only the first row may be a header */
      if (first_cols < 0) {
        first_cols = n;
        first_line = line_no;
      } else if (n != first_cols && !ragged) {
        size_t col = n > first_cols ? tk[first_cols].col : (size_t)1;
        s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s:%lld:%zu: row has %lld values, expected %lld as on line %lld "
                       "(rows of unequal length)", name, (long long)line_no, col, (long long)n,
                       (long long)first_cols, (long long)first_line);
        break;
      }
      if (!grow_push(&cols, &n) || !grow_push(&lines, &line_no)) {
        s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
        break;
      }
    }
  next_line:;
  }
  if (s == LUMEN_OK && lines.n == 0)
    s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: no numbers found (%lld lines, all blank, comments%s)", name,
                   (long long)line_no, names ? " or the header" : "");
  if (s == LUMEN_OK && names && names_n != first_cols && !ragged)
    s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s:%lld:1: the header has %lld names, the rows %lld values", name,
                   (long long)first_line, (long long)names_n, (long long)first_cols);
  if (s == LUMEN_OK) {
    int64_t rows = (int64_t)lines.n, maxc = 0;
    const int64_t *rc = cols.p;
    for (int64_t r = 0; r < rows; r++)
      if (rc[r] > maxc) maxc = rc[r];
    if (names && names_n > maxc) maxc = names_n;
    int64_t total;
    if (lumen_mul_i64(rows, maxc, &total) || (uint64_t)total > SIZE_MAX / sizeof(double)) {
      s = lumen_fail(ctx, LUMEN_ERR_OVERFLOW, "%s: %lld rows x %lld columns overflow", name, (long long)rows,
                     (long long)maxc);
    } else {
      double *m = malloc((size_t)total * sizeof(double));
      if (!m) {
        s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
      } else {
        const double *v = vals.p;
        size_t k = 0;
        for (int64_t r = 0; r < rows; r++)
          for (int64_t c = 0; c < maxc; c++) m[r * maxc + c] = c < rc[r] ? v[k++] : NAN;
        out->rows = rows;
        out->cols = maxc;
        out->values = m;
        out->row_cols = cols.p;
        out->row_line = lines.p;
        cols.p = lines.p = NULL;
        if (names) {
          if (names_n < maxc) {
            char **more = realloc(names, (size_t)maxc * sizeof *names);
            if (!more) {
              s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory", name);
            } else {
              names = more;
              for (int64_t c = names_n; c < maxc; c++) names[c] = NULL;
            }
          }
          out->names = names;
          names = NULL;
        }
      }
    }
  }
  if (names) {
    for (int64_t c = 0; c < names_n; c++) free(names[c]);
    free(names);
  }
  free(tokens.p);
  free(vals.p);
  free(cols.p);
  free(lines.p);
  if (s != LUMEN_OK) lumen_table_clear(out);
  return s;
}

lumen_status lumen_read_table(lumen_ctx *ctx, const char *path, const lumen_table_opts *opts, lumen_table *out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  memset(out, 0, sizeof *out);
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  int64_t max = opts && opts->max_bytes > 0 ? opts->max_bytes : TABLE_DEFAULT_MAX;
  char *text = NULL;
  size_t len = 0;
  lumen_status s = lumen_io_slurp(ctx, "lumen_read_table", path, max, &text, &len);
  if (s != LUMEN_OK) return s;
  s = lumen_parse_table(ctx, text, len, path, opts, out);
  free(text);
  return s;
}

lumen_status lumen_table_column(lumen_ctx *ctx, const lumen_table *table, int64_t c, double **out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  LUMEN_REQUIRE_NOT_NULL(ctx, table);
  LUMEN_REQUIRE(ctx, c >= 0 && c < table->cols, "lumen_table_column: column %lld, expected 0..%lld", (long long)c,
                (long long)table->cols - 1);
  double *v = malloc((size_t)(table->rows ? table->rows : 1) * sizeof *v);
  if (!v) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_table_column: out of host memory");
  for (int64_t r = 0; r < table->rows; r++) v[r] = table->values[r * table->cols + c];
  *out = v;
  return LUMEN_OK;
}
