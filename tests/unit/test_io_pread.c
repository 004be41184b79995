/* lumen_nifti_read's threaded read of large uncompressed voxel data (src/io/io_pread.c): the same
   values as one thread for little- and big-endian files, float32 and scaled int16 (converted by
   the threads), the same error for a truncated file
   (and the threaded read's own words when the file shrinks under it, or for a read error),
   progress that rises to 1, and cancellation. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test_support.h"
#include "io/io_internal.h"
#include "lumen/io.h"

enum { NX = 1024, NY = 1024, NZ = 20 }; /* 80 MiB of float32: above the threaded read's 64 MiB */

static char g_dir[LUMEN_TEST_DIR_SIZE]; /* each test's fresh folder, which it empties */

static float value(int64_t i) { return (float)((i * 37) % 1000003) * 0.5f - 3.0f; }

/* The stored int16 values of the scaled files: value(i) = stored * 0.5 - 3. */
static int16_t stored16(int64_t i) { return (int16_t)((i * 37) % 1000003 % 30000); }

/* A NIfTI-1 file of NX x NY x NZ float32 values (or, i16 = 1, NX x NY x 2 NZ int16 with scl_slope
   0.5, scl_inter -3), vox_offset 352, written byte by byte in the given byte order (big = 1:
   big-endian header and data), g_dir/name: its path. */
static const char *write_raw(const char *name, int big, int i16) {
  const char *path = lumen_test_join(g_dir, name);
  unsigned char h[352];
  memset(h, 0, sizeof h);
#define PUT(off, v, size)                                                                  \
  do {                                                                                     \
    uint64_t u_ = (v);                                                                     \
    for (int b_ = 0; b_ < (size); ++b_)                                                    \
      h[(off) + (big ? (size) - 1 - b_ : b_)] = (unsigned char)(u_ >> (8 * b_));           \
  } while (0)
  PUT(0, 348, 4);
  const int dim[8] = {3, NX, NY, i16 ? 2 * NZ : NZ, 1, 1, 1, 1};
  for (int k = 0; k < 8; ++k) PUT(40 + 2 * k, (uint64_t)dim[k], 2);
  PUT(70, i16 ? 4 : 16, 2); /* int16 or float32 */
  PUT(72, i16 ? 16 : 32, 2);
  float one = 1.0f, off = 352.0f, slope = 0.5f, inter = -3.0f;
  uint32_t u1, uo, us, ui;
  memcpy(&u1, &one, 4);
  memcpy(&uo, &off, 4);
  memcpy(&us, &slope, 4);
  memcpy(&ui, &inter, 4);
  for (int k = 0; k < 8; ++k) PUT(76 + 4 * k, u1, 4);
  PUT(108, uo, 4);
  if (i16) {
    PUT(112, us, 4);
    PUT(116, ui, 4);
  }
#undef PUT
  memcpy(h + 344, "n+1", 4);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(h, 1, sizeof h, f), sizeof h);
  enum { ROW = 1 << 16 };
  static unsigned char buf[4 * ROW];
  const int es = i16 ? 2 : 4;
  const int64_t n = (int64_t)NX * NY * NZ * (i16 ? 2 : 1);
  for (int64_t i0 = 0; i0 < n; i0 += ROW) {
    for (int64_t i = i0; i < i0 + ROW; ++i) {
      float v = value(i);
      int16_t w = stored16(i);
      unsigned char b[4];
      if (i16) memcpy(b, &w, 2);
      else memcpy(b, &v, 4);
      for (int k = 0; k < es; ++k) buf[es * (i - i0) + k] = b[big ? es - 1 - k : k];
    }
    assert_int_equal(fwrite(buf, 1, (size_t)(es * ROW), f), (size_t)(es * ROW));
  }
  assert_int_equal(fclose(f), 0);
  return path;
}

static lumen_image *read_with(int threads, const char *path, lumen_status want, char *msg, size_t msg_size) {
  lumen_ctx *ctx = lumen_test_ctx();
  assert_int_equal(lumen_ctx_set_threads(ctx, threads), LUMEN_OK);
  lumen_image *im = NULL;
  assert_int_equal(lumen_nifti_read(ctx, path, NULL, &im, NULL), want);
  if (msg) snprintf(msg, msg_size, "%s", lumen_ctx_last_error(ctx));
  lumen_ctx_destroy(ctx);
  return im;
}

static void same_values_both_byte_orders(void **state) {
  (void)state;
  for (int v = 0; v < 4; ++v) {
    const int big = v & 1, i16 = v >> 1;
    char name[64];
    snprintf(name, sizeof name, "%s-%s.nii", i16 ? "int16" : "float32", big ? "big" : "little");
    const char *path = write_raw(name, big, i16);
    lumen_image *one = read_with(1, path, LUMEN_OK, NULL, 0), *two = read_with(2, path, LUMEN_OK, NULL, 0);
    lumen_image *three = read_with(3, path, LUMEN_OK, NULL, 0);
    lumen_test_assert_images_equal(one, two);
    lumen_test_assert_images_equal(one, three);
    const float *d = lumen_image_const_data(two);
    const int64_t n = lumen_image_count(two);
    assert_int_equal(n, (int64_t)NX * NY * NZ * (i16 ? 2 : 1));
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) wrong += d[i] != (i16 ? (float)((double)stored16(i) * 0.5 - 3.0) : value(i));
    assert_int_equal(wrong, 0);
    LUMEN_TEST_FREE_IMAGES(one, two, three);
    unlink(path);
  }
}

static void truncated_file_same_error(void **state) {
  (void)state;
  const char *path = write_raw("cut.nii", 0, 0);
  /* cut inside the fourth 16 MiB slice, 3 bytes into an element: the header check refuses it
     before any voxel is read, with the same message whatever the thread count */
  const int64_t keep = 352 + ((int64_t)50 << 20) + 3, total = (int64_t)NX * NY * NZ * 4;
  assert_int_equal(truncate(path, (off_t)keep), 0);
  char m1[1024], m2[1024];
  assert_null(read_with(1, path, LUMEN_ERR_FORMAT, m1, sizeof m1));
  assert_null(read_with(2, path, LUMEN_ERR_FORMAT, m2, sizeof m2));
  assert_string_equal(m1, m2);
  assert_non_null(strstr(m2, "cut.nii' is truncated"));
  /* a file that shrinks after that check (the threaded read itself comes short): the serial
     reader's words, at the first byte missing */
  lumen_ctx *ctx = lumen_test_ctx();
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  float *dst = malloc((size_t)total);
  assert_non_null(dst);
  lumen_io_pread_job job = {.ctx = ctx, .fd = fd, .offset = 352, .bytes = total, .dst = (unsigned char *)dst,
                            .elem = 4, .threads = 2, .fn = "lumen_nifti_read", .path = path, .what = "voxel data"};
  assert_int_equal(lumen_io_pread_parallel(&job), LUMEN_ERR_FORMAT);
  char want[160];
  snprintf(want, sizeof want, "cut.nii' is truncated: the voxel data ends after %lld of %lld bytes",
           (long long)(keep - 352), (long long)total);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), want));
  for (int64_t i = 0; i < (keep - 352) / 4; i += 4093) assert_true(dst[i] == value(i));
  /* a read error (a descriptor that is not open for reading): LUMEN_ERR_IO with the system's words */
  close(fd);
  job.fd = fd;
  assert_int_equal(lumen_io_pread_parallel(&job), LUMEN_ERR_IO);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "cannot read"));
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "(voxel data): Bad file descriptor"));
  free(dst);
  lumen_ctx_destroy(ctx);
  unlink(path);
}

static void progress_and_cancel(void **state) {
  (void)state;
  const char *path = write_raw("progress.nii", 0, 0);
  for (int cancel = -1; cancel <= 1; ++cancel) {
    lumen_ctx *ctx = lumen_test_ctx();
    assert_int_equal(lumen_ctx_set_threads(ctx, 2), LUMEN_OK);
    lumen_test_progress rec = {.rising = 1, .cancel_at_call = cancel, .cancel_at_fraction = INFINITY};
    assert_int_equal(lumen_ctx_set_progress(ctx, lumen_test_record_progress, &rec), LUMEN_OK);
    lumen_image *im = NULL;
    lumen_status s = lumen_nifti_read(ctx, path, NULL, &im, NULL);
    if (cancel < 0) { /* 0, a fraction after each round of 128 MiB (80 MiB: none), 1 */
      assert_int_equal(s, LUMEN_OK);
      assert_true(rec.rising);
      assert_true(rec.calls >= 2 && rec.last == 1.0);
      lumen_image_free(im);
    } else {
      assert_int_equal(s, LUMEN_ERR_CANCELLED);
      assert_null(im);
      assert_int_equal(rec.calls, cancel + 1);
    }
    lumen_ctx_destroy(ctx);
  }
  unlink(path);
}

LUMEN_TEST_MAIN(LUMEN_TEST_IN_DIR_LEFT_EMPTY(same_values_both_byte_orders, g_dir),
                LUMEN_TEST_IN_DIR_LEFT_EMPTY(truncated_file_same_error, g_dir),
                LUMEN_TEST_IN_DIR_LEFT_EMPTY(progress_and_cancel, g_dir))
