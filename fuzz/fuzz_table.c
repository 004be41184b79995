/* libFuzzer target: lumen_parse_table (curves, frame times, AIF files of lumen fit and
   lumen dce --aif file:) with every option combination, and lumen_table_column. */
#include "fuzz_common.h"
#include "lumen/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lumen_ctx *ctx = fuzz_ctx();
  if (size < 1) return 0;
  lumen_table_opts o = {.allow_ragged = data[0] & 1, .allow_header = (data[0] >> 1) & 1, .max_bytes = 1 << 20};
  lumen_table t;
  memset(&t, 0, sizeof t);
  if (lumen_parse_table(ctx, (const char *)data + 1, size - 1, "fuzz.txt", &o, &t) == LUMEN_OK) {
    if (t.rows < 1 || t.cols < 1) abort();
    for (int64_t c = 0; c < t.cols && c < 8; ++c) {
      double *col = NULL;
      if (lumen_table_column(ctx, &t, c, &col) == LUMEN_OK) free(col);
    }
    volatile double sum = 0;
    for (int64_t i = 0; i < t.rows * t.cols; ++i) sum += t.values[i];
    for (int64_t r = 0; r < t.rows; ++r) sum += (double)t.row_cols[r] + (double)t.row_line[r];
    if (t.names)
      for (int64_t c = 0; c < t.cols; ++c) sum += t.names[c] ? (double)strlen(t.names[c]) : 0;
    (void)sum;
  }
  lumen_table_clear(&t);
  return 0;
}
