/* libFuzzer target: lumen_json_parse and every getter on the result, then the BIDS sidecar
   reader (lumen_sidecar_read) on the same bytes. */
#include "fuzz_common.h"
#include "lumen/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lumen_ctx *ctx = fuzz_ctx();
  lumen_json *j = NULL;
  if (lumen_json_parse(ctx, (const char *)data, size, "fuzz.json", &j) == LUMEN_OK) {
    int64_t n = lumen_json_count(j);
    for (int64_t i = 0; i < n && i < 64; ++i) {
      const char *k = lumen_json_key(j, i);
      if (!k) abort();
      double d;
      char *s = NULL;
      double *v = NULL;
      int64_t nv = 0;
      int found;
      (void)lumen_json_get_number(ctx, j, k, &d, &found);
      if (lumen_json_get_string(ctx, j, k, &s, &found) == LUMEN_OK && found) free(s);
      if (lumen_json_get_numbers(ctx, j, k, &v, &nv, &found) == LUMEN_OK && found) free(v);
      s = NULL;
      if (lumen_json_get_text(ctx, j, k, &s, &found) == LUMEN_OK && found) free(s);
    }
    char *text = NULL;
    if (lumen_json_to_text(ctx, j, &text) == LUMEN_OK) free(text);
    lumen_json_free(j);
  } else if (j) {
    abort();
  }
  const char *path = fuzz_file("sidecar", ".json", data, size);
  lumen_acquisition acq;
  memset(&acq, 0, sizeof acq);
  lumen_json *whole = NULL;
  if (lumen_sidecar_read(ctx, path, &acq, &whole) == LUMEN_OK) {
    lumen_acquisition_clear(&acq);
    lumen_json_free(whole);
  } else {
    lumen_acquisition_clear(&acq);
    lumen_json_free(whole);
  }
  unlink(path);
  return 0;
}
