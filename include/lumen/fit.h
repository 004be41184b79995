/* lumen: batched model fitting (DCE pharmacokinetics and T1), plan then execute.

   1. lumen_fit_options_init(&opts); set opts.model and whatever differs from the defaults.
   2. lumen_fit_plan_create(ctx, &opts, n, x, cp, &plan): fixes the model, the sample grid, the
      AIF, bounds and options, chooses the backend tier and precomputes what every curve shares.
   3. lumen_fit_execute(ctx, plan, n_curves, data, consts, &results) as often as needed, from as
      many threads as wanted (a plan is read-only once created). Buffers are the caller's.
   4. lumen_fit_plan_destroy(plan).

   Units (see docs/FITTING.md and src/models/model.h):
     DCE models (tofts, etofts, patlak, 2cum, 2cxm, fxr, auc): x = sample times in MINUTES,
       cp = PLASMA concentration in mM at those times; data = tissue concentration in mM
       (fxr: R1(t) in 1/s). Rates (Ktrans, kep, Fp, PS) in 1/min, Tp and tau in minutes.
     vfa, vfa-linear, vfa-2pt: x = nominal flip angles in RADIANS, opts.tr = TR in seconds.
     ir: x = inversion times in seconds (opts.tr = TR in seconds, 0 = infinitely long TR).
     sr: x = saturation-recovery times in seconds.  T1 results in seconds.

   Parameter order: lumen_model_param_name() (include/lumen/models.h). The per-parameter
   overrides in the options (start, lo, hi, fixed) are indexed by FIT parameter, which is the
   same as the public order for every model except 2cxm, whose fit parameters are
   (E, ve, vp, Fp) with E = Ktrans / Fp: lumen_fit_param_name() names them. */
#ifndef LUMEN_FIT_H
#define LUMEN_FIT_H
#include "lumen/export.h"

#include <stdint.h>
#include "lumen/context.h"
#include "lumen/models.h"
#include "lumen/fit_state.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Arithmetic of the accelerated solver (the standard tier is always float64). */
typedef enum lumen_fit_precision {
  LUMEN_FIT_FLOAT32 = 0,  /* default */
  LUMEN_FIT_FLOAT64,
  LUMEN_FIT_PRECISION_COUNT
} lumen_fit_precision;

/* Convolution of the AIF with an exponential kernel. */
typedef enum lumen_fit_conv {
  LUMEN_FIT_CONV_EXACT = 0,   /* exact for a Cp that is linear between samples (default) */
  LUMEN_FIT_CONV_TRAPEZOID,   /* ROCKETSHIP's / Gpufit's trapezoid rule */
  LUMEN_FIT_CONV_COUNT
} lumen_fit_conv;

/* The solver tiers, in the order `auto` probes them. */
typedef enum lumen_fit_tier {
  LUMEN_FIT_TIER_CUDA = 0,    /* "cuda": accelerated solver on a CUDA device */
  LUMEN_FIT_TIER_CPU,         /* "cpu": accelerated solver, OpenMP over curves */
  LUMEN_FIT_TIER_CPU_SINGLE,  /* "cpu_single": accelerated solver on one thread */
  LUMEN_FIT_TIER_STANDARD,    /* "standard": GSL, float64, the numerical oracle */
  LUMEN_FIT_TIER_COUNT
} lumen_fit_tier;

/* "cuda", "cpu", "cpu_single", "standard"; "unknown" otherwise. */
LUMEN_API const char *lumen_fit_tier_name(lumen_fit_tier tier);
/* Checks a backend request: "auto", "accelerated", "standard", "cpu", "cpu_single", "cuda" or a
   ROCKETSHIP alias ("gpufit" -> accelerated, "cpu" -> standard when rocketship_names is set,
   "gpufit_cuda" -> cuda, "cpufit_cpu" / "gpufit_cpu_fallback" -> cpu, "pure_cpu" -> standard).
   Writes the canonical request name ("auto", "accelerated", ...) into canonical (may be NULL).
   Note: lumen's own name "cpu" is the OpenMP tier; ROCKETSHIP's "cpu" meant its pure-MATLAB
   path, which is lumen's standard tier: pass rocketship_names = 1 (or prefix "rocketship:")
   to read names the ROCKETSHIP way. */
LUMEN_API lumen_status lumen_fit_backend_parse(lumen_ctx *ctx, const char *request, int rocketship_names,
                                     char *canonical, size_t canonical_size);
LUMEN_API const char *lumen_fit_precision_name(lumen_fit_precision p);  /* "float32", "float64" */
LUMEN_API const char *lumen_fit_conv_name(lumen_fit_conv c);            /* "exact", "trapezoid" */
/* "physical", "rocketship" (lumen_fit_bounds_preset, include/lumen/models.h); "unknown" otherwise. */
LUMEN_API const char *lumen_fit_bounds_preset_name(lumen_fit_bounds_preset preset);
/* Parses a preset name (case-insensitive); LUMEN_ERR_INVALID_ARGUMENT with a message naming the
   choices otherwise. */
LUMEN_API lumen_status lumen_fit_bounds_preset_parse(lumen_ctx *ctx, const char *name, lumen_fit_bounds_preset *out);

/* Number and names of the FIT parameters (== public ones except 2cxm: "E" first). */
LUMEN_API int lumen_fit_param_count(lumen_model model);
LUMEN_API const char *lumen_fit_param_name(lumen_model model, int i);
/* Derived values reported beside the parameters (kep, PS, E, vp of 2cum, R1, AUC values...). */
LUMEN_API int lumen_fit_derived_count(lumen_model model);
LUMEN_API const char *lumen_fit_derived_name(lumen_model model, int i);
LUMEN_API const char *lumen_fit_derived_unit(lumen_model model, int i);

/* Plausible ranges where a unit is easily confused, shared by lumen_fit_plan_create and the
   pipelines' checks (src/pipeline/plausible.c): an SPGR TR in seconds (0.5..100 ms), a gadolinium
   relaxivity in 1/(mM s). */
#define LUMEN_SPGR_TR_MIN_S 0.5e-3
#define LUMEN_SPGR_TR_MAX_S 0.1
#define LUMEN_RELAXIVITY_MIN 1.0
#define LUMEN_RELAXIVITY_MAX 50.0
/* the longest span of a DCE time grid (minutes): one acquisition lasts less than 4 h; a grid in
   seconds given as minutes is refused by lumen_fit_plan_create naming the likely mistake */
#define LUMEN_DCE_SPAN_MAX_MIN 240.0

/* LUMEN_FIT_MAX_PARAMS: lumen/models.h */
#define LUMEN_FIT_MAX_DERIVED 6

typedef struct lumen_fit_options {
  lumen_model model;             /* default LUMEN_MODEL_TOFTS */
  double tolerance;              /* converged when a (moderately damped) step changes chi2 by less
                                    than tol chi2 (or the rounding floor); 1e-6. See docs/FITTING.md */
  int max_iterations;            /* 200 */
  /* Per fit parameter; NaN (the default) = the model's default in bounds_preset
     (lumen_model_param_defaults_preset). An explicit start overrides the closed-form linear
     start for that parameter; an explicit lo / hi overrides the preset's. */
  double start[LUMEN_FIT_MAX_PARAMS];
  double lo[LUMEN_FIT_MAX_PARAMS];
  double hi[LUMEN_FIT_MAX_PARAMS];
  unsigned char fixed[LUMEN_FIT_MAX_PARAMS];  /* 1 = held at its start value */
  lumen_fit_bounds_preset bounds_preset;      /* default LUMEN_FIT_BOUNDS_PHYSICAL */
  const double *weights;         /* n weights (1/sigma^2) shared by all curves, or NULL (all 1);
                                    copied by lumen_fit_plan_create */
  lumen_fit_precision precision; /* accelerated tiers: float32 (default) or float64 */
  lumen_fit_conv conv;           /* default exact */
  int linear_start;              /* 1 (default): start from the closed-form linear fit where one exists */
  int confidence;                /* 1 (default): compute 95 % confidence intervals when asked for */
  int n_starts;                  /* 2cxm: starts in all (fixed + log-uniform draws); default 4 */
  int fit_delay;                 /* 1: also fit an arterial delay (DCE models) */
  double delay_lo, delay_hi;     /* delay bounds in minutes; default [0, 0.5] */
  const char *backend;           /* "auto" (default, NULL = auto) or a tier / alias, see above */
  int rocketship_names;          /* 1: read backend names as ROCKETSHIP does ("cpu" = standard) */
  int force_cpu;                 /* 1 with "auto": use the standard tier (ROCKETSHIP's force_cpu) */
  double tr;                     /* vfa family, ir: repetition time in seconds (0 = unset; ir: infinite) */
  double r1;                     /* fxr: relaxivity in 1/(mM s); default LUMEN_DEFAULT_RELAXIVITY (4.5) */
  double auc_window;             /* auc: window length in minutes from injection; default 1.5 (90 s) */
  double auc_t0;                 /* auc: injection time in minutes; NaN (default) = first sample */
} lumen_fit_options;

/* Fills the defaults above. Always call it before setting fields. */
LUMEN_API void lumen_fit_options_init(lumen_fit_options *opts);

typedef struct lumen_fit_plan lumen_fit_plan;

/* Creates a plan for n samples at x (see the units above; strictly increasing for DCE, IR and
   SR grids) and, for DCE models, the plasma AIF cp at the same times (NULL otherwise).
   Checks the options (bounds lo <= hi, starts inside the bounds, tolerance > 0, ...) and fails
   with LUMEN_ERR_INVALID_ARGUMENT and a message naming the offending value. Also refuses values
   in a likely wrong unit, naming the mistake: vfa family flip angles x outside (0, pi] (degrees
   given for radians), a vfa family TR outside [0.5e-3, 0.1] s (milliseconds given for seconds),
   an fxr relaxivity r1 outside [1, 50] 1/(mM s). Selects the backend tier (see
   lumen_fit_plan_backend). */
LUMEN_API lumen_status lumen_fit_plan_create(lumen_ctx *ctx, const lumen_fit_options *opts, int n, const double *x,
                                   const double *cp, lumen_fit_plan **out);
LUMEN_API void lumen_fit_plan_destroy(lumen_fit_plan *plan);  /* NULL is allowed */
/* Checks options as lumen_fit_plan_create does (backend name, bounds against starts, fixed
   parameters, model options), on a stand-in sample grid, without data: front ends call it to
   report a usage error before they read or write anything. Same status and message as the plan. */
LUMEN_API lumen_status lumen_fit_options_check(lumen_ctx *ctx, const lumen_fit_options *opts);

LUMEN_API int lumen_fit_plan_samples(const lumen_fit_plan *plan);     /* n */
LUMEN_API lumen_model lumen_fit_plan_model(const lumen_fit_plan *plan);
/* Backend requested (canonical), selected at plan time, and the reason for the choice. */
LUMEN_API const char *lumen_fit_plan_backend_requested(const lumen_fit_plan *plan);
LUMEN_API const char *lumen_fit_plan_backend_selected(const lumen_fit_plan *plan);
LUMEN_API const char *lumen_fit_plan_backend_reason(const lumen_fit_plan *plan);
/* The effective start value and bounds of fit parameter k (the options' overrides, else the
   bounds preset's defaults); any pointer may be NULL. LUMEN_ERR_INVALID_ARGUMENT for a bad k. */
LUMEN_API lumen_status lumen_fit_plan_param_bounds(const lumen_fit_plan *plan, int k, double *start, double *lo, double *hi);
/* The model curve a fit describes, on the plan's samples (its AIF, convolution rule, TR and
   relaxivity): y[0..n-1] for the PUBLIC parameters params (lumen_model_param_count values, as
   lumen_fit_results.params holds them), per-curve consts (LUMEN_FIT_NCONSTS values, NULL for the
   defaults) and an arterial delay in minutes (0 or NaN: none; as lumen_fit_results.delay).
   Used for fitted-curve plots and residuals. LUMEN_ERR_INVALID_ARGUMENT for a NULL pointer or a
   model without parameters (auc), LUMEN_ERR_OUT_OF_MEMORY. Thread-safe (the plan is read only). */
LUMEN_API lumen_status lumen_fit_plan_eval(const lumen_fit_plan *plan, const double *params, const double *consts,
                                 double delay_min, double *y);

#define LUMEN_FIT_NAME_MAX 64
#define LUMEN_FIT_REASON_MAX 512

/* Caller-owned output buffers, n_curves rows each. Only params and state are required; every
   other pointer may be NULL. Row-major: params[c * np + k]. */
typedef struct lumen_fit_results {
  double *params;       /* n_curves x lumen_model_param_count(model), public parameters */
  int32_t *state;       /* n_curves, lumen_fit_state */
  double *derived;      /* n_curves x lumen_fit_derived_count(model) */
  double *chi2;         /* n_curves, weighted sum of squared residuals (sse) */
  double *r2;           /* n_curves, coefficient of determination */
  int32_t *iterations;  /* n_curves, LM iterations (summed over starts / delay candidates) */
  double *ci_lo;        /* n_curves x np: 95 % confidence interval, public parameters */
  double *ci_hi;
  double *delay;        /* n_curves, fitted arterial delay in minutes (NaN unless fit_delay) */
  int32_t *bound_mask;  /* n_curves: bit 2k = fit parameter k rests on its lower bound, bit 2k+1 =
                           on its upper bound (fixed parameters and closed-form models: never);
                           0 for curves without parameter values */
  /* Filled by lumen_fit_execute: */
  char backend_requested[LUMEN_FIT_NAME_MAX];
  char backend_selected[LUMEN_FIT_NAME_MAX];
  char backend_used[LUMEN_FIT_NAME_MAX];     /* "cpu", or "cpu+standard" when curves fell through */
  char reason[LUMEN_FIT_REASON_MAX];
  int64_t curves_per_tier[LUMEN_FIT_TIER_COUNT];  /* curves whose result came from each tier */
  int64_t state_counts[LUMEN_FIT_STATE_COUNT];
  /* curves whose final fit has values (converged, at_bound, max_iterations) with fit parameter k
     on its lower / upper bound (the bits of bound_mask, counted even when bound_mask is NULL) */
  int64_t at_lower[LUMEN_FIT_MAX_PARAMS], at_upper[LUMEN_FIT_MAX_PARAMS];
  double seconds;                            /* wall time of the execute call */
  double kernel_seconds;  /* time the GPU ran the fitting kernels (tier cuda; summed over devices, a
                             device's overlapping kernels counted once); 0 when no curve ran on a GPU */
} lumen_fit_results;

/* Fits n_curves curves of n samples each (row-major), float or double data.
   consts: n_curves x LUMEN_FIT_NCONSTS per-curve constants (fxr: pre-contrast R1 in 1/s;
   vfa family: B1 scale) or NULL for the defaults. Per-curve problems (NaN/Inf samples, an
   all-zero curve, ...) give a per-curve state and NaN parameters, never an error status.
   Thread-safe for one plan from several threads; reports progress and honours cancellation. */
/* LUMEN_FIT_NCONSTS, LUMEN_FIT_CONST_R10 and LUMEN_FIT_CONST_B1: lumen/models.h */
LUMEN_API lumen_status lumen_fit_execute(lumen_ctx *ctx, const lumen_fit_plan *plan, int64_t n_curves, const float *data,
                               const float *consts, lumen_fit_results *results);
LUMEN_API lumen_status lumen_fit_execute_f64(lumen_ctx *ctx, const lumen_fit_plan *plan, int64_t n_curves,
                                   const double *data, const double *consts, lumen_fit_results *results);

#ifdef __cplusplus
}
#endif
#endif
