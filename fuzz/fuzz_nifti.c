/* libFuzzer target: lumen_nifti_read (NIfTI-1/2 header validation, plain and gzip data, both
   byte orders, every datatype) and lumen_nifti_read_header, with a 64 MiB memory limit so that a
   header claiming a huge image must be refused before allocation. Bit 3 of the first byte: the
   file is the .hdr of a .hdr/.img pair whose .img holds the same bytes, read through the .hdr
   (bit 4 clear) or the .img (src/io/nifti_pair.c). */
#include "fuzz_common.h"
#include "lumen/image.h"
#include "lumen/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lumen_ctx *ctx = fuzz_ctx();
  /* The first byte picks the options; the rest is the file (gzip is detected from content). */
  if (size < 1) return 0;
  uint8_t sel = data[0];
  char img[512] = "";
  if (sel & 8) { /* a pair: X.img (the same bytes), then X.hdr */
    snprintf(img, sizeof img, "%s", fuzz_file("pair", ".img", data + 1, size - 1));
  }
  const char *path = fuzz_file(sel & 8 ? "pair" : "nifti", sel & 8 ? ".hdr" : (sel & 1) ? ".nii.gz" : ".nii", data + 1,
                               size - 1);
  if ((sel & 8) && (sel & 16)) path = img;
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
  if (img[0]) { /* both files of the pair */
    unlink(img);
    img[strlen(img) - 4] = 0;
    strcat(img, ".hdr");
    unlink(img);
  }
  return 0;
}
