/* Analytic checks: noise-free synthetic curves of every fitted model are recovered to 1e-4
   relative in double precision, on the accelerated tier (float64) and on the standard tier;
   the closed forms (vfa-linear, vfa-2pt) are exact; AUC equals the analytic integral. */
#include "test_support.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lumen/aif.h"
#include "lumen_build_config.h"
#include "models/models_f64.h"

#define NMAX 128

typedef struct {
  lumen_model model;
  double p[4]; /* fit parameters */
} truth_case;

static int make_x(lumen_model m, double *x, double *cp, double *tr) {
  *tr = 0;
  if (lumen_model_flags(m) & LUMEN_MF_AIF) { /* the DCE models and AUC */
    lumen_test_parker_grid(80, 0.5, 0, x, cp);
    return 80;
  }
  if (lumen_model_flags(m) & LUMEN_MF_X_FLIP) {
    static const double deg[6] = {2, 5, 10, 15, 20, 30};
    for (int i = 0; i < 6; ++i) x[i] = deg[i] * 3.14159265358979323846 / 180.0;
    *tr = 0.005;
    return 6;
  }
  int n = 10; /* IR / SR times, s */
  for (int i = 0; i < n; ++i) x[i] = 0.05 * pow(1.6, i);
  return n;
}

static void run_case(lumen_ctx *ctx, const truth_case *tc, const char *tier, int precision, int conv) {
  double x[NMAX], cp[NMAX], tr, y[NMAX], dt[NMAX], icp[NMAX];
  int n = make_x(tc->model, x, cp, &tr);
  int is_dce = lumen_model_is_dce(tc->model);
  lumen_grid_f64 g;
  lumen_grid_setup_f64(&g, n, x, is_dce ? cp : NULL, dt, icp);
  g.tr = tr;
  g.r1 = 4.5;
  g.conv = conv;
  double consts[LUMEN_FIT_NCONSTS] = {1.2, 1.0};
  lumen_model_eval_f64(tc->model, &g, consts, tc->p, y, NULL, NULL);
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.model = tc->model;
  o.backend = tier;
  o.precision = precision;
  o.conv = conv ? LUMEN_FIT_CONV_TRAPEZOID : LUMEN_FIT_CONV_EXACT;
  o.tolerance = 1e-14;
  o.max_iterations = 500;
  o.tr = tr;
  o.r1 = 4.5;
  lumen_fit_plan *plan = NULL;
  lumen_status st = lumen_fit_plan_create(ctx, &o, n, x, is_dce ? cp : NULL, &plan);
  if (st != LUMEN_OK) print_error("%s\n", lumen_ctx_last_error(ctx));
  assert_int_equal(st, LUMEN_OK);
  double out[4], lo[4], hi[4], chi2, r2;
  int32_t state;
  lumen_fit_results r = {.params = out, .state = &state, .chi2 = &chi2, .r2 = &r2, .ci_lo = lo, .ci_hi = hi};
  assert_int_equal(lumen_fit_execute_f64(ctx, plan, 1, y, consts, &r), LUMEN_OK);
  double pub[4];
  lumen_model_to_public_f64(tc->model, tc->p, pub);
  int np = lumen_model_param_count(tc->model);
  char what[128];
  if (state != LUMEN_FIT_CONVERGED) print_error("%s on %s: state %s\n", lumen_model_name(tc->model), tier,
                                                lumen_fit_state_name((lumen_fit_state)state));
  assert_int_equal(state, LUMEN_FIT_CONVERGED);
  for (int k = 0; k < np; ++k) {
    snprintf(what, sizeof what, "%s %s (%s, %s, %s)", lumen_model_name(tc->model), lumen_model_param_name(tc->model, k),
             tier, precision ? "float64" : "float32", conv ? "trapezoid" : "exact");
    lumen_test_assert_close(out[k], pub[k], 1e-9, 1e-4, what);
  }
  assert_true(r2 > 0.999999);
  /* derived values, checked by name against their definitions */
  int nd = lumen_fit_derived_count(tc->model);
  double der[8];
  r.derived = der;
  assert_int_equal(lumen_fit_execute_f64(ctx, plan, 1, y, consts, &r), LUMEN_OK);
  lumen_model m = tc->model;
  for (int k = 0; k < nd; ++k) {
    const char *name = lumen_fit_derived_name(m, k);
    double want = NAN;
    if (strcmp(name, "kep") == 0) want = pub[0] / pub[1];
    else if (strcmp(name, "R1") == 0) want = 1.0 / pub[0];
    else if (strcmp(name, "E") == 0) want = m == LUMEN_MODEL_2CXM ? tc->p[0] : pub[0] / pub[1];
    else if (strcmp(name, "PS") == 0)
      want = m == LUMEN_MODEL_2CXM ? pub[3] * tc->p[0] / (1 - tc->p[0]) : pub[0] * pub[1] / (pub[1] - pub[0]);
    else if (strcmp(name, "vp") == 0) want = (pub[1] + pub[0] * pub[1] / (pub[1] - pub[0])) * pub[2];
    snprintf(what, sizeof what, "%s derived %s (%s)", lumen_model_name(m), name, tier);
    lumen_test_assert_close(der[k], want, 1e-9, 1e-4, what);
  }
  lumen_fit_plan_destroy(plan);
}

static const truth_case cases[] = {
    {LUMEN_MODEL_TOFTS, {0.25, 0.35, 0, 0}},    {LUMEN_MODEL_TOFTS, {0.05, 0.1, 0, 0}},
    {LUMEN_MODEL_TOFTS, {0.6, 0.5, 0, 0}},      {LUMEN_MODEL_ETOFTS, {0.2, 0.3, 0.05, 0}},
    {LUMEN_MODEL_ETOFTS, {0.08, 0.4, 0.02, 0}}, {LUMEN_MODEL_PATLAK, {0.05, 0.05, 0, 0}},
    {LUMEN_MODEL_PATLAK, {0.01, 0.1, 0, 0}},    {LUMEN_MODEL_2CUM, {0.05, 0.5, 0.1, 0}},
    {LUMEN_MODEL_2CUM, {0.1, 1.0, 0.05, 0}},    {LUMEN_MODEL_2CXM, {0.3, 0.2, 0.05, 0.6}},
    {LUMEN_MODEL_2CXM, {0.1, 0.3, 0.08, 1.2}},  {LUMEN_MODEL_FXR, {0.2, 0.3, 0.05, 0}},
    {LUMEN_MODEL_VFA, {1.2, 1000, 0, 0}},       {LUMEN_MODEL_VFA, {0.4, 50, 0, 0}},
    {LUMEN_MODEL_VFA_LINEAR, {1.2, 1000, 0, 0}}, {LUMEN_MODEL_VFA_2PT, {0.8, 200, 0, 0}},
    {LUMEN_MODEL_IR, {0.9, 500, 0, 0}},         {LUMEN_MODEL_SR, {1.1, 300, 0, 0}},
};

static void test_accelerated_f64(void **s) {
  lumen_ctx *ctx = *s;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    run_case(ctx, &cases[i], "cpu", LUMEN_FIT_FLOAT64, 0);
    run_case(ctx, &cases[i], "cpu_single", LUMEN_FIT_FLOAT64, 1);
  }
}

static void test_standard(void **s) {
  lumen_ctx *ctx = *s;
  if (!LUMEN_HAVE_GSL) skip();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    run_case(ctx, &cases[i], "standard", LUMEN_FIT_FLOAT64, 0);
    run_case(ctx, &cases[i], "standard", LUMEN_FIT_FLOAT64, 1);
  }
}

/* Delay fitting recovers a known arterial delay (noise-free Tofts, 7.5 s = 1.5 frames). */
static void test_delay(void **s) {
  lumen_ctx *ctx = *s;
  double x[NMAX], cp[NMAX], tr, y[NMAX], dt[NMAX], icp[NMAX], cps[NMAX], icps[NMAX];
  int n = make_x(LUMEN_MODEL_TOFTS, x, cp, &tr);
  const double delay = 0.125, p[2] = {0.2, 0.3};
  lumen_grid_f64 g;
  lumen_grid_setup_f64(&g, n, x, cp, dt, icp);
  lumen_aif_shift_f64(n, x, cp, delay, cps, icps);
  g.cp = cps;
  g.icp = icps;
  lumen_model_eval_f64(LUMEN_MODEL_TOFTS, &g, NULL, p, y, NULL, NULL);
  const char *tiers[2] = {"cpu", "standard"};
  for (int ti = 0; ti < (LUMEN_HAVE_GSL ? 2 : 1); ++ti) {
    lumen_fit_options o;
    lumen_fit_options_init(&o);
    o.backend = tiers[ti];
    o.fit_delay = 1;
    o.precision = LUMEN_FIT_FLOAT64;
    o.tolerance = 1e-14;
    lumen_fit_plan *plan = NULL;
    assert_int_equal(lumen_fit_plan_create(ctx, &o, n, x, cp, &plan), LUMEN_OK);
    double out[2], d;
    int32_t state;
    lumen_fit_results r = {.params = out, .state = &state, .delay = &d};
    assert_int_equal(lumen_fit_execute_f64(ctx, plan, 1, y, NULL, &r), LUMEN_OK);
    assert_int_equal(state, LUMEN_FIT_CONVERGED);
    lumen_test_assert_close(d, delay, 1e-4, 0, "delay");
    lumen_test_assert_close(out[0], p[0], 0, 1e-3, "Ktrans (delay fitted)");
    lumen_test_assert_close(out[1], p[1], 0, 1e-3, "ve (delay fitted)");
    lumen_fit_plan_destroy(plan);
  }
}

/* AUC of Ct = a t (linear) over [0, T] is a T^2 / 2; the normalised AUC divides by that of cp. */
static void test_auc(void **s) {
  lumen_ctx *ctx = *s;
  enum { n = 61 };
  double t[n], cp[n], y[n];
  for (int i = 0; i < n; ++i) {
    t[i] = i * 0.05;  /* 0..3 min */
    y[i] = 0.2 * t[i];
    cp[i] = 1.0;
  }
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.model = LUMEN_MODEL_AUC;
  o.auc_window = 1.5;
  lumen_fit_plan *plan = NULL;
  assert_int_equal(lumen_fit_plan_create(ctx, &o, n, t, cp, &plan), LUMEN_OK);
  double der[4];
  int32_t state;
  lumen_fit_results r = {.derived = der, .state = &state};
  assert_int_equal(lumen_fit_execute_f64(ctx, plan, 1, y, NULL, &r), LUMEN_OK);
  assert_int_equal(state, LUMEN_FIT_CONVERGED);
  assert_string_equal(lumen_fit_derived_name(LUMEN_MODEL_AUC, 0), "AUC");
  assert_string_equal(lumen_fit_derived_name(LUMEN_MODEL_AUC, 1), "AUC_window");
  lumen_test_assert_close(der[0], 0.2 * 3 * 3 / 2, 1e-6, 1e-6, "AUC whole");
  lumen_test_assert_close(der[1], 0.2 * 1.5 * 1.5 / 2, 1e-6, 1e-6, "AUC 90 s");
  lumen_test_assert_close(der[2], 0.2 * 3 * 3 / 2 / 3, 1e-6, 1e-6, "AUC whole normalised");
  lumen_test_assert_close(der[3], 0.2 * 1.5 * 1.5 / 2 / 1.5, 1e-6, 1e-6, "AUC 90 s normalised");
  lumen_fit_plan_destroy(plan);
}

LUMEN_TEST_MAIN(LUMEN_TEST_WITH_CTX(test_accelerated_f64),
                LUMEN_TEST_WITH_CTX(test_standard),
                LUMEN_TEST_WITH_CTX(test_delay),
                LUMEN_TEST_WITH_CTX(test_auc))
