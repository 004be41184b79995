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
/* Frees count images (NULL ones too), in order; LUMEN_TEST_FREE_IMAGES(a, b, ...) frees those named. */
void lumen_test_free_images(lumen_image *const *images, size_t count);
#define LUMEN_TEST_FREE_IMAGES(...)                                                                \
  lumen_test_free_images((lumen_image *const[]){__VA_ARGS__},                                      \
                         sizeof((lumen_image *const[]){__VA_ARGS__}) / sizeof(lumen_image *))
/* Asserts two images (non-NULL) have the same 4x4 affine, bit for bit. */
void lumen_test_assert_affines_equal(const lumen_image *a, const lumen_image *b);
/* A fresh context (asserted non-NULL); free with lumen_ctx_destroy. */
lumen_ctx *lumen_test_ctx(void);
/* "dir/name" in the next of 32 rotating buffers (valid until 32 more calls; not thread-safe). */
char *lumen_test_join(const char *dir, const char *name);
/* A new host image of dtype and dims, uninitialised (creation asserted); free with lumen_image_free. */
lumen_image *lumen_test_image(lumen_ctx *ctx, int ndim, const int64_t *dims, lumen_dtype dtype);

/* Convolve options from lumen_convolve_opts_init with the 2-D kernel k of nx x ny values (x fastest). */
lumen_convolve_opts lumen_test_convolve_2d(const float *k, int64_t nx, int64_t ny);

/* The batch engine's view of the op name (scale/batch_ops.h): its row, asserted, and in o (size
   bytes, at least the row's opts_size) its options from its init with option k of the op's registry
   row set to the double values[k], k < count. */
struct lumen_batch_named_op;
const struct lumen_batch_named_op *lumen_test_batch_op(const char *name, unsigned char *o, size_t size,
                                                       const double *values, int count);

/* The DCE time axis of the fit tests: n frames 5 s apart (t in minutes), and the Parker
   population AIF on it (Hct 0.42, arrival at delay minutes; plasma when plasma != 0). */
void lumen_test_parker_grid(int n, double delay, int plasma, double *t, double *cp);
/* nc curves of model on (t, cp) with uniform noise of amplitude noise from an LCG seeded with
   seed, curve-major (y[c * n + i]): curve c's parameter k is lo[k] + span[k] (c % mod[k]) / mod[k]. */
void lumen_test_noisy_curves(lumen_model model, int n, int nc, const double *t, const double *cp, const double *lo,
                             const double *span, const int *mod, double noise, uint64_t seed, float *y);

/* splitmix64: the next value of the sequence *state advances (reproducible test data). */
uint64_t lumen_test_splitmix64(uint64_t *state);
/* The next splitmix64 value as a double in [0, 1): its top 53 bits times 2^-53. */
double lumen_test_uniform(uint64_t *state);

/* What a progress callback saw: its calls, the last fraction and whether each fraction was above the
   one before (start rising at 1). It cancels (returns 1) at call number cancel_at_call (0-based;
   -1: never) and at any fraction >= cancel_at_fraction. */
typedef struct lumen_test_progress {
  int calls, rising, cancel_at_call;
  double last, cancel_at_fraction;
} lumen_test_progress;
/* The lumen_progress_fn that records into the lumen_test_progress user. */
int lumen_test_record_progress(void *user, double fraction, const char *stage);

/* The CUDA devices this machine has: their count (0 with the reason in reason when none or the
   probe failed), -1 when no context can be made. */
int lumen_test_cuda_devices(char *reason, size_t size);
/* Prints "<test>: skipped, no CUDA device (<reason>)": LUMEN_TEST_SKIP, main()'s answer then. */
int lumen_test_skip_without_cuda(const char *test, const char *reason);
/* Prints "<why>: skipped": LUMEN_TEST_SKIP, main()'s answer then. */
int lumen_test_skip(const char *why);
/* lumen_test_refdata_path(relative), or NULL with "reference data <relative> not found
   (LUMEN_REFDATA): skipped" printed. Caller frees. */
char *lumen_test_refdata_needed(const char *relative);
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

/* cmocka fixtures: a fresh context in *state before a test (the setup fails without one),
   destroyed after it, also when the test fails or skips. LUMEN_TEST_WITH_CTX(f): f's entry. */
int lumen_test_ctx_setup(void **state);
int lumen_test_ctx_teardown(void **state);
#define LUMEN_TEST_WITH_CTX(f) cmocka_unit_test_setup_teardown(f, lumen_test_ctx_setup, lumen_test_ctx_teardown)

/* cmocka fixtures of a test that works in a fresh folder: the test's initial state (prestate) is a
   char array of LUMEN_TEST_DIR_SIZE, which setup fills with a new folder /tmp/lumen-test-XXXXXX and
   teardown removes. lumen_test_dir_teardown removes the files the test left in it too; with
   lumen_test_dir_teardown_empty the test fails when it left any. */
#define LUMEN_TEST_DIR_SIZE 64
int lumen_test_dir_setup(void **state);
int lumen_test_dir_teardown(void **state);
int lumen_test_dir_teardown_empty(void **state);
/* f's entry in the fresh folder dir (removed with what is in it), and in one f must leave empty */
#define LUMEN_TEST_IN_DIR(f, dir) \
  cmocka_unit_test_prestate_setup_teardown(f, lumen_test_dir_setup, lumen_test_dir_teardown, dir)
#define LUMEN_TEST_IN_DIR_LEFT_EMPTY(f, dir) \
  cmocka_unit_test_prestate_setup_teardown(f, lumen_test_dir_setup, lumen_test_dir_teardown_empty, dir)

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
