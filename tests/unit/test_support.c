#include "test_support.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *lumen_test_refdata(void) {
  const char *dir = getenv("LUMEN_REFDATA");
  struct stat st;
  if (!dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return NULL;
  return dir;
}

char *lumen_test_refdata_path(const char *relative) {
  const char *dir = lumen_test_refdata();
  if (!dir) return NULL;
  size_t n = strlen(dir) + strlen(relative) + 2;
  char *path = malloc(n);
  if (!path) return NULL;
  snprintf(path, n, "%s/%s", dir, relative);
  struct stat st;
  if (stat(path, &st) != 0) { free(path); return NULL; }
  return path;
}

void lumen_test_assert_close(double a, double b, double atol, double rtol, const char *what) {
  double tol = atol + rtol * (b < 0 ? -b : b);
  double diff = a - b;
  if (diff < 0) diff = -diff;
  if (!(diff <= tol)) {
    print_error("%s: got %.9g, expected %.9g (|diff| %.3g > tol %.3g)\n", what, a, b, diff, tol);
    fail();
  }
}

lumen_ctx *lumen_test_ctx(void) {
  lumen_ctx *ctx = NULL;
  assert_int_equal(lumen_ctx_create(&ctx), LUMEN_OK);
  assert_non_null(ctx);
  return ctx;
}
