/* Images: create, wrap, clone, device moves, conversion, geometry and every argument check. */
#include <math.h>
#include <string.h>
#include "test_support.h"

static void create_and_query(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t dims[4] = {5, 4, 3, 2};
  lumen_image *im = NULL;
  assert_int_equal(lumen_image_create(ctx, 4, dims, LUMEN_DTYPE_INT16, lumen_device_cpu(), LUMEN_IMAGE_ZERO, &im),
                   LUMEN_OK);
  assert_int_equal(lumen_image_ndim(im), 4);
  for (int i = 0; i < 4; i++) assert_true(lumen_image_dim(im, i) == dims[i]);
  assert_true(lumen_image_dim(im, 7) == 1);
  assert_true(lumen_image_count(im) == 120);
  assert_true(lumen_image_nbytes(im) == 240);
  assert_int_equal(lumen_image_dtype(im), LUMEN_DTYPE_INT16);
  assert_int_equal(lumen_image_device(im).kind, LUMEN_DEVICE_CPU);
  assert_true(lumen_image_owns_data(im));
  const int16_t *v = lumen_image_const_data(im);
  for (int i = 0; i < 120; i++) assert_int_equal(v[i], 0);
  double sp[4], aff[16];
  assert_int_equal(lumen_image_get_spacing(im, sp, 4), LUMEN_OK);
  for (int i = 0; i < 4; i++) assert_true(sp[i] == 1.0);
  assert_int_equal(lumen_image_get_affine(im, aff), LUMEN_OK);
  for (int i = 0; i < 16; i++) assert_true(aff[i] == (i % 5 == 0 ? 1.0 : 0.0));
  LUMEN_TEST_FREE_IMAGES(im, NULL);
}

static void create_checks_arguments(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *im = (lumen_image *)0x1;
  const int64_t ok[2] = {4, 4};
  const int64_t zero[2] = {4, 0};
  const int64_t neg[2] = {-4, 4};
  const int64_t huge[4] = {INT64_C(1) << 20, INT64_C(1) << 20, INT64_C(1) << 20, INT64_C(1) << 4};
  lumen_device cpu = lumen_device_cpu();
  assert_int_equal(lumen_image_create(ctx, 2, ok, LUMEN_DTYPE_FLOAT32, cpu, 0, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_image_create(ctx, 0, ok, LUMEN_DTYPE_FLOAT32, cpu, 0, &im), LUMEN_ERR_INVALID_ARGUMENT);
  assert_null(im); /* out is cleared on failure */
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "ndim is 0"));
  assert_int_equal(lumen_image_create(ctx, 5, ok, LUMEN_DTYPE_FLOAT32, cpu, 0, &im), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_image_create(ctx, 2, NULL, LUMEN_DTYPE_FLOAT32, cpu, 0, &im), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_image_create(ctx, 2, zero, LUMEN_DTYPE_FLOAT32, cpu, 0, &im), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "dims[1] is 0"));
  assert_int_equal(lumen_image_create(ctx, 2, neg, LUMEN_DTYPE_FLOAT32, cpu, 0, &im), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_image_create(ctx, 2, ok, LUMEN_DTYPE_COUNT, cpu, 0, &im), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "dtype"));
  assert_int_equal(lumen_image_create(ctx, 2, ok, (lumen_dtype)-2, cpu, 0, &im), LUMEN_ERR_INVALID_ARGUMENT);
  /* 2^64 float32 elements: the byte count overflows int64 */
  assert_int_equal(lumen_image_create(ctx, 4, huge, LUMEN_DTYPE_FLOAT32, cpu, 0, &im), LUMEN_ERR_OVERFLOW);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "overflows"));
  lumen_device bad_kind = {LUMEN_DEVICE_KIND_COUNT, 0};
  assert_int_equal(lumen_image_create(ctx, 2, ok, LUMEN_DTYPE_FLOAT32, bad_kind, 0, &im), LUMEN_ERR_INVALID_ARGUMENT);
  lumen_device bad_index = {LUMEN_DEVICE_CUDA, -1};
  assert_int_equal(lumen_image_create(ctx, 2, ok, LUMEN_DTYPE_FLOAT32, bad_index, 0, &im), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_image_create(ctx, 2, ok, LUMEN_DTYPE_FLOAT32, cpu, 0x80, &im), LUMEN_ERR_INVALID_ARGUMENT);
  /* 2^62 bytes cannot be allocated on any machine: a status, not a crash */
  const int64_t big[2] = {INT64_C(1) << 30, INT64_C(1) << 30};
  lumen_status s = lumen_image_create(ctx, 2, big, LUMEN_DTYPE_FLOAT32, cpu, 0, &im);
  assert_int_equal(s, LUMEN_ERR_OUT_OF_MEMORY);
  assert_null(im);
}

static void wrap_does_not_copy_or_free(void **state) {
  lumen_ctx *ctx = *state;
  float buf[6] = {1, 2, 3, 4, 5, 6};
  const int64_t dims[2] = {3, 2};
  lumen_image *im = NULL;
  assert_int_equal(lumen_image_wrap(ctx, buf, 2, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), &im), LUMEN_OK);
  assert_ptr_equal(lumen_image_data(im), buf);
  assert_false(lumen_image_owns_data(im));
  ((float *)lumen_image_data(im))[4] = 42;
  assert_true(buf[4] == 42);
  lumen_image *copy = NULL;
  assert_int_equal(lumen_image_clone(ctx, im, &copy), LUMEN_OK);
  assert_ptr_not_equal(lumen_image_data(copy), buf);
  assert_memory_equal(lumen_image_data(copy), buf, sizeof buf);
  buf[0] = -1;
  assert_true(((float *)lumen_image_data(copy))[0] == 1); /* deep copy */
  lumen_image_free(im);   /* must not free buf (ASan would catch it) */
  lumen_image_free(copy);
  buf[1] = 7;
  assert_int_equal(lumen_image_wrap(ctx, NULL, 2, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), &im),
                   LUMEN_ERR_INVALID_ARGUMENT);
  assert_null(im);
  assert_int_equal(lumen_image_clone(ctx, NULL, &copy), LUMEN_ERR_INVALID_ARGUMENT);
}

static void geometry_travels_with_copies(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t dims[3] = {4, 3, 2};
  lumen_image *im = NULL, *copy = NULL;
  assert_int_equal(lumen_image_create(ctx, 3, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im), LUMEN_OK);
  const double sp[3] = {0.5, 0.75, 3.0};
  double aff[16] = {-0.5, 0, 0, 10, 0, 0.75, 0, -20, 0, 0, 3, 5, 0, 0, 0, 1};
  assert_int_equal(lumen_image_set_spacing(ctx, im, sp, 3), LUMEN_OK);
  assert_int_equal(lumen_image_set_affine(ctx, im, aff), LUMEN_OK);
  assert_int_equal(lumen_image_clone(ctx, im, &copy), LUMEN_OK);
  double sp2[3], aff2[16];
  assert_int_equal(lumen_image_get_spacing(copy, sp2, 3), LUMEN_OK);
  assert_int_equal(lumen_image_get_affine(copy, aff2), LUMEN_OK);
  assert_memory_equal(sp, sp2, sizeof sp);
  assert_memory_equal(aff, aff2, sizeof aff);
  const double bad_sp[3] = {1, 0, 1};
  assert_int_equal(lumen_image_set_spacing(ctx, im, bad_sp, 3), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "spacing[1]"));
  assert_int_equal(lumen_image_set_spacing(ctx, im, sp, 4), LUMEN_ERR_INVALID_ARGUMENT);
  aff[3] = NAN;
  assert_int_equal(lumen_image_set_affine(ctx, im, aff), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_image_get_spacing(NULL, sp2, 3), LUMEN_ERR_INVALID_ARGUMENT);
  LUMEN_TEST_FREE_IMAGES(im, copy);
}

static void device_moves(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t dims[1] = {1000};
  lumen_image *host = NULL, *same = NULL, *dev = NULL;
  assert_int_equal(lumen_image_create(ctx, 1, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), LUMEN_IMAGE_PINNED, &host),
                   LUMEN_OK);
  float *h = lumen_image_data(host);
  for (int i = 0; i < 1000; i++) h[i] = (float)i;
  assert_int_equal(lumen_image_to_device(ctx, host, lumen_device_cpu(), &same), LUMEN_OK);
  assert_memory_equal(lumen_image_data(same), h, 4000);
  lumen_device gpu = {LUMEN_DEVICE_CUDA, 0};
  int count = 0;
  if (lumen_cuda_probe(ctx, &count, NULL, 0) == LUMEN_OK) {
    lumen_image *back = NULL;
    assert_int_equal(lumen_image_to_device(ctx, host, gpu, &dev), LUMEN_OK);
    assert_int_equal(lumen_image_device(dev).kind, LUMEN_DEVICE_CUDA);
    assert_int_equal(lumen_image_to_device(ctx, dev, lumen_device_cpu(), &back), LUMEN_OK);
    assert_memory_equal(lumen_image_data(back), h, 4000);
    LUMEN_TEST_FREE_IMAGES(back, dev);
  } else {
    /* no GPU here: a clear status, no image, no crash */
    lumen_status s = lumen_image_to_device(ctx, host, gpu, &dev);
    assert_true(s == LUMEN_ERR_NOT_BUILT || s == LUMEN_ERR_NO_DEVICE);
    assert_null(dev);
    assert_true(strlen(lumen_ctx_last_error(ctx)) > 0);
    assert_false(lumen_image_is_pinned(host)); /* pinning needs a driver */
  }
  LUMEN_TEST_FREE_IMAGES(host, same);
}

static void convert_types(void **state) {
  lumen_ctx *ctx = *state;
  uint16_t raw[4] = {0, 1, 1000, 65535};
  const int64_t dims[1] = {4};
  lumen_image *u16 = NULL, *f32 = NULL, *f16 = NULL, *back = NULL, *bf = NULL;
  assert_int_equal(lumen_image_wrap(ctx, raw, 1, dims, LUMEN_DTYPE_UINT16, lumen_device_cpu(), &u16), LUMEN_OK);
  assert_int_equal(lumen_image_convert(ctx, u16, LUMEN_DTYPE_FLOAT32, &f32), LUMEN_OK);
  const float *f = lumen_image_const_data(f32);
  assert_true(f[0] == 0 && f[1] == 1 && f[2] == 1000 && f[3] == 65535);
  assert_int_equal(lumen_image_convert(ctx, f32, LUMEN_DTYPE_FLOAT16, &f16), LUMEN_OK);
  const uint16_t *h = lumen_image_const_data(f16);
  assert_int_equal(h[1], 0x3C00);      /* 1.0 */
  assert_int_equal(h[2], 0x63D0);      /* 1000.0 */
  assert_int_equal(h[3], 0x7C00);      /* 65535 rounds past 65504 to +Inf */
  assert_int_equal(lumen_image_convert(ctx, f16, LUMEN_DTYPE_FLOAT32, &back), LUMEN_OK);
  const float *b = lumen_image_const_data(back);
  assert_true(b[2] == 1000.0f && isinf(b[3]));
  assert_int_equal(lumen_image_convert(ctx, f32, LUMEN_DTYPE_BFLOAT16, &bf), LUMEN_OK);
  assert_int_equal(((const uint16_t *)lumen_image_const_data(bf))[1], 0x3F80);
  lumen_image *bad = NULL;
  assert_int_equal(lumen_image_convert(ctx, u16, LUMEN_DTYPE_INT8, &bad), LUMEN_ERR_UNSUPPORTED);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "uint16 -> int8"));
  assert_null(bad);
  LUMEN_TEST_FREE_IMAGES(u16, f32, f16, back, bf);
}

static void host_alloc(void **state) {
  lumen_ctx *ctx = *state;
  void *p = NULL;
  int pinned = -1;
  assert_int_equal(lumen_host_alloc(ctx, 1000, 1, &p, &pinned), LUMEN_OK);
  assert_non_null(p);
  assert_true(pinned == 0 || pinned == 1);
  assert_true(((uintptr_t)p % 64) == 0 || pinned);
  memset(p, 1, 1000);
  lumen_host_free(p, pinned);
  assert_int_equal(lumen_host_alloc(ctx, 10, 0, NULL, NULL), LUMEN_ERR_INVALID_ARGUMENT);
}

LUMEN_TEST_MAIN(LUMEN_TEST_WITH_CTX(create_and_query),
                LUMEN_TEST_WITH_CTX(create_checks_arguments),
                LUMEN_TEST_WITH_CTX(wrap_does_not_copy_or_free),
                LUMEN_TEST_WITH_CTX(geometry_travels_with_copies),
                LUMEN_TEST_WITH_CTX(device_moves),
                LUMEN_TEST_WITH_CTX(convert_types),
                LUMEN_TEST_WITH_CTX(host_alloc))
