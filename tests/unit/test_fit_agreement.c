/* Agreement of the accelerated float32 tier (`cpu`) with the standard tier (GSL, float64) on
   synthetic noisy curves (issue 3: median relative difference <= 1e-4 and 99th percentile
   <= 1e-2 for every fitted parameter of curves converged on both; states agree on >= 99.9 %;
   converged and at_bound count as one outcome, see outcome()).
   10^4 curves per model here to stay fast; LUMEN_AGREEMENT_CURVES=100000 in the environment runs
   the 10^5 (about a minute). LUMEN_TEST_TIER=cuda (or cpu_single) checks that tier instead
   of cpu with the same bars (skips without a GPU; LUMEN_TEST_FAKE_GPU=1 runs it on the fake device);
   every curve must then have been fitted on that tier.
   Synthetic set: Parker AIF (Hct 0.42, 1 min arrival), 5 s frames, 80 points, Gaussian noise
   SD 0.005 mM (VFA: 0.5 % of M0). */
#include "test_support.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lumen/aif.h"
#include "lumen_build_config.h"
#include "models/models_f64.h"

static const char *accel = "cpu"; /* the tier under test (LUMEN_TEST_TIER) */
static uint64_t rng = 0x1234567ULL;
static double uni(void) {
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return ((double)(rng >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double gauss(void) { return sqrt(-2 * log(uni())) * cos(6.283185307179586 * uni()); }
static double urange(double a, double b) { return a + (b - a) * uni(); }

/* The solver's outcome of a curve: at_bound is a converged fit with a parameter on a bound (values
   kept). Near a bound the tiers may stop a hair apart along a flat valley (Fp -> its upper bound in
   2CXM, ve -> 1 at small Ktrans: the projected LM lands on the bound, GSL's bound map 1e-4 of the
   range inside it), so the states are compared as outcomes, and the exact states reported too. */
static int outcome(int32_t s) { return s == LUMEN_FIT_AT_BOUND ? LUMEN_FIT_CONVERGED : s; }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void agreement(lumen_model m, int count) {
#if !LUMEN_HAVE_GSL
  (void)m;
  (void)count;
  skip();
#else
  lumen_ctx *ctx = lumen_test_ctx();
  const char *env_count = getenv("LUMEN_AGREEMENT_CURVES");
  if (env_count && atoi(env_count) > 0) count = atoi(env_count);
  int n;
  double x[80], cp[80], dt[80], icp[80], tr = 0;
  int dce = lumen_model_is_dce(m);
  if (dce) {
    n = 80;
    lumen_test_parker_grid(n, 1.0, 0, x, cp);
  } else {
    static const double deg[6] = {3, 6, 9, 15, 24, 35};
    n = 6;
    for (int i = 0; i < n; ++i) x[i] = deg[i] * 3.14159265358979323846 / 180.0;
    tr = 0.005;
  }
  lumen_grid_f64 g;
  lumen_grid_setup_f64(&g, n, x, dce ? cp : NULL, dt, icp);
  g.tr = tr;
  g.r1 = 4.5; /* FXR: the plan's default relaxivity, 1/(mM s) */
  const int np = lumen_model_param_count(m);
  float *data = malloc(sizeof(float) * (size_t)count * (size_t)n);
  rng = 0x1234567ULL + (uint64_t)m;
  for (int c = 0; c < count; ++c) {
    double p[4] = {0}, y[80], sd = 0.005;
    switch (m) {
      case LUMEN_MODEL_TOFTS: p[0] = urange(0.01, 0.5); p[1] = urange(0.05, 0.6); break;
      case LUMEN_MODEL_ETOFTS: p[0] = urange(0.01, 0.5); p[1] = urange(0.05, 0.6); p[2] = urange(0.01, 0.1); break;
      case LUMEN_MODEL_PATLAK: p[0] = urange(0.005, 0.1); p[1] = urange(0.01, 0.1); break;
      case LUMEN_MODEL_2CUM: p[0] = urange(0.01, 0.2); p[1] = urange(0.2, 1.5); p[2] = urange(0.03, 0.2); break;
      case LUMEN_MODEL_2CXM:
        p[0] = urange(0.05, 0.5); p[1] = urange(0.1, 0.5); p[2] = urange(0.02, 0.1); p[3] = urange(0.2, 1.5);
        break;
      case LUMEN_MODEL_FXR: /* R1 in 1/s with R10 = 1 /s: the noise of 0.005 mM times r1 */
        p[0] = urange(0.01, 0.5); p[1] = urange(0.05, 0.6); p[2] = urange(0.005, 0.05); sd = 0.0225;
        break;
      default: p[0] = urange(0.3, 3.0); p[1] = urange(500, 5000); sd = 0.005 * p[1]; break;
    }
    lumen_model_eval_f64(m, &g, NULL, p, y, NULL, NULL);
    for (int i = 0; i < n; ++i) data[(size_t)c * n + i] = (float)(y[i] + sd * gauss());
  }
  double *par[2], *chi[2];
  int32_t *st[2], *its[2];
  const char *tiers[2] = {accel, "standard"};
  const lumen_fit_tier accel_tier = !strncmp(accel, "cuda", 4)          ? LUMEN_FIT_TIER_CUDA
                                    : !strcmp(accel, "cpu_single") ? LUMEN_FIT_TIER_CPU_SINGLE
                                                                   : LUMEN_FIT_TIER_CPU;
  double secs[2];
  for (int ti = 0; ti < 2; ++ti) {
    lumen_fit_options o;
    lumen_fit_options_init(&o);
    o.model = m;
    o.backend = tiers[ti];
    o.tr = tr;
    if (getenv("LUMEN_TEST_F64")) o.precision = LUMEN_FIT_FLOAT64;
    if (getenv("LUMEN_TEST_MAXIT")) o.max_iterations = atoi(getenv("LUMEN_TEST_MAXIT"));
    lumen_fit_plan *plan = NULL;
    assert_int_equal(lumen_fit_plan_create(ctx, &o, n, x, dce ? cp : NULL, &plan), LUMEN_OK);
    par[ti] = malloc(sizeof(double) * (size_t)count * (size_t)np);
    st[ti] = malloc(sizeof(int32_t) * (size_t)count);
    chi[ti] = malloc(sizeof(double) * (size_t)count);
    its[ti] = malloc(sizeof(int32_t) * (size_t)count);
    lumen_fit_results r = {.params = par[ti], .state = st[ti], .chi2 = chi[ti], .iterations = its[ti]};
    assert_int_equal(lumen_fit_execute(ctx, plan, count, data, NULL, &r), LUMEN_OK);
    secs[ti] = r.seconds;
    if (ti == 0 && r.curves_per_tier[accel_tier] != count) {
      print_error("%s: %lld of %d curves on tier %s (used %s: %s)\n", lumen_model_name(m),
                  (long long)r.curves_per_tier[accel_tier], count, accel, r.backend_used, r.reason);
      fail();
    }
    if (ti == 0 && r.kernel_seconds > 0)
      print_message("  %s: %.4f s in the kernels (%.0f fits/s), %.4f s in the call\n", accel, r.kernel_seconds,
                    count / r.kernel_seconds, r.seconds);
    lumen_fit_plan_destroy(plan);
  }
  int agree = 0, exact = 0, both = 0, at_bound[2] = {0, 0};
  double *rel = malloc(sizeof(double) * (size_t)count);
  for (int c = 0; c < count; ++c) {
    agree += outcome(st[0][c]) == outcome(st[1][c]);
    exact += st[0][c] == st[1][c];
    both += outcome(st[0][c]) == LUMEN_FIT_CONVERGED && outcome(st[1][c]) == LUMEN_FIT_CONVERGED;
    for (int ti = 0; ti < 2; ++ti) at_bound[ti] += st[ti][c] == LUMEN_FIT_AT_BOUND;
  }
  double frac = (double)agree / count;
  print_message("agreement %-7s %6d curves: states agree %.4f %% (exactly %.4f %%; at_bound %s %d, standard %d), both "
                "converged %d; %s %.0f fits/s, standard %.0f fits/s\n",
                lumen_model_name(m), count, 100 * frac, 100.0 * exact / count, accel, at_bound[0], at_bound[1], both,
                accel, count / secs[0], count / secs[1]);
  /* where the tiers differ by more than 1 %, which found the lower chi-square? */
  int lower[2] = {0, 0}, differ = 0;
  for (int c = 0; c < count; ++c) {
    if (outcome(st[0][c]) != LUMEN_FIT_CONVERGED || outcome(st[1][c]) != LUMEN_FIT_CONVERGED) continue;
    double a = par[0][(size_t)c * np], b = par[1][(size_t)c * np];
    if (fabs(a - b) > 1e-2 * fabs(b)) {
      differ++;
      if (chi[0][c] < chi[1][c] * (1 - 1e-6)) lower[0]++;
      else if (chi[1][c] < chi[0][c] * (1 - 1e-6)) lower[1]++;
      if (getenv("LUMEN_TEST_VERBOSE") && differ < 10)
      {
        print_message("   curve %d: %s %.5g chi2 %.6g it %d | standard %.5g chi2 %.6g it %d\n", c, accel, a, chi[0][c],
                      its[0][c], b, chi[1][c], its[1][c]);
        for (int ti = 0; ti < 2; ++ti) {
          print_message("     %s:", tiers[ti]);
          for (int k = 0; k < np; ++k) print_message(" %.6g", par[ti][(size_t)c * np + k]);
          print_message("\n");
        }
      }
    }
  }
  if (differ)
    print_message("  %d curves differ by > 1 %% in %s: lower chi2 on %s %d, on standard %d\n", differ,
                  lumen_model_param_name(m, 0), accel, lower[0], lower[1]);
  if (getenv("LUMEN_TEST_VERBOSE"))
    for (int c = 0, shown = 0; c < count && shown < 30; ++c)
      if (st[0][c] != st[1][c]) {
        shown++;
        print_message("   state differs, curve %d: %s %s chi2 %.6g it %d |", c, accel,
                      lumen_fit_state_name((lumen_fit_state)st[0][c]), chi[0][c], its[0][c]);
        for (int k = 0; k < np; ++k) print_message(" %.6g", par[0][(size_t)c * np + k]);
        print_message(" | standard %s chi2 %.6g |", lumen_fit_state_name((lumen_fit_state)st[1][c]), chi[1][c]);
        for (int k = 0; k < np; ++k) print_message(" %.6g", par[1][(size_t)c * np + k]);
        print_message("\n");
      }
  int bad = 0;
  for (int k = 0; k < np; ++k) {
    int q = 0;
    for (int c = 0; c < count; ++c) {
      if (outcome(st[0][c]) != LUMEN_FIT_CONVERGED || outcome(st[1][c]) != LUMEN_FIT_CONVERGED) continue;
      double a = par[0][(size_t)c * np + k], b = par[1][(size_t)c * np + k];
      rel[q++] = fabs(a - b) / fmax(fabs(b), 1e-12);
    }
    qsort(rel, (size_t)q, sizeof(double), cmp_double);
    double med = q ? rel[q / 2] : 0, p99 = q ? rel[(size_t)(0.99 * (q - 1))] : 0, mx = q ? rel[q - 1] : 0;
    print_message("  %-7s median rel diff %.3g, p99 %.3g, max %.3g\n", lumen_model_param_name(m, k), med, p99, mx);
    if (!(med <= 1e-4) || !(p99 <= 1e-2)) bad++;
  }
  free(rel);
  for (int ti = 0; ti < 2; ++ti) {
    free(par[ti]);
    free(st[ti]);
    free(chi[ti]);
    free(its[ti]);
  }
  free(data);
  lumen_ctx_destroy(ctx);
  assert_true(frac >= 0.999);
  assert_int_equal(bad, 0);
#endif
}

static void test_tofts(void **s) { (void)s; agreement(LUMEN_MODEL_TOFTS, 10000); }
static void test_etofts(void **s) { (void)s; agreement(LUMEN_MODEL_ETOFTS, 10000); }
static void test_patlak(void **s) { (void)s; agreement(LUMEN_MODEL_PATLAK, 10000); }
static void test_2cum(void **s) { (void)s; agreement(LUMEN_MODEL_2CUM, 10000); }
static void test_2cxm(void **s) { (void)s; agreement(LUMEN_MODEL_2CXM, 10000); }
static void test_fxr(void **s) { (void)s; agreement(LUMEN_MODEL_FXR, 10000); }
static void test_vfa(void **s) { (void)s; agreement(LUMEN_MODEL_VFA, 10000); }

int main(void) {
  accel = lumen_test_accel_tier();
  if (!lumen_test_tier_usable(accel)) return LUMEN_TEST_SKIP;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tofts), cmocka_unit_test(test_etofts), cmocka_unit_test(test_patlak),
      cmocka_unit_test(test_2cum),  cmocka_unit_test(test_2cxm),   cmocka_unit_test(test_fxr),   cmocka_unit_test(test_vfa),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
