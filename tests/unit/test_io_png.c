/* PNG: 8/16-bit grey round trips, scaling modes, colour to luminance, hostile files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <png.h>
#include "test_support.h"
#include "lumen/io.h"
#include "io/io_internal.h"

static char g_dir[64];

static char *path_of(const char *name) { return lumen_test_join(g_dir, name); }

static int built(void) {
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_image *im = NULL;
  lumen_status s = lumen_png_read(ctx, "/nonexistent.png", NULL, &im, NULL);
  lumen_ctx_destroy(ctx);
  return s != LUMEN_ERR_NOT_BUILT;
}

static void round_trips(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t dims[2] = {37, 23};
  /* 8 bit */
  lumen_image *im = lumen_test_image(ctx, 2, dims, LUMEN_DTYPE_UINT8);
  uint8_t *u8 = lumen_image_data(im);
  for (int i = 0; i < 37 * 23; i++) u8[i] = (uint8_t)(i * 13);
  const char *p = path_of("g8.png");
  assert_int_equal(lumen_png_write(ctx, p, im, NULL), LUMEN_OK);
  lumen_image *back = NULL;
  int depth = 0;
  assert_int_equal(lumen_png_read(ctx, p, NULL, &back, &depth), LUMEN_OK);
  assert_int_equal(depth, 8);
  assert_int_equal(lumen_image_dtype(back), LUMEN_DTYPE_UINT8);
  assert_true(lumen_image_dim(back, 0) == 37 && lumen_image_dim(back, 1) == 23);
  assert_memory_equal(lumen_image_const_data(back), u8, 37 * 23);
  lumen_image_free(back);
  lumen_png_read_opts ro = {2, 0};
  assert_int_equal(lumen_png_read(ctx, p, &ro, &back, NULL), LUMEN_OK);
  assert_int_equal(lumen_image_dtype(back), LUMEN_DTYPE_FLOAT32);
  lumen_test_assert_close(((const float *)lumen_image_const_data(back))[1], 13.0 / 255.0, 1e-7, 0, "normalised");
  lumen_image_free(back);
  /* refused without overwrite */
  assert_int_equal(lumen_png_write(ctx, p, im, NULL), LUMEN_ERR_IO);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "exists"));
  lumen_image_free(im);
  /* 16 bit */
  assert_int_equal(lumen_image_create(ctx, 2, dims, LUMEN_DTYPE_UINT16, lumen_device_cpu(), 0, &im), LUMEN_OK);
  uint16_t *u16 = lumen_image_data(im);
  for (int i = 0; i < 37 * 23; i++) u16[i] = (uint16_t)(i * 77 + 1);
  p = path_of("g16.png");
  assert_int_equal(lumen_png_write(ctx, p, im, NULL), LUMEN_OK);
  assert_int_equal(lumen_png_read(ctx, p, NULL, &back, &depth), LUMEN_OK);
  assert_int_equal(depth, 16);
  assert_int_equal(lumen_image_dtype(back), LUMEN_DTYPE_UINT16);
  assert_memory_equal(lumen_image_const_data(back), u16, 37 * 23 * 2);
  lumen_image_free(back);
  ro.to_float = 1;
  assert_int_equal(lumen_png_read(ctx, p, &ro, &back, NULL), LUMEN_OK);
  assert_true(((const float *)lumen_image_const_data(back))[5] == 5 * 77 + 1);
  lumen_image_free(back);
  lumen_image_free(im);
}

static void scaling(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_image *im = lumen_test_image(ctx, 2, (const int64_t[2]){4, 1}, LUMEN_DTYPE_FLOAT32);
  float *v = lumen_image_data(im);
  v[0] = -5.0f; v[1] = 0.5f; v[2] = NAN; v[3] = 300.0f;
  lumen_png_write_opts wo = {0};
  wo.overwrite = 1;
  const char *p = path_of("s.png");
  lumen_image *back = NULL;
  /* clip (default, 8 bit for float images) */
  assert_int_equal(lumen_png_write(ctx, p, im, &wo), LUMEN_OK);
  assert_int_equal(lumen_png_read(ctx, p, NULL, &back, NULL), LUMEN_OK);
  const uint8_t *b = lumen_image_const_data(back);
  assert_true(b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 255);  /* 0.5 rounds to even */
  lumen_image_free(back);
  /* min-max to 16 bit */
  wo.scaling = LUMEN_PNG_SCALE_MINMAX;
  wo.bit_depth = 16;
  assert_int_equal(lumen_png_write(ctx, p, im, &wo), LUMEN_OK);
  assert_int_equal(lumen_png_read(ctx, p, NULL, &back, NULL), LUMEN_OK);
  const uint16_t *w = lumen_image_const_data(back);
  assert_true(w[0] == 0 && w[3] == 65535 && w[2] == 0);
  assert_true(w[1] == (uint16_t)lrint(5.5 / 305.0 * 65535.0));
  lumen_image_free(back);
  /* a window */
  wo.scaling = LUMEN_PNG_SCALE_RANGE;
  wo.bit_depth = 8;
  wo.lo = 0;
  wo.hi = 1;
  assert_int_equal(lumen_png_write(ctx, p, im, &wo), LUMEN_OK);
  assert_int_equal(lumen_png_read(ctx, p, NULL, &back, NULL), LUMEN_OK);
  b = lumen_image_const_data(back);
  assert_true(b[0] == 0 && b[1] == 128 && b[3] == 255);
  lumen_image_free(back);
  wo.hi = -1;
  assert_int_equal(lumen_png_write(ctx, p, im, &wo), LUMEN_ERR_INVALID_ARGUMENT);
  lumen_image_free(im);
  /* 3-D images with a depth other than 1 are refused */
  const int64_t d3[3] = {4, 4, 2};
  assert_int_equal(lumen_image_create(ctx, 3, d3, LUMEN_DTYPE_UINT8, lumen_device_cpu(), LUMEN_IMAGE_ZERO, &im),
                   LUMEN_OK);
  assert_int_equal(lumen_png_write(ctx, path_of("x.png"), im, NULL), LUMEN_ERR_UNSUPPORTED);
  lumen_image_free(im);
  lumen_ctx_destroy(ctx);
}

/* Writes an RGB PNG with libpng directly. */
static void write_rgb(const char *p, int w, int h, const unsigned char *rgb) {
  FILE *fp = fopen(p, "wb");
  assert_non_null(fp);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) fail();
  png_init_io(png, fp);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < h; y++) png_write_row(png, rgb + (size_t)y * w * 3);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  fclose(fp);
}

static void colour_and_hostile(void **state) {
  lumen_ctx *ctx = *state;
  const unsigned char rgb[2 * 3] = {255, 0, 0, 100, 100, 100};
  const char *p = path_of("rgb.png");
  write_rgb(p, 2, 1, rgb);
  lumen_image *im = NULL;
  assert_int_equal(lumen_png_read(ctx, p, NULL, &im, NULL), LUMEN_OK);
  const uint8_t *g = lumen_image_const_data(im);
  assert_true(abs((int)g[0] - 54) <= 1);  /* 0.2126 * 255 */
  assert_true(abs((int)g[1] - 100) <= 1);
  lumen_image_free(im);

  /* truncated PNG: a real file cut short */
  const int64_t dims[2] = {200, 150};
  assert_int_equal(lumen_image_create(ctx, 2, dims, LUMEN_DTYPE_UINT16, lumen_device_cpu(), 0, &im), LUMEN_OK);
  uint16_t *v = lumen_image_data(im);
  for (int i = 0; i < 200 * 150; i++) v[i] = (uint16_t)(i * 2654435761u >> 16);
  char full[256];
  snprintf(full, sizeof full, "%s", path_of("full.png"));
  assert_int_equal(lumen_png_write(ctx, full, im, NULL), LUMEN_OK);
  lumen_image_free(im);
  char *bytes = NULL;
  size_t len = 0;
  assert_int_equal(lumen_io_slurp(ctx, "test", full, INT64_C(1) << 30, &bytes, &len), LUMEN_OK);
  const size_t cuts[3] = {len / 2, 40, 12};
  for (int k = 0; k < 3; k++) {
    const char *t = path_of("trunc.png");
    FILE *fp = fopen(t, "wb");
    fwrite(bytes, 1, cuts[k], fp);
    fclose(fp);
    im = (lumen_image *)0x1;
    lumen_status s = lumen_png_read(ctx, t, NULL, &im, NULL);
    assert_int_equal(s, LUMEN_ERR_FORMAT);
    assert_null(im);
    assert_non_null(strstr(lumen_ctx_last_error(ctx), t));
    unlink(t);
  }
  /* huge dimensions in IHDR: width 2^31 - 1 (the CRC is not fixed: libpng stops either way) */
  memcpy(bytes + 16, "\x7f\xff\xff\xff", 4);
  char h[256];
  snprintf(h, sizeof h, "%s", path_of("huge.png"));
  FILE *fp = fopen(h, "wb");
  fwrite(bytes, 1, len, fp);
  fclose(fp);
  im = (lumen_image *)0x1;
  assert_int_equal(lumen_png_read(ctx, h, NULL, &im, NULL), LUMEN_ERR_FORMAT);
  assert_null(im);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), h));
  free(bytes);
  /* not a PNG */
  fp = fopen(h, "wb");
  fputs("GIF89a not a png at all", fp);
  fclose(fp);
  assert_int_equal(lumen_png_read(ctx, h, NULL, &im, NULL), LUMEN_ERR_FORMAT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "not a PNG"));
  assert_int_equal(lumen_png_read(ctx, path_of("none.png"), NULL, &im, NULL), LUMEN_ERR_IO);
  /* memory limit */
  lumen_png_read_opts ro = {0, 1000};
  assert_int_equal(lumen_png_read(ctx, full, &ro, &im, NULL), LUMEN_ERR_OUT_OF_MEMORY);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "memory limit"));
  /* failed write (injected): no file, no temporary */
  assert_int_equal(lumen_image_create(ctx, 2, dims, LUMEN_DTYPE_UINT8, lumen_device_cpu(), LUMEN_IMAGE_ZERO, &im),
                   LUMEN_OK);
  const char *o = path_of("fail.png");
  lumen_io_inject_write_failure(10);
  lumen_status s = lumen_png_write(ctx, o, im, NULL);
  lumen_io_inject_write_failure(-1);
  assert_int_equal(s, LUMEN_ERR_IO);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "No space left"));
  struct stat st;
  assert_int_equal(stat(o, &st), -1);
  lumen_image_free(im);
  unlink(full);
  unlink(h);
}

/* A FIFO (or any non-regular file) as a PNG input is refused at once, never opened for a blocking
   read (issue 15); alarm() turns a hang into a failure. */
static void non_regular_input(void **state) {
  lumen_ctx *ctx = *state;
  const char *fifo = path_of("fifo.png");
  unlink(fifo);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  alarm(20);
  lumen_image *im = NULL;
  lumen_status s = lumen_png_read(ctx, fifo, NULL, &im, NULL);
  alarm(0);
  assert_int_equal(s, LUMEN_ERR_IO);
  assert_null(im);
  const char *msg = lumen_ctx_last_error(ctx);
  assert_non_null(strstr(msg, fifo));
  assert_non_null(strstr(msg, "is a FIFO (named pipe), expected a regular file"));
  s = lumen_png_read(ctx, "/dev/null", NULL, &im, NULL);
  assert_int_equal(s, LUMEN_ERR_IO);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "character device"));
  unlink(fifo);
}

static int cleanup(void **state) {
  (void)state;
  static const char *const names[] = {"g8.png", "g16.png", "s.png", "rgb.png", "x.png"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) unlink(path_of(names[i]));
  return 0;
}

int main(void) {
  if (!built()) return lumen_test_skip("lumen_io was built without libpng");
  const struct CMUnitTest tests[] = {LUMEN_TEST_WITH_CTX(round_trips), cmocka_unit_test(scaling),
                                     LUMEN_TEST_WITH_CTX(colour_and_hostile), LUMEN_TEST_WITH_CTX(non_regular_input)};
  return lumen_test_run_in_dir(g_dir, sizeof g_dir, "png", tests, LUMEN_TEST_COUNT(tests), NULL, cleanup);
}
