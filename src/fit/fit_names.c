/* Fit options defaults, names of states / tiers / derived values, backend request parsing. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "core/internal.h"
#include "lumen/fit.h"

const char *lumen_fit_state_name(lumen_fit_state state) {
  switch (state) {
    case LUMEN_FIT_CONVERGED: return "converged";
    case LUMEN_FIT_MAX_ITERATIONS: return "max_iterations";
    case LUMEN_FIT_SINGULAR: return "singular";
    case LUMEN_FIT_INVALID_INPUT: return "invalid_input";
    case LUMEN_FIT_START_OUT_OF_BOUNDS: return "start_out_of_bounds";
    case LUMEN_FIT_NOT_FINITE: return "not_finite";
    case LUMEN_FIT_NOT_FITTED: return "not_fitted";
    case LUMEN_FIT_AT_BOUND: return "at_bound";
    default: return "unknown";
  }
}

int lumen_fit_state_has_values(lumen_fit_state state) {
  return state == LUMEN_FIT_CONVERGED || state == LUMEN_FIT_AT_BOUND || state == LUMEN_FIT_MAX_ITERATIONS;
}

const char *lumen_fit_tier_name(lumen_fit_tier tier) {
  switch (tier) {
    case LUMEN_FIT_TIER_CUDA: return "cuda";
    case LUMEN_FIT_TIER_CPU: return "cpu";
    case LUMEN_FIT_TIER_CPU_SINGLE: return "cpu_single";
    case LUMEN_FIT_TIER_STANDARD: return "standard";
    default: return "unknown";
  }
}

const char *lumen_fit_precision_name(lumen_fit_precision p) {
  switch (p) {
    case LUMEN_FIT_FLOAT32: return "float32";
    case LUMEN_FIT_FLOAT64: return "float64";
    default: return "unknown";
  }
}

const char *lumen_fit_conv_name(lumen_fit_conv c) {
  switch (c) {
    case LUMEN_FIT_CONV_EXACT: return "exact";
    case LUMEN_FIT_CONV_TRAPEZOID: return "trapezoid";
    default: return "unknown";
  }
}

const char *lumen_fit_bounds_preset_name(lumen_fit_bounds_preset preset) {
  switch (preset) {
    case LUMEN_FIT_BOUNDS_PHYSICAL: return "physical";
    case LUMEN_FIT_BOUNDS_ROCKETSHIP: return "rocketship";
    default: return "unknown";
  }
}

lumen_status lumen_fit_bounds_preset_parse(lumen_ctx *ctx, const char *name, lumen_fit_bounds_preset *out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  for (int p = 0; name && p < LUMEN_FIT_BOUNDS_PRESET_COUNT; ++p)
    if (strcasecmp(name, lumen_fit_bounds_preset_name((lumen_fit_bounds_preset)p)) == 0) {
      *out = (lumen_fit_bounds_preset)p;
      return LUMEN_OK;
    }
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "bounds preset '%s' is unknown: expected physical or rocketship",
                    name ? name : "(null)");
}

void lumen_fit_options_init(lumen_fit_options *opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->model = LUMEN_MODEL_TOFTS;
  opts->tolerance = 1e-6;
  opts->max_iterations = 200;
  for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) {
    opts->start[k] = NAN;
    opts->lo[k] = NAN;
    opts->hi[k] = NAN;
    opts->fixed[k] = 0;
  }
  opts->bounds_preset = LUMEN_FIT_BOUNDS_PHYSICAL;
  opts->weights = NULL;
  opts->precision = LUMEN_FIT_FLOAT32;
  opts->conv = LUMEN_FIT_CONV_EXACT;
  opts->linear_start = 1;
  opts->confidence = 1;
  opts->n_starts = 4;
  opts->fit_delay = 0;
  opts->delay_lo = 0.0;
  opts->delay_hi = 0.5;
  opts->backend = NULL;
  opts->rocketship_names = 0;
  opts->force_cpu = 0;
  opts->tr = 0.0;
  opts->r1 = LUMEN_DEFAULT_RELAXIVITY;
  opts->auc_window = 1.5;
  opts->auc_t0 = NAN;
}

int lumen_fit_param_count(lumen_model model) { return lumen_model_param_count(model); }

/* The fit-parameter names (2cxm fits E = Ktrans / Fp in place of Ktrans), from LUMEN_MODEL_TABLE. */
const char *lumen_fit_param_name(lumen_model model, int i) {
#define FIT_NAME(k, present, name, unit, fit_name, st, plo, phi, rlo, rhi, dlo, dhi) fit_name,
#define FIT_NAMES(id, name, fn, derived, flags, p0, p1, p2, p3) \
  [id] = {p0(FIT_NAME, 0) p1(FIT_NAME, 1) p2(FIT_NAME, 2) p3(FIT_NAME, 3)},
  static const char *const names[LUMEN_MODEL_COUNT][LUMEN_FIT_MAX_PARAMS] = {LUMEN_MODEL_TABLE(FIT_NAMES)};
#undef FIT_NAME
#undef FIT_NAMES
  if ((int)model < 0 || model >= LUMEN_MODEL_COUNT || i < 0 || i >= lumen_model_param_count(model)) return NULL;
  return names[model][i];
}

/* Derived values per model: name, unit (the LUMEN_D_* list of the model's row; lumen_model_derived()
   in src/models/model_impl.inc writes them in this order). */
typedef struct {
  const char *name, *unit;
} derived_def;

#define DERIVED_DEF(name, unit) {name, unit},
#define DERIVED_LIST(id, name, fn, derived, flags, p0, p1, p2, p3) \
  static const derived_def derived_of_##id[] = {derived(DERIVED_DEF){NULL, NULL}};
LUMEN_MODEL_TABLE(DERIVED_LIST)
#undef DERIVED_LIST
#undef DERIVED_DEF

static int derived_defs(lumen_model model, const derived_def **out) {
  switch (model) {
#define DERIVED_CASE(id, name, fn, derived, flags, p0, p1, p2, p3) \
  case id: *out = derived_of_##id; return (int)(sizeof derived_of_##id / sizeof derived_of_##id[0]) - 1;
    LUMEN_MODEL_TABLE(DERIVED_CASE)
#undef DERIVED_CASE
    default: *out = NULL; return 0;
  }
}

int lumen_fit_derived_count(lumen_model model) {
  const derived_def *d;
  return derived_defs(model, &d);
}

const char *lumen_fit_derived_name(lumen_model model, int i) {
  const derived_def *d;
  int n = derived_defs(model, &d);
  return (i >= 0 && i < n) ? d[i].name : NULL;
}

const char *lumen_fit_derived_unit(lumen_model model, int i) {
  const derived_def *d;
  int n = derived_defs(model, &d);
  return (i >= 0 && i < n) ? d[i].unit : NULL;
}

lumen_status lumen_fit_backend_parse(lumen_ctx *ctx, const char *request, int rocketship_names, char *canonical,
                                     size_t canonical_size) {
  static const struct {
    const char *name, *canon;
  } table[] = {
      {"auto", "auto"},       {"accelerated", "accelerated"}, {"standard", "standard"},
      {"cpu_single", "cpu_single"}, {"cuda", "cuda"},         {"gpufit", "accelerated"},
      {"gpufit_cuda", "cuda"}, {"cpufit_cpu", "cpu"},         {"gpufit_cpu_fallback", "cpu"},
      {"pure_cpu", "standard"},
  };
  const char *r = request ? request : "auto";
  if (strncasecmp(r, "rocketship:", 11) == 0) {
    rocketship_names = 1;
    r += 11;
  }
  const char *canon = NULL;
  if (strcasecmp(r, "cpu") == 0) {
    canon = rocketship_names ? "standard" : "cpu";
  } else {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
      if (strcasecmp(r, table[i].name) == 0) canon = table[i].canon;
  }
  if (!canon)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "backend '%s' is unknown: expected auto, accelerated, standard, cpu, cpu_single, cuda, or a "
                      "ROCKETSHIP name (gpufit, gpufit_cuda, cpufit_cpu, gpufit_cpu_fallback, pure_cpu, "
                      "rocketship:cpu)",
                      r);
  if (canonical && canonical_size) snprintf(canonical, canonical_size, "%s", canon);
  return LUMEN_OK;
}
