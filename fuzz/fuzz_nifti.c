/* libFuzzer target: lumen_nifti_read (NIfTI-1/2 header validation, plain and gzip data, both
   byte orders, every datatype) and lumen_nifti_read_header, with a 64 MiB memory limit so that a
   header claiming a huge image must be refused before allocation. */
#include "fuzz_common.h"
#include "lumen/image.h"
#include "lumen/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lumen_ctx *ctx = fuzz_ctx();
  /* The first byte picks the options; the rest is the file (gzip is detected from content). */
  if (size < 1) return 0;
  uint8_t sel = data[0];
  const char *path = fuzz_file("nifti", (sel & 1) ? ".nii.gz" : ".nii", data + 1, size - 1);
  lumen_nifti_read_opts o = {.keep_type = (sel >> 1) & 1, .max_bytes = INT64_C(64) << 20};
  lumen_nifti_info info;
  lumen_image *im = NULL;
  if (sel & 4) {
    (void)lumen_nifti_read_header(ctx, path, &o, &info);
  } else {
    lumen_status s = lumen_nifti_read(ctx, path, &o, &im, &info);
    if (s != LUMEN_OK && im) abort(); /* no partial image on failure */
    lumen_image_free(im);
  }
  unlink(path);
  return 0;
}
