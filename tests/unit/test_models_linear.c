/* Closed-form linear starts on noise-free data, exact T1 models (DESPOT1, two-angle, IR/SR
   refined by Gauss-Newton on the analytic Jacobian), the FXR fast-exchange limit, parameter
   conversions and the model metadata of include/lumen/models.h. */
#include "test_support.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "lumen/models.h"
#include "models/models_f32.h"
#include "models/models_f64.h"

#define NMAX 1024
static double T[NMAX], CP[NMAX], DT[NMAX], ICP[NMAX], Y[NMAX];

static double test_cp(double t) {  /* minutes, arrival 0.25 min */
  double u = t - 0.25;
  if (u <= 0) return 0.0;
  return 6.0 * (u / 0.1) * exp(1.0 - u / 0.1) + 1.5 * (1.0 - exp(-u / 0.15)) * exp(-0.12 * u);
}

/* n samples every dt_s seconds. */
static void dce_grid(lumen_grid_f64 *g, int n, double dt_s) {
  for (int i = 0; i < n; ++i) { T[i] = i * dt_s / 60.0; CP[i] = test_cp(T[i]); }
  assert_int_equal(lumen_grid_setup_f64(g, n, T, CP, DT, ICP), 0);
}

static void check_start(lumen_model m, const lumen_grid_f64 *g, const double *ptrue, double rtol,
                        const char *label) {
  double p[4];
  lumen_model_eval_f64(m, g, NULL, ptrue, Y, NULL, NULL);
  int rc = lumen_linear_start_f64(m, g, NULL, Y, p);
  if (rc != 0) {
    print_error("%s %s: linear start failed\n", lumen_model_name(m), label);
    fail();
  }
  for (int k = 0; k < lumen_model_np(m); ++k) {
    char what[96];
    snprintf(what, sizeof what, "%s %s linear start p[%d]", lumen_model_name(m), label, k);
    lumen_test_assert_close(p[k], ptrue[k], 1e-9, rtol, what);
  }
}

static void test_dce_linear_starts(void **state) {
  (void)state;
  lumen_grid_f64 g;
  dce_grid(&g, 360, 1.0);  /* 6 min at 1 s */
  const double tofts[][2] = {{0.25, 0.3}, {0.05, 0.1}, {0.6, 0.5}, {0.01, 0.2}};
  for (int j = 0; j < 4; ++j) check_start(LUMEN_MODEL_TOFTS, &g, tofts[j], 5e-3, "1 s");
  const double etofts[][3] = {{0.25, 0.3, 0.05}, {0.05, 0.2, 0.01}, {0.1, 0.4, 0.1}};
  for (int j = 0; j < 3; ++j) check_start(LUMEN_MODEL_ETOFTS, &g, etofts[j], 1e-2, "1 s");
  const double patlak[][2] = {{0.05, 0.02}, {0.2, 0.1}, {1e-3, 0.3}};
  for (int j = 0; j < 3; ++j) check_start(LUMEN_MODEL_PATLAK, &g, patlak[j], 1e-10, "1 s");
  const double cum[][3] = {{0.1, 0.5, 0.1}, {0.02, 1.0, 0.08}, {0.2, 0.6, 0.3}};
  for (int j = 0; j < 3; ++j) check_start(LUMEN_MODEL_2CUM, &g, cum[j], 2e-2, "1 s");
  /* 2CXM from (PS, ve, vp, Fp) -> fit parameters (E, ve, vp, Fp) */
  const double cxm_pub[][4] = {{0.1, 0.2, 0.05, 0.6}, {0.05, 0.3, 0.1, 1.0}, {0.3, 0.15, 0.03, 0.4}};
  for (int j = 0; j < 3; ++j) {
    double ps = cxm_pub[j][0], fp = cxm_pub[j][3];
    double p[4] = {ps / (fp + ps), cxm_pub[j][1], cxm_pub[j][2], fp};
    check_start(LUMEN_MODEL_2CXM, &g, p, 3e-2, "1 s");
  }
  /* both convolution rules and a non-uniform grid */
  g.conv = LUMEN_CONV_TRAPEZOID;
  check_start(LUMEN_MODEL_TOFTS, &g, tofts[0], 5e-3, "trapezoid");
  for (int i = 0; i < 200; ++i) { T[i] = (i < 100 ? i * 2.0 : 200.0 + (i - 100) * 6.0) / 60.0; CP[i] = test_cp(T[i]); }
  assert_int_equal(lumen_grid_setup_f64(&g, 200, T, CP, DT, ICP), 0);
  assert_int_equal(g.uniform, 0);
  check_start(LUMEN_MODEL_TOFTS, &g, tofts[1], 1e-2, "non-uniform");
  check_start(LUMEN_MODEL_PATLAK, &g, patlak[0], 1e-10, "non-uniform");
}

/* Singular systems are reported and give the default start. */
static void test_linear_start_failures(void **state) {
  (void)state;
  lumen_grid_f64 g;
  dce_grid(&g, 100, 2.0);
  double p[4], def[4];
  memset(Y, 0, sizeof Y);
  const lumen_model models[] = {LUMEN_MODEL_TOFTS, LUMEN_MODEL_ETOFTS, LUMEN_MODEL_2CUM, LUMEN_MODEL_2CXM};
  for (int j = 0; j < 4; ++j) {
    assert_int_not_equal(lumen_linear_start_f64(models[j], &g, NULL, Y, p), 0);
    int np = lumen_model_defaults(models[j], def, NULL, NULL);
    for (int k = 0; k < np; ++k) assert_true(p[k] == def[k]);
  }
  for (int i = 0; i < 100; ++i) CP[i] = 0;
  lumen_grid_setup_f64(&g, 100, T, CP, DT, ICP);
  for (int i = 0; i < 100; ++i) Y[i] = 0.1 * i;
  assert_int_not_equal(lumen_linear_start_f64(LUMEN_MODEL_PATLAK, &g, NULL, Y, p), 0);
  assert_int_not_equal(lumen_linear_start_f64(LUMEN_MODEL_TOFTS, &g, NULL, Y, p), 0);
}

/* Patlak with the truth outside the box: the result is the box-constrained optimum. */
static void test_patlak_bounded(void **state) {
  (void)state;
  lumen_grid_f64 g;
  dce_grid(&g, 200, 2.0);
  const double truth[2] = {0.05, -0.01};  /* vp below its lower bound 0.001 */
  lumen_model_eval_f64(LUMEN_MODEL_PATLAK, &g, NULL, truth, Y, NULL, NULL);
  double p[2], lo[2], hi[2], y2[NMAX];
  assert_int_equal(lumen_linear_start_f64(LUMEN_MODEL_PATLAK, &g, NULL, Y, p), 0);
  lumen_model_defaults(LUMEN_MODEL_PATLAK, NULL, lo, hi);
  assert_true(p[1] == lo[1]);
  assert_true(p[0] >= lo[0] && p[0] <= hi[0]);
  double best;
  {
    lumen_model_eval_f64(LUMEN_MODEL_PATLAK, &g, NULL, p, y2, NULL, NULL);
    best = 0;
    for (int i = 0; i < g.n; ++i) best += (y2[i] - Y[i]) * (y2[i] - Y[i]);
  }
  for (int a = 0; a <= 40; ++a) {
    for (int b = 0; b <= 40; ++b) {
      double q[2] = {lo[0] + (0.1 - lo[0]) * a / 40.0, lo[1] + (0.05 - lo[1]) * b / 40.0};
      lumen_model_eval_f64(LUMEN_MODEL_PATLAK, &g, NULL, q, y2, NULL, NULL);
      double f = 0;
      for (int i = 0; i < g.n; ++i) f += (y2[i] - Y[i]) * (y2[i] - Y[i]);
      assert_true(best <= f * (1 + 1e-12));
    }
  }
}

/* Damped Gauss-Newton on the analytic Jacobian (2 parameters), for the T1 models. */
static void gauss_newton(lumen_model m, const lumen_grid_f64 *g, const double *consts,
                         const double *y, double *p) {
  double f[64], J[128], ft[64];
  double lambda = 1e-3;
  for (int it = 0; it < 200; ++it) {
    lumen_model_eval_f64(m, g, consts, p, f, J, NULL);
    double a00 = 0, a01 = 0, a11 = 0, b0 = 0, b1 = 0, chi = 0;
    for (int i = 0; i < g->n; ++i) {
      double r = y[i] - f[i];
      chi += r * r;
      a00 += J[i] * J[i]; a01 += J[i] * J[g->n + i]; a11 += J[g->n + i] * J[g->n + i];
      b0 += J[i] * r; b1 += J[g->n + i] * r;
    }
    if (chi == 0) return;
    for (int tries = 0; tries < 30; ++tries) {
      double d00 = a00 * (1 + lambda), d11 = a11 * (1 + lambda);
      double det = d00 * d11 - a01 * a01;
      double q[2] = {p[0] + (b0 * d11 - b1 * a01) / det, p[1] + (b1 * d00 - b0 * a01) / det};
      if (q[0] <= 0) q[0] = 0.5 * p[0];
      lumen_model_eval_f64(m, g, consts, q, ft, NULL, NULL);
      double c2 = 0;
      for (int i = 0; i < g->n; ++i) c2 += (y[i] - ft[i]) * (y[i] - ft[i]);
      if (c2 < chi) { p[0] = q[0]; p[1] = q[1]; lambda *= 0.1; break; }
      lambda *= 10;
    }
  }
}

/* A T1 recovery curve (IR, SR) of T1 t1 and M0 m0: the linear start is within a factor of 3 of
   T1, then Gauss-Newton recovers both exactly. */
static void expect_rough_then_exact(lumen_model m, const lumen_grid_f64 *g, double t1, double m0, const char *t1_what,
                                    const char *m0_what) {
  double y[16], p[2];
  const double truth[2] = {t1, m0};
  lumen_model_eval_f64(m, g, NULL, truth, y, NULL, NULL);
  lumen_linear_start_f64(m, g, NULL, y, p);
  assert_true(p[0] > 0.3 * truth[0] && p[0] < 3 * truth[0]);
  gauss_newton(m, g, NULL, y, p);
  lumen_test_assert_close(p[0], truth[0], 0, 1e-8, t1_what);
  lumen_test_assert_close(p[1], truth[1], 0, 1e-8, m0_what);
}

static void test_t1_models(void **state) {
  (void)state;
  const double deg = 3.14159265358979323846 / 180.0;
  double x[16], y[16], p[2];
  lumen_grid_f64 g;
  /* VFA: DESPOT1 and two-angle are exact on noise-free data, with and without B1 */
  const double fa[5] = {3, 6, 10, 20, 30};
  for (int i = 0; i < 5; ++i) x[i] = fa[i] * deg;
  lumen_grid_setup_f64(&g, 5, x, NULL, DT, NULL);
  g.tr = 0.02;
  const double t1s[3] = {0.3, 1.2, 3.5};
  const double b1s[2] = {1.0, 0.85};
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 2; ++b) {
      const double c[LUMEN_FIT_NCONSTS] = {1.0, b1s[b]};
      const double truth[2] = {t1s[a], 1234.5};
      lumen_model_eval_f64(LUMEN_MODEL_VFA, &g, c, truth, y, NULL, NULL);
      assert_int_equal(lumen_linear_start_f64(LUMEN_MODEL_VFA_LINEAR, &g, c, y, p), 0);
      lumen_test_assert_close(p[0], truth[0], 0, 1e-10, "DESPOT1 T1");
      lumen_test_assert_close(p[1], truth[1], 0, 1e-10, "DESPOT1 M0");
      assert_int_equal(lumen_linear_start_f64(LUMEN_MODEL_VFA_2PT, &g, c, y, p), 0);
      lumen_test_assert_close(p[0], truth[0], 0, 1e-10, "two-angle T1");
      lumen_test_assert_close(p[1], truth[1], 0, 1e-10, "two-angle M0");
      /* nonlinear VFA from a poor start */
      p[0] = 1.0; p[1] = 500.0;
      gauss_newton(LUMEN_MODEL_VFA, &g, c, y, p);
      lumen_test_assert_close(p[0], truth[0], 0, 1e-8, "VFA NLLS T1");
      /* wrong B1 gives a wrong T1: the const is used */
      const double c1[LUMEN_FIT_NCONSTS] = {1.0, 1.0};
      if (b1s[b] != 1.0) {
        assert_int_equal(lumen_linear_start_f64(LUMEN_MODEL_VFA_LINEAR, &g, c1, y, p), 0);
        assert_true(fabs(p[0] - truth[0]) > 0.05 * truth[0]);
      }
    }
  }
  /* a signal that no SPGR curve explains (grows so fast with the angle that E1 > 1) fails */
  const double grow[5] = {100, 400, 1500, 6000, 20000};
  for (int i = 0; i < 5; ++i) y[i] = grow[i];
  assert_int_not_equal(lumen_linear_start_f64(LUMEN_MODEL_VFA_LINEAR, &g, NULL, y, p), 0);
  assert_true(isfinite(p[0]) && isfinite(p[1]));

  /* IR (magnitude, with and without TR) and SR: rough start, then exact by Gauss-Newton */
  const double ti[10] = {0.05, 0.1, 0.2, 0.35, 0.5, 0.8, 1.2, 2.0, 3.0, 5.0};
  for (int i = 0; i < 10; ++i) x[i] = ti[i];
  lumen_grid_setup_f64(&g, 10, x, NULL, DT, NULL);
  for (int a = 0; a < 3; ++a) {
    for (int withtr = 0; withtr < 2; ++withtr) {
      g.tr = withtr ? 6.0 : 0.0;
      expect_rough_then_exact(LUMEN_MODEL_IR, &g, t1s[a], 800.0, "IR T1", "IR M0");
    }
    g.tr = 0;
    expect_rough_then_exact(LUMEN_MODEL_SR, &g, t1s[a], 321.0, "SR T1", "SR M0");
  }
}

/* MODELS.md's shutter-speed formula, literally (with Co = Ct / po), for comparison. */
static double fxr_literal(double r10, double r1, double ct, double ve, double fw, double tau_min) {
  double po = ve / fw, tau = 60.0 * tau_min, co = r1 * ct / po;
  double Xs = (1.0 / tau) / po;
  double Ys = pow(2.0 / tau - co - Xs, 2) + 4.0 * (1 - po) / (tau * tau * po);
  if (Ys < 0) Ys = 0;
  return (2 * r10 + co + Xs - sqrt(Ys)) / 2;
}

static void test_fxr(void **state) {
  (void)state;
  lumen_grid_f64 g;
  dce_grid(&g, 200, 2.0);
  g.r1 = 4.5;
  const double consts[LUMEN_FIT_NCONSTS] = {1.0 / 1.4, 1.0};
  double ct[NMAX], r1[NMAX];
  const double kt = 0.2, ve = 0.3;
  const double pt[2] = {kt, ve};
  lumen_model_eval_f64(LUMEN_MODEL_TOFTS, &g, NULL, pt, ct, NULL, NULL);
  double cmax = 0;
  for (int i = 0; i < g.n; ++i) cmax = fmax(cmax, ct[i]);
  assert_true(cmax > 0.1);
  /* tau = 0: exactly the fast-exchange limit; tau -> 0: converges to it */
  const double taus[4] = {0.0, 1e-7, 1e-5, 1e-3};
  double prev = 0;
  for (int q = 0; q < 4; ++q) {
    double p[3] = {kt, ve, taus[q]};
    lumen_model_eval_f64(LUMEN_MODEL_FXR, &g, consts, p, r1, NULL, NULL);
    double err = 0;
    for (int i = 0; i < g.n; ++i) err = fmax(err, fabs(r1[i] - (consts[0] + 4.5 * ct[i])));
    if (q == 0) assert_true(err <= 1e-12);
    else assert_true(err >= prev);  /* monotone in tau */
    if (q == 1) assert_true(err < 1e-5 * 4.5 * cmax);
    prev = err;
  }
  /* intermediate tau: the rationalised form equals the literal formula */
  const double taus2[3] = {0.002, 0.02, 0.2};
  for (int q = 0; q < 3; ++q) {
    double p[3] = {kt, ve, taus2[q]};
    lumen_model_eval_f64(LUMEN_MODEL_FXR, &g, consts, p, r1, NULL, NULL);
    for (int i = 0; i < g.n; ++i)
      lumen_test_assert_close(r1[i], fxr_literal(consts[0], 4.5, ct[i], ve, 0.8, taus2[q]), 1e-10, 1e-9,
                              "FXR vs literal shutter-speed formula");
  }
  /* slow exchange: R1 tends to R10 */
  double p[3] = {kt, ve, 1e4};
  lumen_model_eval_f64(LUMEN_MODEL_FXR, &g, consts, p, r1, NULL, NULL);
  for (int i = 0; i < g.n; ++i) assert_true(fabs(r1[i] - consts[0]) < 1e-3 * 4.5 * cmax);
  /* FXR linear start recovers Ktrans and ve of fast-exchange data */
  p[2] = 0.0;
  lumen_model_eval_f64(LUMEN_MODEL_FXR, &g, consts, p, r1, NULL, NULL);
  double s[3];
  assert_int_equal(lumen_linear_start_f64(LUMEN_MODEL_FXR, &g, consts, r1, s), 0);
  lumen_test_assert_close(s[0], kt, 0, 1e-2, "FXR start Ktrans");
  lumen_test_assert_close(s[1], ve, 0, 1e-2, "FXR start ve");
}

static void test_conversions(void **state) {
  (void)state;
  double pub[4] = {0.12, 0.2, 0.05, 0.6}, fit[4], back[4], d[4];
  lumen_model_from_public_f64(LUMEN_MODEL_2CXM, pub, fit);
  lumen_test_assert_close(fit[0], 0.2, 0, 1e-15, "E = Ktrans/Fp");
  lumen_model_to_public_f64(LUMEN_MODEL_2CXM, fit, back);
  for (int k = 0; k < 4; ++k) lumen_test_assert_close(back[k], pub[k], 0, 1e-15, "2cxm round trip");
  assert_int_equal(lumen_model_derived_f64(LUMEN_MODEL_2CXM, fit, d), 3);
  lumen_test_assert_close(d[0], 0.2, 0, 1e-15, "2cxm E");
  lumen_test_assert_close(d[1], 0.6 * 0.2 / 0.8, 0, 1e-15, "2cxm PS");
  lumen_test_assert_close(d[2], 0.12 / 0.2, 0, 1e-15, "2cxm kep");
  const double cum[3] = {0.1, 0.5, 0.1};
  assert_int_equal(lumen_model_derived_f64(LUMEN_MODEL_2CUM, cum, d), 3);
  lumen_test_assert_close(d[0], 0.2, 0, 1e-15, "2cum E");
  lumen_test_assert_close(d[1], 0.1 * 0.5 / 0.4, 0, 1e-15, "2cum PS");
  lumen_test_assert_close(d[2], (0.5 + 0.125) * 0.1, 0, 1e-15, "2cum vp");
  const double tofts[2] = {0.3, 0.6};
  assert_int_equal(lumen_model_derived_f64(LUMEN_MODEL_TOFTS, tofts, d), 1);
  lumen_test_assert_close(d[0], 0.5, 0, 1e-15, "kep");
  /* in-place conversion for a one-compartment model */
  double q[2] = {0.3, 0.6};
  lumen_model_to_public_f64(LUMEN_MODEL_TOFTS, q, q);
  assert_true(q[0] == 0.3 && q[1] == 0.6);
}

static void test_metadata(void **state) {
  (void)state;
  /* the public names and values of the first rows never change (later rows are appended) */
  static const char *names[] = {"tofts", "etofts", "patlak", "2cum", "2cxm", "fxr", "auc",
                                "vfa", "vfa-linear", "vfa-2pt", "ir", "sr"};
  const int n_public = (int)(sizeof names / sizeof names[0]);
  assert_true(LUMEN_MODEL_COUNT >= n_public);
  for (int m = 0; m < n_public; ++m) assert_string_equal(lumen_model_name((lumen_model)m), names[m]);
  for (int m = 0; m < LUMEN_MODEL_COUNT; ++m) { /* every row of the table */
    const char *name = lumen_model_name((lumen_model)m);
    assert_string_not_equal(name, "unknown");
    lumen_model back = LUMEN_MODEL_COUNT;
    assert_int_equal(lumen_model_parse(name, &back), LUMEN_OK);
    assert_int_equal(back, m);
    int np = lumen_model_param_count((lumen_model)m);
    assert_int_equal(np, lumen_model_np((lumen_model)m));
    assert_true(np <= LUMEN_FIT_MAX_PARAMS);
    double s[4], lo[4], hi[4];
    assert_int_equal(lumen_model_defaults((lumen_model)m, s, lo, hi), np);
    for (int k = 0; k < np; ++k) {
      assert_non_null(lumen_model_param_name((lumen_model)m, k));
      assert_non_null(lumen_model_param_unit((lumen_model)m, k));
      assert_true(lo[k] <= s[k] && s[k] <= hi[k]);
      double ps, pl, ph;
      assert_int_equal(lumen_model_param_defaults((lumen_model)m, k, &ps, &pl, &ph), LUMEN_OK);
      assert_true(pl <= ps && ps <= ph);
    }
    assert_null(lumen_model_param_name((lumen_model)m, np));
    assert_null(lumen_model_param_name((lumen_model)m, -1));
    assert_int_equal(lumen_model_param_defaults((lumen_model)m, np, NULL, NULL, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  }
  assert_string_equal(lumen_model_param_name(LUMEN_MODEL_2CXM, 0), "Ktrans");
  assert_string_equal(lumen_model_param_name(LUMEN_MODEL_2CXM, 3), "Fp");
  assert_string_equal(lumen_model_param_name(LUMEN_MODEL_2CUM, 2), "Tp");
  assert_string_equal(lumen_model_param_unit(LUMEN_MODEL_2CUM, 2), "min");
  assert_string_equal(lumen_model_param_name(LUMEN_MODEL_FXR, 2), "tau");
  assert_string_equal(lumen_model_param_unit(LUMEN_MODEL_TOFTS, 0), "1/min");
  assert_string_equal(lumen_model_param_name(LUMEN_MODEL_VFA, 0), "T1");
  assert_string_equal(lumen_model_param_unit(LUMEN_MODEL_IR, 0), "s");
  double s0, l0, h0;
  assert_int_equal(lumen_model_param_defaults(LUMEN_MODEL_TOFTS, 1, &s0, &l0, &h0), LUMEN_OK);
  assert_true(s0 == 0.2 && l0 == 1e-4 && h0 == 1.0);  /* the physical preset */
  assert_int_equal(lumen_model_param_defaults_preset(LUMEN_MODEL_TOFTS, 1, LUMEN_FIT_BOUNDS_ROCKETSHIP, &s0, &l0, &h0),
                   LUMEN_OK);
  assert_true(s0 == 0.2 && l0 == 0.02 && h0 == 1.0);
  lumen_model out;
  assert_int_equal(lumen_model_parse("Tofts2", &out), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_model_parse(NULL, &out), LUMEN_ERR_INVALID_ARGUMENT);
  assert_string_equal(lumen_model_name(LUMEN_MODEL_COUNT), "unknown");
  assert_int_equal(lumen_model_param_count((lumen_model)-1), -1);
  assert_int_equal(lumen_model_np(LUMEN_MODEL_COUNT), -1);
  assert_null(lumen_model_param_unit(LUMEN_MODEL_AUC, 0));
}

/* The float instance of the linear starts on the same data (well conditioned ones). */
static void test_f32_starts(void **state) {
  (void)state;
  static float tf[NMAX], cpf[NMAX], dtf[NMAX], icpf[NMAX], yf[NMAX];
  const int n = 300;
  for (int i = 0; i < n; ++i) { tf[i] = (float)(i * 2.0 / 60.0); cpf[i] = (float)test_cp(i * 2.0 / 60.0); }
  lumen_grid_f32 g;
  assert_int_equal(lumen_grid_setup_f32(&g, n, tf, cpf, dtf, icpf), 0);
  const float p[2] = {0.25f, 0.3f};
  float s[2];
  lumen_model_eval_f32(LUMEN_MODEL_TOFTS, &g, NULL, p, yf, NULL, NULL);
  assert_int_equal(lumen_linear_start_f32(LUMEN_MODEL_TOFTS, &g, NULL, yf, s), 0);
  lumen_test_assert_close(s[0], 0.25, 0, 2e-2, "f32 Tofts start Ktrans");
  lumen_test_assert_close(s[1], 0.3, 0, 2e-2, "f32 Tofts start ve");
  const float pp[2] = {0.05f, 0.02f};
  lumen_model_eval_f32(LUMEN_MODEL_PATLAK, &g, NULL, pp, yf, NULL, NULL);
  assert_int_equal(lumen_linear_start_f32(LUMEN_MODEL_PATLAK, &g, NULL, yf, s), 0);
  lumen_test_assert_close(s[0], 0.05, 0, 1e-4, "f32 Patlak Ktrans");
  lumen_test_assert_close(s[1], 0.02, 0, 1e-3, "f32 Patlak vp");
}

LUMEN_TEST_MAIN(cmocka_unit_test(test_dce_linear_starts),
                cmocka_unit_test(test_linear_start_failures),
                cmocka_unit_test(test_patlak_bounded),
                cmocka_unit_test(test_t1_models),
                cmocka_unit_test(test_fxr),
                cmocka_unit_test(test_conversions),
                cmocka_unit_test(test_metadata),
                cmocka_unit_test(test_f32_starts))
