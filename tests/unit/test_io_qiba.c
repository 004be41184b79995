/* The QIBA v6 Tofts DRO reads as 50x80x1x1321 uint16 (skipped with 77 without reference data). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_support.h"
#include "lumen/io.h"

static void qiba_dce(void **state) {
  char *p = *state;
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_nifti_info info;
  lumen_image *im = NULL;
  lumen_nifti_read_opts ro = {0};
  ro.keep_type = 1;
  assert_int_equal(lumen_nifti_read(ctx, p, &ro, &im, &info), LUMEN_OK);
  assert_int_equal(lumen_image_ndim(im), 4);
  assert_true(lumen_image_dim(im, 0) == 50 && lumen_image_dim(im, 1) == 80 && lumen_image_dim(im, 2) == 1 &&
              lumen_image_dim(im, 3) == 1321);
  assert_int_equal(lumen_image_dtype(im), LUMEN_DTYPE_UINT16);
  assert_int_equal(info.compressed, 1);
  lumen_image *f = NULL;
  assert_int_equal(lumen_nifti_read(ctx, p, NULL, &f, &info), LUMEN_OK);
  assert_int_equal(lumen_image_dtype(f), LUMEN_DTYPE_FLOAT32);
  /* float32 equals the stored values with the header's scaling (none or slope/inter) */
  const uint16_t *u = lumen_image_const_data(im);
  const float *v = lumen_image_const_data(f);
  double slope = info.scaled ? info.scl_slope : 1.0, inter = info.scaled ? info.scl_inter : 0.0;
  for (int64_t i = 0; i < lumen_image_count(im); i += 997)
    lumen_test_assert_close(v[i], u[i] * slope + inter, 1e-3, 1e-6, "voxel");
  lumen_image_free(f);
  lumen_image_free(im);
  /* its sidecar */
  lumen_acquisition acq;
  int found = 0;
  assert_int_equal(lumen_sidecar_read_for(ctx, p, &acq, NULL, &found), LUMEN_OK);
  if (found) {
    lumen_test_assert_close(acq.flip_angle_deg, 30, 0, 0, "FlipAngle");
    lumen_test_assert_close(acq.repetition_time_s, 0.005, 0, 1e-12, "RepetitionTime");
  }
  lumen_acquisition_clear(&acq);
  lumen_ctx_destroy(ctx);
}

int main(void) {
  char *p = lumen_test_refdata_needed("qiba/v6_tofts/q6_dce.nii.gz");
  if (!p) return LUMEN_TEST_SKIP;
  const struct CMUnitTest tests[] = {cmocka_unit_test_prestate(qiba_dce, p)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  free(p);
  return rc;
}
