/* lumen dce, lumen dce-demo (the pipeline's demo, hidden from the command list), and the option
   parsing / progress display shared with lumen t1 (cmd_t1.c). The work is in src/pipeline. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO
#include "cli/pipe_cli.h"
#include "lumen/io.h"
#endif

#if LUMEN_HAVE_IO
typedef struct progress_state {
  int tty;
  char label[64];
  int last;
} progress_state;

static int progress_cb(void *user, double fraction, const char *stage) {
  progress_state *p = user;
  if (strcmp(stage, "fit") != 0) {
    if (strcmp(stage, p->label) != 0) { snprintf(p->label, sizeof p->label, "%s", stage); p->last = -1; }
  }
  int pct = (int)(fraction * 100 + 0.5);
  if (p->tty) {
    int w = 40, k = (int)(fraction * w + 0.5);
    fprintf(stderr, "\r%-12s [", p->label);
    for (int i = 0; i < w; ++i) fputc(i < k ? '#' : '.', stderr);
    fprintf(stderr, "] %3d%%", pct);
    if (pct >= 100) fputc('\n', stderr);
    fflush(stderr);
  } else if (pct / 10 != p->last / 10 || (pct == 100 && p->last != 100)) {
    fprintf(stderr, "lumen: %s %d%%\n", p->label, pct);
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

static const char *const value_opts[] = {
  "dce", "out", "t1map", "mask", "b1", "aif", "prefix", "models", "backend", "select", "method",
  "input-type", "flip-angle", "tr", "dt", "relaxivity", "hematocrit", "blood-t1", "t1", "baseline",
  "baseline-start", "max-invalid-fraction", "injection-time", "tolerance", "max-iterations", "threads",
  "compress-level", "chunk", "flip-angles", "times", "bounds", "start", "conv", "precision", "fxr-fw",
  "bounds-preset", NULL};

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
  int ok = nifti_within(ctx, cmd, "DCE series", cfg->dce, limit) &&
           nifti_within(ctx, cmd, "T1 map", cfg->t1map, limit) && nifti_within(ctx, cmd, "mask", cfg->mask, limit) &&
           nifti_within(ctx, cmd, "B1 map", cfg->b1, limit);
  for (int i = 0; ok && i < cfg->n_vfa; ++i)
    ok = nifti_within(ctx, cmd, cfg->dce ? "VFA series" : "input", cfg->vfa[i], limit);
  const char *aif = cfg->aif ? cfg->aif : "";
  if (ok && !strncmp(aif, "roi:", 4)) ok = nifti_within(ctx, cmd, "AIF ROI", aif + 4, limit);
  if (ok && !strncmp(aif, "fitted:", 7)) ok = nifti_within(ctx, cmd, "AIF ROI", aif + 7, limit);
  if (ok && !strncmp(aif, "file:", 5)) ok = table_within(cmd, "AIF file", aif + 5, limit);
  return ok ? -1 : LUMEN_EXIT_FAILURE;
}

/* Parses argv into cfg (config file first, the command line overrides it), then checks the
   inputs against --memory-limit (lumen_cli_pipe_check_memory). Returns -1 on success, else an
   exit status; *help = 1 when --help was asked for. */
int lumen_cli_pipe_args(const char *cmd, int argc, char **argv, lumen_ctx *ctx, lumen_pipe_config *cfg, int *help,
                        int *verbose) {
  *help = 0;
  int64_t memory_limit = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--config")) {
      if (i + 1 >= argc) { lumen_cli_error(cmd, "--config needs a FILE"); return LUMEN_EXIT_USAGE; }
      if (lumen_pipe_config_read(ctx, cfg, argv[i + 1]) != LUMEN_OK) {
        lumen_cli_error(cmd, "%s", lumen_ctx_last_error(ctx));
        return LUMEN_EXIT_USAGE;
      }
    }
  }
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { *help = 1; return LUMEN_EXIT_OK; }
    if (!strcmp(a, "--config")) { ++i; continue; }
    if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) { cfg->quiet = 1; continue; }
    if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) { *verbose = 1; continue; }
    if (!strcmp(a, "--overwrite")) { cfg->overwrite = 1; continue; }
    if (!strcmp(a, "--resume")) { cfg->resume = 1; cfg->overwrite = 1; continue; }
    if (!strcmp(a, "--force-cpu")) { cfg->force_cpu = 1; continue; }
    if (!strcmp(a, "--allow-failures")) { cfg->allow_failures = 1; continue; }
    if (!strcmp(a, "--fit-delay")) { cfg->fit_delay = 1; continue; }
    if (!strcmp(a, "--save-conc")) { cfg->save_conc = 1; continue; }
    if (!strcmp(a, "--no-ci")) { cfg->write_ci = 0; continue; }
    if (!strcmp(a, "--no-report")) { cfg->report = 0; continue; }
    if (!strcmp(a, "--memory-limit")) {
      if (i + 1 >= argc) { lumen_cli_error(cmd, "--memory-limit needs a SIZE (e.g. 512M, 4G)"); return LUMEN_EXIT_USAGE; }
      memory_limit = lumen_cli_parse_size(argv[++i]);
      if (memory_limit <= 0) {
        lumen_cli_error(cmd, "--memory-limit '%s': expected a size in bytes above 0 with an optional K, M, G or T "
                        "suffix (e.g. 512M, 4G)", argv[i]);
        return LUMEN_EXIT_USAGE;
      }
      continue;
    }
    if (!strcmp(a, "--vfa") || !strcmp(a, "--in")) {
      int n = 0;
      while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
        if (lumen_pipe_config_set(ctx, cfg, "vfa", argv[++i], a, NULL) != LUMEN_OK) {
          lumen_cli_error(cmd, "%s", lumen_ctx_last_error(ctx));
          return LUMEN_EXIT_USAGE;
        }
        ++n;
      }
      if (!n) { lumen_cli_error(cmd, "%s needs at least one FILE", a); return LUMEN_EXIT_USAGE; }
      continue;
    }
    int known = 0;
    if (!strncmp(a, "--", 2))
      for (int k = 0; value_opts[k]; ++k)
        if (!strcmp(a + 2, value_opts[k])) known = 1;
    if (!known) {
      lumen_cli_error(cmd, "unknown option '%s' (see 'lumen %s --help')", a, cmd);
      return LUMEN_EXIT_USAGE;
    }
    if (i + 1 >= argc) { lumen_cli_error(cmd, "%s needs a value", a); return LUMEN_EXIT_USAGE; }
    if (lumen_pipe_config_set(ctx, cfg, a + 2, argv[i + 1], a, NULL) != LUMEN_OK) {
      lumen_cli_error(cmd, "%s", lumen_ctx_last_error(ctx));
      return LUMEN_EXIT_USAGE;
    }
    ++i;
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
  snprintf(g_progress.label, sizeof g_progress.label, "working");
  lumen_ctx_set_progress(ctx, progress_cb, &g_progress);
}

int lumen_cli_pipe_run(lumen_ctx *ctx, const char *cmd, const lumen_pipe_config *cfg, lumen_cli_pipeline_fn run) {
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
}

static void help(FILE *out) {
  fprintf(out,
    "usage: lumen dce --dce FILE --out DIR [--t1map FILE | --vfa FILE... | --t1 S] [--mask FILE]\n"
    "                 [--aif NAME | --aif roi:FILE | --aif fitted:FILE | --aif file:FILE]\n"
    "                 [--models tofts,etofts,patlak,2cum,2cxm,fxr,auc] [--relaxivity R] [--hematocrit H]\n"
    "                 [--blood-t1 S] [--dt SECONDS] [--flip-angle DEG] [--tr S] [--baseline N]\n"
    "                 [--backend B] [--config FILE] [--memory-limit SIZE] [--overwrite] [-q]\n\n"
    "DCE-MRI from a 4-D NIfTI series to parameter maps, in ROCKETSHIP's stages:\n"
    "  A  signal -> concentration (SPGR; T1 map in s or ms, detected; baseline given or detected)\n"
    "  B  AIF: population with the bolus arrival from the data, ROI mean, fitted biexponential,\n"
    "     auto (detected vessels, else Parker), or a file; written as {prefix}_aif.tsv and plotted\n"
    "  D  fitting of each model on the masked voxels; maps of every parameter, derived values, sse,\n"
    "     r2, aic, 95%% CI and state; optional per-voxel model selection by AIC\n"
    "then {prefix}_runlog.json/.txt and report.html in DIR. docs/PIPELINES.md has the details.\n\n"
    "inputs:\n"
    "  --dce FILE            4-D series (signal, or concentration with --input-type concentration)\n"
    "  --t1map FILE          pre-contrast T1 map (s or ms); or --vfa FILE... (T1 fitted on the fly;\n"
    "                        flip angles from sidecars or --flip-angles), or --t1 S (one value)\n"
    "  --mask FILE           voxels to fit (> 0.5); default all voxels\n"
    "  --b1 FILE             flip-angle scale map (fraction or percent, detected)\n"
    "  --input-type T        signal (default) or concentration (mM; stage A skipped)\n"
    "acquisition (default: the series' JSON sidecar):\n"
    "  --flip-angle DEG, --tr S, --dt S (frame interval; else FrameTimesStart/AcquisitionTime list,\n"
    "                        else pixdim[4] unless it equals the TR as dcm2niix writes it)\n"
    "stage A:\n"
    "  --relaxivity R        r1 in 1/(mM s) (required unless config or sidecar ContrastAgentRelaxivity)\n"
    "  --hematocrit H        default 0.45;  --blood-t1 S  default 1.44 (ROI/auto AIF conversion)\n"
    "  --baseline N          baseline = frames [1, N) (N >= 3; [0, N) below); default: detected\n"
    "  --baseline-start K    first baseline frame;  --max-invalid-fraction F  default 0.1\n"
    "stage B:\n"
    "  --aif SPEC            auto (default), parker, georgiou, weinmann, fritz-hansen, roi:FILE,\n"
    "                        fitted:FILE, file:FILE (time s, plasma mM; or one value per frame)\n"
    "  --injection-time S    bolus arrival for population AIFs (default: detected)\n"
    "stage D:\n"
    "  --models LIST         default tofts;  --select aic  per-voxel model choice\n"
    "  --backend B           auto (default), accelerated, standard, cuda, cpu, cpu_single, or a\n"
    "                        ROCKETSHIP name;  --force-cpu  (auto -> standard)\n"
    "  --tolerance T (1e-6), --max-iterations N (200), --bounds NAME=LO:HI,..., --start NAME=V,...\n"
    "  --bounds-preset P     default bounds: physical (default: Ktrans 0..5 /min, ve 1e-4..1, vp 0..1)\n"
    "                        or rocketship (Ktrans 1e-7..2, ve 0.02..1, vp 0.001..1; pins ve < 0.02)\n"
    "  --allow-failures      exit 0 even when more than half the voxels fail (default: exit 3)\n"
    "  --conv exact|trapezoid, --precision float32|float64, --fit-delay, --no-ci\n"
    "run:\n"
    "  --out DIR             output folder (created); one run at a time writes into it (a second\n"
    "                        run refuses, naming the first one's PID; lock file DIR/.lumen.lock)\n"
    "  --prefix P            start of every output name (default BIDS sub-/ses- or 'lumen'); a\n"
    "                        file-name part: no '/', not starting with '.', at most 150 characters\n"
    "  --config FILE         key = value lines (the option names; ROCKETSHIP dce_preferences.txt keys)\n"
    "  --overwrite           replace existing outputs (refused otherwise); the earlier run log is\n"
    "                        removed before the first file is replaced and rewritten at the end\n"
    "  --save-conc, --no-report, --threads N, --compress-level L (default 1)\n"
    "  --resume              continue a killed run in the same --out from its last completed\n"
    "                        stage D chunk (checkpoints .PREFIX_model-M.ckpt; implies --overwrite)\n"
    "  --chunk N             voxels per stage D checkpoint chunk (default 65536)\n"
    "  --memory-limit SIZE   refuse, before reading, any input whose voxel buffer needs more than\n"
    "                        SIZE bytes (e.g. 512M, 4G; default min(16G, physical memory))\n"
    "  --shard K/N           fit only the K-th of N voxel ranges and write a part for 'lumen merge'\n"
    "                        (under mpirun -np N the ranks split the voxels; rank 0 writes)\n"
    "  -q                    no progress or summary;  -v  more messages\n\n"
    "Every option (and config key) is checked before anything is read or written: a bad value\n"
    "(--backend, --models, --aif, --prefix, bounds that exclude a start...) is a usage error.\n"
    "Values in a likely wrong unit are refused before anything is written: --tr outside\n"
    "0.0005..0.1 s, --flip-angle outside 1..90 deg, --dt outside 0.01..600 s, --relaxivity outside\n"
    "1..50 /mM/s, --t1/--blood-t1 outside 0.05..10 s (sidecar and header values too).\n"
    "exit status: 0 success, 1 input or data error, 2 usage error, 3 results unreliable (more than\n"
    "half the fitted voxels failed; maps and run log are written).\n");
}

int lumen_cmd_dce(int argc, char **argv) {
  const char *cmd = "dce";
  int dist_rc = 0;
  if (lumen_cli_dce_dist(argc, argv, &dist_rc)) return dist_rc;  /* --shard K/N, mpirun (cmd_merge.c) */
  lumen_pipe_config cfg;
  lumen_pipe_config_init(&cfg);
  int verbose = 0, helpf = 0;
  lumen_ctx *ctx = lumen_cli_context(cmd, 0);
  if (!ctx) return LUMEN_EXIT_FAILURE;
  lumen_cli_pipe_log(ctx, cmd, 0, 0);
  int rc = lumen_cli_pipe_args(cmd, argc, argv, ctx, &cfg, &helpf, &verbose);
  if (helpf) { help(stdout); rc = LUMEN_EXIT_OK; }
  if (rc < 0) {
    lumen_cli_pipe_log(ctx, cmd, verbose, cfg.quiet);
    if (!cfg.dce || !cfg.out) {
      lumen_cli_error(cmd, "--dce FILE and --out DIR are required (see 'lumen dce --help')");
      rc = LUMEN_EXIT_USAGE;
    } else {
      rc = lumen_cli_pipe_run(ctx, cmd, &cfg, lumen_pipeline_dce);
    }
  }
  lumen_pipe_config_clear(&cfg);
  lumen_ctx_destroy(ctx);
  return rc;
}

int lumen_cmd_dce_demo(int argc, char **argv) {
  const char *cmd = "demo", *dir = "./lumen-demo", *backend = NULL;
  int quiet = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--out") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "--backend") && i + 1 < argc) backend = argv[++i];
    else if (!strcmp(argv[i], "-q")) quiet = 1;
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      printf("usage: lumen demo [--out DIR] [--backend B] [-q]\n\n"
             "       lumen demo curves [--replicates N] [--backend B]   (curve fitting only, no files)\n\n"
             "Builds a synthetic DCE phantom in memory (patches of known Ktrans, ve, vp; Parker AIF;\n"
             "noise), writes it as NIfTI with a T1 map and mask into DIR (default ./lumen-demo), runs\n"
             "'lumen dce' on it end to end (tofts, etofts, AIC selection, automatic AIF) and prints the\n"
             "truth beside the estimates and where the report is (DIR/report.html). Replaces DIR's\n"
             "previous demo files.\n");
      return LUMEN_EXIT_OK;
    } else {
      lumen_cli_error(cmd, "unknown option '%s' (see 'lumen demo --help')", argv[i]);
      return LUMEN_EXIT_USAGE;
    }
  }
  lumen_ctx *ctx = lumen_cli_context(cmd, 0);
  if (!ctx) return LUMEN_EXIT_FAILURE;
  lumen_cli_pipe_log(ctx, cmd, 0, quiet);
  lumen_pipe_summary sum;
  int rc = LUMEN_EXIT_OK;
  if (lumen_pipeline_demo(ctx, dir, 1, backend, stdout, &sum) != LUMEN_OK) {
    lumen_cli_error(cmd, "%s", lumen_ctx_last_error(ctx));
    rc = LUMEN_EXIT_FAILURE;
  }
  lumen_ctx_destroy(ctx);
  return rc;
}
#else
int lumen_cmd_dce(int argc, char **argv) {
  (void)argc; (void)argv;
  lumen_cli_error("dce", "this build has no NIfTI/JSON I/O (nifti_clib, cJSON): rebuild with them");
  return LUMEN_EXIT_FAILURE;
}
int lumen_cmd_dce_demo(int argc, char **argv) {
  (void)argc; (void)argv;
  lumen_cli_error("demo", "this build has no NIfTI/JSON I/O (nifti_clib, cJSON): rebuild with them");
  return LUMEN_EXIT_FAILURE;
}
#endif
