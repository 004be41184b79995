/* lumen backends: the table users run after installing, PASS / FAIL / SKIP per part. */
#define _XOPEN_SOURCE 700 /* readlink */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cli/health_bindings.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO
#include "scale/scale.h"
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
          "(standard solver), nifti-io (a NIfTI write/read round trip), dicom (GDCM's decoder module for\n"
          "compressed DICOM loads), mpi (PASS when this build links\n"
          "MPI), python and mex (the binding / MEX files where install.sh put them, as recorded in\n"
          "PREFIX/share/lumen/bindings.conf; else python3 and Octave's path as they are).\n"
          "A machine without a GPU or driver shows SKIP rows, never a crash.\n\n"
          "options:\n"
          "  --json       print a JSON list of {\"name\", \"status\", \"detail\"} objects instead\n"
          "  --threads N  CPU threads to use (default 0 = all cores)\n"
          "  -v           also print debug messages\n"
          "  -h, --help   this text\n\n"
          "A FAIL row makes the exit status 1 (as does standard output that cannot be written).\n\n");
  lumen_cli_help_exit_status(out);
}

static void add(lumen_check *rows, int *n, const char *name, lumen_check_status st, const char *detail) {
  if (*n >= MAX_ROWS) return;
  snprintf(rows[*n].name, sizeof rows[*n].name, "%s", name);
  rows[*n].status = st;
  snprintf(rows[*n].detail, sizeof rows[*n].detail, "%s", detail);
  (*n)++;
}

/* Rows for parts outside the core library: file I/O and the front ends. */
static void add_frontend_rows(lumen_ctx *ctx, lumen_check *rows, int *n) {
#if LUMEN_HAVE_IO
  char detail[LUMEN_CHECK_DETAIL_MAX];
  lumen_status s = lumen_io_selftest(ctx, detail, sizeof detail);
  add(rows, n, "nifti-io", s == LUMEN_OK ? LUMEN_CHECK_PASS : LUMEN_CHECK_FAIL, detail);
  s = lumen_dicom_selftest(ctx, detail, sizeof detail);
  add(rows, n, "dicom", s == LUMEN_OK ? LUMEN_CHECK_PASS : LUMEN_CHECK_SKIP, detail);
#else
  (void)ctx;
  add(rows, n, "nifti-io", LUMEN_CHECK_SKIP, "built without nifti_clib/cJSON: NIfTI input and output unavailable");
#endif
  /* mpi, python, mex: the same rows install.sh's table takes (src/diag/health_bindings.c) */
  char exe[4096];
  ssize_t ne = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (ne > 0) exe[ne] = '\0';
  char mpi_module[4096] = "";
#if LUMEN_HAVE_IO
  int have_mpi = lumen_dist_have_mpi() ? (lumen_dist_mpi_module(mpi_module, sizeof mpi_module) ? 1 : -1) : 0;
#else
  int have_mpi = 0;
#endif
  lumen_cli_health_binding_checks(have_mpi, mpi_module, ne > 0 ? exe : NULL, rows, MAX_ROWS, n);
  if (*n > MAX_ROWS) *n = MAX_ROWS;
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
