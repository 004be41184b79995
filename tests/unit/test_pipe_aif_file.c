/* `--aif file:PATH` tables (pipe_aif_read_file): lumen's own {prefix}_aif.tsv read back, named
   columns (minutes, whole blood), the headerless layouts, and the refusals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test_support.h"
#include "pipeline/pipe_aif.h"

#define NT 12
static char g_dir[64];
static char g_path[128];
static double g_tmin[NT];  /* 5 s frames, from 0 */

static void write_text(const char *text) {
  FILE *fp = fopen(g_path, "wb");
  assert_non_null(fp);
  fputs(text, fp);
  fclose(fp);
}

static void expect_refused(lumen_ctx *ctx, lumen_status want, const char *a, const char *b) {
  double cp[NT], cb[NT];
  char detail[256];
  assert_int_equal(pipe_aif_read_file(ctx, g_path, NT, g_tmin, 0.45, cp, cb, detail, sizeof detail), want);
  const char *msg = lumen_ctx_last_error(ctx);
  if (!strstr(msg, g_path) || !strstr(msg, a) || (b && !strstr(msg, b))) {
    print_error("message '%s' lacks '%s' / '%s'\n", msg, a, b ? b : "");
    fail();
  }
}

/* A file exactly as pipe_aif_write (aif_output.c) writes it: Cp is the 4th column, not the 2nd. */
/* The curves and the description of one read. */
typedef struct {
  double cp[NT], cb[NT];
  char detail[1024];
} aif_read;

/* pipe_aif_read_file of the table on the frame times with hematocrit hct succeeds, into r. */
static void read_ok(lumen_ctx *ctx, double hct, aif_read *r) {
  assert_int_equal(pipe_aif_read_file(ctx, g_path, NT, g_tmin, hct, r->cp, r->cb, r->detail, sizeof r->detail),
                   LUMEN_OK);
}

static void own_format_round_trip(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  char text[4096];
  double want_cp[NT], want_cb[NT];
  int k = snprintf(text, sizeof text, "# lumen 0.0 AIF: population:parker\n# parker population AIF, hematocrit "
                   "0.42\ntime_s\ttime_min\tCb_mM\tCp_mM\n");
  for (int i = 0; i < NT; i++) {
    double cp = 5 * exp(-0.3 * i) * i + 0.123456789 * i, cb = cp * (1 - 0.42);
    char line[128];
    snprintf(line, sizeof line, "%.6g\t%.6g\t%.6g\t%.6g\n", g_tmin[i] * 60, g_tmin[i], cb, cp);
    k += snprintf(text + k, sizeof text - (size_t)k, "%s", line);
    sscanf(line, "%*g %*g %lg %lg", &want_cb[i], &want_cp[i]);  /* the values as printed */
  }
  write_text(text);
  double cp[NT], cb[NT];
  char detail[1024];
  assert_int_equal(pipe_aif_read_file(ctx, g_path, NT, g_tmin, 0.42, cp, cb, detail, sizeof detail), LUMEN_OK);
  for (int i = 0; i < NT; i++) {
    lumen_test_assert_close(cp[i], want_cp[i], 1e-12, 0, "Cp read back");
    lumen_test_assert_close(cb[i], want_cp[i] * (1 - 0.42), 1e-12, 0, "Cb = Cp (1 - hct)");
  }
  assert_true(fabs(cp[3] - want_cb[3]) > 0.1 && fabs(cp[3] - g_tmin[3]) > 0.1);  /* not Cb, not time_min */
  assert_non_null(strstr(detail, "column Cp_mM against time_s"));
  assert_non_null(strstr(detail, "time_min agrees"));
  assert_non_null(strstr(detail, "not used: Cb_mM"));
  assert_non_null(strstr(detail, "linear interpolation"));
  assert_null(strchr(detail, '\n'));
  /* the same series shifted: times are from the first frame */
  double shifted[NT];
  for (int i = 0; i < NT; i++) shifted[i] = g_tmin[i] + 100;
  assert_int_equal(pipe_aif_read_file(ctx, g_path, NT, shifted, 0.42, cp, cb, NULL, 0), LUMEN_OK);
  lumen_test_assert_close(cp[7], want_cp[7], 1e-12, 0, "shifted frame times");
  /* time_s and time_min that disagree */
  write_text("time_s\ttime_min\tCb_mM\tCp_mM\n0\t0\t0\t0\n5\t5\t1\t2\n");
  expect_refused(ctx, LUMEN_ERR_INVALID_ARGUMENT, "line 3: time 5 s and 5 min disagree", NULL);
  lumen_ctx_destroy(ctx);
}

/* Whole blood only, named columns in minutes, interpolation between samples. */
static void named_columns(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  aif_read r;
  /* Cb in mM against minutes: samples every 10 s, Cb = t in s (linear, so interpolation is exact) */
  char text[2048];
  int k = snprintf(text, sizeof text, "T_MIN, Blood(mM), frame\n");
  for (int j = 0; j <= 6; j++)
    k += snprintf(text + k, sizeof text - (size_t)k, "%.17g, %d, %d\n", j * 10 / 60.0, j * 10, j);
  write_text(text);
  read_ok(ctx, 0.4, &r);
  for (int i = 0; i < NT; i++) {
    lumen_test_assert_close(r.cb[i], 5.0 * i, 1e-9, 0, "Cb interpolated");
    lumen_test_assert_close(r.cp[i], 5.0 * i / 0.6, 1e-9, 0, "Cp = Cb/(1 - hct)");
  }
  assert_non_null(strstr(r.detail, "whole-blood"));
  assert_non_null(strstr(r.detail, "min, converted to s"));
  assert_non_null(strstr(r.detail, "Cp = Cb/(1 - 0.4)"));
  assert_non_null(strstr(r.detail, "not used: frame"));
  /* plasma preferred over blood; "time" in seconds; [unit] spelling */
  write_text("Ca[mM]\ttime\tplasma_mmol/l\n1\t0\t2\n1\t60\t4\n");
  read_ok(ctx, 0.45, &r);
  lumen_test_assert_close(r.cp[6], 3, 1e-12, 0, "plasma at 30 s");
  lumen_test_assert_close(r.cb[6], 3 * 0.55, 1e-12, 0, "Cb from Cp");
  /* one named concentration column: one value per frame */
  k = snprintf(text, sizeof text, "cp\n");
  for (int i = 0; i < NT; i++) k += snprintf(text + k, sizeof text - (size_t)k, "%d\n", i);
  write_text(text);
  read_ok(ctx, 0.45, &r);
  assert_true(r.cp[5] == 5);
  assert_non_null(strstr(r.detail, "one value per frame"));
  lumen_ctx_destroy(ctx);
}

static void headerless(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  aif_read r;
  /* two columns: time s, plasma mM, with comments */
  write_text("# t  Cp\n0 0\n20 4 # a comment\n60 4\n");
  read_ok(ctx, 0.45, &r);
  lumen_test_assert_close(r.cp[1], 1, 1e-12, 0, "5 s");
  lumen_test_assert_close(r.cp[4], 4, 1e-12, 0, "20 s");
  lumen_test_assert_close(r.cp[11], 4, 1e-12, 0, "55 s");
  lumen_test_assert_close(r.cb[2], 2 * 0.55, 1e-12, 0, "Cb");
  assert_non_null(strstr(r.detail, "no header"));
  /* the last frame within one frame interval after the last sample holds it; further is refused */
  write_text("0 0\n50 5\n");
  assert_int_equal(pipe_aif_read_file(ctx, g_path, NT, g_tmin, 0.45, r.cp, r.cb, NULL, 0), LUMEN_OK);
  assert_true(r.cp[11] == 5);
  write_text("0 0\n49 5\n");
  expect_refused(ctx, LUMEN_ERR_INVALID_ARGUMENT, "frame 11 is at 55 s", "after the last sample");
  write_text("10 0\n60 5\n");
  expect_refused(ctx, LUMEN_ERR_INVALID_ARGUMENT, "frame 0 is at 0 s", "before the first sample");
  /* one column: one plasma value per frame */
  char text[512];
  int k = 0;
  for (int i = 0; i < NT; i++) k += snprintf(text + k, sizeof text - (size_t)k, "%g\n", 0.5 * i);
  write_text(text);
  read_ok(ctx, 0, &r);
  assert_true(r.cp[7] == 3.5 && r.cb[7] == 3.5);
  assert_non_null(strstr(r.detail, "one value per frame (12)"));
  write_text("1\n2\n3\n");
  expect_refused(ctx, LUMEN_ERR_INVALID_ARGUMENT, "3 values in one column", "12 frames");
  lumen_ctx_destroy(ctx);
}

static void refused(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  /* three columns without a header */
  write_text("0 1 2\n5 1 2\n");
  expect_refused(ctx, LUMEN_ERR_INVALID_ARGUMENT, "3 columns without a header", "time_s");
  /* a header that names two plasma columns, none, or no time */
  write_text("time_s Cp plasma\n0 1 2\n60 1 2\n");
  expect_refused(ctx, LUMEN_ERR_INVALID_ARGUMENT, "columns found: time_s, Cp, plasma", "more than one plasma column");
  write_text("time_s a b\n0 1 2\n60 1 2\n");
  expect_refused(ctx, LUMEN_ERR_INVALID_ARGUMENT, "columns found: time_s, a, b", "no concentration column");
  write_text("seconds Cp x\n0 1 2\n60 1 2\n");
  expect_refused(ctx, LUMEN_ERR_INVALID_ARGUMENT, "no time column", "expected a time column");
  write_text("time_s Cp_uM\n0 1\n60 1\n");
  expect_refused(ctx, LUMEN_ERR_INVALID_ARGUMENT, "column 'Cp_uM' has a unit", "mM");
  /* times that do not increase; non-finite values */
  write_text("# times\n0 0\n30 1\n30 2\n60 0\n");
  expect_refused(ctx, LUMEN_ERR_INVALID_ARGUMENT, "line 4: time 30 s is not after 30 s on line 3", NULL);
  write_text("t_s Cp\n0 0\n40 1\n20 2\n");
  expect_refused(ctx, LUMEN_ERR_INVALID_ARGUMENT, "line 4", "times must increase");
  write_text("0 0\n30 nan\n60 0\n");
  expect_refused(ctx, LUMEN_ERR_INVALID_ARGUMENT, "line 2: the plasma concentration is nan", NULL);
  write_text("time_min Cb\n0 0\ninf 1\n");
  expect_refused(ctx, LUMEN_ERR_INVALID_ARGUMENT, "line 3: the time is inf", NULL);
  /* the table reader's own errors pass through */
  write_text("0 0\n5 oops\n");
  expect_refused(ctx, LUMEN_ERR_FORMAT, ":2:3: 'oops' is not a number", NULL);
  /* arguments */
  double cp[NT], cb[NT];
  assert_int_equal(pipe_aif_read_file(ctx, g_path, NT, g_tmin, 1, cp, cb, NULL, 0), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(pipe_aif_read_file(ctx, g_path, 0, g_tmin, 0.45, cp, cb, NULL, 0), LUMEN_ERR_INVALID_ARGUMENT);
  lumen_ctx_destroy(ctx);
}

/* The table's path in the test folder and the frame times (5 s apart, in minutes). */
static int set_up(void **state) {
  (void)state;
  snprintf(g_path, sizeof g_path, "%s/aif.tsv", g_dir);
  for (int i = 0; i < NT; i++) g_tmin[i] = i * 5 / 60.0;
  return 0;
}

static int clean_up(void **state) {
  (void)state;
  unlink(g_path);
  return 0;
}

LUMEN_TEST_MAIN_IN_DIR(g_dir, "aif", set_up, clean_up, cmocka_unit_test(own_format_round_trip),
                       cmocka_unit_test(named_columns), cmocka_unit_test(headerless), cmocka_unit_test(refused))
