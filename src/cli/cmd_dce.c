/* lumen dce and lumen dce-demo (the pipeline's demo, hidden from the command list). The option
   parsing and progress display shared with lumen t1 are in pipe_cli.c; the work is in src/pipeline. */
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
    "  --dce FILE            4-D series (signal, or concentration with --input-type concentration):\n"
    "                        NIfTI, or a DICOM folder as the scanner exported it (classic, mosaic or\n"
    "                        enhanced files; FlipAngle, RepetitionTime, frame order and times from the\n"
    "                        headers, docs/DICOM.md; 'lumen convert FOLDER --list' shows its series)\n"
    "  --series UID|NUMBER   the series (SeriesInstanceUID or SeriesNumber) of a DICOM folder of several\n"
    "  --t1map FILE          pre-contrast T1 map (s or ms); or --vfa FILE... (T1 fitted on the fly;\n"
    "                        flip angles from sidecars or --flip-angles LIST), or --t1 S (one value)\n"
    "  --mask FILE           voxels to fit (> 0.5); default all voxels\n"
    "  --b1 FILE             flip-angle scale map (fraction or percent, detected)\n"
    "  --input-type T        signal (default) or concentration (mM; stage A skipped)\n"
    "acquisition (default: the series' JSON sidecar; --flip-angle(s), --tr below):\n"
    "  --dt S                frame interval (default: FrameTimesStart/AcquisitionTime list, else\n"
    "                        pixdim[4] unless it equals the TR as dcm2niix writes it)\n"
    "  --flip-angle DEG      the series' flip angle (one value; --flip-angles is the same option)\n"
    "stage A:\n"
    "  --relaxivity R        r1 in 1/(mM s) (required unless config or sidecar ContrastAgentRelaxivity)\n"
    "  --blood-t1 S          default 1.44 (ROI/auto AIF conversion); --hematocrit below\n"
    "  --baseline N          baseline = frames [1, N) (N >= 3; [0, N) below); default: detected\n"
    "  --baseline-start K    first baseline frame;  --max-invalid-fraction F  default 0.1\n"
    "stage B:\n"
    "  --aif SPEC            auto (default), parker, georgiou, weinmann, fritz-hansen, roi:FILE,\n"
    "                        fitted:FILE, file:FILE (time s, plasma mM; or one value per frame)\n"
    "                        (the population AIF's arrival: --aif-delay below)\n"
    "stage D (and the fitting options below):\n"
    "  --models LIST         default tofts;  --select aic  per-voxel model choice\n"
    "  --allow-failures      exit 0 even when more than half the voxels fail (default: exit 3)\n"
    "  --no-ci               no confidence-interval maps\n"
    "run:\n"
    "  --out DIR             output folder (created); one run at a time writes into it (a second\n"
    "                        run refuses, naming the first one's PID; lock file DIR/.lumen.lock)\n"
    "  --prefix P            start of every output name (default BIDS sub-/ses- or 'lumen'); a\n"
    "                        file-name part: no '/', not starting with '.', at most 150 characters\n"
    "  --config FILE         key = value lines (the option names; ROCKETSHIP dce_preferences.txt keys)\n"
    "  --overwrite: the earlier run log is removed before the first file is replaced, rewritten at\n"
    "                        the end\n"
    "  --save-conc, --no-report, --compress-level L (default 1)\n"
    "  --resume              continue a killed run in the same --out from its last completed\n"
    "                        stage D chunk (checkpoints .PREFIX_model-M.ckpt; implies --overwrite)\n"
    "  --chunk N             voxels per stage D checkpoint chunk (default 65536)\n"
    "  --shard K/N           fit only the K-th of N voxel ranges and write a part for 'lumen merge'\n"
    "                        (under mpirun -np N the ranks split the voxels; rank 0 writes)\n\n"
    "Every option (and config key) is checked before anything is read or written: a bad value\n"
    "(--backend, --models, --aif, --prefix, bounds that exclude a start...) is a usage error.\n"
    "Values in a likely wrong unit are refused before anything is written: --tr outside\n"
    "0.0005..0.1 s, --flip-angle outside 1..90 deg, --dt outside 0.01..600 s, --relaxivity outside\n"
    "1..50 /mM/s, --t1/--blood-t1 outside 0.05..10 s (sidecar and header values too: exit 1).\n\n");
  lumen_cli_help_shared(out, LUMEN_CLI_DCE);
}

static int has_inputs(const lumen_pipe_config *cfg) { return cfg->dce && cfg->out; }

int lumen_cmd_dce(int argc, char **argv) {
  int dist_rc = 0;
  if (lumen_cli_dce_dist(argc, argv, &dist_rc)) return dist_rc;  /* --shard K/N, mpirun (cmd_merge.c) */
  static const lumen_cli_pipe_command dce = {
      "dce", help, has_inputs, "--dce FILE and --out DIR are required (see 'lumen dce --help')", lumen_pipeline_dce};
  return lumen_cli_pipe_main(&dce, argc, argv);
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
      lumen_cli_help_exit_status(stdout);
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
LUMEN_CLI_NO_IO_COMMAND(lumen_cmd_dce, "dce")
LUMEN_CLI_NO_IO_COMMAND(lumen_cmd_dce_demo, "demo")
#endif
