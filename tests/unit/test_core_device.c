/* Devices: parsing and formatting, enumeration on a machine without a GPU, device contexts. */
#include <string.h>
#include "test_support.h"

static void parse_and_format(void **state) {
  lumen_ctx *ctx = *state;
  lumen_device d;
  char buf[16];
  assert_int_equal(lumen_device_parse(ctx, "cpu", &d), LUMEN_OK);
  assert_int_equal(d.kind, LUMEN_DEVICE_CPU);
  assert_int_equal(lumen_device_parse(ctx, "cuda", &d), LUMEN_OK);
  assert_int_equal(d.kind, LUMEN_DEVICE_CUDA);
  assert_int_equal(d.index, 0);
  assert_int_equal(lumen_device_parse(ctx, "cuda:13", &d), LUMEN_OK);
  assert_int_equal(d.index, 13);
  assert_int_equal(lumen_device_format(d, buf, sizeof buf), LUMEN_OK);
  assert_string_equal(buf, "cuda:13");
  assert_int_equal(lumen_device_format(lumen_device_cpu(), buf, sizeof buf), LUMEN_OK);
  assert_string_equal(buf, "cpu");
  assert_int_equal(lumen_device_format(d, buf, 4), LUMEN_ERR_OVERFLOW);
  const char *bad[] = {"", "CPU", "cuda:", "cuda:-1", "cuda:1x", "cuda:99999", "gpu", "cuda:0:1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(lumen_device_parse(ctx, bad[i], &d), LUMEN_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(lumen_ctx_last_error(ctx), "expected"));
  }
  assert_int_equal(lumen_device_parse(ctx, NULL, &d), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_device_parse(ctx, "cpu", NULL), LUMEN_ERR_INVALID_ARGUMENT);
  lumen_device bogus = {LUMEN_DEVICE_KIND_COUNT, 0};
  assert_int_equal(lumen_device_format(bogus, buf, sizeof buf), LUMEN_ERR_INVALID_ARGUMENT);
}

/* This machine may or may not have a GPU: either way the probe answers, with a reason when not. */
static void enumerate_without_crashing(void **state) {
  lumen_ctx *ctx = *state;
  int count = -1;
  char reason[512] = "";
  lumen_status s = lumen_cuda_probe(ctx, &count, reason, sizeof reason);
  if (s == LUMEN_OK) {
    assert_true(count >= 1);
  } else {
    assert_true(s == LUMEN_ERR_NOT_BUILT || s == LUMEN_ERR_NO_DEVICE);
    assert_int_equal(count, 0);
    assert_true(strlen(reason) > 10);  /* a reason, not an empty string */
    if (!lumen_cuda_built()) assert_non_null(strstr(reason, "without CUDA"));
  }
  lumen_device_info infos[8];
  int n = 0;
  assert_int_equal(lumen_devices_list(ctx, infos, 8, &n), LUMEN_OK);
  assert_int_equal(n, 1 + count);
  assert_int_equal(infos[0].device.kind, LUMEN_DEVICE_CPU);
  assert_true(strlen(infos[0].name) > 0);
  assert_true(infos[0].memory_total > 0);
  assert_true(infos[0].memory_free > 0 && infos[0].memory_free <= infos[0].memory_total);
  assert_true(infos[0].multiprocessors >= 1);
  /* capacity 0 still counts */
  int n0 = 0;
  assert_int_equal(lumen_devices_list(ctx, NULL, 0, &n0), LUMEN_OK);
  assert_int_equal(n0, n);
  assert_int_equal(lumen_devices_list(ctx, NULL, 3, &n0), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_devices_list(ctx, infos, -1, &n0), LUMEN_ERR_INVALID_ARGUMENT);
}

static void device_context_falls_back(void **state) {
  lumen_ctx *ctx = *state;
  int count = 0;
  int have_gpu = lumen_cuda_probe(ctx, &count, NULL, 0) == LUMEN_OK;
  lumen_ctx_clear_error(ctx);
  lumen_device_ctx *dctx = NULL;
  /* a CUDA index beyond any machine's: always unusable */
  assert_int_not_equal(lumen_device_ctx_open(ctx, "cuda:1000", NULL, &dctx), LUMEN_OK);
  assert_null(dctx);
  assert_true(strlen(lumen_ctx_last_error(ctx)) > 0);
  assert_int_equal(lumen_device_ctx_open(ctx, "cuda:1000", "cpu", &dctx), LUMEN_OK);
  assert_non_null(dctx);
  assert_true(lumen_device_ctx_fell_back(dctx));
  assert_int_equal(lumen_device_ctx_device(dctx).kind, LUMEN_DEVICE_CPU);
  lumen_memory_stats st;
  assert_int_equal(lumen_device_ctx_memory(dctx, &st), LUMEN_OK);
  assert_true(st.total > 0 && st.free > 0 && st.allocated >= 0);
  assert_int_equal(lumen_device_ctx_release_cache(dctx), LUMEN_OK);
  lumen_device_ctx_close(dctx);
  if (!have_gpu) {
    assert_int_equal(lumen_device_ctx_open(ctx, "cuda:0", "cpu", &dctx), LUMEN_OK);
    assert_true(lumen_device_ctx_fell_back(dctx));
    lumen_device_ctx_close(dctx);
  }
  assert_int_equal(lumen_device_ctx_open(ctx, "tpu", "cpu", &dctx), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_device_ctx_open(ctx, "cuda:1000", "bogus", &dctx), LUMEN_ERR_INVALID_ARGUMENT);
  lumen_device_ctx_close(NULL);
}

static void host_memory_accounting(void **state) {
  lumen_ctx *ctx = *state;
  lumen_memory_stats before, during, after;
  assert_int_equal(lumen_device_memory(ctx, lumen_device_cpu(), &before), LUMEN_OK);
  const int64_t dims[2] = {1000, 250};
  lumen_image *im = lumen_test_image(ctx, 2, dims, LUMEN_DTYPE_FLOAT32);
  assert_int_equal(lumen_device_memory(ctx, lumen_device_cpu(), &during), LUMEN_OK);
  assert_true(during.allocated - before.allocated == 1000000);
  lumen_image_free(im);
  assert_int_equal(lumen_device_memory(ctx, lumen_device_cpu(), &after), LUMEN_OK);
  assert_true(after.allocated == before.allocated);
}

LUMEN_TEST_MAIN(LUMEN_TEST_WITH_CTX(parse_and_format),
                LUMEN_TEST_WITH_CTX(enumerate_without_crashing),
                LUMEN_TEST_WITH_CTX(device_context_falls_back),
                LUMEN_TEST_WITH_CTX(host_memory_accounting))
