/* lumen fit (cmd_fit.c) in parts: its command line (fit_args.c), its numbers from text tables
   (fit_tables.c) and its CSV output (fit_csv.c). Only for builds with I/O. Every function prints
   its own message ("lumen fit: ...") before it reports a failure. */
#ifndef LUMEN_CLI_FIT_CLI_H
#define LUMEN_CLI_FIT_CLI_H

#include <stdint.h>
#include "cli/cli.h"
#include "lumen/io.h"

/* ---- fit_args.c: the command line */

#define LUMEN_FITCLI_MAX_PARAM_ARGS 16 /* of each of --start, --bounds, --fix */

/* What lumen fit is asked: the library's options (from lumen_fit_options_init, then the command
   line) and the choices only the command makes. Filled by lumen_fitcli_parse_args, checked and
   completed by lumen_fitcli_check_request and lumen_fitcli_finish_options. */
typedef struct {
  lumen_fit_options o;
  const char *model_name, *curves_path, *times_arg, *aif_arg, *out_path, *fa_arg, *ti_arg, *time_unit;
  const char *precision, *conv, *bounds_preset; /* NULL: the library's default */
  const char *param_args[3][LUMEN_FITCLI_MAX_PARAM_ARGS]; /* --start, --bounds, --fix: read once the model is known */
  int n_param_args[3];
  double auc_start, auc_window, hct, aif_delay, r10;
  int64_t mem_limit;
  int help, quiet, verbose, threads, have_tr, overwrite;
  char fa_opt[64], ti_opt[64]; /* the options as typed, for messages */
  /* set by lumen_fitcli_check_request */
  double tscale; /* --time-unit to minutes */
  int is_dce, is_vfa, to_file;
  int x_times, x_ti; /* the row's LUMEN_MF_X_TIMES (increasing times), LUMEN_MF_X_TI (inversion times) */
} lumen_fitcli_request;

/* The library's defaults and the command's. */
void lumen_fitcli_request_init(lumen_fitcli_request *r);
/* argv into r, up to a --help (r->help set). Returns -1 to go on, or the exit status of a usage error. */
int lumen_fitcli_parse_args(lumen_fitcli_request *r, int argc, char **argv);
/* The model, the inputs it needs, --time-unit, --hematocrit and --out (refused when it exists
   without --overwrite), nothing read: -1 to go on, or the exit status. */
int lumen_fitcli_check_request(lumen_fitcli_request *r);
/* The rest of r->o (precision, convolution, bounds, --start/--bounds/--fix), checked on a stand-in
   grid before any file is read: -1 to go on, or the exit status (a usage error; a backend this
   machine lacks is not one). */
int lumen_fitcli_finish_options(lumen_fitcli_request *r, lumen_ctx *ctx);

/* ---- fit_tables.c: numbers from text tables */

typedef struct {
  double *v;
  int n;
} lumen_fitcli_list;

/* Makes room for `more` values after the n there are (n + more <= INT32_MAX / 2); 0, or -1. */
int lumen_fitcli_list_reserve(lumen_fitcli_list *l, int64_t more);
/* Appends every number of a file (numbers separated by newlines, commas, semicolons or spaces,
   '#' comments), each finite; what: the option, for messages; limit: --memory-limit (0: none). */
int lumen_fitcli_read_file(lumen_ctx *ctx, const char *path, const char *what, int64_t limit, lumen_fitcli_list *out);
/* The same for arg as a file when there is one, else as an inline comma list. */
int lumen_fitcli_read_list(lumen_ctx *ctx, const char *arg, const char *what, int64_t limit, lumen_fitcli_list *out);
/* The curves of --curves: one per line, n finite-or-NaN values each (per: what a value is for,
   "time"); *curves (rows x n) is the caller's to free, *count its rows. */
int lumen_fitcli_read_curves(lumen_ctx *ctx, const char *path, int n, const char *per, int64_t limit, double **curves,
                             int64_t *count);

/* ---- fit_csv.c: the CSV output */

/* Refuses --out before any input is read: an existing name without --overwrite, and anything
   but a regular file even with it. 0, or -1. */
int lumen_fitcli_out_allowed(const char *path, int overwrite);

/* Where the CSV goes: standard output, or an atomic file (hidden temporary with an unpredictable
   name created O_EXCL|O_NOFOLLOW, fsynced, renamed to --out at lumen_fitcli_csv_close). The first failed
   write is reported once; later writes are skipped. */
typedef struct {
  lumen_ctx *ctx;
  lumen_atomic_file *file; /* NULL: standard output */
  int failed;
} lumen_fitcli_csv;

/* Opens path (NULL: standard output), first removing a killed run's temporaries beside it. */
int lumen_fitcli_csv_open(lumen_fitcli_csv *k, lumen_ctx *ctx, const char *path, int overwrite);
/* Writes one formatted field or line (at most 255 characters). */
void lumen_fitcli_csv_printf(lumen_fitcli_csv *k, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Renames the file into place, or checks every write to standard output; 0 when all is written.
   A file not committed is removed by lumen_atomic_abort(k->file). */
int lumen_fitcli_csv_close(lumen_fitcli_csv *k);

#endif
