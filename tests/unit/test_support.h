/* Shared helpers for lumen's cmocka tests. Include after cmocka's prerequisites. */
#ifndef LUMEN_TEST_SUPPORT_H
#define LUMEN_TEST_SUPPORT_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include "lumen/lumen.h"

/* Reference data folder (LUMEN_REFDATA) or NULL when it does not exist. */
const char *lumen_test_refdata(void);
/* Full path of a file under the reference data folder; NULL if absent. Caller frees. */
char *lumen_test_refdata_path(const char *relative);
/* Asserts |a - b| <= atol + rtol |b| with a readable message. */
void lumen_test_assert_close(double a, double b, double atol, double rtol, const char *what);
/* A fresh context (asserted non-NULL); free with lumen_ctx_destroy. */
lumen_ctx *lumen_test_ctx(void);

#define LUMEN_TEST_SKIP 77
#endif
