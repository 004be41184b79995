/* libFuzzer target: lumen_dicom_read (the C pre-check of the element stream, then GDCM's decode,
   then masking, the modality LUT and MONOCHROME1 inversion). The first byte picks how GDCM runs:
   mostly in this process, after the pre-check (what a multi-threaded caller gets, so a decoder
   abort the pre-check lets through is a finding), one input in eight in a forked child (the
   single-threaded path: libFuzzer's RSS thread would otherwise rule it out). */
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
  unlink(path);
  return 0;
}
