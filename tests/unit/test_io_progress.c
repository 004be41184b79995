/* Progress and cancellation while lumen_nifti_read reads voxel data (blocks of 16 MiB). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test_support.h"
#include "lumen/io.h"

#define MAX_CALLS 64

typedef struct recorder {
  int n;
  double fraction[MAX_CALLS];
  char stage[MAX_CALLS][96];
  int cancel_at; /* return non-zero on this call (0-based); -1 never */
} recorder;

static int record(void *user, double fraction, const char *stage) {
  recorder *r = user;
  int k = r->n++;
  if (k < MAX_CALLS) {
    r->fraction[k] = fraction;
    snprintf(r->stage[k], sizeof r->stage[k], "%s", stage);
  }
  return k == r->cancel_at;
}

static char g_dir[64];

static void write_big(lumen_ctx *ctx, const char *path) {
  /* 1024 x 1024 x 40 uint8 = 40 MiB: blocks end at 16 and 32 MiB, then the end */
  const int64_t dims[3] = {1024, 1024, 40};
  lumen_image *im = lumen_test_image(ctx, 3, dims, LUMEN_DTYPE_UINT8);
  unsigned char *d = lumen_image_data(im);
  int64_t n = lumen_image_count(im);
  for (int64_t i = 0; i < n; i++) d[i] = (unsigned char)((i * 7) % 251);
  lumen_nifti_write_opts wo = {0};
  wo.overwrite = 1;
  wo.compress_level = 1;
  assert_int_equal(lumen_nifti_write(ctx, path, im, &wo), LUMEN_OK);
  lumen_image_free(im);
}

static void progress_and_cancel(void **state) {
  (void)state;
  snprintf(g_dir, sizeof g_dir, "/tmp/lumen-test-progress-XXXXXX");
  assert_non_null(mkdtemp(g_dir));
  static const char *const names[2] = {"big.nii.gz", "big.nii"};
  for (int f = 0; f < 2; f++) {
    char path[256], want_stage[128];
    snprintf(path, sizeof path, "%s/%s", g_dir, names[f]);
    snprintf(want_stage, sizeof want_stage, "read %s", names[f]);
    lumen_ctx *ctx = lumen_test_ctx();
    write_big(ctx, path);

    /* full read: 0, then increasing fractions, ending at exactly 1, all with the stage name */
    recorder rec = {.cancel_at = -1};
    assert_int_equal(lumen_ctx_set_progress(ctx, record, &rec), LUMEN_OK);
    lumen_nifti_read_opts ro = {0};
    ro.keep_type = 1;
    lumen_image *im = NULL;
    assert_int_equal(lumen_nifti_read(ctx, path, &ro, &im, NULL), LUMEN_OK);
    assert_non_null(im);
    assert_true(rec.n >= 3 && rec.n <= MAX_CALLS);
    assert_true(rec.fraction[0] == 0.0);
    for (int k = 0; k < rec.n; k++) {
      assert_string_equal(rec.stage[k], want_stage);
      if (k > 0) assert_true(rec.fraction[k] > rec.fraction[k - 1]);
    }
    assert_true(rec.fraction[rec.n - 1] == 1.0);
    const unsigned char *d = lumen_image_const_data(im);
    int64_t n = lumen_image_count(im);
    for (int64_t i = 0; i < n; i += 4099) assert_int_equal(d[i], (unsigned char)((i * 7) % 251));
    assert_int_equal(d[n - 1], (unsigned char)(((n - 1) * 7) % 251));
    lumen_image_free(im);

    /* the default (float32) path reports the same way */
    memset(&rec, 0, sizeof rec);
    rec.cancel_at = -1;
    im = NULL;
    assert_int_equal(lumen_nifti_read(ctx, path, NULL, &im, NULL), LUMEN_OK);
    assert_true(rec.n >= 3 && rec.fraction[rec.n - 1] == 1.0);
    lumen_image_free(im);

    /* cancelling before, during and at the end of the data: no image, the status and a message */
    for (int at = 0; at < 3; at++) {
      memset(&rec, 0, sizeof rec);
      rec.cancel_at = at == 2 ? 3 : at; /* calls: 0, 16/40, 32/40, 1 */
      im = (lumen_image *)&rec; /* must be reset to NULL */
      lumen_status s = lumen_nifti_read(ctx, path, &ro, &im, NULL);
      assert_int_equal(s, LUMEN_ERR_CANCELLED);
      assert_null(im);
      assert_int_equal(rec.n, rec.cancel_at + 1);
      const char *msg = lumen_ctx_last_error(ctx);
      assert_non_null(strstr(msg, "lumen_nifti_read"));
      assert_non_null(strstr(msg, "cancelled"));
      assert_non_null(strstr(msg, names[f]));
    }

    /* a single-block file reports nothing */
    memset(&rec, 0, sizeof rec);
    rec.cancel_at = 0;
    char small[256];
    snprintf(small, sizeof small, "%s/small.nii", g_dir);
    {
      const int64_t dims[2] = {64, 64};
      lumen_image *s_im = lumen_test_image(ctx, 2, dims, LUMEN_DTYPE_FLOAT32);
      memset(lumen_image_data(s_im), 0, (size_t)lumen_image_nbytes(s_im));
      lumen_nifti_write_opts wo = {0};
      wo.overwrite = 1;
      assert_int_equal(lumen_nifti_write(ctx, small, s_im, &wo), LUMEN_OK);
      lumen_image_free(s_im);
    }
    im = NULL;
    assert_int_equal(lumen_nifti_read(ctx, small, NULL, &im, NULL), LUMEN_OK);
    assert_int_equal(rec.n, 0);
    lumen_image_free(im);
    unlink(small);

    unlink(path);
    lumen_ctx_destroy(ctx);
  }
  rmdir(g_dir);
}

LUMEN_TEST_MAIN(cmocka_unit_test(progress_and_cancel))
