/* Numeric text tables: separators, comments, headers, ragged rows and error positions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "test_support.h"
#include "lumen/io.h"

static lumen_status parse(lumen_ctx *ctx, const char *text, const lumen_table_opts *opts, lumen_table *t) {
  return lumen_parse_table(ctx, text, strlen(text), "curve.txt", opts, t);
}

static void expect_msg(lumen_ctx *ctx, const char *needle) {
  const char *msg = lumen_ctx_last_error(ctx);
  if (!strstr(msg, needle)) {
    print_error("message '%s' lacks '%s'\n", msg, needle);
    fail();
  }
}

/* Parsing text fails with LUMEN_ERR_FORMAT and a message that holds needle. */
static void expect_format_error(lumen_ctx *ctx, const char *text, const lumen_table_opts *opts, const char *needle) {
  lumen_table t;
  assert_int_equal(parse(ctx, text, opts, &t), LUMEN_ERR_FORMAT);
  expect_msg(ctx, needle);
}

static void good_tables(void **state) {
  lumen_ctx *ctx = *state;
  lumen_table t;
  const char *text = "\xef\xbb\xbf# time, aif\n"
                     "\n"
                     "0, 1.5   # first\r\n"
                     "1.5\t2e-3\n"
                     "  3 ;  -4.25  \n"
                     "4.5,nan\n"
                     "# end\n"
                     "6 inf";
  assert_int_equal(parse(ctx, text, NULL, &t), LUMEN_OK);
  assert_true(t.rows == 5 && t.cols == 2);
  assert_true(t.values[0] == 0 && t.values[1] == 1.5 && t.values[3] == 2e-3 && t.values[5] == -4.25);
  assert_true(isnan(t.values[7]) && isinf(t.values[9]));
  assert_true(t.row_line[0] == 3 && t.row_line[4] == 8);
  assert_true(t.row_cols[2] == 2);
  assert_null(t.names);
  double *col = NULL;
  assert_int_equal(lumen_table_column(ctx, &t, 0, &col), LUMEN_OK);
  assert_true(col[1] == 1.5 && col[4] == 6);
  free(col);
  assert_int_equal(lumen_table_column(ctx, &t, 2, &col), LUMEN_ERR_INVALID_ARGUMENT);
  lumen_table_clear(&t);
  assert_null(t.values);
  /* one value per line (a times file) */
  assert_int_equal(parse(ctx, "1\n2\n3\n", NULL, &t), LUMEN_OK);
  assert_true(t.rows == 3 && t.cols == 1 && t.values[2] == 3);
  lumen_table_clear(&t);
  /* a header row */
  lumen_table_opts o = {0};
  o.allow_header = 1;
  assert_int_equal(parse(ctx, "time,Cp\n0,0\n1,2.5\n", &o, &t), LUMEN_OK);
  assert_true(t.rows == 2 && t.cols == 2);
  assert_string_equal(t.names[0], "time");
  assert_string_equal(t.names[1], "Cp");
  assert_true(t.values[3] == 2.5);
  assert_true(t.row_line[0] == 2);
  lumen_table_clear(&t);
  /* ragged rows when allowed: NaN fills */
  o.allow_header = 0;
  o.allow_ragged = 1;
  assert_int_equal(parse(ctx, "1 2 3\n4\n5 6\n", &o, &t), LUMEN_OK);
  assert_true(t.rows == 3 && t.cols == 3 && t.row_cols[1] == 1);
  assert_true(t.values[3] == 4 && isnan(t.values[4]) && isnan(t.values[5]) && t.values[7] == 6);
  lumen_table_clear(&t);
}

static void bad_tables(void **state) {
  lumen_ctx *ctx = *state;
  lumen_table t;
  assert_int_equal(parse(ctx, "1, 2\n3, x4\n", NULL, &t), LUMEN_ERR_FORMAT);
  expect_msg(ctx, "curve.txt:2:4: 'x4' is not a number");
  assert_null(t.values);
  expect_format_error(ctx, "1, 2\n\n# c\n3, 4, 5\n", NULL, "curve.txt:4:7: row has 3 values, expected 2 as on line 1");
  expect_format_error(ctx, "1, 2\n3\n", NULL, "curve.txt:2:1: row has 1 values, expected 2");
  expect_format_error(ctx, "1,,2\n", NULL, "curve.txt:1:3: empty field");
  expect_format_error(ctx, "1, 2,\n", NULL, "curve.txt:1:6: empty field");
  expect_format_error(ctx, ",1\n", NULL, "curve.txt:1:1: empty field");
  expect_format_error(ctx, "1.5.2\n", NULL, "'1.5.2' is not a number");
  expect_format_error(ctx, "1e999\n", NULL, "curve.txt:1:1: '1e999' is out of the range of a double");
  expect_format_error(ctx, "1 2\n3 -1e400\n", NULL, "curve.txt:2:3: '-1e400' is out of the range of a double");
  expect_format_error(ctx, "# only comments\n\n", NULL, "no numbers");
  assert_int_equal(parse(ctx, "", NULL, &t), LUMEN_ERR_FORMAT);
  expect_format_error(ctx, "time,Cp\n0,0\n", NULL, "curve.txt:1:1: 'time' is not a number");  /* header not allowed */
  lumen_table_opts o = {0};
  o.allow_header = 1;
  expect_format_error(ctx, "0,0\ntime,Cp\n", &o, "curve.txt:2:1");  /* only the first row */
  expect_format_error(ctx, "a,b,c\n0,0\n", &o, "the header has 3 names");
  char with_nul[] = "1 2\n3 \0 4\n";
  assert_int_equal(lumen_parse_table(ctx, with_nul, sizeof with_nul - 1, "bin", NULL, &t), LUMEN_ERR_FORMAT);
  expect_msg(ctx, "bin:2:3: a NUL byte");
  /* files */
  char dir[] = "/tmp/lumen-test-table-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char p[128];
  snprintf(p, sizeof p, "%s/aif.csv", dir);
  FILE *fp = fopen(p, "wb");
  fputs("0 0\n1 0.5\n2 oops\n", fp);
  fclose(fp);
  assert_int_equal(lumen_read_table(ctx, p, NULL, &t), LUMEN_ERR_FORMAT);
  char want[160];
  snprintf(want, sizeof want, "%s:3:3: 'oops' is not a number", p);
  expect_msg(ctx, want);
  o.allow_header = 0;
  o.max_bytes = 4;
  assert_int_equal(lumen_read_table(ctx, p, &o, &t), LUMEN_ERR_FORMAT);
  expect_msg(ctx, "expected at most 4");
  unlink(p);
  assert_int_equal(lumen_read_table(ctx, p, NULL, &t), LUMEN_ERR_IO);
  expect_msg(ctx, p);
  rmdir(dir);
}

/* A FIFO as a table (--curves, --times, --aif) is refused at once, never read (issue 15); alarm()
   turns a hang into a failure. */
static void non_regular_table(void **state) {
  lumen_ctx *ctx = *state;
  char dir[] = "/tmp/lumen-test-table-fifo-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char p[128];
  snprintf(p, sizeof p, "%s/curves.txt", dir);
  assert_int_equal(mkfifo(p, 0600), 0);
  alarm(20);
  lumen_table t;
  assert_int_equal(lumen_read_table(ctx, p, NULL, &t), LUMEN_ERR_IO);
  alarm(0);
  expect_msg(ctx, p);
  expect_msg(ctx, "is a FIFO (named pipe), expected a regular file");
  assert_int_equal(lumen_read_table(ctx, dir, NULL, &t), LUMEN_ERR_IO);
  expect_msg(ctx, "is a folder, expected a regular file");
  unlink(p);
  rmdir(dir);
}

LUMEN_TEST_MAIN(LUMEN_TEST_WITH_CTX(good_tables),
                LUMEN_TEST_WITH_CTX(bad_tables),
                LUMEN_TEST_WITH_CTX(non_regular_table))
