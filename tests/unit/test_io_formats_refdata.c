/* lumen_image_probe and lumen_image_read_any on third-party files (skipped with 77 without the
   reference data, ../shared/data or LUMEN_REFDATA): GE scanner DICOM (files named i22.MRDC.1, no
   suffix; folders of one series), dcm2niix's NIfTI (.nii of the GE series, .nii.gz of the QIBA
   DRO), dcm2niix's JSON sidecar (not an image). read_any equals lumen_dicom_read,
   lumen_dicom_series_read and lumen_nifti_read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_support.h"
#include "lumen/io.h"

#define DWI "dicom_ge/In/01_Ax_DWI_TENSOR_R2"

static char *ref(const char *relative) {
  char *p = lumen_test_refdata_path(relative);
  if (!p) fail_msg("reference file %s missing", relative);
  return p;
}

static void expect_format(lumen_ctx *ctx, const char *relative, int format, int suffix_length) {
  char *p = ref(relative);
  lumen_format_info f;
  lumen_status s = lumen_image_probe(ctx, p, &f);
  if (s != LUMEN_OK) fail_msg("%s: %s", relative, lumen_ctx_last_error(ctx));
  if (f.format != format || !f.by_content || f.suffix_length != suffix_length)
    fail_msg("%s: format %d (by content %d, suffix %d), expected %d by content (suffix %d)", relative, f.format,
             f.by_content, f.suffix_length, format, suffix_length);
  free(p);
}

static void probe_third_party(void **state) {
  lumen_ctx *ctx = *state;
  expect_format(ctx, DWI "/i22.MRDC.1", LUMEN_IMAGE_FORMAT_DICOM, 0);
  expect_format(ctx, "dicom_ge/In/SliceTimingRT/2_epiRT_IntAsc_GD0/0001.dcm", LUMEN_IMAGE_FORMAT_DICOM, 4);
  expect_format(ctx, DWI, LUMEN_IMAGE_FORMAT_DICOM_FOLDER, 0);
  expect_format(ctx, "dicom_ge/In", LUMEN_IMAGE_FORMAT_DICOM_FOLDER, 0); /* DICOM two levels down */
  expect_format(ctx, "dicom_ge/Ref/Ax_DWI_TENSOR_R2_1.nii", LUMEN_IMAGE_FORMAT_NIFTI, 4);
  expect_format(ctx, "qiba/v6_tofts/q6_dce.nii.gz", LUMEN_IMAGE_FORMAT_NIFTI, 7);
  /* not images: a sidecar, a folder of NIfTI and JSON files */
  char *p = ref("qiba/v6_tofts/q6_dce.json");
  lumen_format_info f;
  assert_int_equal(lumen_image_probe(ctx, p, &f), LUMEN_ERR_FORMAT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "starts with the text '{ "));
  free(p);
  p = ref("dicom_ge/Ref");
  assert_int_equal(lumen_image_probe(ctx, p, &f), LUMEN_ERR_FORMAT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "is a folder without a DICOM file"));
  free(p);
}

static void read_any_equals_readers(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  /* one GE file */
  char *p = ref(DWI "/i22.MRDC.1");
  lumen_image *a = NULL, *b = NULL;
  lumen_dicom_info di;
  lumen_image_read_info info;
  assert_int_equal(lumen_dicom_read(ctx, p, NULL, &a, &di), LUMEN_OK);
  assert_int_equal(lumen_image_read_any(ctx, p, NULL, &b, &info), LUMEN_OK);
  lumen_test_assert_images_equal(a, b);
  assert_int_equal(info.format.format, LUMEN_IMAGE_FORMAT_DICOM);
  assert_true(info.dicom.rows == di.rows && info.dicom.columns == di.columns);
  assert_string_equal(info.dicom.modality, "MR");
  lumen_image_free(a);
  lumen_image_free(b);
  free(p);
  /* the GE series folder: the series reader's 4-D image, its times */
  p = ref(DWI);
  lumen_dicom_series_info si;
  const char *paths[1] = {p};
  assert_int_equal(lumen_dicom_series_read(ctx, paths, 1, NULL, &a, &si), LUMEN_OK);
  assert_int_equal(lumen_image_read_any(ctx, p, NULL, &b, &info), LUMEN_OK);
  lumen_test_assert_images_equal(a, b);
  lumen_test_assert_affines_equal(a, b);
  assert_int_equal(info.format.format, LUMEN_IMAGE_FORMAT_DICOM_FOLDER);
  assert_int_equal(info.is_series, 1);
  assert_string_equal(info.series.series_uid, si.series_uid);
  assert_true(info.series.frames == si.frames && si.frames > 1 && info.ndim == 4);
  lumen_image_free(a);
  lumen_image_free(b);
  /* headers only: the same shape, no pixel */
  lumen_image_read_opts ho = {.headers_only = 1};
  lumen_image_read_info hi;
  assert_int_equal(lumen_image_read_any(ctx, p, &ho, &b, &hi), LUMEN_OK);
  assert_null(b);
  assert_true(hi.ndim == 4 && !memcmp(hi.dims, info.dims, sizeof hi.dims));
  lumen_image_read_info_clear(&hi);
  lumen_image_read_info_clear(&info);
  /* a caller that takes 2-D or 3-D images only */
  lumen_image_read_opts o3 = {.max_ndim = 3};
  char want[96];
  snprintf(want, sizeof want, "a series of %lld volumes (a 4-D image), expected a 2-D or 3-D image",
           (long long)si.frames);
  assert_int_equal(lumen_image_read_any(ctx, p, &o3, &b, NULL), LUMEN_ERR_UNSUPPORTED);
  assert_null(b);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), want));
  lumen_dicom_series_info_clear(&si);
  free(p);
  /* dcm2niix's NIfTI of the series */
  p = ref("dicom_ge/Ref/Ax_DWI_TENSOR_R2_1.nii");
  lumen_nifti_info ni;
  assert_int_equal(lumen_nifti_read(ctx, p, NULL, &a, &ni), LUMEN_OK);
  assert_int_equal(lumen_image_read_any(ctx, p, NULL, &b, &info), LUMEN_OK);
  lumen_test_assert_images_equal(a, b);
  assert_int_equal(info.nifti.datatype, ni.datatype);
  lumen_image_free(a);
  lumen_image_free(b);
  free(p);
  lumen_ctx_destroy(ctx);
}

int main(void) {
  if (!lumen_test_refdata_has(DWI "/i22.MRDC.1", "GE DICOM") ||
      !lumen_test_refdata_has("qiba/v6_tofts/q6_dce.nii.gz", "QIBA NIfTI"))
    return LUMEN_TEST_SKIP;
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_dicom_info info;
  lumen_status s = lumen_dicom_read_header(ctx, "/nonexistent.dcm", NULL, &info);
  lumen_ctx_destroy(ctx);
  const struct CMUnitTest tests[] = {LUMEN_TEST_WITH_CTX(probe_third_party), cmocka_unit_test(read_any_equals_readers)};
  /* without GDCM nothing DICOM is read, but the probe (no decoding) still runs; its output says so */
  if (s == LUMEN_ERR_NOT_BUILT) printf("lumen_io was built without DICOM (GDCM): read_any_equals_readers not run\n");
  return _cmocka_run_group_tests("formats_refdata", tests, s == LUMEN_ERR_NOT_BUILT ? 1 : 2, NULL, NULL);
}
