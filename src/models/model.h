/* lumen model math: the contract between the models and the solvers.

   Every formula (value, analytic Jacobian, closed-form linear start) is written ONCE in
   src/models/model_impl.inc and instantiated for float and double:

     #include "models/models_f32.h"   ->  lumen_grid_f32, lumen_model_eval_f32(), ...
     #include "models/models_f64.h"   ->  lumen_grid_f64, lumen_model_eval_f64(), ...

   Both headers may be included in the same translation unit. All functions are LUMEN_HD
   (static inline in C, __host__ __device__ under nvcc), call no libc function except math,
   allocate nothing and touch no global state, so the CPU solvers, the GSL oracle and the CUDA
   kernels share the same code. This header holds the type-independent part.

   ---------------------------------------------------------------- units
   DCE models: time in MINUTES; Ktrans, Fp, PS, kep in 1/min; ve, vp, E fractions; Tp and the
   FXR intracellular water lifetime tau in minutes; concentrations in mM; the grid's cp is the
   PLASMA concentration (Cp = Cb / (1 - Hct) is the caller's business).
   FXR output R1 is in 1/s (r1 in 1/(mM s), R10 in 1/s; the model converts tau to seconds).
   T1 models: T1 in SECONDS; M0 in signal units; the grid's x values (g->t) are
     VFA (vfa, vfa-linear, vfa-2pt): nominal flip angles in RADIANS (scaled by the B1 const),
     IR: inversion times TI in seconds (g->tr = TR in seconds, 0 = infinitely long TR),
     SR: saturation-recovery times in seconds.

   ---------------------------------------------------------------- solver's parameter vector
   The solver fits the "fit parameters" p[0..np-1] below; they equal the public parameters of
   include/lumen/models.h for every model except 2CXM, where the fit vector is
   (E, ve, vp, Fp) with E = Ktrans / Fp in [0, 1) (a box, always a valid model, and better
   conditioned; public Ktrans = E Fp). Convert with lumen_model_to_public_fXX() and
   lumen_model_from_public_fXX(). Defaults and bounds (lumen_model_defaults_preset) are given
   for the fit parameters, in the units above.

     model       fit parameters          consts used
     tofts       Ktrans ve               -
     etofts      Ktrans ve vp            -
     patlak      Ktrans vp               -
     2cum        Ktrans Fp Tp            -
     2cxm        E ve vp Fp              -
     fxr         Ktrans ve tau           LUMEN_FIT_CONST_R10
     auc         (none; see lumen_auc_fXX)
     vfa         T1 M0                   LUMEN_FIT_CONST_B1
     vfa-linear  T1 M0 (closed form)     LUMEN_FIT_CONST_B1
     vfa-2pt     T1 M0 (closed form)     LUMEN_FIT_CONST_B1
     ir          T1 M0                   -
     sr          T1 M0                   -

   ---------------------------------------------------------------- evaluation
   void lumen_model_eval_fXX(lumen_model m, const lumen_grid_fXX *g, const T *consts,
                             const T *p, T *y, T *jac, T *work);
     y[i], i < g->n: model value at sample i. jac: NULL or g->n * np values, column-major,
     jac[k * n + i] = dy_i / dp_k (k indexes the fit parameters). work: scratch of
     lumen_model_work_size(m, n) elements (may be NULL when that is 0). consts: per-curve
     constants, LUMEN_FIT_NCONSTS values indexed by LUMEN_CONST_*, or NULL for the defaults.
   Per-model functions lumen_eval_<model>_fXX(g, consts, p, y, jac, work) have the same shape.

   Convolution with exp(-k t): O(N) recursion, exact for a Cp that is linear between samples
   (g->conv = LUMEN_CONV_EXACT, the default) or ROCKETSHIP's trapezoid rule
   (LUMEN_CONV_TRAPEZOID); both start from C(t_0) = 0 and accept non-uniform grids.

   ---------------------------------------------------------------- linear starts
   int lumen_linear_start_fXX(lumen_model m, const lumen_grid_fXX *g, const T *consts,
                              const T *y, T *p_out);
     Closed-form estimate of the fit parameters from the data y. Returns 0 on success,
     LUMEN_START_SOLVED when the start is already the unweighted least-squares solution (2CXM
     when its refinement by variable projection converged), else non-zero when the small
     normal-equation system is singular or the back-transform is not physical; p_out is then
     filled with the default start values. Exact for noise-free data
     (Tofts/ETM via Murase 2004 up to the trapezoid integration of Ct, Patlak exactly with
     bounds, 2CUM/2CXM via Flouri 2016, VFA DESPOT1 and two-angle exactly; IR/SR give rough
     starts only). The results of vfa-linear and vfa-2pt ARE these starts.
*/
#ifndef LUMEN_MODELS_MODEL_H
#define LUMEN_MODELS_MODEL_H

#include <stddef.h>
#include <string.h>
#include "models/hd.h"
#include "lumen/models.h"

/* lumen_linear_start's return: a start that is the unweighted least-squares solution, converged
   by LM's rule at the default tolerance (chi2 changed by less than LUMEN_START_SOLVED_TOL chi2 in
   a step with lambda <= 1); the accelerated tiers take it as the fit when it is strictly inside
   the box and the fit is unweighted (solver/driver_impl.inc, DF(linear_exact)). */
#define LUMEN_START_SOLVED 2
#define LUMEN_START_SOLVED_TOL 1e-6

/* Runs of equal steps a grid keeps (lumen_grid.n_runs). */
#define LUMEN_GRID_RUNS 4
/* Steps with jitter (lumen_grid.jit): every step within LUMEN_GRID_JIT_RTOL of their mean. A
   convolution then interpolates its weights in the step from LUMEN_CONV_JIT_NODES equally spaced
   steps across the grid's range, where |k| times the range's half-width is at most
   LUMEN_CONV_JIT_KH (the interpolation's error is then below ~1e-14 of the weights: the 7th
   derivative of e^(-k dt) over 7! on a 7-node grid); other rates form them per sample. */
#define LUMEN_GRID_JIT_RTOL 0.05
#define LUMEN_CONV_JIT_NODES 7
#define LUMEN_CONV_JIT_KH 0.05

/* Convolution rule (g->conv). */
#define LUMEN_CONV_EXACT     0  /* exact for piecewise-linear Cp (default) */
#define LUMEN_CONV_TRAPEZOID 1  /* trapezoid rule on Cp(tau) exp(-k (t - tau)): ROCKETSHIP/Gpufit */

/* Per-curve constants: slots of the consts array (LUMEN_FIT_CONST_*, LUMEN_FIT_NCONSTS: lumen/models.h). */
#define LUMEN_DEFAULT_R10 1.0
#define LUMEN_DEFAULT_B1  1.0
#define LUMEN_DEFAULT_FW  0.8   /* FXR water fraction */

/* Branch-free select used in per-sample code (a SIMD instantiation may redefine it). */
#ifndef LUMEN_SEL
#define LUMEN_SEL(c, a, b) ((c) ? (a) : (b))
#endif
/* Exact-convolution weights use a series below x = k dt = LUMEN_SERIES_X (LUMEN_SERIES_TERMS
   terms: truncation < 1e-16 there) and expm1-based closed forms above. */
#define LUMEN_SERIES_X 0.5
#define LUMEN_SERIES_TERMS 13

/* Per-model facts, generated from LUMEN_MODEL_TABLE (include/lumen/models.h). */
#define LUMEN_MT_PRESENT_(k, present, name, unit, fit_name, st, plo, phi, rlo, rhi, dlo, dhi) (present)
#define LUMEN_MT_NP_(p0, p1, p2, p3) \
  (p0(LUMEN_MT_PRESENT_, 0) + p1(LUMEN_MT_PRESENT_, 1) + p2(LUMEN_MT_PRESENT_, 2) + p3(LUMEN_MT_PRESENT_, 3))

/* Number of fit parameters of a model (0 for AUC, -1 for an unknown value). */
LUMEN_HD int lumen_model_np(lumen_model m) {
  switch (m) {
#define LUMEN_MT_NP_CASE_(id, name, fn, derived, flags, p0, p1, p2, p3) \
  case id: return LUMEN_MT_NP_(p0, p1, p2, p3);
    LUMEN_MODEL_TABLE(LUMEN_MT_NP_CASE_)
#undef LUMEN_MT_NP_CASE_
    default: return -1;
  }
}

/* The LUMEN_MF_* flags of a model (0 for an unknown value). */
LUMEN_HD int lumen_model_flags(lumen_model m) {
  switch (m) {
#define LUMEN_MT_FLAGS_CASE_(id, name, fn, derived, flags, p0, p1, p2, p3) \
  case id: return (flags);
    LUMEN_MODEL_TABLE(LUMEN_MT_FLAGS_CASE_)
#undef LUMEN_MT_FLAGS_CASE_
    default: return 0;
  }
}

/* 1 when the model is a DCE model (time in minutes, needs cp/icp), 0 for T1 models and AUC. */
LUMEN_HD int lumen_model_is_dce(lumen_model m) { return (lumen_model_flags(m) & LUMEN_MF_FITS_DCE) != 0; }

/* 1 when the model's result is its closed-form linear start (no iterations). */
LUMEN_HD int lumen_model_is_closed_form(lumen_model m) {
  return (lumen_model_flags(m) & LUMEN_MF_CLOSED_FORM) != 0;
}

/* Scratch elements lumen_model_eval needs for n samples (currently 0 for every model; keep
   passing a buffer of this size so that the interface survives future models). */
LUMEN_HD long lumen_model_work_size(lumen_model m, int n) {
  (void)m; (void)n;
  return 0;
}

/* Default start values and box bounds of the fit parameters in a bounds preset (preset: a
   lumen_fit_bounds_preset, include/lumen/models.h; units above), from the LUMEN_P_* descriptors of
   LUMEN_MODEL_TABLE: start, then [lo, hi] in the physical preset (the default) or in ROCKETSHIP's.
   Any pointer may be NULL. Returns np, or -1 for an unknown model or preset.
   Notes: M0 has no data-free start (1 here; use the linear start); 2CXM's E start 0.1 in
   [0, 0.999]; 2CXM's vp stays above 0 (the exchange rates divide by it; 2CXM's ve at 1e-4 is the
   Tofts floor); 2CUM's Tp lower bound 0 is ROCKETSHIP's: the model evaluates Tp < 1e-9 min as
   1e-9 min. T1 bounds (0, 10 s] are taken as [1e-4, 10] s. Ktrans = 0 (kep = 0) and vp = 0 are
   valid points of the Tofts-family models (the convolution weights take k = 0). */
LUMEN_HD int lumen_model_defaults_preset(lumen_model m, int preset, double *start, double *lo, double *hi) {
  double s[LUMEN_FIT_MAX_PARAMS] = {0}, l[LUMEN_FIT_MAX_PARAMS] = {0}, h[LUMEN_FIT_MAX_PARAMS] = {0};
  const int np = lumen_model_np(m);
  const int rs = preset == LUMEN_FIT_BOUNDS_ROCKETSHIP;
  if (preset < 0 || preset >= LUMEN_FIT_BOUNDS_PRESET_COUNT) return -1;
#define LUMEN_MT_DEF_(k, present, name, unit, fit_name, st, plo, phi, rlo, rhi, dlo, dhi) \
  s[k] = (st), l[k] = rs ? (rlo) : (plo), h[k] = rs ? (rhi) : (phi);
#define LUMEN_MT_DEF_CASE_(id, name, fn, derived, flags, p0, p1, p2, p3)                         \
  case id:                                                                                 \
    p0(LUMEN_MT_DEF_, 0) p1(LUMEN_MT_DEF_, 1) p2(LUMEN_MT_DEF_, 2) p3(LUMEN_MT_DEF_, 3) break;
  switch (m) {
    LUMEN_MODEL_TABLE(LUMEN_MT_DEF_CASE_)
    default:
      return np;
  }
#undef LUMEN_MT_DEF_
#undef LUMEN_MT_DEF_CASE_
  for (int k = 0; k < np; ++k) {
    if (start) start[k] = s[k];
    if (lo) lo[k] = l[k];
    if (hi) hi[k] = h[k];
  }
  return np;
}

/* The draw ranges of the fit parameters (LUMEN_MF_ESCAPE_STARTS draws further starts there; 0, 0:
   the bounds), from the LUMEN_P_* descriptors; slots past np are 0. */
LUMEN_HD void lumen_model_draw_ranges(lumen_model m, double *lo, double *hi) {
  for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) lo[k] = hi[k] = 0;
#define LUMEN_MT_DRAW_(k, present, name, unit, fit_name, st, plo, phi, rlo, rhi, dlo, dhi) \
  lo[k] = (dlo), hi[k] = (dhi);
#define LUMEN_MT_DRAW_CASE_(id, name, fn, derived, flags, p0, p1, p2, p3)                        \
  case id:                                                                                      \
    p0(LUMEN_MT_DRAW_, 0) p1(LUMEN_MT_DRAW_, 1) p2(LUMEN_MT_DRAW_, 2) p3(LUMEN_MT_DRAW_, 3) break;
  switch (m) {
    LUMEN_MODEL_TABLE(LUMEN_MT_DRAW_CASE_)
    case LUMEN_MODEL_COUNT: break;
  }
#undef LUMEN_MT_DRAW_
#undef LUMEN_MT_DRAW_CASE_
}

/* The names of the rows whose flags include every bit of flags (0: every row), in table order
   and ", "-separated ("tofts, etofts, ..."), into buf (size > 0): the model lists of messages and
   help texts. Host only. Returns buf. */
static inline const char *lumen_model_names_with(int flags, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (int m = 0; m < LUMEN_MODEL_COUNT; ++m) {
    if ((lumen_model_flags((lumen_model)m) & flags) != flags) continue;
    const char *name = lumen_model_name((lumen_model)m), *sep = len ? ", " : "";
    if (len + strlen(sep) + strlen(name) + 1 > size) break;
    strcat(buf + len, sep);
    strcat(buf + len, name);
    len += strlen(buf + len);
  }
  return buf;
}

/* lumen_model_defaults_preset in the physical (default) preset. */
LUMEN_HD int lumen_model_defaults(lumen_model m, double *start, double *lo, double *hi) {
  return lumen_model_defaults_preset(m, LUMEN_FIT_BOUNDS_PHYSICAL, start, lo, hi);
}

#endif
