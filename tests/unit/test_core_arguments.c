/* Every public core function rejects bad arguments with a status and a message, never a crash. */
#include <string.h>
#include "test_support.h"

#define EXPECT_INVALID(call)                                      \
  do {                                                            \
    lumen_ctx_clear_error(ctx);                                   \
    assert_int_equal((call), LUMEN_ERR_INVALID_ARGUMENT);         \
    assert_true(strlen(lumen_ctx_last_error(ctx)) > 0);           \
  } while (0)

static void device_functions(void **state) {
  lumen_ctx *ctx = *state;
  lumen_device_info info;
  lumen_memory_stats st;
  lumen_device_ctx *dctx = NULL;
  lumen_device bogus = {LUMEN_DEVICE_KIND_COUNT, 0};
  EXPECT_INVALID(lumen_device_get_info(ctx, lumen_device_cpu(), NULL));
  EXPECT_INVALID(lumen_device_get_info(ctx, bogus, &info));
  EXPECT_INVALID(lumen_device_memory(ctx, lumen_device_cpu(), NULL));
  EXPECT_INVALID(lumen_devices_list(ctx, &info, 1, NULL));
  EXPECT_INVALID(lumen_device_ctx_open(ctx, NULL, "cpu", &dctx));
  EXPECT_INVALID(lumen_device_ctx_open(ctx, "cpu", NULL, NULL));
  assert_int_equal(lumen_device_ctx_memory(NULL, &st), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_device_ctx_release_cache(NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_device_format(lumen_device_cpu(), NULL, 8), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_device_format(lumen_device_cpu(), (char[4]){0}, 0), LUMEN_ERR_INVALID_ARGUMENT);
  int count = 0;
  EXPECT_INVALID(lumen_health_checks(ctx, NULL, 2, &count));
  EXPECT_INVALID(lumen_health_checks(ctx, NULL, 0, NULL));
}

static void image_functions(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t dims[2] = {2, 2};
  lumen_image *im = NULL, *out = NULL;
  assert_int_equal(lumen_image_create(ctx, 2, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im), LUMEN_OK);
  lumen_device bad = {LUMEN_DEVICE_CUDA, -5};
  EXPECT_INVALID(lumen_image_to_device(ctx, NULL, lumen_device_cpu(), &out));
  EXPECT_INVALID(lumen_image_to_device(ctx, im, bad, &out));
  EXPECT_INVALID(lumen_image_to_device(ctx, im, lumen_device_cpu(), NULL));
  EXPECT_INVALID(lumen_image_convert(ctx, NULL, LUMEN_DTYPE_FLOAT32, &out));
  EXPECT_INVALID(lumen_image_convert(ctx, im, LUMEN_DTYPE_COUNT, &out));
  EXPECT_INVALID(lumen_image_convert(ctx, im, LUMEN_DTYPE_FLOAT32, NULL));
  EXPECT_INVALID(lumen_image_clone(ctx, im, NULL));
  EXPECT_INVALID(lumen_image_set_spacing(ctx, NULL, (double[2]){1, 1}, 2));
  EXPECT_INVALID(lumen_image_set_spacing(ctx, im, NULL, 2));
  EXPECT_INVALID(lumen_image_set_spacing(ctx, im, (double[2]){1, 1}, 0));
  EXPECT_INVALID(lumen_image_set_affine(ctx, im, NULL));
  EXPECT_INVALID(lumen_image_set_affine(ctx, NULL, (double[16]){0}));
  EXPECT_INVALID(lumen_image_wrap(ctx, (float[4]){0}, 2, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), NULL));
  EXPECT_INVALID(lumen_image_wrap(ctx, (float[4]){0}, 9, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), &out));
  assert_null(out);
  assert_int_equal(lumen_image_get_affine(NULL, (double[16]){0}), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_image_get_affine(im, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_image_get_spacing(im, (double[8]){0}, 5), LUMEN_ERR_INVALID_ARGUMENT);
  /* accessors on NULL are safe */
  assert_int_equal(lumen_image_ndim(NULL), 0);
  assert_true(lumen_image_count(NULL) == 0);
  assert_null(lumen_image_data(NULL));
  lumen_image_free(im);
}

static void null_context_is_rejected(void **state) {
  (void)state;
  const int64_t dims[1] = {4};
  lumen_image *im = NULL;
  lumen_device d;
  assert_int_equal(lumen_image_create(NULL, 1, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, NULL),
                   LUMEN_ERR_INVALID_ARGUMENT);
  /* with a NULL context the checks still run; only the message has nowhere to go */
  assert_int_equal(lumen_image_create(NULL, 0, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im),
                   LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_device_parse(NULL, "nonsense", &d), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_ctx_set_default_device(NULL, "cpu"), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_ctx_set_progress(NULL, NULL, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_ctx_set_log(NULL, NULL, NULL, LUMEN_LOG_ERROR), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_ctx_set_default_precision(NULL, LUMEN_PRECISION_FULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_ctx_last_status(NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(lumen_ctx_last_error(NULL));
}

LUMEN_TEST_MAIN(LUMEN_TEST_WITH_CTX(device_functions),
                LUMEN_TEST_WITH_CTX(image_functions),
                cmocka_unit_test(null_context_is_rejected))
