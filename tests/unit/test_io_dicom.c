/* DICOM (docs/DICOM.md): metadata of pydicom's CT_small against pydicom's own reading; the fork
   and the in-process decode give the same pixels; small files written here with known values
   (masking, sign, modality LUT, MONOCHROME1 inversion, analytic); hostile headers refused
   before allocation; the memory limit. Skips (77) only when lumen_io was built without GDCM
   or Debian's python3-pydicom is missing. The pixel comparison with pydicom of every transfer
   syntax is tests/cli/test_dicom.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test_support.h"
#include "lumen/io.h"
#include "io/dicom_internal.h"
#include "lumen_build_config.h"

static char g_dir[64];

/* The path of a pydicom test file (Debian python3-pydicom), or "" when pydicom is missing. */
static const char *testdata(const char *name) {
  static char path[1024];
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "/usr/bin/python3 -c 'from pydicom.data import get_testdata_file as g; print(g(\"%s\"))' 2>/dev/null", name);
  path[0] = 0;
  FILE *p = popen(cmd, "r");
  if (!p) return path;
  if (!fgets(path, sizeof path, p)) path[0] = 0;
  pclose(p);
  path[strcspn(path, "\n")] = 0;
  return path;
}

/* pydicom's reading of a header value (a Python expression over `ds`) as a number. */
static double pydicom_value(const char *file, const char *expr) {
  char cmd[1024], out[128] = "";
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c 'import pydicom; ds = pydicom.dcmread(\"%s\"); print(float(%s))'",
           file, expr);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  assert_non_null(fgets(out, sizeof out, p));
  pclose(p);
  return strtod(out, NULL);
}

static void metadata_like_pydicom(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  const char *f = testdata("CT_small.dcm");
  char file[1024];
  snprintf(file, sizeof file, "%s", f);
  lumen_dicom_info info;
  assert_int_equal(lumen_dicom_read_header(ctx, file, NULL, &info), LUMEN_OK);
  assert_true(info.rows == (int64_t)pydicom_value(file, "ds.Rows"));
  assert_true(info.columns == (int64_t)pydicom_value(file, "ds.Columns"));
  assert_int_equal(info.frames, 1);
  assert_int_equal(info.bits_allocated, (int)pydicom_value(file, "ds.BitsAllocated"));
  assert_int_equal(info.bits_stored, (int)pydicom_value(file, "ds.BitsStored"));
  assert_int_equal(info.pixel_representation, (int)pydicom_value(file, "ds.PixelRepresentation"));
  assert_true(info.rescale_slope == pydicom_value(file, "ds.RescaleSlope"));
  assert_true(info.rescale_intercept == pydicom_value(file, "ds.RescaleIntercept"));
  assert_true(info.spacing[0] == pydicom_value(file, "ds.PixelSpacing[1]"));  /* columns */
  assert_true(info.spacing[1] == pydicom_value(file, "ds.PixelSpacing[0]"));  /* rows */
  assert_string_equal(info.spacing_source, "PixelSpacing");
  assert_string_equal(info.photometric, "MONOCHROME2");
  assert_string_equal(info.modality, "CT");
  assert_string_equal(info.transfer_syntax, "1.2.840.10008.1.2.1");
  assert_int_equal(info.inverted, 0);
  /* the image carries the spacing */
  lumen_image *im = NULL;
  assert_int_equal(lumen_dicom_read(ctx, file, NULL, &im, &info), LUMEN_OK);
  double sp[2];
  assert_int_equal(lumen_image_get_spacing(im, sp, 2), LUMEN_OK);
  assert_true(sp[0] == info.spacing[0] && sp[1] == info.spacing[1]);
  lumen_image_free(im);
  lumen_ctx_destroy(ctx);
}

/* The forked child and the in-process decode agree, and say which ran. */
static void fork_equals_in_process(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  const char *names[] = {"MR_small_RLE.dcm", "MR_small_jpeg_ls_lossless.dcm", "MR_small_jp2klossless.dcm",
                         "rtdose_rle.dcm"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char file[1024];
    snprintf(file, sizeof file, "%s", testdata(names[i]));
    lumen_image *a = NULL, *b = NULL;
    lumen_dicom_info ia, ib;
    assert_int_equal(lumen_dicom_read_isolated(ctx, file, NULL, LUMEN_DICOM_ISOLATE_ALWAYS, &a, &ia), LUMEN_OK);
    assert_int_equal(lumen_dicom_read_isolated(ctx, file, NULL, LUMEN_DICOM_ISOLATE_NEVER, &b, &ib), LUMEN_OK);
    assert_int_equal(ia.isolated, 1);
    assert_int_equal(ib.isolated, 0);
    lumen_test_assert_images_equal(a, b);
    lumen_image_free(a);
    lumen_image_free(b);
  }
#if LUMEN_TEST_HOOKS
  /* a decoder that aborts in the child (test hook) is an error naming the file, not a crash */
  {
    char f2[1024];
    snprintf(f2, sizeof f2, "%s", testdata("MR_small_RLE.dcm"));
    setenv("LUMEN_TEST_DICOM_CHILD_ABORT", "1", 1);
    lumen_image *x = NULL;
    lumen_status st = lumen_dicom_read_isolated(ctx, f2, NULL, LUMEN_DICOM_ISOLATE_ALWAYS, &x, NULL);
    unsetenv("LUMEN_TEST_DICOM_CHILD_ABORT");
    assert_int_equal(st, LUMEN_ERR_FORMAT);
    assert_null(x);
    assert_non_null(strstr(lumen_ctx_last_error(ctx), "malformed pixel data (decoder aborted, signal 6)"));
    assert_non_null(strstr(lumen_ctx_last_error(ctx), f2));
  }
#endif
  /* this test is single-threaded: the default isolates */
  assert_true(lumen_dicom_single_threaded());
  lumen_image *c = NULL;
  lumen_dicom_info ic;
  char file[1024];
  snprintf(file, sizeof file, "%s", testdata("MR_small_jp2klossless.dcm"));
  assert_int_equal(lumen_dicom_read(ctx, file, NULL, &c, &ic), LUMEN_OK);
  assert_int_equal(ic.isolated, 1);
  lumen_image_free(c);
  lumen_ctx_destroy(ctx);
}

/* ---------------------------------------------------------------- files written here */

typedef struct buf {
  unsigned char d[4096];
  size_t n;
} buf;

static void put(buf *b, const void *p, size_t n) {
  assert_true(b->n + n <= sizeof b->d);
  memcpy(b->d + b->n, p, n);
  b->n += n;
}
static void el(buf *b, uint16_t g, uint16_t e, const char *vr, const void *v, uint32_t len) {
  unsigned char h[12] = {(unsigned char)g, (unsigned char)(g >> 8), (unsigned char)e, (unsigned char)(e >> 8),
                         (unsigned char)vr[0], (unsigned char)vr[1]};
  if (!strcmp(vr, "OW") || !strcmp(vr, "OB")) {
    h[8] = (unsigned char)len; h[9] = (unsigned char)(len >> 8); h[10] = (unsigned char)(len >> 16);
    h[11] = (unsigned char)(len >> 24);
    put(b, h, 12);
  } else {
    h[6] = (unsigned char)len; h[7] = (unsigned char)(len >> 8);
    put(b, h, 8);
  }
  if (v) put(b, v, len);  /* the pixel element's value follows separately */
}
static void us(buf *b, uint16_t e, uint16_t v) {
  unsigned char x[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
  el(b, 0x0028, e, "US", x, 2);
}

typedef struct spec {
  const char *photometric;  /* even length */
  int rows, cols, bits_stored, pixrep;
  const char *frames;       /* NULL: absent */
  const char *slope, *intercept;
  const uint16_t *pixels;
  uint32_t pixel_bytes;     /* as declared */
  int swap_order;           /* write Columns before Rows (out of order) */
} spec;

static char *write_dicom(const char *name, const spec *s) {
  buf b = {.n = 0};
  memset(b.d, 0, 128);
  b.n = 128;
  put(&b, "DICM", 4);
  el(&b, 0x0002, 0x0010, "UI", "1.2.840.10008.1.2.1\0", 20);
  us(&b, 0x0002, 1);
  el(&b, 0x0028, 0x0004, "CS", s->photometric, (uint32_t)strlen(s->photometric));
  if (s->frames) el(&b, 0x0028, 0x0008, "IS", s->frames, (uint32_t)strlen(s->frames));
  if (s->swap_order) us(&b, 0x0011, (uint16_t)s->cols);
  us(&b, 0x0010, (uint16_t)s->rows);
  if (!s->swap_order) us(&b, 0x0011, (uint16_t)s->cols);
  us(&b, 0x0100, 16);
  us(&b, 0x0101, (uint16_t)s->bits_stored);
  us(&b, 0x0102, (uint16_t)(s->bits_stored - 1));
  us(&b, 0x0103, (uint16_t)s->pixrep);
  if (s->intercept) el(&b, 0x0028, 0x1052, "DS", s->intercept, (uint32_t)strlen(s->intercept));
  if (s->slope) el(&b, 0x0028, 0x1053, "DS", s->slope, (uint32_t)strlen(s->slope));
  el(&b, 0x7FE0, 0x0010, "OW", NULL, s->pixel_bytes);
  int64_t n = (int64_t)s->rows * s->cols;  /* pixels written: what fits the declared length and the image */
  if (n > s->pixel_bytes / 2) n = s->pixel_bytes / 2;
  for (int64_t i = 0; s->pixels && i < n; i++) {
    unsigned char x[2] = {(unsigned char)s->pixels[i], (unsigned char)(s->pixels[i] >> 8)};
    put(&b, x, 2);
  }
  char *path = lumen_test_join(g_dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b.d, 1, b.n, f), b.n);
  fclose(f);
  return path;
}

static void known_values(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  /* 12 bits stored, signed, bit 12..15 garbage: masked and sign-extended, then * 2 - 5 */
  const uint16_t px[6] = {0x0001, 0x0FFF, 0xF800, 0x07FF, 0xA000, 0x0000};
  const double stored[6] = {1, -1, -2048, 2047, 0, 0};
  spec s = {"MONOCHROME2 ", 2, 3, 12, 1, NULL, "2 ", "-5", px, 12, 0};
  char *p = write_dicom("signed.dcm", &s);
  lumen_image *im = NULL;
  lumen_dicom_info info;
  assert_int_equal(lumen_dicom_read(ctx, p, NULL, &im, &info), LUMEN_OK);
  assert_int_equal(lumen_image_dim(im, 0), 3);
  assert_int_equal(lumen_image_dim(im, 1), 2);
  const float *v = lumen_image_const_data(im);
  for (int i = 0; i < 6; i++) assert_true(v[i] == (float)(stored[i] * 2 - 5));
  lumen_image_free(im);
  /* MONOCHROME1, unsigned 12 bits, slope 2 intercept -5: v -> (0*2-5) + (4095*2-5) - v */
  const uint16_t pu[6] = {0, 1, 4095, 100, 0xF064, 7};
  spec m = {"MONOCHROME1 ", 2, 3, 12, 0, "1 ", "2 ", "-5", pu, 12, 0};
  p = write_dicom("mono1.dcm", &m);
  assert_int_equal(lumen_dicom_read(ctx, p, NULL, &im, &info), LUMEN_OK);
  assert_int_equal(info.inverted, 1);
  v = lumen_image_const_data(im);
  const double su[6] = {0, 1, 4095, 100, 100, 7};
  for (int i = 0; i < 6; i++) assert_true(v[i] == (float)(-5 + (4095 * 2 - 5) - (su[i] * 2 - 5)));
  lumen_image_free(im);
  lumen_ctx_destroy(ctx);
}

static void expect_refused(lumen_ctx *ctx, const char *path, lumen_status want, const char *words) {
  lumen_image *im = (lumen_image *)1;
  lumen_status s = lumen_dicom_read(ctx, path, NULL, &im, NULL);
  if (s != want || !strstr(lumen_ctx_last_error(ctx), words) || !strstr(lumen_ctx_last_error(ctx), path))
    fail_msg("%s: status %d, message '%s', expected status %d with '%s'", path, s, lumen_ctx_last_error(ctx), want,
             words);
  assert_null(im);
}

static void hostile_headers(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  const uint16_t px[4] = {1, 2, 3, 4};
  /* 65535 x 65535 x 1000000 claimed, 8 bytes given: refused before any allocation */
  spec huge = {"MONOCHROME2 ", 65535, 65535, 16, 0, "1000000 ", NULL, NULL, px, 8, 0};
  char *p = write_dicom("huge.dcm", &huge);
  expect_refused(ctx, p, LUMEN_ERR_FORMAT, "PixelData has 8 bytes, expected 8589672450000000");
  /* a pixel element longer than the file */
  spec longer = {"MONOCHROME2 ", 2, 2, 16, 0, NULL, NULL, NULL, px, 4000, 0};
  p = write_dicom("longer.dcm", &longer);
  expect_refused(ctx, p, LUMEN_ERR_FORMAT, "truncated file or wrong length");
  /* Columns before Rows */
  spec order = {"MONOCHROME2 ", 2, 2, 16, 0, NULL, NULL, NULL, px, 8, 1};
  p = write_dicom("order.dcm", &order);
  expect_refused(ctx, p, LUMEN_ERR_FORMAT, "out of order");
  /* BitsStored over BitsAllocated; colour */
  spec bits = {"MONOCHROME2 ", 2, 2, 17, 0, NULL, NULL, NULL, px, 8, 0};
  p = write_dicom("bits.dcm", &bits);
  expect_refused(ctx, p, LUMEN_ERR_FORMAT, "BitsStored is 17, expected 1..16");
  spec rgb = {"RGB ", 2, 2, 16, 0, NULL, NULL, NULL, px, 8, 0};
  p = write_dicom("rgb.dcm", &rgb);
  expect_refused(ctx, p, LUMEN_ERR_UNSUPPORTED, "PhotometricInterpretation is 'RGB'");
  spec zero = {"MONOCHROME2 ", 2, 2, 16, 0, NULL, "0 ", NULL, px, 8, 0};
  p = write_dicom("zero.dcm", &zero);
  expect_refused(ctx, p, LUMEN_ERR_FORMAT, "RescaleSlope is 0");
  /* the memory limit: CT_small (39206 bytes, 32768 decoded) under 50000 bytes */
  char file[1024];
  snprintf(file, sizeof file, "%s", testdata("CT_small.dcm"));
  lumen_dicom_read_opts o = {.max_bytes = 50000};
  lumen_image *im = NULL;
  assert_int_equal(lumen_dicom_read(ctx, file, &o, &im, NULL), LUMEN_ERR_OUT_OF_MEMORY);
  assert_null(im);
  lumen_ctx_destroy(ctx);
}

static int cleanup(void **state) {
  (void)state;
  const char *names[] = {"signed.dcm", "mono1.dcm", "huge.dcm", "longer.dcm", "order.dcm", "bits.dcm", "rgb.dcm",
                         "zero.dcm"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char *p = lumen_test_join(g_dir, names[i]);
    unlink(p);
  }
  return 0;
}

int main(void) {
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_dicom_info info;
  lumen_status s = lumen_dicom_read_header(ctx, "/nonexistent.dcm", NULL, &info);
  lumen_ctx_destroy(ctx);
  if (s == LUMEN_ERR_NOT_BUILT) {
    printf("lumen_io was built without DICOM (GDCM): skipped\n");
    return LUMEN_TEST_SKIP;
  }
  if (!testdata("CT_small.dcm")[0]) {
    printf("Debian python3-pydicom (the test files) missing: skipped\n");
    return LUMEN_TEST_SKIP;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(metadata_like_pydicom), cmocka_unit_test(fork_equals_in_process),
                                     cmocka_unit_test(known_values), cmocka_unit_test(hostile_headers)};
  return lumen_test_run_in_dir(g_dir, sizeof g_dir, "dicom", tests, LUMEN_TEST_COUNT(tests), NULL, cleanup);
}
