/* The standard tier: one curve, GSL's trust-region Levenberg-Marquardt in double precision.

   This is lumen's numerical oracle, deliberately independent of lumen's own LM solver
   (src/cpu/): it shares only the model math (src/models/, value and analytic Jacobian), and
   every numerical step (trust region, QR solves, covariance, Student-t quantile) is GSL's.

   Method
   - Problem: minimise chi2(p) = sum_i w_i (model_i(p) - y_i)^2 over the FREE fit parameters
     (fixed ones, and those with lo == hi, are removed from the problem and keep their value).
     Weights are folded into the residuals as sqrt(w_i) (model_i - y_i).
   - Bounds: GSL has no box constraints, so each bounded parameter is fitted through a smooth
     bijective map of an unconstrained variable u (MINUIT's choice):
       both bounds      p = lo + (hi - lo) (1 + sin u) / 2
       lower bound only p = lo + c (sqrt(u^2 + 1) - 1)
       upper bound only p = hi - c (sqrt(u^2 + 1) - 1)
       no bound         p = c u
     c is the start's distance from its bound (unbounded: |start|; max(|bound|, 1) when that is
     0), so that u is of order 1 whatever the unit (M0 in the thousands, T1 about 1); the maps
     are re-centred on the current point when such a scale has drifted by more than 16x (at most
     8 times per fit: a poor start gives a poor scale, and LM's damping then freezes that
     parameter). A bound counts as absent when it is infinite or its magnitude is >= 1e20 (the
     models' "no bound" for M0 is 1e30). The Jacobian handed to GSL is J_u = J_p dp/du (chain
     rule). A start on (or within 1e-4 of the range of) a bound is moved 1e-4 of the range (of c
     for a one-sided bound) inside, because dp/du = 0 on the bound and LM could never leave it.
     Every iterate lies inside [lo, hi].
   - Solver: gsl_multifit_nlinear_trust with Levenberg scaling (D = I: the maps above already
     put every u on the same footing; More's scaling, GSL's default, made noise-free fits from
     the data-free default starts take 2-3x more iterations and left more 2CXM curves at the
     iteration limit) and QR linear solves, driven by gsl_multifit_nlinear_iterate so that
     convergence is tested on the ORIGINAL parameters. Trust-region subproblem: plain
     Levenberg-Marquardt (trs_lm) for every model; 2CXM first runs LM with geodesic
     acceleration (trs_lmaccel, GSL's finite-difference second directional derivative), which
     follows its long curved valleys (plain LM leaves ~1.5 % of noisy 2CXM curves at 200
     iterations, accelerated LM none), and hands over to plain LM once its steps are small or
     it stalls, because the finite-difference curvature is noise near a zero-residual minimum
     (accelerated LM alone leaves ~15 % of noise-free curves crawling to 200 iterations).
   - Tolerance: opt->tolerance = tol (default 1e-6) maps to, after each accepted step,
       xtol = tol on each original free parameter, |dp_k| <= tol (|p_k| + tol) (GSL's form of
             the step test, epsrel = xtol, epsabs = xtol^2, but on p rather than u), TOGETHER
             WITH ftol = tol on the relative chi2 decrease; or
       ftol = tol^2 alone: the relative chi2 decrease has reached double-precision noise; or
       chi2 <= (64 eps)^2 sum w y^2: an exact fit to rounding (noise-free data); or
       GSL_ENOPROG (plain LM): no step lowers chi2 any more at machine precision.
     GSL's gradient test is not used (gtol = 0): it is not scale invariant; GSL 2.x does not
     implement its ftol test. Relative chi2 changes are measured against chi2 plus the rounding
     floor above. A small step can also mean a large damping short of the minimum (in a narrow
     valley such as VFA's T1-M0 ridge, or next to a bound where dp/du -> 0), so every
     convergence is VERIFIED: the undamped Gauss-Newton step of the original model (GSL's QR
     least squares; parameters on a bound whose step points outward held there) must satisfy
     |dp_k| <= 10 tol (|p_k| + 10 tol). If it does not, the point moves along that step
     (clipped into the box, halved until chi2 drops), the maps are re-centred and a fresh GSL
     solve starts from there (at most 4 times). One iteration is one accepted step (GSL's
     iterate, including its rejected trial steps), counted over all solves; max_iterations is
     honoured. Measured on 1000 noisy curves per model (the benchmark's ranges) from the
     linear start: the result matches a re-fit from it at tol 1e-13 to a median relative 1e-8
     (p99 1e-6); every curve converges except rare 2CXM singular/iteration-limit cases in flat
     valleys; noise-free curves are recovered to 1e-12 except genuine local minima of
     2CXM/FXR from data-free starts. This is stricter than the accelerated tier's "relative
     chi2 change < tol": the oracle must be at least as accurate as what it checks.
   - Confidence intervals: at the solution, the weighted Jacobian of the ORIGINAL model with
     respect to the free fit parameters, J, gives C = (J^T J)^-1 (gsl_multifit_nlinear_covar on
     the column-normalised J, so that units do not matter, then rescaled). The fit is SINGULAR
     when a column of J is zero or when QR finds a rank deficiency with
     |R_kk| <= sqrt(DBL_EPSILON) |R_11| (J^T J singular in double precision). CI_k = p_k -+
     t_{0.975, dof} sqrt(C_kk chi2 / dof), dof = (samples with positive weight) - (free
     parameters); NaN for fixed parameters or dof <= 0. The interval is the linearised one and
     is not clipped to the bounds.
   - States (lumen_fit_state): INVALID_INPUT (a NaN/Inf sample, an all-zero curve, n < np, a
     negative or non-finite weight, fewer positive weights than free parameters, a bad B1/R10
     constant), START_OUT_OF_BOUNDS (start NaN or outside [lo, hi]), NOT_FINITE (the model or
     chi2 is NaN/Inf at the start or at the end, or GSL failed), SINGULAR (see above),
     MAX_ITERATIONS (last iterate reported, with its chi2, R^2 and CIs), CONVERGED. Every other
     state gives NaN parameters, chi2, R^2 and CIs. (AT_BOUND is not this function's: the shared
     driver, src/solver/driver_impl.inc, reports a converged fit with a free parameter on a bound so,
     for every tier alike.)
   - Closed-form models (vfa-linear, vfa-2pt): the result is the closed-form estimate
     (lumen_linear_start_f64), state CONVERGED with 0 iterations (SINGULAR when it fails), with
     chi2, R^2 and CIs from the SPGR model at that estimate; bounds and fixed flags do not apply.
   - opt->start may be NULL: the closed-form linear start where the model has one, clipped into
     the bounds, else lumen_model_defaults(). opt->lo/hi may be NULL: the model's defaults.
   - GSL's error handler is switched off once per process (pthread_once) so that GSL returns
     error codes instead of aborting; this affects every GSL user in the process, as GSL's
     handler is global. Each call allocates its own workspace: thread-safe, not fast. */
#include "lumen_build_config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "fit/curve_fit.h"

#if LUMEN_HAVE_GSL

#include <float.h>
#include <pthread.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#define STD_UNBOUNDED 1e20       /* |bound| >= this (or infinite) means no bound on that side */
#define STD_START_NUDGE 1e-4     /* fraction of [lo, hi] (or of the scale c) a start on a bound moves in */
#define STD_BAD_RESIDUAL 1e100   /* residual used for a non-finite model value at a trial step */
#define STD_SCALE_DRIFT 16.0     /* re-centre the maps when a one-sided scale is off by more */
#define STD_GN_FACTOR 10.0       /* Gauss-Newton verification: |dp_k| <= 10 tol (|p_k| + 10 tol) */

enum { XF_NONE = 0, XF_BOTH, XF_LOWER, XF_UPPER };

typedef struct std_xform {
  int kind;
  double lo, hi;
  double c;  /* one-sided and unbounded maps: the scale of p per unit of u */
} std_xform;

typedef struct std_problem {
  lumen_model model;
  const lumen_grid_f64 *grid;
  const double *consts;
  const double *y;
  const double *w;           /* weights, or NULL */
  const double *sw;          /* sqrt of weights, or NULL */
  int n, np, nfree;
  int idx[LUMEN_FIT_MAX_PARAMS];       /* free slot j -> fit parameter idx[j] */
  std_xform xf[LUMEN_FIT_MAX_PARAMS];  /* per free slot */
  double p[LUMEN_FIT_MAX_PARAMS];      /* full parameter vector (fixed ones stay put) */
  double *ymod;              /* n */
  double *jac;               /* n * np, column-major */
  double *work;              /* lumen_model_work_size(model, n) or NULL */
} std_problem;

static pthread_once_t gsl_handler_once = PTHREAD_ONCE_INIT;
static void gsl_handler_off(void) { gsl_set_error_handler_off(); }

/* ---------------------------------------------------------------- bound transforms */

/* The map for bounds [lo, hi] and start p0 (inside them). One-sided and unbounded maps are
   scaled so that u is of order 1 near the start whatever the parameter's unit (M0 may be in the
   thousands while T1 is about 1): c = the start's distance from the bound (unbounded: |p0|),
   or max(|bound|, 1) when that is 0. */
static std_xform xform_make(double lo, double hi, double p0) {
  std_xform x;
  int has_lo = isfinite(lo) && fabs(lo) < STD_UNBOUNDED;
  int has_hi = isfinite(hi) && fabs(hi) < STD_UNBOUNDED;
  x.lo = lo;
  x.hi = hi;
  x.kind = has_lo && has_hi ? XF_BOTH : has_lo ? XF_LOWER : has_hi ? XF_UPPER : XF_NONE;
  double ref = x.kind == XF_LOWER ? lo : x.kind == XF_UPPER ? hi : 0.0;
  double d = fabs(p0 - ref);
  x.c = d > 0 && isfinite(d) ? d : fmax(fabs(ref), 1.0);
  return x;
}

/* sqrt(u^2 + 1) - 1 without cancellation for small u. */
static double hyp_m1(double u) { return u * u / (sqrt(u * u + 1.0) + 1.0); }

static double xform_p(const std_xform *x, double u) {
  double p;
  switch (x->kind) {
    case XF_BOTH:
      p = x->lo + (x->hi - x->lo) * 0.5 * (1.0 + sin(u));
      break;
    case XF_LOWER: p = x->lo + x->c * hyp_m1(u); break;
    case XF_UPPER: p = x->hi - x->c * hyp_m1(u); break;
    default: return x->c * u;
  }
  /* rounding must never leave the box */
  if (x->kind != XF_UPPER && p < x->lo) p = x->lo;
  if (x->kind != XF_LOWER && p > x->hi) p = x->hi;
  return p;
}

static double xform_dpdu(const std_xform *x, double u) {
  switch (x->kind) {
    case XF_BOTH: return (x->hi - x->lo) * 0.5 * cos(u);
    case XF_LOWER: return x->c * u / sqrt(u * u + 1.0);
    case XF_UPPER: return -x->c * u / sqrt(u * u + 1.0);
    default: return x->c;
  }
}

/* Inverse map of a start value p (inside the box), moved off the bounds where dp/du = 0. */
static double xform_u(const std_xform *x, double p) {
  switch (x->kind) {
    case XF_BOTH: {
      double f = (p - x->lo) / (x->hi - x->lo);
      if (f < STD_START_NUDGE) f = STD_START_NUDGE;
      if (f > 1.0 - STD_START_NUDGE) f = 1.0 - STD_START_NUDGE;
      return asin(2.0 * f - 1.0);
    }
    case XF_LOWER:
    case XF_UPPER: {
      double d = (x->kind == XF_LOWER ? p - x->lo : x->hi - p) / x->c;
      if (d < STD_START_NUDGE) d = STD_START_NUDGE;
      return sqrt(d * (d + 2.0));
    }
    default: return p / x->c;
  }
}

/* ---------------------------------------------------------------- GSL callbacks */

static void problem_set_u(std_problem *pb, const gsl_vector *u) {
  for (int j = 0; j < pb->nfree; ++j) pb->p[pb->idx[j]] = xform_p(&pb->xf[j], gsl_vector_get(u, (size_t)j));
}

static int cb_f(const gsl_vector *u, void *params, gsl_vector *f) {
  std_problem *pb = params;
  problem_set_u(pb, u);
  lumen_model_eval_f64(pb->model, pb->grid, pb->consts, pb->p, pb->ymod, NULL, pb->work);
  for (int i = 0; i < pb->n; ++i) {
    double r = pb->ymod[i] - pb->y[i];
    if (pb->sw) r *= pb->sw[i];
    /* a non-finite trial value must make GSL reject the step, not poison the iteration */
    gsl_vector_set(f, (size_t)i, isfinite(r) ? r : STD_BAD_RESIDUAL);
  }
  return GSL_SUCCESS;
}

static int cb_df(const gsl_vector *u, void *params, gsl_matrix *J) {
  std_problem *pb = params;
  problem_set_u(pb, u);
  lumen_model_eval_f64(pb->model, pb->grid, pb->consts, pb->p, pb->ymod, pb->jac, pb->work);
  for (int j = 0; j < pb->nfree; ++j) {
    double dpdu = xform_dpdu(&pb->xf[j], gsl_vector_get(u, (size_t)j));
    const double *col = pb->jac + (size_t)pb->idx[j] * (size_t)pb->n;
    for (int i = 0; i < pb->n; ++i) {
      double v = col[i] * dpdu;
      if (pb->sw) v *= pb->sw[i];
      gsl_matrix_set(J, (size_t)i, (size_t)j, isfinite(v) ? v : 0.0);
    }
  }
  return GSL_SUCCESS;
}

/* ---------------------------------------------------------------- helpers */

static void result_clear(lumen_curve_result *out) {
  for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) out->p[k] = out->ci_lo[k] = out->ci_hi[k] = NAN;
  out->chi2 = NAN;
  out->r2 = NAN;
  out->iterations = 0;
  out->state = LUMEN_FIT_NOT_FITTED;
}

static lumen_curve_result *result_fail(lumen_curve_result *out, lumen_fit_state state) {
  int it = out->iterations;
  result_clear(out);
  out->iterations = it;
  out->state = state;
  return out;
}

/* Weighted chi2 and R^2 of the model values pb->ymod. */
static void chi2_r2(const std_problem *pb, double *chi2, double *r2) {
  double sw = 0, swy = 0;
  for (int i = 0; i < pb->n; ++i) {
    double w = pb->w ? pb->w[i] : 1.0;
    sw += w;
    swy += w * pb->y[i];
  }
  double mean = sw > 0 ? swy / sw : 0.0;
  double sse = 0, sst = 0;
  for (int i = 0; i < pb->n; ++i) {
    double w = pb->w ? pb->w[i] : 1.0;
    double r = pb->ymod[i] - pb->y[i], d = pb->y[i] - mean;
    sse += w * r * r;
    sst += w * d * d;
  }
  *chi2 = sse;
  *r2 = sst > 0 ? 1.0 - sse / sst : NAN;
}

/* Evaluates the original model with its Jacobian at pb->p and fills chi2, R^2 and the CIs of
   the free parameters. Returns the state: CONVERGED (caller may downgrade), SINGULAR or
   NOT_FINITE. Allocation failure: LUMEN_FIT_STATE_COUNT. */
static int finish(std_problem *pb, int dof, lumen_curve_result *out) {
  lumen_model_eval_f64(pb->model, pb->grid, pb->consts, pb->p, pb->ymod, pb->jac, pb->work);
  double chi2, r2;
  chi2_r2(pb, &chi2, &r2);
  if (!isfinite(chi2)) return LUMEN_FIT_NOT_FINITE;
  for (int k = 0; k < pb->np; ++k) {
    out->p[k] = pb->p[k];
    if (!isfinite(pb->p[k])) return LUMEN_FIT_NOT_FINITE;
  }
  out->chi2 = chi2;
  out->r2 = r2;
  if (pb->nfree == 0) return LUMEN_FIT_CONVERGED;

  const size_t n = (size_t)pb->n, m = (size_t)pb->nfree;
  gsl_matrix *J = gsl_matrix_alloc(n, m);
  gsl_matrix *C = gsl_matrix_alloc(m, m);
  if (!J || !C) {
    gsl_matrix_free(J);
    gsl_matrix_free(C);
    return LUMEN_FIT_STATE_COUNT;
  }
  int state = LUMEN_FIT_CONVERGED;
  double scale[LUMEN_FIT_MAX_PARAMS];
  for (size_t j = 0; j < m && state == LUMEN_FIT_CONVERGED; ++j) {
    const double *col = pb->jac + (size_t)pb->idx[j] * n;
    double ss = 0;
    for (size_t i = 0; i < n; ++i) {
      double v = col[i] * (pb->sw ? pb->sw[i] : 1.0);
      if (!isfinite(v)) state = LUMEN_FIT_NOT_FINITE;
      gsl_matrix_set(J, i, j, v);
      ss += v * v;
    }
    scale[j] = sqrt(ss);
    if (state == LUMEN_FIT_CONVERGED && !(scale[j] > 0 && isfinite(scale[j]))) state = LUMEN_FIT_SINGULAR;
  }
  if (state == LUMEN_FIT_CONVERGED) {
    for (size_t j = 0; j < m; ++j) {
      gsl_vector_view c = gsl_matrix_column(J, j);
      gsl_vector_scale(&c.vector, 1.0 / scale[j]);
    }
    /* QRPT of the normalised J; columns with |R_kk| <= eps |R_11| are dependent and get a
       zero row and column in C */
    int st = gsl_multifit_nlinear_covar(J, sqrt(DBL_EPSILON), C);
    if (st != GSL_SUCCESS) state = st == GSL_ENOMEM ? LUMEN_FIT_STATE_COUNT : LUMEN_FIT_SINGULAR;
    for (size_t j = 0; j < m && state == LUMEN_FIT_CONVERGED; ++j) {
      double c = gsl_matrix_get(C, j, j);
      if (!(c > 0)) state = isfinite(c) ? LUMEN_FIT_SINGULAR : LUMEN_FIT_NOT_FINITE;
    }
  }
  if (state == LUMEN_FIT_CONVERGED && dof > 0) {
    double s2 = chi2 / dof;
    double t = gsl_cdf_tdist_Pinv(0.975, (double)dof);
    for (size_t j = 0; j < m; ++j) {
      double var = gsl_matrix_get(C, j, j) / (scale[j] * scale[j]) * s2;
      double half = t * sqrt(var);
      int k = pb->idx[j];
      if (isfinite(half)) {
        out->ci_lo[k] = pb->p[k] - half;
        out->ci_hi[k] = pb->p[k] + half;
      }
    }
  }
  gsl_matrix_free(J);
  gsl_matrix_free(C);
  return state;
}

static int model_uses_b1(lumen_model m) { return (lumen_model_flags(m) & LUMEN_MF_X_FLIP) != 0; }

/* Per-curve input check: 1 when the curve can be fitted. */
static int input_ok(lumen_model m, int n, int np, const double *y, const double *w, const double *consts,
                    int nfree, int *npos_out) {
  if (n < 1 || n < np) return 0;
  int nonzero = 0;
  for (int i = 0; i < n; ++i) {
    if (!isfinite(y[i])) return 0;
    if (y[i] != 0.0) nonzero = 1;
  }
  if (!nonzero) return 0;
  int npos = n;
  if (w) {
    npos = 0;
    for (int i = 0; i < n; ++i) {
      if (!isfinite(w[i]) || w[i] < 0) return 0;
      if (w[i] > 0) ++npos;
    }
  }
  if (npos < nfree || npos == 0) return 0;
  if (consts) {
    if ((lumen_model_flags(m) & LUMEN_MF_USES_R10) && !(isfinite(consts[LUMEN_FIT_CONST_R10]) && consts[LUMEN_FIT_CONST_R10] > 0)) return 0;
    if (model_uses_b1(m) && !(isfinite(consts[LUMEN_FIT_CONST_B1]) && consts[LUMEN_FIT_CONST_B1] > 0)) return 0;
  }
  *npos_out = npos;
  return 1;
}

/* ---------------------------------------------------------------- the solver */

/* One GSL solve from u (updated in place) with trust-region subproblem trs. accel: phase 1 of
   the solve (geodesic acceleration), which hands over to plain LM (returns PHASE_HANDOVER)
   when its steps have become small or it stalls. *it counts iterations across phases.
   Returns a lumen_fit_state, PHASE_HANDOVER, or LUMEN_FIT_STATE_COUNT for out of memory. */
#define PHASE_HANDOVER (LUMEN_FIT_STATE_COUNT + 1)
#define PHASE_RECENTRE (LUMEN_FIT_STATE_COUNT + 2)

/* 1 when a one-sided or unbounded parameter has moved so far from the start that the scale c
   of its map is off by more than STD_SCALE_DRIFT (u would then be badly scaled against the
   other parameters, and LM's damping would freeze it). */
static int scale_drifted(const std_problem *pb) {
  for (int j = 0; j < pb->nfree; ++j) {
    const std_xform *x = &pb->xf[j];
    if (x->kind == XF_BOTH) continue;
    double ref = x->kind == XF_LOWER ? x->lo : x->kind == XF_UPPER ? x->hi : 0.0;
    double d = fabs(pb->p[pb->idx[j]] - ref);
    if (d > STD_SCALE_DRIFT * x->c || d * STD_SCALE_DRIFT < x->c) return 1;
  }
  return 0;
}

/* (Re)builds the maps around the point pb->p and sets u to it. */
static void centre_maps(std_problem *pb, const double *lo, const double *hi, gsl_vector *u) {
  for (int j = 0; j < pb->nfree; ++j) {
    int k = pb->idx[j];
    pb->xf[j] = xform_make(lo[k], hi[k], pb->p[k]);
    gsl_vector_set(u, (size_t)j, xform_u(&pb->xf[j], pb->p[k]));
  }
}

static int solve_phase(std_problem *pb, const gsl_multifit_nlinear_trs *trs, int accel, int recentre, gsl_vector *u,
                       double tol, int max_iterations, double chi2_floor, int *it) {
  const size_t n = (size_t)pb->n, m = (size_t)pb->nfree;
  gsl_multifit_nlinear_parameters params = gsl_multifit_nlinear_default_parameters();
  params.trs = trs;
  params.scale = gsl_multifit_nlinear_scale_levenberg;
  params.solver = gsl_multifit_nlinear_solver_qr;
  gsl_multifit_nlinear_workspace *w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &params, n, m);
  if (!w) return LUMEN_FIT_STATE_COUNT;
  gsl_multifit_nlinear_fdf fdf = {.f = cb_f, .df = cb_df};
  fdf.fvv = NULL; /* GSL's finite-difference second directional derivative (accel only) */
  fdf.n = n;
  fdf.p = m;
  fdf.params = pb;

  int state = LUMEN_FIT_MAX_ITERATIONS;
  int st = gsl_multifit_nlinear_init(u, &fdf, w);
  if (st != GSL_SUCCESS) state = st == GSL_ENOMEM ? LUMEN_FIT_STATE_COUNT : LUMEN_FIT_NOT_FINITE;
  double pprev[LUMEN_FIT_MAX_PARAMS];
  double chi2_prev = 0;
  if (state == LUMEN_FIT_MAX_ITERATIONS) {
    double fn = gsl_blas_dnrm2(gsl_multifit_nlinear_residual(w));
    chi2_prev = fn * fn;
    if (!isfinite(chi2_prev) || chi2_prev >= STD_BAD_RESIDUAL) state = LUMEN_FIT_NOT_FINITE;
  }
  while (state == LUMEN_FIT_MAX_ITERATIONS && *it < max_iterations) {
    problem_set_u(pb, gsl_multifit_nlinear_position(w));
    memcpy(pprev, pb->p, sizeof pprev);
    st = gsl_multifit_nlinear_iterate(w);
    ++*it;
    if (st == GSL_ENOPROG) {
      /* no step lowers chi2 any more: a minimum to machine precision for plain LM; for the
         accelerated phase it may only be the finite-difference curvature: hand over */
      state = accel ? PHASE_HANDOVER : LUMEN_FIT_CONVERGED;
      break;
    }
    if (st != GSL_SUCCESS) {
      state = st == GSL_ENOMEM ? LUMEN_FIT_STATE_COUNT : st == GSL_ESING ? LUMEN_FIT_SINGULAR : LUMEN_FIT_NOT_FINITE;
      break;
    }
    double fn = gsl_blas_dnrm2(gsl_multifit_nlinear_residual(w));
    double chi2 = fn * fn;
    if (!isfinite(chi2)) {
      state = LUMEN_FIT_NOT_FINITE;
      break;
    }
    problem_set_u(pb, gsl_multifit_nlinear_position(w));
    int xsmall = 1;
    for (int j = 0; j < pb->nfree; ++j) {
      int k = pb->idx[j];
      if (!(fabs(pb->p[k] - pprev[k]) <= tol * (fabs(pb->p[k]) + tol))) xsmall = 0;
    }
    const double dchi2 = chi2_prev - chi2; /* > 0: GSL accepted the step */
    chi2_prev = chi2;
    const double ref = chi2 + dchi2 + chi2_floor;
    if ((xsmall && dchi2 <= tol * ref) || dchi2 <= tol * tol * ref || chi2 <= chi2_floor) state = LUMEN_FIT_CONVERGED;
    else if (accel && xsmall) state = PHASE_HANDOVER;
    else if (recentre && scale_drifted(pb)) state = PHASE_RECENTRE;
  }
  gsl_vector_memcpy(u, gsl_multifit_nlinear_position(w));
  gsl_multifit_nlinear_free(w);
  return state;
}

/* Verification of a converged solve: the undamped Gauss-Newton step of the original model at pb->p
   (weighted least squares J dp = -r by GSL's QR, free parameters only, those on a bound whose
   step points out of the box removed as active) must be small, |dp_k| <= thr (|p_k| + thr).
   LM in u can stop short of the minimum, in a narrow valley (VFA's T1-M0 ridge) or next to a
   bound where dp/du -> 0 (a start clipped onto a bound), with steps that are small only
   because the damping dominates; the Gauss-Newton step measures the distance to the minimum
   instead and is scale invariant. The step (0 for active parameters) goes to dp[] (indexed
   by fit parameter). Returns 1 when small (or when it cannot be computed: a singular J is
   reported by finish()), 0 when not, -1 when out of memory. */
static int gauss_newton_step(std_problem *pb, const double *lo, const double *hi, double thr, double *dp_out) {
  const size_t n = (size_t)pb->n;
  lumen_model_eval_f64(pb->model, pb->grid, pb->consts, pb->p, pb->ymod, pb->jac, pb->work);
  for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) dp_out[k] = 0;
  int active[LUMEN_FIT_MAX_PARAMS] = {0};
  int result = 1;
  for (int pass = 0; pass <= pb->nfree; ++pass) {
    int cols[LUMEN_FIT_MAX_PARAMS], m = 0;
    for (int j = 0; j < pb->nfree; ++j)
      if (!active[j]) cols[m++] = j;
    if (m == 0 || (size_t)m > n) return 1;
    gsl_matrix *J = gsl_matrix_alloc(n, (size_t)m);
    gsl_vector *r = gsl_vector_alloc(n), *tau = gsl_vector_alloc((size_t)m), *dp = gsl_vector_alloc((size_t)m);
    gsl_vector *res = gsl_vector_alloc(n);
    if (!J || !r || !tau || !dp || !res) {
      result = -1;
    } else {
      for (size_t i = 0; i < n; ++i) {
        double sw = pb->sw ? pb->sw[i] : 1.0;
        gsl_vector_set(r, i, -sw * (pb->ymod[i] - pb->y[i]));
        for (int c = 0; c < m; ++c)
          gsl_matrix_set(J, i, (size_t)c, sw * pb->jac[(size_t)pb->idx[cols[c]] * n + i]);
      }
      result = 1;
      if (gsl_linalg_QR_decomp(J, tau) == GSL_SUCCESS && gsl_linalg_QR_lssolve(J, tau, r, dp, res) == GSL_SUCCESS) {
        int new_active = 0, small = 1, finite = 1;
        for (int c = 0; c < m; ++c)
          if (!isfinite(gsl_vector_get(dp, (size_t)c))) finite = 0; /* rank deficient: not this test's business */
        for (int c = 0; c < m && finite; ++c) {
          int j = cols[c], k = pb->idx[j];
          double d = gsl_vector_get(dp, (size_t)c), pk = pb->p[k];
          double at = thr * (fabs(pk) + thr);
          dp_out[k] = d;
          if ((pk + d < lo[k] && pk - lo[k] <= at) || (pk + d > hi[k] && hi[k] - pk <= at)) {
            active[j] = 1;
            new_active = 1;
            dp_out[k] = 0;
          } else if (fabs(d) > at) {
            small = 0;
          }
        }
        result = !finite ? 1 : new_active ? 2 : small; /* 2: again without the active parameters */
        if (!finite)
          for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) dp_out[k] = 0;
      }
    }
    gsl_matrix_free(J);
    gsl_vector_free(r);
    gsl_vector_free(tau);
    gsl_vector_free(dp);
    gsl_vector_free(res);
    if (result != 2) return result;
  }
  return 1;
}

/* Moves pb->p along the Gauss-Newton step dp, clipped into the box, halving it until chi2
   drops (at most 12 halvings): the restart point when the verification failed. */
static void gauss_newton_move(std_problem *pb, const double *lo, const double *hi, const double *dp) {
  double p0[LUMEN_FIT_MAX_PARAMS], chi2_0, r2;
  memcpy(p0, pb->p, sizeof p0);
  lumen_model_eval_f64(pb->model, pb->grid, pb->consts, pb->p, pb->ymod, NULL, pb->work);
  chi2_r2(pb, &chi2_0, &r2);
  double alpha = 1.0;
  for (int h = 0; h <= 12; ++h, alpha *= 0.5) {
    for (int j = 0; j < pb->nfree; ++j) {
      int k = pb->idx[j];
      double v = p0[k] + alpha * dp[k];
      pb->p[k] = v < lo[k] ? lo[k] : v > hi[k] ? hi[k] : v;
    }
    double chi2;
    lumen_model_eval_f64(pb->model, pb->grid, pb->consts, pb->p, pb->ymod, NULL, pb->work);
    chi2_r2(pb, &chi2, &r2);
    if (chi2 < chi2_0) return;
  }
  memcpy(pb->p, p0, sizeof p0);
}

#define STD_MAX_RESTARTS 4   /* Gauss-Newton verifications that may restart a solve */
#define STD_MAX_RECENTRES 8  /* re-centrings of the maps during a solve */

static lumen_status run_fit(lumen_ctx *ctx, std_problem *pb, const lumen_curve_options *opt, const double *lo,
                            const double *hi, int dof, lumen_curve_result *out) {
  const size_t m = (size_t)pb->nfree;
  gsl_vector *u = gsl_vector_alloc(m);
  if (!u) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_standard_fit_curve: GSL vector (%zu)", m);
  centre_maps(pb, lo, hi, u);
  /* chi2 that rounding alone produces (model and data at ~64 ulp): an exact fit */
  double chi2_floor = 0;
  for (int i = 0; i < pb->n; ++i) chi2_floor += (pb->w ? pb->w[i] : 1.0) * pb->y[i] * pb->y[i];
  chi2_floor *= (64 * DBL_EPSILON) * (64 * DBL_EPSILON);
  const double tol = opt->tolerance;
  const int maxit = opt->max_iterations;

  int it = 0, state = PHASE_HANDOVER, recentres = 0, restarts = 0;
  if (lumen_model_flags(pb->model) & LUMEN_MF_SOLVE_F64)
    state = solve_phase(pb, gsl_multifit_nlinear_trs_lmaccel, 1, 0, u, tol, maxit, chi2_floor, &it);
  for (;;) {
    if (state == PHASE_HANDOVER || state == PHASE_RECENTRE) {
      if (state == PHASE_RECENTRE) {
        problem_set_u(pb, u);
        centre_maps(pb, lo, hi, u);
      }
      state = solve_phase(pb, gsl_multifit_nlinear_trs_lm, 0, recentres++ < STD_MAX_RECENTRES, u, tol, maxit,
                          chi2_floor, &it);
      continue;
    }
    /* converged: verify with the Gauss-Newton step; if the minimum is not there yet, restart
       GSL (fresh damping) with the maps re-centred on the current point */
    if (state != LUMEN_FIT_CONVERGED || restarts >= STD_MAX_RESTARTS || it >= maxit) break;
    problem_set_u(pb, u);
    double dp[LUMEN_FIT_MAX_PARAMS];
    int ok = gauss_newton_step(pb, lo, hi, STD_GN_FACTOR * tol, dp);
    if (ok < 0) state = LUMEN_FIT_STATE_COUNT;
    if (ok != 0) break;
    ++restarts;
    gauss_newton_move(pb, lo, hi, dp);
    centre_maps(pb, lo, hi, u);
    state = PHASE_HANDOVER; /* a fresh plain-LM solve from the moved, re-centred point */
  }
  if (state == PHASE_HANDOVER) state = LUMEN_FIT_MAX_ITERATIONS;
  out->iterations = it;
  if (state == LUMEN_FIT_CONVERGED || state == LUMEN_FIT_MAX_ITERATIONS) problem_set_u(pb, u);
  gsl_vector_free(u);

  if (state == LUMEN_FIT_CONVERGED || state == LUMEN_FIT_MAX_ITERATIONS) {
    int fin = finish(pb, dof, out);
    if (fin == LUMEN_FIT_STATE_COUNT) state = LUMEN_FIT_STATE_COUNT;
    else if (fin != LUMEN_FIT_CONVERGED) state = fin;
  }
  if (state == LUMEN_FIT_STATE_COUNT)
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_standard_fit_curve: GSL ran out of memory");
  if (state == LUMEN_FIT_CONVERGED || state == LUMEN_FIT_MAX_ITERATIONS) out->state = (lumen_fit_state)state;
  else result_fail(out, (lumen_fit_state)state);
  return LUMEN_OK;
}

lumen_status lumen_standard_fit_curve(lumen_ctx *ctx, lumen_model model, const lumen_grid_f64 *grid,
                                      const double *consts, const double *y, const lumen_curve_options *opt,
                                      lumen_curve_result *out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, grid);
  LUMEN_REQUIRE_NOT_NULL(ctx, y);
  LUMEN_REQUIRE_NOT_NULL(ctx, opt);
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  result_clear(out);
  pthread_once(&gsl_handler_once, gsl_handler_off);

  const int np = lumen_model_np(model);
  LUMEN_REQUIRE(ctx, np >= 0, "lumen_standard_fit_curve: unknown model %d", (int)model);
  if (np == 0)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED,
                      "lumen_standard_fit_curve: model %d (auc) has no parameters to fit", (int)model);
  LUMEN_REQUIRE(ctx, np <= LUMEN_FIT_MAX_PARAMS, "lumen_standard_fit_curve: model has %d parameters", np);
  LUMEN_REQUIRE(ctx, isfinite(opt->tolerance) && opt->tolerance > 0,
                "lumen_standard_fit_curve: tolerance %g must be finite and > 0", opt->tolerance);
  LUMEN_REQUIRE(ctx, opt->max_iterations >= 1, "lumen_standard_fit_curve: max_iterations %d must be >= 1",
                opt->max_iterations);

  double dstart[LUMEN_FIT_MAX_PARAMS], dlo[LUMEN_FIT_MAX_PARAMS], dhi[LUMEN_FIT_MAX_PARAMS];
  lumen_model_defaults(model, dstart, dlo, dhi);
  const double *lo = opt->lo ? opt->lo : dlo;
  const double *hi = opt->hi ? opt->hi : dhi;
  for (int k = 0; k < np; ++k)
    LUMEN_REQUIRE(ctx, !isnan(lo[k]) && !isnan(hi[k]) && lo[k] <= hi[k],
                  "lumen_standard_fit_curve: bounds of parameter %d are [%g, %g]", k, lo[k], hi[k]);

  const int n = grid->n;
  std_problem pb = {.model = model, .grid = grid, .consts = consts, .y = y, .n = n, .np = np};
  int closed = lumen_model_is_closed_form(model);
  for (int k = 0; k < np; ++k)
    if (closed || !((opt->fixed && opt->fixed[k]) || lo[k] == hi[k])) pb.idx[pb.nfree++] = k;

  int npos = 0;
  if (!input_ok(model, n, np, y, opt->weights, consts, pb.nfree, &npos)) {
    out->state = LUMEN_FIT_INVALID_INPUT;
    return LUMEN_OK;
  }

  /* scratch: model values, Jacobian, model work, sqrt weights */
  long wsize = lumen_model_work_size(model, n);
  if (wsize < 0) wsize = 0;
  size_t total = (size_t)n * (size_t)(np + 2) + (size_t)wsize;
  double *scratch = malloc(total * sizeof *scratch);
  if (!scratch) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_standard_fit_curve: %zu doubles", total);
  pb.ymod = scratch;
  pb.jac = scratch + n;
  double *swv = scratch + (size_t)n * (size_t)(np + 1);
  pb.work = wsize > 0 ? scratch + (size_t)n * (size_t)(np + 2) : NULL;
  if (opt->weights) {
    for (int i = 0; i < n; ++i) swv[i] = sqrt(opt->weights[i]);
    pb.w = opt->weights;
    pb.sw = swv;
  }
  const int dof = npos - pb.nfree;
  lumen_status status = LUMEN_OK;

  if (closed) {
    /* vfa-linear, vfa-2pt: the closed-form estimate is the result */
    if (lumen_linear_start_f64(model, grid, consts, y, pb.p) != 0) {
      out->state = LUMEN_FIT_SINGULAR;
    } else {
      int fin = finish(&pb, dof, out);
      if (fin == LUMEN_FIT_STATE_COUNT)
        status = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_standard_fit_curve: out of memory");
      else if (fin != LUMEN_FIT_CONVERGED) result_fail(out, (lumen_fit_state)fin);
      else out->state = LUMEN_FIT_CONVERGED;
    }
    free(scratch);
    return status;
  }

  /* start values: given, or the clipped linear start, or the defaults */
  if (opt->start) {
    for (int k = 0; k < np; ++k) pb.p[k] = opt->start[k];
  } else {
    if (lumen_standard_linear_start(model, grid, consts, y, pb.p) != 0) memcpy(pb.p, dstart, sizeof dstart);
    for (int k = 0; k < np; ++k) {
      if (!isfinite(pb.p[k])) pb.p[k] = dstart[k];
      pb.p[k] = pb.p[k] < lo[k] ? lo[k] : pb.p[k] > hi[k] ? hi[k] : pb.p[k];
    }
  }
  for (int k = 0; k < np; ++k) {
    if (!(pb.p[k] >= lo[k] && pb.p[k] <= hi[k])) {
      out->state = LUMEN_FIT_START_OUT_OF_BOUNDS;
      free(scratch);
      return LUMEN_OK;
    }
  }

  /* the model must be finite at the start */
  lumen_model_eval_f64(model, grid, consts, pb.p, pb.ymod, NULL, pb.work);
  for (int i = 0; i < n; ++i) {
    if (!isfinite(pb.ymod[i])) {
      out->state = LUMEN_FIT_NOT_FINITE;
      free(scratch);
      return LUMEN_OK;
    }
  }

  if (pb.nfree == 0) {
    int fin = finish(&pb, dof, out);
    if (fin == LUMEN_FIT_STATE_COUNT)
      status = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_standard_fit_curve: out of memory");
    else if (fin != LUMEN_FIT_CONVERGED) result_fail(out, (lumen_fit_state)fin);
    else out->state = LUMEN_FIT_CONVERGED;
  } else {
    status = run_fit(ctx, &pb, opt, lo, hi, dof, out);
  }
  free(scratch);
  return status;
}

#else /* !LUMEN_HAVE_GSL */

lumen_status lumen_standard_fit_curve(lumen_ctx *ctx, lumen_model model, const lumen_grid_f64 *grid,
                                      const double *consts, const double *y, const lumen_curve_options *opt,
                                      lumen_curve_result *out) {
  (void)model;
  (void)grid;
  (void)consts;
  (void)y;
  (void)opt;
  if (out) {
    for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) out->p[k] = out->ci_lo[k] = out->ci_hi[k] = NAN;
    out->chi2 = out->r2 = NAN;
    out->iterations = 0;
    out->state = LUMEN_FIT_NOT_FITTED;
  }
  return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT,
                    "the standard fitting tier needs GSL, which was not found when lumen was configured "
                    "(install libgsl-dev and reconfigure)");
}

#endif
