/* libFuzzer target: lumen_dicom_read (the C pre-check of the element stream, then GDCM's decode,
   then masking, the modality LUT and MONOCHROME1 inversion). The first byte picks how GDCM runs:
   mostly in this process, after the pre-check (what a multi-threaded caller gets, so a decoder
   abort the pre-check lets through is a finding), one input in eight in a forked child (the
   single-threaded path: libFuzzer's RSS thread would otherwise rule it out). Then the header pass
   of the series reader on a prefix of the file (lumen_dicom_precheck_headers). */
#include "fuzz_common.h"
#include "io/dicom_internal.h"
#include "lumen/image.h"
#include "lumen/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lumen_ctx *ctx = fuzz_ctx();
  if (size < 1) return 0;
  const char *path = fuzz_file("dicom", ".dcm", data + 1, size - 1);
  lumen_dicom_isolation iso = (data[0] & 7) == 0 ? LUMEN_DICOM_ISOLATE_ALWAYS : LUMEN_DICOM_ISOLATE_NEVER;
  lumen_dicom_read_opts o = {.max_bytes = INT64_C(256) << 20};
  lumen_image *im = NULL;
  lumen_dicom_info info;
  lumen_status s = lumen_dicom_read_isolated(ctx, path, &o, iso, &im, &info);
  if (s != LUMEN_OK && im) abort();
  if (s == LUMEN_OK && lumen_image_count(im) != info.rows * info.columns * info.frames) abort();
  lumen_image_free(im);
  /* the series reader's header pass on a prefix (its length from byte 0): what it accepts, the
     whole file's pre-check accepts with the same image description */
  size_t prefix = (size - 1) * (size_t)(data[0] >> 3) / 31;
  lumen_dicom_header head, full;
  if (lumen_dicom_precheck_headers(NULL, path, data + 1, prefix, size - 1, &head) == LUMEN_OK) {
    if (lumen_dicom_precheck(NULL, path, data + 1, size - 1, &full) == LUMEN_OK) {
      if (full.info.rows != head.info.rows || full.info.columns != head.info.columns ||
          full.decoded_bytes != head.decoded_bytes || full.pixel_offset != head.pixel_offset)
        abort();
      lumen_dicom_header_free(&full);
    }
    lumen_dicom_header_free(&head);
  }
  unlink(path);
  return 0;
}
