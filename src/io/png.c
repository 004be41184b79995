/* PNG reading and writing through libpng (grey 8/16 bit, and 8-bit RGB for figures, written;
   colour read as luminance). libpng reports errors by longjmp: every local changed after setjmp
   and used after it is volatile. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/io_internal.h"

#ifndef LUMEN_HAVE_PNG

lumen_status lumen_png_read(lumen_ctx *ctx, const char *path, const lumen_png_read_opts *opts, lumen_image **out,
                            int *bit_depth) {
  (void)opts;
  (void)bit_depth;
  if (out) *out = NULL;
  return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT, "lumen_png_read: '%s': this build has no libpng", path ? path : "");
}
lumen_status lumen_png_write(lumen_ctx *ctx, const char *path, const lumen_image *image,
                             const lumen_png_write_opts *opts) {
  (void)image;
  (void)opts;
  return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT, "lumen_png_write: '%s': this build has no libpng", path ? path : "");
}
lumen_status lumen_png_write_rgb8(lumen_ctx *ctx, const char *path, const uint8_t *rgb, int64_t width,
                                  int64_t height, int overwrite) {
  (void)rgb;
  (void)width;
  (void)height;
  (void)overwrite;
  return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT, "lumen_png_write_rgb8: '%s': this build has no libpng", path ? path : "");
}

#else
#include <png.h>


typedef struct png_err {
  char message[256];
} png_err;

static void on_error(png_structp png, png_const_charp msg) {
  png_err *e = png_get_error_ptr(png);
  if (e) snprintf(e->message, sizeof e->message, "%s", msg ? msg : "libpng error");
  png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) {
  (void)png;
  (void)msg;  /* libpng warnings (e.g. unknown chunks) are not errors; the library never prints */
}

/* The file as libpng reads it, with a budget for the image data: libpng inflates every IDAT byte
   up to the end of the zlib stream, also those past the image's last row, so a PNG followed by
   4 GiB of compressed data took 8-13 s whatever the memory limit (issue 40 item 13). Past
   png_read_info the reads stop at budget bytes: 16 x the image's filtered size + 1 MiB, room for
   deflate's worst case and IDAT chunks of any size down to a few bytes. */
typedef struct png_source {
  FILE *fp;
  int64_t read, budget; /* budget < 0: none yet (the header and the chunks before IDAT) */
} png_source;

static void read_bytes(png_structp png, png_bytep data, png_size_t length) {
  png_source *src = png_get_io_ptr(png);
  if (src->budget >= 0 && src->read + (int64_t)length > src->budget)
    png_error(png, "more image data than the image holds (IDAT past 16 x its size): a malformed or hostile file");
  if (fread(data, 1, length, src->fp) != length) png_error(png, "unexpected end of file");
  src->read += (int64_t)length;
}

/* Every colour type and depth read as one grey channel of 8 or 16 bits in host order. */
static void grey_transforms(png_structp png, png_infop info, int colour, int depth, int interlace) {
  if (colour == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (colour == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
  if (colour & PNG_COLOR_MASK_ALPHA || png_get_valid(png, info, PNG_INFO_tRNS)) png_set_strip_alpha(png);
  if (colour & PNG_COLOR_MASK_COLOR || colour == PNG_COLOR_TYPE_PALETTE)
    png_set_rgb_to_gray_fixed(png, 1, 21268, 71514);  /* Rec. 709: 0.21268, 0.71514 (blue: the rest) */
  const uint16_t one = 1;
  if (depth == 16 && *(const unsigned char *)&one == 1) png_set_swap(png);  /* to host order */
  if (interlace != PNG_INTERLACE_NONE) png_set_interlace_handling(png);
  png_read_update_info(png, info);
}

/* The image's filtered size as stored: a filter byte and its samples per row (interlaced: up to 7
   passes, each row with its own filter byte). */
static int64_t filtered_bytes(png_uint_32 width, png_uint_32 height, int colour, int depth, int interlace) {
  static const int channels_of[7] = {1, 0, 3, 1, 2, 0, 4};
  const int ch = colour >= 0 && colour < 7 && channels_of[colour] ? channels_of[colour] : 4;
  return (int64_t)height * (((int64_t)width * ch * depth + 7) / 8 + 1) * (interlace ? 2 : 1);
}

/* *im (uint8 or uint16) replaced by its float32 values (to_float 2: scaled to [0, 1]). */
static lumen_status widen_to_float(lumen_ctx *ctx, lumen_image **im, int to_float) {
  const int64_t dims[2] = {lumen_image_dim(*im, 0), lumen_image_dim(*im, 1)};
  const int wide = lumen_image_dtype(*im) == LUMEN_DTYPE_UINT16;
  lumen_image *f = NULL;
  lumen_status s = lumen_image_create(ctx, 2, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &f);
  if (s != LUMEN_OK) {
    lumen_image_free(*im);
    *im = NULL;
    return s;
  }
  float *dst = lumen_image_data(f);
  const int64_t n = dims[0] * dims[1];
  const float scale = to_float == 2 ? 1.0f / (wide ? 65535.0f : 255.0f) : 1.0f;
  if (wide) {
    const uint16_t *src = lumen_image_const_data(*im);
    for (int64_t i = 0; i < n; i++) dst[i] = (float)src[i] * scale;
  } else {
    const uint8_t *src = lumen_image_const_data(*im);
    for (int64_t i = 0; i < n; i++) dst[i] = (float)src[i] * scale;
  }
  lumen_image_free(*im);
  *im = f;
  return LUMEN_OK;
}

lumen_status lumen_png_read(lumen_ctx *ctx, const char *path, const lumen_png_read_opts *opts, lumen_image **out,
                            int *bit_depth_out) {
  static const char fn[] = "lumen_png_read";
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  if (bit_depth_out) *bit_depth_out = 0;
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  int to_float = opts ? opts->to_float : 0;
  LUMEN_REQUIRE(ctx, to_float >= 0 && to_float <= 2, "%s: opts->to_float is %d, expected 0, 1 or 2", fn, to_float);
  int64_t max_bytes = lumen_io_resolve_max_bytes(opts ? opts->max_bytes : 0);

  FILE *fp = NULL;  /* never blocks: a FIFO or device is refused before anything is read */
  lumen_status os = lumen_io_fopen_regular(ctx, fn, path, &fp);
  if (os != LUMEN_OK) return os;
  unsigned char sig[8];
  if (fread(sig, 1, 8, fp) != 8 || png_sig_cmp(sig, 0, 8) != 0) {
    fclose(fp);
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: '%s' is not a PNG file (bad signature)", fn, path);
  }
  png_err err;
  memset(&err, 0, sizeof err);
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &err, on_error, on_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!png || !info) {
    png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
    fclose(fp);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory reading '%s'", fn, path);
  }
  lumen_image *volatile im = NULL;
  png_bytep *volatile rows = NULL;
  volatile lumen_status status = LUMEN_OK;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, NULL);
    fclose(fp);
    free(rows);
    lumen_image_free(im);
    if (status != LUMEN_OK) return status;  /* our own failure, message already recorded */
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: '%s' is truncated or corrupt: %s", fn, path,
                      err.message[0] ? err.message : "libpng error");
  }
  png_source source = {fp, 8, -1};
  png_set_read_fn(png, &source, read_bytes);
  png_set_sig_bytes(png, 8);
  png_set_user_limits(png, LUMEN_PNG_MAX_SIDE, LUMEN_PNG_MAX_SIDE);
  png_set_chunk_malloc_max(png, (png_alloc_size_t)64 << 20);
  png_read_info(png, info);
  png_uint_32 width = 0, height = 0;
  int depth = 0, colour = 0, interlace = 0;
  png_get_IHDR(png, info, &width, &height, &depth, &colour, &interlace, NULL, NULL);
  grey_transforms(png, info, colour, depth, interlace);
  int out_depth = png_get_bit_depth(png, info);
  int channels = png_get_channels(png, info);
  size_t rowbytes = png_get_rowbytes(png, info);
  int elem = out_depth == 16 ? 2 : 1;
  if (channels != 1 || (out_depth != 8 && out_depth != 16) || rowbytes != (size_t)width * (size_t)elem) {
    status = lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "%s: '%s': colour type %d, bit depth %d gives %d channels of %d "
                        "bits, expected 1 grey channel", fn, path, colour, depth, channels, out_depth);
    png_longjmp(png, 1);
  }
  int64_t need = (int64_t)width * (int64_t)height * (to_float ? 4 : elem);
  if (need > max_bytes) {
    status = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: '%s': IHDR width %u x height %u needs %lld bytes, over "
                        "the memory limit of %lld bytes", fn, path, (unsigned)width, (unsigned)height,
                        (long long)need, (long long)max_bytes);
    png_longjmp(png, 1);
  }
  const int64_t dims[2] = {(int64_t)width, (int64_t)height};
  lumen_image *tmp = NULL;
  lumen_status s = lumen_image_create(ctx, 2, dims, elem == 2 ? LUMEN_DTYPE_UINT16 : LUMEN_DTYPE_UINT8,
                                      lumen_device_cpu(), 0, &tmp);
  if (s != LUMEN_OK) {
    status = s;
    png_longjmp(png, 1);
  }
  im = tmp;
  rows = malloc((size_t)height * sizeof(png_bytep));
  if (!rows) {
    status = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory reading '%s'", fn, path);
    png_longjmp(png, 1);
  }
  unsigned char *base = lumen_image_data(im);
  for (png_uint_32 y = 0; y < height; y++) rows[y] = base + (size_t)y * rowbytes;
  source.budget = source.read + 16 * filtered_bytes(width, height, colour, depth, interlace) + ((int64_t)1 << 20);
  png_read_image(png, rows);
  /* no png_read_end: the image is whole; chunks after it (text, trailing data) are not read */
  png_destroy_read_struct(&png, &info, NULL);
  fclose(fp);
  free(rows);
  lumen_image *result = im;
  if (to_float) {
    s = widen_to_float(ctx, &result, to_float);
    if (s != LUMEN_OK) return s;
  }
  *out = result;
  if (bit_depth_out) *bit_depth_out = out_depth;
  return LUMEN_OK;
}

/* ----------------------------------------------------------------------------- writing */

static double value_at(const void *data, lumen_dtype t, int64_t i) {
  switch (t) {
    case LUMEN_DTYPE_FLOAT32: return ((const float *)data)[i];
    case LUMEN_DTYPE_FLOAT16: return lumen_half_to_float(((const uint16_t *)data)[i]);
    case LUMEN_DTYPE_BFLOAT16: return lumen_bfloat16_to_float(((const uint16_t *)data)[i]);
    case LUMEN_DTYPE_FLOAT64: return ((const double *)data)[i];
    case LUMEN_DTYPE_UINT8: return ((const uint8_t *)data)[i];
    case LUMEN_DTYPE_INT8: return ((const int8_t *)data)[i];
    case LUMEN_DTYPE_UINT16: return ((const uint16_t *)data)[i];
    case LUMEN_DTYPE_INT16: return ((const int16_t *)data)[i];
    case LUMEN_DTYPE_UINT32: return ((const uint32_t *)data)[i];
    case LUMEN_DTYPE_INT32: return ((const int32_t *)data)[i];
    case LUMEN_DTYPE_UINT64: return (double)((const uint64_t *)data)[i];
    case LUMEN_DTYPE_INT64: return (double)((const int64_t *)data)[i];
    default: return 0;
  }
}

typedef struct png_sink {
  lumen_atomic_file *file;
  lumen_status status;
} png_sink;

static void sink_write(png_structp png, png_bytep data, png_size_t n) {
  png_sink *sink = png_get_io_ptr(png);
  if (sink->status != LUMEN_OK) png_error(png, "write failed");
  sink->status = lumen_atomic_write(sink->file, data, n);
  if (sink->status != LUMEN_OK) png_error(png, "write failed");
}

static void sink_flush(png_structp png) { (void)png; }

/* Rows of the image being written: fill(arg, y, row) fills row y (rowbytes bytes). */
typedef void (*png_row_fill)(void *arg, int64_t y, unsigned char *row);

/* Encodes a w x h PNG (colour: PNG_COLOR_TYPE_GRAY or _RGB) through the atomic writer. */
static lumen_status encode_png(lumen_ctx *ctx, const char *fn, const char *path, int64_t w, int64_t h, int depth,
                               int colour, int overwrite, size_t rowbytes, png_row_fill fill, void *arg) {
  unsigned char *row = malloc(rowbytes);
  if (!row) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory writing '%s'", fn, path);
  lumen_atomic_file *file = NULL;
  lumen_status s = lumen_atomic_open(ctx, path, overwrite, 0, &file);
  if (s != LUMEN_OK) {
    free(row);
    return lumen_fail(ctx, s, "%s: %s", fn, lumen_ctx_last_error(ctx));
  }
  png_err err;
  memset(&err, 0, sizeof err);
  png_sink sink = {file, LUMEN_OK};
  png_sink *const sinkp = &sink;  /* read after longjmp through this pointer (set before setjmp) */
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &err, on_error, on_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!png || !info) {
    png_destroy_write_struct(png ? &png : NULL, NULL);
    lumen_atomic_abort(file);
    free(row);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory writing '%s'", fn, path);
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    lumen_atomic_abort(file);
    free(row);
    if (sinkp->status != LUMEN_OK) return lumen_fail(ctx, sinkp->status, "%s: %s", fn, lumen_ctx_last_error(ctx));
    return lumen_fail(ctx, LUMEN_ERR_IO, "%s: cannot write '%s': %s", fn, path, err.message);
  }
  png_set_write_fn(png, sinkp, sink_write, sink_flush);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, colour, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int64_t y = 0; y < h; y++) {
    fill(arg, y, row);
    png_write_row(png, row);
  }
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  free(row);
  s = lumen_atomic_commit(file);
  if (s != LUMEN_OK) return lumen_fail(ctx, s, "%s: %s", fn, lumen_ctx_last_error(ctx));
  return LUMEN_OK;
}

typedef struct grey_rows {
  const void *data;
  lumen_dtype t;
  int64_t w;
  int depth, clip;
  double lo, gain, maxv;
} grey_rows;

static void fill_grey(void *arg, int64_t y, unsigned char *row) {
  const grey_rows *g = arg;
  for (int64_t x = 0; x < g->w; x++) {
    double v = value_at(g->data, g->t, y * g->w + x);
    if (!g->clip) v = (v - g->lo) * g->gain;
    if (!(v == v)) v = 0;  /* NaN */
    v = v < 0 ? 0 : v > g->maxv ? g->maxv : v;
    unsigned q = (unsigned)lrint(v);
    if (g->depth == 16) {
      row[2 * x] = (unsigned char)(q >> 8);  /* PNG is big-endian */
      row[2 * x + 1] = (unsigned char)(q & 0xff);
    } else {
      row[x] = (unsigned char)q;
    }
  }
}

lumen_status lumen_png_write(lumen_ctx *ctx, const char *path, const lumen_image *image,
                             const lumen_png_write_opts *opts) {
  static const char fn[] = "lumen_png_write";
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  LUMEN_REQUIRE_NOT_NULL(ctx, image);
  lumen_png_write_opts o;
  memset(&o, 0, sizeof o);
  if (opts) o = *opts;
  LUMEN_REQUIRE(ctx, o.bit_depth == 0 || o.bit_depth == 8 || o.bit_depth == 16,
                "%s: opts->bit_depth is %d, expected 0, 8 or 16", fn, o.bit_depth);
  LUMEN_REQUIRE(ctx, (int)o.scaling >= 0 && o.scaling < LUMEN_PNG_SCALING_COUNT,
                "%s: opts->scaling is %d, expected a lumen_png_scaling", fn, (int)o.scaling);
  LUMEN_REQUIRE(ctx, o.scaling != LUMEN_PNG_SCALE_RANGE || (isfinite(o.lo) && isfinite(o.hi) && o.hi > o.lo),
                "%s: opts lo %g / hi %g, expected finite values with hi > lo", fn, o.lo, o.hi);
  if (lumen_image_device(image).kind != LUMEN_DEVICE_CPU)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "%s: '%s': the image is on a device; copy it to the host first", fn,
                      path);
  int ndim = lumen_image_ndim(image);
  for (int i = 2; i < ndim; i++)
    if (lumen_image_dim(image, i) != 1)
      return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "%s: '%s': dims[%d] is %lld, expected a 2-D image (dims beyond "
                        "the 2nd equal to 1)", fn, path, i, (long long)lumen_image_dim(image, i));
  int64_t w = lumen_image_dim(image, 0), h = lumen_image_dim(image, 1);
  if (w > LUMEN_PNG_MAX_SIDE || h > LUMEN_PNG_MAX_SIDE)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "%s: '%s': %lld x %lld is over the PNG limit of %u per side", fn,
                      path, (long long)w, (long long)h, LUMEN_PNG_MAX_SIDE);
  lumen_dtype t = lumen_image_dtype(image);
  int depth = o.bit_depth;
  if (!depth) depth = (t == LUMEN_DTYPE_UINT8 || t == LUMEN_DTYPE_INT8 || lumen_dtype_size(t) == 0 ||
                       t == LUMEN_DTYPE_FLOAT32 || t == LUMEN_DTYPE_FLOAT64 || t == LUMEN_DTYPE_FLOAT16 ||
                       t == LUMEN_DTYPE_BFLOAT16) ? 8 : 16;
  double maxv = depth == 16 ? 65535.0 : 255.0;
  const void *data = lumen_image_const_data(image);
  int64_t n = w * h;
  double lo = 0, hi = maxv;
  if (o.scaling == LUMEN_PNG_SCALE_MINMAX) {
    int any = 0;
    for (int64_t i = 0; i < n; i++) {
      double v = value_at(data, t, i);
      if (!isfinite(v)) continue;
      if (!any || v < lo) lo = v;
      if (!any || v > hi) hi = v;
      any = 1;
    }
    if (!any) lo = 0, hi = 0;
  } else if (o.scaling == LUMEN_PNG_SCALE_RANGE) {
    lo = o.lo;
    hi = o.hi;
  }
  grey_rows g = {data, t, w, depth, o.scaling == LUMEN_PNG_SCALE_CLIP, lo, hi > lo ? maxv / (hi - lo) : 0.0, maxv};
  return encode_png(ctx, fn, path, w, h, depth, PNG_COLOR_TYPE_GRAY, o.overwrite, (size_t)w * (depth == 16 ? 2 : 1),
                    fill_grey, &g);
}

typedef struct rgb_rows {
  const uint8_t *rgb;
  int64_t w;
} rgb_rows;

static void fill_rgb(void *arg, int64_t y, unsigned char *row) {
  const rgb_rows *r = arg;
  memcpy(row, r->rgb + (size_t)y * (size_t)r->w * 3, (size_t)r->w * 3);
}

lumen_status lumen_png_write_rgb8(lumen_ctx *ctx, const char *path, const uint8_t *rgb, int64_t width,
                                  int64_t height, int overwrite) {
  static const char fn[] = "lumen_png_write_rgb8";
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  LUMEN_REQUIRE_NOT_NULL(ctx, rgb);
  if (width < 1 || height < 1 || width > LUMEN_PNG_MAX_SIDE || height > LUMEN_PNG_MAX_SIDE)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: '%s': %lld x %lld, expected 1..%u per side", fn, path,
                      (long long)width, (long long)height, LUMEN_PNG_MAX_SIDE);
  rgb_rows r = {rgb, width};
  return encode_png(ctx, fn, path, width, height, 8, PNG_COLOR_TYPE_RGB, overwrite, (size_t)width * 3, fill_rgb, &r);
}
#endif
