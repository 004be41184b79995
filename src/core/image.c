/* Images: 1- to 4-D arrays with geometry, on the host or a CUDA device. */
#include <stdlib.h>
#include <string.h>
#include "core/cuda_iface.h"
#include "core/internal.h"

struct lumen_image {
  int ndim;
  int64_t dims[LUMEN_IMAGE_MAX_DIMS];
  lumen_dtype dtype;
  lumen_device device;
  void *data;
  int64_t nbytes;
  int owns;     /* data allocated by lumen (freed with the image) */
  int pinned;   /* host data in page-locked memory */
  double spacing[LUMEN_IMAGE_MAX_DIMS];
  double affine[16];
};

#define HOST_ALIGNMENT 64

static lumen_status check_shape(lumen_ctx *ctx, const char *fn, int ndim, const int64_t *dims, lumen_dtype dtype,
                                int64_t *nbytes) {
  LUMEN_REQUIRE(ctx, ndim >= 1 && ndim <= LUMEN_IMAGE_MAX_DIMS, "%s: ndim is %d, expected 1..%d", fn, ndim,
                LUMEN_IMAGE_MAX_DIMS);
  LUMEN_REQUIRE(ctx, dims != NULL, "%s: argument 'dims' is NULL", fn);
  LUMEN_REQUIRE(ctx, (int)dtype >= 0 && dtype < LUMEN_DTYPE_COUNT, "%s: dtype %d is not a lumen_dtype (0..%d)", fn,
                (int)dtype, LUMEN_DTYPE_COUNT - 1);
  int64_t total = (int64_t)lumen_dtype_size(dtype);
  for (int i = 0; i < ndim; i++) {
    LUMEN_REQUIRE(ctx, dims[i] >= 1, "%s: dims[%d] is %lld, expected >= 1", fn, i, (long long)dims[i]);
    if (lumen_mul_i64(total, dims[i], &total))
      return lumen_fail(ctx, LUMEN_ERR_OVERFLOW, "%s: image of %d dims with dims[%d] = %lld overflows int64 bytes", fn,
                        ndim, i, (long long)dims[i]);
  }
  if ((uint64_t)total > (uint64_t)SIZE_MAX)
    return lumen_fail(ctx, LUMEN_ERR_OVERFLOW, "%s: %lld bytes do not fit in size_t", fn, (long long)total);
  *nbytes = total;
  return LUMEN_OK;
}

static lumen_status check_device(lumen_ctx *ctx, const char *fn, lumen_device device) {
  LUMEN_REQUIRE(ctx, (device.kind == LUMEN_DEVICE_CPU) || (device.kind == LUMEN_DEVICE_CUDA && device.index >= 0),
                "%s: device kind %d index %d is not a device (expected cpu or cuda:N)", fn, (int)device.kind,
                device.index);
  return LUMEN_OK;
}

static lumen_image *new_header(int ndim, const int64_t *dims, lumen_dtype dtype, lumen_device device, int64_t nbytes) {
  lumen_image *im = calloc(1, sizeof *im);
  if (!im) return NULL;
  im->ndim = ndim;
  for (int i = 0; i < LUMEN_IMAGE_MAX_DIMS; i++) {
    im->dims[i] = i < ndim ? dims[i] : 1;
    im->spacing[i] = 1.0;
  }
  for (int i = 0; i < 4; i++) im->affine[i * 4 + i] = 1.0;
  im->dtype = dtype;
  im->device = device;
  im->nbytes = nbytes;
  return im;
}

lumen_status lumen_host_alloc(lumen_ctx *ctx, size_t bytes, int want_pinned, void **out, int *pinned) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  if (pinned) *pinned = 0;
  if (want_pinned && lumen_cudai_built()) {
    if (lumen_cudai_host_alloc(ctx, bytes ? bytes : 1, out) == LUMEN_OK) {
      if (pinned) *pinned = 1;
      return LUMEN_OK;
    }
    lumen_log(ctx, LUMEN_LOG_DEBUG, "pinned allocation of %zu bytes failed (%s); using pageable memory", bytes,
              lumen_ctx_last_error(ctx));
    lumen_ctx_clear_error(ctx);
  }
  size_t rounded = (bytes + HOST_ALIGNMENT - 1) / HOST_ALIGNMENT * HOST_ALIGNMENT;
  if (rounded < bytes) return lumen_fail(ctx, LUMEN_ERR_OVERFLOW, "lumen_host_alloc: %zu bytes overflow", bytes);
  *out = aligned_alloc(HOST_ALIGNMENT, rounded ? rounded : HOST_ALIGNMENT);
  if (!*out) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes", bytes);
  return LUMEN_OK;
}

void lumen_host_free(void *ptr, int pinned) {
  if (!ptr) return;
  if (pinned)
    lumen_cudai_host_free(ptr);
  else
    free(ptr);
}

lumen_status lumen_image_create(lumen_ctx *ctx, int ndim, const int64_t *dims, lumen_dtype dtype, lumen_device device,
                                unsigned flags, lumen_image **out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  int64_t nbytes = 0;
  lumen_status s = check_shape(ctx, "lumen_image_create", ndim, dims, dtype, &nbytes);
  if (s == LUMEN_OK) s = check_device(ctx, "lumen_image_create", device);
  if (s != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, (flags & ~(unsigned)(LUMEN_IMAGE_ZERO | LUMEN_IMAGE_PINNED)) == 0,
                "lumen_image_create: unknown flags 0x%x", flags);
  lumen_image *im = new_header(ndim, dims, dtype, device, nbytes);
  if (!im) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_image_create: out of host memory");
  if (device.kind == LUMEN_DEVICE_CPU) {
    s = lumen_host_alloc(ctx, (size_t)nbytes, (flags & LUMEN_IMAGE_PINNED) != 0, &im->data, &im->pinned);
    if (s == LUMEN_OK && (flags & LUMEN_IMAGE_ZERO)) memset(im->data, 0, (size_t)nbytes);
  } else {
    s = lumen_cudai_malloc(ctx, device.index, (size_t)nbytes, &im->data);
    if (s == LUMEN_OK && (flags & LUMEN_IMAGE_ZERO)) {
      s = lumen_cudai_memset_zero(ctx, device.index, im->data, (size_t)nbytes);
      if (s != LUMEN_OK) lumen_cudai_free(device.index, im->data);
    }
  }
  if (s != LUMEN_OK) {
    free(im);
    return s;
  }
  im->owns = 1;
  lumen_memory_account(device, nbytes);
  *out = im;
  return LUMEN_OK;
}

lumen_status lumen_image_wrap(lumen_ctx *ctx, void *data, int ndim, const int64_t *dims, lumen_dtype dtype,
                              lumen_device device, lumen_image **out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  LUMEN_REQUIRE_NOT_NULL(ctx, data);
  int64_t nbytes = 0;
  lumen_status s = check_shape(ctx, "lumen_image_wrap", ndim, dims, dtype, &nbytes);
  if (s == LUMEN_OK) s = check_device(ctx, "lumen_image_wrap", device);
  if (s != LUMEN_OK) return s;
  lumen_image *im = new_header(ndim, dims, dtype, device, nbytes);
  if (!im) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_image_wrap: out of host memory");
  im->data = data;
  *out = im;
  return LUMEN_OK;
}

void lumen_image_free(lumen_image *image) {
  if (!image) return;
  if (image->owns) {
    if (image->device.kind == LUMEN_DEVICE_CPU)
      lumen_host_free(image->data, image->pinned);
    else
      lumen_cudai_free(image->device.index, image->data);
    lumen_memory_account(image->device, -image->nbytes);
  }
  free(image);
}

static void copy_geometry(lumen_image *dst, const lumen_image *src) {
  memcpy(dst->spacing, src->spacing, sizeof dst->spacing);
  memcpy(dst->affine, src->affine, sizeof dst->affine);
}

/* Copies bytes between two images' buffers on whatever devices they live. */
static lumen_status copy_data(lumen_ctx *ctx, lumen_image *dst, const lumen_image *src) {
  if (src->nbytes == 0) return LUMEN_OK;
  if (dst->device.kind == LUMEN_DEVICE_CPU && src->device.kind == LUMEN_DEVICE_CPU) {
    memcpy(dst->data, src->data, (size_t)src->nbytes);
    return LUMEN_OK;
  }
  int dd = dst->device.kind == LUMEN_DEVICE_CPU ? -1 : dst->device.index;
  int sd = src->device.kind == LUMEN_DEVICE_CPU ? -1 : src->device.index;
  return lumen_cudai_copy(ctx, dst->data, dd, src->data, sd, (size_t)src->nbytes);
}

lumen_status lumen_image_to_device(lumen_ctx *ctx, const lumen_image *src, lumen_device device, lumen_image **out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  LUMEN_REQUIRE_NOT_NULL(ctx, src);
  lumen_status s = check_device(ctx, "lumen_image_to_device", device);
  if (s != LUMEN_OK) return s;
  lumen_image *dst = NULL;
  s = lumen_image_create(ctx, src->ndim, src->dims, src->dtype, device, 0, &dst);
  if (s != LUMEN_OK) return s;
  s = copy_data(ctx, dst, src);
  if (s != LUMEN_OK) {
    lumen_image_free(dst);
    return s;
  }
  copy_geometry(dst, src);
  *out = dst;
  return LUMEN_OK;
}

lumen_status lumen_image_clone(lumen_ctx *ctx, const lumen_image *src, lumen_image **out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, src);
  return lumen_image_to_device(ctx, src, src->device, out);
}

/* Reads element i of a host buffer of any dtype as float (float16/bfloat16 decoded). */
static float load_as_float(const void *data, lumen_dtype t, int64_t i) {
  switch (t) {
    case LUMEN_DTYPE_FLOAT32: return ((const float *)data)[i];
    case LUMEN_DTYPE_FLOAT16: return lumen_half_to_float(((const uint16_t *)data)[i]);
    case LUMEN_DTYPE_BFLOAT16: return lumen_bfloat16_to_float(((const uint16_t *)data)[i]);
    case LUMEN_DTYPE_FLOAT64: return (float)((const double *)data)[i];
    case LUMEN_DTYPE_UINT8: return (float)((const uint8_t *)data)[i];
    case LUMEN_DTYPE_INT8: return (float)((const int8_t *)data)[i];
    case LUMEN_DTYPE_UINT16: return (float)((const uint16_t *)data)[i];
    case LUMEN_DTYPE_INT16: return (float)((const int16_t *)data)[i];
    case LUMEN_DTYPE_UINT32: return (float)((const uint32_t *)data)[i];
    case LUMEN_DTYPE_INT32: return (float)((const int32_t *)data)[i];
    case LUMEN_DTYPE_UINT64: return (float)((const uint64_t *)data)[i];
    case LUMEN_DTYPE_INT64: return (float)((const int64_t *)data)[i];
    default: return 0.0f;
  }
}

lumen_status lumen_image_convert(lumen_ctx *ctx, const lumen_image *src, lumen_dtype dtype, lumen_image **out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  LUMEN_REQUIRE_NOT_NULL(ctx, src);
  LUMEN_REQUIRE(ctx, (int)dtype >= 0 && dtype < LUMEN_DTYPE_COUNT, "lumen_image_convert: dtype %d is not a lumen_dtype",
                (int)dtype);
  if (src->device.kind != LUMEN_DEVICE_CPU)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED,
                      "lumen_image_convert: the image is on a CUDA device; copy it to the host first");
  int to_float16 = dtype == LUMEN_DTYPE_FLOAT16 || dtype == LUMEN_DTYPE_BFLOAT16;
  if (dtype != LUMEN_DTYPE_FLOAT32 && !(to_float16 && src->dtype == LUMEN_DTYPE_FLOAT32) && dtype != src->dtype)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED,
                      "lumen_image_convert: %s -> %s is not supported (any type -> float32, float32 -> float16/bfloat16)",
                      lumen_dtype_name(src->dtype), lumen_dtype_name(dtype));
  if (dtype == src->dtype) return lumen_image_clone(ctx, src, out);
  lumen_image *dst = NULL;
  lumen_status s = lumen_image_create(ctx, src->ndim, src->dims, dtype, src->device, 0, &dst);
  if (s != LUMEN_OK) return s;
  int64_t n = lumen_image_count(src);
  if (dtype == LUMEN_DTYPE_FLOAT16)
    s = lumen_convert_f32_to_f16(src->data, dst->data, n);
  else if (dtype == LUMEN_DTYPE_BFLOAT16)
    s = lumen_convert_f32_to_bf16(src->data, dst->data, n);
  else if (src->dtype == LUMEN_DTYPE_FLOAT16)
    s = lumen_convert_f16_to_f32(src->data, dst->data, n);
  else if (src->dtype == LUMEN_DTYPE_BFLOAT16)
    s = lumen_convert_bf16_to_f32(src->data, dst->data, n);
  else {
    float *o = dst->data;
    for (int64_t i = 0; i < n; i++) o[i] = load_as_float(src->data, src->dtype, i);
  }
  if (s != LUMEN_OK) {
    lumen_image_free(dst);
    return lumen_fail(ctx, s, "lumen_image_convert: conversion failed");
  }
  copy_geometry(dst, src);
  *out = dst;
  return LUMEN_OK;
}

int lumen_image_ndim(const lumen_image *image) { return image ? image->ndim : 0; }

int64_t lumen_image_dim(const lumen_image *image, int axis) {
  if (!image || axis < 0) return 0;
  return axis < LUMEN_IMAGE_MAX_DIMS ? image->dims[axis] : 1;
}

int64_t lumen_image_count(const lumen_image *image) {
  if (!image) return 0;
  size_t size = lumen_dtype_size(image->dtype);
  return size ? image->nbytes / (int64_t)size : 0;
}

int64_t lumen_image_nbytes(const lumen_image *image) { return image ? image->nbytes : 0; }
lumen_dtype lumen_image_dtype(const lumen_image *image) { return image ? image->dtype : LUMEN_DTYPE_COUNT; }
lumen_device lumen_image_device(const lumen_image *image) { return image ? image->device : lumen_device_cpu(); }
int lumen_image_owns_data(const lumen_image *image) { return image ? image->owns : 0; }
int lumen_image_is_pinned(const lumen_image *image) { return image ? image->pinned : 0; }
void *lumen_image_data(lumen_image *image) { return image ? image->data : NULL; }
const void *lumen_image_const_data(const lumen_image *image) { return image ? image->data : NULL; }

lumen_status lumen_image_set_spacing(lumen_ctx *ctx, lumen_image *image, const double *spacing, int n) {
  LUMEN_REQUIRE_NOT_NULL(ctx, image);
  LUMEN_REQUIRE_NOT_NULL(ctx, spacing);
  LUMEN_REQUIRE(ctx, n >= 1 && n <= image->ndim, "lumen_image_set_spacing: n is %d, expected 1..%d", n, image->ndim);
  for (int i = 0; i < n; i++)
    LUMEN_REQUIRE(ctx, spacing[i] > 0 && spacing[i] < 1e300,
                  "lumen_image_set_spacing: spacing[%d] is %g, expected a positive finite value", i, spacing[i]);
  memcpy(image->spacing, spacing, (size_t)n * sizeof *spacing);
  return LUMEN_OK;
}

lumen_status lumen_image_get_spacing(const lumen_image *image, double *spacing, int n) {
  if (!image || !spacing || n < 1 || n > LUMEN_IMAGE_MAX_DIMS) return LUMEN_ERR_INVALID_ARGUMENT;
  memcpy(spacing, image->spacing, (size_t)n * sizeof *spacing);
  return LUMEN_OK;
}

lumen_status lumen_image_set_affine(lumen_ctx *ctx, lumen_image *image, const double affine[16]) {
  LUMEN_REQUIRE_NOT_NULL(ctx, image);
  LUMEN_REQUIRE_NOT_NULL(ctx, affine);
  for (int i = 0; i < 16; i++)
    LUMEN_REQUIRE(ctx, affine[i] == affine[i] && affine[i] < 1e300 && affine[i] > -1e300,
                  "lumen_image_set_affine: affine[%d] is not finite", i);
  memcpy(image->affine, affine, sizeof image->affine);
  return LUMEN_OK;
}

lumen_status lumen_image_get_affine(const lumen_image *image, double affine[16]) {
  if (!image || !affine) return LUMEN_ERR_INVALID_ARGUMENT;
  memcpy(affine, image->affine, sizeof image->affine);
  return LUMEN_OK;
}
