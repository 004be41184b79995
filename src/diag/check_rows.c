/* Appending rows to a health table (check_rows.h). */
#include <stdio.h>
#include "diag/check_rows.h"

void lumen_check_vappend(lumen_check *rows, int capacity, int *count, const char *name, lumen_check_status status,
                         const char *fmt, va_list ap) {
  if (*count >= 0 && *count < capacity) {
    lumen_check *r = &rows[*count];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->status = status;
    vsnprintf(r->detail, sizeof r->detail, fmt, ap);
  }
  (*count)++;
}

void lumen_check_append(lumen_check *rows, int capacity, int *count, const char *name, lumen_check_status status,
                        const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lumen_check_vappend(rows, capacity, count, name, status, fmt, ap);
  va_end(ap);
}
