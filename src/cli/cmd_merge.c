/* lumen merge (assembles `lumen dce --shard K/N` parts) and the distributed `lumen dce` runs
   (--shard K/N, mpirun -np N); the work is in src/scale (src/scale/scale.h, docs/SCALE.md). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO
#include "scale/scale.h"
#include "cli/pipe_cli.h"

/* Runs the dce pipeline on argv (argv[0] = "dce") with a stage D hook. out_override replaces
   --out; quiet forces -q. Returns the exit status. */
static int run_dce_hooked(int argc, char **argv, lumen_dist_fit_fn hook, void *user, const char *out_override,
                          int quiet, int extra_overwrite, lumen_pipe_summary *sum, int print) {
  const char *cmd = "dce";
  lumen_pipe_config cfg;
  lumen_pipe_config_init(&cfg);
  int verbose = 0, helpf = 0;
  lumen_ctx *ctx = lumen_cli_context(cmd, 0);
  if (!ctx) return LUMEN_EXIT_FAILURE;
  lumen_cli_pipe_log(ctx, cmd, 0, quiet);
  int rc = lumen_cli_pipe_args(cmd, argc, argv, ctx, &cfg, &helpf, &verbose);
  if (helpf) rc = LUMEN_EXIT_USAGE;
  if (rc < 0) {
    if (out_override) { free(cfg.out); cfg.out = strdup(out_override); }
    if (quiet) cfg.quiet = 1;
    if (extra_overwrite) cfg.overwrite = 1;
    lumen_cli_pipe_log(ctx, cmd, verbose, cfg.quiet);
    if (!cfg.dce || !cfg.out) {
      lumen_cli_error(cmd, "--dce FILE and --out DIR are required (see 'lumen dce --help')");
      rc = LUMEN_EXIT_USAGE;
    } else {
      lumen_cli_pipe_progress(ctx, cfg.quiet);
      cfg.fit_executor = hook;
      cfg.fit_executor_user = user;
      lumen_status st = lumen_pipeline_dce(ctx, &cfg, sum);
      if (st != LUMEN_OK) {
        lumen_cli_error(cmd, "%s", lumen_ctx_last_error(ctx));
        rc = LUMEN_EXIT_FAILURE;
      } else {
        if (print && !cfg.quiet) lumen_cli_pipe_print_summary(cmd, sum);
        rc = LUMEN_EXIT_OK;
      }
    }
  }
  lumen_pipe_config_clear(&cfg);
  lumen_ctx_destroy(ctx);
  return rc;
}

/* lumen dce --shard K/N: fits the K-th range and saves it as a part. Returns the exit status. */
static int run_shard(int argc, char **argv, const char *shard) {
  int k = 0, n = 1;
  lumen_ctx *ctx = lumen_cli_context("dce", 0);
  if (!ctx) return LUMEN_EXIT_FAILURE;
  if (lumen_dist_shard_parse(ctx, shard, &k, &n) != LUMEN_OK) {
    lumen_cli_error("dce", "%s", lumen_ctx_last_error(ctx));
    lumen_ctx_destroy(ctx);
    return LUMEN_EXIT_USAGE;
  }
  lumen_dist_part *part = NULL;
  int nargc = 0;
  char **nargv = lumen_dist_strip_args(argc, argv, 0, &nargc);
  int rc = LUMEN_EXIT_FAILURE;
  if (nargv && lumen_dist_part_create(ctx, k, n, &part) == LUMEN_OK) {
    lumen_pipe_summary sum;
    memset(&sum, 0, sizeof sum);
    rc = run_dce_hooked(nargc, nargv, lumen_dist_part_fit, part, NULL, 0, 0, &sum, 0);
    if (rc == LUMEN_EXIT_OK) {
      char path[PATH_MAX + 300];
      lumen_dist_part_path(path, sizeof path, lumen_dist_arg_value(argc, argv, "--out"), sum.prefix, k, n);
      if (lumen_dist_part_write(ctx, part, path, argc, argv) != LUMEN_OK) {
        lumen_cli_error("dce", "%s", lumen_ctx_last_error(ctx));
        rc = LUMEN_EXIT_FAILURE;
      } else if (!lumen_dist_quiet(argc, argv)) {
        fprintf(stderr, "lumen dce: shard %d/%d written to %s (assemble with 'lumen merge --out DIR PART...')\n", k, n,
                path);
      }
    }
  }
  lumen_dist_part_free(part);
  free(nargv);
  lumen_ctx_destroy(ctx);
  return rc;
}

/* MPI: one voxel range per rank, gathered on rank 0, which alone writes into --out; the other
   ranks write into a private temporary folder that is removed. Returns 0 when this is no MPI run
   after all (one rank), else 1 with the exit status in *rc_out. */
static int run_mpi(int argc, char **argv, int *rc_out) {
  int rank = 0, size = 1;
  if (lumen_dist_mpi_init(&argc, &argv, &rank, &size) != LUMEN_OK) {
    lumen_cli_error("dce", "%s", lumen_dist_mpi_error());
    *rc_out = LUMEN_EXIT_FAILURE;
    return 1;
  }
  if (size <= 1) {
    lumen_dist_mpi_finalize();
    return 0;
  }
  char tmp[PATH_MAX];
  int rc;
  lumen_pipe_summary sum;
  memset(&sum, 0, sizeof sum);
  if (rank == 0) {
    rc = run_dce_hooked(argc, argv, lumen_dist_mpi_fit, NULL, NULL, 0, 0, &sum, 1);
  } else if (!lumen_dist_rank_folder(tmp, sizeof tmp, getenv("TMPDIR"))) {
    lumen_cli_error("dce", "rank %d: cannot make a temporary folder", rank);
    rc = LUMEN_EXIT_FAILURE;
  } else {
    rc = run_dce_hooked(argc, argv, lumen_dist_mpi_fit, NULL, tmp, 1, 1, &sum, 0);
    lumen_dist_remove_tree(tmp);
  }
  int failed = lumen_dist_mpi_allsum(rc != LUMEN_EXIT_OK);
  lumen_dist_mpi_finalize();
  *rc_out = failed ? (rc != LUMEN_EXIT_OK ? rc : LUMEN_EXIT_FAILURE) : LUMEN_EXIT_OK;
  return 1;
}

int lumen_cli_dce_dist(int argc, char **argv, int *rc_out) {
  const char *shard = NULL;
  switch (lumen_dist_dce_run_of(argc, argv, &shard)) {
  case LUMEN_DIST_DCE_SHARD:
    *rc_out = run_shard(argc, argv, shard);
    return 1;
  case LUMEN_DIST_DCE_MPI:
    return run_mpi(argc, argv, rc_out);
  default:
    return 0;
  }
}

static void help(FILE *out) {
  fprintf(out,
    "usage: lumen merge --out DIR [--overwrite] [-q] PART...\n\n"
    "Assembles the parts written by 'lumen dce ... --shard K/N' (K = 0..N-1, each into its own\n"
    "--out folder, as {prefix}_shard-K-of-N.part) into the outputs of one run: the stages before\n"
    "fitting are rerun with the options saved in the parts (from the folder they were run in), and\n"
    "stage D's results are taken from the parts, so the maps are byte-identical to one run.\n"
    "All N parts are needed, run with the same options. docs/SCALE.md has a Slurm array script.\n\n");
  lumen_cli_help_exit_status(out);
}

int lumen_cmd_merge(int argc, char **argv) {
  const char *cmd = "merge", *out = NULL;
  int overwrite = 0, quiet = 0, nparts = 0;
  const char **paths = calloc((size_t)argc + 1, sizeof *paths);
  if (!paths) return LUMEN_EXIT_FAILURE;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { help(stdout); free(paths); return LUMEN_EXIT_OK; }
    else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else if (!strcmp(argv[i], "--overwrite")) overwrite = 1;
    else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) quiet = 1;
    else if (argv[i][0] == '-' && argv[i][1]) {
      if (!strcmp(argv[i], "--out")) lumen_cli_error(cmd, "--out needs a value (see 'lumen merge --help')");
      else lumen_cli_error(cmd, "unknown option '%s' (see 'lumen merge --help')", argv[i]);
      free(paths);
      return LUMEN_EXIT_USAGE;
    } else paths[nparts++] = argv[i];
  }
  if (!out || nparts == 0) {
    lumen_cli_error(cmd, "--out DIR and at least one PART are required (see 'lumen merge --help')");
    free(paths);
    return LUMEN_EXIT_USAGE;
  }
  lumen_ctx *ctx = lumen_cli_context(cmd, 0);
  lumen_dist_part **parts = calloc((size_t)nparts, sizeof *parts);
  lumen_dist_merger *m = NULL;
  int rc = LUMEN_EXIT_FAILURE;
  lumen_status st = ctx && parts ? LUMEN_OK : LUMEN_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < nparts && st == LUMEN_OK; ++i) st = lumen_dist_part_read(ctx, paths[i], &parts[i]);
  if (st == LUMEN_OK) st = lumen_dist_merger_create(ctx, parts, nparts, &m);
  char absout[PATH_MAX + 2];
  if (st == LUMEN_OK) {
    lumen_dist_absolute_path(absout, sizeof absout, out);
    const char *pcwd = lumen_dist_part_cwd(parts[0]);
    if (chdir(pcwd) != 0) {
      lumen_cli_error(cmd, "cannot enter '%s', the folder the shards ran in (their relative paths need it)", pcwd);
      st = LUMEN_ERR_IO;
    }
  }
  if (st == LUMEN_OK) {
    int pa = lumen_dist_part_argc(parts[0]);
    char **saved = calloc((size_t)pa + 1, sizeof *saved);
    int nargc = 0;
    char **nargv = NULL;
    if (saved) {
      for (int i = 0; i < pa; ++i) saved[i] = (char *)lumen_dist_part_arg(parts[0], i);
      nargv = lumen_dist_strip_args(pa, saved, 1, &nargc);
    }
    if (nargv) {
      lumen_pipe_summary sum;
      memset(&sum, 0, sizeof sum);
      rc = run_dce_hooked(nargc, nargv, lumen_dist_merge_fit, m, absout, quiet, overwrite, &sum, 1);
    }
    free(nargv);
    free(saved);
  } else if (ctx && st != LUMEN_ERR_IO) {
    lumen_cli_error(cmd, "%s", lumen_ctx_last_error(ctx));
  }
  lumen_dist_merger_free(m);
  for (int i = 0; parts && i < nparts; ++i) lumen_dist_part_free(parts[i]);
  free(parts);
  free(paths);
  lumen_ctx_destroy(ctx);
  return rc;
}
#else
int lumen_cli_dce_dist(int argc, char **argv, int *rc_out) {
  (void)argc; (void)argv; (void)rc_out;
  return 0;
}
int lumen_cmd_merge(int argc, char **argv) {
  (void)argc; (void)argv;
  lumen_cli_error("merge", "this build has no NIfTI/JSON I/O (nifti_clib, cJSON): rebuild with them");
  return LUMEN_EXIT_FAILURE;
}
#endif
