/* The compartment models against their defining ODEs, integrated independently (RK4, 400
   substeps per sample, AIF linear between samples, so the exact-convolution models must agree
   to rounding): Tofts, extended Tofts, 2CUM, 2CXM, in double and in float. */
#include "test_support.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "models/models_f32.h"
#include "models/models_f64.h"

#define NMAX 512

static double test_cp(double t) {
  double u = t - 0.3;
  if (u <= 0) return 0.0;
  return 6.0 * (u / 0.12) * exp(1.0 - u / 0.12) + 1.2 * (1.0 - exp(-u / 0.2)) * exp(-0.15 * u);
}

/* Two-compartment system z' = f(ca, z), Ct = c0 z0 + c1 z1 + c2 ca. */
typedef struct ode {
  double m00, m01, m10, m11, b0, b1;  /* z' = M z + b ca */
  double c0, c1, c2;
} ode;

static void integrate(const ode *o, int n, const double *t, const double *ca, double *ct) {
  double z[2] = {0, 0};
  ct[0] = o->c2 * ca[0];
  for (int i = 1; i < n; ++i) {
    const int m = 400;
    double h = (t[i] - t[i - 1]) / m;
    for (int s = 0; s < m; ++s) {
      double f0 = (double)s / m, fh = (s + 0.5) / m, f1 = (s + 1.0) / m;
      double a0 = ca[i - 1] + (ca[i] - ca[i - 1]) * f0;
      double ah = ca[i - 1] + (ca[i] - ca[i - 1]) * fh;
      double a1 = ca[i - 1] + (ca[i] - ca[i - 1]) * f1;
      double k[4][2], zz[2];
      const double as[4] = {a0, ah, ah, a1}, st[4] = {0, 0.5, 0.5, 1.0};
      for (int r = 0; r < 4; ++r) {
        for (int j = 0; j < 2; ++j) zz[j] = z[j] + (r ? st[r] * h * k[r - 1][j] : 0.0);
        k[r][0] = o->m00 * zz[0] + o->m01 * zz[1] + o->b0 * as[r];
        k[r][1] = o->m10 * zz[0] + o->m11 * zz[1] + o->b1 * as[r];
      }
      for (int j = 0; j < 2; ++j) z[j] += h / 6 * (k[0][j] + 2 * k[1][j] + 2 * k[2][j] + k[3][j]);
    }
    ct[i] = o->c0 * z[0] + o->c1 * z[1] + o->c2 * ca[i];
  }
}

typedef struct gridset {
  int n;
  double t[NMAX], cp[NMAX], dt[NMAX], icp[NMAX];
  float tf[NMAX], cpf[NMAX], dtf[NMAX], icpf[NMAX];
  lumen_grid_f64 g;
  lumen_grid_f32 gf;
} gridset;

static void make(gridset *s, int irregular) {
  static const double f[3] = {0.6, 1.0, 1.9};
  s->n = 150;
  double t = 0;
  for (int i = 0; i < s->n; ++i) {
    s->t[i] = t;
    t += (irregular ? f[i % 3] : 1.0) * 3.0 / 60.0;
    s->cp[i] = test_cp(s->t[i]);
    s->tf[i] = (float)s->t[i];
    s->cpf[i] = (float)s->cp[i];
  }
  lumen_grid_setup_f64(&s->g, s->n, s->t, s->cp, s->dt, s->icp);
  lumen_grid_setup_f32(&s->gf, s->n, s->tf, s->cpf, s->dtf, s->icpf);
}

static double g_worst = 0, g_worstf = 0;

static void compare(gridset *s, lumen_model m, const double *p, const ode *o, const char *label) {
  double ref[NMAX], y[NMAX];
  float yf[NMAX], pf[4];
  integrate(o, s->n, s->t, s->cp, ref);
  double ymax = 0;
  for (int i = 0; i < s->n; ++i) ymax = fmax(ymax, fabs(ref[i]));
  assert_true(ymax > 0);
  /* only the exact rule is an ODE solution (the trapezoid rule is checked against the direct
     O(N^2) sum in test_models_conv) */
  for (int conv = LUMEN_CONV_EXACT; conv <= LUMEN_CONV_EXACT; ++conv) {
    s->g.conv = conv; s->gf.conv = conv;
    lumen_model_eval_f64(m, &s->g, NULL, p, y, NULL, NULL);
    for (int k = 0; k < lumen_model_np(m); ++k) pf[k] = (float)p[k];
    lumen_model_eval_f32(m, &s->gf, NULL, pf, yf, NULL, NULL);
    double err = 0, errf = 0;
    for (int i = 0; i < s->n; ++i) {
      err = fmax(err, fabs(y[i] - ref[i]));
      errf = fmax(errf, fabs(yf[i] - ref[i]));
    }
    /* rounding only (f64), float32 arithmetic (f32) */
    const double tol = 1e-10, tolf = 1e-5;
    if (err / ymax > g_worst) g_worst = err / ymax;
    if (errf / ymax > g_worstf) g_worstf = errf / ymax;
    if (!(err <= tol * ymax) || !(errf <= tolf * ymax)) {
      print_error("%s %s conv %d: max |model - ODE| = %.3g (f32 %.3g) of max %.3g\n", lumen_model_name(m),
                  label, conv, err, errf, ymax);
      fail();
    }
  }
  s->g.conv = LUMEN_CONV_EXACT; s->gf.conv = LUMEN_CONV_EXACT;
}

/* One model check at the point p on the grid s, whose name is grid. */
typedef void (*point_check)(gridset *s, const double *p, const char *grid);

/* check at each of the n points of pts (np numbers each), on the uniform grid, then the irregular one. */
static void over_grids(point_check check, const double *pts, size_t n, size_t np) {
  static gridset s;
  for (int irr = 0; irr < 2; ++irr) {
    make(&s, irr);
    for (size_t j = 0; j < n; ++j) check(&s, pts + j * np, irr ? "irregular" : "uniform");
  }
}

/* (Ktrans, ve, vp): ve ce' = Ktrans (ca - ce); Ct = ve ce (+ vp ca) */
static void tofts_etofts_at(gridset *s, const double *p, const char *grid) {
  double kt = p[0], ve = p[1], vp = p[2];
  ode o = {-kt / ve, 0, 0, -1, kt / ve, 0, ve, 0, 0};
  compare(s, LUMEN_MODEL_TOFTS, p, &o, grid);
  o.c2 = vp;
  compare(s, LUMEN_MODEL_ETOFTS, p, &o, grid);
}

static const double tofts_points[] = {0.25, 0.3, 0.05, 0.02, 0.1, 0.005, 0.35, 0.05, 0.1, 1.0, 0.8, 0.02};

/* (Ktrans, Fp, Tp): vp cp' = Fp (ca - cp) - PS cp; z1' = PS cp (extravascular amount); Ct = vp cp + z1 */
static void twocum_at(gridset *s, const double *p, const char *grid) {
  double kt = p[0], fp = p[1], tp = p[2];
  double ps = kt * fp / (fp - kt), vp = (fp + ps) * tp;
  ode o = {-(fp + ps) / vp, 0, ps, 0, fp / vp, 0, vp, 1, 0};
  compare(s, LUMEN_MODEL_2CUM, p, &o, grid);
}

static const double twocum_points[] = {0.1, 0.5, 0.1, 0.01, 1.2, 0.05, 0.3, 0.4, 1.0, 0.05, 8.0, 0.02};

/* public (PS, ve, vp, Fp): vp cp' = Fp (ca - cp) - PS (cp - ce); ve ce' = PS (cp - ce); Ct = vp cp + ve ce */
static void twocxm_at(gridset *s, const double *pub, const char *grid) {
  double ps = pub[0], ve = pub[1], vp = pub[2], fp = pub[3];
  double p[4] = {ps / (fp + ps), ve, vp, fp};
  ode o = {-(fp + ps) / vp, ps / vp, ps / ve, -ps / ve, fp / vp, 0, vp, ve, 0};
  char label[160];
  snprintf(label, sizeof label, "%s PS %g ve %g vp %g Fp %g", grid, ps, ve, vp, fp);
  compare(s, LUMEN_MODEL_2CXM, p, &o, label);
}

/* including float-hostile corners: tiny PS, tiny vp, huge Fp */
static const double twocxm_points[] = {0.1,  0.2, 0.05, 0.6, /**/ 0.05, 0.3, 0.1,   1.0, /**/ 0.3, 0.15, 0.03, 0.4,
                                       1e-3, 0.2, 0.05, 0.6, /**/ 0.02, 0.1, 0.002, 5.0, /**/ 2.0, 0.5,  0.02, 0.1,
                                       0.05, 0.05, 0.3, 0.05};

static void test_tofts_etofts(void **state) { (void)state; over_grids(tofts_etofts_at, tofts_points, 4, 3); }
static void test_2cum(void **state) { (void)state; over_grids(twocum_at, twocum_points, 4, 3); }
static void test_2cxm(void **state) { (void)state; over_grids(twocxm_at, twocxm_points, 7, 4); }

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_tofts_etofts),
    cmocka_unit_test(test_2cum),
    cmocka_unit_test(test_2cxm),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  printf("worst relative |model - ODE|: f64 %.3g, f32 %.3g\n", g_worst, g_worstf);
  return rc;
}
