/* GPU: device enumeration, images on the device, pinned memory, device contexts and memory
   statistics. Skips (77) on a machine without a usable CUDA device. */
#include <stdio.h>
#include <string.h>
#include "test_support.h"

static int gpu_count;

static void device_info(void **state) {
  lumen_ctx *ctx = *state;
  lumen_device_info info;
  lumen_device d = {LUMEN_DEVICE_CUDA, 0};
  assert_int_equal(lumen_device_get_info(ctx, d, &info), LUMEN_OK);
  assert_true(strlen(info.name) > 0);
  assert_true(info.memory_total > 0 && info.memory_free > 0 && info.memory_free <= info.memory_total);
  assert_true(info.compute_major >= 7);
  assert_true(info.multiprocessors > 0);
  lumen_device beyond = {LUMEN_DEVICE_CUDA, gpu_count};
  assert_int_not_equal(lumen_device_get_info(ctx, beyond, &info), LUMEN_OK);
}

static void images_round_trip_and_account(void **state) {
  lumen_ctx *ctx = *state;
  lumen_device d = {LUMEN_DEVICE_CUDA, gpu_count - 1};
  const int64_t dims[3] = {64, 32, 16};
  lumen_image *host = NULL, *dev = NULL, *dev2 = NULL, *back = NULL, *zero = NULL;
  assert_int_equal(lumen_image_create(ctx, 3, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), LUMEN_IMAGE_PINNED, &host),
                   LUMEN_OK);
  assert_true(lumen_image_is_pinned(host));
  float *h = lumen_image_data(host);
  for (int64_t i = 0; i < lumen_image_count(host); i++) h[i] = (float)i * 0.25f - 3.0f;
  lumen_memory_stats before, during, after;
  assert_int_equal(lumen_device_memory(ctx, d, &before), LUMEN_OK);
  assert_int_equal(lumen_image_to_device(ctx, host, d, &dev), LUMEN_OK);
  assert_int_equal(lumen_image_clone(ctx, dev, &dev2), LUMEN_OK);
  assert_int_equal(lumen_image_device(dev2).kind, LUMEN_DEVICE_CUDA);
  assert_int_equal(lumen_device_memory(ctx, d, &during), LUMEN_OK);
  assert_true(during.allocated - before.allocated == 2 * lumen_image_nbytes(host));
  assert_int_equal(lumen_image_to_device(ctx, dev2, lumen_device_cpu(), &back), LUMEN_OK);
  assert_memory_equal(lumen_image_data(back), h, (size_t)lumen_image_nbytes(host));
  assert_int_equal(lumen_image_create(ctx, 3, dims, LUMEN_DTYPE_FLOAT16, d, LUMEN_IMAGE_ZERO, &zero), LUMEN_OK);
  LUMEN_TEST_FREE_IMAGES(dev, dev2, zero);
  assert_int_equal(lumen_device_memory(ctx, d, &after), LUMEN_OK);
  assert_true(after.allocated == before.allocated);
  LUMEN_TEST_FREE_IMAGES(back, host);
}

static void device_context_and_oom(void **state) {
  lumen_ctx *ctx = *state;
  lumen_device_ctx *dctx = NULL;
  assert_int_equal(lumen_device_ctx_open(ctx, "cuda:0", "cpu", &dctx), LUMEN_OK);
  assert_false(lumen_device_ctx_fell_back(dctx));
  assert_int_equal(lumen_device_ctx_device(dctx).kind, LUMEN_DEVICE_CUDA);
  lumen_memory_stats st;
  assert_int_equal(lumen_device_ctx_memory(dctx, &st), LUMEN_OK);
  assert_true(st.total > 0 && st.free > 0);
  /* more than the device holds: a device out-of-memory status, not a crash */
  const int64_t dims[2] = {st.total / 4 + 1024, 2};
  lumen_image *im = NULL;
  assert_int_equal(lumen_image_create(ctx, 2, dims, LUMEN_DTYPE_FLOAT32, lumen_device_ctx_device(dctx), 0, &im),
                   LUMEN_ERR_DEVICE_OUT_OF_MEMORY);
  assert_null(im);
  assert_int_equal(lumen_device_ctx_release_cache(dctx), LUMEN_OK);
  lumen_device_ctx_close(dctx);
}

int main(void) {
  char reason[512] = "";
  gpu_count = lumen_test_cuda_devices(reason, sizeof reason);
  if (gpu_count < 0) return 1;
  if (gpu_count == 0) return lumen_test_skip_without_cuda("test_gpu_device", reason);
  const struct CMUnitTest tests[] = {
    LUMEN_TEST_WITH_CTX(device_info),
    LUMEN_TEST_WITH_CTX(images_round_trip_and_account),
    LUMEN_TEST_WITH_CTX(device_context_and_oom),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
