/* Resource faults in the core (docs/RELIABILITY.md): image sizes that overflow or cannot be
   allocated give LUMEN_ERR_OVERFLOW / LUMEN_ERR_OUT_OF_MEMORY with a message, the output pointer
   stays NULL, and the context stays usable (no leak: LeakSanitizer in the sanitizer build). */
#include "test_support.h"
#include <string.h>

static void image_overflow(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t dims[3] = {INT64_C(1) << 40, INT64_C(1) << 40, 2};
  lumen_image *im = (lumen_image *)1;
  lumen_status s = lumen_image_create(ctx, 3, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im);
  assert_int_equal(s, LUMEN_ERR_OVERFLOW);  /* 2^81 voxels: the product does not fit int64 */
  assert_null(im);
  assert_true(strlen(lumen_ctx_last_error(ctx)) > 0);
}

static void image_too_big(void **state) {
  lumen_ctx *ctx = *state;
  /* 10^15 voxels of float32 = 4 PB: no host can give it */
  const int64_t dims[3] = {100000, 100000, 100000};
  lumen_image *im = (lumen_image *)1;
  lumen_status s = lumen_image_create(ctx, 3, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im);
  assert_int_not_equal(s, LUMEN_OK);
  assert_null(im);
  assert_true(strlen(lumen_ctx_last_error(ctx)) > 0);
  /* the context is still usable */
  const int64_t small[2] = {4, 4};
  s = lumen_image_create(ctx, 2, small, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im);
  assert_int_equal(s, LUMEN_OK);
  lumen_image_free(im);
}

static void negative_dims(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t dims[2] = {4, -3};
  lumen_image *im = (lumen_image *)1;
  assert_int_equal(lumen_image_create(ctx, 2, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im),
                   LUMEN_ERR_INVALID_ARGUMENT);
  assert_null(im);
}

LUMEN_TEST_MAIN(LUMEN_TEST_WITH_CTX(image_overflow),
                LUMEN_TEST_WITH_CTX(image_too_big),
                LUMEN_TEST_WITH_CTX(negative_dims))
