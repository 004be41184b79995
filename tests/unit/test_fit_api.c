/* The fit API: options defaults, names, backend requests and selection (pinned, auto, force_cpu,
   ROCKETSHIP aliases, per-curve fall-through), and bad input (per-curve states or clear errors,
   never a crash and never a plausible number for a curve that could not be fitted). */
#include "test_support.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lumen/aif.h"
#include "lumen_build_config.h"
#include "models/models_f64.h"

#define N 80

/* Parker AIF (Hct 0.42, 1 min arrival), 5 s frames, and noise-free Tofts curves. */
static void make_grid(double *t, double *cp) { lumen_test_parker_grid(N, 1.0, 0, t, cp); }

static void make_curve(lumen_model m, const double *t, const double *cp, const double *p, double *y) {
  double dt[N], icp[N];
  lumen_grid_f64 g;
  lumen_grid_setup_f64(&g, N, t, cp, dt, icp);
  lumen_model_eval_f64(m, &g, NULL, p, y, NULL, NULL);
}

static lumen_fit_plan *plan_for(lumen_ctx *ctx, lumen_fit_options *o) {
  double t[N], cp[N];
  make_grid(t, cp);
  lumen_fit_plan *plan = NULL;
  lumen_status st = lumen_fit_plan_create(ctx, o, N, t, cp, &plan);
  if (st != LUMEN_OK) print_error("plan: %s\n", lumen_ctx_last_error(ctx));
  assert_int_equal(st, LUMEN_OK);
  return plan;
}

static void test_defaults_and_names(void **s) {
  (void)s;
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  assert_int_equal(o.model, LUMEN_MODEL_TOFTS);
  assert_true(o.tolerance == 1e-6);
  assert_int_equal(o.max_iterations, 200);
  assert_int_equal(o.precision, LUMEN_FIT_FLOAT32);
  assert_int_equal(o.conv, LUMEN_FIT_CONV_EXACT);
  assert_true(isnan(o.start[0]) && isnan(o.lo[1]) && isnan(o.hi[3]));
  assert_string_equal(lumen_fit_state_name(LUMEN_FIT_CONVERGED), "converged");
  assert_string_equal(lumen_fit_state_name(LUMEN_FIT_INVALID_INPUT), "invalid_input");
  assert_string_equal(lumen_fit_state_name((lumen_fit_state)99), "unknown");
  assert_string_equal(lumen_fit_tier_name(LUMEN_FIT_TIER_CPU_SINGLE), "cpu_single");
  assert_string_equal(lumen_fit_precision_name(LUMEN_FIT_FLOAT64), "float64");
  assert_string_equal(lumen_fit_conv_name(LUMEN_FIT_CONV_TRAPEZOID), "trapezoid");
  assert_string_equal(lumen_fit_param_name(LUMEN_MODEL_2CXM, 0), "E");
  assert_string_equal(lumen_fit_param_name(LUMEN_MODEL_TOFTS, 1), "ve");
  assert_int_equal(lumen_fit_derived_count(LUMEN_MODEL_TOFTS), 1);
  assert_string_equal(lumen_fit_derived_name(LUMEN_MODEL_TOFTS, 0), "kep");
  assert_string_equal(lumen_fit_derived_name(LUMEN_MODEL_2CUM, 1), "PS");
  assert_string_equal(lumen_fit_derived_name(LUMEN_MODEL_VFA, 0), "R1");
  assert_null(lumen_fit_derived_name(LUMEN_MODEL_PATLAK, 0));
}

static void test_backend_parse(void **s) {
  lumen_ctx *ctx = *s;
  static const char *const cases[][3] = {
      {"auto", "0", "auto"},           {"accelerated", "0", "accelerated"}, {"standard", "0", "standard"},
      {"cpu", "0", "cpu"},             {"cpu_single", "0", "cpu_single"},   {"cuda", "0", "cuda"},
      {"gpufit", "0", "accelerated"},  {"gpufit_cuda", "0", "cuda"},        {"cpufit_cpu", "0", "cpu"},
      {"gpufit_cpu_fallback", "0", "cpu"}, {"pure_cpu", "0", "standard"},   {"cpu", "1", "standard"},
      {"rocketship:cpu", "0", "standard"}, {"AUTO", "0", "auto"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    char canon[64];
    assert_int_equal(lumen_fit_backend_parse(ctx, cases[i][0], cases[i][1][0] == '1', canon, sizeof canon), LUMEN_OK);
    assert_string_equal(canon, cases[i][2]);
  }
  assert_int_equal(lumen_fit_backend_parse(ctx, "gpu", 0, NULL, 0), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "gpu"));
}

/* Fits one noise-free Tofts curve with the given backend request and checks what was recorded. */
static void fit_with(lumen_ctx *ctx, const char *backend, int force_cpu, const char *want_selected) {
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.backend = backend;
  o.force_cpu = force_cpu;
  lumen_fit_plan *plan = plan_for(ctx, &o);
  double t[N], cp[N], y[N], p[2] = {0.2, 0.3};
  make_grid(t, cp);
  make_curve(LUMEN_MODEL_TOFTS, t, cp, p, y);
  float yf[N];
  for (int i = 0; i < N; ++i) yf[i] = (float)y[i];
  double out[2];
  int32_t state;
  lumen_fit_results r = {.params = out, .state = &state};
  assert_int_equal(lumen_fit_execute(ctx, plan, 1, yf, NULL, &r), LUMEN_OK);
  assert_string_equal(r.backend_selected, want_selected);
  assert_string_equal(r.backend_used, want_selected);
  assert_string_equal(lumen_fit_plan_backend_selected(plan), want_selected);
  assert_int_equal(state, LUMEN_FIT_CONVERGED);
  lumen_test_assert_close(out[0], 0.2, 0, 1e-3, "Ktrans");
  lumen_test_assert_close(out[1], 0.3, 0, 1e-3, "ve");
  /* the reason names every tier that was skipped, cuda first under auto */
  if (strcmp(backend, "auto") == 0 && !force_cpu) assert_non_null(strstr(r.reason, "cuda: "));
  lumen_fit_plan_destroy(plan);
}

static void test_backend_selection(void **s) {
  lumen_ctx *ctx = *s;
  const char *cpu = LUMEN_HAVE_OPENMP ? "cpu" : "cpu_single";
  fit_with(ctx, "auto", 0, cpu);
  fit_with(ctx, "accelerated", 0, cpu);
  fit_with(ctx, "gpufit", 0, cpu);
  fit_with(ctx, "cuda", 0, cpu); /* the CUDA fit kernels come later: falls through */
  fit_with(ctx, "gpufit_cuda", 0, cpu);
  fit_with(ctx, "cpu", 0, cpu);
  fit_with(ctx, "cpufit_cpu", 0, cpu);
  fit_with(ctx, "cpu_single", 0, "cpu_single");
#if LUMEN_HAVE_GSL
  fit_with(ctx, "standard", 0, "standard");
  fit_with(ctx, "pure_cpu", 0, "standard");
  fit_with(ctx, "rocketship:cpu", 0, "standard");
  fit_with(ctx, "auto", 1, "standard");
#endif
  /* the reason for cuda names what is missing */
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.backend = "cuda";
  lumen_fit_plan *plan = plan_for(ctx, &o);
  const char *why = lumen_fit_plan_backend_reason(plan);
  assert_true(strstr(why, "cuda: not built") || strstr(why, "cuda: no device") ||
              strstr(why, "CUDA fitting kernels not built"));
  assert_string_equal(lumen_fit_plan_backend_requested(plan), "cuda");
  lumen_fit_plan_destroy(plan);
}

/* Finite data beyond float range cannot be fitted in float32: the curve falls through to
   the standard tier (float64) and the result records it. */
static void test_fallthrough(void **s) {
  lumen_ctx *ctx = *s;
  if (!LUMEN_HAVE_GSL) skip();
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.backend = "cpu";
  lumen_fit_plan *plan = plan_for(ctx, &o);
  double t[N], cp[N], y[2 * N], p[2] = {0.1, 0.2};
  make_grid(t, cp);
  make_curve(LUMEN_MODEL_TOFTS, t, cp, p, y);
  for (int i = 0; i < N; ++i) y[N + i] = y[i] * 1e40;
  double out[4];
  int32_t state[2];
  lumen_fit_results r = {.params = out, .state = state};
  assert_int_equal(lumen_fit_execute_f64(ctx, plan, 2, y, NULL, &r), LUMEN_OK);
  assert_int_equal(state[0], LUMEN_FIT_CONVERGED);
  if (r.curves_per_tier[LUMEN_FIT_TIER_STANDARD] != 1)
    print_error("used %s, reason %s, states %d %d\n", r.backend_used, r.reason, (int)state[0], (int)state[1]);
  assert_int_equal(r.curves_per_tier[LUMEN_FIT_TIER_STANDARD], 1);
  const char *cpu = LUMEN_HAVE_OPENMP ? "cpu+standard" : "cpu_single+standard";
  assert_string_equal(r.backend_used, cpu);
  assert_non_null(strstr(r.reason, "fell through"));
  assert_true(state[1] != LUMEN_FIT_NOT_FINITE); /* the standard tier gave it a real state */
  lumen_fit_plan_destroy(plan);
}

static void test_bad_curves(void **s) {
  lumen_ctx *ctx = *s;
  const char *tiers[] = {"cpu", "cpu_single", "standard"};
  for (int ti = 0; ti < 3; ++ti) {
#if !LUMEN_HAVE_GSL
    if (ti == 2) break;
#endif
    for (int prec = 0; prec < 2; ++prec) {
      lumen_fit_options o;
      lumen_fit_options_init(&o);
      o.backend = tiers[ti];
      o.precision = prec ? LUMEN_FIT_FLOAT64 : LUMEN_FIT_FLOAT32;
      lumen_fit_plan *plan = plan_for(ctx, &o);
      double t[N], cp[N], p[2] = {0.1, 0.2};
      make_grid(t, cp);
      double good[N];
      make_curve(LUMEN_MODEL_TOFTS, t, cp, p, good);
      enum { NC = 5 };
      float y[NC * N];
      for (int c = 0; c < NC; ++c)
        for (int i = 0; i < N; ++i) y[c * N + i] = (float)good[i];
      y[1 * N + 40] = NAN;
      y[2 * N + 3] = INFINITY;
      for (int i = 0; i < N; ++i) y[3 * N + i] = 0.0f;
      double out[NC * 2], chi2[NC], ci_lo[NC * 2], ci_hi[NC * 2], r2[NC], der[NC];
      int32_t state[NC], iters[NC];
      lumen_fit_results r = {
          .params = out, .state = state, .chi2 = chi2, .ci_lo = ci_lo, .ci_hi = ci_hi, .r2 = r2, .derived = der,
          .iterations = iters};
      assert_int_equal(lumen_fit_execute(ctx, plan, NC, y, NULL, &r), LUMEN_OK);
      for (int c = 0; c < NC; ++c) {
        int bad = c >= 1 && c <= 3;
        if (bad) {
          assert_int_equal(state[c], LUMEN_FIT_INVALID_INPUT);
          assert_true(isnan(out[2 * c]) && isnan(out[2 * c + 1]) && isnan(chi2[c]) && isnan(der[c]));
          assert_true(isnan(ci_lo[2 * c]) && isnan(r2[c]));
        } else {
          assert_int_equal(state[c], LUMEN_FIT_CONVERGED);
          lumen_test_assert_close(out[2 * c], 0.1, 0, 1e-3, "Ktrans");
          lumen_test_assert_close(der[c], 0.5, 0, 2e-3, "kep");
          assert_true(r2[c] > 0.999);
          assert_true(ci_lo[2 * c] <= out[2 * c] && out[2 * c] <= ci_hi[2 * c]);
        }
      }
      assert_int_equal(r.state_counts[LUMEN_FIT_INVALID_INPUT], 3);
      assert_int_equal(r.state_counts[LUMEN_FIT_CONVERGED], 2);
      lumen_fit_plan_destroy(plan);
    }
  }
}

static void expect_plan_error(lumen_ctx *ctx, lumen_fit_options *o, const double *t, const double *cp, int n,
                              const char *needle) {
  lumen_fit_plan *plan = (lumen_fit_plan *)0x1;
  lumen_status st = lumen_fit_plan_create(ctx, o, n, t, cp, &plan);
  assert_int_equal(st, LUMEN_ERR_INVALID_ARGUMENT);
  assert_null(plan);
  if (!strstr(lumen_ctx_last_error(ctx), needle)) {
    print_error("message '%s' lacks '%s'\n", lumen_ctx_last_error(ctx), needle);
    fail();
  }
}

static void test_bad_plans(void **s) {
  lumen_ctx *ctx = *s;
  double t[N], cp[N];
  make_grid(t, cp);
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  /* non-increasing times */
  double tb[N];
  memcpy(tb, t, sizeof t);
  tb[10] = tb[9];
  expect_plan_error(ctx, &o, tb, cp, N, "increase");
  /* NaN in the AIF */
  double cpb[N];
  memcpy(cpb, cp, sizeof cp);
  cpb[5] = NAN;
  expect_plan_error(ctx, &o, t, cpb, N, "cp[5]");
  /* no AIF for a DCE model */
  expect_plan_error(ctx, &o, t, NULL, N, "AIF");
  /* too few samples */
  expect_plan_error(ctx, &o, t, cp, 2, "samples");
  /* lo > hi */
  lumen_fit_options_init(&o);
  o.lo[1] = 0.5;
  o.hi[1] = 0.4;
  expect_plan_error(ctx, &o, t, cp, N, "bounds of ve");
  /* start outside the bounds (the physical default Ktrans <= 5 /min) */
  lumen_fit_options_init(&o);
  o.start[0] = 6.0;
  expect_plan_error(ctx, &o, t, cp, N, "start of Ktrans");
  /* tolerance, iterations, backend */
  lumen_fit_options_init(&o);
  o.tolerance = -1;
  expect_plan_error(ctx, &o, t, cp, N, "tolerance");
  lumen_fit_options_init(&o);
  o.max_iterations = 0;
  expect_plan_error(ctx, &o, t, cp, N, "max_iterations");
  lumen_fit_options_init(&o);
  o.backend = "quantum";
  expect_plan_error(ctx, &o, t, cp, N, "quantum");
  /* VFA needs TR */
  lumen_fit_options_init(&o);
  o.model = LUMEN_MODEL_VFA;
  double fa[3] = {0.05, 0.1, 0.2};
  expect_plan_error(ctx, &o, fa, NULL, 3, "TR");
  /* delay fitting of a T1 model */
  o.tr = 0.005;
  o.fit_delay = 1;
  expect_plan_error(ctx, &o, fa, NULL, 3, "delay");
  /* NULL arguments to execute */
  lumen_fit_options_init(&o);
  lumen_fit_plan *plan = plan_for(ctx, &o);
  lumen_fit_results r;
  memset(&r, 0, sizeof r);
  float y[N] = {0};
  assert_int_equal(lumen_fit_execute(ctx, plan, 1, y, NULL, &r), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_fit_execute(ctx, plan, 1, NULL, NULL, &r), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_fit_execute(ctx, NULL, 1, y, NULL, &r), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_fit_execute(ctx, plan, 0, NULL, NULL, &r), LUMEN_OK);
  lumen_fit_plan_destroy(plan);
  lumen_fit_plan_destroy(NULL);
}

/* Fixed parameters stay at their start; user bounds hold; user starts are used. */
static void test_fixed_and_bounds(void **s) {
  lumen_ctx *ctx = *s;
  double t[N], cp[N], y[N], p[2] = {0.3, 0.4};
  make_grid(t, cp);
  make_curve(LUMEN_MODEL_TOFTS, t, cp, p, y);
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.precision = LUMEN_FIT_FLOAT64;
  o.start[1] = 0.25;
  o.fixed[1] = 1;
  lumen_fit_plan *plan = plan_for(ctx, &o);
  double out[2], lo[2], hi[2];
  int32_t state;
  lumen_fit_results r = {.params = out, .state = &state, .ci_lo = lo, .ci_hi = hi};
  assert_int_equal(lumen_fit_execute_f64(ctx, plan, 1, y, NULL, &r), LUMEN_OK);
  assert_true(out[1] == 0.25);
  assert_true(isnan(lo[1]) && isnan(hi[1]));
  assert_true(isfinite(lo[0]) && lo[0] < out[0] && out[0] < hi[0]);
  lumen_fit_plan_destroy(plan);
  /* an upper bound below the truth: the fit ends on the bound (state at_bound, values kept) */
  lumen_fit_options_init(&o);
  o.precision = LUMEN_FIT_FLOAT64;
  o.hi[0] = 0.2;
  plan = plan_for(ctx, &o);
  int32_t mask = -1;
  r.bound_mask = &mask;
  assert_int_equal(lumen_fit_execute_f64(ctx, plan, 1, y, NULL, &r), LUMEN_OK);
  assert_int_equal(state, LUMEN_FIT_AT_BOUND);
  assert_int_equal(mask, 1 << 1);
  assert_true(r.at_upper[0] == 1 && r.at_lower[0] == 0 && r.at_lower[1] == 0 && r.at_upper[1] == 0);
  assert_true(out[0] <= 0.2 && out[0] > 0.199);
  assert_true(isfinite(lo[0]) && isfinite(hi[0]));
  lumen_fit_plan_destroy(plan);
}

static int cancel_cb(void *user, double fraction, const char *stage) {
  (void)fraction;
  (void)stage;
  int *calls = user;
  return ++*calls >= 1;
}

static void test_cancel(void **s) {
  lumen_ctx *ctx = *s;
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.backend = "cpu_single";
  lumen_fit_plan *plan = plan_for(ctx, &o);
  enum { NC = 20000 };
  float *y = calloc((size_t)NC * N, sizeof(float));
  double *out = malloc(sizeof(double) * NC * 2);
  int32_t *state = malloc(sizeof(int32_t) * NC);
  double t[N], cp[N], yy[N], p[2] = {0.1, 0.2};
  make_grid(t, cp);
  make_curve(LUMEN_MODEL_TOFTS, t, cp, p, yy);
  for (int c = 0; c < NC; ++c)
    for (int i = 0; i < N; ++i) y[(size_t)c * N + i] = (float)yy[i];
  int calls = 0;
  lumen_ctx_set_progress(ctx, cancel_cb, &calls);
  lumen_fit_results r = {.params = out, .state = state};
  assert_int_equal(lumen_fit_execute(ctx, plan, NC, y, NULL, &r), LUMEN_ERR_CANCELLED);
  assert_int_equal(state[0], LUMEN_FIT_CONVERGED);
  assert_int_equal(state[NC - 1], LUMEN_FIT_NOT_FITTED);
  assert_true(isnan(out[2 * (NC - 1)]));
  free(y);
  free(out);
  free(state);
  lumen_fit_plan_destroy(plan);
}

/* One plan, executed from two threads at once (and with OpenMP inside each): same results as
   a serial run. */
typedef struct {
  lumen_ctx *ctx;
  const lumen_fit_plan *plan;
  const float *y;
  int nc;
  double *out;
  int32_t *state;
  lumen_status st;
} thread_job;

static void *run_job(void *arg) {
  thread_job *j = arg;
  lumen_fit_results r = {.params = j->out, .state = j->state};
  j->st = lumen_fit_execute(j->ctx, j->plan, j->nc, j->y, NULL, &r);
  return NULL;
}

static void test_threads(void **s) {
  lumen_ctx *ctx = *s;
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  lumen_fit_plan *plan = plan_for(ctx, &o);
  enum { NC = 600 };
  double t[N], cp[N], yy[N];
  make_grid(t, cp);
  float *y = malloc(sizeof(float) * NC * N);
  for (int c = 0; c < NC; ++c) {
    double p[2] = {0.02 + 0.4 * c / NC, 0.1 + 0.4 * ((c * 7) % NC) / NC};
    make_curve(LUMEN_MODEL_TOFTS, t, cp, p, yy);
    for (int i = 0; i < N; ++i) y[c * N + i] = (float)(yy[i] + 0.003 * sin(1.7 * i + c));
  }
  double *ref = malloc(sizeof(double) * NC * 2), *o1 = malloc(sizeof(double) * NC * 2),
         *o2 = malloc(sizeof(double) * NC * 2);
  int32_t *s0 = malloc(sizeof(int32_t) * NC), *s1 = malloc(sizeof(int32_t) * NC), *s2 = malloc(sizeof(int32_t) * NC);
  thread_job j0 = {ctx, plan, y, NC, ref, s0, LUMEN_OK};
  run_job(&j0);
  assert_int_equal(j0.st, LUMEN_OK);
  thread_job j1 = {ctx, plan, y, NC, o1, s1, LUMEN_OK}, j2 = {ctx, plan, y, NC, o2, s2, LUMEN_OK};
  pthread_t a, b;
  assert_int_equal(pthread_create(&a, NULL, run_job, &j1), 0);
  assert_int_equal(pthread_create(&b, NULL, run_job, &j2), 0);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  assert_int_equal(j1.st, LUMEN_OK);
  assert_int_equal(j2.st, LUMEN_OK);
  assert_memory_equal(ref, o1, sizeof(double) * NC * 2);
  assert_memory_equal(ref, o2, sizeof(double) * NC * 2);
  assert_memory_equal(s0, s1, sizeof(int32_t) * NC);
  free(y);
  free(ref);
  free(o1);
  free(o2);
  free(s0);
  free(s1);
  free(s2);
  lumen_fit_plan_destroy(plan);
}

LUMEN_TEST_MAIN(cmocka_unit_test(test_defaults_and_names), LUMEN_TEST_WITH_CTX(test_backend_parse),
                LUMEN_TEST_WITH_CTX(test_backend_selection),  LUMEN_TEST_WITH_CTX(test_fallthrough),
                LUMEN_TEST_WITH_CTX(test_bad_curves),         LUMEN_TEST_WITH_CTX(test_bad_plans),
                LUMEN_TEST_WITH_CTX(test_fixed_and_bounds),   LUMEN_TEST_WITH_CTX(test_cancel),
                LUMEN_TEST_WITH_CTX(test_threads))
