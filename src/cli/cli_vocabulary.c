/* The one table of options shared by lumen dce, t1 and fit (issue 17): each concept has one name,
   the spellings users already type are aliases, and the shared part of every --help text, with
   the defaults, is printed from this table so that the commands cannot drift apart. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

enum { ALL = LUMEN_CLI_DCE | LUMEN_CLI_T1 | LUMEN_CLI_FIT, PIPE = LUMEN_CLI_DCE | LUMEN_CLI_T1 };

/* name, aliases, pipeline config key, value form, default, help, commands */
static const lumen_cli_option options[] = {
  {"--flip-angles", "--flip-angle", "flip_angles", "DEG,...",
   "the JSON sidecar's FlipAngle (dce, t1); fit: required by vfa models",
   "flip angles in degrees (1..90): one per input volume or curve sample (fit: a comma list or FILE); dce: one "
   "value is the series' angle, a list the --vfa inputs' angles", ALL},
  {"--tr", NULL, "tr", "S", "the JSON sidecar's RepetitionTimeExcitation, else RepetitionTime (dce, t1); fit: "
   "required by vfa models, 0 for ir",
   "repetition time in seconds (SPGR: 0.0005..0.1; ir: 0 or absent = long TR)", ALL},
  {"--inversion-times", "--ti", "times", "S,...", "the JSON sidecars' InversionTime (t1); fit: required by ir",
   "inversion times in seconds (<= 30), one per input volume or curve sample (fit: a comma list or FILE)",
   LUMEN_CLI_T1 | LUMEN_CLI_FIT},
  {"--aif-delay", "--injection-time", "injection_time", "D",
   "dce: detected (last frame before the mean tissue curve rises); fit: 0",
   "bolus arrival of a population AIF (parker, georgiou, ...), after the first frame (dce, seconds) or time 0 "
   "(fit, in --time-unit)", LUMEN_CLI_DCE | LUMEN_CLI_FIT},
  {"--hematocrit", NULL, "hematocrit", "H", "0.45",
   "whole blood -> plasma for population and ROI AIFs, a fraction in [0, 1)", LUMEN_CLI_DCE | LUMEN_CLI_FIT},
  {"--backend", NULL, "backend", "B", "auto",
   "auto, accelerated, standard, cuda, cpu, cpu_single, or a ROCKETSHIP name (gpufit, gpufit_cuda, "
   "cpufit_cpu, pure_cpu, rocketship:cpu)", ALL},
  {"--force-cpu", NULL, "force_cpu", NULL, "off", "with --backend auto: use the standard tier (ROCKETSHIP's "
   "force_cpu)", ALL},
  {"--precision", NULL, "precision", "P", "float32", "float32 or float64 for the accelerated tiers", ALL},
  {"--conv", NULL, "conv", "RULE", "exact", "exact or trapezoid (ROCKETSHIP/Gpufit numbers)",
   LUMEN_CLI_DCE | LUMEN_CLI_FIT},
  {"--fit-delay", NULL, "fit_delay", NULL, "off", "also fit an arterial delay (minutes; bounds: --bounds "
   "delay=LO:HI in fit)", LUMEN_CLI_DCE | LUMEN_CLI_FIT},
  {"--tolerance", NULL, "tolerance", "T", "1e-6", "relative chi-square change for convergence", ALL},
  {"--max-iterations", NULL, "max_iterations", "N", "200", "iterations per voxel or curve", ALL},
  {"--start", NULL, "start", "NAME=V,...", "the model's start values",
   "start value of a parameter (comma list, repeatable); 2cxm fits E = Ktrans/Fp", ALL},
  {"--bounds", NULL, "bounds", "NAME=LO:HI,...", "the --bounds-preset's",
   "bounds of a parameter (comma list, repeatable), e.g. Ktrans=0:1,ve=0.001:1", ALL},
  {"--bounds-preset", NULL, "bounds_preset", "P", "physical",
   "default bounds: physical (Ktrans 0..5 /min, ve 1e-4..1, vp 0..1, ...) or rocketship (Ktrans "
   "1e-7..2, ve 0.02..1, vp 0.001..1, ...); --bounds overrides either", ALL},
  {"--fix", NULL, NULL, "NAME=V,...", "none",
   "hold a parameter at V (comma list, repeatable); fit only: dce and t1 refuse it (the pipeline "
   "configuration has no fixed parameters)", ALL},
  {"--threads", NULL, "threads", "N", "0 = all cores", "CPU threads", ALL},
  {"--memory-limit", NULL, NULL, "SIZE", "min(16G, physical memory); fit: --curves as that, other files 256M",
   "refuse, before reading, any input needing more than SIZE bytes (e.g. 512M, 4G)", ALL},
  {"--overwrite", NULL, "overwrite", NULL, "off", "replace existing outputs (refused otherwise)", ALL},
  {"--quiet", "-q", "quiet", NULL, "off", "no progress or summary on stderr", ALL},
  {"--verbose", "-v", NULL, NULL, "off", "debug messages on stderr", ALL},
  {"--help", "-h", NULL, NULL, NULL, "this text; exit 0", ALL},
};

enum { N_OPTIONS = (int)(sizeof options / sizeof options[0]) };

/* 1 when arg is one of the space-separated words of list. */
static int in_list(const char *list, const char *arg) {
  size_t n = strlen(arg);
  for (const char *p = list; p && *p;) {
    size_t len = strcspn(p, " ");
    if (len == n && !strncmp(p, arg, n)) return 1;
    p += len;
    while (*p == ' ') ++p;
  }
  return 0;
}

const lumen_cli_option *lumen_cli_option_find(const char *arg, unsigned command) {
  for (int i = 0; i < N_OPTIONS; ++i)
    if ((options[i].commands & command) && (!strcmp(options[i].name, arg) || in_list(options[i].aliases, arg)))
      return &options[i];
  return NULL;
}

/* Words of text wrapped at 100 columns, each line indented by indent; col is where the cursor is. */
static void wrap(FILE *out, const char *text, int indent, int col) {
  for (const char *p = text; *p;) {
    while (*p == ' ') ++p;
    int len = (int)strcspn(p, " ");
    if (!len) break;
    if (col > indent && col + 1 + len > 100) {
      fprintf(out, "\n%*s", indent, "");
      col = indent;
    } else if (col > indent) {
      fputc(' ', out);
      ++col;
    }
    fprintf(out, "%.*s", len, p);
    col += len;
    p += len;
  }
  fputc('\n', out);
}

static void print_option(FILE *out, const lumen_cli_option *o) {
  char head[64], text[1024];
  snprintf(head, sizeof head, "  %s%s%s", o->name, o->value ? " " : "", o->value ? o->value : "");
  int n = snprintf(text, sizeof text, "%s.", o->help);
  if (o->deflt && n > 0 && (size_t)n < sizeof text)
    n += snprintf(text + n, sizeof text - (size_t)n, " Default: %s.", o->deflt);
  if (o->aliases && n > 0 && (size_t)n < sizeof text)
    snprintf(text + n, sizeof text - (size_t)n, " Also: %s.", o->aliases);
  fputs(head, out);
  int col = (int)strlen(head);
  if (col >= 26) {
    fprintf(out, "\n%*s", 26, "");
    col = 26;
  } else {
    fprintf(out, "%*s", 26 - col, "");
    col = 26;
  }
  /* col == indent: wrap() starts the first word without a space */
  wrap(out, text, 26, col);
}

void lumen_cli_help_shared(FILE *out, unsigned command) {
  fputs("shared options (one table: the same names, aliases and defaults in lumen dce, t1 and fit;\n"
        "--NAME=VALUE also works):\n", out);
  for (int i = 0; i < N_OPTIONS; ++i)
    if (options[i].commands & command) print_option(out, &options[i]);
  lumen_cli_help_exit_status(out);
}

void lumen_cli_help_exit_status(FILE *out) {
  fputs("exit status (every command): 0 success; 1 input or data error (a file missing, unreadable or\n"
        "inconsistent, a sidecar or header value in a wrong unit, a backend this machine lacks, an output\n"
        "that cannot be written); 2 usage error (an unknown option, a missing or bad value, a value in a\n"
        "likely wrong unit: checked before anything is read or written); 3 results unreliable (dce, t1:\n"
        "more than half the fitted voxels failed; --allow-failures gives 0).\n", out);
}
