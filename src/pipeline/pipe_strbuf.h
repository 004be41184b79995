/* A growable string for the run log, the report and JSON answers (strbuf.c): printf-style
   appends, JSON and HTML escaping. Out of memory sets oom and drops later appends. */
#ifndef LUMEN_PIPE_STRBUF_H
#define LUMEN_PIPE_STRBUF_H

#include <stddef.h>
#include "core/internal.h"

typedef struct pipe_sb {
  char *s;
  size_t n, cap;
  int oom;
} pipe_sb;
void pipe_sb_printf(pipe_sb *b, const char *fmt, ...) LUMEN_PRINTF(2, 3);
void pipe_sb_json_str(pipe_sb *b, const char *s);   /* quoted, escaped */
void pipe_sb_json_num(pipe_sb *b, double v);        /* null for NaN/Inf */
/* Text for HTML element content and quoted attribute values: & < > " ' escaped, control
   characters but tab and newline as U+FFFD (report.html; every user-controlled string). */
void pipe_sb_html(pipe_sb *b, const char *s);
/* A relative link target for href/src: "./" then NAME percent-encoded (all but A-Z a-z 0-9
   - . _ ~ /), so that no file name can become a URL scheme (javascript:) or break the attribute. */
void pipe_sb_href(pipe_sb *b, const char *name);
void pipe_sb_free(pipe_sb *b);

#endif
