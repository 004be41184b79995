/* lumen: the models lumen fits, their parameters, names and units (see docs/MODELS.md). */
#ifndef LUMEN_MODELS_H
#define LUMEN_MODELS_H
#include "lumen/export.h"

#include "lumen/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every model, by its lumen name (the same name on the command line, in files and bindings). */
typedef enum lumen_model {
  LUMEN_MODEL_TOFTS = 0,   /* "tofts":      Ktrans, ve */
  LUMEN_MODEL_ETOFTS,      /* "etofts":     Ktrans, ve, vp */
  LUMEN_MODEL_PATLAK,      /* "patlak":     Ktrans, vp */
  LUMEN_MODEL_2CUM,        /* "2cum":       Ktrans, Fp, Tp */
  LUMEN_MODEL_2CXM,        /* "2cxm":       Ktrans, ve, vp, Fp */
  LUMEN_MODEL_FXR,         /* "fxr":        Ktrans, ve, tau (fits R1(t)) */
  LUMEN_MODEL_AUC,         /* "auc":        no fit */
  LUMEN_MODEL_VFA,         /* "vfa":        T1, M0 (nonlinear SPGR) */
  LUMEN_MODEL_VFA_LINEAR,  /* "vfa-linear": T1, M0 (DESPOT1, closed form) */
  LUMEN_MODEL_VFA_2PT,     /* "vfa-2pt":    T1, M0 (two angles, closed form) */
  LUMEN_MODEL_IR,          /* "ir":         T1, M0 (magnitude inversion recovery) */
  LUMEN_MODEL_SR,          /* "sr":         T1, M0 (saturation recovery) */
  LUMEN_MODEL_COUNT
} lumen_model;

/* The one definition of the sizes every layer shares (fit.h, the solvers, the model math):
   the most fit parameters of any model (2CXM: 4) and the per-curve constants' slots. */
#define LUMEN_FIT_MAX_PARAMS 4
#define LUMEN_FIT_NCONSTS 2       /* per-curve constants of lumen_fit_execute's consts */
#define LUMEN_FIT_CONST_R10 0     /* FXR: pre-contrast R1 of the voxel, 1/s (default 1.0) */
#define LUMEN_FIT_CONST_B1 1      /* VFA family: flip-angle scale, actual = B1 * nominal (default 1) */
/* The default contrast-agent relaxivity r1, 1/(mM s) (gadoterate-class agents at 1.5 T): the one
   definition behind lumen_fit_options.r1, lumen_conc_options.r1, the pipeline's concentration-input
   default, the demo phantom and lumen fit --r1. */
#define LUMEN_DEFAULT_RELAXIVITY 4.5

/* "tofts", ...; "unknown" for an unknown value. */
LUMEN_API const char *lumen_model_name(lumen_model model);
/* Parses a lumen model name; LUMEN_ERR_INVALID_ARGUMENT if unknown. */
LUMEN_API lumen_status lumen_model_parse(const char *name, lumen_model *out);
/* Number of fitted parameters (0 for AUC); -1 for an unknown model. */
LUMEN_API int lumen_model_param_count(lumen_model model);
/* Name ("Ktrans") and unit ("1/min") of parameter i; NULL when out of range. */
LUMEN_API const char *lumen_model_param_name(lumen_model model, int i);
LUMEN_API const char *lumen_model_param_unit(lumen_model model, int i);
/* The default bounds of the fit parameters come in presets (docs/MODELS.md has the table);
   a per-parameter lo/hi given in lumen_fit_options always wins over the preset. */
typedef enum lumen_fit_bounds_preset {
  LUMEN_FIT_BOUNDS_PHYSICAL = 0,  /* "physical" (default): Ktrans [0, 5] /min, ve [1e-4, 1],
                                     vp [0, 1], ...: every physically possible value */
  LUMEN_FIT_BOUNDS_ROCKETSHIP,    /* "rocketship": ROCKETSHIP's (Ktrans [1e-7, 2], ve [0.02, 1],
                                     vp [0.001, 1], ...), to reproduce its numbers */
  LUMEN_FIT_BOUNDS_PRESET_COUNT
} lumen_fit_bounds_preset;

/* Default start value and bounds of public parameter i in the physical preset (in the units
   above; any pointer may be NULL). LUMEN_ERR_INVALID_ARGUMENT for an unknown model or index. */
LUMEN_API lumen_status lumen_model_param_defaults(lumen_model model, int i, double *start, double *lo,
                                        double *hi);
/* The same in a bounds preset (starts are the same in every preset).
   LUMEN_ERR_INVALID_ARGUMENT for an unknown model, index or preset. */
LUMEN_API lumen_status lumen_model_param_defaults_preset(lumen_model model, int i, lumen_fit_bounds_preset preset,
                                               double *start, double *lo, double *hi);

#ifdef __cplusplus
}
#endif
#endif
