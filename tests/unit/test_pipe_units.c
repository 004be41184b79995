/* Pipeline helpers: config keys (lumen options and ROCKETSHIP dce_preferences.txt), CCC, bolus
   arrival, the biexponential AIF fit, file checksums. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include "test_support.h"
#include "lumen/pipeline.h"

static void config_keys(void **state) {
  lumen_ctx *ctx = *state;
  lumen_pipe_config c;
  lumen_pipe_config_init(&c);
  int known = -1;
  assert_int_equal(lumen_pipe_config_set(ctx, &c, "blood-t1", "1.5", NULL, &known), LUMEN_OK);
  assert_int_equal(known, 1);
  assert_true(c.blood_t1_s == 1.5);
  assert_int_equal(lumen_pipe_config_set(ctx, &c, "gpu_max_n_iterations", "64", NULL, &known), LUMEN_OK);
  assert_int_equal(c.max_iterations, 64);
  assert_int_equal(lumen_pipe_config_set(ctx, &c, "voxel_lower_limit_ve", "0.005", NULL, &known), LUMEN_OK);
  assert_int_equal(known, 1);
  assert_true(c.lo[LUMEN_MODEL_TOFTS][1] == 0.005 && c.lo[LUMEN_MODEL_ETOFTS][1] == 0.005);
  assert_int_equal(lumen_pipe_config_set(ctx, &c, "voxel_upper_limit_ktrans_patlak", "3", NULL, &known), LUMEN_OK);
  assert_true(c.hi[LUMEN_MODEL_PATLAK][0] == 3 && isnan(c.hi[LUMEN_MODEL_TOFTS][0]));
  assert_int_equal(lumen_pipe_config_set(ctx, &c, "unheard_of", "1", NULL, &known), LUMEN_OK);
  assert_int_equal(known, 0);
  assert_int_equal(lumen_pipe_config_set(ctx, &c, "hematocrit", "x", "f.txt:3", &known), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "f.txt:3: hematocrit = 'x' is not a number"));
  assert_int_equal(lumen_pipe_config_set(ctx, &c, "bounds", "ve=0.001:1", NULL, NULL), LUMEN_OK);
  assert_true(c.lo[LUMEN_MODEL_TOFTS][1] == 0.001);
  assert_int_equal(lumen_pipe_config_set(ctx, &c, "bounds", "ve=2:1", NULL, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  /* file */
  char path[] = "/tmp/lumen-pipe-cfg-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  const char *text = "% ROCKETSHIP style\nforce_cpu = 1\nrelaxivity = 3.9 ; \naif = 'georgiou'\n\nfxr_fw = 0.7\n";
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  assert_int_equal(lumen_pipe_config_read(ctx, &c, path), LUMEN_OK);
  assert_int_equal(c.force_cpu, 1);
  assert_true(c.relaxivity == 3.9 && c.fxr_fw == 0.7);
  assert_string_equal(c.aif, "georgiou");
  fd = open(path, O_WRONLY | O_TRUNC);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "novalue\n", 8), 8);
  close(fd);
  assert_int_equal(lumen_pipe_config_read(ctx, &c, path), LUMEN_ERR_FORMAT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), ":1: expected 'key = value'"));
  unlink(path);
  lumen_pipe_config_clear(&c);
}

static void ccc_and_arrival(void **state) {
  (void)state;
  double a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4}, c[4] = {2, 3, 4, 5};
  lumen_test_assert_close(lumen_pipe_ccc(a, b, 4), 1, 1e-15, 0, "ccc identical");
  assert_true(lumen_pipe_ccc(a, c, 4) < 0.8);  /* a shift lowers the concordance, not the correlation */
  double y[40];
  for (int i = 0; i < 40; ++i) y[i] = i < 12 ? 100 : 100 + 50 * (1 - exp(-(i - 11) / 3.0));
  assert_int_equal(lumen_pipe_detect_arrival(y, 40, 0, 5), 11);
  for (int i = 0; i < 40; ++i) y[i] = 7;
  assert_int_equal(lumen_pipe_detect_arrival(y, 40, 0, 5), -1);
}

static void biexp_aif(void **state) {
  lumen_ctx *ctx = *state;
  enum { N = 120 };
  double t[N], cb[N], fit[N], p[6];
  for (int i = 0; i < N; ++i) {
    t[i] = i * 2.0 / 60;
    double ts = 0.3, t0 = 0.4;
    cb[i] = t[i] < ts ? 0 : t[i] < t0 ? 6.0 * (t[i] - ts) / (t0 - ts) : 4.5 * exp(-4.0 * (t[i] - t0)) + 1.5 * exp(-0.1 * (t[i] - t0));
  }
  assert_int_equal(lumen_pipe_fit_biexp_aif(ctx, N, t, cb, fit, p), LUMEN_OK);
  lumen_test_assert_close(p[0], 4.5, 0.05, 0.01, "A");
  lumen_test_assert_close(p[1], 1.5, 0.05, 0.01, "B");
  lumen_test_assert_close(p[2], 4.0, 0.05, 0.02, "c");
  lumen_test_assert_close(p[3], 0.1, 0.01, 0.05, "d");
}

static void checksum(void **state) {
  lumen_ctx *ctx = *state;
  char path[] = "/tmp/lumen-pipe-sum-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "a", 1), 1);
  close(fd);
  char hex[17];
  assert_int_equal(lumen_pipe_checksum_file(ctx, path, hex), LUMEN_OK);
  assert_string_equal(hex, "e6c632b61e964e1f");  /* XXH3 64-bit of "a" (xxhsum -H3) */
  unlink(path);
  assert_int_equal(lumen_pipe_checksum_file(ctx, path, hex), LUMEN_ERR_IO);
}

int main(void) {
  const struct CMUnitTest tests[] = {LUMEN_TEST_WITH_CTX(config_keys), cmocka_unit_test(ccc_and_arrival),
                                     LUMEN_TEST_WITH_CTX(biexp_aif), LUMEN_TEST_WITH_CTX(checksum)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
