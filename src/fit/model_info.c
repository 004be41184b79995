/* Model metadata (include/lumen/models.h): names, public parameters and their units. The math
   lives in src/models/; the fit-parameter view (2cxm's E) is in include/lumen/fit.h. */
#include <string.h>
#include "lumen/models.h"
#include "models/model.h"

typedef struct model_def {
  const char *name;
  int np;
  const char *params[4];
  const char *units[4];
} model_def;

/* Indexed by lumen_model; order must follow the enum. Dimensionless fractions have unit "1";
   Fp is in 1/min (multiply by 100 for ml/100ml/min). */
static const model_def k_models[LUMEN_MODEL_COUNT] = {
  {"tofts", 2, {"Ktrans", "ve"}, {"1/min", "1"}},
  {"etofts", 3, {"Ktrans", "ve", "vp"}, {"1/min", "1", "1"}},
  {"patlak", 2, {"Ktrans", "vp"}, {"1/min", "1"}},
  {"2cum", 3, {"Ktrans", "Fp", "Tp"}, {"1/min", "1/min", "min"}},
  {"2cxm", 4, {"Ktrans", "ve", "vp", "Fp"}, {"1/min", "1", "1", "1/min"}},
  {"fxr", 3, {"Ktrans", "ve", "tau"}, {"1/min", "1", "min"}},
  {"auc", 0, {NULL}, {NULL}},
  {"vfa", 2, {"T1", "M0"}, {"s", "a.u."}},
  {"vfa-linear", 2, {"T1", "M0"}, {"s", "a.u."}},
  {"vfa-2pt", 2, {"T1", "M0"}, {"s", "a.u."}},
  {"ir", 2, {"T1", "M0"}, {"s", "a.u."}},
  {"sr", 2, {"T1", "M0"}, {"s", "a.u."}},
};

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
  if (model == LUMEN_MODEL_2CXM && i == 0)  /* public Ktrans (the solver fits E): Tofts' Ktrans */
    lumen_model_defaults_preset(LUMEN_MODEL_TOFTS, (int)preset, s, l, h);
  if (start) *start = s[i];
  if (lo) *lo = l[i];
  if (hi) *hi = h[i];
  return LUMEN_OK;
}

lumen_status lumen_model_param_defaults(lumen_model model, int i, double *start, double *lo,
                                        double *hi) {
  return lumen_model_param_defaults_preset(model, i, LUMEN_FIT_BOUNDS_PHYSICAL, start, lo, hi);
}
