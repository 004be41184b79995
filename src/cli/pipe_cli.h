/* Option parsing, progress display and the run-and-report step shared by `lumen dce` and
   `lumen t1` (implemented in cmd_dce.c). Only for builds with NIfTI I/O. */
#ifndef LUMEN_CLI_PIPE_CLI_H
#define LUMEN_CLI_PIPE_CLI_H

#include "cli/cli.h"
#include "lumen/pipeline.h"

int lumen_cli_pipe_args(const char *cmd, int argc, char **argv, lumen_ctx *ctx, lumen_pipe_config *cfg, int *help,
                        int *verbose);
void lumen_cli_pipe_progress(lumen_ctx *ctx, int quiet);
void lumen_cli_pipe_log(lumen_ctx *ctx, const char *cmd, int verbose, int quiet);
void lumen_cli_pipe_print_summary(const char *cmd, const lumen_pipe_summary *s);

typedef lumen_status (*lumen_cli_pipeline_fn)(lumen_ctx *ctx, const lumen_pipe_config *cfg,
                                              lumen_pipe_summary *summary);
/* Shows progress, runs the pipeline, prints the error or the summary; returns the exit status. */
int lumen_cli_pipe_run(lumen_ctx *ctx, const char *cmd, const lumen_pipe_config *cfg, lumen_cli_pipeline_fn run);

#endif
