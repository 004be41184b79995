/* Option parsing, memory limits, progress display, logging and the run-and-report step shared by
   `lumen dce`, `lumen t1` and the distributed dce runs (cmd_merge.c); pipe_cli.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO
#include "cli/pipe_cli.h"
#include "lumen/io.h"

/* One bar per stage (read, A, B, each model's fit and maps, report; issue 39 item 10): a new label
   starts a new bar; a bar never goes back (a part reporting below what was shown is not shown) and
   reaches 100 % once; after a second it shows the time left, from the rate so far. */
typedef struct progress_state {
  int tty;
  char label[64];
  int last;        /* percent shown; -1 none yet; 100: done (later reports of the label ignored) */
  int open;        /* a tty bar without its newline */
  double t0;       /* when the label's bar started */
} progress_state;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void eta_text(const progress_state *p, double fraction, char *buf, size_t size) {
  double el = now_s() - p->t0;
  buf[0] = '\0';
  if (fraction >= 1 || fraction < 0.02 || el < 1.0) return;
  double left = el * (1 - fraction) / fraction;
  if (left < 60) snprintf(buf, size, ", about %.0f s left", left < 1 ? 1 : left);
  else snprintf(buf, size, ", about %.0f min left", left / 60);
}

static int progress_cb(void *user, double fraction, const char *stage) {
  progress_state *p = user;
  if (strcmp(stage, "fit") != 0 && strcmp(stage, p->label) != 0) { /* a new stage: a new bar */
    if (p->tty && p->open) fputc('\n', stderr);
    snprintf(p->label, sizeof p->label, "%s", stage);
    p->last = -1;
    p->open = 0;
    p->t0 = now_s();
  }
  int pct = (int)(fraction * 100);  /* floor: 100 only when done */
  if (p->last >= 100 || pct < p->last) return 0;
  char eta[64];
  eta_text(p, fraction, eta, sizeof eta);
  if (p->tty) {
    int w = 40, k = (int)(fraction * w);
    fprintf(stderr, "\r%-22.22s [", p->label);
    for (int i = 0; i < w; ++i) fputc(i < k ? '#' : '.', stderr);
    fprintf(stderr, "] %3d%%%-24s", pct, eta);
    p->open = pct < 100;
    if (pct >= 100) fputc('\n', stderr);
    fflush(stderr);
  } else if (pct >= 100) { /* a log, not a terminal: each stage once when done, with its time */
    fprintf(stderr, "lumen: %s done (%.2f s)\n", p->label, now_s() - p->t0);
  } else if (pct / 10 != p->last / 10 && p->last >= 0 && now_s() - p->t0 >= 1.0) {
    fprintf(stderr, "lumen: %s %d%%%s\n", p->label, pct, eta); /* a long stage: every 10 % */
  }
  p->last = pct;
  return 0;
}

/* Warnings and information to stderr; errors are printed once by the command itself. */
static void pipe_log(void *user, lumen_log_level level, const char *message) {
  static const char *const names[] = {"error", "warning", "info", "debug"};
  if (level == LUMEN_LOG_ERROR) return;
  fprintf(stderr, "lumen %s: %s: %s\n", (const char *)user, names[level], message);
}

void lumen_cli_pipe_log(lumen_ctx *ctx, const char *cmd, int verbose, int quiet) {
  lumen_ctx_set_log(ctx, pipe_log, (void *)cmd, quiet ? LUMEN_LOG_ERROR : verbose ? LUMEN_LOG_DEBUG : LUMEN_LOG_WARNING);
}

/* Value options of dce and t1 that the shared table (cli_vocabulary.c) does not hold: each is
   the lumen_pipe_config key of the same name. */
static const char *const value_opts[] = {
  "dce", "series", "out", "t1map", "mask", "b1", "aif", "prefix", "models", "select", "method", "input-type", "dt",
  "relaxivity", "blood-t1", "t1", "baseline", "baseline-start", "max-invalid-fraction", "compress-level", "chunk",
  "times", "fxr-fw", NULL};

/* One NIfTI input against the limit: the reader's own header check (dims x type against max_bytes,
   no voxel read). Other problems of the file are left to the pipeline, which names its role. */
static int nifti_within(lumen_ctx *ctx, const char *cmd, const char *role, const char *path, int64_t limit) {
  if (!path || !*path) return 1;
  lumen_nifti_read_opts o = {.keep_type = 0, .max_bytes = limit};
  lumen_nifti_info info;
  if (lumen_nifti_read_header(ctx, path, &o, &info) != LUMEN_ERR_OUT_OF_MEMORY) return 1;
  lumen_cli_error(cmd, "--memory-limit: %s refused: %s", role, lumen_ctx_last_error(ctx));
  return 0;
}

/* One DICOM series input (a folder or file; docs/DICOM.md) against the limit: the series reader's
   headers-only pass (every file's header, the whole image's size against max_bytes, no pixel).
   Other problems are left to the pipeline, which names its role. */
static int dicom_within(lumen_ctx *ctx, const char *cmd, const char *role, const char *path, const char *series,
                        int64_t limit) {
  lumen_dicom_series_opts o = {.max_bytes = limit, .series_uid = series, .headers_only = 1};
  lumen_image *im = NULL;
  lumen_status s = lumen_dicom_series_read(ctx, &path, 1, &o, &im, NULL);
  lumen_image_free(im);
  if (s != LUMEN_ERR_OUT_OF_MEMORY) {
    lumen_ctx_clear_error(ctx);
    return 1;
  }
  lumen_cli_error(cmd, "--memory-limit: %s refused: %s", role, lumen_ctx_last_error(ctx));
  return 0;
}

/* A NIfTI file or a DICOM series input against the limit. */
static int input_within(lumen_ctx *ctx, const char *cmd, const char *role, const char *path, const char *series,
                        int64_t limit) {
  if (!path || !*path) return 1;
  lumen_format_info f; /* the io table decides; a path it cannot tell is left to the pipeline */
  int dicom = lumen_image_probe(ctx, path, &f) == LUMEN_OK &&
              (f.format == LUMEN_IMAGE_FORMAT_DICOM || f.format == LUMEN_IMAGE_FORMAT_DICOM_FOLDER);
  lumen_ctx_clear_error(ctx);
  if (dicom) return dicom_within(ctx, cmd, role, path, series, limit);
  return nifti_within(ctx, cmd, role, path, limit);
}

/* A text table (AIF file) against the limit: its size on disk. */
static int table_within(const char *cmd, const char *role, const char *path, int64_t limit) {
  struct stat st;
  if (stat(path, &st) != 0 || (int64_t)st.st_size <= limit) return 1;
  lumen_cli_error(cmd, "--memory-limit: %s refused: '%s' has %lld bytes, over the memory limit of %lld bytes", role,
                  path, (long long)st.st_size, (long long)limit);
  return 0;
}

int lumen_cli_pipe_check_memory(lumen_ctx *ctx, const char *cmd, const lumen_pipe_config *cfg, int64_t limit) {
  if (limit <= 0) return -1;
  int ok = input_within(ctx, cmd, "DCE series", cfg->dce, cfg->series, limit) &&
           nifti_within(ctx, cmd, "T1 map", cfg->t1map, limit) && nifti_within(ctx, cmd, "mask", cfg->mask, limit) &&
           nifti_within(ctx, cmd, "B1 map", cfg->b1, limit);
  for (int i = 0; ok && i < cfg->n_vfa; ++i)
    ok = input_within(ctx, cmd, cfg->dce ? "VFA series" : "input", cfg->vfa[i], NULL, limit);
  const char *aif = cfg->aif ? cfg->aif : "";
  if (ok && !strncmp(aif, "roi:", 4)) ok = nifti_within(ctx, cmd, "AIF ROI", aif + 4, limit);
  if (ok && !strncmp(aif, "fitted:", 7)) ok = nifti_within(ctx, cmd, "AIF ROI", aif + 7, limit);
  if (ok && !strncmp(aif, "file:", 5)) ok = table_within(cmd, "AIF file", aif + 5, limit);
  return ok ? -1 : LUMEN_EXIT_FAILURE;
}

/* "--name=value": name into buf, returns the value; else copies arg and returns NULL. */
static const char *split_option(const char *arg, char *buf, size_t size) {
  const char *eq = !strncmp(arg, "--", 2) ? strchr(arg, '=') : NULL;
  size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
  if (len >= size) len = size - 1;
  memcpy(buf, arg, len);
  buf[len] = '\0';
  return eq ? eq + 1 : NULL;
}

/* Switches: 1 when name is one (and sets it), 0 when not, -1 when it was given a value. */
static int pipe_switch(const char *cmd, const char *name, const char *val, lumen_pipe_config *cfg, int *verbose) {
  static const char *const names[] = {"-q", "--quiet", "-v", "--verbose", "--overwrite", "--resume", "--force-cpu",
                                      "--allow-failures", "--fit-delay", "--save-conc", "--no-ci", "--no-report"};
  int k = -1;
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); ++i)
    if (!strcmp(name, names[i])) k = i;
  if (k < 0) return 0;
  if (val) {
    lumen_cli_error(cmd, "%s takes no value (got '%s'): it is a switch, give it alone", name, val);
    return -1;
  }
  switch (k) {
    case 0: case 1: cfg->quiet = 1; break;
    case 2: case 3: *verbose = 1; break;
    case 4: cfg->overwrite = 1; break;
    case 5: cfg->resume = 1; cfg->overwrite = 1; break;
    case 6: cfg->force_cpu = 1; break;
    case 7: cfg->allow_failures = 1; break;
    case 8: cfg->fit_delay = 1; break;
    case 9: cfg->save_conc = 1; break;
    case 10: cfg->write_ci = 0; break;
    default: cfg->report = 0; break;
  }
  return 1;
}

/* The lumen_pipe_config key of a value option (NULL: not one of cmd's). In dce one flip angle is
   the series' own (key flip_angle), a list the --vfa inputs' (flip_angles), whichever spelling. */
static const char *pipe_key(const char *cmd, const char *name, const char *val) {
  const lumen_cli_option *o = lumen_cli_option_find(name, strcmp(cmd, "t1") ? LUMEN_CLI_DCE : LUMEN_CLI_T1);
  if (o && o->value) {
    if (o->key && !strcmp(o->key, "flip_angles") && !strcmp(cmd, "dce") && val && !strpbrk(val, ", []"))
      return "flip_angle";
    return o->key ? o->key : o->name + 2;
  }
  if (strncmp(name, "--", 2)) return NULL;
  for (int k = 0; value_opts[k]; ++k)
    if (!strcmp(name + 2, value_opts[k])) return value_opts[k];
  return NULL;
}

/* --vfa / --in FILE...: the files up to the next option. */
static int pipe_files(const char *cmd, lumen_ctx *ctx, lumen_pipe_config *cfg, const char *name, const char *val,
                      int argc, char **argv, int *i) {
  int n = 0;
  if (val) {
    if (lumen_pipe_config_set(ctx, cfg, "vfa", val, name, NULL) != LUMEN_OK) goto bad;
    ++n;
  }
  while (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0) {
    if (lumen_pipe_config_set(ctx, cfg, "vfa", argv[++*i], name, NULL) != LUMEN_OK) goto bad;
    ++n;
  }
  if (n) return -1;
  lumen_cli_error(cmd, "%s needs at least one FILE", name);
  return LUMEN_EXIT_USAGE;
bad:
  lumen_cli_error(cmd, "%s", lumen_ctx_last_error(ctx));
  return LUMEN_EXIT_USAGE;
}

/* --memory-limit SIZE */
static int pipe_memory_limit(const char *cmd, const char *val, int64_t *limit) {
  *limit = lumen_cli_parse_size(val);
  if (*limit > 0) return -1;
  lumen_cli_error(cmd, "--memory-limit '%s': expected a size in bytes above 0 with an optional K, M, G or T "
                  "suffix (e.g. 512M, 4G)", val);
  return LUMEN_EXIT_USAGE;
}

/* One command-line option at argv[*i] into cfg; -1 when it was taken, else the exit status. */
static int pipe_option(const char *cmd, int argc, char **argv, int *i, lumen_ctx *ctx, lumen_pipe_config *cfg,
                       int *verbose, int64_t *memory_limit) {
  char name[64];
  const char *val = split_option(argv[*i], name, sizeof name);
  if (!strcmp(name, "--config")) { if (!val) ++*i; return -1; }  /* read before, in lumen_cli_pipe_args */
  int sw = pipe_switch(cmd, name, val, cfg, verbose);
  if (sw) return sw > 0 ? -1 : LUMEN_EXIT_USAGE;
  if (!strcmp(name, "--vfa") || !strcmp(name, "--in")) return pipe_files(cmd, ctx, cfg, name, val, argc, argv, i);
  if (!val && *i + 1 < argc) val = argv[*i + 1];
  const char *key = pipe_key(cmd, name, val);
  if (!key) {
    lumen_cli_error(cmd, "unknown option '%s' (see 'lumen %s --help')", argv[*i], cmd);
    return LUMEN_EXIT_USAGE;
  }
  if (!val) {
    const lumen_cli_option *o = lumen_cli_option_find(name, strcmp(cmd, "t1") ? LUMEN_CLI_DCE : LUMEN_CLI_T1);
    lumen_cli_error(cmd, "%s needs a %s (see 'lumen %s --help')", name, o && o->value ? o->value : "value", cmd);
    return LUMEN_EXIT_USAGE;
  }
  if (!strchr(argv[*i], '=')) ++*i;
  if (!strcmp(key, "memory-limit")) return pipe_memory_limit(cmd, val, memory_limit);
  if (!strcmp(key, "fix")) {
    lumen_cli_error(cmd, "%s '%s': lumen %s cannot hold a parameter fixed (its pipeline configuration has no fixed "
                    "parameters; 'lumen fit --fix' can): narrow it instead with --bounds NAME=LO:HI", name, val, cmd);
    return LUMEN_EXIT_USAGE;
  }
  if (lumen_pipe_config_set(ctx, cfg, key, val, name, NULL) != LUMEN_OK) {
    lumen_cli_error(cmd, "%s", lumen_ctx_last_error(ctx));
    return LUMEN_EXIT_USAGE;
  }
  return -1;
}

/* Parses argv into cfg (config file first, the command line overrides it), then checks the
   inputs against --memory-limit (lumen_cli_pipe_check_memory). Returns -1 on success, else an
   exit status; *help = 1 when --help was asked for. */
int lumen_cli_pipe_args(const char *cmd, int argc, char **argv, lumen_ctx *ctx, lumen_pipe_config *cfg, int *help,
                        int *verbose) {
  *help = 0;
  int64_t memory_limit = 0;
  for (int i = 1; i < argc; ++i)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { *help = 1; return LUMEN_EXIT_OK; }
  for (int i = 1; i < argc; ++i) {
    char name[64];
    const char *val = split_option(argv[i], name, sizeof name);
    if (strcmp(name, "--config")) continue;
    if (!val && i + 1 < argc) val = argv[++i];
    if (!val) { lumen_cli_error(cmd, "--config needs a FILE"); return LUMEN_EXIT_USAGE; }
    if (lumen_pipe_config_read(ctx, cfg, val) != LUMEN_OK) {
      lumen_cli_error(cmd, "%s", lumen_ctx_last_error(ctx));
      return LUMEN_EXIT_USAGE;
    }
  }
  for (int i = 1; i < argc; ++i) {
    int rc = pipe_option(cmd, argc, argv, &i, ctx, cfg, verbose, &memory_limit);
    if (rc >= 0) return rc;
  }
  /* every option and config key (implausible values such as a TR in ms, --prefix, --models,
     --aif, --backend, bounds against starts...) is checked before any file is read or written:
     a bad value is a usage error; a backend this machine lacks (not built, no device) is not */
  lumen_status cst = lumen_pipe_config_check(ctx, cfg, cmd);
  if (cst != LUMEN_OK) {
    lumen_cli_error(cmd, "%s", lumen_ctx_last_error(ctx));
    return cst == LUMEN_ERR_INVALID_ARGUMENT ? LUMEN_EXIT_USAGE : LUMEN_EXIT_FAILURE;
  }
  /* the run log records the command line as typed, "lumen" first */
  const char **line = malloc(sizeof *line * ((size_t)argc + 1));
  if (!line) { lumen_cli_error(cmd, "out of memory"); return LUMEN_EXIT_FAILURE; }
  line[0] = "lumen";
  for (int i = 0; i < argc; ++i) line[i + 1] = argv[i];
  lumen_status cl = lumen_pipe_config_set_command_line(ctx, cfg, argc + 1, line);
  free(line);
  if (cl != LUMEN_OK) {
    lumen_cli_error(cmd, "%s", lumen_ctx_last_error(ctx));
    return LUMEN_EXIT_FAILURE;
  }
  return lumen_cli_pipe_check_memory(ctx, cmd, cfg, memory_limit);
}

static progress_state g_progress;

void lumen_cli_pipe_progress(lumen_ctx *ctx, int quiet) {
  if (quiet) return;
  memset(&g_progress, 0, sizeof g_progress);
  g_progress.tty = isatty(2);
  g_progress.last = -1;
  g_progress.t0 = now_s();
  snprintf(g_progress.label, sizeof g_progress.label, "working");
  lumen_ctx_set_progress(ctx, progress_cb, &g_progress);
}

int lumen_cli_pipe_run(lumen_ctx *ctx, const char *cmd, const lumen_pipe_config *cfg, lumen_cli_pipeline_fn run) {
  /* --threads for every pipeline (lumen_pipeline_t1 does not set it itself) */
  if (cfg->threads > 0 && lumen_ctx_set_threads(ctx, cfg->threads) != LUMEN_OK) {
    lumen_cli_error(cmd, "--threads %d: %s", cfg->threads, lumen_ctx_last_error(ctx));
    return LUMEN_EXIT_USAGE;
  }
  lumen_cli_pipe_progress(ctx, cfg->quiet);
  lumen_pipe_summary sum;
  if (run(ctx, cfg, &sum) != LUMEN_OK) {
    lumen_cli_error(cmd, "%s", lumen_ctx_last_error(ctx));
    return LUMEN_EXIT_FAILURE;
  }
  if (!cfg->quiet) lumen_cli_pipe_print_summary(cmd, &sum);
  if (sum.unreliable && !cfg->allow_failures) {
    lumen_cli_error(cmd, "results unreliable: %s; the maps and the run log (results \"unreliable\") are written, "
                    "exit status %d; give --allow-failures to accept them with status 0",
                    sum.unreliable_why, LUMEN_EXIT_UNRELIABLE);
    return LUMEN_EXIT_UNRELIABLE;
  }
  return LUMEN_EXIT_OK;
}

int lumen_cli_pipe_main(const lumen_cli_pipe_command *command, int argc, char **argv) {
  const char *cmd = command->cmd;
  lumen_pipe_config cfg;
  lumen_pipe_config_init(&cfg);
  int verbose = 0, helpf = 0;
  lumen_ctx *ctx = lumen_cli_context(cmd, 0);
  if (!ctx) return LUMEN_EXIT_FAILURE;
  lumen_cli_pipe_log(ctx, cmd, 0, 0);
  int rc = lumen_cli_pipe_args(cmd, argc, argv, ctx, &cfg, &helpf, &verbose);
  if (helpf) {
    command->help(stdout);
    rc = lumen_cli_finish_stdout(cmd);
  }
  if (rc < 0) { /* parsed, no --help: run */
    lumen_cli_pipe_log(ctx, cmd, verbose, cfg.quiet);
    if (!command->has_inputs(&cfg)) {
      lumen_cli_error(cmd, "%s", command->missing);
      rc = LUMEN_EXIT_USAGE;
    } else {
      rc = lumen_cli_pipe_run(ctx, cmd, &cfg, command->run);
    }
  }
  lumen_pipe_config_clear(&cfg);
  lumen_ctx_destroy(ctx);
  return rc;
}

void lumen_cli_pipe_print_summary(const char *cmd, const lumen_pipe_summary *s) {
  if (s->aif_method[0])
    fprintf(stderr, "lumen %s: AIF used: %s%s\n", cmd, s->aif_method,
            s->aif_fallback ? " (FALLBACK: --aif auto found no usable vessel; see the warning above)" : "");
  for (int m = 0; m < s->n_models; ++m) {
    const lumen_pipe_model_summary *ms = &s->models[m];
    fprintf(stderr, "lumen %s: %s: backend requested %s, selected %s, used %s (%s); %lld voxels, %lld converged, "
                    "%lld at a bound, %lld failed, %.0f fits/s\n",
            cmd, lumen_model_name(ms->model), ms->backend_requested, ms->backend_selected, ms->backend_used,
            ms->backend_reason, (long long)ms->fitted, (long long)ms->converged, (long long)ms->at_bound,
            (long long)ms->failed, ms->fits_per_s);
  }
  fprintf(stderr, "lumen %s: %d files written; run log %s%s%s; %.2f s\n", cmd, s->n_outputs, s->runlog,
          s->report[0] ? ", report " : "", s->report, s->seconds_total);
  const char *slash = strrchr(s->runlog, '/');
  if (!strcmp(cmd, "dce") && slash) /* the viewer of this run's voxels (docs/VIEW.md) */
    fprintf(stderr, "lumen %s: any voxel's curves and fits in the browser: lumen view %.*s\n", cmd,
            (int)(slash - s->runlog), s->runlog);
}
#endif
