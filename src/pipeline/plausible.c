/* Plausibility of acquisition values where a unit is easily confused (issue 14): a TR in ms
   given as seconds, a flip angle in radians given as degrees, a frame interval in ms, a
   relaxivity per ms, a T1 in ms. Each check refuses with a message that names the source (an
   option, a sidecar field or a header field), the value, the expected range and the likely
   mistake, before anything is written (docs/PIPELINES.md, "Plausibility checks"). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "core/internal.h"
#include "lumen/aif.h"
#include "pipeline/pipe_options.h"
#include "models/model.h"

/* Ranges a value of each kind must lie in (SI units: s, degrees, 1/(mM s)); the SPGR TR and the
   relaxivity ranges are the fit API's (LUMEN_SPGR_TR_*, LUMEN_RELAXIVITY_*, include/lumen/fit.h). */
#define TR_IR_MAX 30.0       /* inversion recovery repeats within seconds */
#define DT_MIN 0.01          /* 10 ms per frame */
#define DT_MAX 600.0         /* 10 min per frame */
#define DURATION_MAX 14400.0 /* 4 h for a whole dynamic series (DCE: 5-60 min) */
#define FLIP_MIN_DEG 1.0     /* below: radians given as degrees */
#define FLIP_MAX_DEG 90.0    /* SPGR flip angles; above: a typo or another sequence */
#define T1_MIN 0.05          /* tissue and blood T1 in s */
#define T1_MAX 10.0
#define HCT_MAX 0.7          /* blood hematocrit as a fraction */

lumen_status pipe_check_tr(lumen_ctx *ctx, const char *source, double tr, int spgr) {
  if (!isfinite(tr)) return LUMEN_OK;
  const double lo = LUMEN_SPGR_TR_MIN_S, hi = spgr ? LUMEN_SPGR_TR_MAX_S : TR_IR_MAX;
  if (tr >= lo && tr <= hi) return LUMEN_OK;
  if (tr > hi)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "%s = %g: %g s is not %s TR (expected %g..%g s); in ms? give %g (seconds)", source, tr, tr,
                      spgr ? "an SPGR" : "a plausible", lo, hi, tr / 1000.0);
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "%s = %g: %g s is not %s TR (expected %g..%g s)%s", source, tr, tr, spgr ? "an SPGR" : "a plausible",
                    lo, hi, tr > 0 ? "; in minutes or a typo?" : "");
}

lumen_status pipe_check_tr_any(lumen_ctx *ctx, const char *source, double tr) { return pipe_check_tr(ctx, source, tr, 0); }

lumen_status pipe_check_flip(lumen_ctx *ctx, const char *source, double deg) {
  if (!isfinite(deg)) return LUMEN_OK;
  if (deg >= FLIP_MIN_DEG && deg <= FLIP_MAX_DEG) return LUMEN_OK;
  if (deg > 0 && deg < FLIP_MIN_DEG)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "%s = %g: %g deg is not a plausible SPGR flip angle (expected %g..%g deg); in radians? %g rad = "
                      "%.4g deg: give %.4g (degrees)",
                      source, deg, deg, FLIP_MIN_DEG, FLIP_MAX_DEG, deg, deg * 180.0 / 3.14159265358979323846,
                      deg * 180.0 / 3.14159265358979323846);
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "%s = %g: %g deg is not a plausible SPGR flip angle (expected %g..%g deg)", source, deg, deg,
                    FLIP_MIN_DEG, FLIP_MAX_DEG);
}

lumen_status pipe_check_dt(lumen_ctx *ctx, const char *source, double dt) {
  if (!isfinite(dt)) return LUMEN_OK;
  if (dt >= DT_MIN && dt <= DT_MAX) return LUMEN_OK;
  /* name a unit mistake only when that unit would make the value plausible; 1e-30 s or 3e38 s is
     no interval in any unit (a corrupt or unset header field) */
  char hint[96] = "; not a frame interval in any unit: a corrupt or unset value?";
  if (dt > DT_MAX && dt / 1000.0 <= DT_MAX) snprintf(hint, sizeof hint, "; in ms? give %g (seconds)", dt / 1000.0);
  if (dt > 0 && dt < DT_MIN && dt * 60.0 >= DT_MIN) snprintf(hint, sizeof hint, "; in minutes? give %g (seconds)", dt * 60.0);
  if (dt <= 0) snprintf(hint, sizeof hint, "; a frame interval must be positive");
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "%s = %g: a frame interval of %g s is implausible (expected %g..%g s)%s", source, dt, dt, DT_MIN,
                    DT_MAX, hint);
}

lumen_status pipe_check_duration(lumen_ctx *ctx, const char *source, double total_s, int64_t frames) {
  if (!isfinite(total_s) || frames < 2 || total_s <= DURATION_MAX) return LUMEN_OK;
  double dt = total_s / (double)(frames - 1);
  char hint[96] = "";
  if (total_s / 1000.0 <= DURATION_MAX) snprintf(hint, sizeof hint, "; the frame interval in ms? give %g (seconds)", dt / 1000.0);
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "%s: %lld frames %g s apart last %g s (%.1f h), implausible for one DCE acquisition (expected at "
                    "most %g h)%s", source, (long long)frames, dt, total_s, total_s / 3600.0, DURATION_MAX / 3600.0, hint);
}

lumen_status pipe_check_relaxivity(lumen_ctx *ctx, const char *source, double r1) {
  if (!isfinite(r1)) return LUMEN_OK;
  if (r1 >= LUMEN_RELAXIVITY_MIN && r1 <= LUMEN_RELAXIVITY_MAX) return LUMEN_OK;
  if (r1 <= 0)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "%s = %g: a relaxivity must be positive (expected %g..%g 1/(mM s), e.g. 4.5 for gadoterate at "
                      "1.5 T)",
                      source, r1, LUMEN_RELAXIVITY_MIN, LUMEN_RELAXIVITY_MAX);
  if (r1 > 0 && r1 < LUMEN_RELAXIVITY_MIN)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "%s = %g: relaxivity %g /mM/s is implausible (expected %g..%g, e.g. 4.5 for gadoterate at 1.5 T); "
                      "in 1/(mM ms)? give %g (1/(mM s))",
                      source, r1, r1, LUMEN_RELAXIVITY_MIN, LUMEN_RELAXIVITY_MAX, r1 * 1000.0);
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "%s = %g: relaxivity %g /mM/s is implausible (expected %g..%g 1/(mM s), e.g. 4.5 for gadoterate "
                    "at 1.5 T)%s",
                    source, r1, r1, LUMEN_RELAXIVITY_MIN, LUMEN_RELAXIVITY_MAX, r1 > LUMEN_RELAXIVITY_MAX ? "; in 1/(M s)? give it per mM" : "");
}

lumen_status pipe_check_t1(lumen_ctx *ctx, const char *source, double t1) {
  if (!isfinite(t1)) return LUMEN_OK;
  if (t1 >= T1_MIN && t1 <= T1_MAX) return LUMEN_OK;
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s = %g: a T1 of %g s is implausible (expected %g..%g s)%s%.4g%s",
                    source, t1, t1, T1_MIN, T1_MAX, t1 > T1_MAX ? "; in ms? give " : "",
                    t1 > T1_MAX ? t1 / 1000.0 : 0.0, t1 > T1_MAX ? " (seconds)" : "");
}

lumen_status pipe_check_hematocrit(lumen_ctx *ctx, const char *source, double hct) {
  if (!isfinite(hct) || (hct >= 0 && hct <= HCT_MAX)) return LUMEN_OK;
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "%s = %g: expected a fraction 0..%g (0.45 for adults)%s%g", source, hct, HCT_MAX,
                    hct > 1 ? "; in percent? give " : "", hct > 1 ? hct / 100.0 : 0.0);
}

lumen_status pipe_check_time(lumen_ctx *ctx, const char *source, double t) {
  if (!isfinite(t) || t <= TR_IR_MAX) return LUMEN_OK;
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "%s = %g: an inversion / recovery time of %g s is implausible (expected <= %g s); in ms? give %g "
                    "(seconds)",
                    source, t, t, TR_IR_MAX, t / 1000.0);
}

/* ------------------------------------------------------------------ options of a run (issue 15) */
/* Every option and config key is checked here, before anything is read or written: a bad value
   found only at the fitting stage used to leave maps and tables of a run that then failed. */

/* 1 when s is well-formed UTF-8 (no overlong forms, surrogates or code points over U+10FFFF). */
static int valid_utf8(const unsigned char *s) {
  while (*s) {
    unsigned c = *s++;
    if (c < 0x80) continue;
    int more = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC2 ? 1 : -1;
    if (more < 0 || c > 0xF4) return 0;
    unsigned cp = c & (0x3Fu >> more);
    for (int k = 0; k < more; ++k, ++s) {
      if ((*s & 0xC0) != 0x80) return 0;
      cp = cp << 6 | (*s & 0x3Fu);
    }
    if ((more == 2 && cp < 0x800) || (more == 3 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return 0;
  }
  return 1;
}

lumen_status pipe_check_prefix(lumen_ctx *ctx, const char *prefix) {
  if (!prefix) return LUMEN_OK; /* derived from the input's name (sub-/ses- entities or "lumen") */
  const char *why = NULL;
  size_t n = strlen(prefix);
  if (n == 0) why = "it is empty";
  else if (n > PIPE_PREFIX_MAX) why = "it is too long";
  else if (strchr(prefix, '/')) why = "it contains '/': outputs are always written inside --out";
  else if (prefix[0] == '.') why = "it starts with '.' (hidden files, '.' and '..' are not output names)";
  for (const unsigned char *p = (const unsigned char *)prefix; !why && *p; ++p)
    if (*p < 0x20 || *p == 0x7f) why = "it contains a control character (newline, tab, ...)";
  if (!why && !valid_utf8((const unsigned char *)prefix))
    why = "it is not valid UTF-8 text (the run log is JSON, the report HTML)";
  if (!why) return LUMEN_OK;
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "--prefix '%s': %s; expected the start of a file name (1..%d characters, no '/', not starting "
                    "with '.'), e.g. sub-01_ses-1; choose the folder with --out",
                    prefix, why, PIPE_PREFIX_MAX);
}

lumen_status pipe_parse_models(lumen_ctx *ctx, const char *list, lumen_model *models, int *n) {
  char buf[512];
  *n = 0;
  if (list && strlen(list) >= sizeof buf)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "--models: the list is too long (%zu characters)", strlen(list));
  snprintf(buf, sizeof buf, "%s", list ? list : "tofts");
  for (char *save = NULL, *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
    lumen_model m;
    if (lumen_model_parse(tok, &m) != LUMEN_OK || !(lumen_model_flags(m) & LUMEN_MF_AIF)) {
      char names[256];
      return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "--models: '%s' is not a DCE model (%s)", tok,
                        lumen_model_names_with(LUMEN_MF_AIF, names, sizeof names));
    }
    for (int k = 0; k < *n; ++k)
      if (models[k] == m) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "--models: '%s' is listed twice", tok);
    models[(*n)++] = m;
  }
  if (*n == 0) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "--models: no model given");
  return LUMEN_OK;
}

lumen_status pipe_parse_t1_method(lumen_ctx *ctx, const char *method, lumen_model *out) {
  const char *m = method ? method : "vfa";
  if (lumen_model_parse(m, out) != LUMEN_OK || !(lumen_model_flags(*out) & LUMEN_MF_T1)) {
    char names[256]; /* the T1 methods: the LUMEN_MF_T1 rows */
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "--method '%s': expected %s (the T1 methods)", m,
                      lumen_model_names_with(LUMEN_MF_T1, names, sizeof names));
  }
  return LUMEN_OK;
}

/* the per-model --start/--bounds overrides of cfg (NaN: the model's default) */
static void overrides(const lumen_pipe_config *cfg, lumen_model model, lumen_fit_options *o) {
  for (int k = 0; k < lumen_fit_param_count(model) && k < LUMEN_FIT_MAX_PARAMS; ++k) {
    if (!isnan(cfg->start[model][k])) o->start[k] = cfg->start[model][k];
    if (!isnan(cfg->lo[model][k])) o->lo[k] = cfg->lo[model][k];
    if (!isnan(cfg->hi[model][k])) o->hi[k] = cfg->hi[model][k];
  }
}

/* What every pipeline fit takes from the run's options. */
static void common_options(const lumen_pipe_config *cfg, lumen_model model, lumen_fit_options *o) {
  lumen_fit_options_init(o);
  o->model = model;
  o->tolerance = cfg->tolerance;
  o->max_iterations = cfg->max_iterations;
  o->backend = cfg->backend ? cfg->backend : "auto";
  o->force_cpu = cfg->force_cpu;
  o->precision = cfg->precision;
  o->bounds_preset = cfg->bounds_preset;
}

void pipe_fit_options_dce(const lumen_pipe_config *cfg, lumen_model model, double r1, lumen_fit_options *o) {
  common_options(cfg, model, o);
  o->fit_delay = cfg->fit_delay;
  o->conv = cfg->conv;
  o->r1 = r1;
  o->confidence = cfg->write_ci;
  if (!strncmp(o->backend, "rocketship:", 11)) o->rocketship_names = 0;
  if (model == LUMEN_MODEL_AUC) o->auc_t0 = NAN;
  overrides(cfg, model, o);
}

void pipe_fit_options_t1(const lumen_pipe_config *cfg, lumen_model method, double tr, lumen_fit_options *o) {
  common_options(cfg, method, o);
  o->tr = isfinite(tr) ? tr : 0;
  overrides(cfg, method, o);
}

/* The run's fit options checked by the library on a stand-in grid (lumen_fit_options_check):
   the backend name, bounds against starts, the options a model accepts, before any data exist. */
static lumen_status trial_plan(lumen_ctx *ctx, const lumen_fit_options *o, const char *what) {
  lumen_status st = lumen_fit_options_check(ctx, o);
  if (st == LUMEN_OK) return st;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", lumen_ctx_last_error(ctx));
  return lumen_fail(ctx, st, "%s: %s (checked before anything is read or written)", what, msg);
}

static lumen_status check_aif_spec(lumen_ctx *ctx, const char *spec) {
  lumen_aif_kind kind;
  if (!spec || !strcmp(spec, "auto") || lumen_aif_parse(spec, &kind) == LUMEN_OK) return LUMEN_OK;
  static const char *const with_file[] = {"roi:", "fitted:", "file:"};
  for (int i = 0; i < 3; ++i) {
    size_t n = strlen(with_file[i]);
    if (strncmp(spec, with_file[i], n)) continue;
    if (spec[n]) return LUMEN_OK;
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "--aif '%s': no file after '%s'; expected %sFILE", spec,
                      with_file[i], with_file[i]);
  }
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "--aif '%s': expected auto, parker, georgiou, weinmann, fritz-hansen, roi:FILE, fitted:FILE or "
                    "file:FILE",
                    spec);
}

/* The fit options of every model the run will fit, on trial plans. */
static lumen_status check_fit_options(lumen_ctx *ctx, const lumen_pipe_config *cfg, int t1cmd) {
  lumen_fit_options o;
  lumen_model models[LUMEN_MODEL_COUNT];
  int n = 0;
  lumen_status st;
  char what[64];
  if (t1cmd) {
    st = pipe_parse_t1_method(ctx, cfg->method, &models[0]);
    if (st != LUMEN_OK) return st;
    int vfa = (lumen_model_flags(models[0]) & LUMEN_MF_X_FLIP) != 0;
    pipe_fit_options_t1(cfg, models[0], isfinite(cfg->tr_s) ? cfg->tr_s : vfa ? 0.005 : NAN, &o);
    snprintf(what, sizeof what, "T1 (%s) fit options", lumen_model_name(models[0]));
    return trial_plan(ctx, &o, what);
  }
  st = pipe_parse_models(ctx, cfg->models, models, &n);
  for (int m = 0; m < n && st == LUMEN_OK; ++m) {
    /* the relaxivity may come from the sidecar: a typical one stands in */
    pipe_fit_options_dce(cfg, models[m], isfinite(cfg->relaxivity) ? cfg->relaxivity : LUMEN_DEFAULT_RELAXIVITY, &o);
    snprintf(what, sizeof what, "stage D (%s) fit options", lumen_model_name(models[m]));
    st = trial_plan(ctx, &o, what);
  }
  if (st == LUMEN_OK && cfg->n_vfa > 0) { /* dce --vfa: the T1 fit before stage A */
    pipe_fit_options_t1(cfg, LUMEN_MODEL_VFA, isfinite(cfg->tr_s) ? cfg->tr_s : 0.005, &o);
    st = trial_plan(ctx, &o, "T1 (vfa, --vfa) fit options");
  }
  return st;
}

/* Options the user typed (or a config file set), checked before anything is read or written. */
lumen_status lumen_pipe_config_check(lumen_ctx *ctx, const lumen_pipe_config *cfg, const char *command) {
  LUMEN_REQUIRE_NOT_NULL(ctx, cfg);
  const int t1cmd = command && !strcmp(command, "t1");
  const char *method = cfg->method ? cfg->method : "vfa";
  const int spgr = !t1cmd || !strncmp(method, "vfa", 3);
  lumen_status st = pipe_check_tr(ctx, "--tr", cfg->tr_s, spgr);
  if (st == LUMEN_OK) st = pipe_check_flip(ctx, "--flip-angle", cfg->flip_angle_deg);
  for (int i = 0; st == LUMEN_OK && i < cfg->n_flip_angles; ++i) {
    char src[48];
    snprintf(src, sizeof src, "--flip-angles value %d", i + 1);
    st = pipe_check_flip(ctx, src, cfg->flip_angles_deg[i]);
  }
  if (st == LUMEN_OK) st = pipe_check_dt(ctx, "--dt", cfg->dt_s);
  if (st == LUMEN_OK && !t1cmd) st = pipe_check_relaxivity(ctx, "--relaxivity", cfg->relaxivity);
  if (st == LUMEN_OK) st = pipe_check_t1(ctx, "--t1", cfg->t1_default_s);
  if (st == LUMEN_OK) st = pipe_check_t1(ctx, "--blood-t1", cfg->blood_t1_s);
  if (st == LUMEN_OK) st = pipe_check_hematocrit(ctx, "--hematocrit", cfg->hematocrit);
  for (int i = 0; st == LUMEN_OK && i < cfg->n_times; ++i) {
    char src[48];
    snprintf(src, sizeof src, "--times value %d", i + 1);
    st = pipe_check_time(ctx, src, cfg->times_s[i]);
  }
  if (st == LUMEN_OK) st = pipe_check_prefix(ctx, cfg->prefix);
  if (st == LUMEN_OK && !t1cmd) st = check_aif_spec(ctx, cfg->aif);
  if (st == LUMEN_OK && !t1cmd && cfg->baseline > 0 && cfg->baseline_start >= cfg->baseline)
    st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "--baseline-start %d with --baseline %d: the baseline frames [%d, %d) are empty; expected "
                    "--baseline-start below --baseline",
                    cfg->baseline_start, cfg->baseline, cfg->baseline_start, cfg->baseline);
  if (st == LUMEN_OK) st = check_fit_options(ctx, cfg, t1cmd);
  return st;
}
