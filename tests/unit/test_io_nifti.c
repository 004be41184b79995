/* NIfTI reading and writing: round trips, geometry, scaling, hostile headers, atomic writes. */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <nifti/nifti1.h>
#include <nifti/nifti2.h>
#include "test_support.h"
#include "lumen/io.h"
#include "io/io_internal.h"

static char g_dir[LUMEN_TEST_DIR_SIZE]; /* each test's fresh folder (LUMEN_TEST_IN_DIR) */

static char *path_of(const char *name) { return lumen_test_join(g_dir, name); }

static int exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

static int temp_files_left(void) {
  DIR *d = opendir(g_dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, ".tmp-")) n++;
  if (d) closedir(d);
  return n;
}

static void f_put(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

static void expect_error(lumen_ctx *ctx, lumen_status got, lumen_status want, const char *path, const char *needle) {
  const char *msg = lumen_ctx_last_error(ctx);
  if (getenv("LUMEN_TEST_VERBOSE")) fprintf(stderr, "  [%s] %s\n", lumen_status_name(got), msg);
  if (got != want || !strstr(msg, path) || (needle && !strstr(msg, needle))) {
    print_error("status %s (want %s), message: %s\n(needle '%s', path '%s')\n", lumen_status_name(got),
                lumen_status_name(want), msg, needle ? needle : "", path);
    fail();
  }
}

/* An image with distinct values in every voxel of the given type. */
static lumen_image *make_image(lumen_ctx *ctx, int ndim, const int64_t *dims, lumen_dtype t) {
  lumen_image *im = NULL;
  assert_int_equal(lumen_image_create(ctx, ndim, dims, t, lumen_device_cpu(), 0, &im), LUMEN_OK);
  int64_t n = lumen_image_count(im);
  void *d = lumen_image_data(im);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = (i * 7) % 100 - (t == LUMEN_DTYPE_UINT8 || t == LUMEN_DTYPE_UINT16 || t == LUMEN_DTYPE_UINT32 ||
                                   t == LUMEN_DTYPE_UINT64 ? 0 : 50);
    switch (t) {
      case LUMEN_DTYPE_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
      case LUMEN_DTYPE_INT8: ((int8_t *)d)[i] = (int8_t)v; break;
      case LUMEN_DTYPE_UINT16: ((uint16_t *)d)[i] = (uint16_t)(v * 600); break;
      case LUMEN_DTYPE_INT16: ((int16_t *)d)[i] = (int16_t)(v * 300); break;
      case LUMEN_DTYPE_UINT32: ((uint32_t *)d)[i] = (uint32_t)v * 40000000u; break;
      case LUMEN_DTYPE_INT32: ((int32_t *)d)[i] = (int32_t)v * 40000000; break;
      case LUMEN_DTYPE_UINT64: ((uint64_t *)d)[i] = (uint64_t)v << 40; break;
      case LUMEN_DTYPE_INT64: ((int64_t *)d)[i] = v * ((int64_t)1 << 40); break;
      case LUMEN_DTYPE_FLOAT32: ((float *)d)[i] = (float)v * 0.25f; break;
      case LUMEN_DTYPE_FLOAT64: ((double *)d)[i] = (double)v * 0.125; break;
      case LUMEN_DTYPE_FLOAT16: ((uint16_t *)d)[i] = lumen_float_to_half((float)v * 0.5f); break;
      default: break;
    }
  }
  return im;
}

/* A float32 3-D make_image written to path (asserted); the caller frees it. */
static lumen_image *write_volume(lumen_ctx *ctx, const int64_t *dims, const char *path) {
  lumen_image *im = make_image(ctx, 3, dims, LUMEN_DTYPE_FLOAT32);
  assert_int_equal(lumen_nifti_write(ctx, path, im, NULL), LUMEN_OK);
  return im;
}

static const lumen_dtype k_types[] = {LUMEN_DTYPE_UINT8,  LUMEN_DTYPE_INT8,   LUMEN_DTYPE_UINT16, LUMEN_DTYPE_INT16,
                                      LUMEN_DTYPE_UINT32, LUMEN_DTYPE_INT32,  LUMEN_DTYPE_UINT64, LUMEN_DTYPE_INT64,
                                      LUMEN_DTYPE_FLOAT32, LUMEN_DTYPE_FLOAT64};

static void round_trip_types(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  const int64_t dims[3] = {5, 4, 3};
  static const char *const names[4] = {"rt.nii", "rt.nii.gz", "rt2.nii", "rt2.nii.gz"};
  for (size_t k = 0; k < sizeof k_types / sizeof *k_types; k++) {
    lumen_image *im = make_image(ctx, 3, dims, k_types[k]);
    for (int f = 0; f < 4; f++) {
      const char *p = path_of(names[f]);
      lumen_nifti_write_opts wo = {0};
      wo.version = f >= 2 ? 2 : 1;
      wo.overwrite = 1;
      assert_int_equal(lumen_nifti_write(ctx, p, im, &wo), LUMEN_OK);
      lumen_nifti_read_opts ro = {0};
      ro.keep_type = 1;
      lumen_image *back = NULL;
      lumen_nifti_info info;
      assert_int_equal(lumen_nifti_read(ctx, p, &ro, &back, &info), LUMEN_OK);
      assert_int_equal(info.version, wo.version);
      assert_int_equal(info.compressed, f % 2);
      assert_int_equal(lumen_image_dtype(back), k_types[k]);
      assert_int_equal(lumen_image_ndim(back), 3);
      assert_int_equal(lumen_image_nbytes(back), lumen_image_nbytes(im));
      assert_memory_equal(lumen_image_const_data(back), lumen_image_const_data(im), (size_t)lumen_image_nbytes(im));
      lumen_image_free(back);
      /* default: float32 with the same values */
      assert_int_equal(lumen_nifti_read(ctx, p, NULL, &back, NULL), LUMEN_OK);
      assert_int_equal(lumen_image_dtype(back), LUMEN_DTYPE_FLOAT32);
      lumen_image *conv = NULL;
      assert_int_equal(lumen_image_convert(ctx, im, LUMEN_DTYPE_FLOAT32, &conv), LUMEN_OK);
      assert_memory_equal(lumen_image_const_data(back), lumen_image_const_data(conv), 60 * sizeof(float));
      LUMEN_TEST_FREE_IMAGES(conv, back);
    }
    lumen_image_free(im);
  }
  assert_int_equal(temp_files_left(), 0);
  lumen_ctx_destroy(ctx);
}

static void patch_file(const char *p, long off, const void *bytes, size_t n) {
  FILE *fp = fopen(p, "r+b");
  assert_non_null(fp);
  assert_int_equal(fseek(fp, off, SEEK_SET), 0);
  assert_int_equal(fwrite(bytes, 1, n, fp), n);
  fclose(fp);
}

static void scaling_each_integer_type(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  const int64_t dims[2] = {6, 5};
  for (size_t k = 0; k < 8; k++) {
    for (int v = 1; v <= 2; v++) {
      lumen_image *im = make_image(ctx, 2, dims, k_types[k]);
      const char *p = path_of(v == 1 ? "scaled.nii" : "scaled2.nii");
      lumen_nifti_write_opts wo = {0};
      wo.overwrite = 1;
      wo.version = v;
      assert_int_equal(lumen_nifti_write(ctx, p, im, &wo), LUMEN_OK);
      if (v == 1) {
        float slope = 0.5f, inter = -3.0f;
        patch_file(p, offsetof(nifti_1_header, scl_slope), &slope, 4);
        patch_file(p, offsetof(nifti_1_header, scl_inter), &inter, 4);
      } else {
        double slope = 0.5, inter = -3.0;
        patch_file(p, offsetof(nifti_2_header, scl_slope), &slope, 8);
        patch_file(p, offsetof(nifti_2_header, scl_inter), &inter, 8);
      }
      lumen_image *back = NULL;
      lumen_nifti_info info;
      assert_int_equal(lumen_nifti_read(ctx, p, NULL, &back, &info), LUMEN_OK);
      assert_true(info.scaled);
      assert_true(info.scl_slope == 0.5 && info.scl_inter == -3.0);
      lumen_image *conv = NULL;
      assert_int_equal(lumen_image_convert(ctx, im, LUMEN_DTYPE_FLOAT32, &conv), LUMEN_OK);
      const float *a = lumen_image_const_data(back), *b = lumen_image_const_data(conv);
      for (int i = 0; i < 30; i++) lumen_test_assert_close(a[i], 0.5 * b[i] - 3.0, 0, 1e-6, "scaled voxel");
      lumen_image_free(back);
      lumen_nifti_read_opts ro = {0};
      ro.keep_type = 1;
      assert_int_equal(lumen_nifti_read(ctx, p, &ro, &back, &info), LUMEN_OK);
      assert_false(info.scaled);
      assert_int_equal(lumen_image_dtype(back), k_types[k]);
      assert_memory_equal(lumen_image_const_data(back), lumen_image_const_data(im), (size_t)lumen_image_nbytes(im));
      LUMEN_TEST_FREE_IMAGES(back, conv, im);
    }
  }
  lumen_ctx_destroy(ctx);
}

static void geometry_and_intent(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  /* a rotation about z by 90 degrees with voxel sizes 2, 1.5, 3 and an offset */
  const double aff[16] = {0, -1.5, 0, 10.5, 2, 0, 0, -20.25, 0, 0, 3, 7, 0, 0, 0, 1};
  const double sp[4] = {2, 1.5, 3, 2.5};
  for (int nd = 2; nd <= 4; nd++) {
    for (int v = 1; v <= 2; v++) {
      const int64_t dims[4] = {4, 3, 2, 5};
      lumen_image *im = make_image(ctx, nd, dims, LUMEN_DTYPE_FLOAT32);
      assert_int_equal(lumen_image_set_affine(ctx, im, aff), LUMEN_OK);
      assert_int_equal(lumen_image_set_spacing(ctx, im, sp, nd), LUMEN_OK);
      const char *p = path_of("geom.nii.gz");
      lumen_nifti_write_opts wo = {0};
      wo.overwrite = 1;
      wo.version = v;
      wo.intent_name = "Ktrans";
      wo.description = "lumen test";
      wo.time_unit = LUMEN_NIFTI_UNITS_MSEC;
      assert_int_equal(lumen_nifti_write(ctx, p, im, &wo), LUMEN_OK);
      lumen_image *back = NULL;
      lumen_nifti_info info;
      assert_int_equal(lumen_nifti_read(ctx, p, NULL, &back, &info), LUMEN_OK);
      assert_int_equal(lumen_image_ndim(back), nd);
      assert_int_equal(info.ndim, nd);
      for (int i = 0; i < nd; i++) assert_true(lumen_image_dim(back, i) == dims[i]);
      double a2[16], s2[4];
      lumen_image_get_affine(back, a2);
      lumen_image_get_spacing(back, s2, nd);
      for (int i = 0; i < 16; i++) lumen_test_assert_close(a2[i], aff[i], 1e-6, 0, "affine");
      for (int i = 0; i < nd; i++) lumen_test_assert_close(s2[i], sp[i], 1e-6, 0, "spacing");
      assert_string_equal(info.affine_source, "sform");
      assert_string_equal(info.intent_name, "Ktrans");
      assert_int_equal(info.intent_code, LUMEN_NIFTI_INTENT_ESTIMATE);
      assert_string_equal(info.descrip, "lumen test");
      assert_int_equal(info.space_unit, LUMEN_NIFTI_UNITS_MM);
      assert_int_equal(info.time_unit, LUMEN_NIFTI_UNITS_MSEC);
      if (nd == 4) {
        lumen_test_assert_close(info.time_step, 2.5, 1e-9, 0, "time step");
        lumen_test_assert_close(info.time_step_s, 2.5e-3, 1e-12, 0, "time step in s");
      }
      assert_int_equal(info.sform_code, 1);
      assert_int_equal(info.qform_code, 1);
      assert_memory_equal(lumen_image_const_data(back), lumen_image_const_data(im), (size_t)lumen_image_nbytes(im));
      LUMEN_TEST_FREE_IMAGES(back, im);
    }
  }
  /* qform only (sform_code 0 in the file): the rigid affine comes back from the quaternion */
  const int64_t dims[3] = {4, 3, 2};
  lumen_image *im = make_image(ctx, 3, dims, LUMEN_DTYPE_INT16);
  assert_int_equal(lumen_image_set_affine(ctx, im, aff), LUMEN_OK);
  assert_int_equal(lumen_image_set_spacing(ctx, im, sp, 3), LUMEN_OK);
  const char *p = path_of("qform.nii");
  assert_int_equal(lumen_nifti_write(ctx, p, im, NULL), LUMEN_OK);
  short zero = 0;
  patch_file(p, offsetof(nifti_1_header, sform_code), &zero, 2);
  lumen_nifti_info info;
  assert_int_equal(lumen_nifti_read_header(ctx, p, NULL, &info), LUMEN_OK);
  assert_string_equal(info.affine_source, "qform");
  for (int i = 0; i < 16; i++) lumen_test_assert_close(info.affine[i], aff[i], 1e-5, 0, "qform affine");
  patch_file(p, offsetof(nifti_1_header, qform_code), &zero, 2);
  assert_int_equal(lumen_nifti_read_header(ctx, p, NULL, &info), LUMEN_OK);
  assert_string_equal(info.affine_source, "pixdim");
  lumen_test_assert_close(info.affine[0], 2, 0, 0, "pixdim affine x");
  lumen_test_assert_close(info.affine[5], 1.5, 0, 0, "pixdim affine y");
  lumen_image_free(im);
  /* float16 images are stored as float32 */
  im = make_image(ctx, 3, dims, LUMEN_DTYPE_FLOAT16);
  p = path_of("half.nii");
  assert_int_equal(lumen_nifti_write(ctx, p, im, NULL), LUMEN_OK);
  lumen_image *back = NULL;
  lumen_nifti_read_opts ro = {1, 0};
  assert_int_equal(lumen_nifti_read(ctx, p, &ro, &back, &info), LUMEN_OK);
  assert_int_equal(lumen_image_dtype(back), LUMEN_DTYPE_FLOAT32);
  const uint16_t *h = lumen_image_const_data(im);
  const float *f = lumen_image_const_data(back);
  for (int i = 0; i < 24; i++) assert_true(f[i] == lumen_half_to_float(h[i]));
  LUMEN_TEST_FREE_IMAGES(back, im);
  /* intent names over 15 characters are refused */
  im = make_image(ctx, 3, dims, LUMEN_DTYPE_FLOAT32);
  lumen_nifti_write_opts wo = {0};
  wo.intent_name = "a_name_too_long_";
  assert_int_equal(lumen_nifti_write(ctx, path_of("long.nii"), im, &wo), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "intent_name"));
  assert_false(exists(path_of("long.nii")));
  lumen_image_free(im);
  lumen_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ hostile files */

static void write_raw(const char *p, const void *data, size_t n, int gz) {
  if (gz) {
    gzFile g = gzopen(p, "wb");
    assert_non_null(g);
    assert_int_equal(gzwrite(g, data, (unsigned)n), (int)n);
    gzclose(g);
  } else {
    FILE *fp = fopen(p, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, n, fp), n);
    fclose(fp);
  }
}

static nifti_1_header good_n1(void) {
  nifti_1_header h;
  memset(&h, 0, sizeof h);
  h.sizeof_hdr = 348;
  h.dim[0] = 3;
  h.dim[1] = 4;
  h.dim[2] = 4;
  h.dim[3] = 2;
  for (int i = 4; i < 8; i++) h.dim[i] = 1;
  for (int i = 0; i < 8; i++) h.pixdim[i] = 1;
  h.datatype = NIFTI_TYPE_INT16;
  h.bitpix = 16;
  h.vox_offset = 352;
  memcpy(h.magic, "n+1", 4);
  return h;
}

/* Writes header + 4 extension bytes + data bytes (zeros). */
static void write_n1(const char *p, const nifti_1_header *h, size_t data_bytes, int gz) {
  size_t n = 352 + data_bytes;
  unsigned char *buf = calloc(1, n);
  memcpy(buf, h, sizeof *h);
  write_raw(p, buf, n, gz);
  free(buf);
}

static void check_hostile(lumen_ctx *ctx, const char *name, lumen_status want, const char *needle) {
  const char *p = path_of(name);
  lumen_image *im = (lumen_image *)0x1;
  lumen_nifti_info info;
  lumen_status s = lumen_nifti_read(ctx, p, NULL, &im, &info);
  expect_error(ctx, s, want, p, needle);
  assert_null(im);
  s = lumen_nifti_read_header(ctx, p, NULL, &info);
  if (want != LUMEN_ERR_FORMAT || !strstr(name, "trunc-gz")) expect_error(ctx, s, want, p, needle);
}

static void hostile_headers(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  nifti_1_header h;

  h = good_n1();
  write_n1(path_of("good.nii"), &h, 64, 0);
  lumen_image *im = NULL;
  assert_int_equal(lumen_nifti_read(ctx, path_of("good.nii"), NULL, &im, NULL), LUMEN_OK);
  lumen_image_free(im);

  h = good_n1(); h.dim[0] = 0;
  write_n1(path_of("dim0.nii"), &h, 64, 0);
  check_hostile(ctx, "dim0.nii", LUMEN_ERR_FORMAT, "dim[0] is 0");
  h = good_n1(); h.dim[0] = 9;
  write_n1(path_of("dim0big.nii"), &h, 64, 0);
  check_hostile(ctx, "dim0big.nii", LUMEN_ERR_FORMAT, "dim[0] is 9");
  h = good_n1(); h.dim[2] = 0;
  write_n1(path_of("dimzero.nii"), &h, 64, 0);
  check_hostile(ctx, "dimzero.nii", LUMEN_ERR_FORMAT, "dim[2] is 0, expected >= 1");
  h = good_n1(); h.dim[3] = -7;
  write_n1(path_of("dimneg.nii"), &h, 64, 0);
  check_hostile(ctx, "dimneg.nii", LUMEN_ERR_FORMAT, "dim[3] is -7");
  h = good_n1(); h.bitpix = 32;
  write_n1(path_of("bitpix.nii"), &h, 64, 0);
  check_hostile(ctx, "bitpix.nii", LUMEN_ERR_FORMAT, "bitpix is 32, expected 16");
  h = good_n1(); h.datatype = 9999;
  write_n1(path_of("dtype.nii"), &h, 64, 0);
  check_hostile(ctx, "dtype.nii", LUMEN_ERR_FORMAT, "datatype is 9999");
  h = good_n1(); h.datatype = NIFTI_TYPE_COMPLEX64; h.bitpix = 64;
  write_n1(path_of("complex.nii"), &h, 256, 0);
  check_hostile(ctx, "complex.nii", LUMEN_ERR_UNSUPPORTED, "complex64");
  h = good_n1(); h.vox_offset = 1e12f;
  write_n1(path_of("voxoff.nii"), &h, 64, 0);
  check_hostile(ctx, "voxoff.nii", LUMEN_ERR_FORMAT, "truncated");
  h = good_n1(); h.vox_offset = NAN;
  write_n1(path_of("voxnan.nii"), &h, 64, 0);
  check_hostile(ctx, "voxnan.nii", LUMEN_ERR_FORMAT, "vox_offset");
  h = good_n1(); h.vox_offset = 1e12f;
  write_n1(path_of("voxoff.nii.gz"), &h, 64, 1);
  check_hostile(ctx, "voxoff.nii.gz", LUMEN_ERR_FORMAT, "truncated");
  h = good_n1();
  write_n1(path_of("short.nii"), &h, 20, 0);  /* 64 bytes needed */
  check_hostile(ctx, "short.nii", LUMEN_ERR_FORMAT, "truncated");
  h = good_n1(); h.dim[0] = 5; h.dim[5] = 3;
  write_n1(path_of("fived.nii"), &h, 192, 0);
  check_hostile(ctx, "fived.nii", LUMEN_ERR_UNSUPPORTED, "dim[5] is 3");
  h = good_n1(); memcpy(h.magic, "ni1", 4);
  write_n1(path_of("pair.nii"), &h, 64, 0);
  check_hostile(ctx, "pair.nii", LUMEN_ERR_FORMAT, "pair (magic \"ni1\") but is not named .hdr");
  h = good_n1(); h.sizeof_hdr = 1000;
  write_n1(path_of("sizeof.nii"), &h, 64, 0);
  check_hostile(ctx, "sizeof.nii", LUMEN_ERR_FORMAT, "sizeof_hdr is 1000");
  write_raw(path_of("text.nii"), "hello, world\n", 13, 0);
  check_hostile(ctx, "text.nii", LUMEN_ERR_FORMAT, "too short");
  write_raw(path_of("empty.nii.gz"), "", 0, 0);
  check_hostile(ctx, "empty.nii.gz", LUMEN_ERR_FORMAT, "too short");
  check_hostile(ctx, "missing.nii", LUMEN_ERR_IO, "cannot open");

  /* 5-D with trailing 1s is read as 3-D */
  h = good_n1(); h.dim[0] = 5;
  write_n1(path_of("squeeze.nii"), &h, 64, 0);
  assert_int_equal(lumen_nifti_read(ctx, path_of("squeeze.nii"), NULL, &im, NULL), LUMEN_OK);
  assert_int_equal(lumen_image_ndim(im), 4);
  lumen_image_free(im);

  /* NIfTI-2: overflowing products and 10^15 voxels are refused before any allocation */
  nifti_2_header h2;
  memset(&h2, 0, sizeof h2);
  h2.sizeof_hdr = 540;
  static const char magic2[8] = {'n', '+', '2', '\0', '\r', '\n', '\032', '\n'};
  memcpy(h2.magic, magic2, 8);
  h2.datatype = NIFTI_TYPE_UINT8;
  h2.bitpix = 8;
  h2.dim[0] = 3;
  h2.dim[1] = h2.dim[2] = h2.dim[3] = INT64_C(1) << 40;
  for (int i = 4; i < 8; i++) h2.dim[i] = 1;
  h2.vox_offset = 544;
  unsigned char buf[1024] = {0};
  memcpy(buf, &h2, sizeof h2);
  write_raw(path_of("overflow.nii"), buf, sizeof buf, 0);
  check_hostile(ctx, "overflow.nii", LUMEN_ERR_OVERFLOW, "overflows");
  h2.dim[1] = h2.dim[2] = h2.dim[3] = 100000;  /* 10^15 voxels */
  memcpy(buf, &h2, sizeof h2);
  write_raw(path_of("huge.nii.gz"), buf, sizeof buf, 1);
  check_hostile(ctx, "huge.nii.gz", LUMEN_ERR_OUT_OF_MEMORY, "memory limit");
  /* a caller's max_bytes is honoured */
  lumen_nifti_read_opts ro = {0, 100};
  assert_int_equal(lumen_nifti_read(ctx, path_of("good.nii"), &ro, &im, NULL), LUMEN_ERR_OUT_OF_MEMORY);
  assert_null(im);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "good.nii"));

  /* truncated .nii.gz: a real file cut in the middle of its compressed data */
  const int64_t dims[3] = {64, 64, 16};
  lumen_image *big = make_image(ctx, 3, dims, LUMEN_DTYPE_FLOAT32);
  float *bv = lumen_image_data(big);
  for (int i = 0; i < 64 * 64 * 16; i++) bv[i] = (float)sin(i * 0.37) * 1000.0f;  /* poorly compressible */
  const char *full = path_of("full.nii.gz");
  assert_int_equal(lumen_nifti_write(ctx, full, big, NULL), LUMEN_OK);
  lumen_image_free(big);
  struct stat st;
  assert_int_equal(stat(full, &st), 0);
  char *bytes = NULL;
  size_t len = 0;
  assert_int_equal(lumen_io_slurp(ctx, "test", full, INT64_C(1) << 30, &bytes, &len), LUMEN_OK);
  write_raw(path_of("trunc-gz.nii.gz"), bytes, len / 2, 0);
  check_hostile(ctx, "trunc-gz.nii.gz", LUMEN_ERR_FORMAT, "truncated");
  write_raw(path_of("trunc-gz-tail.nii.gz"), bytes, len - 4, 0);  /* only the gzip trailer is cut */
  check_hostile(ctx, "trunc-gz-tail.nii.gz", LUMEN_ERR_FORMAT, "truncated");
  bytes[len / 2] ^= 0x55;  /* corrupt data in the middle */
  write_raw(path_of("corrupt-gz.nii.gz"), bytes, len, 0);
  im = (lumen_image *)0x1;
  lumen_status s = lumen_nifti_read(ctx, path_of("corrupt-gz.nii.gz"), NULL, &im, NULL);
  expect_error(ctx, s, LUMEN_ERR_FORMAT, path_of("corrupt-gz.nii.gz"), NULL);
  assert_null(im);
  free(bytes);
  lumen_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------- atomic writes */

static void overwrite_and_failures(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  const char *p = path_of("out.nii.gz");
  lumen_image *im = write_volume(ctx, (const int64_t[3]){8, 8, 4}, p);
  struct stat before, after;
  assert_int_equal(stat(p, &before), 0);
  /* refused without overwrite; the file stays as it was */
  lumen_status s = lumen_nifti_write(ctx, p, im, NULL);
  expect_error(ctx, s, LUMEN_ERR_IO, p, "exists");
  assert_int_equal(stat(p, &after), 0);
  assert_true(before.st_ino == after.st_ino && before.st_size == after.st_size);
  lumen_nifti_write_opts wo = {0};
  wo.overwrite = 1;
  assert_int_equal(lumen_nifti_write(ctx, p, im, &wo), LUMEN_OK);
  assert_int_equal(temp_files_left(), 0);

  /* disk full in the middle (injected), plain and gzip: no final file, no temporary file */
  static const char *const names[2] = {"full.nii", "full.nii.gz"};
  for (int k = 0; k < 2; k++) {
    const char *q = path_of(names[k]);
    for (int64_t after_bytes = 0; after_bytes <= 1000; after_bytes += 500) {
      lumen_io_inject_write_failure(after_bytes);
      s = lumen_nifti_write(ctx, q, im, NULL);
      lumen_io_inject_write_failure(-1);
      expect_error(ctx, s, LUMEN_ERR_IO, q, "No space left");
      assert_false(exists(q));
      assert_int_equal(temp_files_left(), 0);
    }
  }
  /* an injected failure while replacing keeps the old file */
  lumen_io_inject_write_failure(100);
  s = lumen_nifti_write(ctx, p, im, &wo);
  lumen_io_inject_write_failure(-1);
  assert_int_equal(s, LUMEN_ERR_IO);
  lumen_image *back = NULL;
  assert_int_equal(lumen_nifti_read(ctx, p, NULL, &back, NULL), LUMEN_OK);
  assert_memory_equal(lumen_image_const_data(back), lumen_image_const_data(im), (size_t)lumen_image_nbytes(im));
  lumen_image_free(back);

  /* folders that cannot be written */
  const char *nodir = path_of("no/such/folder/map.nii.gz");
  s = lumen_nifti_write(ctx, nodir, im, NULL);
  expect_error(ctx, s, LUMEN_ERR_IO, nodir, NULL);
  s = lumen_nifti_write(ctx, "/proc/lumen-test.nii", im, NULL);
  expect_error(ctx, s, LUMEN_ERR_IO, "/proc/lumen-test.nii", NULL);
  assert_false(exists("/proc/lumen-test.nii"));
  if (geteuid() != 0) {  /* root ignores folder permissions */
    const char *ro_dir = path_of("readonly");
    assert_int_equal(mkdir(ro_dir, 0500), 0);
    char q[300];
    snprintf(q, sizeof q, "%s/map.nii", ro_dir);
    s = lumen_nifti_write(ctx, q, im, NULL);
    expect_error(ctx, s, LUMEN_ERR_IO, q, "Permission denied");
    rmdir(ro_dir);
  }
  /* a folder under the final name */
  const char *dir_name = path_of("adir.nii");
  assert_int_equal(mkdir(dir_name, 0700), 0);
  s = lumen_nifti_write(ctx, dir_name, im, &wo);
  expect_error(ctx, s, LUMEN_ERR_IO, dir_name, "folder");
  rmdir(dir_name);
  lumen_image_free(im);
  lumen_ctx_destroy(ctx);
}

/* Inputs that are not regular files are refused at once, never read: a FIFO without a writer
   would block open() forever (issue 15). alarm() turns such a hang into a failure. */
static void non_regular_inputs(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  const char *fifo = path_of("fifo.nii.gz");
  assert_int_equal(mkfifo(fifo, 0600), 0);
  alarm(20);
  lumen_image *im = NULL;
  lumen_nifti_info info;
  lumen_status s = lumen_nifti_read(ctx, fifo, NULL, &im, &info);
  expect_error(ctx, s, LUMEN_ERR_IO, fifo, "is a FIFO (named pipe), expected a regular file");
  assert_null(im);
  s = lumen_nifti_read_header(ctx, fifo, NULL, &info);
  expect_error(ctx, s, LUMEN_ERR_IO, fifo, "FIFO");
  s = lumen_nifti_read(ctx, "/dev/null", NULL, &im, NULL);
  expect_error(ctx, s, LUMEN_ERR_IO, "/dev/null", "is a character device, expected a regular file");
  s = lumen_nifti_read(ctx, g_dir, NULL, &im, NULL);
  expect_error(ctx, s, LUMEN_ERR_IO, g_dir, "is a folder, expected a regular file");
  alarm(0);
  lumen_ctx_destroy(ctx);
}

/* Writes to a gzip stream with deflate and the given flush mode; appends the output to f. */
static void deflate_into(z_stream *z, FILE *f, const void *in, size_t n, int flush) {
  unsigned char out[65536];
  z->next_in = (unsigned char *)(uintptr_t)in;
  z->avail_in = (uInt)n;
  int rc;
  do {
    z->next_out = out;
    z->avail_out = sizeof out;
    rc = deflate(z, flush);
    assert_true(rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR);
    size_t have = sizeof out - z->avail_out;
    assert_int_equal(fwrite(out, 1, have, f), have);
  } while (z->avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
}

/* A .nii.gz whose gzip stream holds the file NII followed by `zeros_mib` MiB of zeros (and
   `extra` zero bytes more), built cheaply: one deflate block of 1 MiB of zeros after a full flush
   is self-contained, so it is written once and repeated. The trailer gets the true CRC and
   length unless bad_crc. */
static void write_trailing_gz(const char *path, const unsigned char *nii, size_t nii_len, int zeros_mib,
                              size_t extra, int bad_crc) {
  const size_t mib = (size_t)1 << 20;
  unsigned char *zeros = calloc(1, mib);
  assert_non_null(zeros);
  FILE *f = fopen(path, "w+b"); /* read back: the repeated block is copied from the file */
  assert_non_null(f);
  z_stream z;
  memset(&z, 0, sizeof z);
  assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
  deflate_into(&z, f, nii, nii_len, Z_FULL_FLUSH);
  uLong crc = crc32(0L, nii, (uInt)nii_len);
  uLong zcrc = crc32(0L, zeros, (uInt)mib);
  if (zeros_mib > 0) {
    long start = ftell(f);
    deflate_into(&z, f, zeros, mib, Z_FULL_FLUSH);
    long len = ftell(f) - start;
    unsigned char *block = malloc((size_t)len);
    assert_non_null(block);
    assert_int_equal(fseek(f, start, SEEK_SET), 0);
    assert_int_equal(fread(block, 1, (size_t)len, f), (size_t)len);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    for (int i = 1; i < zeros_mib; i++) assert_int_equal(fwrite(block, 1, (size_t)len, f), (size_t)len);
    free(block);
    for (int i = 0; i < zeros_mib; i++) crc = crc32_combine(crc, zcrc, (z_off_t)mib);
  }
  deflate_into(&z, f, zeros, extra, Z_FULL_FLUSH);
  crc = crc32(crc, zeros, (uInt)extra);
  deflate_into(&z, f, NULL, 0, Z_FINISH);
  deflateEnd(&z);
  /* the trailer: CRC-32 and length mod 2^32, little-endian, replacing what deflate computed */
  uint32_t isize = (uint32_t)((uint64_t)nii_len + (uint64_t)zeros_mib * mib + extra);
  uint32_t c = (uint32_t)crc ^ (bad_crc ? 1u : 0u);
  unsigned char trailer[8];
  for (int i = 0; i < 4; i++) {
    trailer[i] = (unsigned char)(c >> (8 * i));
    trailer[4 + i] = (unsigned char)(isize >> (8 * i));
  }
  assert_int_equal(fseek(f, -8, SEEK_END), 0);
  assert_int_equal(fwrite(trailer, 1, 8, f), 8);
  assert_int_equal(fclose(f), 0);
  free(zeros);
}

/* Data after the voxels of a .nii.gz (issue 15: gigabytes of zeros were all decompressed): up to
   1 MiB more is read so that the gzip trailer is still checked; beyond that the rest is ignored,
   never decompressed (a bad CRC 64 MiB further on is not even seen). */
static void trailing_gzip_data(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  const char *plain = path_of("small.nii");
  lumen_image *im = write_volume(ctx, (const int64_t[3]){6, 5, 4}, plain);
  FILE *f = fopen(plain, "rb");
  assert_non_null(f);
  unsigned char nii[352 + 6 * 5 * 4 * 4];
  assert_int_equal(fread(nii, 1, sizeof nii, f), sizeof nii);
  fclose(f);
  struct {
    const char *name;
    int mib;
    size_t extra;
    int bad_crc;
    lumen_status want;
  } cases[] = {
      {"t_none.nii.gz", 0, 0, 0, LUMEN_OK},            /* control */
      {"t_small.nii.gz", 0, 100, 0, LUMEN_OK},         /* a little trailing data: read, CRC checked */
      {"t_small_bad.nii.gz", 0, 100, 1, LUMEN_ERR_FORMAT}, /* ... and a bad CRC there is found */
      {"t_big.nii.gz", 64, 0, 0, LUMEN_OK},            /* 64 MiB more: ignored */
      {"t_big_bad.nii.gz", 64, 0, 1, LUMEN_OK},        /* not decompressed: its CRC is never reached */
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    const char *p = path_of(cases[k].name);
    write_trailing_gz(p, nii, sizeof nii, cases[k].mib, cases[k].extra, cases[k].bad_crc);
    lumen_image *back = NULL;
    lumen_nifti_info info;
    lumen_status s = lumen_nifti_read(ctx, p, NULL, &back, &info);
    if (cases[k].want != LUMEN_OK) {
      expect_error(ctx, s, cases[k].want, p, "corrupt"); /* zlib may see the CRC while reading ahead */
      continue;
    }
    if (s != LUMEN_OK) print_error("%s: %s\n", cases[k].name, lumen_ctx_last_error(ctx));
    assert_int_equal(s, LUMEN_OK);
    assert_int_equal(info.compressed, 1);
    lumen_test_assert_images_equal(back, im);
    lumen_image_free(back);
    unlink(p);
  }
  lumen_image_free(im);
  lumen_ctx_destroy(ctx);
}

/* With overwrite, only a regular file is replaced: a FIFO, a symlink (its target untouched), a
   device node or a folder at the final name is refused, at open and again before the rename. */
static void overwrite_only_regular_files(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  const int64_t dims[3] = {4, 4, 2};
  lumen_image *im = make_image(ctx, 3, dims, LUMEN_DTYPE_FLOAT32);
  lumen_nifti_write_opts wo = {0};
  wo.overwrite = 1;
  const char *fifo = path_of("fifo.nii");
  assert_int_equal(mkfifo(fifo, 0600), 0);
  lumen_status s = lumen_nifti_write(ctx, fifo, im, &wo);
  expect_error(ctx, s, LUMEN_ERR_IO, fifo, "is a FIFO (named pipe), and only a regular file is replaced");
  struct stat st;
  assert_int_equal(lstat(fifo, &st), 0);
  assert_true(S_ISFIFO(st.st_mode));
  /* a symlink to another file: neither the link nor its target changes */
  const char *victim = path_of("victim.txt");
  const char *link_name = path_of("link.nii");
  f_put(victim, "keep me\n");
  assert_int_equal(symlink(victim, link_name), 0);
  s = lumen_nifti_write(ctx, link_name, im, &wo);
  expect_error(ctx, s, LUMEN_ERR_IO, link_name, "is a symbolic link");
  s = lumen_nifti_write(ctx, link_name, im, NULL);
  expect_error(ctx, s, LUMEN_ERR_IO, link_name, NULL);
  assert_int_equal(lstat(link_name, &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  assert_int_equal(stat(victim, &st), 0);
  assert_int_equal(st.st_size, 8);
  /* a symlink to a device node (never a real /dev file written: the link is refused first) */
  const char *dev_link = path_of("null.nii");
  assert_int_equal(symlink("/dev/null", dev_link), 0);
  s = lumen_nifti_write(ctx, dev_link, im, &wo);
  expect_error(ctx, s, LUMEN_ERR_IO, dev_link, "symbolic link");
  /* the name becomes a FIFO while the data are written: the rename is refused, no temporary left */
  const char *late = path_of("late.nii");
  lumen_atomic_file *af = NULL;
  assert_int_equal(lumen_atomic_open(ctx, late, 1, 0, &af), LUMEN_OK);
  assert_int_equal(lumen_atomic_write(af, "data", 4), LUMEN_OK);
  assert_int_equal(mkfifo(late, 0600), 0);
  s = lumen_atomic_commit(af);
  expect_error(ctx, s, LUMEN_ERR_IO, late, "FIFO");
  assert_int_equal(lstat(late, &st), 0);
  assert_true(S_ISFIFO(st.st_mode));
  assert_int_equal(temp_files_left(), 0);
  /* a regular file is still replaced */
  const char *reg = path_of("reg.nii");
  f_put(reg, "old\n");
  assert_int_equal(lumen_nifti_write(ctx, reg, im, &wo), LUMEN_OK);
  assert_int_equal(stat(reg, &st), 0);
  assert_true(st.st_size > 8);
  lumen_image_free(im);
  lumen_ctx_destroy(ctx);
}

/* A real full disk: LUMEN_TEST_FULL_DIR names a small file system (e.g. a 64 KiB tmpfs,
   `mount -t tmpfs -o size=64k tmpfs DIR`); skipped when unset. */
static void real_disk_full(void **state) {
  (void)state;
  const char *dir = getenv("LUMEN_TEST_FULL_DIR");
  if (!dir || !dir[0]) skip();
  lumen_ctx *ctx = lumen_test_ctx();
  const int64_t dims[3] = {64, 64, 64};
  lumen_image *im = make_image(ctx, 3, dims, LUMEN_DTYPE_FLOAT32);
  float *v = lumen_image_data(im);
  for (int i = 0; i < 64 * 64 * 64; i++) v[i] = (float)sin(i * 0.37) * 1000.0f;
  static const char *const names[2] = {"full.nii", "full.nii.gz"};
  for (int k = 0; k < 2; k++) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, names[k]);
    lumen_status s = lumen_nifti_write(ctx, p, im, NULL);
    expect_error(ctx, s, LUMEN_ERR_IO, p, "No space left");
    assert_false(exists(p));
  }
  lumen_image_free(im);
  lumen_ctx_destroy(ctx);
}

static void argument_checks(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_image *im = NULL;
  assert_int_equal(lumen_nifti_read(ctx, NULL, NULL, &im, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_nifti_read(ctx, "x.nii", NULL, NULL, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_nifti_write(ctx, "x.nii", NULL, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  const int64_t dims[1] = {40000};
  im = make_image(ctx, 1, dims, LUMEN_DTYPE_UINT8);
  /* NIfTI-1 cannot hold a dim over 32767; NIfTI-2 can */
  assert_int_equal(lumen_nifti_write(ctx, path_of("wide.nii"), im, NULL), LUMEN_ERR_UNSUPPORTED);
  lumen_nifti_write_opts wo = {0};
  wo.version = 2;
  assert_int_equal(lumen_nifti_write(ctx, path_of("wide.nii"), im, &wo), LUMEN_OK);
  lumen_image *back = NULL;
  assert_int_equal(lumen_nifti_read(ctx, path_of("wide.nii"), NULL, &back, NULL), LUMEN_OK);
  assert_true(lumen_image_dim(back, 0) == 40000);
  LUMEN_TEST_FREE_IMAGES(back, im);
  assert_true(lumen_io_default_max_bytes() > 0 && lumen_io_default_max_bytes() <= (INT64_C(16) << 30));
  lumen_ctx_destroy(ctx);
}

LUMEN_TEST_MAIN(LUMEN_TEST_IN_DIR(round_trip_types, g_dir),
                LUMEN_TEST_IN_DIR(scaling_each_integer_type, g_dir),
                LUMEN_TEST_IN_DIR(geometry_and_intent, g_dir),
                LUMEN_TEST_IN_DIR(hostile_headers, g_dir),
                LUMEN_TEST_IN_DIR(overwrite_and_failures, g_dir),
                LUMEN_TEST_IN_DIR(argument_checks, g_dir),
                LUMEN_TEST_IN_DIR(non_regular_inputs, g_dir),
                LUMEN_TEST_IN_DIR(trailing_gzip_data, g_dir),
                LUMEN_TEST_IN_DIR(overwrite_only_regular_files, g_dir),
                cmocka_unit_test(real_disk_full))
