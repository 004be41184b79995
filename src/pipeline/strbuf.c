/* The pipeline's growable string builder (run log JSON, console summary, report text).
 * On its own so that the configuration parser (and its fuzz target) can use it without the rest
 * of the pipeline. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/pipe_strbuf.h"

void pipe_sb_printf(pipe_sb *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->n;
    int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? room : 0, fmt, ap);
    va_end(ap);
    if (k < 0) { b->oom = 1; return; }
    if (b->s && (size_t)k < room) { b->n += (size_t)k; return; }
    size_t cap = b->cap ? b->cap * 2 : 1024;
    while (cap < b->n + (size_t)k + 1) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) { b->oom = 1; return; }
    b->s = s;
    b->cap = cap;
  }
}

void pipe_sb_json_str(pipe_sb *b, const char *s) {
  pipe_sb_printf(b, "\"");
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; ++p) {
    if (*p == '"') pipe_sb_printf(b, "\\\"");
    else if (*p == '\\') pipe_sb_printf(b, "\\\\");
    else if (*p == '\n') pipe_sb_printf(b, "\\n");
    else if (*p == '\t') pipe_sb_printf(b, "\\t");
    else if (*p < 0x20) pipe_sb_printf(b, "\\u%04x", *p);
    else pipe_sb_printf(b, "%c", *p);
  }
  pipe_sb_printf(b, "\"");
}

void pipe_sb_json_num(pipe_sb *b, double v) {
  if (isfinite(v)) pipe_sb_printf(b, "%.10g", v);
  else pipe_sb_printf(b, "null");
}

void pipe_sb_html(pipe_sb *b, const char *s) {
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; ++p) {
    switch (*p) {
      case '&': pipe_sb_printf(b, "&amp;"); break;
      case '<': pipe_sb_printf(b, "&lt;"); break;
      case '>': pipe_sb_printf(b, "&gt;"); break;
      case '"': pipe_sb_printf(b, "&quot;"); break;
      case '\'': pipe_sb_printf(b, "&#39;"); break;
      default:
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f) pipe_sb_printf(b, "&#xFFFD;");
        else pipe_sb_printf(b, "%c", *p);
    }
  }
}

void pipe_sb_href(pipe_sb *b, const char *name) {
  pipe_sb_printf(b, "./");
  for (const unsigned char *p = (const unsigned char *)(name ? name : ""); *p; ++p) {
    int plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                *p == '.' || *p == '_' || *p == '~' || *p == '/';
    if (plain) pipe_sb_printf(b, "%c", *p);
    else pipe_sb_printf(b, "%%%02X", *p);
  }
}

void pipe_sb_free(pipe_sb *b) {
  free(b->s);
  memset(b, 0, sizeof *b);
}
