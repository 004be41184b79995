/* Pipeline configuration: defaults, `key = value` setting (command line and config files), and
   the ROCKETSHIP dce_preferences.txt keys lumen understands. */
#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "io/io_internal.h"
#include "pipeline/pipe_options.h"
#include "pipeline/pipe_strbuf.h"
#include "models/model.h"

/* A configuration file is a few hundred 'key = value' lines; ROCKETSHIP's dce_preferences.txt is
   about 10 KB. The cap turns a wrong file (an image, /dev/zero) into a clear error. */
enum { LUMEN_PIPE_CONFIG_MAX_BYTES = 1 << 20 };

void lumen_pipe_config_init(lumen_pipe_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->input_type = LUMEN_PIPE_INPUT_SIGNAL;
  cfg->flip_angle_deg = NAN;
  cfg->tr_s = NAN;
  cfg->dt_s = NAN;
  cfg->relaxivity = NAN;
  cfg->hematocrit = 0.45;
  cfg->blood_t1_s = 1.44;
  cfg->t1_default_s = NAN;
  cfg->baseline = 0;
  cfg->baseline_start = -1;
  cfg->max_invalid_fraction = 0.1;
  cfg->injection_time_s = NAN;
  cfg->bounds_preset = LUMEN_FIT_BOUNDS_PHYSICAL;
  cfg->allow_failures = 0;
  lumen_fit_options fit_defaults; /* one definition of the convergence defaults: lumen_fit_options_init */
  lumen_fit_options_init(&fit_defaults);
  cfg->tolerance = fit_defaults.tolerance;
  cfg->max_iterations = fit_defaults.max_iterations;
  cfg->conv = LUMEN_FIT_CONV_EXACT;
  cfg->precision = LUMEN_FIT_FLOAT32;
  for (int m = 0; m < LUMEN_MODEL_COUNT; ++m)
    for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) cfg->start[m][k] = cfg->lo[m][k] = cfg->hi[m][k] = NAN;
  cfg->fxr_fw = 0.8;
  cfg->write_ci = 1;
  cfg->report = 1;
  cfg->compress_level = 1;
}

void lumen_pipe_config_clear(lumen_pipe_config *cfg) {
  if (!cfg) return;
  char **strs[] = {&cfg->dce, &cfg->series, &cfg->out, &cfg->t1map, &cfg->mask, &cfg->b1, &cfg->aif, &cfg->prefix,
                   &cfg->models, &cfg->backend, &cfg->select, &cfg->method, &cfg->config_path,
                   &cfg->command_line};
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; ++i) { free(*strs[i]); *strs[i] = NULL; }
  for (int i = 0; i < cfg->n_vfa; ++i) { free(cfg->vfa[i]); cfg->vfa[i] = NULL; }
  cfg->n_vfa = 0;
}

static lumen_status set_str(lumen_ctx *ctx, char **dst, const char *v) {
  char *s = strdup(v);
  if (!s) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "config: out of memory");
  free(*dst);
  *dst = s;
  return LUMEN_OK;
}

static lumen_status num(lumen_ctx *ctx, const char *where, const char *key, const char *v, double lo, double hi,
                        double *out) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  while (*end && isspace((unsigned char)*end)) ++end;
  if (end == v || *end || errno || !isfinite(d))
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: %s = '%s' is not a number", where, key, v);
  if (d < lo || d > hi)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: %s = %g is outside [%g, %g]", where, key, d, lo, hi);
  *out = d;
  return LUMEN_OK;
}

/* A parsed value whose unit is easily confused, checked where it was set (plausible.c), so that the
   message names the option or the config file line: "cfg.txt:3: hematocrit = 45: ...". */
static lumen_status plausible(lumen_ctx *ctx, const char *where, const char *key,
                              lumen_status (*check)(lumen_ctx *, const char *, double), double v) {
  char src[LUMEN_PIPE_PATH_MAX + 64];
  if (!strncmp(where, "--", 2) || !strcmp(where, key)) snprintf(src, sizeof src, "%s", where);
  else snprintf(src, sizeof src, "%s: %s", where, key);
  return check(ctx, src, v);
}

static lumen_status boolean(lumen_ctx *ctx, const char *where, const char *key, const char *v, int *out) {
  if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on")) *out = 1;
  else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off")) *out = 0;
  else return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: %s = '%s' is not a boolean (0/1)", where, key, v);
  return LUMEN_OK;
}

static lumen_status num_list(lumen_ctx *ctx, const char *where, const char *key, const char *v, double *out, int max,
                             int *n) {
  char buf[2048];
  snprintf(buf, sizeof buf, "%s", v);
  int k = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ", []\t", &save); tok; tok = strtok_r(NULL, ", []\t", &save)) {
    if (k >= max) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: %s: more than %d values", where, key, max);
    lumen_status st = num(ctx, where, key, tok, -1e300, 1e300, &out[k]);
    if (st != LUMEN_OK) return st;
    ++k;
  }
  if (k == 0) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: %s: no values", where, key);
  *n = k;
  return LUMEN_OK;
}

/* ROCKETSHIP parameter names -> (fit parameter name); model suffixes -> models. */
static int rs_model_suffix(const char *suffix, lumen_model *models, int max) {
  static const struct { const char *s; lumen_model m; } tab[] = {
    {"tofts", LUMEN_MODEL_TOFTS}, {"ex_tofts", LUMEN_MODEL_ETOFTS}, {"etofts", LUMEN_MODEL_ETOFTS},
    {"patlak", LUMEN_MODEL_PATLAK}, {"tissue_uptake", LUMEN_MODEL_2CUM}, {"2cum", LUMEN_MODEL_2CUM},
    {"2cxm", LUMEN_MODEL_2CXM}, {"fxr", LUMEN_MODEL_FXR}};
  if (!suffix || !*suffix) {
    int k = 0;
    for (int m = 0; m < LUMEN_MODEL_COUNT && k < max; ++m) /* every DCE fit model (not auc) */
      if (lumen_model_is_dce((lumen_model)m)) models[k++] = (lumen_model)m;
    return k;
  }
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; ++i)
    if (!strcmp(suffix, tab[i].s)) { models[0] = tab[i].m; return 1; }
  return 0;
}

static int param_index(lumen_model m, const char *pname) {
  int np = lumen_fit_param_count(m);
  for (int k = 0; k < np; ++k)
    if (!strcasecmp(lumen_fit_param_name(m, k), pname)) return k;
  /* 2cxm fits E, not Ktrans: a Ktrans bound there is not a fit parameter */
  return -1;
}

/* voxel_{lower_limit,upper_limit,initial_value}_<param>[_<model>] and gpu_initial_value_<param> */
static lumen_status rocketship_param_key(lumen_ctx *ctx, lumen_pipe_config *cfg, const char *key, const char *value,
                                         const char *where, int *known) {
  const char *rest = NULL;
  int which = -1; /* 0 start, 1 lo, 2 hi */
  if (!strncmp(key, "voxel_lower_limit_", 18)) { which = 1; rest = key + 18; }
  else if (!strncmp(key, "voxel_upper_limit_", 18)) { which = 2; rest = key + 18; }
  else if (!strncmp(key, "voxel_initial_value_", 20)) { which = 0; rest = key + 20; }
  else if (!strncmp(key, "gpu_initial_value_", 18)) { which = 0; rest = key + 18; }
  if (which < 0) return LUMEN_OK;
  static const char *params[] = {"ktrans", "ve", "vp", "fp", "tp", "tau"};
  for (size_t i = 0; i < sizeof params / sizeof params[0]; ++i) {
    size_t n = strlen(params[i]);
    if (strncmp(rest, params[i], n) || (rest[n] && rest[n] != '_')) continue;
    lumen_model models[LUMEN_MODEL_COUNT];
    int nm = rs_model_suffix(rest[n] ? rest + n + 1 : NULL, models, LUMEN_MODEL_COUNT);
    if (nm == 0) return LUMEN_OK; /* unknown model suffix: not understood */
    double d;
    lumen_status st = num(ctx, where, key, value, -1e300, 1e300, &d);
    if (st != LUMEN_OK) return st;
    for (int j = 0; j < nm; ++j) {
      int k = param_index(models[j], params[i]);
      if (k < 0) continue;
      double *dst = which == 0 ? &cfg->start[models[j]][k] : which == 1 ? &cfg->lo[models[j]][k] : &cfg->hi[models[j]][k];
      *dst = d;
    }
    *known = 1;
    return LUMEN_OK;
  }
  return LUMEN_OK;
}

/* --bounds "ve=0.001:1,Ktrans=0:3" (all models with that parameter) */
static lumen_status set_bounds(lumen_ctx *ctx, lumen_pipe_config *cfg, const char *where, const char *v, int start) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", v);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: '%s': expected NAME=%s", where, tok, start ? "VALUE" : "LO:HI");
    *eq = '\0';
    double a = NAN, b = NAN;
    char *colon = strchr(eq + 1, ':');
    if (start) {
      lumen_status st = num(ctx, where, tok, eq + 1, -1e300, 1e300, &a);
      if (st != LUMEN_OK) return st;
    } else {
      if (!colon) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: '%s': expected NAME=LO:HI", where, eq + 1);
      *colon = '\0';
      lumen_status st = num(ctx, where, tok, eq + 1, -1e300, 1e300, &a);
      if (st == LUMEN_OK) st = num(ctx, where, tok, colon + 1, -1e300, 1e300, &b);
      if (st != LUMEN_OK) return st;
      if (!(a <= b)) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: %s bounds %g:%g: lower above upper", where, tok, a, b);
    }
    int any = 0;
    for (int m = 0; m < LUMEN_MODEL_COUNT; ++m) {
      int k = param_index((lumen_model)m, tok);
      if (k < 0) continue;
      any = 1;
      if (start) cfg->start[m][k] = a;
      else { cfg->lo[m][k] = a; cfg->hi[m][k] = b; }
    }
    if (!any) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: no model has a parameter '%s'", where, tok);
  }
  return LUMEN_OK;
}

/* The keys that set one field of the configuration from one value. */
typedef enum { KEY_STRING, KEY_NUMBER, KEY_INTEGER, KEY_BOOLEAN } key_kind;

typedef struct {
  const char *name;  /* after '-' -> '_' */
  key_kind kind;
  size_t field;      /* offsetof(lumen_pipe_config, field): char *, double or int */
  double lo, hi;     /* numbers and integers */
  /* a number whose unit is easily confused: syntax first (0..1e9), then plausibility (plausible.c) */
  lumen_status (*check)(lumen_ctx *, const char *, double);
} field_key;

#define FIELD(f) offsetof(lumen_pipe_config, f)
#define STR(name, f) {name, KEY_STRING, FIELD(f), 0, 0, NULL}
#define NUM(name, f, lo, hi) {name, KEY_NUMBER, FIELD(f), lo, hi, NULL}
#define UNUM(name, f, check) {name, KEY_NUMBER, FIELD(f), 0, 1e9, check}
#define INT(name, f, lo, hi) {name, KEY_INTEGER, FIELD(f), lo, hi, NULL}
#define BOOL(name, f) {name, KEY_BOOLEAN, FIELD(f), 0, 0, NULL}
static const field_key field_keys[] = {
    STR("dce", dce), STR("series", series), STR("out", out), STR("t1map", t1map), STR("mask", mask), STR("b1", b1), STR("aif", aif),
    STR("prefix", prefix), STR("models", models), STR("backend", backend), STR("method", method),
    UNUM("flip_angle", flip_angle_deg, pipe_check_flip),
    /* TR: the SPGR range depends on the command (t1 --method ir allows seconds): the upper limit of
       any TR here, the SPGR range in lumen_pipe_config_check */
    UNUM("tr", tr_s, pipe_check_tr_any),
    UNUM("dt", dt_s, pipe_check_dt),
    UNUM("relaxivity", relaxivity, pipe_check_relaxivity), UNUM("r1", relaxivity, pipe_check_relaxivity),
    UNUM("hematocrit", hematocrit, pipe_check_hematocrit), UNUM("hct", hematocrit, pipe_check_hematocrit),
    UNUM("blood_t1", blood_t1_s, pipe_check_t1), UNUM("t1", t1_default_s, pipe_check_t1),
    INT("baseline", baseline, 1, 1e6), INT("baseline_start", baseline_start, 0, 1e6),
    NUM("max_invalid_fraction", max_invalid_fraction, 0, 1), NUM("injection_time", injection_time_s, 0, 1e6),
    NUM("tolerance", tolerance, 1e-15, 1), NUM("gpu_tolerance", tolerance, 1e-15, 1),
    INT("max_iterations", max_iterations, 1, 1e7), INT("gpu_max_n_iterations", max_iterations, 1, 1e7),
    BOOL("force_cpu", force_cpu), BOOL("allow_failures", allow_failures), BOOL("fit_delay", fit_delay),
    BOOL("overwrite", overwrite), BOOL("quiet", quiet), BOOL("ci", write_ci), BOOL("save_conc", save_conc),
    BOOL("report", report),
    INT("threads", threads, 0, 4096), INT("compress_level", compress_level, 1, 9), INT("chunk", chunk_voxels, 1, 1e9),
    NUM("fxr_fw", fxr_fw, 0.01, 1),
    /* ROCKETSHIP dce_preferences.txt keys */
    INT("voxel_MaxIter", max_iterations, 1, 1e7), NUM("voxel_TolFun", tolerance, 1e-15, 1),
};
#undef FIELD
#undef STR
#undef NUM
#undef UNUM
#undef INT
#undef BOOL

static lumen_status set_field(lumen_ctx *ctx, lumen_pipe_config *cfg, const field_key *k, const char *value,
                              const char *where) {
  void *dst = (char *)cfg + k->field;
  if (k->kind == KEY_STRING) return set_str(ctx, (char **)dst, value);
  if (k->kind == KEY_BOOLEAN) return boolean(ctx, where, k->name, value, (int *)dst);
  double d;
  lumen_status st = num(ctx, where, k->name, value, k->lo, k->hi, &d);
  if (st == LUMEN_OK && k->check) st = plausible(ctx, where, k->name, k->check, d);
  if (st != LUMEN_OK) return st;
  if (k->kind == KEY_NUMBER) {
    *(double *)dst = d;
    /* the run log says where the acquisition constants without a header field came from */
    char *source = k->field == offsetof(lumen_pipe_config, relaxivity)   ? cfg->relaxivity_source
                   : k->field == offsetof(lumen_pipe_config, hematocrit) ? cfg->hematocrit_source
                   : k->field == offsetof(lumen_pipe_config, blood_t1_s) ? cfg->blood_t1_source
                                                                         : NULL;
    if (source) snprintf(source, sizeof cfg->relaxivity_source, "%s", where);
  } else {
    if (d != floor(d))
      return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: %s = %g is not an integer", where, k->name, d);
    *(int *)dst = (int)d;
  }
  return LUMEN_OK;
}

/* One setting of a key with its own rule. */
typedef struct {
  lumen_ctx *ctx;
  lumen_pipe_config *cfg;
  const char *key, *value, *where;
  int *known;
} setting;

/* Keys whose value names one of two choices: select, input_type, conv and precision. */
static lumen_status set_two_way(const setting *s) {
  static const struct {
    const char *key, *label, *first, *second;
  } keys[] = {{"select", "select", "none", "aic"},
              {"input_type", "input-type", "signal", "concentration"},
              {"conv", "conv", "exact", "trapezoid"},
              {"precision", "precision", "float32", "float64"}};
  size_t i = 0;
  while (i + 1 < sizeof keys / sizeof keys[0] && strcmp(s->key, keys[i].key)) i++;
  int second = !strcmp(s->value, keys[i].second);
  if (!second && strcmp(s->value, keys[i].first))
    return lumen_fail(s->ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: %s = '%s': expected %s or %s", s->where, keys[i].label,
                      s->value, keys[i].first, keys[i].second);
  lumen_pipe_config *cfg = s->cfg;
  switch (i) {
    case 0: return set_str(s->ctx, &cfg->select, s->value);
    case 1: cfg->input_type = second ? LUMEN_PIPE_INPUT_CONCENTRATION : LUMEN_PIPE_INPUT_SIGNAL; break;
    case 2: cfg->conv = second ? LUMEN_FIT_CONV_TRAPEZOID : LUMEN_FIT_CONV_EXACT; break;
    default: cfg->precision = second ? LUMEN_FIT_FLOAT64 : LUMEN_FIT_FLOAT32; break;
  }
  return LUMEN_OK;
}

/* vfa / in: one more input file */
static lumen_status add_input(const setting *s) {
  lumen_pipe_config *cfg = s->cfg;
  if (cfg->n_vfa >= LUMEN_PIPE_MAX_FILES)
    return lumen_fail(s->ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: more than %d input files", s->where,
                      LUMEN_PIPE_MAX_FILES);
  char *copy = strdup(s->value);
  if (!copy) return lumen_fail(s->ctx, LUMEN_ERR_OUT_OF_MEMORY, "config: out of memory");
  cfg->vfa[cfg->n_vfa++] = copy;
  return LUMEN_OK;
}

static lumen_status set_bounds_preset(const setting *s) {
  lumen_fit_bounds_preset p;
  lumen_status st = lumen_fit_bounds_preset_parse(s->ctx, s->value, &p);
  if (st != LUMEN_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", lumen_ctx_last_error(s->ctx));
    return lumen_fail(s->ctx, st, "%s: %s", s->where, msg);
  }
  s->cfg->bounds_preset = p;
  return LUMEN_OK;
}

static lumen_status set_resume(const setting *s) {
  lumen_status st = boolean(s->ctx, s->where, "resume", s->value, &s->cfg->resume);
  if (st == LUMEN_OK && s->cfg->resume) s->cfg->overwrite = 1;
  return st;
}

/* flip_angles / times: a list, each value checked for plausibility */
static lumen_status set_list(const setting *s) {
  lumen_pipe_config *cfg = s->cfg;
  const int flips = s->key[0] == 'f';
  double *dst = flips ? cfg->flip_angles_deg : cfg->times_s;
  int *n_out = flips ? &cfg->n_flip_angles : &cfg->n_times;
  lumen_status st = num_list(s->ctx, s->where, s->key, s->value, dst, flips ? LUMEN_PIPE_MAX_FILES : 64, n_out);
  for (int i = 0; st == LUMEN_OK && i < *n_out; ++i) {
    char src[LUMEN_PIPE_PATH_MAX + 64]; /* "--times value 2", "cfg.txt:4: times value 2" */
    if (!strncmp(s->where, "--", 2)) snprintf(src, sizeof src, "%s value %d", s->where, i + 1);
    else snprintf(src, sizeof src, "%s: %s value %d", s->where, s->key, i + 1);
    st = (flips ? pipe_check_flip : pipe_check_time)(s->ctx, src, dst[i]);
  }
  if (st != LUMEN_OK) *n_out = 0;
  return st;
}

static lumen_status set_bounds_key(const setting *s) { return set_bounds(s->ctx, s->cfg, s->where, s->value, 0); }
static lumen_status set_start_key(const setting *s) { return set_bounds(s->ctx, s->cfg, s->where, s->value, 1); }

/* ROCKETSHIP's acceleration_backend / gpu_backend: its names, checked, kept with their prefix */
static lumen_status set_rocketship_backend(const setting *s) {
  char canon[64];
  char tmp[128];
  snprintf(tmp, sizeof tmp, "rocketship:%s", s->value);
  lumen_status st = lumen_fit_backend_parse(s->ctx, tmp, 1, canon, sizeof canon);
  if (st != LUMEN_OK) return st;
  return set_str(s->ctx, &s->cfg->backend, tmp);
}

/* ROCKETSHIP's aif_type: 1 fitted, 2 raw ROI, 3 population; lumen needs the ROI file for 1 and 2 */
static lumen_status set_aif_type(const setting *s) {
  if (!strcmp(s->value, "3")) return set_str(s->ctx, &s->cfg->aif, "parker");
  *s->known = 0;
  return LUMEN_OK;
}

static const struct {
  const char *name;
  lumen_status (*set)(const setting *s);
} rule_keys[] = {
    {"select", set_two_way}, {"vfa", add_input}, {"in", add_input}, {"input_type", set_two_way},
    {"bounds_preset", set_bounds_preset}, {"resume", set_resume}, {"flip_angles", set_list}, {"times", set_list},
    {"bounds", set_bounds_key}, {"start", set_start_key}, {"conv", set_two_way}, {"precision", set_two_way},
    {"acceleration_backend", set_rocketship_backend}, {"gpu_backend", set_rocketship_backend},
    {"aif_type", set_aif_type},
};

lumen_status lumen_pipe_config_set(lumen_ctx *ctx, lumen_pipe_config *cfg, const char *key_in, const char *value,
                                   const char *where, int *known_out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, cfg);
  LUMEN_REQUIRE_NOT_NULL(ctx, key_in);
  LUMEN_REQUIRE_NOT_NULL(ctx, value);
  if (!where) where = key_in;
  char key[128];
  size_t n = 0;
  for (const char *p = key_in; *p && n + 1 < sizeof key; ++p) key[n++] = *p == '-' ? '_' : *p;
  key[n] = '\0';
  int dummy;
  int *known = known_out ? known_out : &dummy;
  *known = 1;
  for (size_t i = 0; i < sizeof field_keys / sizeof field_keys[0]; ++i)
    if (!strcmp(key, field_keys[i].name)) return set_field(ctx, cfg, &field_keys[i], value, where);
  const setting s = {ctx, cfg, key, value, where, known};
  for (size_t i = 0; i < sizeof rule_keys / sizeof rule_keys[0]; ++i)
    if (!strcmp(key, rule_keys[i].name)) return rule_keys[i].set(&s);
  *known = 0;
  return rocketship_param_key(ctx, cfg, key_in, value, where, known);
}

lumen_status lumen_pipe_config_read(lumen_ctx *ctx, lumen_pipe_config *cfg, const char *path) {
  LUMEN_REQUIRE_NOT_NULL(ctx, cfg);
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  /* a regular file of at most LUMEN_PIPE_CONFIG_MAX_BYTES: /dev/zero or a FIFO would never end */
  int fd = -1;
  int64_t size = 0;
  lumen_status ost = lumen_io_open_regular(ctx, "config", path, &fd, &size);
  if (ost != LUMEN_OK) return ost;
  if (size > LUMEN_PIPE_CONFIG_MAX_BYTES) {
    close(fd);
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "config '%s': %lld bytes, expected at most %d (a configuration file is "
                      "a few 'key = value' lines; is this the right file?)", path, (long long)size,
                      LUMEN_PIPE_CONFIG_MAX_BYTES);
  }
  FILE *f = fdopen(fd, "r");
  if (!f) {
    close(fd);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "config '%s': cannot read: %s", path, strerror(errno));
  }
  char line[4096];
  int lineno = 0;
  lumen_status st = LUMEN_OK;
  long consumed = 0;
  while (fgets(line, sizeof line, f)) {
    ++lineno;
    consumed += (long)strlen(line);
    if (consumed > LUMEN_PIPE_CONFIG_MAX_BYTES) {  /* the file grew while being read */
      st = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s:%d: the file grew past %d bytes while being read", path, lineno,
                      LUMEN_PIPE_CONFIG_MAX_BYTES);
      break;
    }
    size_t len = strlen(line);
    if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(f)) {
      /* a longer line would be split and its tail read as another line */
      st = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s:%d: line longer than %zu characters", path, lineno, sizeof line - 2);
      break;
    }
    char *p = line;
    if (lineno == 1 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB && (unsigned char)p[2] == 0xBF) p += 3;
    char *c = strpbrk(p, "#%");
    if (c) *c = '\0';
    while (*p && isspace((unsigned char)*p)) ++p;
    size_t n = strlen(p);
    while (n && isspace((unsigned char)p[n - 1])) p[--n] = '\0';
    if (!*p) continue;
    char *eq = strchr(p, '=');
    char where[LUMEN_PIPE_PATH_MAX + 32];
    snprintf(where, sizeof where, "%s:%d", path, lineno);
    if (!eq) {
      st = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: expected 'key = value', got '%s'", where, p);
      break;
    }
    *eq = '\0';
    char *k = p, *v = eq + 1;
    n = strlen(k);
    while (n && isspace((unsigned char)k[n - 1])) k[--n] = '\0';
    while (*v && isspace((unsigned char)*v)) ++v;
    n = strlen(v);
    if (n && v[n - 1] == ';') v[--n] = '\0';
    if (n >= 2 && (v[0] == '\'' || v[0] == '"') && v[n - 1] == v[0]) { v[n - 1] = '\0'; ++v; }
    if (!*k) {
      st = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: empty key", where);
      break;
    }
    int known = 0;
    st = lumen_pipe_config_set(ctx, cfg, k, v, where, &known);
    if (st != LUMEN_OK) break;
    if (!known) lumen_log(ctx, LUMEN_LOG_WARNING, "%s: key '%s' is not used by lumen (ignored)", where, k);
  }
  fclose(f);
  if (st == LUMEN_OK) st = set_str(ctx, &cfg->config_path, path);
  return st;
}

/* One argument quoted for a POSIX shell when it holds anything but [A-Za-z0-9_./:=,+@%-]. */
static void quote_arg(pipe_sb *b, const char *a) {
  int plain = *a != '\0';
  for (const char *p = a; *p; ++p)
    if (!(isalnum((unsigned char)*p) || strchr("_./:=,+@%-", *p))) plain = 0;
  if (plain) {
    pipe_sb_printf(b, "%s", a);
    return;
  }
  pipe_sb_printf(b, "'");
  for (const char *p = a; *p; ++p) {
    if (*p == '\'') pipe_sb_printf(b, "'\\''");
    else pipe_sb_printf(b, "%c", *p);
  }
  pipe_sb_printf(b, "'");
}

lumen_status lumen_pipe_config_set_command_line(lumen_ctx *ctx, lumen_pipe_config *cfg, int argc,
                                                const char *const *argv) {
  LUMEN_REQUIRE_NOT_NULL(ctx, cfg);
  LUMEN_REQUIRE(ctx, argc >= 0 && (argc == 0 || argv), "lumen_pipe_config_set_command_line: argv is NULL");
  pipe_sb b = {0};
  for (int i = 0; i < argc; ++i) {
    if (i) pipe_sb_printf(&b, " ");
    quote_arg(&b, argv[i] ? argv[i] : "");
  }
  if (b.oom) {
    pipe_sb_free(&b);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "config: out of memory");
  }
  lumen_status st = set_str(ctx, &cfg->command_line, b.s ? b.s : "");
  pipe_sb_free(&b);
  return st;
}
