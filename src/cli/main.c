/* lumen: command-line entry point; dispatches to one function per command. */
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

static const lumen_cli_command commands[] = {
  {"backends", lumen_cmd_backends, "show what this build and machine can do (PASS/FAIL/SKIP per part)"},
  {"demo", lumen_cmd_demo, "run lumen dce on a built-in phantom and compare with the truth (demo curves: curve fits only)"},
  {"fit", lumen_cmd_fit, "fit a model to curves given as text (times, AIF, curves) and write a CSV"},
  {"dce", lumen_cmd_dce, "DCE-MRI series to parameter maps, run log and report (stages A, B, D)"},
  {"t1", lumen_cmd_t1, "T1 maps from VFA, inversion- or saturation-recovery series"},
  {"filter", lumen_cmd_filter, "filter PNG/NIfTI images: Gaussian, DoG, median, morphology, thresholds..."},
  {"segment", lumen_cmd_segment, "segment PNG/NIfTI images: FEBDS calcifications, clustering, breast mask..."},
  {"batch", lumen_cmd_batch, "run dce, t1, filter or segment over a list or a BIDS dataset (derivatives)"},
  {"convert", lumen_cmd_convert, "DICOM files or folders to NIfTI + BIDS JSON, one per series (as lumen reads them)"},
  {"merge", lumen_cmd_merge, "assemble the parts of 'lumen dce --shard K/N' into the outputs of one run"},
  {"view", lumen_cmd_view, "a finished dce output folder in the browser: any voxel's curves and fits, ROIs"},
};
static const int command_count = (int)(sizeof commands / sizeof commands[0]);

static void usage(FILE *out) {
  fprintf(out,
          "usage: lumen <command> [options]\n"
          "       lumen --help | --version\n\n"
          "lumen fits DCE-MRI pharmacokinetic models and T1 maps, and filters and segments\n"
          "images, on a CUDA GPU, on all CPU cores, or on one core.\n\n"
          "commands:\n");
  for (int i = 0; i < command_count; i++) fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out,
          "\n'lumen <command> --help' describes a command's options.\n"
          "Start with 'lumen backends' after installing, to check the build and the machine.\n");
}

/* OpenMP's idle threads sleep rather than spin (issue 43 item 1): with other work on the cores
   (a laptop, a shared server, `lumen batch --jobs`, a CI runner) libgomp's default spinning made 2
   threads slower than 1 and cost 1.4-2.7x the CPU per fit. libgomp reads OMP_WAIT_POLICY once, when
   it is loaded, before main runs; a function in the program's .preinit_array runs before any
   library's initialisers. A user's own OMP_WAIT_POLICY wins (setenv does not overwrite). */
static void passive_openmp(int argc, char **argv, char **envp) {
  (void)argc;
  (void)argv;
  (void)envp;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
}
__attribute__((section(".preinit_array"), used)) static void (*const lumen_preinit)(int, char **, char **) =
    passive_openmp;

int main(int argc, char **argv) {
  /* a file-size limit (ulimit -f) makes the write that crosses it fail with EFBIG, which every
     writer reports naming the file and cleans up after, instead of killing lumen with SIGXFSZ and
     leaving its temporaries behind */
  signal(SIGXFSZ, SIG_IGN);
  if (argc < 2) {
    usage(stderr);
    return LUMEN_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    usage(stdout);
    return LUMEN_EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("%s\n", lumen_build_info());
    return LUMEN_EXIT_OK;
  }
  for (int i = 0; i < command_count; i++)
    if (strcmp(cmd, commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
  /* hidden: the pipeline demo (lumen_pipeline_demo), until `demo` switches to it */
  if (strcmp(cmd, "dce-demo") == 0) return lumen_cmd_dce_demo(argc - 1, argv + 1);
  fprintf(stderr, "lumen: unknown command '%s'\n\n", cmd);
  usage(stderr);
  return LUMEN_EXIT_USAGE;
}
