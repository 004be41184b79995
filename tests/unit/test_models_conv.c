/* Convolution with an exponential kernel: the exact O(N) recursion against independent
   integrals, the trapezoid option against the direct O(N^2) trapezoid sum, non-uniform grids,
   the series/closed-form switch, the arterial-delay shift and the AUC helper; the convolutions'
   own expm1 against libm's. */
#include "test_support.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "models/models_f32.h"
#include "models/models_f64.h"

#define NMAX 2048

static double smooth_cp(double t) {  /* minutes; arrival 0.2 min */
  double u = t - 0.2;
  if (u <= 0) return 0.0;
  return 5.0 * (u / 0.12) * (u / 0.12) * exp(2.0 - 2.0 * u / 0.12) + 1.0 * (1.0 - exp(-u / 0.3)) * exp(-0.1 * u);
}

/* Times: uniform (step h) or irregular (steps cycling through 0.5h, 1.7h, 0.9h, 2.3h). */
static int make_times(double *t, int n, double h, int irregular) {
  static const double f[4] = {0.5, 1.7, 0.9, 2.3};
  t[0] = 0;
  for (int i = 1; i < n; ++i) t[i] = t[i - 1] + (irregular ? f[i % 4] * h : h);
  return n;
}

/* Integral over [t0, ti] of cp_lin(s) * K(ti - s), cp_lin the linear interpolant of (t, cp),
   K(u) = e^{-k u} (deriv = 0) or -u e^{-k u} (deriv = 1): composite Simpson with panels of
   k h <= 0.002 (error ~ (k h)^4 / 180 < 1e-13 relative); intervals where the kernel is below
   e^-60 are skipped. */
static double ref_conv(const double *t, const double *cp, int i, double k, int deriv) {
  double sum = 0;
  for (int j = 1; j <= i; ++j) {
    if (k * (t[i] - t[j]) > 60) continue;
    double a = t[j - 1], len = t[j] - a;
    int m = (int)ceil(k * len / 0.002);
    if (m < 64) m = 64;
    if (m % 2) ++m;
    double h = len / m, s = 0;
    for (int q = 0; q <= m; ++q) {
      double x = a + q * h;
      double c = cp[j - 1] + (cp[j] - cp[j - 1]) * (x - a) / len;
      double u = t[i] - x;
      double v = c * exp(-k * u) * (deriv ? -u : 1.0);
      double w = (q == 0 || q == m) ? 1 : (q % 2 ? 4 : 2);
      s += w * v;
    }
    sum += s * h / 3;
  }
  return sum;
}

static void run_conv(const lumen_grid_f64 *g, double k, double *G, double *Gp) {
  lumen_conv_f64 c;
  lumen_conv_start_f64(&c, g, k);
  G[0] = c.G; Gp[0] = c.Gp;
  for (int i = 1; i < g->n; ++i) {
    lumen_conv_step_f64(&c, g, i);
    G[i] = c.G; Gp[i] = c.Gp;
  }
}

static void test_exact_vs_integral(void **state) {
  (void)state;
  static double t[NMAX], cp[NMAX], dt[NMAX], icp[NMAX], G[NMAX], Gp[NMAX];
  static float tf[NMAX], cpf[NMAX], dtf[NMAX], icpf[NMAX];
  const double ks[] = {0.0, 1e-4, 0.05, 1.0, 5.8, 6.2, 35.0, 300.0, 5000.0};
  int checked = 0;
  for (int irregular = 0; irregular < 2; ++irregular) {
    int n = make_times(t, 120, 5.0 / 60.0, irregular);  /* x = k h spans 0 .. ~1000 */
    for (int i = 0; i < n; ++i) { cp[i] = smooth_cp(t[i]); tf[i] = (float)t[i]; cpf[i] = (float)cp[i]; }
    lumen_grid_f64 g;
    lumen_grid_f32 gf;
    lumen_grid_setup_f64(&g, n, t, cp, dt, icp);
    lumen_grid_setup_f32(&gf, n, tf, cpf, dtf, icpf);
    assert_int_equal(g.uniform, !irregular);
    for (size_t q = 0; q < sizeof ks / sizeof ks[0]; ++q) {
      double k = ks[q];
      run_conv(&g, k, G, Gp);
      double gmax = 0, gpmax = 0;
      for (int i = 0; i < n; ++i) { gmax = fmax(gmax, fabs(G[i])); gpmax = fmax(gpmax, fabs(Gp[i])); }
      lumen_conv_f32 cf;
      lumen_conv_start_f32(&cf, &gf, (float)k);
      for (int i = 0; i < n; i += 7) {
        char what[96];
        snprintf(what, sizeof what, "exact G, k = %g, sample %d, irregular %d", k, i, irregular);
        lumen_test_assert_close(G[i], ref_conv(t, cp, i, k, 0), 1e-11 * gmax, 0, what);
        snprintf(what, sizeof what, "exact dG/dk, k = %g, sample %d, irregular %d", k, i, irregular);
        lumen_test_assert_close(Gp[i], ref_conv(t, cp, i, k, 1), 1e-9 * gpmax, 0, what);
        ++checked;
      }
      for (int i = 1; i < n; ++i) {
        lumen_conv_step_f32(&cf, &gf, i);
        if (!(fabs(cf.G - G[i]) <= 2e-5 * gmax)) {
          print_error("f32 G[%d] = %.8g, f64 %.8g (k %g)\n", i, cf.G, G[i], k);
          fail();
        }
      }
    }
  }
  assert_true(checked > 200);
}

/* cp(t) = t and cp = 1 are piecewise linear: closed forms exist. */
static void test_exact_closed_forms(void **state) {
  (void)state;
  static double t[NMAX], cp[NMAX], dt[NMAX], icp[NMAX], G[NMAX], Gp[NMAX];
  const double ks[] = {1e-7, 0.3, 2.0, 40.0};
  for (int irregular = 0; irregular < 2; ++irregular) {
    int n = make_times(t, 100, 0.1, irregular);
    for (int shape = 0; shape < 2; ++shape) {
      for (int i = 0; i < n; ++i) cp[i] = shape ? 1.0 : t[i];
      lumen_grid_f64 g;
      lumen_grid_setup_f64(&g, n, t, cp, dt, icp);
      for (size_t q = 0; q < 4; ++q) {
        double k = ks[q];
        run_conv(&g, k, G, Gp);
        for (int i = 0; i < n; ++i) {
          double x = t[i], e = exp(-k * x);
          /* ramp: int_0^x s e^{-k(x-s)} ds = x/k - (1-e)/k^2 ; step: (1-e)/k */
          double ref = shape ? -expm1(-k * x) / k : (k * x + expm1(-k * x)) / (k * k);
          double dref = shape ? (x * e * k + expm1(-k * x)) / (k * k)
                              : (-x / (k * k) - x * e / (k * k) - 2 * expm1(-k * x) / (k * k * k));
          if (k < 1e-3) {  /* series of the closed forms */
            ref = shape ? x - k * x * x / 2 + k * k * x * x * x / 6
                        : x * x / 2 - k * x * x * x / 6 + k * k * x * x * x * x / 24;
            dref = shape ? -x * x / 2 + k * x * x * x / 3 : -x * x * x / 6 + k * x * x * x * x / 12;
          }
          lumen_test_assert_close(G[i], ref, 1e-13, 1e-11, shape ? "step response" : "ramp response");
          lumen_test_assert_close(Gp[i], dref, 1e-12, 1e-9, shape ? "step dG/dk" : "ramp dG/dk");
        }
      }
    }
  }
}

/* Trapezoid option against the direct O(N^2) sum
   G_i = sum_j dt_j/2 [cp_{j-1} e^{-k (t_i - t_{j-1})} + cp_j e^{-k (t_i - t_j)}]. */
static void test_trapezoid_vs_direct(void **state) {
  (void)state;
  static double t[NMAX], cp[NMAX], dt[NMAX], icp[NMAX], G[NMAX], Gp[NMAX];
  const double ks[] = {0.0, 0.01, 0.7, 35.0, 400.0};
  for (int irregular = 0; irregular < 2; ++irregular) {
    int n = make_times(t, 150, 2.0 / 60.0, irregular);
    for (int i = 0; i < n; ++i) cp[i] = smooth_cp(t[i]);
    lumen_grid_f64 g;
    lumen_grid_setup_f64(&g, n, t, cp, dt, icp);
    g.conv = LUMEN_CONV_TRAPEZOID;
    for (size_t q = 0; q < sizeof ks / sizeof ks[0]; ++q) {
      double k = ks[q];
      run_conv(&g, k, G, Gp);
      for (int i = 0; i < n; ++i) {
        double s = 0, sd = 0;
        for (int j = 1; j <= i; ++j) {
          double h = t[j] - t[j - 1], u0 = t[i] - t[j - 1], u1 = t[i] - t[j];
          s += 0.5 * h * (cp[j - 1] * exp(-k * u0) + cp[j] * exp(-k * u1));
          sd += 0.5 * h * (-u0 * cp[j - 1] * exp(-k * u0) - u1 * cp[j] * exp(-k * u1));
        }
        lumen_test_assert_close(G[i], s, 1e-14, 1e-11, "trapezoid G vs direct sum");
        lumen_test_assert_close(Gp[i], sd, 1e-14, 1e-10, "trapezoid dG/dk vs direct sum");
      }
      if (k == 0.0)  /* k = 0: both rules give the cumulative trapezoid of cp */
        for (int i = 0; i < n; ++i) lumen_test_assert_close(G[i], icp[i], 1e-14, 1e-13, "k=0 vs icp");
    }
  }
}

/* The uniform fast path equals the general path on the same grid; a grid within the uniform
   tolerance is detected, a visibly irregular one is not. */
static void test_uniform_path(void **state) {
  (void)state;
  static double t[NMAX], cp[NMAX], dt[NMAX], icp[NMAX], G1[NMAX], G2[NMAX], P1[NMAX], P2[NMAX];
  int n = make_times(t, 200, 0.5 / 60.0, 0);
  for (int i = 0; i < n; ++i) cp[i] = smooth_cp(t[i]);
  lumen_grid_f64 g;
  lumen_grid_setup_f64(&g, n, t, cp, dt, icp);
  assert_int_equal(g.uniform, 1);
  lumen_test_assert_close(g.dt_u, 0.5 / 60.0, 0, 1e-12, "dt_u");
  for (int conv = 0; conv < 2; ++conv) {
    g.conv = conv;
    g.uniform = 1; run_conv(&g, 12.0, G1, P1);
    g.uniform = 0; run_conv(&g, 12.0, G2, P2);
    for (int i = 0; i < n; ++i) {
      lumen_test_assert_close(G1[i], G2[i], 1e-14, 1e-11, "uniform vs general G");
      lumen_test_assert_close(P1[i], P2[i], 1e-14, 1e-10, "uniform vs general G'");
    }
  }
  /* float times of a long series (QIBA v6: 1321 frames of 0.5 s) still count as uniform */
  {
    static float tf[1321], dtf[1321];
    for (int i = 0; i < 1321; ++i) tf[i] = (float)(i * 0.5 / 60.0);
    lumen_grid_f32 gf;
    assert_int_equal(lumen_grid_setup_f32(&gf, 1321, tf, NULL, dtf, NULL), 0);
    assert_int_equal(gf.uniform, 1);
    lumen_test_assert_close(gf.dt_u, 0.5 / 60.0, 0, 1e-6, "f32 dt_u");
  }
  t[50] += 0.01 * (t[51] - t[50]);
  lumen_grid_setup_f64(&g, n, t, cp, dt, icp);
  assert_int_equal(g.uniform, 0);
  t[50] = t[49] - 1e-3;  /* not increasing */
  assert_int_not_equal(lumen_grid_setup_f64(&g, n, t, cp, dt, icp), 0);
}

/* Float times tj (m samples, minutes; tf their float copy filled here) as lumen_grid_f32 sets
   them up (checked: not uniform, runs, jit) against the per-sample weights of the exact double
   times: the largest difference of G at rate k, relative to its peak. */
static double float_grid_vs_exact(const double *tj, int m, int runs, int jit, double k) {
  static float tf[NMAX], cpf[NMAX], dtf[NMAX], icpf[NMAX];
  static double cp[NMAX], dj[NMAX], ij[NMAX], Ge[NMAX], Pe[NMAX];
  for (int i = 0; i < m; ++i) {
    tf[i] = (float)tj[i];
    cpf[i] = (float)smooth_cp(tj[i]);
    cp[i] = (double)cpf[i];
  }
  lumen_grid_f32 gf;
  assert_int_equal(lumen_grid_setup_f32(&gf, m, tf, cpf, dtf, icpf), 0);
  assert_int_equal(gf.uniform, 0);
  assert_int_equal(gf.n_runs, runs);
  assert_int_equal(gf.jit, jit);
  lumen_conv_f32 c;
  lumen_conv_start_f32(&c, &gf, (float)k);
  lumen_grid_f64 ge;
  assert_int_equal(lumen_grid_setup_f64(&ge, m, tj, cp, dj, ij), 0);
  ge.n_runs = 0;
  ge.jit = 0; /* the per-sample weights */
  run_conv(&ge, k, Ge, Pe);
  double peak = 0, worst = 0;
  for (int i = 1; i < m; ++i) peak = fmax(peak, fabs(Ge[i]));
  for (int i = 1; i < m; ++i) {
    lumen_conv_step_f32(&c, &gf, i);
    worst = fmax(worst, fabs(c.G - Ge[i]) / peak);
  }
  return worst;
}

/* Runs of equal steps (lumen_grid.n_runs): a two-rate grid (2 s during the bolus, then 8 s) is
   two runs whose convolution equals the per-sample weights' (n_runs = 0) to rounding, for every
   rate and both rules; a grid nudged at one sample is four runs; steps cycling through four
   sizes are too many; float times whose 5 s frames drift by 2.5 ms a frame after the 40th (not
   uniform: 110 ms off the mean step by the end) with 0.2 ms jitter are one run (steps within
   1e-3 of the run's first, uniform detection's tolerance in float), within 1e-3 of the exact
   times' convolution. */
static void test_step_runs(void **state) {
  (void)state;
  static double t[NMAX], cp[NMAX], dt[NMAX], icp[NMAX], G1[NMAX], G2[NMAX], P1[NMAX], P2[NMAX];
  const int n = 120;
  for (int i = 0; i < n; ++i) t[i] = (i <= 60 ? 2.0 * i : 120.0 + 8.0 * (i - 60)) / 60.0;
  for (int i = 0; i < n; ++i) cp[i] = smooth_cp(t[i]);
  lumen_grid_f64 g;
  assert_int_equal(lumen_grid_setup_f64(&g, n, t, cp, dt, icp), 0);
  assert_int_equal(g.uniform, 0);
  assert_int_equal(g.n_runs, 2);
  assert_int_equal(g.run_end[0], 61);
  assert_int_equal(g.run_end[1], n);
  lumen_test_assert_close(g.run_dt[0], 2.0 / 60, 0, 1e-13, "run 0 step");
  lumen_test_assert_close(g.run_dt[1], 8.0 / 60, 0, 1e-13, "run 1 step");
  const double ks[] = {0.0, 0.05, 1.0, 6.0, 35.0, 300.0};
  for (int conv = 0; conv < 2; ++conv)
    for (size_t j = 0; j < sizeof ks / sizeof ks[0]; ++j) {
      g.conv = conv;
      run_conv(&g, ks[j], G1, P1);
      lumen_grid_f64 h = g;
      h.n_runs = 0;
      run_conv(&h, ks[j], G2, P2);
      for (int i = 0; i < n; ++i) {
        lumen_test_assert_close(G1[i], G2[i], 1e-14, 1e-12, "runs vs per-sample G");
        lumen_test_assert_close(P1[i], P2[i], 1e-14, 1e-11, "runs vs per-sample G'");
      }
    }
  make_times(t, 200, 0.5 / 60.0, 0);
  t[50] += 0.01 * (t[51] - t[50]);
  lumen_grid_setup_f64(&g, 200, t, cp, dt, icp);
  assert_int_equal(g.n_runs, 4);
  make_times(t, 200, 0.5 / 60.0, 1);
  lumen_grid_setup_f64(&g, 200, t, cp, dt, icp);
  assert_int_equal(g.n_runs, 0);
  {
    static double tj[NMAX];
    const int m = 90;
    for (int i = 0; i < m; ++i)
      tj[i] = (i <= 40 ? 5.0 * i : 200.0 + 5.0025 * (i - 40)) / 60.0 + (i % 5 == 2 ? 2e-4 / 60.0 : 0);
    double worst = float_grid_vs_exact(tj, m, 1, 0, 1.5);
    print_message("jittered float times as one run: G within %.2g of the exact times' peak\n", worst);
    assert_true(worst < 1e-3);
  }
}

/* Times with jitter (DICOM trigger or acquisition times: 5 s frames +- 5 ms): no runs, but the
   weights interpolated in the step (lumen_grid.jit) give the per-sample weights' convolution
   within 1e-12 for every rate the interpolation takes and both rules; faster rates (|k| jit_h >
   LUMEN_CONV_JIT_KH) take the per-sample weights, the same bits. Float times with 1 % jitter
   (beyond float's uniform tolerance) as well, within float rounding of the exact times'. */
static void test_step_jitter(void **state) {
  (void)state;
  static double t[NMAX], cp[NMAX], dt[NMAX], icp[NMAX], G1[NMAX], G2[NMAX], P1[NMAX], P2[NMAX];
  const int n = 100;
  uint64_t r = 12345;
  for (int i = 0; i < n; ++i) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    double jit = ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 0.01; /* +- 5 ms */
    t[i] = (5.0 * i + (i ? jit : 0)) / 60.0;
    cp[i] = smooth_cp(t[i]);
  }
  lumen_grid_f64 g;
  assert_int_equal(lumen_grid_setup_f64(&g, n, t, cp, dt, icp), 0);
  assert_int_equal(g.uniform, 0);
  assert_int_equal(g.n_runs, 0);
  assert_int_equal(g.jit, 1);
  assert_true(g.jit_h > 0 && g.jit_h <= 0.01 / 60.0);
  lumen_test_assert_close(g.jit_c, 5.0 / 60.0, 0, 2e-3, "jitter centre");
  const double ks[] = {0.0, 0.05, 1.0, 6.0, 35.0, 280.0, 3000.0};
  double worst_d = 0;
  for (int conv = 0; conv < 2; ++conv)
    for (size_t j = 0; j < sizeof ks / sizeof ks[0]; ++j) {
      g.conv = conv;
      lumen_conv_f64 c;
      lumen_conv_start_f64(&c, &g, ks[j]);
      assert_int_equal(c.jit, ks[j] * g.jit_h <= LUMEN_CONV_JIT_KH);
      run_conv(&g, ks[j], G1, P1);
      lumen_grid_f64 h = g;
      h.jit = 0;
      run_conv(&h, ks[j], G2, P2);
      double peak = 0, peakp = 0;
      for (int i = 0; i < n; ++i) peak = fmax(peak, fabs(G2[i])), peakp = fmax(peakp, fabs(P2[i]));
      for (int i = 0; i < n; ++i) {
        if (!c.jit) {
          assert_true(G1[i] == G2[i] && P1[i] == P2[i]); /* the per-sample weights themselves */
          continue;
        }
        lumen_test_assert_close(G1[i], G2[i], 1e-12 * peak, 0, "interpolated vs per-sample G");
        worst_d = fmax(worst_d, fabs(G1[i] - G2[i]) / peak);
        /* G' against its own peak, or against G times a step where it is that small (the
           trapezoid at fast rates: G' ~ 1e-12, its rounding is the per-sample weights') */
        lumen_test_assert_close(P1[i], P2[i], 1e-12 * (peakp + peak * 5.0 / 60.0), 0, "interpolated vs per-sample G'");
      }
    }
  print_message("jittered double times: G within %.2g of the per-sample weights' (of its peak)\n", worst_d);
  /* the per-sample weights of a rate the interpolation leaves out are the closed forms' */
  assert_true(LUMEN_CONV_JIT_KH * (1.0 / LUMEN_GRID_JIT_RTOL - 1.0) >= LUMEN_SERIES_X);
  /* more than LUMEN_GRID_JIT_RTOL of jitter: per sample */
  t[40] += 0.3 / 60.0;
  lumen_grid_setup_f64(&g, n, t, cp, dt, icp);
  assert_int_equal(g.jit, 0);
  {
    static double tj[NMAX];
    const int m = 90;
    for (int i = 0; i < m; ++i) tj[i] = (2.0 * i + (i % 3 == 1 ? 0.02 : i % 3 == 2 ? -0.015 : 0)) / 60.0; /* 2 s +- 1 % */
    double worst = float_grid_vs_exact(tj, m, 0, 1, 1.5);
    print_message("jittered float times: G within %.2g of the exact times' peak\n", worst);
    assert_true(worst < 2e-6);
  }
}

/* Series and closed forms of the exact weights agree where they switch (x = 0.5). */
static void test_series_switch(void **state) {
  (void)state;
  const double dt = 0.1;
  const double x0 = LUMEN_SERIES_X;
  lumen_convw_f64 a = lumen_conv_weights_f64(LUMEN_CONV_EXACT, (x0 * (1 - 1e-12)) / dt, dt);
  lumen_convw_f64 b = lumen_conv_weights_f64(LUMEN_CONV_EXACT, (x0 * (1 + 1e-12)) / dt, dt);
  lumen_test_assert_close(a.w0, b.w0, 0, 1e-11, "w0 across switch");
  lumen_test_assert_close(a.w1, b.w1, 0, 1e-11, "w1 across switch");
  lumen_test_assert_close(a.w0p, b.w0p, 0, 1e-11, "w0' across switch");
  lumen_test_assert_close(a.w1p, b.w1p, 0, 1e-11, "w1' across switch");
  /* against 40-digit values (mpmath) of g - f, f, g' - f', f' at dt = 1, both sides of the switch */
  static const double ref[4][5] = {
    {0.1, 0.46788401604444695, 0.48374180359595732, -0.30930614052934331, -0.15857787551510364},
    {0.4999999, 0.36081606474448505, 0.42612265191185343, -0.23020286428710819, -0.13061320045737686},
    {0.5000001, 0.36081601870391555, 0.42612262578921458, -0.23020283065595511, -0.13061318804796045},
    {2.0, 0.14849853757254048, 0.28383382080915317, -0.080830895954234135, -0.067667641618306346}};
  for (int r = 0; r < 4; ++r) {
    lumen_convw_f64 w = lumen_conv_weights_f64(LUMEN_CONV_EXACT, ref[r][0], 1.0);
    lumen_test_assert_close(w.w0, ref[r][1], 0, 1e-14, "w0 vs 40-digit value");
    lumen_test_assert_close(w.w1, ref[r][2], 0, 1e-14, "w1 vs 40-digit value");
    lumen_test_assert_close(w.w0p, ref[r][3], 0, 1e-14, "w0' vs 40-digit value");
    lumen_test_assert_close(w.w1p, ref[r][4], 0, 1e-14, "w1' vs 40-digit value");
  }
  lumen_convw_f32 af = lumen_conv_weights_f32(LUMEN_CONV_EXACT, 0.49999f / 0.1f, 0.1f);
  lumen_convw_f32 bf = lumen_conv_weights_f32(LUMEN_CONV_EXACT, 0.50001f / 0.1f, 0.1f);
  lumen_test_assert_close(af.w1, bf.w1, 0, 1e-5, "f32 w1 across switch");
  lumen_test_assert_close(af.w1p, bf.w1p, 0, 1e-4, "f32 w1' across switch");
  /* k = 0: weights of the trapezoid rule on cp */
  lumen_convw_f64 z = lumen_conv_weights_f64(LUMEN_CONV_EXACT, 0.0, dt);
  lumen_test_assert_close(z.w0, dt / 2, 0, 1e-15, "k=0 w0");
  lumen_test_assert_close(z.w1, dt / 2, 0, 1e-15, "k=0 w1");
  assert_true(z.d == 1.0);
}

/* MODELS.md: at 0.5 s frames and kep = 35/min the exact rule is far closer to the continuous
   convolution than the trapezoid rule (the QIBA v6 Ktrans 0.35 / ve 0.01 patch). */
static void test_exact_beats_trapezoid(void **state) {
  (void)state;
  static double t[NMAX], cp[NMAX], dt[NMAX], icp[NMAX], G[NMAX], Gp[NMAX];
  static double tf[8 * NMAX], cpf[8 * NMAX], dtf[8 * NMAX], icpf[8 * NMAX];
  static double Gf[8 * NMAX], Gpf[8 * NMAX];
  const int n = 240, r = 8;  /* 2 minutes at 0.5 s; reference on a grid 8x finer */
  make_times(t, n, 0.5 / 60.0, 0);
  make_times(tf, (n - 1) * r + 1, 0.5 / 60.0 / r, 0);
  for (int i = 0; i < n; ++i) cp[i] = smooth_cp(t[i]);
  for (int i = 0; i < (n - 1) * r + 1; ++i) cpf[i] = smooth_cp(tf[i]);
  lumen_grid_f64 g, gfine;
  lumen_grid_setup_f64(&g, n, t, cp, dt, icp);
  lumen_grid_setup_f64(&gfine, (n - 1) * r + 1, tf, cpf, dtf, icpf);
  const double kep = 35.0;
  run_conv(&gfine, kep, Gf, Gpf);
  double err[2] = {0, 0}, gmax = 0;
  for (int conv = 0; conv < 2; ++conv) {
    g.conv = conv;
    run_conv(&g, kep, G, Gp);
    for (int i = 0; i < n; ++i) {
      err[conv] = fmax(err[conv], fabs(G[i] - Gf[i * r]));
      gmax = fmax(gmax, fabs(Gf[i * r]));
    }
  }
  print_message("kep 35/min, 0.5 s: max error exact %.3g, trapezoid %.3g (of max %.3g)\n", err[0], err[1], gmax);
  assert_true(err[0] < 0.2 * err[1]);
  assert_true(err[0] < 2e-3 * gmax);
}

static void test_aif_shift(void **state) {
  (void)state;
  static double t[NMAX], cp[NMAX], out[NMAX], iout[NMAX];
  const int n = 100;
  const double h = 2.0 / 60.0;
  make_times(t, n, h, 0);
  for (int i = 0; i < n; ++i) cp[i] = smooth_cp(t[i]);
  /* integer shift: index shift, cp[0] held before */
  lumen_aif_shift_f64(n, t, cp, 3 * h, out, iout);
  for (int i = 0; i < n; ++i) lumen_test_assert_close(out[i], i >= 3 ? cp[i - 3] : cp[0], 1e-12, 1e-10, "integer shift");
  /* non-integer shift of a linear function: exact */
  for (int i = 0; i < n; ++i) cp[i] = 2.0 + 3.0 * t[i];
  const double delay = 0.37 * h + 5 * h;
  lumen_aif_shift_f64(n, t, cp, delay, out, iout);
  for (int i = 0; i < n; ++i) {
    double ts = t[i] - delay;
    double ref = ts <= 0 ? 2.0 : 2.0 + 3.0 * ts;
    lumen_test_assert_close(out[i], ref, 1e-12, 1e-12, "fractional shift");
  }
  double icp_ref = 0;
  for (int i = 1; i < n; ++i) icp_ref += 0.5 * h * (out[i - 1] + out[i]);
  lumen_test_assert_close(iout[n - 1], icp_ref, 1e-12, 1e-12, "shifted integral");
  /* negative delay: held at the last value */
  lumen_aif_shift_f64(n, t, cp, -1.5 * h, out, NULL);
  lumen_test_assert_close(out[n - 1], cp[n - 1], 0, 1e-14, "negative shift end");
  lumen_test_assert_close(out[0], 2.0 + 3.0 * 1.5 * h, 1e-12, 1e-12, "negative shift start");
}

/* AUC: exact for a piecewise-linear curve, with partial intervals at the window ends; the
   normalisation divides by the same area of cp; a zero AIF is flagged, not NaN. */
static void test_auc(void **state) {
  (void)state;
  static double t[NMAX], cp[NMAX], dt[NMAX], icp[NMAX], y[NMAX];
  for (int irregular = 0; irregular < 2; ++irregular) {
    int n = make_times(t, 80, 0.1, irregular);
    for (int i = 0; i < n; ++i) { y[i] = 1.0 + 2.0 * t[i]; cp[i] = 4.0; }
    lumen_grid_f64 g;
    lumen_grid_setup_f64(&g, n, t, cp, dt, icp);
    const double t0 = 0.537, w = 1.5, tend = t[n - 1];
    double out[4];
    assert_int_equal(lumen_auc_f64(&g, y, t0, w, out), 0);
    double whole = (tend - t0) + (tend * tend - t0 * t0);
    double win = w + ((t0 + w) * (t0 + w) - t0 * t0);
    lumen_test_assert_close(out[0], whole, 1e-12, 1e-12, "AUC whole");
    lumen_test_assert_close(out[1], win, 1e-12, 1e-12, "AUC window");
    lumen_test_assert_close(out[2], whole / (4.0 * (tend - t0)), 1e-12, 1e-12, "AUC whole / AIF");
    lumen_test_assert_close(out[3], win / (4.0 * w), 1e-12, 1e-12, "AUC window / AIF");
    /* a smooth function on a fine grid: trapezoid error O(h^2) */
    int nf = make_times(t, 2001, 0.005, 0);
    for (int i = 0; i < nf; ++i) { y[i] = sin(t[i]); cp[i] = 1.0; }
    lumen_grid_setup_f64(&g, nf, t, cp, dt, icp);
    assert_int_equal(lumen_auc_f64(&g, y, 0.0, 3.0, out), 0);
    lumen_test_assert_close(out[1], 1.0 - cos(3.0), 1e-5, 0, "AUC of sin over [0, 3]");
    lumen_test_assert_close(out[0], 1.0 - cos(10.0), 1e-5, 0, "AUC of sin over [0, 10]");
    for (int i = 0; i < nf; ++i) cp[i] = 0.0;
    assert_int_not_equal(lumen_auc_f64(&g, y, 0.0, 3.0, out), 0);
    assert_true(out[2] == 0.0 && out[3] == 0.0);
  }
}

/* The convolutions' own expm1 (written on generic operations, for the vector lanes) against libm:
   at most 2 ulp in double on [-60, 60] (ulp of the larger of libm's result and 1e-300), and in
   float against the double result rounded; -60 and below give -1, NaN stays NaN. */
static double ulps(double got, double want, double ulp_of_one) {
  double scale = fmax(fabs(want), 1e-300);
  int e;
  frexp(scale, &e);
  return fabs(got - want) / ldexp(ulp_of_one, e - 1);
}
static void test_expm1(void **state) {
  (void)state;
  double worst = 0, worst_f = 0, at = 0;
  for (int i = -600000; i < 600000; ++i) {
    const double y = i * 1e-4 + (i % 7) * 1.3e-9;
    const double want = expm1(y), got = lumen_expm1__f64(y);
    const double u = ulps(got, want, 0x1p-52);
    if (u > worst) { worst = u; at = y; }
    const float yf = (float)y;
    const double wf = (double)(float)expm1((double)yf);
    worst_f = fmax(worst_f, ulps((double)lumen_expm1__f32(yf), wf, 0x1p-23));
  }
  const double tiny[] = {1e-300, -1e-300, 1e-20, -1e-12, 3e-9, -0.34657359027997264, 0.3465735902799727};
  for (size_t i = 0; i < sizeof tiny / sizeof tiny[0]; ++i) worst = fmax(worst, ulps(lumen_expm1__f64(tiny[i]), expm1(tiny[i]), 0x1p-52));
  print_message("expm1: worst %.2f ulp (double, at %.6g), %.2f ulp (float)\n", worst, at, worst_f);
  assert_true(worst <= 2.0);
  assert_true(worst_f <= 2.0);
  assert_true(lumen_expm1__f64(-745) == -1.0 && lumen_expm1__f64(-60) == -1.0 && lumen_expm1__f64(0) == 0.0);
  assert_true(isnan(lumen_expm1__f64(NAN)) && isnan(lumen_expm1__f32(NAN)));
}

LUMEN_TEST_MAIN(cmocka_unit_test(test_expm1),
                cmocka_unit_test(test_exact_vs_integral),
                cmocka_unit_test(test_exact_closed_forms),
                cmocka_unit_test(test_trapezoid_vs_direct),
                cmocka_unit_test(test_uniform_path),
                cmocka_unit_test(test_step_runs),
                cmocka_unit_test(test_step_jitter),
                cmocka_unit_test(test_series_switch),
                cmocka_unit_test(test_exact_beats_trapezoid),
                cmocka_unit_test(test_aif_shift),
                cmocka_unit_test(test_auc))
