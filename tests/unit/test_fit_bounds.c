/* Bounds: the default-bounds presets (physical, rocketship), the at_bound state with its
   per-parameter counts and per-curve mask on every tier (cpu with and without lanes, cpu_single,
   standard, the cuda path on the fake device, curves that fell through), the model math at the
   corners of the physical boxes, and the unit-plausibility checks of lumen_fit_plan_create.
   References: the truths the noise-free curves are made from, and the bounds themselves. */
#include "test_support.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fit/fit_cuda.h"
#include "lumen/aif.h"
#include "lumen_build_config.h"
#include "models/models_f32.h"
#include "models/models_f64.h"

#define N 80
#define NC 24 /* copies of a curve per execute: enough for the lane path */

/* Parker AIF (Hct 0.42, 1 min arrival), 5 s frames. */
static void make_grid(double *t, double *cp) { lumen_test_parker_grid(N, 1.0, 1, t, cp); }

/* NC noise-free copies of a Tofts curve (Ktrans, ve), as float and double rows. */
static void make_tofts(double ktrans, double ve, float *yf, double *yd) {
  double t[N], cp[N], dt[N], icp[N], y[N], p[2] = {ktrans, ve};
  make_grid(t, cp);
  lumen_grid_f64 g;
  lumen_grid_setup_f64(&g, N, t, cp, dt, icp);
  lumen_model_eval_f64(LUMEN_MODEL_TOFTS, &g, NULL, p, y, NULL, NULL);
  for (int c = 0; c < NC; ++c)
    for (int i = 0; i < N; ++i) {
      yf[c * N + i] = (float)y[i];
      yd[c * N + i] = y[i];
    }
}

/* make_tofts of (Ktrans, ve) in static storage: the float rows yf and double rows yd. */
typedef struct tofts_curves {
  float yf[NC * N];
  double yd[NC * N];
} tofts_curves;
static const tofts_curves *tofts_curves_of(double ktrans, double ve) {
  static tofts_curves d;
  make_tofts(ktrans, ve, d.yf, d.yd);
  return &d;
}

typedef struct fit_out {
  double params[NC * 2], chi2[NC], r2[NC], cilo[NC * 2], cihi[NC * 2];
  int32_t state[NC], mask[NC];
  lumen_fit_results r;
} fit_out;

/* A plan of opt on the Parker grid (created, asserted). */
static lumen_fit_plan *grid_plan(lumen_ctx *ctx, const lumen_fit_options *opt) {
  double t[N], cp[N];
  make_grid(t, cp);
  lumen_fit_plan *plan = NULL;
  assert_int_equal(lumen_fit_plan_create(ctx, opt, N, t, cp, &plan), LUMEN_OK);
  return plan;
}

/* Fits the NC curves with Tofts on a backend, preset, precision; f64 data when f64. */
static void fit_tofts(const char *backend, lumen_fit_bounds_preset preset, lumen_fit_precision prec, int f64,
                      const float *yf, const double *yd, fit_out *o) {
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_fit_options opt;
  lumen_fit_options_init(&opt);
  opt.backend = backend;
  opt.bounds_preset = preset;
  opt.precision = prec;
  lumen_fit_plan *plan = grid_plan(ctx, &opt);
  memset(o, 0, sizeof *o);
  o->r = (lumen_fit_results){.params = o->params, .state = o->state, .chi2 = o->chi2, .r2 = o->r2,
                             .ci_lo = o->cilo, .ci_hi = o->cihi, .bound_mask = o->mask};
  lumen_status st = f64 ? lumen_fit_execute_f64(ctx, plan, NC, yd, NULL, &o->r)
                        : lumen_fit_execute(ctx, plan, NC, yf, NULL, &o->r);
  if (st != LUMEN_OK) print_error("%s\n", lumen_ctx_last_error(ctx));
  assert_int_equal(st, LUMEN_OK);
  lumen_fit_plan_destroy(plan);
  lumen_ctx_destroy(ctx);
}

/* Every curve: state, mask, and the values kept (finite chi2, R^2, CIs). */
static void expect_all(const fit_out *o, lumen_fit_state state, int32_t mask, const char *what) {
  for (int c = 0; c < NC; ++c) {
    if (o->state[c] != (int32_t)state || o->mask[c] != mask)
      print_error("%s: curve %d state %s mask %d, expected %s mask %d (Ktrans %.9g ve %.9g)\n", what, c,
                  lumen_fit_state_name((lumen_fit_state)o->state[c]), o->mask[c], lumen_fit_state_name(state), mask,
                  o->params[2 * c], o->params[2 * c + 1]);
    assert_int_equal(o->state[c], state);
    assert_int_equal(o->mask[c], mask);
    assert_true(isfinite(o->params[2 * c]) && isfinite(o->params[2 * c + 1]));
    assert_true(isfinite(o->chi2[c]) && isfinite(o->r2[c]));
    if (state == LUMEN_FIT_CONVERGED) assert_true(o->r2[c] > 0.999999);
    assert_true(isfinite(o->cilo[2 * c]) && isfinite(o->cihi[2 * c]));
  }
  assert_int_equal(o->r.state_counts[state], NC);
  for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) {
    assert_int_equal(o->r.at_lower[k], (mask >> (2 * k)) & 1 ? NC : 0);
    assert_int_equal(o->r.at_upper[k], (mask >> (2 * k + 1)) & 1 ? NC : 0);
  }
}

static void expect_params(const fit_out *o, double ktrans, double ve, double rtol, const char *what) {
  char msg[160];
  for (int c = 0; c < NC; ++c) {
    snprintf(msg, sizeof msg, "%s Ktrans", what);
    lumen_test_assert_close(o->params[2 * c], ktrans, 0, rtol, msg);
    snprintf(msg, sizeof msg, "%s ve", what);
    lumen_test_assert_close(o->params[2 * c + 1], ve, 0, rtol, msg);
  }
}

/* the tiers that run here: cpu float32 (lanes when the CPU has them), cpu float64 (scalar),
   cpu_single, standard */
typedef struct tier_case {
  const char *backend;
  lumen_fit_precision prec;
  int f64;
} tier_case;
static const tier_case k_tiers[] = {
    {"cpu", LUMEN_FIT_FLOAT32, 0},        {"cpu", LUMEN_FIT_FLOAT64, 1}, {"cpu_single", LUMEN_FIT_FLOAT32, 0},
    {"cpu_single", LUMEN_FIT_FLOAT64, 0}, {"standard", LUMEN_FIT_FLOAT32, 1},
};
#define NTIERS (sizeof k_tiers / sizeof k_tiers[0])

static int tier_here(const char *backend) { return strcmp(backend, "standard") != 0 || LUMEN_HAVE_GSL; }

/* fit_tofts of d on tier tc with a preset; what (96 chars) = "<backend> <precision> <name>". */
static void fit_tier(const tier_case *tc, lumen_fit_bounds_preset preset, const char *name, const tofts_curves *d,
                     fit_out *o, char *what) {
  snprintf(what, 96, "%s %s %s", tc->backend, lumen_fit_precision_name(tc->prec), name);
  fit_tofts(tc->backend, preset, tc->prec, tc->f64, d->yf, d->yd, o);
}

/* Tofts, Ktrans 0.1, ve 0.01: ROCKETSHIP's ve >= 0.02 pins it (at_bound, ve lower); the physical
   preset recovers it (converged). */
static void test_small_ve(void **s) {
  (void)s;
  const tofts_curves *d = tofts_curves_of(0.1, 0.01);
  fit_out o;
  char what[96];
  for (size_t i = 0; i < NTIERS; ++i) {
    const tier_case *tc = &k_tiers[i];
    if (!tier_here(tc->backend)) continue;
    fit_tier(tc, LUMEN_FIT_BOUNDS_ROCKETSHIP, "rocketship", d, &o, what);
    expect_all(&o, LUMEN_FIT_AT_BOUND, 1 << 2, what);
    for (int c = 0; c < NC; ++c) lumen_test_assert_close(o.params[2 * c + 1], 0.02, 1e-7, 0, what);
    fit_tier(tc, LUMEN_FIT_BOUNDS_PHYSICAL, "physical", d, &o, what);
    expect_all(&o, LUMEN_FIT_CONVERGED, 0, what);
    expect_params(&o, 0.1, 0.01, 1e-3, what);
  }
}

/* Tofts, Ktrans 3 /min, ve 0.3: above ROCKETSHIP's Ktrans <= 2 (at_bound, Ktrans upper, ve the
   constrained optimum, the same on every tier); the physical preset (Ktrans <= 5) recovers it. */
static void test_large_ktrans(void **s) {
  (void)s;
  const tofts_curves *d = tofts_curves_of(3.0, 0.3);
  fit_out o;
  char what[96];
  double ve_ref = NAN;
  for (size_t i = 0; i < NTIERS; ++i) {
    const tier_case *tc = &k_tiers[i];
    if (!tier_here(tc->backend)) continue;
    fit_tier(tc, LUMEN_FIT_BOUNDS_ROCKETSHIP, "rocketship", d, &o, what);
    expect_all(&o, LUMEN_FIT_AT_BOUND, 1 << 1, what);
    for (int c = 0; c < NC; ++c) lumen_test_assert_close(o.params[2 * c], 2.0, 1e-5, 0, what);
    /* the pinned fit compensates: ve below the truth, the same on every tier */
    assert_true(o.params[1] < 0.3);
    if (isnan(ve_ref)) ve_ref = o.params[1];
    lumen_test_assert_close(o.params[1], ve_ref, 0, 1e-3, what);
    fit_tier(tc, LUMEN_FIT_BOUNDS_PHYSICAL, "physical", d, &o, what);
    expect_all(&o, LUMEN_FIT_CONVERGED, 0, what);
    expect_params(&o, 3.0, 0.3, 1e-3, what);
  }
}

/* An explicit bound wins over the preset; a fixed parameter on its bound is not reported. */
/* lumen_fit_options_check: the plan's own checks without data (front ends call it before reading) */
static void test_options_check(void **s) {
  lumen_ctx *ctx = *s;
  lumen_fit_options opt;
  lumen_fit_options_init(&opt);
  assert_int_equal(lumen_fit_options_check(ctx, &opt), LUMEN_OK);
  opt.lo[1] = 0.5;  /* ve in [0.5, 1] with a start of 0.1 */
  opt.hi[1] = 1;
  opt.start[1] = 0.1;
  assert_int_equal(lumen_fit_options_check(ctx, &opt), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "outside its bounds"));
  lumen_fit_options_init(&opt);
  opt.backend = "bogus";
  assert_int_equal(lumen_fit_options_check(ctx, &opt), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "bogus"));
  lumen_fit_options_init(&opt);
  opt.model = LUMEN_MODEL_VFA;
  opt.tr = 0.005;
  assert_int_equal(lumen_fit_options_check(ctx, &opt), LUMEN_OK);
  assert_int_equal(lumen_fit_options_check(ctx, NULL), LUMEN_ERR_INVALID_ARGUMENT);
}

static void test_overrides_and_fixed(void **s) {
  (void)s;
  static float yf[NC * N];
  static double yd[NC * N];
  make_tofts(0.1, 0.01, yf, yd);
  double t[N], cp[N];
  make_grid(t, cp);
  lumen_ctx *ctx = lumen_test_ctx();
  for (int fixed = 0; fixed < 2; ++fixed) {
    lumen_fit_options opt;
    lumen_fit_options_init(&opt);
    opt.bounds_preset = LUMEN_FIT_BOUNDS_ROCKETSHIP;
    opt.backend = "cpu";
    if (fixed) {  /* ve held on ROCKETSHIP's lower bound */
      opt.fixed[1] = 1;
      opt.start[1] = 0.02;
    } else {      /* ve's lower bound lowered below the truth */
      opt.lo[1] = 1e-3;
    }
    lumen_fit_plan *plan = NULL;
    assert_int_equal(lumen_fit_plan_create(ctx, &opt, N, t, cp, &plan), LUMEN_OK);
    double params[NC * 2];
    int32_t state[NC];
    lumen_fit_results r = {.params = params};
    r.state = state;  /* bound_mask NULL: the counts are still filled */
    assert_int_equal(lumen_fit_execute(ctx, plan, NC, yf, NULL, &r), LUMEN_OK);
    for (int c = 0; c < NC; ++c) {
      assert_int_equal(state[c], LUMEN_FIT_CONVERGED);
      if (fixed) {
        assert_true(params[2 * c + 1] == 0.02);
        assert_true(params[2 * c] > 0 && params[2 * c] < 0.1);  /* the best Ktrans with ve held at 0.02 */
      } else {
        lumen_test_assert_close(params[2 * c], 0.1, 0, 1e-3, "Ktrans, ve lo 1e-3");
        lumen_test_assert_close(params[2 * c + 1], 0.01, 0, 1e-3, "ve, ve lo 1e-3");
      }
    }
    for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) assert_true(r.at_lower[k] == 0 && r.at_upper[k] == 0);
    assert_int_equal(r.state_counts[LUMEN_FIT_AT_BOUND], 0);
    lumen_fit_plan_destroy(plan);
  }
  lumen_ctx_destroy(ctx);
}

/* Patlak, whose closed-form fit is exact: a truth with vp < 0 is clipped onto vp = 0 (physical
   lower bound) by the bounded linear solve, then confirmed by LM: at_bound on every tier, with
   Ktrans the constrained optimum (the same on every tier). */
static void test_patlak_clipped(void **s) {
  (void)s;
  double t[N], cp[N], dt[N], icp[N], y[N], p[2] = {0.05, -0.01};
  make_grid(t, cp);
  lumen_grid_f64 g;
  lumen_grid_setup_f64(&g, N, t, cp, dt, icp);
  lumen_model_eval_f64(LUMEN_MODEL_PATLAK, &g, NULL, p, y, NULL, NULL);
  lumen_ctx *ctx = lumen_test_ctx();
  double k_ref = NAN;
  for (size_t i = 0; i < NTIERS; ++i) {
    const tier_case *tc = &k_tiers[i];
    if (!tier_here(tc->backend)) continue;
    lumen_fit_options opt;
    lumen_fit_options_init(&opt);
    opt.model = LUMEN_MODEL_PATLAK;
    opt.backend = tc->backend;
    opt.precision = tc->prec;
    lumen_fit_plan *plan = NULL;
    assert_int_equal(lumen_fit_plan_create(ctx, &opt, N, t, cp, &plan), LUMEN_OK);
    double yd[NC * N], params[NC * 2];
    int32_t state[NC], mask[NC];
    for (int c = 0; c < NC; ++c) memcpy(yd + c * N, y, sizeof y);
    lumen_fit_results r = {.params = params, .state = state, .bound_mask = mask};
    assert_int_equal(lumen_fit_execute_f64(ctx, plan, NC, yd, NULL, &r), LUMEN_OK);
    for (int c = 0; c < NC; ++c) {
      assert_int_equal(state[c], LUMEN_FIT_AT_BOUND);
      assert_int_equal(mask[c], 1 << 2);
      assert_true(params[2 * c + 1] >= 0.0 && params[2 * c + 1] <= 1e-6); /* on the bound (the driver's rule) */
      if (isnan(k_ref)) k_ref = params[0];
      lumen_test_assert_close(params[2 * c], k_ref, 0, 1e-4, tc->backend);
    }
    assert_int_equal(r.at_lower[1], NC);
    lumen_fit_plan_destroy(plan);
  }
  lumen_ctx_destroy(ctx);
}

/* The cuda tier's path on the fake device (rows carry the mask), and curves that fell through
   from it to tier cpu after a kernel failure: the same states, masks and counts. */
static void test_cuda_path_and_fallthrough(void **s) {
  (void)s;
  const tofts_curves *d = tofts_curves_of(0.1, 0.01);
  fit_out o;
  for (int fail = 0; fail < 2; ++fail) {
    lumen_fitcu_fake f = {.devices = 1};
    lumen_fitcu_test_set_fake(&f);
    lumen_fitcu_test_fail_allocs(0, 0);
    lumen_fitcu_test_fail_kernel(fail ? 1 : 0);
    lumen_fitcu_test_max_chunk(0);
    fit_tofts("cuda", LUMEN_FIT_BOUNDS_ROCKETSHIP, LUMEN_FIT_FLOAT32, 0, d->yf, d->yd, &o);
    lumen_fitcu_test_set_fake(NULL);
    lumen_fitcu_test_fail_kernel(0);
    assert_int_equal(o.r.curves_per_tier[fail ? LUMEN_FIT_TIER_CPU : LUMEN_FIT_TIER_CUDA], NC);
    expect_all(&o, LUMEN_FIT_AT_BOUND, 1 << 2, fail ? "cuda -> cpu" : "cuda (fake)");
  }
}

/* Names round-trip; the default bounds of both presets. */
static void test_presets(void **s) {
  lumen_ctx *ctx = *s;
  for (int p = 0; p < LUMEN_FIT_BOUNDS_PRESET_COUNT; ++p) {
    lumen_fit_bounds_preset back = LUMEN_FIT_BOUNDS_PRESET_COUNT;
    assert_int_equal(lumen_fit_bounds_preset_parse(ctx, lumen_fit_bounds_preset_name((lumen_fit_bounds_preset)p), &back),
                     LUMEN_OK);
    assert_int_equal(back, p);
  }
  assert_string_equal(lumen_fit_bounds_preset_name(LUMEN_FIT_BOUNDS_PHYSICAL), "physical");
  assert_string_equal(lumen_fit_bounds_preset_name(LUMEN_FIT_BOUNDS_ROCKETSHIP), "rocketship");
  assert_string_equal(lumen_fit_bounds_preset_name(LUMEN_FIT_BOUNDS_PRESET_COUNT), "unknown");
  lumen_fit_bounds_preset b;
  assert_int_equal(lumen_fit_bounds_preset_parse(ctx, "RocketShip", &b), LUMEN_OK);
  assert_int_equal(b, LUMEN_FIT_BOUNDS_ROCKETSHIP);
  assert_int_equal(lumen_fit_bounds_preset_parse(ctx, "gpufit", &b), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "physical or rocketship"));
  assert_int_equal(lumen_fit_bounds_preset_parse(ctx, NULL, &b), LUMEN_ERR_INVALID_ARGUMENT);
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  assert_int_equal(o.bounds_preset, LUMEN_FIT_BOUNDS_PHYSICAL);
  assert_string_equal(lumen_fit_state_name(LUMEN_FIT_AT_BOUND), "at_bound");
  assert_int_equal(LUMEN_FIT_AT_BOUND, LUMEN_FIT_NOT_FITTED + 1);
  assert_true(lumen_fit_state_has_values(LUMEN_FIT_AT_BOUND) && lumen_fit_state_has_values(LUMEN_FIT_CONVERGED) &&
              lumen_fit_state_has_values(LUMEN_FIT_MAX_ITERATIONS) && !lumen_fit_state_has_values(LUMEN_FIT_SINGULAR) &&
              !lumen_fit_state_has_values(LUMEN_FIT_NOT_FITTED));

  /* public parameters: {model, param, preset, start, lo, hi} */
  static const struct {
    lumen_model m;
    int k, preset;
    double s, lo, hi;
  } want[] = {
      {LUMEN_MODEL_TOFTS, 0, 0, 2e-4, 0, 5},          {LUMEN_MODEL_TOFTS, 1, 0, 0.2, 1e-4, 1},
      {LUMEN_MODEL_TOFTS, 0, 1, 2e-4, 1e-7, 2},       {LUMEN_MODEL_TOFTS, 1, 1, 0.2, 0.02, 1},
      {LUMEN_MODEL_ETOFTS, 2, 0, 0.02, 0, 1},         {LUMEN_MODEL_ETOFTS, 2, 1, 0.02, 0.001, 1},
      {LUMEN_MODEL_PATLAK, 0, 0, 2e-4, 0, 5},         {LUMEN_MODEL_PATLAK, 1, 0, 0.02, 0, 1},
      {LUMEN_MODEL_2CUM, 0, 0, 2e-4, 0, 5},           {LUMEN_MODEL_2CUM, 1, 0, 0.35, 1e-4, 20},
      {LUMEN_MODEL_2CUM, 2, 0, 0.12, 0, 10},          {LUMEN_MODEL_2CXM, 0, 0, 2e-4, 0, 5},
      {LUMEN_MODEL_2CXM, 0, 1, 2e-4, 1e-7, 2},        {LUMEN_MODEL_2CXM, 1, 0, 0.15, 1e-4, 1},
      {LUMEN_MODEL_2CXM, 1, 1, 0.15, 0.05, 1},        {LUMEN_MODEL_2CXM, 2, 0, 0.02, 0.001, 1},
      {LUMEN_MODEL_FXR, 0, 0, 2e-4, 0, 5},            {LUMEN_MODEL_FXR, 1, 0, 0.2, 1e-4, 1},
      {LUMEN_MODEL_FXR, 2, 0, 0.01, 0, 100},          {LUMEN_MODEL_VFA, 0, 0, 1, 1e-4, 10},
      {LUMEN_MODEL_IR, 0, 1, 1, 1e-4, 10},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i) {
    double st, lo, hi;
    assert_int_equal(lumen_model_param_defaults_preset(want[i].m, want[i].k, (lumen_fit_bounds_preset)want[i].preset,
                                                       &st, &lo, &hi),
                     LUMEN_OK);
    if (st != want[i].s || lo != want[i].lo || hi != want[i].hi)
      print_error("%s %s (%s): %g in [%g, %g], expected %g in [%g, %g]\n", lumen_model_name(want[i].m),
                  lumen_model_param_name(want[i].m, want[i].k), want[i].preset ? "rocketship" : "physical", st, lo, hi,
                  want[i].s, want[i].lo, want[i].hi);
    assert_true(st == want[i].s && lo == want[i].lo && hi == want[i].hi);
  }
  /* the old query is the physical preset; every start lies inside its box in every preset */
  for (int m = 0; m < LUMEN_MODEL_COUNT; ++m)
    for (int k = 0; k < lumen_model_param_count((lumen_model)m); ++k) {
      double s0, l0, h0, s1, l1, h1;
      assert_int_equal(lumen_model_param_defaults((lumen_model)m, k, &s0, &l0, &h0), LUMEN_OK);
      assert_int_equal(lumen_model_param_defaults_preset((lumen_model)m, k, LUMEN_FIT_BOUNDS_PHYSICAL, &s1, &l1, &h1),
                       LUMEN_OK);
      assert_true(s0 == s1 && l0 == l1 && h0 == h1);
      for (int p = 0; p < LUMEN_FIT_BOUNDS_PRESET_COUNT; ++p) {
        assert_int_equal(lumen_model_param_defaults_preset((lumen_model)m, k, (lumen_fit_bounds_preset)p, &s1, &l1, &h1),
                         LUMEN_OK);
        assert_true(l1 <= s1 && s1 <= h1);
      }
    }
  assert_int_equal(lumen_model_param_defaults_preset(LUMEN_MODEL_TOFTS, 0, LUMEN_FIT_BOUNDS_PRESET_COUNT, NULL, NULL, NULL),
                   LUMEN_ERR_INVALID_ARGUMENT);
  /* a plan refuses an unknown preset */
  double t[N], cp[N];
  make_grid(t, cp);
  o.bounds_preset = LUMEN_FIT_BOUNDS_PRESET_COUNT;
  lumen_fit_plan *plan = NULL;
  assert_int_equal(lumen_fit_plan_create(ctx, &o, N, t, cp, &plan), LUMEN_ERR_INVALID_ARGUMENT);
  assert_null(plan);
}

/* Every DCE and T1 model at every corner of its physical box (M0 at 1: its box is "unbounded"):
   finite values and Jacobians in float and double, e.g. Ktrans = 0 (kep = 0 in the convolution
   weights), vp = 0, ve = 1e-4 with Ktrans = 5 (kep = 5e4 /min). */
static void test_model_math_at_bounds(void **s) {
  (void)s;
  double t[N], cp[N], dt[N], icp[N], y[N], jac[4 * N];
  float tf[N], cpf[N], dtf[N], icpf[N], yf[N], jacf[4 * N];
  make_grid(t, cp);
  for (int i = 0; i < N; ++i) { tf[i] = (float)t[i]; cpf[i] = (float)cp[i]; }
  const lumen_model models[] = {LUMEN_MODEL_TOFTS, LUMEN_MODEL_ETOFTS, LUMEN_MODEL_PATLAK, LUMEN_MODEL_2CUM,
                                LUMEN_MODEL_2CXM, LUMEN_MODEL_FXR, LUMEN_MODEL_VFA, LUMEN_MODEL_IR,
                                LUMEN_MODEL_SR};
  for (size_t j = 0; j < sizeof models / sizeof models[0]; ++j) {
    const lumen_model m = models[j];
    const int dce = lumen_model_is_dce(m);
    double x[N];
    float xf[N];
    for (int i = 0; i < N; ++i) {  /* T1 models: angles 1..80 deg, or times 0.05..4 s */
      x[i] = m == LUMEN_MODEL_VFA ? (i + 1) * 3.14159265358979 / 180.0 : 0.05 * (i + 1);
      xf[i] = (float)x[i];
    }
    lumen_grid_f64 g;
    lumen_grid_f32 gf;
    lumen_grid_setup_f64(&g, N, dce ? t : x, dce ? cp : NULL, dt, icp);
    lumen_grid_setup_f32(&gf, N, dce ? tf : xf, dce ? cpf : NULL, dtf, icpf);
    g.r1 = 4.5; gf.r1 = 4.5f;
    g.tr = m == LUMEN_MODEL_VFA ? 0.005 : m == LUMEN_MODEL_IR ? 6.0 : 0.0;
    gf.tr = (float)g.tr;
    double lo[4], hi[4];
    const int np = lumen_model_defaults(m, NULL, lo, hi);
    if (m == LUMEN_MODEL_VFA || m == LUMEN_MODEL_IR || m == LUMEN_MODEL_SR) lo[1] = hi[1] = 1.0;
    for (int corner = 0; corner < (1 << np); ++corner) {
      double p[4];
      float pf[4];
      for (int k = 0; k < np; ++k) {
        p[k] = (corner >> k) & 1 ? hi[k] : lo[k];
        pf[k] = (float)p[k];
      }
      lumen_model_eval_f64(m, &g, NULL, p, y, jac, NULL);
      lumen_model_eval_f32(m, &gf, NULL, pf, yf, jacf, NULL);
      for (int i = 0; i < N * (1 + np); ++i) {
        double v = i < N ? y[i] : jac[i - N];
        float vf = i < N ? yf[i] : jacf[i - N];
        if (!isfinite(v) || !isfinite(vf))
          print_error("%s corner %d (%g %g %g %g): %s %d not finite (double %g, float %g)\n", lumen_model_name(m),
                      corner, p[0], p[1], np > 2 ? p[2] : 0.0, np > 3 ? p[3] : 0.0, i < N ? "value" : "jacobian",
                      i < N ? i : i - N, v, (double)vf);
        assert_true(isfinite(v) && isfinite(vf));
      }
    }
  }
}

/* Values in a likely wrong unit are refused with the likely mistake named. */
static void expect_refused(lumen_ctx *ctx, lumen_model m, const double *x, int n, double tr, double r1,
                           const char *const *needles) {
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.model = m;
  o.tr = tr;
  o.r1 = r1;
  double t[N], cp[N];
  make_grid(t, cp);
  lumen_fit_plan *plan = NULL;
  lumen_status st = lumen_fit_plan_create(ctx, &o, n, x ? x : t, x ? NULL : cp, &plan);
  if (!needles) {
    if (st != LUMEN_OK) print_error("%s\n", lumen_ctx_last_error(ctx));
    assert_int_equal(st, LUMEN_OK);
    lumen_fit_plan_destroy(plan);
    return;
  }
  assert_int_equal(st, LUMEN_ERR_INVALID_ARGUMENT);
  assert_null(plan);
  for (int i = 0; needles[i]; ++i) {
    if (!strstr(lumen_ctx_last_error(ctx), needles[i]))
      print_error("message '%s' lacks '%s'\n", lumen_ctx_last_error(ctx), needles[i]);
    assert_non_null(strstr(lumen_ctx_last_error(ctx), needles[i]));
  }
}

static void test_unit_plausibility(void **s) {
  lumen_ctx *ctx = *s;
  const double deg[4] = {3, 6, 9, 15}, pi = 3.14159265358979323846;
  double rad[4], zero[4] = {0, 0.1, 0.2, 0.3}, above[4] = {0.1, 0.2, 0.3, 3.2};
  for (int i = 0; i < 4; ++i) rad[i] = deg[i] * pi / 180.0;
  const lumen_model vfa[3] = {LUMEN_MODEL_VFA, LUMEN_MODEL_VFA_LINEAR, LUMEN_MODEL_VFA_2PT};
  for (int j = 0; j < 3; ++j) {
    const char *const degrees[] = {lumen_model_name(vfa[j]), "flip angle x[1] = 6 is above pi",
                                   "radians; degrees? 6 deg = 0.105 rad", NULL};
    expect_refused(ctx, vfa[j], deg, 4, 0.005, 4.5, degrees);
    const char *const last[] = {"x[3] = 3.2 is above pi", NULL};
    expect_refused(ctx, vfa[j], above, 4, 0.005, 4.5, last);
    const char *const nonpos[] = {"flip angle x[0] = 0 is not above 0", "radians", NULL};
    expect_refused(ctx, vfa[j], zero, 4, 0.005, 4.5, nonpos);
    const char *const tr_ms[] = {"tr 5 s is not an SPGR TR (expected 0.0005..0.1 s); in ms? give 0.005", NULL};
    expect_refused(ctx, vfa[j], rad, 4, 5.0, 4.5, tr_ms);
    const char *const tr_min[] = {"tr 8e-05 s is not an SPGR TR", "in minutes? give 0.0048", NULL};
    expect_refused(ctx, vfa[j], rad, 4, 8e-5, 4.5, tr_min);
    expect_refused(ctx, vfa[j], rad, 4, 0.005, 4.5, NULL);  /* radians and seconds: fine */
    expect_refused(ctx, vfa[j], rad, 4, 0.1, 4.5, NULL);
    expect_refused(ctx, vfa[j], rad, 4, 0.5e-3, 4.5, NULL);
  }
  const char *const per_min[] = {"fxr: relaxivity r1 270 is not a gadolinium relaxivity in 1/(mM s)",
                                 "in 1/(mM min)? give 4.5", NULL};
  expect_refused(ctx, LUMEN_MODEL_FXR, NULL, N, 0, 270, per_min);
  const char *const per_ms[] = {"r1 0.0045 is not", "in 1/(mM ms)? give 4.5", NULL};
  expect_refused(ctx, LUMEN_MODEL_FXR, NULL, N, 0, 0.0045, per_ms);
  expect_refused(ctx, LUMEN_MODEL_FXR, NULL, N, 0, 4.5, NULL);
  expect_refused(ctx, LUMEN_MODEL_FXR, NULL, N, 0, 50, NULL);
  expect_refused(ctx, LUMEN_MODEL_TOFTS, NULL, N, 0, 270, NULL);  /* r1 is fxr's only */
}

LUMEN_TEST_MAIN(LUMEN_TEST_WITH_CTX(test_presets),
                LUMEN_TEST_WITH_CTX(test_options_check),
                cmocka_unit_test(test_model_math_at_bounds),
                LUMEN_TEST_WITH_CTX(test_unit_plausibility),
                cmocka_unit_test(test_small_ve),
                cmocka_unit_test(test_large_ktrans),
                cmocka_unit_test(test_overrides_and_fixed),
                cmocka_unit_test(test_patlak_clipped),
                cmocka_unit_test(test_cuda_path_and_fallthrough))
