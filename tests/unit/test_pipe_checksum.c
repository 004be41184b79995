/* File checksums (src/pipeline/checksum.c): XXH3 64-bit, checked against values from the xxHash
   command line (`xxhsum -H3`), never from the code under test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "test_support.h"
#include "lumen/pipeline.h"

static void write_file(const char *path, const unsigned char *p, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(p, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static void known_values(void **state) {
  lumen_ctx *ctx = *state;
  char dir[] = "/tmp/lumen-sum-XXXXXX", path[64], hex[17];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/f", dir);
  write_file(path, (const unsigned char *)"", 0);
  assert_int_equal(lumen_pipe_checksum_file(ctx, path, hex), LUMEN_OK);
  assert_string_equal(hex, "2d06800538d394c2");  /* empty file */
  /* 3 MiB + 5 bytes, (31 i + 7) mod 251: spans several read buffers */
  const size_t n = 3 * 1024 * 1024 + 5;
  unsigned char *buf = malloc(n);
  assert_non_null(buf);
  for (size_t i = 0; i < n; ++i) buf[i] = (unsigned char)((i * 31 + 7) % 251);
  write_file(path, buf, n);
  assert_int_equal(lumen_pipe_checksum_file(ctx, path, hex), LUMEN_OK);
  assert_string_equal(hex, "018aae0bffeaf12a");
  buf[2 * 1024 * 1024 + 17] ^= 1;  /* one changed bit changes the checksum */
  write_file(path, buf, n);
  assert_int_equal(lumen_pipe_checksum_file(ctx, path, hex), LUMEN_OK);
  assert_string_equal(hex, "8643d268b8a8d449");
  free(buf);
  /* a missing file and a folder are refused */
  assert_int_equal(unlink(path), 0);
  assert_int_equal(lumen_pipe_checksum_file(ctx, path, hex), LUMEN_ERR_IO);
  assert_int_equal(lumen_pipe_checksum_file(ctx, dir, hex), LUMEN_ERR_IO);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "not a regular file"));
  assert_int_equal(rmdir(dir), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {LUMEN_TEST_WITH_CTX(known_values)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
