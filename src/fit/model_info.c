/* Model metadata (include/lumen/models.h): names, public parameters and their units. The math
   lives in src/models/; the fit-parameter view (2cxm's E) is in include/lumen/fit.h. */
#include <string.h>
#include "lumen/models.h"
#include "models/model.h"

typedef struct model_def {
  const char *name;
  int np;
  const char *params[LUMEN_FIT_MAX_PARAMS];
  const char *units[LUMEN_FIT_MAX_PARAMS];
} model_def;

/* The table has four parameter slots per model; the public enum values never change. */
_Static_assert(LUMEN_FIT_MAX_PARAMS == 4, "LUMEN_MODEL_TABLE rows have 4 parameter slots");
_Static_assert(LUMEN_MODEL_TOFTS == 0 && LUMEN_MODEL_FXR == 5 && LUMEN_MODEL_AUC == 6 && LUMEN_MODEL_SR == 11,
               "the values of lumen_model are public: append new models at the end of LUMEN_MODEL_TABLE");

/* Indexed by lumen_model, generated from LUMEN_MODEL_TABLE (include/lumen/models.h).
   Dimensionless fractions have unit "1"; Fp is in 1/min (multiply by 100 for ml/100ml/min). */
#define PARAM_NAME(k, present, name, unit, fit_name, st, plo, phi, rlo, rhi, dlo, dhi) name,
#define PARAM_UNIT(k, present, name, unit, fit_name, st, plo, phi, rlo, rhi, dlo, dhi) unit,
#define MODEL_DEF(id, name, fn, derived, flags, p0, p1, p2, p3)                                   \
  [id] = {name, LUMEN_MT_NP_(p0, p1, p2, p3),                                                \
          {p0(PARAM_NAME, 0) p1(PARAM_NAME, 1) p2(PARAM_NAME, 2) p3(PARAM_NAME, 3)},          \
          {p0(PARAM_UNIT, 0) p1(PARAM_UNIT, 1) p2(PARAM_UNIT, 2) p3(PARAM_UNIT, 3)}},
static const model_def k_models[LUMEN_MODEL_COUNT] = {LUMEN_MODEL_TABLE(MODEL_DEF)};
#undef PARAM_NAME
#undef PARAM_UNIT
#undef MODEL_DEF

static const model_def *find(lumen_model model) {
  if ((int)model < 0 || (int)model >= LUMEN_MODEL_COUNT) return NULL;
  return &k_models[model];
}

const char *lumen_model_name(lumen_model model) {
  const model_def *d = find(model);
  return d ? d->name : "unknown";
}

lumen_status lumen_model_parse(const char *name, lumen_model *out) {
  if (!name || !out) return LUMEN_ERR_INVALID_ARGUMENT;
  for (int m = 0; m < LUMEN_MODEL_COUNT; ++m) {
    if (strcmp(name, k_models[m].name) == 0) {
      *out = (lumen_model)m;
      return LUMEN_OK;
    }
  }
  return LUMEN_ERR_INVALID_ARGUMENT;
}

int lumen_model_param_count(lumen_model model) {
  const model_def *d = find(model);
  return d ? d->np : -1;
}

const char *lumen_model_param_name(lumen_model model, int i) {
  const model_def *d = find(model);
  return (d && i >= 0 && i < d->np) ? d->params[i] : NULL;
}

int lumen_model_flags_of(lumen_model model) { return lumen_model_flags(model); }

const char *lumen_model_param_unit(lumen_model model, int i) {
  const model_def *d = find(model);
  return (d && i >= 0 && i < d->np) ? d->units[i] : NULL;
}

lumen_status lumen_model_param_defaults_preset(lumen_model model, int i, lumen_fit_bounds_preset preset,
                                               double *start, double *lo, double *hi) {
  const model_def *d = find(model);
  if (!d || i < 0 || i >= d->np || (int)preset < 0 || preset >= LUMEN_FIT_BOUNDS_PRESET_COUNT)
    return LUMEN_ERR_INVALID_ARGUMENT;
  double s[LUMEN_FIT_MAX_PARAMS], l[LUMEN_FIT_MAX_PARAMS], h[LUMEN_FIT_MAX_PARAMS];
  lumen_model_defaults_preset(model, (int)preset, s, l, h);
  if ((lumen_model_flags(model) & LUMEN_MF_FIT_E) && i == 0) { /* public Ktrans (the solver fits E) */
    const int rs = preset == LUMEN_FIT_BOUNDS_ROCKETSHIP;
#define KTRANS_DEF(k, present, name, unit, fit_name, st, plo, phi, rlo, rhi, dlo, dhi) \
  s[0] = (st), l[0] = rs ? (rlo) : (plo), h[0] = rs ? (rhi) : (phi);
    LUMEN_P_KTRANS(KTRANS_DEF, 0)
#undef KTRANS_DEF
  }
  if (start) *start = s[i];
  if (lo) *lo = l[i];
  if (hi) *hi = h[i];
  return LUMEN_OK;
}

lumen_status lumen_model_param_defaults(lumen_model model, int i, double *start, double *lo,
                                        double *hi) {
  return lumen_model_param_defaults_preset(model, i, LUMEN_FIT_BOUNDS_PHYSICAL, start, lo, hi);
}
