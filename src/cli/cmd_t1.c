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
    "                [--flip-angles DEG,...] [--inversion-times S,...] [--times S,...] [--tr S]\n"
    "                [--backend B] [--threads N] [--memory-limit SIZE] [--overwrite] [-q]\n\n"
    "T1 maps. Inputs: one 3-D volume per flip angle / time, or one 4-D series. Flip angles from each\n"
    "input's sidecar (FlipAngle) or --flip-angles; TR from the sidecar or --tr; inversion times from\n"
    "InversionTime or --inversion-times; saturation-recovery times from --times (seconds).\n"
    "Outputs in DIR: {prefix}_T1map.nii.gz (s), {prefix}_M0map.nii.gz, {prefix}_R1map.nii.gz (1/s),\n"
    "{prefix}_model-METHOD_param-{r2,sse,state}.nii.gz, {prefix}_runlog.json/.txt, report.html.\n\n"
    "options:\n"
    "  --method M            vfa (nonlinear SPGR, default), vfa-linear (DESPOT1), vfa-2pt (first and\n"
    "                        last angle), ir (magnitude inversion recovery), sr (saturation recovery)\n"
    "  --in FILE...          the inputs (also --vfa): NIfTI, or DICOM folders (FlipAngle, TR from\n"
    "                        the headers; docs/DICOM.md)\n"
    "  --times S,...         sr: recovery times in seconds (<= 30); ir: the same as --inversion-times\n"
    "  --b1 FILE             flip-angle scale map (fraction or percent, detected)\n"
    "  --mask FILE           voxels to fit (> 0.5); default all\n"
    "  --out DIR             output folder (created); one run at a time writes into it\n"
    "  --prefix P            a file-name part (no '/', not starting with '.'); default BIDS or 'lumen'\n"
    "  --config FILE         key = value lines (the option names)\n"
    "  --allow-failures      exit 0 even when more than half the voxels fail (default: exit 3)\n"
    "  --no-report           no report.html\n\n"
    "Every option is checked before anything is read or written, also a value in a likely wrong\n"
    "unit (e.g. --tr 5: in ms?).\n\n");
  lumen_cli_help_shared(out, LUMEN_CLI_T1);
}

static int has_inputs(const lumen_pipe_config *cfg) { return cfg->n_vfa >= 1 && cfg->out; }

int lumen_cmd_t1(int argc, char **argv) {
  static const lumen_cli_pipe_command t1 = {
      "t1", help, has_inputs, "--in FILE... and --out DIR are required (see 'lumen t1 --help')", lumen_pipeline_t1};
  return lumen_cli_pipe_main(&t1, argc, argv);
}
#else
LUMEN_CLI_NO_IO_COMMAND(lumen_cmd_t1, "t1")
#endif
