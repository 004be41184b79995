/* lumen backends: the table users run after installing, PASS / FAIL / SKIP per part. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO
#include "lumen/io.h"
#endif

#define MAX_ROWS 64

static void help(FILE *out) {
  fprintf(out,
          "usage: lumen backends [--json] [--threads N] [-v]\n\n"
          "Checks what this build of lumen and this machine can do and prints one row per part:\n"
          "  PASS  present and working (a small self-test ran)\n"
          "  FAIL  expected to work here and did not: the detail says what went wrong\n"
          "  SKIP  not built in, or not available on this machine: the detail says why\n\n"
          "Rows: cpu (cores, threads, memory), openmp, precision (float16/bfloat16 conversion),\n"
          "cuda-build, cuda-driver, one row per CUDA device (memory and a copy round trip), gsl\n"
          "(standard solver), nifti-io (a NIfTI write/read round trip), mpi, python, mex.\n"
          "A machine without a GPU or driver shows SKIP rows, never a crash.\n\n"
          "options:\n"
          "  --json       print a JSON list of {\"name\", \"status\", \"detail\"} objects instead\n"
          "  --threads N  CPU threads to use (default 0 = all cores)\n"
          "  -v           also print debug messages\n"
          "  -h, --help   this text\n\n"
          "exit status: 0 when no row is FAIL, 1 otherwise (also when standard output cannot be\n"
          "written), 2 for a usage error.\n");
}

static void add(lumen_check *rows, int *n, const char *name, lumen_check_status st, const char *detail) {
  if (*n >= MAX_ROWS) return;
  snprintf(rows[*n].name, sizeof rows[*n].name, "%s", name);
  rows[*n].status = st;
  snprintf(rows[*n].detail, sizeof rows[*n].detail, "%s", detail);
  (*n)++;
}

/* Runs a short shell command and keeps the first line it prints; returns its exit status
   (-1 when it could not run). Used only to see whether the bindings are installed. */
static int probe_command(const char *cmd, char *line, size_t size) {
  line[0] = '\0';
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  if (fgets(line, (int)size, p)) line[strcspn(line, "\n")] = '\0';
  char rest[256];
  while (fgets(rest, sizeof rest, p)) {
  }
  int st = pclose(p);
  return st;
}

/* The bindings are separate packages: report whether this machine's python3 imports the
   `lumen` package and whether Octave finds the MEX file; absent is a SKIP with the way to get it. */
static void add_binding_rows(lumen_check *rows, int *n) {
  char line[LUMEN_CHECK_DETAIL_MAX - 64], detail[LUMEN_CHECK_DETAIL_MAX];
  int st = probe_command("python3 -c 'import lumen; print(lumen.__file__)' 2>/dev/null", line, sizeof line);
  if (st == 0 && line[0]) {
    snprintf(detail, sizeof detail, "python3 imports lumen from %s", line);
    add(rows, n, "python", LUMEN_CHECK_PASS, detail);
  } else {
    add(rows, n, "python", LUMEN_CHECK_SKIP,
        "python3 cannot import the lumen package (install it with ./install.sh or pip install ./python)");
  }
  st = probe_command("command -v octave-cli 2>/dev/null", line, sizeof line);
  if (st != 0 || !line[0]) {
    add(rows, n, "mex", LUMEN_CHECK_SKIP, "Octave not found (MATLAB users: build with matlab/build_mex.sh)");
    return;
  }
  st = probe_command("octave-cli --no-gui --quiet --eval 'disp(which(\"lumen_fit\"))' 2>/dev/null", line, sizeof line);
  if (st == 0 && line[0]) {
    snprintf(detail, sizeof detail, "Octave finds lumen_fit at %s", line);
    add(rows, n, "mex", LUMEN_CHECK_PASS, detail);
  } else {
    add(rows, n, "mex", LUMEN_CHECK_SKIP,
        "Octave is installed but lumen_fit is not on its path (build with matlab/build_mex.sh or ./install.sh)");
  }
}

/* Rows for parts outside the core library: file I/O and the front ends. */
static void add_frontend_rows(lumen_ctx *ctx, lumen_check *rows, int *n) {
#if LUMEN_HAVE_IO
  char detail[LUMEN_CHECK_DETAIL_MAX];
  lumen_status s = lumen_io_selftest(ctx, detail, sizeof detail);
  add(rows, n, "nifti-io", s == LUMEN_OK ? LUMEN_CHECK_PASS : LUMEN_CHECK_FAIL, detail);
#else
  (void)ctx;
  add(rows, n, "nifti-io", LUMEN_CHECK_SKIP, "built without nifti_clib/cJSON: NIfTI input and output unavailable");
#endif
  add(rows, n, "mpi", LUMEN_CHECK_SKIP, "this build has no MPI support (Open MPI was not enabled at configure time)");
  add_binding_rows(rows, n);
}

int lumen_cmd_backends(int argc, char **argv) {
  int json = 0, verbose = 0, threads = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0)
      json = 1;
    else if (strcmp(argv[i], "-v") == 0)
      verbose = 1;
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      char *end = NULL;
      long t = strtol(argv[++i], &end, 10);
      if (*end != '\0' || t < 0 || t > 4096) {
        lumen_cli_error("backends", "--threads '%s': expected an integer 0..4096 (0 = all cores)", argv[i]);
        return LUMEN_EXIT_USAGE;
      }
      threads = (int)t;
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      help(stdout);
      return lumen_cli_finish_stdout("backends");
    } else {
      lumen_cli_error("backends", "unknown option '%s' (see 'lumen backends --help')", argv[i]);
      return LUMEN_EXIT_USAGE;
    }
  }
  lumen_ctx *ctx = lumen_cli_context("backends", verbose);
  if (!ctx) return LUMEN_EXIT_FAILURE;
  lumen_ctx_set_threads(ctx, threads);
  /* Expected absences (no driver) are SKIP rows, not log noise. */
  lumen_ctx_set_log(ctx, NULL, NULL, LUMEN_LOG_ERROR);

  static lumen_check rows[MAX_ROWS];
  int n = 0;
  if (lumen_health_checks(ctx, rows, MAX_ROWS, &n) != LUMEN_OK) {
    lumen_cli_error("backends", "%s", lumen_ctx_last_error(ctx));
    lumen_ctx_destroy(ctx);
    return LUMEN_EXIT_FAILURE;
  }
  if (n > MAX_ROWS) n = MAX_ROWS;
  add_frontend_rows(ctx, rows, &n);

  int failed = 0;
  for (int i = 0; i < n; i++) failed += rows[i].status == LUMEN_CHECK_FAIL;
  if (json) {
    printf("[\n");
    for (int i = 0; i < n; i++) {
      printf("  {\"name\": ");
      lumen_cli_json_string(stdout, rows[i].name);
      printf(", \"status\": \"%s\", \"detail\": ", lumen_check_status_name(rows[i].status));
      lumen_cli_json_string(stdout, rows[i].detail);
      printf("}%s\n", i + 1 < n ? "," : "");
    }
    printf("]\n");
  } else {
    printf("%s\n\n", lumen_build_info());
    printf("%-12s %-6s %s\n", "part", "status", "detail");
    for (int i = 0; i < n; i++)
      printf("%-12s %-6s %s\n", rows[i].name, lumen_check_status_name(rows[i].status), rows[i].detail);
    printf("\n%d part%s checked: %d failed\n", n, n == 1 ? "" : "s", failed);
  }
  lumen_ctx_destroy(ctx);
  /* a full disk or /dev/full as stdout: the table is incomplete, never exit 0 */
  if (lumen_cli_finish_stdout("backends") != LUMEN_EXIT_OK) return LUMEN_EXIT_FAILURE;
  return failed ? LUMEN_EXIT_FAILURE : LUMEN_EXIT_OK;
}
