/* Option parsing, progress display and the run-and-report step shared by `lumen dce` and
   `lumen t1` (implemented in pipe_cli.c). Only for builds with NIfTI I/O. */
#ifndef LUMEN_CLI_PIPE_CLI_H
#define LUMEN_CLI_PIPE_CLI_H

#include "cli/cli.h"
#include "lumen/pipeline.h"

int lumen_cli_pipe_args(const char *cmd, int argc, char **argv, lumen_ctx *ctx, lumen_pipe_config *cfg, int *help,
                        int *verbose);
/* With limit > 0: refuses, before anything is allocated or written, every NIfTI input of cfg
   (series, T1 map, mask, B1, VFA/t1 inputs, AIF ROI) whose voxel buffer would need more than limit
   bytes (from its header), and an AIF file larger than limit, with a message naming the file, the
   bytes it needs and the limit. Returns -1 when all fit, else the exit status (1).
   lumen_cli_pipe_args calls it with --memory-limit SIZE after parsing. */
int lumen_cli_pipe_check_memory(lumen_ctx *ctx, const char *cmd, const lumen_pipe_config *cfg, int64_t limit);
void lumen_cli_pipe_progress(lumen_ctx *ctx, int quiet);
void lumen_cli_pipe_log(lumen_ctx *ctx, const char *cmd, int verbose, int quiet);
void lumen_cli_pipe_print_summary(const char *cmd, const lumen_pipe_summary *s);

typedef lumen_status (*lumen_cli_pipeline_fn)(lumen_ctx *ctx, const lumen_pipe_config *cfg,
                                              lumen_pipe_summary *summary);
/* Shows progress, runs the pipeline, prints the error or the summary; returns the exit status. */
int lumen_cli_pipe_run(lumen_ctx *ctx, const char *cmd, const lumen_pipe_config *cfg, lumen_cli_pipeline_fn run);

/* What differs between `lumen dce` and `lumen t1`; lumen_cli_pipe_main does the rest. */
typedef struct {
  const char *cmd;                                  /* "dce" or "t1" */
  void (*help)(FILE *out);                          /* the --help text */
  int (*has_inputs)(const lumen_pipe_config *cfg);  /* 1 when the required options are given */
  const char *missing;                              /* the message when they are not */
  lumen_cli_pipeline_fn run;
} lumen_cli_pipe_command;
/* The whole command: parses argv, prints --help or runs the pipeline; returns the exit status. */
int lumen_cli_pipe_main(const lumen_cli_pipe_command *command, int argc, char **argv);

#endif
