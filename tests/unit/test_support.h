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
/* Asserts two images (non-NULL) have the same dtype, size and bytes. */
void lumen_test_assert_images_equal(const lumen_image *a, const lumen_image *b);
/* A fresh context (asserted non-NULL); free with lumen_ctx_destroy. */
lumen_ctx *lumen_test_ctx(void);
/* "dir/name" in the next of 32 rotating buffers (valid until 32 more calls; not thread-safe). */
char *lumen_test_join(const char *dir, const char *name);
/* A new host image of dtype and dims, uninitialised (creation asserted); free with lumen_image_free. */
lumen_image *lumen_test_image(lumen_ctx *ctx, int ndim, const int64_t *dims, lumen_dtype dtype);

/* The DCE time axis of the fit tests: n frames 5 s apart (t in minutes), and the Parker
   population AIF on it (Hct 0.42, arrival at delay minutes; plasma when plasma != 0). */
void lumen_test_parker_grid(int n, double delay, int plasma, double *t, double *cp);
/* nc curves of model on (t, cp) with uniform noise of amplitude noise from an LCG seeded with
   seed, curve-major (y[c * n + i]): curve c's parameter k is lo[k] + span[k] (c % mod[k]) / mod[k]. */
void lumen_test_noisy_curves(lumen_model model, int n, int nc, const double *t, const double *cp, const double *lo,
                             const double *span, const int *mod, double noise, uint64_t seed, float *y);

/* The CUDA devices this machine has: their count (0 with the reason in reason when none or the
   probe failed), -1 when no context can be made. */
int lumen_test_cuda_devices(char *reason, size_t size);
/* 1 when the reference data folder holds relative; else 0, with "<what> reference data not
   found (LUMEN_REFDATA): skipping" printed. */
int lumen_test_refdata_has(const char *relative, const char *what);

/* The accelerated tier a validation test checks against its references and the standard tier:
   LUMEN_TEST_TIER (cpu, cpu_single, cuda, cuda:N; default cpu). A malformed value fails the test. */
const char *lumen_test_accel_tier(void);
/* 1 when the tier can run here; 0 (reason printed) for a cuda tier without a usable device. */
int lumen_test_tier_usable(const char *tier);

/* OSIPI reference CSVs: every array column is one field of space-separated numbers. */
typedef struct {
  int ncols, nrows;
  char **names;  /* ncols */
  char ***cells; /* nrows x ncols */
} lumen_test_csv;
lumen_test_csv *lumen_test_csv_load(const char *path);   /* NULL when unreadable */
void lumen_test_csv_free(lumen_test_csv *t);
int lumen_test_csv_col(const lumen_test_csv *t, const char *name);            /* -1 if absent */
double lumen_test_csv_num(const lumen_test_csv *t, int r, const char *name);  /* asserts the column exists */
int lumen_test_csv_arr(const lumen_test_csv *t, int r, const char *name, double **out); /* count; caller frees */

/* The main() of a test that works in a fresh folder /tmp/lumen-test-NAME-XXXXXX (its path in dir):
   runs the count tests as one group (setup and teardown around them, either may be NULL), then
   removes the folder, which teardown must have emptied. 1 when the folder cannot be made. */
int lumen_test_run_in_dir(char *dir, size_t size, const char *name, const struct CMUnitTest *tests, size_t count,
                          CMFixtureFunction setup, CMFixtureFunction teardown);
#define LUMEN_TEST_COUNT(tests) (sizeof(tests) / sizeof((tests)[0]))
/* LUMEN_TEST_MAIN in a fresh folder: lumen_test_run_in_dir(dir, sizeof dir, name, ...). */
#define LUMEN_TEST_MAIN_IN_DIR(dir, name, setup, teardown, ...)                                        \
  int main(void) {                                                                                    \
    const struct CMUnitTest tests[] = {__VA_ARGS__};                                                  \
    return lumen_test_run_in_dir(dir, sizeof dir, name, tests, LUMEN_TEST_COUNT(tests), setup, teardown); \
  }

/* The main() of a test program: runs the given cmocka_unit_test(...) entries as one group. */
#define LUMEN_TEST_MAIN(...)                          \
  int main(void) {                                    \
    const struct CMUnitTest tests[] = {__VA_ARGS__};  \
    return cmocka_run_group_tests(tests, NULL, NULL); \
  }

#define LUMEN_TEST_SKIP 77
#endif
