/* lumen fit: fits a model to curves given as text and writes one CSV row per curve. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/cli.h"
#include "lumen_build_config.h"

#define CMD "fit"

#if LUMEN_HAVE_IO
#include "io/io_internal.h"
#include "lumen/aif.h"
#include "lumen/io.h"

static void help(FILE *out) {
  fprintf(out,
          "usage: lumen fit --model NAME --curves FILE [inputs] [options] [--out FILE.csv]\n"
          "\n"
          "Fits a DCE pharmacokinetic or T1 model to every curve of a text file and writes one CSV row\n"
          "per curve (parameters, goodness of fit, state, confidence intervals). For users who have\n"
          "curves rather than images, and for validation.\n"
          "\n"
          "models: tofts, etofts, patlak, 2cum, 2cxm, fxr, auc (DCE; need --times and --aif)\n"
          "        vfa, vfa-linear, vfa-2pt (need --flip-angles and --tr), ir (--inversion-times, optional\n"
          "        --tr), sr (--times: recovery times)\n"
          "\n"
          "inputs (FILE: a text table, numbers separated by newlines, commas, semicolons or spaces; '#'\n"
          "starts a comment; values must be finite, except nan in --curves for a missing sample):\n"
          "  --curves FILE        one curve per line, as many values as there are times / angles\n"
          "  --times FILE         sample times, one per line (DCE, sr; ir: the inversion times)\n"
          "  --time-unit s|min    unit of --times, --aif-delay, --auc-start, --auc-window (default s)\n"
          "  --aif FILE|NAME      plasma concentration (mM) at the times, one per line, or a population\n"
          "                       AIF: parker, georgiou, weinmann, fritz-hansen\n"
          "  --r1 R               relaxivity for fxr, 1/(mM s) (default 4.5)\n"
          "  --r10 R              pre-contrast R1 of every curve for fxr, 1/s (default 1)\n"
          "  --auc-start T        auc: injection time (in --time-unit; default the first sample)\n"
          "  --auc-window W       auc: window length (in --time-unit; default 90 s)\n"
          "\n"
          "output:\n"
          "  --out FILE.csv       write the CSV there (written to a hidden temporary file in the same\n"
          "                       folder, then renamed); default: standard output. --overwrite replaces\n"
          "                       an existing one (only a regular file is ever replaced)\n"
          "\n"
          "CSV columns: the parameters (Ktrans, ve, vp, Fp, Tp, tau, T1, M0 as the model has them),\n"
          "the derived values (kep, E, PS, vp of 2cum, R1, AUC...), delay (with --fit-delay), sse, r2,\n"
          "state (0 = converged, 1 max_iterations, 2 singular, 3 invalid_input, 5 not_finite,\n"
          "7 at_bound: converged with a parameter on a bound, values kept; the summary line counts\n"
          "the curves per parameter and bound), iterations, then NAME_cilo, NAME_cihi (95 %%\n"
          "confidence interval) per parameter.\n"
          "Units: rates (Ktrans, kep, Fp, PS) in 1/min, Tp, tau and delay in min, T1 in s, R1 in 1/s.\n"
          "A summary line with the backend requested / selected / used and fits per second goes to\n"
          "stderr. Every option (also --bounds against --start, --backend) is checked before a file is\n"
          "read; an existing --out without --overwrite, a full disk are input or data errors (exit 1).\n"
          "\n"
          "example:\n"
          "  lumen fit --model tofts --times t.txt --aif parker --hematocrit 0.42 --curves c.txt --out fit.csv\n"
          "\n");
  lumen_cli_help_shared(out, LUMEN_CLI_FIT);
}

/* ------------------------------------------------------------------ number lists */
typedef struct {
  double *v;
  int n, cap;
} dlist;

static int dlist_push(dlist *l, double x) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 64;
    double *v = realloc(l->v, sizeof(double) * (size_t)cap);
    if (!v) return -1;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = x;
  return 0;
}

/* The library's message without the function name it starts with. */
static const char *table_error(lumen_ctx *ctx) {
  const char *m = lumen_ctx_last_error(ctx);
  const char *prefix = "lumen_read_table: ";
  return strncmp(m, prefix, strlen(prefix)) == 0 ? m + strlen(prefix) : m;
}

/* Refuses a file larger than limit (> 0) before it is read: --memory-limit. */
static int within_limit(const char *what, const char *path, int64_t limit) {
  struct stat st;
  if (limit <= 0 || stat(path, &st) != 0 || (int64_t)st.st_size <= limit) return 0;
  lumen_cli_error(CMD, "--memory-limit: %s file '%s' has %lld bytes, over the memory limit of %lld bytes", what,
                  path, (long long)st.st_size, (long long)limit);
  return -1;
}

/* Every value of a table (rows of any length, read in order) into out; all must be finite.
   path is the file, or NULL for an inline list given as arg. */
static int table_values(const lumen_table *t, const char *what, const char *path, const char *arg, dlist *out) {
  for (int64_t r = 0; r < t->rows; ++r)
    for (int64_t c = 0; c < t->row_cols[r]; ++c) {
      double v = t->values[r * t->cols + c];
      if (!isfinite(v)) {
        if (path)
          lumen_cli_error(CMD, "%s file '%s' line %lld, value %lld: %g, expected a finite number", what, path,
                          (long long)t->row_line[r], (long long)c + 1, v);
        else
          lumen_cli_error(CMD, "%s '%s': value %lld is %g, expected a finite number", what, arg, (long long)c + 1, v);
        return -1;
      }
      if (out->n >= INT32_MAX / 2 || dlist_push(out, v)) {
        lumen_cli_error(CMD, "%s '%s': out of memory or too many values", what, path ? path : arg);
        return -1;
      }
    }
  return 0;
}

/* Reads every number of a file (lumen_read_table: numbers separated by newlines, commas,
   semicolons or spaces, '#' comments) into out; each must be finite. */
static int read_vector_file(lumen_ctx *ctx, const char *path, const char *what, int64_t limit, dlist *out) {
  if (within_limit(what, path, limit)) return -1;
  lumen_table_opts o = {.allow_ragged = 1, .allow_header = 0, .max_bytes = limit};
  lumen_table t;
  if (lumen_read_table(ctx, path, &o, &t) != LUMEN_OK) {
    lumen_cli_error(CMD, "%s: %s", what, table_error(ctx));
    return -1;
  }
  int rc = table_values(&t, what, path, NULL, out);
  lumen_table_clear(&t);
  return rc;
}

/* A FILE or an inline comma list. */
static int read_list_arg(lumen_ctx *ctx, const char *arg, const char *what, int64_t limit, dlist *out) {
  struct stat st;
  if (stat(arg, &st) == 0) return read_vector_file(ctx, arg, what, limit, out);
  lumen_table_opts o = {.allow_ragged = 1, .allow_header = 0, .max_bytes = 0};
  lumen_table t;
  char name[64];
  snprintf(name, sizeof name, "%s list", what);
  if (lumen_parse_table(ctx, arg, strlen(arg), name, &o, &t) != LUMEN_OK) {
    lumen_cli_error(CMD, "%s (expected a file or a comma-separated list of numbers)", lumen_ctx_last_error(ctx));
    return -1;
  }
  int rc = table_values(&t, what, NULL, arg, out);
  lumen_table_clear(&t);
  return rc;
}

/* The curves: one per line, n finite-or-NaN values each (a NaN sample marks the curve invalid,
   state 3); the table's values are taken over as *curves (rows x n). */
static int read_curves(lumen_ctx *ctx, const char *path, int n, const char *per, int64_t limit, double **curves,
                       int64_t *count) {
  if (within_limit("--curves", path, limit)) return -1;
  lumen_table_opts o = {.allow_ragged = 1, .allow_header = 0,
                        .max_bytes = limit > 0 ? limit : lumen_io_default_max_bytes()};
  lumen_table t;
  if (lumen_read_table(ctx, path, &o, &t) != LUMEN_OK) {
    lumen_cli_error(CMD, "--curves: %s", table_error(ctx));
    return -1;
  }
  for (int64_t r = 0; r < t.rows; ++r)
    if (t.row_cols[r] != n) {
      lumen_cli_error(CMD, "--curves file '%s' line %lld has %lld values, expected %d (one per %s)", path,
                      (long long)t.row_line[r], (long long)t.row_cols[r], n, per);
      lumen_table_clear(&t);
      return -1;
    }
  for (int64_t k = 0; k < t.rows * n; ++k)
    if (isinf(t.values[k])) {
      lumen_cli_error(CMD, "--curves file '%s' line %lld, value %lld: %g, expected a finite number or nan", path,
                      (long long)t.row_line[k / n], (long long)(k % n) + 1, t.values[k]);
      lumen_table_clear(&t);
      return -1;
    }
  *curves = t.values;
  *count = t.rows;
  t.values = NULL;
  lumen_table_clear(&t);
  return 0;
}

static int parse_double(const char *opt, const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(v)) {
    lumen_cli_error(CMD, "%s '%s': expected a number", opt, s);
    return -1;
  }
  *out = v;
  return 0;
}

static int parse_int(const char *opt, const char *s, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < -2147483647L || v > 2147483647L) {
    lumen_cli_error(CMD, "%s '%s': expected an integer", opt, s);
    return -1;
  }
  *out = (int)v;
  return 0;
}

/* Finds a fit parameter by name (case-insensitive). */
static int param_index(lumen_model m, const char *name) {
  int np = lumen_fit_param_count(m);
  for (int k = 0; k < np; ++k)
    if (strcasecmp(lumen_fit_param_name(m, k), name) == 0) return k;
  return -1;
}

static void list_params(lumen_model m, char *buf, size_t size) {
  buf[0] = 0;
  int np = lumen_fit_param_count(m);
  for (int k = 0; k < np; ++k) {
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s%s", k ? ", " : "", lumen_fit_param_name(m, k));
  }
}

/* One item of --start/--fix (NAME=V) or --bounds (NAME=LO:HI, NAME may be delay) into o; 0, or -1
   after the message. */
static int param_item(lumen_model model, const char *model_name, const char *opt, const char *item, int is_dce,
                      lumen_fit_options *o) {
  const int is_bounds = opt[2] == 'b';
  char plist[256], pname[64], lo_s[64], hi_s[64];
  list_params(model, plist, sizeof plist);
  const char *e = strchr(item, '=');
  const char *colon = e && is_bounds ? strchr(e + 1, ':') : NULL;
  const char *v_end = colon ? colon : e ? e + strlen(e) : NULL;
  if (!e || (is_bounds && !colon) || (size_t)(e - item) >= sizeof pname || (size_t)(v_end - e - 1) >= sizeof lo_s ||
      (colon && strlen(colon + 1) >= sizeof hi_s)) {
    lumen_cli_error(CMD, "%s '%s': expected NAME=%s with NAME one of %s%s (several: comma-separated)", opt, item,
                    is_bounds ? "LO:HI" : "VALUE", plist, is_bounds && is_dce ? ", delay" : "");
    return -1;
  }
  snprintf(pname, sizeof pname, "%.*s", (int)(e - item), item);
  snprintf(lo_s, sizeof lo_s, "%.*s", (int)(v_end - e - 1), e + 1);
  snprintf(hi_s, sizeof hi_s, "%s", colon ? colon + 1 : "");
  double lo, hi = 0;
  if (parse_double(opt, lo_s, &lo) || (colon && parse_double(opt, hi_s, &hi))) return -1;
  if (is_bounds && strcasecmp(pname, "delay") == 0) {
    o->delay_lo = lo;
    o->delay_hi = hi;
    return 0;
  }
  int k = param_index(model, pname);
  if (k < 0) {
    lumen_cli_error(CMD, "%s '%s': model %s has no parameter '%s' (parameters: %s)", opt, item, model_name, pname,
                    plist);
    return -1;
  }
  if (is_bounds) {
    o->lo[k] = lo;
    o->hi[k] = hi;
  } else {
    o->start[k] = lo;
    if (opt[2] == 'f') o->fixed[k] = 1;
  }
  return 0;
}

/* A comma list of items: --bounds Ktrans=0:1,ve=0.001:1 (as lumen dce takes it). */
static int param_list(lumen_model model, const char *model_name, const char *opt, const char *arg, int is_dce,
                      lumen_fit_options *o) {
  char item[256];
  for (const char *p = arg;; ++p) {
    size_t len = strcspn(p, ",");
    if (len >= sizeof item) {
      lumen_cli_error(CMD, "%s '%s': an item of %zu characters, expected NAME=%s", opt, arg, len,
                      opt[2] == 'b' ? "LO:HI" : "VALUE");
      return -1;
    }
    memcpy(item, p, len);
    item[len] = 0;
    if (param_item(model, model_name, opt, item, is_dce, o)) return -1;
    p += len;
    if (!*p) return 0;
  }
}


/* Warnings (and debug messages with -v) to stderr; errors are printed once, by the command. */
static void fit_log(void *user, lumen_log_level level, const char *message) {
  static const char *const names[] = {"error", "warning", "info", "debug"};
  (void)user;
  if (level != LUMEN_LOG_ERROR) fprintf(stderr, "lumen %s: %s: %s\n", CMD, names[level], message);
}

/* ---------------------------------------------------------------- output */

/* Refuses --out before any input is read: an existing name without --overwrite, and anything but
   a regular file even with it (a symlink, FIFO, device node or folder is never replaced). The
   atomic writer checks again when it opens and right before its rename. */
static int out_allowed(const char *path, int overwrite) {
  struct stat st;
  if (lstat(path, &st) != 0) return 0;
  if (!S_ISREG(st.st_mode)) {
    lumen_cli_error(CMD, "--out '%s' is %s: only a regular file is ever replaced (choose another name)", path,
                    lumen_io_kind_name((unsigned)st.st_mode));
    return -1;
  }
  if (!overwrite) {
    lumen_cli_error(CMD, "--out '%s' exists: not replaced without --overwrite (add --overwrite to replace it, or "
                         "choose another name)", path);
    return -1;
  }
  return 0;
}

/* Where the CSV goes: standard output, or an atomic file (hidden temporary with an unpredictable
   name created O_EXCL|O_NOFOLLOW, fsynced, renamed to --out at sink_close). The first failed
   write is reported once; later writes are skipped. */
typedef struct {
  lumen_ctx *ctx;
  lumen_atomic_file *file; /* NULL: standard output */
  int failed;
} csv_sink;

static int sink_open(csv_sink *k, lumen_ctx *ctx, const char *path, int overwrite) {
  k->ctx = ctx;
  if (!path) return 0;
  char *dir = strdup(path);
  if (dir) {
    char *slash = strrchr(dir, '/');
    if (slash) slash[slash == dir] = '\0'; /* "/x.csv" -> "/" */
    (void)lumen_io_remove_stale_temporaries(slash ? dir : "."); /* a killed run's leftovers */
    free(dir);
  }
  if (lumen_atomic_open(ctx, path, overwrite, 0, &k->file) != LUMEN_OK) {
    lumen_cli_error(CMD, "--out: %s", lumen_ctx_last_error(ctx));
    return -1;
  }
  return 0;
}

static void sink_printf(csv_sink *k, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void sink_printf(csv_sink *k, const char *fmt, ...) {
  if (k->failed) return;
  char buf[256]; /* one value or one column name */
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof buf) {
    lumen_cli_error(CMD, "internal error: a CSV field of %d characters", n);
    k->failed = 1;
    return;
  }
  if (!k->file) {
    if (fputs(buf, stdout) == EOF) k->failed = 1; /* reported by lumen_cli_finish_stdout */
    return;
  }
  if (lumen_atomic_write(k->file, buf, (size_t)n) != LUMEN_OK) {
    lumen_cli_error(CMD, "--out: %s", lumen_ctx_last_error(k->ctx));
    k->failed = 1;
  }
}

/* Renames the file into place, or checks every write to standard output; 0 when all is written. */
static int sink_close(csv_sink *k) {
  if (!k->file) {
    if (lumen_cli_finish_stdout(CMD) != LUMEN_EXIT_OK) return -1; /* it printed why */
    if (k->failed) lumen_cli_error(CMD, "writing standard output failed (the output is incomplete)");
    return k->failed ? -1 : 0;
  }
  if (k->failed) return -1; /* the writer already removed its temporary file */
  lumen_atomic_file *f = k->file;
  k->file = NULL;
  if (lumen_atomic_commit(f) != LUMEN_OK) {
    lumen_cli_error(CMD, "--out: %s", lumen_ctx_last_error(k->ctx));
    return -1;
  }
  return 0;
}

#define MAX_PARAM_ARGS 16

int lumen_cmd_fit(int argc, char **argv) {
  const char *model_name = NULL, *curves_path = NULL, *times_arg = NULL, *aif_arg = NULL, *out_path = NULL;
  const char *fa_arg = NULL, *ti_arg = NULL, *backend = "auto", *time_unit = "s";
  const char *starts[MAX_PARAM_ARGS], *bounds[MAX_PARAM_ARGS], *fixes[MAX_PARAM_ARGS];
  int nstarts = 0, nbounds = 0, nfixes = 0;
  double auc_start = NAN, auc_window = NAN;
  lumen_fit_options defaults; /* the library's defaults, not retyped here */
  lumen_fit_options_init(&defaults);
  double hct = LUMEN_AIF_DEFAULT_HCT, aif_delay = 0, tr = 0, r1 = defaults.r1, r10 = 1.0, tolerance = defaults.tolerance;
  int64_t mem_limit = 0;
  int max_iter = defaults.max_iterations, fit_delay = 0, force_cpu = 0, quiet = 0, verbose = 0, threads = 0, have_tr = 0;
  int overwrite = 0;
  char fa_opt[64] = "--flip-angles", ti_opt[64] = "--inversion-times"; /* as typed, for messages */
  const char *precision = "float32", *conv = "exact", *bounds_preset = "physical";

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    /* options with a value: --opt V or --opt=V; an alias (cli_vocabulary.c) becomes its name,
       messages about a value name the option as typed */
    const char *val = NULL;
    char name[64], typed[64];
    const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    if (len >= sizeof name) len = sizeof name - 1;
    memcpy(name, a, len);
    name[len] = 0;
    if (eq) val = eq + 1;
    snprintf(typed, sizeof typed, "%s", name);
    const lumen_cli_option *opt = lumen_cli_option_find(name, LUMEN_CLI_FIT);
    if (opt) snprintf(name, sizeof name, "%s", opt->name);
    if (strcmp(name, "--help") == 0) {
      help(stdout);
      return lumen_cli_finish_stdout(CMD);
    }
    static const char *const switches[] = {"--fit-delay", "--force-cpu", "--quiet", "--verbose", "--overwrite"};
    int sw = -1;
    for (int k = 0; k < (int)(sizeof switches / sizeof switches[0]); ++k)
      if (strcmp(name, switches[k]) == 0) sw = k;
    if (sw >= 0 && val) {
      lumen_cli_error(CMD, "%s takes no value (got '%s'): it is a switch, give it alone", typed, val);
      return LUMEN_EXIT_USAGE;
    }
    if (sw == 0) { fit_delay = 1; continue; }
    if (sw == 1) { force_cpu = 1; continue; }
    if (sw == 2) { quiet = 1; continue; }
    if (sw == 3) { verbose = 1; continue; }
    if (sw == 4) { overwrite = 1; continue; }
    static const char *const valued[] = {"--model", "--curves", "--times", "--time-unit", "--aif", "--hematocrit",
                                         "--aif-delay", "--flip-angles", "--tr", "--inversion-times", "--r1",
                                         "--r10", "--backend", "--tolerance", "--max-iterations", "--start",
                                         "--bounds", "--fix", "--out", "--precision", "--conv", "--threads",
                                         "--auc-start", "--auc-window", "--memory-limit", "--bounds-preset"};
    int known = 0;
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; ++k)
      if (strcmp(name, valued[k]) == 0) known = 1;
    if (!known) {
      lumen_cli_error(CMD, "unknown option '%s' (see 'lumen fit --help')", a);
      return LUMEN_EXIT_USAGE;
    }
    if (!val) {
      if (i + 1 >= argc) {
        lumen_cli_error(CMD, "option %s needs a %s (see 'lumen fit --help')", typed,
                        opt && opt->value ? opt->value : "value");
        return LUMEN_EXIT_USAGE;
      }
      val = argv[++i];
    }
    int bad = 0;
    if (strcmp(name, "--model") == 0) model_name = val;
    else if (strcmp(name, "--curves") == 0) curves_path = val;
    else if (strcmp(name, "--times") == 0) times_arg = val;
    else if (strcmp(name, "--time-unit") == 0) time_unit = val;
    else if (strcmp(name, "--aif") == 0) aif_arg = val;
    else if (strcmp(name, "--hematocrit") == 0) bad = parse_double(typed, val, &hct);
    else if (strcmp(name, "--aif-delay") == 0) bad = parse_double(typed, val, &aif_delay);
    else if (strcmp(name, "--flip-angles") == 0) { fa_arg = val; snprintf(fa_opt, sizeof fa_opt, "%s", typed); }
    else if (strcmp(name, "--tr") == 0) { bad = parse_double(typed, val, &tr); have_tr = 1; }
    else if (strcmp(name, "--inversion-times") == 0) { ti_arg = val; snprintf(ti_opt, sizeof ti_opt, "%s", typed); }
    else if (strcmp(name, "--r1") == 0) bad = parse_double(name, val, &r1);
    else if (strcmp(name, "--r10") == 0) bad = parse_double(name, val, &r10);
    else if (strcmp(name, "--auc-start") == 0) bad = parse_double(name, val, &auc_start);
    else if (strcmp(name, "--auc-window") == 0) bad = parse_double(name, val, &auc_window);
    else if (strcmp(name, "--backend") == 0) backend = val;
    else if (strcmp(name, "--tolerance") == 0) bad = parse_double(name, val, &tolerance);
    else if (strcmp(name, "--max-iterations") == 0) bad = parse_int(name, val, &max_iter);
    else if (strcmp(name, "--threads") == 0) bad = parse_int(name, val, &threads);
    else if (strcmp(name, "--precision") == 0) precision = val;
    else if (strcmp(name, "--conv") == 0) conv = val;
    else if (strcmp(name, "--bounds-preset") == 0) bounds_preset = val;
    else if (strcmp(name, "--out") == 0) out_path = val;
    else if (strcmp(name, "--memory-limit") == 0) {
      mem_limit = lumen_cli_parse_size(val);
      if (mem_limit <= 0) {
        lumen_cli_error(CMD, "--memory-limit '%s': expected a size in bytes above 0 with an optional K, M, G or T "
                        "suffix (e.g. 512M, 4G)", val);
        bad = 1;
      }
    }
    else if (strcmp(name, "--start") == 0 || strcmp(name, "--bounds") == 0 || strcmp(name, "--fix") == 0) {
      int *cnt = name[2] == 's' ? &nstarts : name[2] == 'b' ? &nbounds : &nfixes;
      const char **arr = name[2] == 's' ? starts : name[2] == 'b' ? bounds : fixes;
      if (*cnt >= MAX_PARAM_ARGS) {
        lumen_cli_error(CMD, "too many %s options", name);
        return LUMEN_EXIT_USAGE;
      }
      arr[(*cnt)++] = val;
    }
    if (bad) return LUMEN_EXIT_USAGE;
  }

  /* ---------------------------------------------------------------- check the request */
  if (!model_name) {
    lumen_cli_error(CMD, "--model is required (tofts, etofts, patlak, 2cum, 2cxm, fxr, auc, vfa, vfa-linear, "
                         "vfa-2pt, ir, sr)");
    return LUMEN_EXIT_USAGE;
  }
  lumen_model model;
  if (lumen_model_parse(model_name, &model) != LUMEN_OK) {
    lumen_cli_error(CMD, "--model '%s' is unknown: expected tofts, etofts, patlak, 2cum, 2cxm, fxr, auc, vfa, "
                         "vfa-linear, vfa-2pt, ir or sr", model_name);
    return LUMEN_EXIT_USAGE;
  }
  if (!curves_path) {
    lumen_cli_error(CMD, "--curves FILE is required (one curve per line)");
    return LUMEN_EXIT_USAGE;
  }
  double tscale;
  if (strcmp(time_unit, "s") == 0) tscale = 1.0 / 60.0;
  else if (strcmp(time_unit, "min") == 0) tscale = 1.0;
  else {
    lumen_cli_error(CMD, "--time-unit '%s': expected s or min", time_unit);
    return LUMEN_EXIT_USAGE;
  }
  const int is_dce = model == LUMEN_MODEL_TOFTS || model == LUMEN_MODEL_ETOFTS || model == LUMEN_MODEL_PATLAK ||
                     model == LUMEN_MODEL_2CUM || model == LUMEN_MODEL_2CXM || model == LUMEN_MODEL_FXR ||
                     model == LUMEN_MODEL_AUC;
  const int is_vfa = model == LUMEN_MODEL_VFA || model == LUMEN_MODEL_VFA_LINEAR || model == LUMEN_MODEL_VFA_2PT;
  if ((is_dce || model == LUMEN_MODEL_SR) && !times_arg) {
    lumen_cli_error(CMD, "model %s needs --times FILE", model_name);
    return LUMEN_EXIT_USAGE;
  }
  if (is_dce && !aif_arg) {
    lumen_cli_error(CMD, "model %s needs --aif FILE or --aif parker|georgiou|weinmann|fritz-hansen", model_name);
    return LUMEN_EXIT_USAGE;
  }
  if (is_vfa && (!fa_arg || !have_tr)) {
    lumen_cli_error(CMD, "model %s needs --flip-angles LIST (degrees; also --flip-angle) and --tr S (seconds)",
                    model_name);
    return LUMEN_EXIT_USAGE;
  }
  if (model == LUMEN_MODEL_IR && !ti_arg && times_arg) {
    ti_arg = times_arg; /* as lumen t1 --method ir --times */
    snprintf(ti_opt, sizeof ti_opt, "--times");
  }
  if (model == LUMEN_MODEL_IR && !ti_arg) {
    lumen_cli_error(CMD, "model ir needs --inversion-times LIST (seconds; also --ti)");
    return LUMEN_EXIT_USAGE;
  }
  if (!(hct >= 0 && hct < 1)) {
    lumen_cli_error(CMD, "--hematocrit %g: expected a fraction in [0, 1)", hct);
    return LUMEN_EXIT_USAGE;
  }
  const int to_file = out_path && strcmp(out_path, "-") != 0;
  if (to_file && out_allowed(out_path, overwrite)) return LUMEN_EXIT_FAILURE;

  int rc = LUMEN_EXIT_FAILURE;
  lumen_ctx *ctx = lumen_cli_context(CMD, verbose);
  if (!ctx) return LUMEN_EXIT_FAILURE;
  lumen_ctx_set_log(ctx, fit_log, NULL, verbose ? LUMEN_LOG_DEBUG : LUMEN_LOG_WARNING);
  if (threads < 0 || lumen_ctx_set_threads(ctx, threads) != LUMEN_OK) {
    lumen_cli_error(CMD, "--threads %d: expected 0 (all cores) or a positive count", threads);
    lumen_ctx_destroy(ctx);
    return LUMEN_EXIT_USAGE;
  }
  dlist x = {0}, aif = {0};
  double *curves = NULL;
  lumen_fit_plan *plan = NULL;
  double *params = NULL, *derived = NULL, *chi2 = NULL, *r2 = NULL, *cilo = NULL, *cihi = NULL, *delay = NULL;
  int32_t *state = NULL, *iters = NULL;
  double *consts = NULL;
  csv_sink out = {0};

  /* ---------------------------------------------------------------- options */
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.model = model;
  o.tolerance = tolerance;
  o.max_iterations = max_iter;
  o.backend = backend;
  o.force_cpu = force_cpu;
  o.fit_delay = fit_delay;
  o.tr = tr;
  o.r1 = r1;
  if (!isnan(auc_start)) o.auc_t0 = auc_start * tscale;
  if (!isnan(auc_window)) o.auc_window = auc_window * tscale;
  if (strcmp(precision, "float32") == 0) o.precision = LUMEN_FIT_FLOAT32;
  else if (strcmp(precision, "float64") == 0) o.precision = LUMEN_FIT_FLOAT64;
  else {
    lumen_cli_error(CMD, "--precision '%s': expected float32 or float64", precision);
    rc = LUMEN_EXIT_USAGE;
    goto done;
  }
  if (strcmp(conv, "exact") == 0) o.conv = LUMEN_FIT_CONV_EXACT;
  else if (strcmp(conv, "trapezoid") == 0) o.conv = LUMEN_FIT_CONV_TRAPEZOID;
  else {
    lumen_cli_error(CMD, "--conv '%s': expected exact or trapezoid", conv);
    rc = LUMEN_EXIT_USAGE;
    goto done;
  }
  if (lumen_fit_bounds_preset_parse(ctx, bounds_preset, &o.bounds_preset) != LUMEN_OK) {
    lumen_cli_error(CMD, "--bounds-preset: %s", lumen_ctx_last_error(ctx));
    rc = LUMEN_EXIT_USAGE;
    goto done;
  }
  for (int j = 0; j < nstarts + nbounds + nfixes; ++j) {
    const char *opt = j < nstarts ? "--start" : j < nstarts + nbounds ? "--bounds" : "--fix";
    const char *arg = j < nstarts ? starts[j] : j < nstarts + nbounds ? bounds[j - nstarts] : fixes[j - nstarts - nbounds];
    if (param_list(model, model_name, opt, arg, is_dce, &o)) {
      rc = LUMEN_EXIT_USAGE;
      goto done;
    }
  }
  /* the options alone (backend name, bounds against starts...) on a stand-in grid: a usage error
     before any file is read; a backend this machine lacks is not one */
  if (model != LUMEN_MODEL_AUC) {
    lumen_status tst = lumen_fit_options_check(ctx, &o);
    if (tst != LUMEN_OK) {
      lumen_cli_error(CMD, "%s (checked before any file is read)", lumen_ctx_last_error(ctx));
      rc = tst == LUMEN_ERR_INVALID_ARGUMENT ? LUMEN_EXIT_USAGE : LUMEN_EXIT_FAILURE;
      goto done;
    }
  }

  /* ---------------------------------------------------------------- sample grid */
  if (is_vfa) {
    if (read_list_arg(ctx, fa_arg, fa_opt, mem_limit, &x)) goto done;
    for (int i = 0; i < x.n; ++i) x.v[i] *= 3.14159265358979323846 / 180.0;
  } else if (model == LUMEN_MODEL_IR) {
    if (read_list_arg(ctx, ti_arg, ti_opt, mem_limit, &x)) goto done;
  } else {
    if (read_vector_file(ctx, times_arg, "--times", mem_limit, &x)) goto done;
    if (is_dce)
      for (int i = 0; i < x.n; ++i) x.v[i] *= tscale;
  }
  const int n = x.n;
  if (is_dce || model == LUMEN_MODEL_SR || model == LUMEN_MODEL_IR) {
    for (int i = 1; i < n; ++i)
      if (!(x.v[i] > x.v[i - 1])) {
        lumen_cli_error(CMD, "%s: values must increase strictly, but value %d (%g) follows value %d (%g)",
                        model == LUMEN_MODEL_IR ? ti_opt : "--times", i + 1, x.v[i], i, x.v[i - 1]);
        goto done;
      }
  }

  /* ---------------------------------------------------------------- AIF */
  if (is_dce) {
    lumen_aif_kind kind;
    if (lumen_aif_parse(aif_arg, &kind) == LUMEN_OK) {
      lumen_aif_options ao;
      lumen_aif_options_init(&ao);
      ao.kind = kind;
      ao.hct = hct;
      ao.delay = aif_delay * tscale;
      ao.plasma = 1;
      for (int i = 0; i < n; ++i) dlist_push(&aif, 0);
      if (aif.n != n || lumen_aif_population(ctx, &ao, n, x.v, aif.v) != LUMEN_OK) {
        lumen_cli_error(CMD, "--aif %s: %s", aif_arg, lumen_ctx_last_error(ctx));
        goto done;
      }
    } else {
      struct stat st;
      if (stat(aif_arg, &st) != 0) {
        lumen_cli_error(CMD, "--aif '%s' is neither a file nor a population AIF (parker, georgiou, weinmann, "
                             "fritz-hansen)", aif_arg);
        goto done;
      }
      if (read_vector_file(ctx, aif_arg, "--aif", mem_limit, &aif)) goto done;
      if (aif.n != n) {
        lumen_cli_error(CMD, "--aif file '%s' holds %d values but --times has %d: expected one AIF value per time",
                        aif_arg, aif.n, n);
        goto done;
      }
    }
  }

  if (lumen_fit_plan_create(ctx, &o, n, x.v, is_dce ? aif.v : NULL, &plan) != LUMEN_OK) {
    lumen_cli_error(CMD, "%s", lumen_ctx_last_error(ctx));
    goto done;
  }

  /* ---------------------------------------------------------------- curves */
  int64_t nc = 0;
  if (read_curves(ctx, curves_path, n, is_vfa ? "flip angle" : model == LUMEN_MODEL_IR ? "inversion time" : "time",
                  mem_limit, &curves, &nc))
    goto done;
  const int np = lumen_model_param_count(model), nd = lumen_fit_derived_count(model);
  params = calloc((size_t)nc * (size_t)(np > 0 ? np : 1), sizeof(double));
  derived = calloc((size_t)nc * (size_t)(nd > 0 ? nd : 1), sizeof(double));
  cilo = calloc((size_t)nc * (size_t)(np > 0 ? np : 1), sizeof(double));
  cihi = calloc((size_t)nc * (size_t)(np > 0 ? np : 1), sizeof(double));
  chi2 = calloc((size_t)nc, sizeof(double));
  r2 = calloc((size_t)nc, sizeof(double));
  delay = calloc((size_t)nc, sizeof(double));
  state = calloc((size_t)nc, sizeof(int32_t));
  iters = calloc((size_t)nc, sizeof(int32_t));
  consts = calloc((size_t)nc * LUMEN_FIT_NCONSTS, sizeof(double));
  if (!params || !derived || !cilo || !cihi || !chi2 || !r2 || !delay || !state || !iters || !consts) {
    lumen_cli_error(CMD, "out of memory for %lld curves", (long long)nc);
    goto done;
  }
  for (int64_t c = 0; c < nc; ++c) {
    consts[c * LUMEN_FIT_NCONSTS + LUMEN_FIT_CONST_R10] = r10;
    consts[c * LUMEN_FIT_NCONSTS + LUMEN_FIT_CONST_B1] = 1.0;
  }
  lumen_fit_results res = {
      .params = params, .derived = derived, .state = state, .chi2 = chi2, .r2 = r2, .iterations = iters,
      .ci_lo = cilo, .ci_hi = cihi, .delay = delay};
  if (lumen_fit_execute_f64(ctx, plan, nc, curves, consts, &res) != LUMEN_OK) {
    lumen_cli_error(CMD, "fitting failed: %s", lumen_ctx_last_error(ctx));
    goto done;
  }

  /* ---------------------------------------------------------------- CSV */
  if (sink_open(&out, ctx, to_file ? out_path : NULL, overwrite)) goto done;
  {
    int col = 0;
    for (int k = 0; k < np; ++k) sink_printf(&out, "%s%s", col++ ? "," : "", lumen_model_param_name(model, k));
    for (int k = 0; k < nd; ++k) sink_printf(&out, "%s%s", col++ ? "," : "", lumen_fit_derived_name(model, k));
    if (fit_delay) sink_printf(&out, "%sdelay", col++ ? "," : "");
    sink_printf(&out, "%ssse,r2,state,iterations", col ? "," : "");
    for (int k = 0; k < np; ++k) {
      const char *pn = lumen_model_param_name(model, k);
      sink_printf(&out, ",%s_cilo,%s_cihi", pn, pn);
    }
    sink_printf(&out, "\n");
    for (int64_t c = 0; c < nc && !out.failed; ++c) {
      col = 0;
      for (int k = 0; k < np; ++k) sink_printf(&out, "%s%.9g", col++ ? "," : "", params[c * np + k]);
      for (int k = 0; k < nd; ++k) sink_printf(&out, "%s%.9g", col++ ? "," : "", derived[c * nd + k]);
      if (fit_delay) sink_printf(&out, "%s%.9g", col++ ? "," : "", delay[c]);
      sink_printf(&out, "%s%.9g,%.9g,%d,%d", col ? "," : "", chi2[c], r2[c], (int)state[c], (int)iters[c]);
      for (int k = 0; k < np; ++k) sink_printf(&out, ",%.9g,%.9g", cilo[c * np + k], cihi[c * np + k]);
      sink_printf(&out, "\n");
    }
  }
  if (sink_close(&out)) goto done;
  if (!quiet) {
    const int64_t conv_n = res.state_counts[LUMEN_FIT_CONVERGED], at_n = res.state_counts[LUMEN_FIT_AT_BOUND];
    char bounds_note[256] = "";
    for (int k = 0; k < np; ++k)
      for (int side = 0; side < 2; ++side) {
        int64_t cnt = side ? res.at_upper[k] : res.at_lower[k];
        size_t len = strlen(bounds_note);
        if (cnt > 0 && len + 1 < sizeof bounds_note)
          snprintf(bounds_note + len, sizeof bounds_note - len, "%s%s %s %lld", len ? ", " : ": ",
                   lumen_fit_param_name(model, k), side ? "upper" : "lower", (long long)cnt);
      }
    fprintf(stderr,
            "lumen fit: %s, %lld curves x %d samples: backend requested %s, selected %s, used %s (%s); "
            "%lld converged, %lld at a bound (%s preset%s), %lld not; %.3f s, %.0f fits/s\n",
            lumen_model_name(model), (long long)nc, n, res.backend_requested, res.backend_selected, res.backend_used,
            res.reason, (long long)conv_n, (long long)at_n, lumen_fit_bounds_preset_name(o.bounds_preset), bounds_note,
            (long long)(nc - conv_n - at_n), res.seconds, res.seconds > 0 ? (double)nc / res.seconds : 0.0);
  }
  rc = LUMEN_EXIT_OK;

done:
  lumen_atomic_abort(out.file);  /* a failed run leaves nothing under --out */
  free(x.v);
  free(aif.v);
  free(curves);
  free(params);
  free(derived);
  free(cilo);
  free(cihi);
  free(chi2);
  free(r2);
  free(delay);
  free(state);
  free(iters);
  free(consts);
  lumen_fit_plan_destroy(plan);
  lumen_ctx_destroy(ctx);
  return rc;
}
#else
int lumen_cmd_fit(int argc, char **argv) {
  (void)argc; (void)argv;
  lumen_cli_error(CMD, "this build has no I/O module (nifti_clib, cJSON), whose text table reader lumen fit uses: "
                       "rebuild with them");
  return LUMEN_EXIT_FAILURE;
}
#endif
