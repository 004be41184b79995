/* DICOM (docs/DICOM.md): metadata of pydicom's CT_small against pydicom's own reading; the fork
   and the in-process decode give the same pixels; small files written here with known values
   (masking, sign, modality LUT, MONOCHROME1 inversion, analytic); hostile headers refused
   before allocation; the memory limit; an enhanced multi-frame file written here (functional
   groups per frame and shared, per-frame modality LUT, as a series, hostile variants). Skips (77) only when lumen_io was built without GDCM
   or Debian's python3-pydicom is missing. The pixel comparison with pydicom of every transfer
   syntax is tests/cli/test_dicom.sh. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
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
  lumen_ctx *ctx = *state;
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
}

/* The forked child and the in-process decode agree, and say which ran. */
static void fork_equals_in_process(void **state) {
  lumen_ctx *ctx = *state;
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
    /* the helper program (lumen-dicom-decoder, spawned: what a process with threads uses) too */
    assert_int_equal(lumen_dicom_read_isolated(ctx, file, NULL, LUMEN_DICOM_ISOLATE_HELPER, &a, &ia), LUMEN_OK);
    assert_int_equal(ia.isolated, 1);
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
    /* a decoder that never ends (CharLS on a mutated JPEG-LS file spun 6 s): stopped by its CPU
       budget (2 s for this small image), in the forked child and in the helper */
    setenv("LUMEN_TEST_DICOM_CHILD_SPIN", "1", 1);
    st = lumen_dicom_read_isolated(ctx, f2, NULL, LUMEN_DICOM_ISOLATE_ALWAYS, &x, NULL);
    assert_int_equal(st, LUMEN_ERR_FORMAT);
    assert_non_null(strstr(lumen_ctx_last_error(ctx), "the decoder ran past its CPU budget of 2 s"));
    st = lumen_dicom_read_isolated(ctx, f2, NULL, LUMEN_DICOM_ISOLATE_HELPER, &x, NULL);
    unsetenv("LUMEN_TEST_DICOM_CHILD_SPIN");
    assert_int_equal(st, LUMEN_ERR_FORMAT);
    assert_null(x);
    assert_non_null(strstr(lumen_ctx_last_error(ctx), "the decoder ran past its CPU budget of 2 s"));
    /* the same through the helper program */
    setenv("LUMEN_TEST_DICOM_CHILD_ABORT", "1", 1);
    st = lumen_dicom_read_isolated(ctx, f2, NULL, LUMEN_DICOM_ISOLATE_HELPER, &x, NULL);
    unsetenv("LUMEN_TEST_DICOM_CHILD_ABORT");
    assert_int_equal(st, LUMEN_ERR_FORMAT);
    assert_null(x);
    assert_non_null(strstr(lumen_ctx_last_error(ctx), "malformed pixel data (decoder aborted, signal 6)"));
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

/* Writes b's bytes to g_dir/name: that path. */
static char *save(const char *name, const buf *b) {
  char *path = lumen_test_join(g_dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b->d, 1, b->n, f), b->n);
  fclose(f);
  return path;
}

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
  return save(name, &b);
}

static void known_values(void **state) {
  lumen_ctx *ctx = *state;
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
  lumen_ctx *ctx = *state;
  const uint16_t px[4] = {1, 2, 3, 4};
  /* each file written from its spec is refused with its status and words */
  const struct {
    const char *file;
    spec s;
    lumen_status want;
    const char *words;
  } refused[] = {
    /* 65535 x 65535 x 1000000 claimed, 8 bytes given: refused before any allocation */
    {"huge.dcm", {"MONOCHROME2 ", 65535, 65535, 16, 0, "1000000 ", NULL, NULL, px, 8, 0}, LUMEN_ERR_FORMAT,
     "PixelData has 8 bytes, expected 8589672450000000"},
    /* a pixel element longer than the file */
    {"longer.dcm", {"MONOCHROME2 ", 2, 2, 16, 0, NULL, NULL, NULL, px, 4000, 0}, LUMEN_ERR_FORMAT,
     "truncated file or wrong length"},
    /* Columns before Rows */
    {"order.dcm", {"MONOCHROME2 ", 2, 2, 16, 0, NULL, NULL, NULL, px, 8, 1}, LUMEN_ERR_FORMAT, "out of order"},
    /* BitsStored over BitsAllocated; colour; a zero slope */
    {"bits.dcm", {"MONOCHROME2 ", 2, 2, 17, 0, NULL, NULL, NULL, px, 8, 0}, LUMEN_ERR_FORMAT,
     "BitsStored is 17, expected 1..16"},
    {"rgb.dcm", {"RGB ", 2, 2, 16, 0, NULL, NULL, NULL, px, 8, 0}, LUMEN_ERR_UNSUPPORTED,
     "PhotometricInterpretation is 'RGB'"},
    {"zero.dcm", {"MONOCHROME2 ", 2, 2, 16, 0, NULL, "0 ", NULL, px, 8, 0}, LUMEN_ERR_FORMAT, "RescaleSlope is 0"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
    expect_refused(ctx, write_dicom(refused[i].file, &refused[i].s), refused[i].want, refused[i].words);
  /* a bare data set without pixels (no preamble, no "DICM"; pydicom's ExplVR_LitEndNoMeta.dcm): read from
     byte 0, refused as no image; bytes that are no data set: not DICOM */
  buf bare = {.n = 0};
  el(&bare, 0x0008, 0x0005, "CS", "ISO_IR 100", 10);
  el(&bare, 0x0028, 0x0010, "US", "\x02\x00", 2);
  expect_refused(ctx, save("bare.dcm", &bare), LUMEN_ERR_FORMAT, "no PixelData (7FE0,0010): not an image");
  buf junk = {.n = 0};
  put(&junk, "\x09\x00\x05\x00" "CS" "\x02\x00" "AB", 10);
  expect_refused(ctx, save("junk.dcm", &junk), LUMEN_ERR_FORMAT, "nor a data set from byte 0");
  /* the memory limit: CT_small (39206 bytes, 32768 decoded) under 50000 bytes */
  char file[1024];
  snprintf(file, sizeof file, "%s", testdata("CT_small.dcm"));
  lumen_dicom_read_opts o = {.max_bytes = 50000};
  lumen_image *im = NULL;
  assert_int_equal(lumen_dicom_read(ctx, file, &o, &im, NULL), LUMEN_ERR_OUT_OF_MEMORY);
  assert_null(im);
}

/* ---------------------------------------------------------------- bare data sets */

/* A 2 x 3 image as a bare data set (no preamble, no meta group: older exports), explicit VR or
   implicit VR little endian (the transfer syntax guessed from the first element, as pydicom and
   dcm2niix guess it): the pixels as written; as a series of one named file. */
static char *write_bare(const char *name, int implicit, const uint16_t *px) {
  buf b = {.n = 0};
  const struct { uint16_t g, e; const char *vr; const char *v; uint16_t len; } tags[] = {
    {0x0008, 0x0060, "CS", "OT", 2}, {0x0028, 0x0002, "US", "\x01\x00", 2}, {0x0028, 0x0004, "CS", "MONOCHROME2 ", 12},
    {0x0028, 0x0010, "US", "\x02\x00", 2}, {0x0028, 0x0011, "US", "\x03\x00", 2}, {0x0028, 0x0100, "US", "\x10\x00", 2},
    {0x0028, 0x0101, "US", "\x10\x00", 2}, {0x0028, 0x0102, "US", "\x0f\x00", 2}, {0x0028, 0x0103, "US", "\x00\x00", 2}};
  for (size_t i = 0; i < sizeof tags / sizeof *tags; i++) {
    if (!implicit) {
      el(&b, tags[i].g, tags[i].e, tags[i].vr, tags[i].v, tags[i].len);
      continue;
    }
    unsigned char h[8] = {(unsigned char)tags[i].g, (unsigned char)(tags[i].g >> 8), (unsigned char)tags[i].e,
                          (unsigned char)(tags[i].e >> 8), (unsigned char)tags[i].len, 0, 0, 0};
    put(&b, h, 8);
    put(&b, tags[i].v, tags[i].len);
  }
  const unsigned char pix_explicit[12] = {0xE0, 0x7F, 0x10, 0x00, 'O', 'W', 0, 0, 12, 0, 0, 0};
  const unsigned char pix_implicit[8] = {0xE0, 0x7F, 0x10, 0x00, 12, 0, 0, 0};
  if (implicit) put(&b, pix_implicit, 8);
  else put(&b, pix_explicit, 12);
  for (int i = 0; i < 6; i++) {
    unsigned char x[2] = {(unsigned char)px[i], (unsigned char)(px[i] >> 8)};
    put(&b, x, 2);
  }
  return save(name, &b);
}

static void bare_datasets(void **state) {
  lumen_ctx *ctx = *state;
  const uint16_t px[6] = {1, 300, 2, 40000, 5, 65535};
  for (int implicit = 0; implicit < 2; implicit++) {
    char *p = write_bare(implicit ? "bare_implicit.dcm" : "bare_explicit.dcm", implicit, px);
    lumen_image *im = NULL;
    lumen_dicom_info info;
    assert_int_equal(lumen_dicom_read(ctx, p, NULL, &im, &info), LUMEN_OK);
    assert_string_equal(info.transfer_syntax, implicit ? "1.2.840.10008.1.2" : "1.2.840.10008.1.2.1");
    assert_int_equal(lumen_image_dim(im, 0), 3);
    assert_int_equal(lumen_image_dim(im, 1), 2);
    const float *v = lumen_image_const_data(im);
    for (int i = 0; i < 6; i++) assert_true(v[i] == (float)px[i]);
    lumen_image_free(im);
  }
}

/* ---------------------------------------------------------------- packed 1-bit pixel data */

/* 2 frames of 3 x 3 in BitsAllocated 1 (a binary segmentation's layout, pydicom's liver_1frame.dcm):
   pixel i is bit i % 8 of byte i / 8 (PS3.5 8.1.1), the second frame starting inside the second
   byte. big: explicit VR big endian with PixelData OW, whose 16-bit words hold their bytes swapped
   (pydicom's liver_expb_1frame.dcm). */
static char *write_bits(const char *name, int big) {
  buf b = {.n = 0};
  memset(b.d, 0, 128);
  b.n = 128;
  put(&b, "DICM", 4);
  el(&b, 0x0002, 0x0010, "UI", big ? "1.2.840.10008.1.2.2\0" : "1.2.840.10008.1.2.1\0", 20);
  const struct { uint16_t e; const char *vr; const char *text; uint16_t v; } tags[] = {
    {0x0004, "CS", "MONOCHROME2 ", 0}, {0x0008, "IS", "2 ", 0}, {0x0010, "US", NULL, 3}, {0x0011, "US", NULL, 3},
    {0x0100, "US", NULL, 1}, {0x0101, "US", NULL, 1}, {0x0102, "US", NULL, 0}, {0x0103, "US", NULL, 0}};
  for (size_t i = 0; i < sizeof tags / sizeof *tags; i++) {
    uint16_t len = tags[i].text ? (uint16_t)strlen(tags[i].text) : 2;
    unsigned char h[8] = {0x28, 0x00, (unsigned char)tags[i].e, (unsigned char)(tags[i].e >> 8), (unsigned char)tags[i].vr[0],
                          (unsigned char)tags[i].vr[1], (unsigned char)len, (unsigned char)(len >> 8)};
    unsigned char v[2] = {(unsigned char)tags[i].v, (unsigned char)(tags[i].v >> 8)};
    if (big) {  /* group, element and length big endian */
      unsigned char t;
      t = h[0], h[0] = h[1], h[1] = t;
      t = h[2], h[2] = h[3], h[3] = t;
      t = h[6], h[6] = h[7], h[7] = t;
      t = v[0], v[0] = v[1], v[1] = t;
    }
    put(&b, h, 8);
    put(&b, tags[i].text ? (const void *)tags[i].text : v, len);
  }
  const unsigned char bits[4] = {0xA5, 0x3C, 0x02, 0x00}, swapped[4] = {0x3C, 0xA5, 0x00, 0x02};
  const unsigned char pix_le[12] = {0xE0, 0x7F, 0x10, 0x00, 'O', 'B', 0, 0, 4, 0, 0, 0};
  const unsigned char pix_be[12] = {0x7F, 0xE0, 0x00, 0x10, 'O', 'W', 0, 0, 0, 0, 0, 4};
  put(&b, big ? pix_be : pix_le, 12);
  put(&b, big ? swapped : bits, 4);
  return save(name, &b);
}

static void packed_bits(void **state) {
  lumen_ctx *ctx = *state;
  /* the bits of 0xA5, 0x3C, 0x02 from bit 0: 10100101 00111100 01 */
  const float want[18] = {1, 0, 1, 0, 0, 1, 0, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1};
  for (int big = 0; big < 2; big++) {
    lumen_image *im = NULL;
    lumen_dicom_info info;
    char *p = write_bits(big ? "bits1_be.dcm" : "bits1.dcm", big);
    assert_int_equal(lumen_dicom_read(ctx, p, NULL, &im, &info), LUMEN_OK);
    assert_int_equal(lumen_image_dim(im, 0), 3);
    assert_int_equal(lumen_image_dim(im, 2), 2);
    assert_int_equal(info.bits_allocated, 1);
    const float *v = lumen_image_const_data(im);
    for (int i = 0; i < 18; i++)
      if (v[i] != want[i]) fail_msg("%s pixel %d: %g, expected %g", p, i, v[i], want[i]);
    lumen_image_free(im);
  }
}

/* ---------------------------------------------------------------- an enhanced (multi-frame) file */

static void sq_begin(buf *b, uint16_t g, uint16_t e) {  /* a sequence of undefined length */
  unsigned char h[12] = {(unsigned char)g, (unsigned char)(g >> 8), (unsigned char)e, (unsigned char)(e >> 8),
                         'S', 'Q', 0, 0, 0xFF, 0xFF, 0xFF, 0xFF};
  put(b, h, 12);
}
static void delim(buf *b, uint16_t e, uint32_t len) {  /* item (E000), item / sequence delimiter (E00D, E0DD) */
  unsigned char h[8] = {0xFE, 0xFF, (unsigned char)e, (unsigned char)(e >> 8),
                        (unsigned char)len, (unsigned char)(len >> 8), (unsigned char)(len >> 16), (unsigned char)(len >> 24)};
  put(b, h, 8);
}
/* One functional group sequence holding one item with one or two text values. */
static void group(buf *b, uint16_t g, uint16_t e, uint16_t g1, uint16_t e1, const char *vr1, const char *v1,
                  uint16_t g2, uint16_t e2, const char *v2) {
  sq_begin(b, g, e);
  delim(b, 0xE000, 0xFFFFFFFFu);
  el(b, g1, e1, vr1, v1, (uint32_t)strlen(v1));
  if (v2) el(b, g2, e2, "DS", v2, (uint32_t)strlen(v2));
  delim(b, 0xE00D, 0);
  delim(b, 0xE0DD, 0);
}

enum { ENH_GOOD, ENH_FEWER_ITEMS, ENH_MORE_ITEMS, ENH_BAD_TPI, ENH_BAD_DT, ENH_ZERO_SLOPE, ENH_TWO_SHARED, ENH_TOP_RESCALE };

/* 2 frames of 2 x 2 (stored {1,2,3,4}, {10,20,30,40}); shared: PixelSpacing 0.5\0.25, orientation;
   per frame: TemporalPositionIndex k+1, FrameAcquisitionDateTime, NominalCardiacTriggerDelayTime,
   one position, rescale 2/-1 and 0.5/100. variant breaks one thing. */
static char *write_enhanced(const char *name, int variant) {
  static const char *const dt[2] = {"20000101000001.5+0100 ", "20000102"};
  static const char *const slope[2] = {"2 ", "0.5 "}, *const inter[2] = {"-1", "100 "};
  const double trigger[2] = {100.25, 350.25};
  const uint16_t px[8] = {1, 2, 3, 4, 10, 20, 30, 40};
  buf b = {.n = 0};
  memset(b.d, 0, 128);
  b.n = 128;
  put(&b, "DICM", 4);
  el(&b, 0x0002, 0x0010, "UI", "1.2.840.10008.1.2.1\0", 20);
  el(&b, 0x0028, 0x0004, "CS", "MONOCHROME2 ", 12);
  el(&b, 0x0028, 0x0008, "IS", "2 ", 2);
  us(&b, 0x0010, 2);
  us(&b, 0x0011, 2);
  us(&b, 0x0100, 16);
  us(&b, 0x0101, 16);
  us(&b, 0x0102, 15);
  us(&b, 0x0103, 0);
  if (variant == ENH_TOP_RESCALE) {
    el(&b, 0x0028, 0x1052, "DS", "7 ", 2);
    el(&b, 0x0028, 0x1053, "DS", "3 ", 2);
  }
  sq_begin(&b, 0x5200, 0x9229);
  for (int i = 0; i < (variant == ENH_TWO_SHARED ? 2 : 1); i++) {
    delim(&b, 0xE000, 0xFFFFFFFFu);
    group(&b, 0x0028, 0x9110, 0x0028, 0x0030, "DS", "0.5\\0.25", 0x0018, 0x0050, "3 ");
    group(&b, 0x0020, 0x9116, 0x0020, 0x0037, "DS", "1\\0\\0\\0\\1\\0 ", 0, 0, NULL);
    delim(&b, 0xE00D, 0);
  }
  delim(&b, 0xE0DD, 0);
  sq_begin(&b, 0x5200, 0x9230);
  int items = variant == ENH_FEWER_ITEMS ? 1 : variant == ENH_MORE_ITEMS ? 3 : 2;
  for (int k = 0; k < items; k++) {
    int f = k % 2;
    delim(&b, 0xE000, 0xFFFFFFFFu);
    sq_begin(&b, 0x0020, 0x9111);  /* FrameContentSequence: TemporalPositionIndex (UL), FrameAcquisitionDateTime */
    delim(&b, 0xE000, 0xFFFFFFFFu);
    uint32_t tpi = (uint32_t)f + 1;
    unsigned char u[4] = {(unsigned char)tpi, 0, 0, 0};
    el(&b, 0x0018, 0x9074, "DT", variant == ENH_BAD_DT && f == 1 ? "2000-1-2" : dt[f],
       (uint32_t)strlen(variant == ENH_BAD_DT && f == 1 ? "2000-1-2" : dt[f]));
    el(&b, 0x0020, 0x9128, "UL", u, variant == ENH_BAD_TPI && f == 1 ? 2 : 4);
    delim(&b, 0xE00D, 0);
    delim(&b, 0xE0DD, 0);
    sq_begin(&b, 0x0018, 0x9118);  /* CardiacSynchronizationSequence: NominalCardiacTriggerDelayTime (FD) */
    delim(&b, 0xE000, 0xFFFFFFFFu);
    unsigned char d8[8];
    memcpy(d8, &trigger[f], 8);  /* little-endian host (x86-64, aarch64) */
    el(&b, 0x0020, 0x9153, "FD", d8, 8);
    delim(&b, 0xE00D, 0);
    delim(&b, 0xE0DD, 0);
    group(&b, 0x0020, 0x9113, 0x0020, 0x0032, "DS", "-5\\7\\2.5 ", 0, 0, NULL);
    group(&b, 0x0028, 0x9145, 0x0028, 0x1052, "DS", inter[f], 0x0028, 0x1053,
          variant == ENH_ZERO_SLOPE && f == 1 ? "0 " : slope[f]);
    delim(&b, 0xE00D, 0);
  }
  delim(&b, 0xE0DD, 0);
  el(&b, 0x7FE0, 0x0010, "OW", NULL, 16);
  for (int i = 0; i < 8; i++) {
    unsigned char x[2] = {(unsigned char)px[i], (unsigned char)(px[i] >> 8)};
    put(&b, x, 2);
  }
  return save(name, &b);
}

/* The functional groups: per-frame values, shared ones filled in, each frame's own modality LUT in
   lumen_dicom_read, the file as a 1-slice x 2-frame series; hostile variants refused. */
static void enhanced_frames(void **state) {
  lumen_ctx *ctx = *state;
  char *p = write_enhanced("enh.dcm", ENH_GOOD);
  lumen_dicom_header h;
  assert_int_equal(lumen_dicom_read_series_header(ctx, p, 0, &h), LUMEN_OK);
  assert_int_equal(h.enhanced, 1);
  assert_int_equal(h.n_frames, 2);
  for (int k = 0; k < 2; k++) {
    const lumen_dicom_frame *f = &h.frames[k];
    assert_true(f->t.has_temporal && f->t.temporal_position == k + 1);
    assert_true(f->t.has_trigger && f->t.trigger_time_ms == (k ? 350.25 : 100.25));
    assert_true(f->t.has_position && f->t.position[0] == -5 && f->t.position[2] == 2.5);
    assert_true(f->t.has_orientation && f->t.orientation[4] == 1);  /* shared */
    assert_true(f->has_spacing && f->spacing[0] == 0.25 && f->spacing[1] == 0.5);  /* {x, y} */
    assert_true(f->t.has_thickness && f->t.slice_thickness == 3);
  }
  assert_true(h.frames[0].t.acquisition_time_s == 1.5 - 3600);  /* 00:00:01.5 at UTC+01:00 */
  assert_true(h.frames[1].t.acquisition_time_s == 86400);
  lumen_dicom_header_free(&h);
  lumen_image *im = NULL;
  lumen_dicom_info info;
  assert_int_equal(lumen_dicom_read(ctx, p, NULL, &im, &info), LUMEN_OK);
  assert_int_equal(lumen_image_dim(im, 2), 2);
  const float *v = lumen_image_const_data(im);
  const float want[8] = {1, 3, 5, 7, 105, 110, 115, 120};  /* 2 x - 1, then 0.5 x + 100 */
  for (int i = 0; i < 8; i++) assert_true(v[i] == want[i]);
  assert_true(info.has_rescale && info.rescale_slope == 2 && info.rescale_intercept == -1);  /* frame 1's */
  lumen_image_free(im);
  /* the file as a series: 1 slice x 2 frames ordered by the trigger delays (first in the precedence), times from them */
  const char *paths[1] = {p};
  lumen_dicom_series_info si;
  assert_int_equal(lumen_dicom_series_read(ctx, paths, 1, NULL, &im, &si), LUMEN_OK);
  assert_int_equal(lumen_image_ndim(im), 4);
  assert_int_equal(si.slices, 1);
  assert_int_equal(si.frames, 2);
  assert_string_equal(si.frame_order, "NominalCardiacTriggerDelayTime");
  assert_string_equal(si.frame_time_source, "NominalCardiacTriggerDelayTime");
  assert_true(si.frame_times_s[0] == 0 && si.frame_times_s[1] == 0.25);
  assert_true(si.spacing[0] == 0.25 && si.spacing[1] == 0.5 && si.spacing[2] == 3);
  v = lumen_image_const_data(im);
  const float flipped[8] = {5, 7, 1, 3, 115, 120, 105, 110};  /* rows bottom-up */
  for (int i = 0; i < 8; i++) assert_true(v[i] == flipped[i]);
  lumen_image_free(im);
  lumen_dicom_series_info_clear(&si);
  /* top-level RescaleSlope/Intercept win over the functional groups */
  p = write_enhanced("enh_top.dcm", ENH_TOP_RESCALE);
  assert_int_equal(lumen_dicom_read(ctx, p, NULL, &im, &info), LUMEN_OK);
  v = lumen_image_const_data(im);
  for (int i = 0; i < 8; i++) assert_true(v[i] == (float)(3 * (i < 4 ? i + 1 : 10 * (i - 3)) + 7));
  lumen_image_free(im);
  /* hostile */
  expect_refused(ctx, write_enhanced("enh_fewer.dcm", ENH_FEWER_ITEMS), LUMEN_ERR_FORMAT,
                 "PerFrameFunctionalGroupsSequence (5200,9230) has 1 items, expected NumberOfFrames (0028,0008) = 2");
  /* more items than frames (pydicom's liver_1frame.dcm: a file cut to fewer frames): item k is frame k, the
     third describes no pixels and is ignored (a warning); the frames are those of the good file */
  p = write_enhanced("enh_more.dcm", ENH_MORE_ITEMS);
  assert_int_equal(lumen_dicom_read(ctx, p, NULL, &im, &info), LUMEN_OK);
  v = lumen_image_const_data(im);
  for (int i = 0; i < 8; i++) assert_true(v[i] == want[i]);
  lumen_image_free(im);
  const char *more[1] = {p};
  assert_int_equal(lumen_dicom_series_read(ctx, more, 1, NULL, &im, &si), LUMEN_OK);
  assert_true(si.slices == 1 && si.frames == 2);
  v = lumen_image_const_data(im);
  for (int i = 0; i < 8; i++) assert_true(v[i] == flipped[i]);
  lumen_image_free(im);
  lumen_dicom_series_info_clear(&si);
  expect_refused(ctx, write_enhanced("enh_tpi.dcm", ENH_BAD_TPI), LUMEN_ERR_FORMAT, "TemporalPositionIndex (0020,9128)");
  expect_refused(ctx, write_enhanced("enh_dt.dcm", ENH_BAD_DT), LUMEN_ERR_FORMAT, "FrameAcquisitionDateTime (0018,9074)");
  expect_refused(ctx, write_enhanced("enh_slope.dcm", ENH_ZERO_SLOPE), LUMEN_ERR_FORMAT,
                 "PixelValueTransformationSequence (0028,9145) > RescaleSlope (0028,1053)");
  expect_refused(ctx, write_enhanced("enh_shared.dcm", ENH_TWO_SHARED), LUMEN_ERR_FORMAT,
                 "SharedFunctionalGroupsSequence (5200,9229) has more than one item");
}

static int cleanup(void **state) {
  (void)state;
  const char *names[] = {"signed.dcm", "mono1.dcm", "huge.dcm", "longer.dcm", "order.dcm", "bits.dcm", "rgb.dcm",
                         "zero.dcm", "enh.dcm", "enh_top.dcm", "enh_fewer.dcm", "enh_more.dcm", "enh_tpi.dcm",
                         "enh_dt.dcm", "enh_slope.dcm", "enh_shared.dcm", "bits1.dcm", "bits1_be.dcm", "bare.dcm", "junk.dcm",
                         "bare_explicit.dcm", "bare_implicit.dcm"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char *p = lumen_test_join(g_dir, names[i]);
    unlink(p);
  }
  return 0;
}

/* A thread that waits until released: this process has two threads while it lives. */
static int release_fd[2];
static void *waiting_thread(void *arg) {
  (void)arg;
  char c;
  while (read(release_fd[0], &c, 1) < 0 && errno == EINTR) {
  }
  return NULL;
}

/* With several threads (Python after any lumen call, MATLAB) the default still decodes in another
   process, the helper program: a decoder that aborts is an error, never the end of this process. */
static void threaded_process_isolates(void **state) {
  lumen_ctx *ctx = *state;
  pthread_t th;
  assert_int_equal(pipe(release_fd), 0);
  assert_int_equal(pthread_create(&th, NULL, waiting_thread, NULL), 0);
  assert_false(lumen_dicom_single_threaded());
  char file[1024];
  snprintf(file, sizeof file, "%s", testdata("MR_small_jpeg_ls_lossless.dcm"));
  lumen_image *a = NULL, *b = NULL;
  lumen_dicom_info ia;
  assert_int_equal(lumen_dicom_read(ctx, file, NULL, &a, &ia), LUMEN_OK);
  assert_int_equal(ia.isolated, 1);
  assert_int_equal(lumen_dicom_read_isolated(ctx, file, NULL, LUMEN_DICOM_ISOLATE_NEVER, &b, NULL), LUMEN_OK);
  lumen_test_assert_images_equal(a, b);
  lumen_image_free(a);
  lumen_image_free(b);
#if LUMEN_TEST_HOOKS
  setenv("LUMEN_TEST_DICOM_CHILD_ABORT", "1", 1);
  lumen_image *x = NULL;
  lumen_status st = lumen_dicom_read(ctx, file, NULL, &x, NULL);
  unsetenv("LUMEN_TEST_DICOM_CHILD_ABORT");
  assert_int_equal(st, LUMEN_ERR_FORMAT);
  assert_null(x);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "decoder aborted, signal 6"));
#endif
  assert_int_equal(write(release_fd[1], "x", 1), 1);
  pthread_join(th, NULL);
  close(release_fd[0]);
  close(release_fd[1]);
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
  const struct CMUnitTest tests[] = {LUMEN_TEST_WITH_CTX(metadata_like_pydicom), LUMEN_TEST_WITH_CTX(fork_equals_in_process),
                                     LUMEN_TEST_WITH_CTX(threaded_process_isolates),
                                     LUMEN_TEST_WITH_CTX(known_values), LUMEN_TEST_WITH_CTX(hostile_headers),
                                     LUMEN_TEST_WITH_CTX(enhanced_frames), LUMEN_TEST_WITH_CTX(packed_bits),
                                     LUMEN_TEST_WITH_CTX(bare_datasets)};
  return lumen_test_run_in_dir(g_dir, sizeof g_dir, "dicom", tests, LUMEN_TEST_COUNT(tests), NULL, cleanup);
}
