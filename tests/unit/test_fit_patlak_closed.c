/* Patlak in closed form (tiers cpu/cpu_single, src/fit/execute.c, issue 20): the bounded
   least-squares fit of every curve from one shared normal matrix, no iterations. Reference: an
   independent solver written here, cyclic coordinate descent on the convex quadratic in long
   double, projected on the box, run to a fixed point (the exact constrained optimum), and the
   statistics from their definitions (chi2 as the residual sum, R^2, the 95 % intervals from
   (J^T W J)^-1 over the free parameters with Student's t from a table).
   Also: the standard tier (GSL, the independent solver of the library) agrees, invalid curves keep
   their states, weights, float and double data, the SIMD levels, and a fixed parameter (which
   takes the iterative path). */
#include "test_support.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lumen_build_config.h"

#define N 80
#define NCUR 400
#define T975_78 1.990847 /* Student t, 97.5 %, 78 and 79 degrees of freedom (statistical tables) */
#define T975_79 1.990450

typedef struct problem {
  double t[N], cp[N], icp[N], w[N];
  int weighted;
  double lo[2], hi[2];
  float yf[NCUR * N];
  double yd[NCUR * N];
} problem;

static uint64_t g_rng = 12345;
static double uniform(void) {
  g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(g_rng >> 11) / 9007199254740992.0;
}

static lumen_fit_plan *make_plan(lumen_ctx *ctx, const problem *pb, const char *backend, int fixed_vp) {
  lumen_fit_options opt;
  lumen_fit_options_init(&opt);
  opt.model = LUMEN_MODEL_PATLAK;
  opt.backend = backend;
  if (pb->weighted) opt.weights = pb->w;
  if (fixed_vp) {
    opt.fixed[1] = 1;
    opt.start[1] = 0.05;
  }
  lumen_fit_plan *plan = NULL;
  assert_int_equal(lumen_fit_plan_create(ctx, &opt, N, pb->t, pb->cp, &plan), LUMEN_OK);
  return plan;
}

/* The grid, the plasma integral (the plan's own: Patlak's Jacobian columns), bounds and curves:
   interior truths, Ktrans above the upper bound, vp below zero, near-zero uptake; noise 2 % of
   the peak; curve 0 has a NaN, curve 1 an Inf, curve 2 is all zero. */
static void make_problem(problem *pb, int weighted) {
  memset(pb, 0, sizeof *pb);
  lumen_test_parker_grid(N, 1.0, 1, pb->t, pb->cp);
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_fit_plan *plan = make_plan(ctx, pb, "standard", 0);
  double start;
  for (int k = 0; k < 2; ++k) assert_int_equal(lumen_fit_plan_param_bounds(plan, k, &start, &pb->lo[k], &pb->hi[k]), LUMEN_OK);
  double e0[2] = {1, 0}, y[N];
  assert_int_equal(lumen_fit_plan_eval(plan, e0, NULL, 0.0, pb->icp), LUMEN_OK);
  lumen_fit_plan_destroy(plan);
  lumen_ctx_destroy(ctx);
  pb->weighted = weighted;
  for (int i = 0; i < N; ++i) pb->w[i] = weighted ? 0.5 + 1.5 * uniform() : 1.0;
  for (int c = 0; c < NCUR; ++c) {
    double k, v;
    switch (c % 4) {
      case 0: k = 0.01 + 0.5 * uniform(), v = 0.01 + 0.2 * uniform(); break;
      case 1: k = pb->hi[0] * (1.2 + uniform()), v = 0.05; break;  /* Ktrans above its bound */
      case 2: k = 0.1 + 0.2 * uniform(), v = -0.05 - 0.05 * uniform(); break; /* vp below 0 */
      default: k = 0.002 * uniform(), v = 0.02 + 0.05 * uniform(); break;
    }
    double peak = 0;
    for (int i = 0; i < N; ++i) {
      y[i] = k * pb->icp[i] + v * pb->cp[i];
      if (fabs(y[i]) > peak) peak = fabs(y[i]);
    }
    for (int i = 0; i < N; ++i) {
      double yi = y[i] + 0.02 * peak * (uniform() + uniform() + uniform() - 1.5);
      pb->yf[c * N + i] = (float)yi;
      pb->yd[c * N + i] = (double)pb->yf[c * N + i];
    }
  }
  pb->yf[5] = NAN, pb->yd[5] = NAN;
  pb->yf[N + 7] = INFINITY, pb->yd[N + 7] = INFINITY;
  for (int i = 0; i < N; ++i) pb->yf[2 * N + i] = 0, pb->yd[2 * N + i] = 0;
}

typedef struct reference {
  double p[2], chi2, r2, ci_lo[2], ci_hi[2];
  int mask;
} reference;

/* Coordinate descent on f(k, v) = sum w (y - k icp - v cp)^2 within the box, to a fixed point. */
static void solve_reference(const problem *pb, const double *y, int fixed_vp, reference *r) {
  long double a00 = 0, a01 = 0, a11 = 0, b0 = 0, b1 = 0, sw = 0, swy = 0;
  for (int i = 0; i < N; ++i) {
    long double w = pb->w[i], u = pb->icp[i], c = pb->cp[i];
    a00 += w * u * u, a01 += w * u * c, a11 += w * c * c, b0 += w * u * y[i], b1 += w * c * y[i];
    sw += w, swy += w * y[i];
  }
  long double k = 0.1, v = fixed_vp ? 0.05 : 0.1;
  for (int it = 0; it < 200000; ++it) {
    long double k1 = (b0 - a01 * v) / a00;
    k1 = k1 < pb->lo[0] ? pb->lo[0] : k1 > pb->hi[0] ? pb->hi[0] : k1;
    long double v1 = v;
    if (!fixed_vp) {
      v1 = (b1 - a01 * k1) / a11;
      v1 = v1 < pb->lo[1] ? pb->lo[1] : v1 > pb->hi[1] ? pb->hi[1] : v1;
    }
    int same = k1 == k && v1 == v;
    k = k1, v = v1;
    if (same) break;
  }
  r->p[0] = (double)k, r->p[1] = (double)v;
  long double chi2 = 0, sst = 0, ybar = swy / sw;
  for (int i = 0; i < N; ++i) {
    long double e = y[i] - k * pb->icp[i] - v * pb->cp[i], d = y[i] - ybar;
    chi2 += pb->w[i] * e * e, sst += pb->w[i] * d * d;
  }
  r->chi2 = (double)chi2;
  r->r2 = (double)(1 - chi2 / sst);
  long double det = a00 * a11 - a01 * a01, inv[2] = {a11 / det, a00 / det};
  if (fixed_vp) inv[0] = 1 / a00; /* the intervals of the free parameters only */
  const int dof = fixed_vp ? N - 1 : N - 2;
  for (int j = 0; j < 2; ++j) {
    double h = (fixed_vp ? T975_79 : T975_78) * sqrt((double)(chi2 / dof * inv[j]));
    r->ci_lo[j] = r->p[j] - h, r->ci_hi[j] = r->p[j] + h;
  }
  r->mask = 0;
  for (int j = 0; j < 2; ++j) {
    if (fixed_vp && j == 1) continue;
    double range = pb->hi[j] - pb->lo[j];
    if (r->p[j] <= pb->lo[j] + 1e-6 * fmin(range, 1 + fabs(pb->lo[j]))) r->mask |= 1 << (2 * j);
    else if (r->p[j] >= pb->hi[j] - 1e-6 * fmin(range, 1 + fabs(pb->hi[j]))) r->mask |= 2 << (2 * j);
  }
}

typedef struct outcome {
  double params[NCUR * 2], chi2[NCUR], r2[NCUR], ci_lo[NCUR * 2], ci_hi[NCUR * 2];
  int32_t state[NCUR], mask[NCUR], iterations[NCUR];
  char used[LUMEN_FIT_NAME_MAX];
} outcome;

static void run(const problem *pb, const char *backend, int f64, lumen_cpu_simd simd, int fixed_vp, outcome *o) {
  lumen_ctx *ctx = lumen_test_ctx();
  assert_int_equal(lumen_ctx_set_cpu_simd(ctx, simd), LUMEN_OK);
  lumen_fit_plan *plan = make_plan(ctx, pb, backend, fixed_vp);
  lumen_fit_results r = {.params = o->params, .state = o->state, .chi2 = o->chi2, .r2 = o->r2, .ci_lo = o->ci_lo,
                         .ci_hi = o->ci_hi, .bound_mask = o->mask, .iterations = o->iterations};
  lumen_status st = f64 ? lumen_fit_execute_f64(ctx, plan, NCUR, pb->yd, NULL, &r)
                        : lumen_fit_execute(ctx, plan, NCUR, pb->yf, NULL, &r);
  if (st != LUMEN_OK) print_error("%s\n", lumen_ctx_last_error(ctx));
  assert_int_equal(st, LUMEN_OK);
  snprintf(o->used, sizeof o->used, "%s", r.backend_used);
  lumen_fit_plan_destroy(plan);
  lumen_ctx_destroy(ctx);
}

/* Every curve of o against the reference (tolerances: relative to the parameter scale). */
static void check(const problem *pb, const outcome *o, int fixed_vp, double tol, int closed, const char *what) {
  char msg[160];
  int bounded = 0;
  for (int c = 0; c < NCUR; ++c) {
    if (c <= 2) { /* NaN, Inf, all zero */
      assert_int_equal(o->state[c], LUMEN_FIT_INVALID_INPUT);
      assert_true(isnan(o->params[2 * c]) && isnan(o->params[2 * c + 1]) && isnan(o->chi2[c]));
      continue;
    }
    reference r;
    solve_reference(pb, pb->yd + c * N, fixed_vp, &r);
    snprintf(msg, sizeof msg, "%s curve %d", what, c);
    int want = r.mask ? LUMEN_FIT_AT_BOUND : LUMEN_FIT_CONVERGED;
    if (o->state[c] != want || o->mask[c] != r.mask)
      print_error("%s: state %d mask %d, expected %d mask %d (Ktrans %.12g / %.12g, vp %.12g / %.12g)\n", msg,
                  o->state[c], o->mask[c], want, r.mask, o->params[2 * c], r.p[0], o->params[2 * c + 1], r.p[1]);
    assert_int_equal(o->state[c], want);
    assert_int_equal(o->mask[c], r.mask);
    bounded += r.mask != 0;
    for (int j = 0; j < 2; ++j) {
      lumen_test_assert_close(o->params[2 * c + j], r.p[j], tol * (j ? 0.1 : 1), 0, msg);
      if (fixed_vp && j == 1) continue;
      /* the library's t quantile (Cornish-Fisher beyond 30 degrees of freedom) is within 1e-5 */
      const double h = r.ci_hi[j] - r.p[j], at = tol * (j ? 0.1 : 1) + 2e-5 * h;
      lumen_test_assert_close(o->ci_lo[2 * c + j], r.ci_lo[j], at, 0, msg);
      lumen_test_assert_close(o->ci_hi[2 * c + j], r.ci_hi[j], at, 0, msg);
    }
    /* the iterative path (float32) stops at its chi2 tolerance (1e-6 relative) */
    lumen_test_assert_close(o->chi2[c], r.chi2, 0, closed ? 1e-9 : 1e-5, msg);
    lumen_test_assert_close(o->r2[c], r.r2, closed ? 1e-12 : 1e-6, 0, msg);
    if (closed) assert_int_equal(o->iterations[c], 0);
  }
  assert_true(bounded > NCUR / 3); /* the cases at a bound are really there */
}

static void test_closed_form(void **s) {
  (void)s;
  static problem pb;
  static outcome o;
  for (int weighted = 0; weighted <= 1; ++weighted) {
    make_problem(&pb, weighted);
    char what[96];
    const char *tiers[] = {"cpu", "cpu_single"};
    for (int ti = 0; ti < 2; ++ti)
      for (int f64 = 0; f64 <= 1; ++f64) {
        snprintf(what, sizeof what, "%s %s%s", tiers[ti], f64 ? "double" : "float", weighted ? " weighted" : "");
        run(&pb, tiers[ti], f64, LUMEN_CPU_SIMD_AUTO, 0, &o);
        assert_string_equal(o.used, tiers[ti]);
        /* the intervals' t quantile (Cornish-Fisher, < 1e-5) bounds their agreement */
        check(&pb, &o, 0, 1e-6, 1, what);
      }
  }
}

/* Every SIMD level gives the same fit to rounding (sums in another order). */
static void test_simd_levels(void **s) {
  (void)s;
  static problem pb;
  static outcome a, b;
  make_problem(&pb, 0);
  run(&pb, "cpu", 0, LUMEN_CPU_SIMD_AUTO, 0, &a);
  const lumen_cpu_simd levels[] = {LUMEN_CPU_SIMD_OFF, LUMEN_CPU_SIMD_AVX2};
  for (int l = 0; l < 2; ++l) {
    run(&pb, "cpu", 0, levels[l], 0, &b);
    for (int c = 0; c < NCUR; ++c) {
      assert_int_equal(a.state[c], b.state[c]);
      for (int j = 0; j < 2 && c > 2; ++j) lumen_test_assert_close(b.params[2 * c + j], a.params[2 * c + j], 1e-13, 1e-11, "simd");
    }
  }
}

/* The standard tier (its own solver) agrees with the closed form. */
static void test_standard_agrees(void **s) {
  (void)s;
  if (!LUMEN_HAVE_GSL) {
    print_message("standard tier not built (no GSL): the closed form is checked against the reference only\n");
    return;
  }
  static problem pb;
  static outcome a, b;
  make_problem(&pb, 0);
  run(&pb, "cpu", 1, LUMEN_CPU_SIMD_AUTO, 0, &a);
  run(&pb, "standard", 1, LUMEN_CPU_SIMD_AUTO, 0, &b);
  int same_state = 0;
  for (int c = 0; c < NCUR; ++c) {
    same_state += a.state[c] == b.state[c];
    for (int j = 0; j < 2 && c > 2; ++j)
      lumen_test_assert_close(b.params[2 * c + j], a.params[2 * c + j], 1e-4, 1e-4, "standard vs closed form");
  }
  assert_true(same_state >= NCUR - NCUR / 100);
}

/* A fixed parameter takes the iterative path: the 1-D constrained optimum. */
static void test_fixed_parameter(void **s) {
  (void)s;
  static problem pb;
  static outcome o;
  make_problem(&pb, 0);
  run(&pb, "cpu", 0, LUMEN_CPU_SIMD_AUTO, 1, &o);
  check(&pb, &o, 1, 2e-3, 0, "cpu fixed vp");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_closed_form),
      cmocka_unit_test(test_simd_levels),
      cmocka_unit_test(test_standard_agrees),
      cmocka_unit_test(test_fixed_parameter),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
