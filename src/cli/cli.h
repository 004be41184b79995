/* The lumen command line: one file per command; this header lists them and shared helpers. */
#ifndef LUMEN_CLI_H
#define LUMEN_CLI_H

#include <stdint.h>
#include <stdio.h>
#include "lumen/lumen.h"

typedef int (*lumen_cli_command_fn)(int argc, char **argv);

typedef struct {
  const char *name;
  lumen_cli_command_fn run;
  const char *summary;
} lumen_cli_command;

/* Commands (argv[0] is the command name). Return the process exit status. */
int lumen_cmd_backends(int argc, char **argv);
int lumen_cmd_demo(int argc, char **argv);
int lumen_cmd_fit(int argc, char **argv);
int lumen_cmd_dce(int argc, char **argv);
int lumen_cmd_dce_demo(int argc, char **argv);
int lumen_cmd_t1(int argc, char **argv);
int lumen_cmd_filter(int argc, char **argv);
int lumen_cmd_segment(int argc, char **argv);
int lumen_cmd_batch(int argc, char **argv);
int lumen_cmd_merge(int argc, char **argv);
int lumen_cmd_convert(int argc, char **argv);
int lumen_cmd_view(int argc, char **argv);
/* The options of `lumen filter ARGS` / `lumen segment ARGS` (argv[0] the command, then the op or
   algorithm and its options, no inputs needed) checked as the command would, nothing read:
   LUMEN_EXIT_OK, or LUMEN_EXIT_USAGE with the message printed. lumen batch checks its "-- OPTIONS"
   with them before any item runs. */
int lumen_cmd_filter_check(int argc, char **argv);
int lumen_cmd_segment_check(int argc, char **argv);
/* `lumen dce --shard K/N` and `mpirun -np N lumen dce` (cmd_merge.c): returns 1 and sets *rc when
   it ran the command, 0 when this is a plain run. */
int lumen_cli_dce_dist(int argc, char **argv, int *rc);

/* Exit statuses shared by every command: 0 success, 1 input or data error, 2 usage error, 3 results
   unreliable (dce/t1: more than half the fitted voxels failed; --allow-failures turns it into 0). */
enum { LUMEN_EXIT_OK = 0, LUMEN_EXIT_FAILURE = 1, LUMEN_EXIT_USAGE = 2, LUMEN_EXIT_UNRELIABLE = 3 };

/* Prints "lumen <command>: message" to stderr. */
void lumen_cli_error(const char *command, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Writes s as a JSON string literal (quotes and escapes included). */
void lumen_cli_json_string(FILE *out, const char *s);
/* A size in bytes: a number with an optional binary suffix K, M, G or T (also KiB, MB, ...):
   "512M", "4G", "1.5GiB", "65536". Returns -1 when s is not such a size or does not fit int64_t.
   Used by --memory-limit of lumen batch, dce, t1 and fit. */
int64_t lumen_cli_parse_size(const char *s);
/* Flushes standard output and checks that every write to it succeeded (a full disk, /dev/full, a
   closed pipe): returns LUMEN_EXIT_OK, or prints "writing standard output failed: REASON" and
   returns LUMEN_EXIT_FAILURE. Every command that writes results to stdout ends with it. */
int lumen_cli_finish_stdout(const char *command);

/* A command of a build without NIfTI/JSON I/O: prints that it needs them, returns LUMEN_EXIT_FAILURE. */
int lumen_cli_no_io(const char *command);
/* The entry point fn of command name in a build without I/O: it refuses in one line. */
#define LUMEN_CLI_NO_IO_COMMAND(fn, name)                                                   \
  int fn(int argc, char **argv) {                                                           \
    (void)argc;                                                                             \
    (void)argv;                                                                             \
    return lumen_cli_no_io(name);                                                           \
  }
/* 1 when an argument is --help or -h. */
int lumen_cli_asks_help(int argc, char **argv);
/* The shared vocabulary of lumen dce, t1 and fit (cli_vocabulary.c): one row per option. */
enum { LUMEN_CLI_DCE = 1u, LUMEN_CLI_T1 = 2u, LUMEN_CLI_FIT = 4u };
typedef struct {
  const char *name;     /* the documented name, e.g. "--flip-angles" */
  const char *aliases;  /* other accepted spellings, space-separated; NULL: none */
  const char *key;      /* lumen_pipe_config key it sets (dce, t1); NULL: handled by the command */
  const char *value;    /* value form, e.g. "DEG,..."; NULL: a switch */
  const char *deflt;    /* the default, shown by --help */
  const char *help;     /* what it does */
  unsigned commands;    /* LUMEN_CLI_* bits of the commands that have it */
} lumen_cli_option;
/* The row whose name or alias is arg, among the options of command (a LUMEN_CLI_* bit); NULL if none. */
const lumen_cli_option *lumen_cli_option_find(const char *arg, unsigned command);
/* Prints the shared options of command with defaults and aliases, then the exit statuses: the same
   lines in every command's --help. */
void lumen_cli_help_shared(FILE *out, unsigned command);
/* The exit-status paragraph that ends every command's --help (0 success, 1 input or data error,
   2 usage error, 3 results unreliable): one text, so that it cannot drift between commands. */
void lumen_cli_help_exit_status(FILE *out);
/* Seconds on the monotonic clock (cli_util.c): differences time commands and items. */
double lumen_cli_now(void);
/* A context whose log messages go to stderr (warnings and errors unless verbose). */
lumen_ctx *lumen_cli_context(const char *command, int verbose);

#endif
