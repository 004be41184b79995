/* lumen: the models lumen fits, their parameters, names and units (see docs/MODELS.md). */
#ifndef LUMEN_MODELS_H
#define LUMEN_MODELS_H
#include "lumen/export.h"

#include "lumen/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- the table of models
   The one source of every model's id, name, functions, flags, derived values and fit parameters
   (name, unit, default start and bounds); docs/ADDING_A_MODEL.md is the recipe for a new row. The
   enum below, lumen_model_name/param_*, lumen_model_np, the default bounds, the derived-value names,
   the dispatch of the model math (src/models/model_impl.inc), the solvers' per-model policies and
   the backend dispatch lists (SIMD lanes, CUDA kernels) are all generated from it. A row:

     X(id, name, fn, derived, flags, p0, p1, p2, p3)

   id: the enum name (rows in enum order: the values are the row numbers and never change, append
   new models before LUMEN_MODEL_COUNT); name: the lumen name on the command line, in files and
   bindings; fn: the token naming the model's three functions in src/models/model_impl.inc,
   LF(lumen_eval_<fn>), LF(lumen_linear_start_<fn>) and LF(lumen_derived_<fn>) (a row without them
   does not compile); derived: a LUMEN_D_* list of the derived values in the order
   lumen_derived_<fn> writes them; flags: LUMEN_MF_* below (what the x values are, what the model
   reads, and how the solvers treat it); p0..p3: a LUMEN_P_* descriptor per fit parameter, padded
   with LUMEN_P_NONE (the number of parameters is the number of descriptors before the padding). */
#define LUMEN_MODEL_TABLE(X)                                                                                 \
  X(LUMEN_MODEL_TOFTS, "tofts", tofts, LUMEN_D_KEP,                                                          \
    LUMEN_MF_DCE | LUMEN_MF_LANES_F32 | LUMEN_MF_TOFTS_FORM,                                                 \
    LUMEN_P_KTRANS, LUMEN_P_VE, LUMEN_P_NONE, LUMEN_P_NONE)                                                  \
  X(LUMEN_MODEL_ETOFTS, "etofts", etofts, LUMEN_D_KEP,                                                       \
    LUMEN_MF_DCE | LUMEN_MF_LANES_F32 | LUMEN_MF_TOFTS_FORM | LUMEN_MF_RESTART_KTRANS,                       \
    LUMEN_P_KTRANS, LUMEN_P_VE, LUMEN_P_VP, LUMEN_P_NONE)                                                    \
  X(LUMEN_MODEL_PATLAK, "patlak", patlak, LUMEN_D_NONE,                                                      \
    LUMEN_MF_DCE | LUMEN_MF_LANES_F32 | LUMEN_MF_PATLAK_LINEAR,                                              \
    LUMEN_P_KTRANS, LUMEN_P_VP, LUMEN_P_NONE, LUMEN_P_NONE)                                                  \
  X(LUMEN_MODEL_2CUM, "2cum", 2cum, LUMEN_D_2CUM,                                                            \
    LUMEN_MF_DCE | LUMEN_MF_LANES_F32 | LUMEN_MF_2CUM_FORM | LUMEN_MF_ESCAPE_STARTS,                         \
    LUMEN_P_KTRANS, LUMEN_P_FP, LUMEN_P_TP, LUMEN_P_NONE)                                                    \
  X(LUMEN_MODEL_2CXM, "2cxm", 2cxm, LUMEN_D_2CXM,                                                            \
    LUMEN_MF_DCE | LUMEN_MF_SOLVE_F64 | LUMEN_MF_LANES_F64 |                                                 \
      LUMEN_MF_FIT_E | LUMEN_MF_STAGED | LUMEN_MF_ESCAPE_STARTS | LUMEN_MF_2CXM_FORM,                                             \
    LUMEN_P_2CXM_E, LUMEN_P_2CXM_VE, LUMEN_P_2CXM_VP, LUMEN_P_FP)                                            \
  X(LUMEN_MODEL_FXR, "fxr", fxr, LUMEN_D_KEP,                                                                \
    LUMEN_MF_DCE | LUMEN_MF_USES_R10 | LUMEN_MF_LANES_F64 | LUMEN_MF_ACC_F64 | LUMEN_MF_USES_R1 |           \
      LUMEN_MF_FXR_FORM,                                                                                     \
    LUMEN_P_KTRANS, LUMEN_P_VE, LUMEN_P_TAU, LUMEN_P_NONE)                                                   \
  X(LUMEN_MODEL_AUC, "auc", auc, LUMEN_D_AUC,                                                                \
    LUMEN_MF_AIF | LUMEN_MF_X_TIMES | LUMEN_MF_AREAS,                                                        \
    LUMEN_P_NONE, LUMEN_P_NONE, LUMEN_P_NONE, LUMEN_P_NONE)                                                  \
  X(LUMEN_MODEL_VFA, "vfa", vfa, LUMEN_D_R1,                                                                 \
    LUMEN_MF_X_FLIP | LUMEN_MF_LANES_F32 | LUMEN_MF_T1,                                                      \
    LUMEN_P_T1, LUMEN_P_M0, LUMEN_P_NONE, LUMEN_P_NONE)                                                      \
  X(LUMEN_MODEL_VFA_LINEAR, "vfa-linear", vfa_linear, LUMEN_D_R1,                                            \
    LUMEN_MF_X_FLIP | LUMEN_MF_CLOSED_FORM | LUMEN_MF_T1,                                                    \
    LUMEN_P_T1, LUMEN_P_M0, LUMEN_P_NONE, LUMEN_P_NONE)                                                      \
  X(LUMEN_MODEL_VFA_2PT, "vfa-2pt", vfa_2pt, LUMEN_D_R1,                                                     \
    LUMEN_MF_X_FLIP | LUMEN_MF_CLOSED_FORM | LUMEN_MF_T1,                                                    \
    LUMEN_P_T1, LUMEN_P_M0, LUMEN_P_NONE, LUMEN_P_NONE)                                                      \
  X(LUMEN_MODEL_IR, "ir", ir, LUMEN_D_R1,                                                                    \
    LUMEN_MF_X_TIMES | LUMEN_MF_X_TI | LUMEN_MF_USES_TR | LUMEN_MF_LANES_F32 | LUMEN_MF_T1,                  \
    LUMEN_P_T1, LUMEN_P_M0, LUMEN_P_NONE, LUMEN_P_NONE)                                                      \
  X(LUMEN_MODEL_SR, "sr", sr, LUMEN_D_R1,                                                                    \
    LUMEN_MF_X_TIMES | LUMEN_MF_LANES_F32 | LUMEN_MF_T1,                                                     \
    LUMEN_P_T1, LUMEN_P_M0, LUMEN_P_NONE, LUMEN_P_NONE)

/* Flags of a row. What the x values are and what the model reads: */
#define LUMEN_MF_AIF 0x01          /* the model needs an AIF (the plasma concentration cp) */
#define LUMEN_MF_X_TIMES 0x02      /* x values are times (TI for ir) that must increase strictly */
#define LUMEN_MF_FITS_DCE 0x04     /* a DCE fit model: time in minutes (lumen_model_is_dce) */
#define LUMEN_MF_DCE (LUMEN_MF_AIF | LUMEN_MF_X_TIMES | LUMEN_MF_FITS_DCE)
#define LUMEN_MF_X_FLIP 0x08       /* x values are flip angles (scaled by the B1 const); needs TR > 0 */
#define LUMEN_MF_USES_R10 0x10     /* reads the per-curve const LUMEN_FIT_CONST_R10 (must be > 0) */
#define LUMEN_MF_USES_R1 0x400     /* reads the relaxivity option r1 (must be > 0, in 1/(mM s)) */
#define LUMEN_MF_USES_TR 0x800     /* reads the TR option, >= 0 s (0 = long TR; X_FLIP needs TR > 0) */
#define LUMEN_MF_X_TI 0x100000    /* x values are inversion times (--inversion-times / --ti, the
                                      InversionTime sidecar field), with LUMEN_MF_X_TIMES */
#define LUMEN_MF_T1 0x200000      /* a T1 mapping method: fits T1 (s), M0 (lumen t1 --method) */
#define LUMEN_MF_AREAS 0x1000      /* no fit: the result is the areas under the curve (lumen_auc,
                                      the AUC window option > 0), no parameters */
/* Which solvers implement it: */
#define LUMEN_MF_CLOSED_FORM 0x20  /* the result is the closed-form linear start (no iterations) */
#define LUMEN_MF_LANES_F32 0x40    /* the float32 SIMD lane solver implements it (src/cpu/lm_simd*) */
#define LUMEN_MF_LANES_F64 0x80    /* the float64 SIMD lane solver implements it */
/* How the solvers treat it (src/solver/driver_impl.inc, src/fit/plan.c, src/fit/lane_impl.inc;
   a new model usually has none of these): */
#define LUMEN_MF_SOLVE_F64 0x100   /* solved in float64 with geodesic acceleration on every tier (long
                                      curved valleys that float32 and plain LM do not resolve) */
#define LUMEN_MF_ACC_F64 0x200     /* the accelerated tiers solve it in float64 whatever the precision
                                      option (float32 rounds chi2 above the changes its fits must
                                      resolve); the standard tier is float64 anyway */
#define LUMEN_MF_RESTART_KTRANS 0x2000 /* a fit that did not converge is restarted from 10x and 100x
                                          the configured start of p0 (ETM's Ktrans) */
#define LUMEN_MF_ESCAPE_STARTS 0x4000  /* a fit that failed or rests on a bound is retried from up to
                                          4 escape starts drawn in the descriptors' draw ranges */
#define LUMEN_MF_STAGED 0x8000     /* 2CXM's staged starts: the n_starts option's further starts where
                                      the primary fit failed, then escape starts judged on p0..p2; no
                                      retry from the configured start (DF(cxm_next_stage)) */
#define LUMEN_MF_FIT_E 0x10000     /* the fit vector has E = Ktrans / p3 in place of the public
                                      Ktrans (lumen_model_to_public, the intervals of Ktrans) */
/* The model is one whose equation the float32 lane solver also has in a vector form of its own
   (src/cpu/lm_simd_impl.inc: the linear start on vectors; without one of these the lanes take the
   scalar lumen_linear_start per curve): */
#define LUMEN_MF_TOFTS_FORM 0x20000    /* Tofts (2 parameters) / ETM (3, + vp cp): Murase's linear
                                          start, and the model and its sums fused in one pass */
#define LUMEN_MF_PATLAK_LINEAR 0x40000 /* Patlak, y = p0 icp + p1 cp, linear in its parameters: the
                                          start is the least-squares fit (closed form unweighted) */
#define LUMEN_MF_2CUM_FORM 0x80000     /* 2CUM: its linear start */
#define LUMEN_MF_2CXM_FORM 0x400000    /* 2CXM: Flouri's linear start (on the double lanes' vectors);
                                          its two exponentials, Ct = a G(K+) + b G(K-): the grid start
                                          of src/fit/cxm_grid.h applies (test builds only, measured
                                          in docs/BENCHMARKS.md; not the default) */
#define LUMEN_MF_FXR_FORM 0x800000     /* FXR: Murase's start on the fast-exchange Ct = (R1 - R10)/r1
                                          (on the double lanes' vectors), tau at its default */

/* Fit-parameter descriptors: F(k, present, public name, unit, fit name, start, physical lo, hi,
   ROCKETSHIP lo, hi, draw lo, hi) for slot k, in the units of docs/MODELS.md. The fit name differs
   from the public one for 2CXM's E = Ktrans / Fp only (its public Ktrans defaults are Tofts').
   The draw range is where LUMEN_MF_ESCAPE_STARTS draws further starts (log-uniform, inside the
   bounds; 0, 0: the bounds). */
#define LUMEN_P_NONE(F, k) F(k, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
#define LUMEN_P_KTRANS(F, k) F(k, 1, "Ktrans", "1/min", "Ktrans", 2e-4, 0.0, 5.0, 1e-7, 2.0, 0.001, 0.5)
#define LUMEN_P_VE(F, k) F(k, 1, "ve", "1", "ve", 0.2, 1e-4, 1.0, 0.02, 1.0, 0.0, 0.0)
#define LUMEN_P_VP(F, k) F(k, 1, "vp", "1", "vp", 0.02, 0.0, 1.0, 0.001, 1.0, 0.0, 0.0)
#define LUMEN_P_FP(F, k) F(k, 1, "Fp", "1/min", "Fp", 0.35, 1e-4, 20.0, 1e-4, 20.0, 0.05, 5.0)
#define LUMEN_P_TP(F, k) F(k, 1, "Tp", "min", "Tp", 0.12, 0.0, 10.0, 0.0, 1.5, 0.02, 1.0)
#define LUMEN_P_2CXM_E(F, k) F(k, 1, "Ktrans", "1/min", "E", 0.1, 0.0, 0.999, 0.0, 0.999, 0.01, 0.9)
#define LUMEN_P_2CXM_VE(F, k) F(k, 1, "ve", "1", "ve", 0.15, 1e-4, 1.0, 0.05, 1.0, 0.05, 0.8)
#define LUMEN_P_2CXM_VP(F, k) F(k, 1, "vp", "1", "vp", 0.02, 0.001, 1.0, 0.001, 1.0, 0.005, 0.3)
#define LUMEN_P_TAU(F, k) F(k, 1, "tau", "min", "tau", 0.01, 0.0, 100.0, 0.0, 100.0, 0.0, 0.0)
#define LUMEN_P_T1(F, k) F(k, 1, "T1", "s", "T1", 1.0, 1e-4, 10.0, 1e-4, 10.0, 0.0, 0.0)
#define LUMEN_P_M0(F, k) F(k, 1, "M0", "a.u.", "M0", 1.0, 0.0, 1e30, 0.0, 1e30, 0.0, 0.0)

/* Derived-value lists: F(name, unit) per value. */
#define LUMEN_D_NONE(F)
#define LUMEN_D_KEP(F) F("kep", "1/min")
#define LUMEN_D_2CUM(F) F("E", "1") F("PS", "1/min") F("vp", "1")
#define LUMEN_D_2CXM(F) F("E", "1") F("PS", "1/min") F("kep", "1/min")
#define LUMEN_D_R1(F) F("R1", "1/s")
#define LUMEN_D_AUC(F) F("AUC", "mM min") F("AUC_window", "mM min") F("AUC_norm", "1") F("AUC_window_norm", "1")

/* Every model, by its lumen name (the rows of LUMEN_MODEL_TABLE, in order):
     LUMEN_MODEL_TOFTS = 0     "tofts":      Ktrans, ve
     LUMEN_MODEL_ETOFTS        "etofts":     Ktrans, ve, vp
     LUMEN_MODEL_PATLAK        "patlak":     Ktrans, vp
     LUMEN_MODEL_2CUM          "2cum":       Ktrans, Fp, Tp
     LUMEN_MODEL_2CXM          "2cxm":       Ktrans, ve, vp, Fp
     LUMEN_MODEL_FXR           "fxr":        Ktrans, ve, tau (fits R1(t))
     LUMEN_MODEL_AUC           "auc":        no fit
     LUMEN_MODEL_VFA           "vfa":        T1, M0 (nonlinear SPGR)
     LUMEN_MODEL_VFA_LINEAR    "vfa-linear": T1, M0 (DESPOT1, closed form)
     LUMEN_MODEL_VFA_2PT       "vfa-2pt":    T1, M0 (two angles, closed form)
     LUMEN_MODEL_IR            "ir":         T1, M0 (magnitude inversion recovery)
     LUMEN_MODEL_SR            "sr":         T1, M0 (saturation recovery) */
#define LUMEN_MODEL_ENUM_(id, name, fn, derived, flags, p0, p1, p2, p3) id,
typedef enum lumen_model {
  LUMEN_MODEL_TABLE(LUMEN_MODEL_ENUM_)
  LUMEN_MODEL_COUNT
} lumen_model;
#undef LUMEN_MODEL_ENUM_

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
/* The LUMEN_MF_* flags of the model's row of LUMEN_MODEL_TABLE (what its x values are, what it
   reads, how it is solved); 0 for an unknown value. For bindings, which have no table. */
LUMEN_API int lumen_model_flags_of(lumen_model model);
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
