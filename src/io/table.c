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

/* The state of one lumen_parse_table call. */
typedef struct table_parse {
  lumen_ctx *ctx;
  const char *name;
  int ragged, header;  /* header: the next row may still be a header */
  grow tokens, vals, cols, lines;
  char **names;
  int64_t names_n;
  int64_t line_no, first_cols, first_line;
} table_parse;

static lumen_status out_of_memory(table_parse *t) {
  return lumen_fail(t->ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory", t->name);
}

static lumen_status bad_token(table_parse *t, const token *tk, const char *what) {
  char shown[48];
  show(shown, tk);
  return lumen_fail(t->ctx, LUMEN_ERR_FORMAT, "%s:%lld:%zu: '%s' %s", t->name, (long long)t->line_no, tk->col, shown,
                    what);
}

/* The first row is a header: every token becomes a column name. */
static lumen_status take_header(table_parse *t) {
  const token *tk = t->tokens.p;
  t->names = calloc(t->tokens.n, sizeof *t->names);
  if (!t->names) return out_of_memory(t);
  t->names_n = (int64_t)t->tokens.n;
  for (size_t c = 0; c < t->tokens.n; c++) {
    t->names[c] = malloc(tk[c].len + 1);
    if (!t->names[c]) return out_of_memory(t);
    memcpy(t->names[c], tk[c].p, tk[c].len);
    t->names[c][tk[c].len] = '\0';
  }
  return LUMEN_OK;
}

/* Records the row's length: all rows as long as the first unless ragged rows are allowed. */
static lumen_status end_row(table_parse *t) {
  int64_t n = (int64_t)t->tokens.n;
  t->header = 0;  /* only the first row may be a header */
  if (t->first_cols < 0) {
    t->first_cols = n;
    t->first_line = t->line_no;
  } else if (n != t->first_cols && !t->ragged) {
    const token *tk = t->tokens.p;
    size_t col = n > t->first_cols ? tk[t->first_cols].col : (size_t)1;
    return lumen_fail(t->ctx, LUMEN_ERR_FORMAT, "%s:%lld:%zu: row has %lld values, expected %lld as on line %lld "
                      "(rows of unequal length)", t->name, (long long)t->line_no, col, (long long)n,
                      (long long)t->first_cols, (long long)t->first_line);
  }
  if (!grow_push(&t->cols, &n) || !grow_push(&t->lines, &t->line_no)) return out_of_memory(t);
  return LUMEN_OK;
}

/* The numbers of the tokens of one line (or, for the first row, maybe the header's names). */
static lumen_status parse_row(table_parse *t) {
  const token *tk = t->tokens.p;
  size_t row_start = t->vals.n;
  for (size_t k = 0; k < t->tokens.n; k++) {
    double v;
    int got = parse_number(&tk[k], &v);
    if (got < 0) return bad_token(t, &tk[k], "is out of the range of a double (magnitude at most 1.8e308)");
    if (!got) {
      if (!(t->header && t->lines.n == 0 && !t->names)) return bad_token(t, &tk[k], "is not a number");
      lumen_status s = take_header(t);
      t->vals.n = row_start;
      t->header = 0;
      return s;
    }
    if (!grow_push(&t->vals, &v)) return out_of_memory(t);
  }
  return end_row(t);
}

/* Reads the line at *pos (a comment from '#' on is dropped) and moves *pos past it. */
static lumen_status parse_line(table_parse *t, const char *text, size_t length, size_t *pos) {
  t->line_no++;
  const char *line = text + *pos;
  const char *nl = memchr(line, '\n', length - *pos);
  size_t len = nl ? (size_t)(nl - line) : length - *pos;
  *pos += len + (nl ? 1 : 0);
  const char *hash = memchr(line, '#', len);
  if (hash) len = (size_t)(hash - line);
  const char *nul = memchr(line, '\0', len);
  if (nul)
    return lumen_fail(t->ctx, LUMEN_ERR_FORMAT, "%s:%lld:%zu: a NUL byte: this is not a text file", t->name,
                      (long long)t->line_no, (size_t)(nul - line) + 1);
  lumen_status s = split_line(t->ctx, t->name, t->line_no, line, len, &t->tokens);
  if (s != LUMEN_OK || t->tokens.n == 0) return s;
  return parse_row(t);
}

/* Hands the names to out, one per column (NULL past the header's last name). */
static lumen_status give_names(table_parse *t, int64_t maxc, lumen_table *out) {
  if (t->names_n < maxc) {
    char **more = realloc(t->names, (size_t)maxc * sizeof *t->names);
    if (!more) return out_of_memory(t);  /* the names stay in t, freed with it */
    t->names = more;
    for (int64_t c = t->names_n; c < maxc; c++) t->names[c] = NULL;
  }
  out->names = t->names;
  t->names = NULL;
  return LUMEN_OK;
}

/* The rows as a matrix, short rows padded with NaN. */
static lumen_status build_table(table_parse *t, lumen_table *out) {
  int64_t rows = (int64_t)t->lines.n, maxc = 0;
  const int64_t *rc = t->cols.p;
  for (int64_t r = 0; r < rows; r++)
    if (rc[r] > maxc) maxc = rc[r];
  if (t->names && t->names_n > maxc) maxc = t->names_n;
  int64_t total;
  if (lumen_mul_i64(rows, maxc, &total) || (uint64_t)total > SIZE_MAX / sizeof(double))
    return lumen_fail(t->ctx, LUMEN_ERR_OVERFLOW, "%s: %lld rows x %lld columns overflow", t->name, (long long)rows,
                      (long long)maxc);
  double *m = malloc((size_t)total * sizeof(double));
  if (!m) return out_of_memory(t);
  const double *v = t->vals.p;
  size_t k = 0;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < maxc; c++) m[r * maxc + c] = c < rc[r] ? v[k++] : NAN;
  out->rows = rows;
  out->cols = maxc;
  out->values = m;
  out->row_cols = t->cols.p;
  out->row_line = t->lines.p;
  t->cols.p = t->lines.p = NULL;
  return t->names ? give_names(t, maxc, out) : LUMEN_OK;
}

static void table_parse_free(table_parse *t) {
  if (t->names) {
    for (int64_t c = 0; c < t->names_n; c++) free(t->names[c]);
    free(t->names);
  }
  free(t->tokens.p);
  free(t->vals.p);
  free(t->cols.p);
  free(t->lines.p);
}

lumen_status lumen_parse_table(lumen_ctx *ctx, const char *text, size_t length, const char *name,
                               const lumen_table_opts *opts, lumen_table *out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  memset(out, 0, sizeof *out);
  LUMEN_REQUIRE(ctx, text || length == 0, "lumen_parse_table: argument 'text' is NULL");
  table_parse t = {.ctx = ctx,
                   .name = name ? name : "<text>",
                   .ragged = opts && opts->allow_ragged,
                   .header = opts && opts->allow_header,
                   .tokens = {NULL, 0, 0, sizeof(token)},
                   .vals = {NULL, 0, 0, sizeof(double)},
                   .cols = {NULL, 0, 0, sizeof(int64_t)},
                   .lines = {NULL, 0, 0, sizeof(int64_t)},
                   .first_cols = -1};
  size_t pos = 0;
  if (length >= 3 && (unsigned char)text[0] == 0xef && (unsigned char)text[1] == 0xbb && (unsigned char)text[2] == 0xbf)
    pos = 3;  /* a UTF-8 byte order mark */
  lumen_status s = LUMEN_OK;
  while (s == LUMEN_OK && pos < length) s = parse_line(&t, text, length, &pos);
  if (s == LUMEN_OK && t.lines.n == 0)
    s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: no numbers found (%lld lines, all blank, comments%s)", t.name,
                   (long long)t.line_no, t.names ? " or the header" : "");
  if (s == LUMEN_OK && t.names && t.names_n != t.first_cols && !t.ragged)
    s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s:%lld:1: the header has %lld names, the rows %lld values", t.name,
                   (long long)t.first_line, (long long)t.names_n, (long long)t.first_cols);
  if (s == LUMEN_OK) s = build_table(&t, out);
  table_parse_free(&t);
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
