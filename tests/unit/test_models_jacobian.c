/* Analytic Jacobians of every model against central finite differences (double), at several
   parameter points, on uniform and non-uniform grids with both convolution rules; and the float
   instance against the double one. */
#include "test_support.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "models/models_f32.h"
#include "models/models_f64.h"

#define NMAX 128

typedef struct grid_data {
  int n;
  double t[NMAX], cp[NMAX], dt[NMAX], icp[NMAX];
  float tf[NMAX], cpf[NMAX], dtf[NMAX], icpf[NMAX];
} grid_data;

/* Plasma AIF-like curve (minutes): arrival at 0.3 min, gamma-variate peak, slow washout. */
static double test_cp(double t) {
  double u = t - 0.3;
  if (u <= 0) return 0.0;
  return 6.0 * (u / 0.15) * exp(1.0 - u / 0.15) + 1.2 * (1.0 - exp(-u / 0.2)) * exp(-0.15 * u);
}

/* DCE grid: uniform 4 s frames, or steps growing from 1 s to 12 s. */
static void make_dce(grid_data *d, lumen_grid_f64 *g, lumen_grid_f32 *gf, int nonuniform, int conv) {
  int n = nonuniform ? 60 : 90;
  double t = 0;
  for (int i = 0; i < n; ++i) {
    d->t[i] = t;
    t += nonuniform ? (1.0 + 11.0 * (double)i / (double)(n - 1)) / 60.0 : 4.0 / 60.0;
    d->cp[i] = test_cp(d->t[i]);
    d->tf[i] = (float)d->t[i];
    d->cpf[i] = (float)d->cp[i];
  }
  d->n = n;
  assert_int_equal(lumen_grid_setup_f64(g, n, d->t, d->cp, d->dt, d->icp), 0);
  assert_int_equal(lumen_grid_setup_f32(gf, n, d->tf, d->cpf, d->dtf, d->icpf), 0);
  assert_int_equal(g->uniform, !nonuniform);
  g->conv = conv; gf->conv = conv;
  g->r1 = 4.5; gf->r1 = 4.5f;
}

static void make_x(grid_data *d, lumen_grid_f64 *g, lumen_grid_f32 *gf, const double *x, int n, double tr) {
  for (int i = 0; i < n; ++i) { d->t[i] = x[i]; d->tf[i] = (float)x[i]; }
  d->n = n;
  lumen_grid_setup_f64(g, n, d->t, NULL, d->dt, NULL);
  lumen_grid_setup_f32(gf, n, d->tf, NULL, d->dtf, NULL);
  g->tr = tr; gf->tr = (float)tr;
}

static int g_checked = 0;

/* Central differences with step h_k = 1e-5 max(|p_k|, 1e-3); each column must agree within
   1e-6 of its largest entry. Also: values equal with and without the Jacobian; f32 close to f64. */
static void check_model(lumen_model m, const lumen_grid_f64 *g, const lumen_grid_f32 *gf,
                        const double *consts, const double *p, const char *label) {
  const int n = g->n, np = lumen_model_np(m);
  double y[NMAX], y2[NMAX], jac[4 * NMAX], yp[NMAX], ym[NMAX];
  lumen_model_eval_f64(m, g, consts, p, y, jac, NULL);
  lumen_model_eval_f64(m, g, consts, p, y2, NULL, NULL);
  for (int i = 0; i < n; ++i) {
    assert_true(isfinite(y[i]));
    assert_true(y[i] == y2[i]);
  }
  for (int k = 0; k < np; ++k) {
    double pp[4] = {0, 0, 0, 0}, pm[4] = {0, 0, 0, 0};
    memcpy(pp, p, (size_t)np * sizeof *p); memcpy(pm, p, (size_t)np * sizeof *p);
    double h = 1e-5 * fmax(fabs(p[k]), 1e-3);
    pp[k] += h; pm[k] -= h;
    if (pm[k] < 0 && p[k] >= 0) { pm[k] = p[k]; h *= 0.5; }  /* one-sided at a zero bound */
    lumen_model_eval_f64(m, g, consts, pp, yp, NULL, NULL);
    lumen_model_eval_f64(m, g, consts, pm, ym, NULL, NULL);
    double cmax = 0, ymax = 0;
    for (int i = 0; i < n; ++i) cmax = fmax(cmax, fabs(jac[k * n + i]));
    for (int i = 0; i < n; ++i) ymax = fmax(ymax, fabs(y[i]));
    /* a column the data barely depends on (FXR's tau when po = 1) is compared absolutely,
       above the finite differences' rounding noise */
    double floor_ = 1e-9 * ymax / fmax(fabs(p[k]), 1e-3);
    for (int i = 0; i < n; ++i) {
      double fd = (yp[i] - ym[i]) / (pp[k] - pm[k]);
      double err = fabs(fd - jac[k * n + i]);
      double tol = (pm[k] == p[k] ? 1e-4 : 1e-6) * cmax + floor_;
      if (!(err <= tol)) {
        print_error("%s %s: dy[%d]/dp[%d] analytic %.12g finite-difference %.12g (col max %.3g)\n",
                    lumen_model_name(m), label, i, k, jac[k * n + i], fd, cmax);
        fail();
      }
    }
  }
  /* float instance */
  float pf[4] = {0, 0, 0, 0}, cf[LUMEN_FIT_NCONSTS] = {0, 0}, yf[NMAX], jf[4 * NMAX];
  for (int k = 0; k < np; ++k) pf[k] = (float)p[k];
  if (consts) for (int k = 0; k < LUMEN_FIT_NCONSTS; ++k) cf[k] = (float)consts[k];
  lumen_model_eval_f32(m, gf, consts ? cf : NULL, pf, yf, jf, NULL);
  double ymax = 0;
  for (int i = 0; i < n; ++i) ymax = fmax(ymax, fabs(y[i]));
  /* FXR's R1 sits on the R10 offset: compare the contrast part */
  double yref = (m == LUMEN_MODEL_FXR) ? ymax - (consts ? consts[0] : 1.0) : ymax;
  for (int i = 0; i < n; ++i) {
    if (!(fabs(yf[i] - y[i]) <= 2e-4 * yref + 1e-6 * ymax)) {
      print_error("%s %s: f32 y[%d] = %.8g, f64 %.8g\n", lumen_model_name(m), label, i, yf[i], y[i]);
      fail();
    }
  }
  for (int k = 0; k < np; ++k) {
    double cmax = 0;
    for (int i = 0; i < n; ++i) cmax = fmax(cmax, fabs(jac[k * n + i]));
    for (int i = 0; i < n; ++i) {
      if (!(fabs(jf[k * n + i] - jac[k * n + i]) <= 1e-3 * cmax + 1e-6 * ymax / fmax(fabs(p[k]), 1e-3))) {
        print_error("%s %s: f32 jac[%d][%d] = %.8g, f64 %.8g\n", lumen_model_name(m), label, k, i,
                    jf[k * n + i], jac[k * n + i]);
        fail();
      }
    }
  }
  ++g_checked;
}

static const char *grid_label(int nonuniform, int conv) {
  static const char *l[4] = {"uniform/exact", "uniform/trapezoid", "nonuniform/exact",
                             "nonuniform/trapezoid"};
  return l[2 * nonuniform + conv];
}

static void test_dce_jacobians(void **state) {
  (void)state;
  static const double tofts[][2] = {{0.25, 0.3}, {0.01, 0.05}, {1.5, 0.9}, {0.35, 0.01}, {1e-4, 0.5}};
  static const double etofts[][3] = {{0.2, 0.3, 0.05}, {0.02, 0.1, 0.001}, {0.35, 0.01, 0.1}};
  static const double patlak[][2] = {{0.05, 0.02}, {1e-3, 0.3}};
  static const double cum[][3] = {{0.1, 0.5, 0.1}, {0.01, 1.2, 0.05}, {0.3, 0.4, 1.0}, {0.05, 8.0, 0.02}};
  static const double cxm[][4] = {{0.2, 0.2, 0.05, 0.6}, {0.01, 0.3, 0.02, 1.0}, {0.9, 0.1, 0.1, 0.2},
                                  {0.5, 0.5, 0.005, 3.0}, {0.05, 0.15, 0.3, 0.1}};
  static const double fxr[][3] = {{0.2, 0.3, 0.05}, {0.1, 0.9, 0.001}, {0.05, 0.2, 0.0}, {0.3, 0.4, 0.005},
                                  {0.5, 0.1, 0.02}};
  const double consts[LUMEN_FIT_NCONSTS] = {0.8, 1.0};
  grid_data d;
  lumen_grid_f64 g;
  lumen_grid_f32 gf;
  for (int nu = 0; nu < 2; ++nu) {
    for (int conv = 0; conv < 2; ++conv) {
      make_dce(&d, &g, &gf, nu, conv);
      const char *lab = grid_label(nu, conv);
      for (size_t j = 0; j < sizeof tofts / sizeof tofts[0]; ++j) check_model(LUMEN_MODEL_TOFTS, &g, &gf, NULL, tofts[j], lab);
      for (size_t j = 0; j < sizeof etofts / sizeof etofts[0]; ++j) check_model(LUMEN_MODEL_ETOFTS, &g, &gf, NULL, etofts[j], lab);
      for (size_t j = 0; j < sizeof patlak / sizeof patlak[0]; ++j) check_model(LUMEN_MODEL_PATLAK, &g, &gf, NULL, patlak[j], lab);
      for (size_t j = 0; j < sizeof cum / sizeof cum[0]; ++j) check_model(LUMEN_MODEL_2CUM, &g, &gf, NULL, cum[j], lab);
      for (size_t j = 0; j < sizeof cxm / sizeof cxm[0]; ++j) check_model(LUMEN_MODEL_2CXM, &g, &gf, NULL, cxm[j], lab);
      for (size_t j = 0; j < sizeof fxr / sizeof fxr[0]; ++j) check_model(LUMEN_MODEL_FXR, &g, &gf, consts, fxr[j], lab);
    }
  }
}

static void test_t1_jacobians(void **state) {
  (void)state;
  const double deg = 3.14159265358979323846 / 180.0;
  double fa[6] = {2 * deg, 5 * deg, 10 * deg, 15 * deg, 20 * deg, 30 * deg};
  double ti[8] = {0.05, 0.1, 0.2, 0.4, 0.8, 1.5, 2.5, 4.0};
  double sr[6] = {0.1, 0.3, 0.6, 1.2, 2.5, 5.0};
  grid_data d;
  lumen_grid_f64 g;
  lumen_grid_f32 gf;
  const double c1[LUMEN_FIT_NCONSTS] = {1.0, 0.9};
  const double pv[][2] = {{1.2, 1000}, {0.3, 50}, {3.0, 2e4}};
  make_x(&d, &g, &gf, fa, 6, 0.005);
  for (int j = 0; j < 3; ++j) {
    check_model(LUMEN_MODEL_VFA, &g, &gf, c1, pv[j], "b1=0.9");
    check_model(LUMEN_MODEL_VFA, &g, &gf, NULL, pv[j], "b1=1");
    check_model(LUMEN_MODEL_VFA_LINEAR, &g, &gf, NULL, pv[j], "b1=1");
  }
  const double pi_[][2] = {{0.83, 500}, {1.9, 80}, {0.33, 1200}};
  make_x(&d, &g, &gf, ti, 8, 5.0);
  for (int j = 0; j < 3; ++j) check_model(LUMEN_MODEL_IR, &g, &gf, NULL, pi_[j], "TR=5s");
  make_x(&d, &g, &gf, ti, 8, 0.0);
  for (int j = 0; j < 3; ++j) check_model(LUMEN_MODEL_IR, &g, &gf, NULL, pi_[j], "TR=inf");
  make_x(&d, &g, &gf, sr, 6, 0.0);
  for (int j = 0; j < 3; ++j) check_model(LUMEN_MODEL_SR, &g, &gf, NULL, pi_[j], "");
}

/* IR's |.|: the sign flips at the null, values stay non-negative. */
static void test_ir_magnitude(void **state) {
  (void)state;
  double ti[5] = {0.1, 0.3, 0.5, 1.0, 3.0};
  grid_data d;
  lumen_grid_f64 g;
  lumen_grid_f32 gf;
  make_x(&d, &g, &gf, ti, 5, 0.0);
  double p[2] = {1.0, 100.0}, y[5];
  lumen_model_eval_f64(LUMEN_MODEL_IR, &g, NULL, p, y, NULL, NULL);
  for (int i = 0; i < 5; ++i) {
    double ref = fabs(100.0 * (1 - 2 * exp(-ti[i])));
    lumen_test_assert_close(y[i], ref, 1e-12, 1e-12, "IR magnitude");
  }
  g.tr = 2.0;
  lumen_model_eval_f64(LUMEN_MODEL_IR, &g, NULL, p, y, NULL, NULL);
  for (int i = 0; i < 5; ++i) {
    double ref = fabs(100.0 * (1 - 2 * exp(-ti[i]) + exp(-2.0)));
    lumen_test_assert_close(y[i], ref, 1e-12, 1e-12, "IR with TR");
  }
}

static void test_count(void **state) {
  (void)state;
  /* 4 grids x (5 + 3 + 2 + 4 + 5 + 5) DCE points + 9 VFA + 6 IR + 3 SR */
  assert_int_equal(g_checked, 4 * 24 + 9 + 6 + 3);
}

LUMEN_TEST_MAIN(cmocka_unit_test(test_dce_jacobians),
                cmocka_unit_test(test_t1_jacobians),
                cmocka_unit_test(test_ir_magnitude),
                cmocka_unit_test(test_count))
