/* The image-format table (include/lumen/io.h "image formats"): the rows, the format a name asks
   for, lumen_image_probe on files whose name and content disagree and on hostile inputs (empty,
   truncated, a folder without DICOM, symbolic links, a FIFO, a gzip of something else), and
   lumen_image_read_any / lumen_image_write_any equal to the format's own reader and writer.
   Real third-party files: test_io_formats_refdata.c. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "test_support.h"
#include "lumen/io.h"

static char g_dir[64];

static char *path_of(const char *name) { return lumen_test_join(g_dir, name); }

static void write_bytes(const char *name, const void *data, size_t n) {
  FILE *f = fopen(path_of(name), "wb");
  assert_non_null(f);
  if (n) assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static void *read_bytes(const char *name, size_t *n) {
  FILE *f = fopen(path_of(name), "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long size = ftell(f);
  assert_true(size > 0);
  rewind(f);
  void *b = malloc((size_t)size);
  assert_non_null(b);
  assert_int_equal(fread(b, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  *n = (size_t)size;
  return b;
}

static void copy_file(const char *from, const char *to) {
  size_t n = 0;
  void *b = read_bytes(from, &n);
  write_bytes(to, b, n);
  free(b);
}

/* a 5 x 3 image: uint8 ramp, and a 4 x 3 x 2 float32 volume */
static lumen_image *ramp8(lumen_ctx *ctx) {
  const int64_t d[2] = {5, 3};
  lumen_image *im = lumen_test_image(ctx, 2, d, LUMEN_DTYPE_UINT8);
  uint8_t *p = lumen_image_data(im);
  for (int i = 0; i < 15; i++) p[i] = (uint8_t)(17 * i);
  return im;
}

static lumen_image *volume(lumen_ctx *ctx, int ndim) {
  const int64_t d[4] = {4, 3, 2, 2};
  lumen_image *im = lumen_test_image(ctx, ndim, d, LUMEN_DTYPE_FLOAT32);
  float *p = lumen_image_data(im);
  for (int64_t i = 0; i < lumen_image_count(im); i++) p[i] = 0.5f * (float)i - 3.0f;
  return im;
}

/* Writes the reference files: PNG 8 and 16 bit, NIfTI plain and gzip, 3-D and 4-D. */
static int set_up(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_image *a = ramp8(ctx), *v3 = volume(ctx, 3), *v4 = volume(ctx, 4);
  int ok = lumen_png_write(ctx, path_of("r8.png"), a, NULL) == LUMEN_OK;
  const int64_t d16[2] = {4, 2};
  lumen_image *w = lumen_test_image(ctx, 2, d16, LUMEN_DTYPE_UINT16);
  uint16_t *p16 = lumen_image_data(w);
  for (int i = 0; i < 8; i++) p16[i] = (uint16_t)(9000 * i + 1);
  ok = ok && lumen_png_write(ctx, path_of("r16.png"), w, NULL) == LUMEN_OK;
  ok = ok && lumen_nifti_write(ctx, path_of("v3.nii"), v3, NULL) == LUMEN_OK;
  ok = ok && lumen_nifti_write(ctx, path_of("v3.nii.gz"), v3, NULL) == LUMEN_OK;
  ok = ok && lumen_nifti_write(ctx, path_of("v4.nii.gz"), v4, NULL) == LUMEN_OK;
  lumen_image_free(a);
  lumen_image_free(w);
  lumen_image_free(v3);
  lumen_image_free(v4);
  lumen_ctx_destroy(ctx);
  return ok ? 0 : -1;
}

static int remove_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag;
  return ftw->level > 0 ? remove(p) : 0;
}

static int tear_down(void **state) {
  (void)state;
  return nftw(g_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void table_rows(void **state) {
  (void)state;
  assert_int_equal(lumen_image_format_count(), LUMEN_IMAGE_FORMAT_COUNT - 1);
  static const char *const names[] = {"png", "nifti", "dicom", "dicom_folder"};
  static const char *const suffixes[] = {".png", ".nii .nii.gz", ".dcm", ""};
  for (int k = 0; k < lumen_image_format_count(); k++) {
    lumen_format_info f;
    assert_int_equal(lumen_image_format_get(k, &f), LUMEN_OK);
    assert_int_equal(f.format, k + 1);
    assert_string_equal(f.name, names[k]);
    assert_string_equal(f.suffixes, suffixes[k]);
    assert_true(f.holds & LUMEN_FORMAT_HOLDS_2D);
    assert_int_equal(f.can_write, k < 2);
  }
  lumen_format_info f;
  assert_int_equal(lumen_image_format_get(4, &f), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_image_format_get(-1, &f), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(f.format, 0);
  assert_null(f.name);
}

static void names(void **state) {
  (void)state;
  lumen_format_info f;
  assert_int_equal(lumen_image_format_of_name("a/b.PNG", &f), LUMEN_IMAGE_FORMAT_PNG);
  assert_int_equal(f.suffix_length, 4);
  assert_int_equal(f.by_content, 0);
  assert_int_equal(lumen_image_format_of_name("sub-1_dce.nii.gz", &f), LUMEN_IMAGE_FORMAT_NIFTI);
  assert_int_equal(f.suffix_length, 7);
  assert_int_equal(lumen_image_format_of_name("x.Nii", &f), LUMEN_IMAGE_FORMAT_NIFTI);
  assert_int_equal(f.suffix_length, 4);
  assert_int_equal(lumen_image_format_of_name("x.dcm", NULL), LUMEN_IMAGE_FORMAT_DICOM);
  assert_int_equal(lumen_image_format_of_name("x.gz", &f), LUMEN_IMAGE_FORMAT_UNKNOWN);
  assert_null(f.name);
  assert_int_equal(lumen_image_format_of_name("png", &f), LUMEN_IMAGE_FORMAT_UNKNOWN);
  assert_int_equal(lumen_image_format_of_name(".nii.gz.txt", &f), LUMEN_IMAGE_FORMAT_UNKNOWN);
  assert_int_equal(lumen_image_format_of_name(NULL, &f), LUMEN_IMAGE_FORMAT_UNKNOWN);
}

static void expect_probe(lumen_ctx *ctx, const char *name, int format, int by_content, int suffix_length) {
  lumen_format_info f;
  lumen_status s = lumen_image_probe(ctx, path_of(name), &f);
  if (s != LUMEN_OK) fail_msg("%s: %s", name, lumen_ctx_last_error(ctx));
  if (f.format != format || f.by_content != by_content || f.suffix_length != suffix_length)
    fail_msg("%s: format %d by_content %d suffix %d, expected %d %d %d", name, f.format, f.by_content,
             f.suffix_length, format, by_content, suffix_length);
}

static void expect_refused(lumen_ctx *ctx, const char *name, lumen_status status, const char *words) {
  lumen_format_info f;
  lumen_status s = lumen_image_probe(ctx, path_of(name), &f);
  if (s != status) fail_msg("%s: status %s, expected %s", name, lumen_status_name(s), lumen_status_name(status));
  assert_int_equal(f.format, LUMEN_IMAGE_FORMAT_UNKNOWN);
  const char *m = lumen_ctx_last_error(ctx);
  if (!strstr(m, words) || !strstr(m, name)) fail_msg("%s: message '%s' lacks '%s' or the name", name, m, words);
}

static int g_warnings;
static void count_warnings(void *user, lumen_log_level level, const char *message) {
  (void)user, (void)message;
  if (level == LUMEN_LOG_WARNING) g_warnings++;
}

/* The content decides; the name only where the content says nothing. */
static void probe_content_first(void **state) {
  lumen_ctx *ctx = *state;
  lumen_ctx_set_log(ctx, count_warnings, NULL, LUMEN_LOG_WARNING);
  expect_probe(ctx, "r8.png", LUMEN_IMAGE_FORMAT_PNG, 1, 4);
  expect_probe(ctx, "v3.nii", LUMEN_IMAGE_FORMAT_NIFTI, 1, 4);
  expect_probe(ctx, "v3.nii.gz", LUMEN_IMAGE_FORMAT_NIFTI, 1, 7);
  assert_int_equal(g_warnings, 0);
  /* wrong suffixes: read as the content says, with a warning naming both */
  copy_file("r8.png", "png_named.nii");
  copy_file("v3.nii.gz", "nifti_named.png");
  copy_file("v3.nii", "nifti_no_suffix");
  expect_probe(ctx, "png_named.nii", LUMEN_IMAGE_FORMAT_PNG, 1, 0);
  expect_probe(ctx, "nifti_named.png", LUMEN_IMAGE_FORMAT_NIFTI, 1, 0);
  assert_int_equal(g_warnings, 2);
  expect_probe(ctx, "nifti_no_suffix", LUMEN_IMAGE_FORMAT_NIFTI, 1, 0);
  assert_int_equal(g_warnings, 2);
  /* a DICOM Part 10 signature, whatever the name */
  unsigned char dcm[200];
  memset(dcm, 0, sizeof dcm);
  memcpy(dcm + 128, "DICM", 4);
  write_bytes("scan.IMA", dcm, sizeof dcm);
  expect_probe(ctx, "scan.IMA", LUMEN_IMAGE_FORMAT_DICOM, 1, 0);
  /* a folder holding it (two levels down) is a DICOM folder */
  assert_int_equal(mkdir(path_of("study"), 0755), 0);
  assert_int_equal(mkdir(path_of("study/series"), 0755), 0);
  write_bytes("study/series/1", dcm, sizeof dcm);
  expect_probe(ctx, "study", LUMEN_IMAGE_FORMAT_DICOM_FOLDER, 1, 0);
  /* symbolic links are followed */
  assert_int_equal(symlink("r8.png", path_of("link_to_png")), 0);
  assert_int_equal(symlink("study", path_of("link_to_study")), 0);
  expect_probe(ctx, "link_to_png", LUMEN_IMAGE_FORMAT_PNG, 1, 0);
  expect_probe(ctx, "link_to_study", LUMEN_IMAGE_FORMAT_DICOM_FOLDER, 1, 0);
}

static void probe_hostile(void **state) {
  lumen_ctx *ctx = *state;
  /* empty, truncated, damaged: the name decides, so that the reader says what is wrong */
  write_bytes("empty.png", "", 0);
  write_bytes("empty", "", 0);
  expect_probe(ctx, "empty.png", LUMEN_IMAGE_FORMAT_PNG, 0, 4);
  expect_refused(ctx, "empty", LUMEN_ERR_FORMAT, "is empty (0 bytes)");
  size_t n = 0;
  unsigned char *nii = read_bytes("v3.nii", &n);
  write_bytes("cut.nii", nii, 300); /* the header cut before its magic */
  write_bytes("cut", nii, 300);
  expect_probe(ctx, "cut.nii", LUMEN_IMAGE_FORMAT_NIFTI, 0, 4);
  expect_refused(ctx, "cut", LUMEN_ERR_FORMAT, "its first bytes are 5c 01 00 00");
  nii[344] = 'x'; /* a damaged magic */
  write_bytes("badmagic.nii", nii, n);
  expect_probe(ctx, "badmagic.nii", LUMEN_IMAGE_FORMAT_NIFTI, 0, 4);
  free(nii);
  lumen_image *im = NULL;
  assert_int_equal(lumen_image_read_any(ctx, path_of("badmagic.nii"), NULL, &im, NULL), LUMEN_ERR_FORMAT);
  assert_null(im);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "magic")); /* the NIfTI reader's own message */
  assert_int_equal(lumen_image_read_any(ctx, path_of("empty.png"), NULL, &im, NULL), LUMEN_ERR_FORMAT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "empty.png"));
  /* text, and a gzip stream of text */
  write_bytes("notes.txt", "Ktrans 0.1 per minute\n", 22);
  expect_refused(ctx, "notes.txt", LUMEN_ERR_FORMAT, "starts with the text 'Ktrans 0.1 per m'");
  gzFile gz = gzopen(path_of("notes.gz"), "wb");
  assert_non_null(gz);
  assert_int_equal(gzwrite(gz, "hello, not an image", 19), 19);
  gzclose(gz);
  expect_refused(ctx, "notes.gz", LUMEN_ERR_FORMAT, "a gzip stream without a NIfTI header");
  /* formats lumen does not read are named (the signatures of nibabel's test files) */
  unsigned char other[400];
  memset(other, 0, sizeof other);
  memcpy(other, "CDF\x01", 4);
  write_bytes("minc1", other, sizeof other);
  expect_refused(ctx, "minc1", LUMEN_ERR_FORMAT, "it is a MINC 1 (NetCDF) file, which lumen does not read");
  memcpy(other, "\x89HDF\r\n\x1a\n", 8);
  write_bytes("minc2", other, sizeof other);
  expect_refused(ctx, "minc2", LUMEN_ERR_FORMAT, "it is a MINC 2 (HDF5) file");
  memset(other, 0, sizeof other);
  other[2] = 1, other[3] = 0x5c; /* sizeof_hdr 348 big endian, no NIfTI magic: Analyze 7.5 */
  write_bytes("analyze", other, sizeof other);
  expect_refused(ctx, "analyze", LUMEN_ERR_FORMAT, "it is an Analyze 7.5 header");
  write_bytes("short_analyze", other, 300); /* too short for a header: only its bytes */
  expect_refused(ctx, "short_analyze", LUMEN_ERR_FORMAT, "its first bytes are 00 00 01 5c");
  memset(other, 0, sizeof other);
  const unsigned char mgh[24] = {0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 3};
  memcpy(other, mgh, sizeof mgh);
  gz = gzopen(path_of("brain.mgz"), "wb");
  assert_non_null(gz);
  assert_int_equal(gzwrite(gz, other, sizeof other), (int)sizeof other);
  gzclose(gz);
  expect_refused(ctx, "brain.mgz", LUMEN_ERR_FORMAT, "it is a FreeSurfer MGH file");
  expect_refused(ctx, "notes.gz", LUMEN_ERR_FORMAT, "expected an image file (.png, .nii, .nii.gz, .dcm)");
  /* folders without DICOM */
  assert_int_equal(mkdir(path_of("plain"), 0755), 0);
  write_bytes("plain/a.txt", "text", 4);
  write_bytes("plain/b.dcm", "not DICOM at all", 16);
  expect_refused(ctx, "plain", LUMEN_ERR_FORMAT, "a folder without a DICOM file");
  lumen_format_info f;
  assert_int_equal(lumen_image_read_any(ctx, path_of("plain"), NULL, &im, NULL), LUMEN_ERR_FORMAT);
  assert_null(im);
  /* missing, dangling link, FIFO (never opened for reading: no block) */
  expect_refused(ctx, "missing.png", LUMEN_ERR_IO, "No such file");
  assert_int_equal(symlink("missing.png", path_of("dangling.nii")), 0);
  expect_refused(ctx, "dangling.nii", LUMEN_ERR_IO, "symbolic link to nothing");
  assert_int_equal(mkfifo(path_of("fifo"), 0600), 0);
  expect_refused(ctx, "fifo", LUMEN_ERR_IO, "FIFO");
  assert_int_equal(mkfifo(path_of("fifo.png"), 0600), 0);
  expect_probe(ctx, "fifo.png", LUMEN_IMAGE_FORMAT_PNG, 0, 4); /* the reader refuses it, without blocking */
  assert_int_equal(lumen_image_read_any(ctx, path_of("fifo.png"), NULL, &im, NULL), LUMEN_ERR_IO);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "FIFO"));
  /* arguments */
  assert_int_equal(lumen_image_probe(ctx, NULL, &f), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_image_probe(ctx, path_of("r8.png"), NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_image_read_any(ctx, NULL, NULL, &im, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  lumen_image_read_opts bad = {.max_ndim = 5};
  assert_int_equal(lumen_image_read_any(ctx, path_of("r8.png"), &bad, &im, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  bad.max_ndim = 0;
  bad.format = 99;
  assert_int_equal(lumen_image_read_any(ctx, path_of("r8.png"), &bad, &im, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_null(im);
}

/* read_any returns what the format's own reader returns, with its info. */
static void read_any_equals_readers(void **state) {
  lumen_ctx *ctx = *state;
  static const char *const pngs[] = {"r8.png", "r16.png"};
  for (int k = 0; k < 2; k++) {
    lumen_image *a = NULL, *b = NULL;
    int bits = 0;
    lumen_image_read_info info;
    assert_int_equal(lumen_png_read(ctx, path_of(pngs[k]), NULL, &a, &bits), LUMEN_OK);
    assert_int_equal(lumen_image_read_any(ctx, path_of(pngs[k]), NULL, &b, &info), LUMEN_OK);
    lumen_test_assert_images_equal(a, b);
    assert_int_equal(info.png_bit_depth, bits);
    assert_int_equal(info.format.format, LUMEN_IMAGE_FORMAT_PNG);
    assert_true(info.ndim == 2 && info.dims[0] == lumen_image_dim(a, 0) && info.dims[1] == lumen_image_dim(a, 1));
    assert_int_equal(info.dtype, lumen_image_dtype(a));
    lumen_image_free(b);
    lumen_image_read_opts ho = {.headers_only = 1};
    lumen_image_read_info hi;
    assert_int_equal(lumen_image_read_any(ctx, path_of(pngs[k]), &ho, &b, &hi), LUMEN_OK);
    assert_null(b);
    assert_true(hi.ndim == 2 && hi.dims[0] == info.dims[0] && hi.dims[1] == info.dims[1] && hi.dtype == info.dtype);
    lumen_image_free(a);
  }
  static const char *const niis[] = {"v3.nii", "v3.nii.gz", "v4.nii.gz", "nifti_named.png"};
  for (int k = 0; k < 4; k++) {
    for (int keep = 0; keep < 2; keep++) {
      lumen_nifti_read_opts no = {.keep_type = keep};
      lumen_image_read_opts ao = {.nifti_keep_type = keep};
      lumen_nifti_info ni;
      lumen_image_read_info info;
      lumen_image *a = NULL, *b = NULL;
      assert_int_equal(lumen_nifti_read(ctx, path_of(niis[k]), &no, &a, &ni), LUMEN_OK);
      assert_int_equal(lumen_image_read_any(ctx, path_of(niis[k]), &ao, &b, &info), LUMEN_OK);
      lumen_test_assert_images_equal(a, b);
      lumen_test_assert_affines_equal(a, b);
      assert_int_equal(info.format.format, LUMEN_IMAGE_FORMAT_NIFTI);
      assert_int_equal(info.nifti.ndim, ni.ndim);
      assert_int_equal(info.nifti.compressed, ni.compressed);
      lumen_image_free(a);
      lumen_image_free(b);
    }
  }
  /* max_ndim: a 4-D NIfTI refused, naming the shape (from the header alone with headers_only) */
  lumen_image_read_opts o3 = {.max_ndim = 3};
  lumen_image *im = NULL;
  lumen_image_read_info info;
  assert_int_equal(lumen_image_read_any(ctx, path_of("v4.nii.gz"), &o3, &im, &info), LUMEN_ERR_UNSUPPORTED);
  assert_null(im);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "is a 4-D image (4x3x2x2), expected a 2-D or 3-D image"));
  assert_int_equal(info.format.format, LUMEN_IMAGE_FORMAT_UNKNOWN); /* cleared on failure */
  o3.headers_only = 1;
  assert_int_equal(lumen_image_read_any(ctx, path_of("v4.nii.gz"), &o3, &im, &info), LUMEN_ERR_UNSUPPORTED);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "is a 4-D image (4x3x2x2), expected a 2-D or 3-D image"));
  o3.headers_only = 0;
  assert_int_equal(lumen_image_read_any(ctx, path_of("v3.nii"), &o3, &im, &info), LUMEN_OK);
  assert_int_equal(lumen_image_ndim(im), 3);
  lumen_image_free(im);
  /* format given: no probe (the PNG reader refuses NIfTI bytes) */
  lumen_image_read_opts forced = {.format = LUMEN_IMAGE_FORMAT_PNG};
  assert_int_equal(lumen_image_read_any(ctx, path_of("nifti_named.png"), &forced, &im, NULL), LUMEN_ERR_FORMAT);
  assert_null(im);
}

static void write_any(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_image *a = ramp8(ctx), *v3 = volume(ctx, 3), *back = NULL;
  assert_int_equal(lumen_image_write_any(ctx, path_of("w.PNG"), a, NULL), LUMEN_OK);
  assert_int_equal(lumen_png_read(ctx, path_of("w.PNG"), NULL, &back, NULL), LUMEN_OK);
  lumen_test_assert_images_equal(a, back);
  lumen_image_free(back);
  assert_int_equal(lumen_image_write_any(ctx, path_of("w.PNG"), a, NULL), LUMEN_ERR_IO); /* exists */
  lumen_png_write_opts po = {.bit_depth = 16};
  lumen_image_write_opts wo = {.overwrite = 1, .png = &po};
  assert_int_equal(lumen_image_write_any(ctx, path_of("w.PNG"), a, &wo), LUMEN_OK);
  int bits = 0;
  assert_int_equal(lumen_png_read(ctx, path_of("w.PNG"), NULL, &back, &bits), LUMEN_OK);
  assert_int_equal(bits, 16);
  lumen_image_free(back);
  lumen_nifti_write_opts no = {.description = "write_any"};
  wo.nifti = &no;
  assert_int_equal(lumen_image_write_any(ctx, path_of("w.nii.gz"), v3, &wo), LUMEN_OK);
  lumen_nifti_info ni;
  assert_int_equal(lumen_nifti_read(ctx, path_of("w.nii.gz"), NULL, &back, &ni), LUMEN_OK);
  lumen_test_assert_images_equal(v3, back);
  assert_int_equal(ni.compressed, 1);
  assert_string_equal(ni.descrip, "write_any");
  lumen_image_free(back);
  /* refused before anything is written */
  assert_int_equal(lumen_image_write_any(ctx, path_of("v.png"), v3, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "a 3-D image cannot be a png file"));
  assert_int_equal(lumen_image_write_any(ctx, path_of("x.tif"), a, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "unknown output type (by its name), expected .png, .nii, .nii.gz"));
  assert_int_equal(lumen_image_write_any(ctx, path_of("x.dcm"), a, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "lumen does not write this format"));
  assert_int_equal(access(path_of("v.png"), F_OK), -1);
  assert_int_equal(access(path_of("x.tif"), F_OK), -1);
  assert_int_equal(access(path_of("x.dcm"), F_OK), -1);
  lumen_image_free(a);
  lumen_image_free(v3);
  lumen_ctx_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(table_rows), cmocka_unit_test(names),
                                     LUMEN_TEST_WITH_CTX(probe_content_first), LUMEN_TEST_WITH_CTX(probe_hostile),
                                     LUMEN_TEST_WITH_CTX(read_any_equals_readers), cmocka_unit_test(write_any)};
  return lumen_test_run_in_dir(g_dir, sizeof g_dir, "formats", tests, LUMEN_TEST_COUNT(tests), set_up, tear_down);
}
