/* Context: last error per context, log and progress callbacks, cancellation, defaults, checks. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "core/internal.h"
#include "test_support.h"
#include "lumen_build_config.h"

static void defaults(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  char dev[32];
  assert_int_equal(lumen_ctx_default_device(ctx, dev, sizeof dev), LUMEN_OK);
  assert_string_equal(dev, "cpu");
  assert_int_equal(lumen_ctx_default_precision(ctx), LUMEN_PRECISION_FULL);
  assert_true(lumen_ctx_threads(ctx) >= 1);
  assert_string_equal(lumen_ctx_last_error(ctx), "");
  assert_int_equal(lumen_ctx_last_status(ctx), LUMEN_OK);
  lumen_ctx_destroy(ctx);
  lumen_ctx_destroy(NULL); /* allowed */
}

static void errors_are_per_context(void **state) {
  (void)state;
  lumen_ctx *a = lumen_test_ctx(), *b = lumen_test_ctx();
  assert_int_equal(lumen_ctx_set_threads(a, -3), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(a), "threads is -3"));
  assert_int_equal(lumen_ctx_last_status(a), LUMEN_ERR_INVALID_ARGUMENT);
  assert_string_equal(lumen_ctx_last_error(b), "");
  lumen_ctx_clear_error(a);
  assert_string_equal(lumen_ctx_last_error(a), "");
  assert_int_equal(lumen_ctx_last_status(a), LUMEN_OK);
  lumen_ctx_destroy(a);
  lumen_ctx_destroy(b);
}

static void setters_check_arguments(void **state) {
  lumen_ctx *ctx = *state;
  assert_int_equal(lumen_ctx_create(NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_ctx_set_threads(NULL, 1), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_ctx_set_threads(ctx, 3), LUMEN_OK);
  assert_int_equal(lumen_ctx_threads(ctx), 3);
  assert_int_equal(lumen_ctx_set_default_precision(ctx, LUMEN_PRECISION_COUNT), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "precision"));
  assert_int_equal(lumen_ctx_set_default_precision(ctx, (lumen_precision)-1), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_ctx_set_default_precision(ctx, LUMEN_PRECISION_BFLOAT16), LUMEN_OK);
  assert_int_equal(lumen_ctx_default_precision(ctx), LUMEN_PRECISION_BFLOAT16);
  assert_int_equal(lumen_ctx_set_default_device(ctx, "gpu7"), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "gpu7"));
  assert_int_equal(lumen_ctx_set_default_device(ctx, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_ctx_set_default_device(ctx, "cuda:2"), LUMEN_OK);
  char dev[32];
  assert_int_equal(lumen_ctx_default_device(ctx, dev, sizeof dev), LUMEN_OK);
  assert_string_equal(dev, "cuda:2");
  assert_int_equal(lumen_ctx_set_log(ctx, NULL, NULL, LUMEN_LOG_LEVEL_COUNT), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_ctx_default_device(ctx, NULL, 4), LUMEN_ERR_INVALID_ARGUMENT);
}

typedef struct {
  int calls;
  lumen_log_level last_level;
  char last[256];
} log_capture;

static void capture_log(void *user, lumen_log_level level, const char *message) {
  log_capture *c = user;
  c->calls++;
  c->last_level = level;
  snprintf(c->last, sizeof c->last, "%s", message);
}

static void log_callback_filters_by_level(void **state) {
  lumen_ctx *ctx = *state;
  log_capture cap = {0};
  assert_int_equal(lumen_ctx_set_log(ctx, capture_log, &cap, LUMEN_LOG_WARNING), LUMEN_OK);
  lumen_log(ctx, LUMEN_LOG_INFO, "not shown %d", 1);
  assert_int_equal(cap.calls, 0);
  lumen_log(ctx, LUMEN_LOG_WARNING, "shown %d", 2);
  assert_int_equal(cap.calls, 1);
  assert_string_equal(cap.last, "shown 2");
  /* errors are logged too */
  lumen_ctx_set_threads(ctx, -1);
  assert_int_equal(cap.calls, 2);
  assert_int_equal(cap.last_level, LUMEN_LOG_ERROR);
  assert_non_null(strstr(cap.last, "threads"));
}

static void progress_can_cancel(void **state) {
  lumen_ctx *ctx = *state;
  assert_int_equal(lumen_progress(ctx, 0.5, "nothing registered"), LUMEN_OK);
  lumen_test_progress p = {.cancel_at_call = -1, .cancel_at_fraction = 0.75};
  assert_int_equal(lumen_ctx_set_progress(ctx, lumen_test_record_progress, &p), LUMEN_OK);
  assert_int_equal(lumen_progress(ctx, 0.5, "fit"), LUMEN_OK);
  assert_int_equal(lumen_progress(ctx, 2.0, "fit"), LUMEN_ERR_CANCELLED); /* clamped to 1 */
  assert_int_equal(p.calls, 2);
  assert_true(p.last == 1.0);
  assert_int_equal(lumen_ctx_last_status(ctx), LUMEN_ERR_CANCELLED);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "cancelled"));
}

/* Many threads failing on one context: the message read back is always one whole message. */
static lumen_ctx *shared_ctx;
static void *fail_repeatedly(void *arg) {
  long id = (long)arg;
  for (int i = 0; i < 2000; i++) {
    lumen_fail(shared_ctx, LUMEN_ERR_FORMAT, "thread %ld message %d end", id, i);
    const char *m = lumen_ctx_last_error(shared_ctx);
    if (strncmp(m, "thread ", 7) != 0 || strstr(m, " end") == NULL) return (void *)1;
  }
  return NULL;
}

static void last_error_is_thread_safe(void **state) {
  (void)state;
  shared_ctx = lumen_test_ctx();
  pthread_t th[4];
  for (long i = 0; i < 4; i++) assert_int_equal(pthread_create(&th[i], NULL, fail_repeatedly, (void *)i), 0);
  for (int i = 0; i < 4; i++) {
    void *r = NULL;
    pthread_join(th[i], &r);
    assert_null(r);
  }
  lumen_ctx_destroy(shared_ctx);
}

static void checked_arithmetic(void **state) {
  (void)state;
  int64_t r = 0;
  assert_int_equal(lumen_mul_i64(INT64_MAX / 2, 2, &r), 0);
  assert_true(r == INT64_MAX - 1);
  assert_int_equal(lumen_mul_i64(INT64_MAX / 2 + 1, 2, &r), 1);
  assert_int_equal(lumen_add_i64(INT64_MAX, 1, &r), 1);
  assert_int_equal(lumen_add_i64(-5, 7, &r), 0);
  assert_true(r == 2);
}

static void version_and_build(void **state) {
  (void)state;
  assert_string_equal(lumen_version(), LUMEN_VERSION_STRING);
  assert_non_null(strstr(lumen_build_info(), LUMEN_VERSION_STRING));
}

LUMEN_TEST_MAIN(cmocka_unit_test(defaults),
                cmocka_unit_test(errors_are_per_context),
                LUMEN_TEST_WITH_CTX(setters_check_arguments),
                LUMEN_TEST_WITH_CTX(log_callback_filters_by_level),
                LUMEN_TEST_WITH_CTX(progress_can_cancel),
                cmocka_unit_test(last_error_is_thread_safe),
                cmocka_unit_test(checked_arithmetic),
                cmocka_unit_test(version_and_build))
