/* lumen fit's command line: the options into a lumen_fitcli_request, checked before any file is
   read; fit_cli.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include "cli/cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO
#include "cli/fit_cli.h"
#include "lumen/aif.h"
#include "models/model.h"

#define CMD "fit"

static int parse_double(const char *opt, const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(v)) {
    lumen_cli_error(CMD, "%s '%s': expected a number", opt, s);
    return -1;
  }
  *out = v;
  return 0;
}

static int parse_int(const char *opt, const char *s, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < -2147483647L || v > 2147483647L) {
    lumen_cli_error(CMD, "%s '%s': expected an integer", opt, s);
    return -1;
  }
  *out = (int)v;
  return 0;
}

/* Finds a fit parameter by name (case-insensitive). */
static int param_index(lumen_model m, const char *name) {
  int np = lumen_fit_param_count(m);
  for (int k = 0; k < np; ++k)
    if (strcasecmp(lumen_fit_param_name(m, k), name) == 0) return k;
  return -1;
}

static void list_params(lumen_model m, char *buf, size_t size) {
  buf[0] = 0;
  int np = lumen_fit_param_count(m);
  for (int k = 0; k < np; ++k) {
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s%s", k ? ", " : "", lumen_fit_param_name(m, k));
  }
}

/* One item of --start/--fix (NAME=V) or --bounds (NAME=LO:HI, NAME may be delay) into o; 0, or -1
   after the message. */
static int param_item(lumen_model model, const char *model_name, const char *opt, const char *item, int is_dce,
                      lumen_fit_options *o) {
  const int is_bounds = opt[2] == 'b';
  char plist[256], pname[64], lo_s[64], hi_s[64];
  list_params(model, plist, sizeof plist);
  const char *e = strchr(item, '=');
  const char *colon = e && is_bounds ? strchr(e + 1, ':') : NULL;
  const char *v_end = colon ? colon : e ? e + strlen(e) : NULL;
  if (!e || (is_bounds && !colon) || (size_t)(e - item) >= sizeof pname || (size_t)(v_end - e - 1) >= sizeof lo_s ||
      (colon && strlen(colon + 1) >= sizeof hi_s)) {
    lumen_cli_error(CMD, "%s '%s': expected NAME=%s with NAME one of %s%s (several: comma-separated)", opt, item,
                    is_bounds ? "LO:HI" : "VALUE", plist, is_bounds && is_dce ? ", delay" : "");
    return -1;
  }
  snprintf(pname, sizeof pname, "%.*s", (int)(e - item), item);
  snprintf(lo_s, sizeof lo_s, "%.*s", (int)(v_end - e - 1), e + 1);
  snprintf(hi_s, sizeof hi_s, "%s", colon ? colon + 1 : "");
  double lo, hi = 0;
  if (parse_double(opt, lo_s, &lo) || (colon && parse_double(opt, hi_s, &hi))) return -1;
  if (is_bounds && strcasecmp(pname, "delay") == 0) {
    o->delay_lo = lo;
    o->delay_hi = hi;
    return 0;
  }
  int k = param_index(model, pname);
  if (k < 0) {
    lumen_cli_error(CMD, "%s '%s': model %s has no parameter '%s' (parameters: %s)", opt, item, model_name, pname,
                    plist);
    return -1;
  }
  if (is_bounds) {
    o->lo[k] = lo;
    o->hi[k] = hi;
  } else {
    o->start[k] = lo;
    if (opt[2] == 'f') o->fixed[k] = 1;
  }
  return 0;
}

/* A comma list of items: --bounds Ktrans=0:1,ve=0.001:1 (as lumen dce takes it). */
static int param_list(lumen_model model, const char *model_name, const char *opt, const char *arg, int is_dce,
                      lumen_fit_options *o) {
  char item[256];
  for (const char *p = arg;; ++p) {
    size_t len = strcspn(p, ",");
    if (len >= sizeof item) {
      lumen_cli_error(CMD, "%s '%s': an item of %zu characters, expected NAME=%s", opt, arg, len,
                      opt[2] == 'b' ? "LO:HI" : "VALUE");
      return -1;
    }
    memcpy(item, p, len);
    item[len] = 0;
    if (param_item(model, model_name, opt, item, is_dce, o)) return -1;
    p += len;
    if (!*p) return 0;
  }
}

static const char *const param_opts[3] = {"--start", "--bounds", "--fix"};

void lumen_fitcli_request_init(lumen_fitcli_request *r) {
  memset(r, 0, sizeof *r);
  lumen_fit_options_init(&r->o); /* the library's defaults, not retyped here */
  r->o.backend = "auto";
  r->time_unit = "s";
  r->auc_start = r->auc_window = NAN;
  r->hct = LUMEN_AIF_DEFAULT_HCT;
  r->r10 = 1.0;
  snprintf(r->fa_opt, sizeof r->fa_opt, "--flip-angles");
  snprintf(r->ti_opt, sizeof r->ti_opt, "--inversion-times");
}

/* A switch: 1 when name is one (it is set), 0 when not, -1 after the message when it has a value. */
static int fit_switch(lumen_fitcli_request *r, const char *name, const char *typed, const char *val) {
  int *const flags[] = {&r->o.fit_delay, &r->o.force_cpu, &r->quiet, &r->verbose, &r->overwrite};
  static const char *const switches[] = {"--fit-delay", "--force-cpu", "--quiet", "--verbose", "--overwrite"};
  for (int k = 0; k < (int)(sizeof switches / sizeof switches[0]); ++k)
    if (strcmp(name, switches[k]) == 0) {
      if (val) {
        lumen_cli_error(CMD, "%s takes no value (got '%s'): it is a switch, give it alone", typed, val);
        return -1;
      }
      *flags[k] = 1;
      return 1;
    }
  return 0;
}

static int is_valued_option(const char *name) {
  static const char *const valued[] = {"--model", "--curves", "--times", "--time-unit", "--aif", "--hematocrit",
                                       "--aif-delay", "--flip-angles", "--tr", "--inversion-times", "--r1",
                                       "--r10", "--backend", "--tolerance", "--max-iterations", "--start",
                                       "--bounds", "--fix", "--out", "--precision", "--conv", "--threads",
                                       "--auc-start", "--auc-window", "--memory-limit", "--bounds-preset"};
  for (size_t k = 0; k < sizeof valued / sizeof valued[0]; ++k)
    if (strcmp(name, valued[k]) == 0) return 1;
  return 0;
}

/* --start, --bounds, --fix: kept until the model is known. */
static int keep_param_arg(lumen_fitcli_request *r, const char *name, const char *val) {
  int kind = name[2] == 's' ? 0 : name[2] == 'b' ? 1 : 2;
  if (r->n_param_args[kind] >= LUMEN_FITCLI_MAX_PARAM_ARGS) {
    lumen_cli_error(CMD, "too many %s options", name);
    return -1;
  }
  r->param_args[kind][r->n_param_args[kind]++] = val;
  return 0;
}

static int parse_memory_limit(lumen_fitcli_request *r, const char *val) {
  r->mem_limit = lumen_cli_parse_size(val);
  if (r->mem_limit > 0) return 0;
  lumen_cli_error(CMD, "--memory-limit '%s': expected a size in bytes above 0 with an optional K, M, G or T "
                  "suffix (e.g. 512M, 4G)", val);
  return -1;
}

/* The value of an option of is_valued_option (name: its documented name; typed: as given); 0, or
   -1 after the message. */
static int fit_value(lumen_fitcli_request *r, const char *name, const char *typed, const char *val) {
  lumen_fit_options *o = &r->o;
  if (strcmp(name, "--model") == 0) r->model_name = val;
  else if (strcmp(name, "--curves") == 0) r->curves_path = val;
  else if (strcmp(name, "--times") == 0) r->times_arg = val;
  else if (strcmp(name, "--time-unit") == 0) r->time_unit = val;
  else if (strcmp(name, "--aif") == 0) r->aif_arg = val;
  else if (strcmp(name, "--hematocrit") == 0) return parse_double(typed, val, &r->hct);
  else if (strcmp(name, "--aif-delay") == 0) return parse_double(typed, val, &r->aif_delay);
  else if (strcmp(name, "--flip-angles") == 0) { r->fa_arg = val; snprintf(r->fa_opt, sizeof r->fa_opt, "%s", typed); }
  else if (strcmp(name, "--tr") == 0) { r->have_tr = 1; return parse_double(typed, val, &o->tr); }
  else if (strcmp(name, "--inversion-times") == 0) { r->ti_arg = val; snprintf(r->ti_opt, sizeof r->ti_opt, "%s", typed); }
  else if (strcmp(name, "--r1") == 0) return parse_double(name, val, &o->r1);
  else if (strcmp(name, "--r10") == 0) return parse_double(name, val, &r->r10);
  else if (strcmp(name, "--auc-start") == 0) return parse_double(name, val, &r->auc_start);
  else if (strcmp(name, "--auc-window") == 0) return parse_double(name, val, &r->auc_window);
  else if (strcmp(name, "--backend") == 0) o->backend = val;
  else if (strcmp(name, "--tolerance") == 0) return parse_double(name, val, &o->tolerance);
  else if (strcmp(name, "--max-iterations") == 0) return parse_int(name, val, &o->max_iterations);
  else if (strcmp(name, "--threads") == 0) return parse_int(name, val, &r->threads);
  else if (strcmp(name, "--precision") == 0) r->precision = val;
  else if (strcmp(name, "--conv") == 0) r->conv = val;
  else if (strcmp(name, "--bounds-preset") == 0) r->bounds_preset = val;
  else if (strcmp(name, "--out") == 0) r->out_path = val;
  else if (strcmp(name, "--memory-limit") == 0) return parse_memory_limit(r, val);
  else return keep_param_arg(r, name, val); /* --start, --bounds, --fix */
  return 0;
}

/* The command line into r. Returns -1 to go on, or the exit status (--help, a usage error). */
int lumen_fitcli_parse_args(lumen_fitcli_request *r, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    /* options with a value: --opt V or --opt=V; an alias (cli_vocabulary.c) becomes its name,
       messages about a value name the option as typed */
    const char *val = NULL;
    char name[64], typed[64];
    const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    if (len >= sizeof name) len = sizeof name - 1;
    memcpy(name, a, len);
    name[len] = 0;
    if (eq) val = eq + 1;
    snprintf(typed, sizeof typed, "%s", name);
    const lumen_cli_option *opt = lumen_cli_option_find(name, LUMEN_CLI_FIT);
    if (opt) snprintf(name, sizeof name, "%s", opt->name);
    if (strcmp(name, "--help") == 0) {
      r->help = 1; /* the rest is not read */
      return -1;
    }
    int sw = fit_switch(r, name, typed, val);
    if (sw < 0) return LUMEN_EXIT_USAGE;
    if (sw > 0) continue;
    if (!is_valued_option(name)) {
      lumen_cli_error(CMD, "unknown option '%s' (see 'lumen fit --help')", a);
      return LUMEN_EXIT_USAGE;
    }
    if (!val) {
      if (i + 1 >= argc) {
        lumen_cli_error(CMD, "option %s needs a %s (see 'lumen fit --help')", typed,
                        opt && opt->value ? opt->value : "value");
        return LUMEN_EXIT_USAGE;
      }
      val = argv[++i];
    }
    if (fit_value(r, name, typed, val)) return LUMEN_EXIT_USAGE;
  }
  return -1;
}

/* One of two names: 0 or 1, or -1 after "OPT 'V': expected FIRST or SECOND". */
static int parse_pair(const char *opt, const char *value, const char *first, const char *second) {
  if (strcmp(value, first) == 0) return 0;
  if (strcmp(value, second) == 0) return 1;
  lumen_cli_error(CMD, "%s '%s': expected %s or %s", opt, value, first, second);
  return -1;
}

/* The model and the inputs it needs; 0, or -1 after the message (a usage error). */
static int fit_check_model(lumen_fitcli_request *r) {
  const lumen_model m = r->o.model;
  const char *name = r->model_name;
  r->is_dce = (lumen_model_flags(m) & LUMEN_MF_AIF) != 0; /* the DCE models and auc */
  r->is_vfa = (lumen_model_flags(m) & LUMEN_MF_X_FLIP) != 0;
  r->x_times = (lumen_model_flags(m) & LUMEN_MF_X_TIMES) != 0;
  r->x_ti = (lumen_model_flags(m) & LUMEN_MF_X_TI) != 0;
  const int x_ti = r->x_ti;
  if (r->x_times && !x_ti && !r->times_arg) {
    lumen_cli_error(CMD, "model %s needs --times FILE", name);
    return -1;
  }
  if (r->is_dce && !r->aif_arg) {
    lumen_cli_error(CMD, "model %s needs --aif FILE or --aif parker|georgiou|weinmann|fritz-hansen", name);
    return -1;
  }
  if (r->is_vfa && (!r->fa_arg || !r->have_tr)) {
    lumen_cli_error(CMD, "model %s needs --flip-angles LIST (degrees; also --flip-angle) and --tr S (seconds)", name);
    return -1;
  }
  if (x_ti && !r->ti_arg && r->times_arg) {
    r->ti_arg = r->times_arg; /* as lumen t1 --method ir --times */
    snprintf(r->ti_opt, sizeof r->ti_opt, "--times");
  }
  if (x_ti && !r->ti_arg) {
    lumen_cli_error(CMD, "model %s needs --inversion-times LIST (seconds; also --ti)", name);
    return -1;
  }
  return 0;
}

/* Everything that needs no file and no context: -1 to go on, or the exit status. */
int lumen_fitcli_check_request(lumen_fitcli_request *r) {
  if (!r->model_name) {
    char names[256];
    lumen_cli_error(CMD, "--model is required (%s)", lumen_model_names_with(0, names, sizeof names));
    return LUMEN_EXIT_USAGE;
  }
  if (lumen_model_parse(r->model_name, &r->o.model) != LUMEN_OK) {
    lumen_cli_error(CMD, "--model '%s' is unknown: expected tofts, etofts, patlak, 2cum, 2cxm, fxr, auc, vfa, "
                         "vfa-linear, vfa-2pt, ir or sr", r->model_name);
    return LUMEN_EXIT_USAGE;
  }
  if (!r->curves_path) {
    lumen_cli_error(CMD, "--curves FILE is required (one curve per line)");
    return LUMEN_EXIT_USAGE;
  }
  int unit = parse_pair("--time-unit", r->time_unit, "s", "min");
  if (unit < 0) return LUMEN_EXIT_USAGE;
  r->tscale = unit == 0 ? 1.0 / 60.0 : 1.0;
  if (fit_check_model(r)) return LUMEN_EXIT_USAGE;
  if (!(r->hct >= 0 && r->hct < 1)) {
    lumen_cli_error(CMD, "--hematocrit %g: expected a fraction in [0, 1)", r->hct);
    return LUMEN_EXIT_USAGE;
  }
  r->to_file = r->out_path && strcmp(r->out_path, "-") != 0;
  if (r->to_file && lumen_fitcli_out_allowed(r->out_path, r->overwrite)) return LUMEN_EXIT_FAILURE;
  return -1;
}

/* The rest of the fit options, checked on a stand-in grid before any file is read: -1 to go
   on, or the exit status (a usage error; a backend this machine lacks is not one). */
int lumen_fitcli_finish_options(lumen_fitcli_request *r, lumen_ctx *ctx) {
  lumen_fit_options *o = &r->o;
  if (!isnan(r->auc_start)) o->auc_t0 = r->auc_start * r->tscale;
  if (!isnan(r->auc_window)) o->auc_window = r->auc_window * r->tscale;
  /* --precision, --conv, --bounds-preset: the library's default unless given */
  if (r->precision) {
    int k = parse_pair("--precision", r->precision, "float32", "float64");
    if (k < 0) return LUMEN_EXIT_USAGE;
    o->precision = k == 0 ? LUMEN_FIT_FLOAT32 : LUMEN_FIT_FLOAT64;
  }
  if (r->conv) {
    int k = parse_pair("--conv", r->conv, "exact", "trapezoid");
    if (k < 0) return LUMEN_EXIT_USAGE;
    o->conv = k == 0 ? LUMEN_FIT_CONV_EXACT : LUMEN_FIT_CONV_TRAPEZOID;
  }
  if (r->bounds_preset && lumen_fit_bounds_preset_parse(ctx, r->bounds_preset, &o->bounds_preset) != LUMEN_OK) {
    lumen_cli_error(CMD, "--bounds-preset: %s", lumen_ctx_last_error(ctx));
    return LUMEN_EXIT_USAGE;
  }
  for (int kind = 0; kind < 3; ++kind)
    for (int j = 0; j < r->n_param_args[kind]; ++j)
      if (param_list(o->model, r->model_name, param_opts[kind], r->param_args[kind][j], r->is_dce, o))
        return LUMEN_EXIT_USAGE;
  if (o->model == LUMEN_MODEL_AUC) return -1;
  lumen_status st = lumen_fit_options_check(ctx, o);
  if (st == LUMEN_OK) return -1;
  lumen_cli_error(CMD, "%s (checked before any file is read)", lumen_ctx_last_error(ctx));
  return st == LUMEN_ERR_INVALID_ARGUMENT ? LUMEN_EXIT_USAGE : LUMEN_EXIT_FAILURE;
}
#endif
