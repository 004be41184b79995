/* lumen t1: T1 maps from VFA, inversion-recovery or saturation-recovery series (src/pipeline/t1.c). */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO
#include "cli/pipe_cli.h"

static void help(FILE *out) {
  fprintf(out,
    "usage: lumen t1 --method vfa|vfa-linear|vfa-2pt|ir|sr --in FILE... --out DIR [--b1 FILE] [--mask FILE]\n"
    "                [--flip-angles DEG,...] [--times S,...] [--tr S] [--backend B] [--memory-limit SIZE]\n"
    "                [--overwrite] [-q]\n\n"
    "T1 maps. Inputs: one 3-D volume per flip angle / time, or one 4-D series. Flip angles from each\n"
    "input's sidecar (FlipAngle) or --flip-angles; TR from the sidecar or --tr; inversion times from\n"
    "InversionTime or --times; saturation-recovery times from --times (seconds).\n"
    "Outputs in DIR: {prefix}_T1map.nii.gz (s), {prefix}_M0map.nii.gz, {prefix}_R1map.nii.gz (1/s),\n"
    "{prefix}_model-METHOD_param-{r2,sse,state}.nii.gz, {prefix}_runlog.json/.txt, report.html.\n\n"
    "options:\n"
    "  --method M      vfa (nonlinear SPGR, default), vfa-linear (DESPOT1), vfa-2pt (first and last\n"
    "                  angle), ir (magnitude inversion recovery), sr (saturation recovery)\n"
    "acquisition (default: each input's JSON sidecar):\n"
    "  --flip-angles DEG,...  one flip angle per input volume, degrees (1..90)\n"
    "  --tr S          repetition time in seconds (vfa: 0.0005..0.1; sidecar RepetitionTimeExcitation,\n"
    "                  else RepetitionTime)\n"
    "  --times S,...   ir: inversion times, sr: recovery times, seconds (<= 30)\n"
    "  --b1 FILE       flip-angle scale map (fraction or percent, detected)\n"
    "  --mask FILE     voxels to fit (> 0.5); default all\n"
    "  --backend B     as for 'lumen fit' (auto, accelerated, standard, cpu, ...); --force-cpu\n"
    "  --tolerance T, --max-iterations N, --bounds T1=LO:HI, --config FILE, --prefix P\n"
    "  --bounds-preset physical|rocketship (default physical);  --allow-failures (exit 0, not 3)\n"
    "  --memory-limit SIZE  refuse, before reading, any input whose voxel buffer needs more than SIZE\n"
    "                  bytes (e.g. 512M, 4G; default min(16G, physical memory))\n"
    "  --overwrite     replace existing outputs (the earlier run log goes first);  --no-report;\n"
    "                  -q quiet;  -v verbose\n"
    "  --prefix P: a file-name part (no '/', not starting with '.'); one run at a time per --out\n\n"
    "exit status: 0 success, 1 input or data error, 2 usage error (every option is checked before\n"
    "anything is read or written, also a value in a likely wrong unit, e.g. --tr 5), 3 results\n"
    "unreliable (more than half the voxels failed).\n");
}

int lumen_cmd_t1(int argc, char **argv) {
  const char *cmd = "t1";
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
    if (cfg.n_vfa < 1 || !cfg.out) {
      lumen_cli_error(cmd, "--in FILE... and --out DIR are required (see 'lumen t1 --help')");
      rc = LUMEN_EXIT_USAGE;
    } else {
      rc = lumen_cli_pipe_run(ctx, cmd, &cfg, lumen_pipeline_t1);
    }
  }
  lumen_pipe_config_clear(&cfg);
  lumen_ctx_destroy(ctx);
  return rc;
}
#else
int lumen_cmd_t1(int argc, char **argv) {
  (void)argc; (void)argv;
  lumen_cli_error("t1", "this build has no NIfTI/JSON I/O (nifti_clib, cJSON): rebuild with them");
  return LUMEN_EXIT_FAILURE;
}
#endif
