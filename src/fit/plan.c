/* Fit plans: option checks, bounds and starts, the shared grids, and backend tier selection. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fit/cxm_grid.h"
#include "fit/fit_cuda.h"
#include "fit/fit_internal.h"
#include "lumen_build_config.h"

/* ------------------------------------------------------------------ backend selection */
static int tier_runnable(lumen_ctx *ctx, const lumen_fit_plan *pl, lumen_fit_tier tier, char *why, size_t why_size) {
  switch (tier) {
    case LUMEN_FIT_TIER_CUDA: {
      /* usable: a device (driver, compute capability) and the model's kernel (src/fit/fit_cuda.c) */
      (void)ctx;
      if (pl->opts.fit_delay) {
        snprintf(why, why_size, "arterial delay fitting runs on the CPU tiers only");
        return 0;
      }
      if (lumen_model_flags(pl->model) & LUMEN_MF_AREAS) {
        snprintf(why, why_size, "%s has no CUDA kernel (no fit)", lumen_model_name(pl->model));
        return 0;
      }
      lumen_fitcu_problem pb;
      lumen_fitcu_problem_from_plan(pl, 0, &pb);
      return lumen_fitcu_available(&pb, pl->cuda_dev, pl->n_cuda_dev, why, why_size);
    }
    case LUMEN_FIT_TIER_CPU:
#if LUMEN_HAVE_OPENMP
      return 1;
#else
      snprintf(why, why_size, "not built (no OpenMP)");
      return 0;
#endif
    case LUMEN_FIT_TIER_CPU_SINGLE:
      return 1;
    case LUMEN_FIT_TIER_STANDARD:
#if LUMEN_HAVE_GSL
      return 1;
#else
      snprintf(why, why_size, "not built (GSL not found at configure time)");
      return 0;
#endif
    default:
      snprintf(why, why_size, "unknown tier");
      return 0;
  }
}

static void append(char *buf, size_t size, const char *fmt, const char *a, const char *b) {
  size_t len = strlen(buf);
  if (len + 1 >= size) return;
  snprintf(buf + len, size - len, fmt, a, b);
}

static lumen_status select_backend(lumen_ctx *ctx, lumen_fit_plan *pl, const char *request) {
  const lumen_fit_options *o = &pl->opts;
  char canon[LUMEN_FIT_NAME_MAX];
  /* "cuda:N", "cuda:0,1", "cuda:all": the cuda tier on those devices (default cuda:0) */
  pl->cuda_dev[0] = 0;
  pl->n_cuda_dev = 1;
  int nd = lumen_fitcu_parse_devices(request, pl->cuda_dev, 16);
  if (nd < 0)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "fit backend '%s': expected cuda:N, a list cuda:0,1 or cuda:all", request);
  if (nd > 0) {
    pl->n_cuda_dev = nd;
    request = "cuda";
  } else {
    pl->cuda_dev[0] = 0;
  }
  lumen_status s = lumen_fit_backend_parse(ctx, request, o->rocketship_names, canon, sizeof canon);
  if (s != LUMEN_OK) return s;
  snprintf(pl->requested, sizeof pl->requested, "%s", canon);
  int cand[LUMEN_FIT_TIER_COUNT], nc = 0;
  const char *why_start = "";
  if (strcmp(canon, "auto") == 0 && o->force_cpu) {
    /* ROCKETSHIP's force_cpu: the standard (non-accelerated) path, then the CPU tiers */
    cand[nc++] = LUMEN_FIT_TIER_STANDARD;
    cand[nc++] = LUMEN_FIT_TIER_CPU;
    cand[nc++] = LUMEN_FIT_TIER_CPU_SINGLE;
    why_start = "force_cpu; ";
  } else {
    int first = LUMEN_FIT_TIER_CUDA;
    if (strcmp(canon, "cpu") == 0) first = LUMEN_FIT_TIER_CPU;
    else if (strcmp(canon, "cpu_single") == 0) first = LUMEN_FIT_TIER_CPU_SINGLE;
    else if (strcmp(canon, "standard") == 0) first = LUMEN_FIT_TIER_STANDARD;
    for (int t = first; t < LUMEN_FIT_TIER_COUNT; ++t) cand[nc++] = t;
  }
  pl->reason[0] = 0;
  append(pl->reason, sizeof pl->reason, "%s%s", why_start, "");
  pl->norder = 0;
  for (int i = 0; i < nc; ++i) {
    char why[300] = "";
    if (tier_runnable(ctx, pl, (lumen_fit_tier)cand[i], why, sizeof why)) {
      pl->order[pl->norder++] = cand[i];
    } else {
      append(pl->reason, sizeof pl->reason, "%s: %s; ", lumen_fit_tier_name((lumen_fit_tier)cand[i]), why);
    }
  }
  if (pl->norder == 0) {
    return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT, "no fitting backend can run the request '%s': %s", canon,
                      pl->reason);
  }
  snprintf(pl->selected, sizeof pl->selected, "%s", lumen_fit_tier_name((lumen_fit_tier)pl->order[0]));
  append(pl->reason, sizeof pl->reason, "%s%s selected", lumen_fit_tier_name((lumen_fit_tier)pl->order[0]), "");
  return LUMEN_OK;
}

/* ------------------------------------------------------------------ deterministic draws */
static double lcg_uniform(uint64_t *state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*state >> 11) * (1.0 / 9007199254740992.0);
}

static void make_extra_starts(lumen_fit_plan *pl) {
  pl->n_extra_starts = 0;
  pl->n_escape_starts = 0;
  const int flags = lumen_model_flags(pl->model);
  if (!(flags & LUMEN_MF_ESCAPE_STARTS)) return;
  int total = (flags & LUMEN_MF_STAGED) ? pl->opts.n_starts : 1; /* else escape starts only */
  if (total < 1) total = 1;
  if (total > LUMEN_PLAN_MAX_STARTS) total = LUMEN_PLAN_MAX_STARTS;
  int ne = 0;
  /* the configured start when the primary start is the linear one */
  if (pl->has_linear_start && ne < total - 1) {
    memcpy(pl->extra_starts[ne], pl->start, sizeof pl->start);
    ne++;
  }
  /* log-uniform draws over a plausible range inside the box (fixed seed: deterministic) */
  /* plausible ranges of the fit parameters: the draw ranges of the row's LUMEN_P_* descriptors */
  double plaus_lo[LUMEN_FIT_MAX_PARAMS], plaus_hi[LUMEN_FIT_MAX_PARAMS];
  lumen_model_draw_ranges(pl->model, plaus_lo, plaus_hi);
  const int np = pl->np;
  uint64_t seed = 0x2C3Du;
  for (int pass = 0; pass < 2; ++pass) {
  double (*dst)[LUMEN_FIT_MAX_PARAMS] = pass == 0 ? pl->extra_starts : pl->escape_starts;
  int want = pass == 0 ? total - 1 : 4;
  if (pass == 1) ne = 0;
  while (ne < want) {
    for (int k = 0; k < np; ++k) {
      if (pl->fixed[k] || pl->start_given[k]) {
        dst[ne][k] = pl->start[k];
        continue;
      }
      double a = fmax(plaus_lo[k], pl->lo[k]), b = fmin(plaus_hi[k], pl->hi[k]);
      if (!(b > a)) {
        a = pl->lo[k];
        b = pl->hi[k];
      }
      double u = lcg_uniform(&seed), v;
      if (a > 0)
        v = exp(log(a) + u * (log(b) - log(a)));
      else
        v = a + u * (b - a);
      dst[ne][k] = fmin(fmax(v, pl->lo[k]), pl->hi[k]);
    }
    ne++;
  }
  if (pass == 0) pl->n_extra_starts = ne;
  else pl->n_escape_starts = ne;
  }
}

/* ------------------------------------------------------------------ unit plausibility */
/* Values that are only plausible in another unit are refused with the likely mistake named:
   flip angles are radians, TR seconds, the relaxivity 1/(mM s) (ranges in include/lumen/fit.h). */
static lumen_status check_flip_angles(lumen_ctx *ctx, const char *mname, int n, const double *x) {
  const double pi = 3.14159265358979323846;
  for (int i = 0; i < n; ++i) {
    if (x[i] > pi)
      return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                        "%s: flip angle x[%d] = %g is above pi: flip angles are in radians; degrees? %g deg = %.3g rad",
                        mname, i, x[i], x[i], x[i] * pi / 180.0);
    if (!(x[i] > 0))
      return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                        "%s: flip angle x[%d] = %g is not above 0: flip angles are in radians, in (0, pi]", mname, i,
                        x[i]);
  }
  return LUMEN_OK;
}

static lumen_status check_tr_unit(lumen_ctx *ctx, const char *mname, double tr) {
  if (tr > LUMEN_SPGR_TR_MAX_S)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "%s: tr %g s is not an SPGR TR (expected %g..%g s); in ms? give %g", mname, tr, LUMEN_SPGR_TR_MIN_S,
                      LUMEN_SPGR_TR_MAX_S, tr / 1000.0);
  if (tr < LUMEN_SPGR_TR_MIN_S)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "%s: tr %g s is not an SPGR TR (expected %g..%g s); in minutes? give %g", mname, tr, LUMEN_SPGR_TR_MIN_S,
                      LUMEN_SPGR_TR_MAX_S, tr * 60.0);
  return LUMEN_OK;
}

static lumen_status check_r1_unit(lumen_ctx *ctx, double r1) {
  if (r1 > LUMEN_RELAXIVITY_MAX)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "fxr: relaxivity r1 %g is not a gadolinium relaxivity in 1/(mM s) (expected %g..%g, typically "
                      "4.5); in 1/(mM min)? give %g; in 1/(M s)? give %g",
                      r1, LUMEN_RELAXIVITY_MIN, LUMEN_RELAXIVITY_MAX, r1 / 60.0, r1 / 1000.0);
  if (r1 < LUMEN_RELAXIVITY_MIN)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "fxr: relaxivity r1 %g is not a gadolinium relaxivity in 1/(mM s) (expected %g..%g, typically "
                      "4.5); in 1/(mM ms)? give %g",
                      r1, LUMEN_RELAXIVITY_MIN, LUMEN_RELAXIVITY_MAX, r1 * 1000.0);
  return LUMEN_OK;
}

/* The solver options and the model's acquisition options (TR, r1, AUC window, weights). */
static lumen_status check_fit_options(lumen_ctx *ctx, const lumen_fit_options *opts, int n, const double *x,
                                      const char *mname) {
  const lumen_model m = opts->model;
  LUMEN_REQUIRE(ctx, isfinite(opts->tolerance) && opts->tolerance > 0,
                "fit options: tolerance %g, expected a positive number (default 1e-6)", opts->tolerance);
  LUMEN_REQUIRE(ctx, opts->max_iterations >= 1,
                "fit options: max_iterations %d, expected at least 1 (default 200)", opts->max_iterations);
  LUMEN_REQUIRE(ctx, (int)opts->precision >= 0 && opts->precision < LUMEN_FIT_PRECISION_COUNT,
                "fit options: precision %d unknown (float32 or float64)", (int)opts->precision);
  LUMEN_REQUIRE(ctx, (int)opts->conv >= 0 && opts->conv < LUMEN_FIT_CONV_COUNT,
                "fit options: convolution rule %d unknown (exact or trapezoid)", (int)opts->conv);
  LUMEN_REQUIRE(ctx, opts->n_starts >= 1 && opts->n_starts <= LUMEN_PLAN_MAX_STARTS,
                "fit options: n_starts %d, expected 1..%d", opts->n_starts, LUMEN_PLAN_MAX_STARTS);
  if (opts->fit_delay) {
    LUMEN_REQUIRE(ctx, lumen_model_is_dce(m), "fit options: delay fitting needs a DCE model, not %s", mname);
    LUMEN_REQUIRE(ctx, isfinite(opts->delay_lo) && isfinite(opts->delay_hi) && opts->delay_lo <= opts->delay_hi,
                  "fit options: delay bounds [%g, %g] min, expected finite lo <= hi", opts->delay_lo,
                  opts->delay_hi);
  }
  LUMEN_REQUIRE(ctx, (int)opts->bounds_preset >= 0 && opts->bounds_preset < LUMEN_FIT_BOUNDS_PRESET_COUNT,
                "fit options: bounds preset %d unknown (physical or rocketship)", (int)opts->bounds_preset);
  if (lumen_model_flags(m) & LUMEN_MF_X_FLIP) {
    lumen_status su = check_flip_angles(ctx, mname, n, x);
    if (su != LUMEN_OK) return su;
    LUMEN_REQUIRE(ctx, isfinite(opts->tr) && opts->tr > 0,
                  "fit options (%s): TR %g s, expected a positive repetition time in seconds", mname, opts->tr);
    su = check_tr_unit(ctx, mname, opts->tr);
    if (su != LUMEN_OK) return su;
  }
  const int flags = lumen_model_flags(m);
  if (flags & LUMEN_MF_USES_TR)
    LUMEN_REQUIRE(ctx, isfinite(opts->tr) && opts->tr >= 0,
                  "fit options (%s): TR %g s, expected >= 0 seconds (0 = long TR)", mname, opts->tr);
  if (flags & LUMEN_MF_USES_R1) {
    LUMEN_REQUIRE(ctx, isfinite(opts->r1) && opts->r1 > 0,
                  "fit options (%s): relaxivity r1 %g, expected > 0 1/(mM s)", mname, opts->r1);
    lumen_status su = check_r1_unit(ctx, opts->r1);
    if (su != LUMEN_OK) return su;
  }
  if (flags & LUMEN_MF_AREAS)
    LUMEN_REQUIRE(ctx, isfinite(opts->auc_window) && opts->auc_window > 0,
                  "fit options (%s): window %g min, expected > 0", mname, opts->auc_window);
  if (opts->weights) {
    double sw = 0;
    for (int i = 0; i < n; ++i) {
      LUMEN_REQUIRE(ctx, isfinite(opts->weights[i]) && opts->weights[i] >= 0,
                    "fit options: weight %d is %g, expected finite and >= 0", i, opts->weights[i]);
      sw += opts->weights[i];
    }
    LUMEN_REQUIRE(ctx, sw > 0, "fit options: every weight is zero");
  }
  return LUMEN_OK;
}

/* Bounds and starts in fit-parameter space: the preset's defaults, overridden per parameter. */
static lumen_status set_bounds_and_starts(lumen_ctx *ctx, lumen_fit_plan *pl, const lumen_fit_options *opts,
                                          const char *mname) {
  const lumen_model m = pl->model;
  const int np = pl->np;
  double ds[LUMEN_FIT_MAX_PARAMS] = {0}, dl[LUMEN_FIT_MAX_PARAMS] = {0}, dh[LUMEN_FIT_MAX_PARAMS] = {0};
  lumen_model_defaults_preset(m, (int)opts->bounds_preset, ds, dl, dh);
  lumen_status st = LUMEN_OK;
  for (int k = 0; k < np && st == LUMEN_OK; ++k) {
    const char *pn = lumen_fit_param_name(m, k);
    double lo = isnan(opts->lo[k]) ? dl[k] : opts->lo[k];
    double hi = isnan(opts->hi[k]) ? dh[k] : opts->hi[k];
    if (isnan(opts->lo[k]) && !isnan(opts->hi[k]) && hi < lo) lo = hi; /* a user hi below the default lo */
    if (isnan(opts->hi[k]) && !isnan(opts->lo[k]) && lo > hi) hi = lo;
    if (!(lo <= hi) || isinf(lo) || isnan(hi)) {
      st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "fit options (%s): bounds of %s are [%g, %g], expected lo <= hi",
                      mname, pn, lo, hi);
      break;
    }
    pl->lo[k] = lo;
    pl->hi[k] = hi;
    pl->fixed[k] = opts->fixed[k] ? 1 : 0;
    if (!isnan(opts->start[k])) {
      if (!(opts->start[k] >= lo && opts->start[k] <= hi)) {
        st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                        "fit options (%s): start of %s is %g, outside its bounds [%g, %g] (state %s)", mname, pn,
                        opts->start[k], lo, hi, lumen_fit_state_name(LUMEN_FIT_START_OUT_OF_BOUNDS));
        break;
      }
      pl->start[k] = opts->start[k];
      pl->start_given[k] = 1;
    } else {
      pl->start[k] = fmin(fmax(ds[k], lo), hi);
    }
  }
  return st;
}

/* The shared grids (times, AIF, steps, AIF integral, weights) in double and float. */
static lumen_status set_grids(lumen_ctx *ctx, lumen_fit_plan *pl, const lumen_fit_options *opts, const double *x,
                              const double *cp) {
  const int n = pl->n;
  const int is_dce = (lumen_model_flags(pl->model) & LUMEN_MF_AIF) != 0;
  size_t nn = (size_t)n;
  pl->block = calloc(1, nn * 5 * (sizeof(double) + sizeof(float)));
  if (!pl->block) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "fit plan: out of memory for %d samples", n);
  double *d = pl->block;
  pl->t64 = d; pl->cp64 = d + nn; pl->dt64 = d + 2 * nn; pl->icp64 = d + 3 * nn; pl->w64 = d + 4 * nn;
  float *f = (float *)(d + 5 * nn);
  pl->t32 = f; pl->cp32 = f + nn; pl->dt32 = f + 2 * nn; pl->icp32 = f + 3 * nn; pl->w32 = f + 4 * nn;
  pl->sum_w = 0;
  for (int i = 0; i < n; ++i) {
    pl->t64[i] = x[i];
    pl->t32[i] = (float)x[i];
    pl->cp64[i] = cp ? cp[i] : 0.0;
    pl->cp32[i] = (float)pl->cp64[i];
    pl->w64[i] = opts->weights ? opts->weights[i] : 1.0;
    pl->w32[i] = (float)pl->w64[i];
    pl->sum_w += pl->w64[i];
  }
  lumen_grid_setup_f64(&pl->g64, n, pl->t64, is_dce ? pl->cp64 : NULL, pl->dt64, pl->icp64);
  lumen_grid_setup_f32(&pl->g32, n, pl->t32, is_dce ? pl->cp32 : NULL, pl->dt32, pl->icp32);
  int conv = opts->conv == LUMEN_FIT_CONV_TRAPEZOID ? LUMEN_CONV_TRAPEZOID : LUMEN_CONV_EXACT;
  pl->g64.conv = conv; pl->g32.conv = conv;
  pl->g64.tr = opts->tr; pl->g32.tr = (float)opts->tr;
  pl->g64.r1 = opts->r1; pl->g32.r1 = (float)opts->r1;
  pl->opts.weights = opts->weights ? pl->w64 : NULL;
  pl->opts.backend = NULL; /* the canonical request lives in pl->requested */
  pl->step = (x[n - 1] - x[0]) / (double)(n - 1);
  for (int m = 0; m <= LUMEN_FIT_MAX_PARAMS; ++m) pl->t975_m[m] = lumen_fit_t975(n - m);
  return LUMEN_OK;
}

/* ------------------------------------------------------------------ create / destroy */
/* The checks of the samples, the AIF and the options, before anything is allocated. */
static lumen_status check_plan_inputs(lumen_ctx *ctx, const lumen_fit_options *opts, int n, const double *x,
                                      const double *cp) {
  LUMEN_REQUIRE(ctx, (int)opts->model >= 0 && opts->model < LUMEN_MODEL_COUNT,
                "fit options: model %d is not a lumen model", (int)opts->model);
  const lumen_model m = opts->model;
  const char *mname = lumen_model_name(m);
  const int flags = lumen_model_flags(m);
  const int is_dce = (flags & LUMEN_MF_AIF) != 0;
  const int np = lumen_model_np(m);
  LUMEN_REQUIRE(ctx, n >= 2 && n >= np + (lumen_model_is_closed_form(m) ? 0 : 1),
                "fit plan (%s): %d samples given, expected at least %d", mname, n,
                np + (lumen_model_is_closed_form(m) ? 0 : 1) > 2 ? np + (lumen_model_is_closed_form(m) ? 0 : 1)
                                                                  : 2);
  LUMEN_REQUIRE(ctx, x != NULL, "fit plan (%s): the sample %s are NULL", mname,
                is_dce ? "times" : "x values (flip angles / TI / times)");
  for (int i = 0; i < n; ++i)
    LUMEN_REQUIRE(ctx, isfinite(x[i]), "fit plan (%s): sample x[%d] is not finite", mname, i);
  if (flags & LUMEN_MF_X_TIMES)
    for (int i = 1; i < n; ++i)
      LUMEN_REQUIRE(ctx, x[i] > x[i - 1],
                    "fit plan (%s): times must increase strictly, but x[%d] = %g follows x[%d] = %g", mname, i,
                    x[i], i - 1, x[i - 1]);
  if (is_dce && x[n - 1] - x[0] > LUMEN_DCE_SPAN_MAX_MIN)  /* DCE times are minutes (Python, MEX, C alike) */
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "fit plan (%s): the times span %g min (%.1f h), implausible for one DCE acquisition (at most "
                      "%g min): times are in minutes; in seconds? divide them by 60 (%g min)",
                      mname, x[n - 1] - x[0], (x[n - 1] - x[0]) / 60.0, LUMEN_DCE_SPAN_MAX_MIN,
                      (x[n - 1] - x[0]) / 60.0);
  if (is_dce) {
    LUMEN_REQUIRE(ctx, cp != NULL, "fit plan (%s): the model needs an AIF (plasma concentration), cp is NULL",
                  mname);
    for (int i = 0; i < n; ++i)
      LUMEN_REQUIRE(ctx, isfinite(cp[i]), "fit plan (%s): AIF sample cp[%d] is not finite", mname, i);
  }
  return check_fit_options(ctx, opts, n, x, mname);
}

lumen_status lumen_fit_plan_create(lumen_ctx *ctx, const lumen_fit_options *opts, int n, const double *x,
                                   const double *cp, lumen_fit_plan **out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  LUMEN_REQUIRE_NOT_NULL(ctx, opts);
  lumen_status st = check_plan_inputs(ctx, opts, n, x, cp);
  if (st != LUMEN_OK) return st;
  const lumen_model m = opts->model;
  const char *mname = lumen_model_name(m);
  const int np = lumen_model_np(m);

  lumen_fit_plan *pl = calloc(1, sizeof *pl);
  if (!pl) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "fit plan: out of memory");
  pl->opts = *opts;
  pl->model = m;
  pl->n = n;
  pl->np = np;
  pl->npub = np;
  pl->nd = lumen_fit_derived_count(m);
  st = set_bounds_and_starts(ctx, pl, opts, mname);
  if (st == LUMEN_OK) {
    pl->has_linear_start = opts->linear_start && np > 0 && !(lumen_model_flags(m) & LUMEN_MF_AREAS);
    st = set_grids(ctx, pl, opts, x, cp);
  }
  if (st != LUMEN_OK) {
    free(pl);
    return st;
  }
  make_extra_starts(pl);
#if LUMEN_TEST_HOOKS
  /* test builds: LUMEN_TEST_CXM_GRID_START=1 starts 2CXM from the grid of fit/cxm_grid.h on tiers
     cpu and cpu_single (bench_fit's measurement of it; not the default: docs/BENCHMARKS.md) */
  const char *cxm_env = getenv("LUMEN_TEST_CXM_GRID_START");
  if ((lumen_model_flags(m) & LUMEN_MF_2CXM_FORM) && pl->has_linear_start && cxm_env && cxm_env[0] == '1')
    pl->cxm_grid = lumen_cxm_grid_create(&pl->g64, pl->opts.weights ? pl->w64 : NULL);
#endif
  st = select_backend(ctx, pl, opts->backend);
  if (st != LUMEN_OK) {
    lumen_fit_plan_destroy(pl);
    return st;
  }
  lumen_log(ctx, LUMEN_LOG_DEBUG, "fit plan %s: %d samples, backend requested %s, selected %s (%s)", mname, n,
            pl->requested, pl->selected, pl->reason);
  *out = pl;
  return LUMEN_OK;
}

void lumen_fit_plan_destroy(lumen_fit_plan *plan) {
  if (!plan) return;
  lumen_cxm_grid_destroy(plan->cxm_grid);
  free(plan->block);
  free(plan);
}

int lumen_fit_plan_samples(const lumen_fit_plan *plan) { return plan ? plan->n : 0; }
lumen_model lumen_fit_plan_model(const lumen_fit_plan *plan) { return plan ? plan->model : LUMEN_MODEL_COUNT; }
const char *lumen_fit_plan_backend_requested(const lumen_fit_plan *plan) { return plan ? plan->requested : ""; }
const char *lumen_fit_plan_backend_selected(const lumen_fit_plan *plan) { return plan ? plan->selected : ""; }
const char *lumen_fit_plan_backend_reason(const lumen_fit_plan *plan) { return plan ? plan->reason : ""; }
