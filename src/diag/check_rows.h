/* Rows of the health table (lumen_check), appended the one way lumen_health_checks documents:
   a row past capacity is counted, not written. Shared by the library's checks (health.c) and
   the command line's binding rows (src/cli/health_bindings.c). */
#ifndef LUMEN_DIAG_CHECK_ROWS_H
#define LUMEN_DIAG_CHECK_ROWS_H

#include <stdarg.h>
#include "core/internal.h"
#include "lumen/health.h"

void lumen_check_vappend(lumen_check *rows, int capacity, int *count, const char *name, lumen_check_status status,
                         const char *fmt, va_list ap);
void lumen_check_append(lumen_check *rows, int capacity, int *count, const char *name, lumen_check_status status,
                        const char *fmt, ...) LUMEN_PRINTF(6, 7);

#endif
