/* The context's tuning switches (issue 16: tuning is a context option, not an environment variable
   the library reads): the CPU vector limit (lumen_ctx_set_cpu_simd) and the fused 3-D CUDA
   Gaussian (lumen_ctx_set_cuda_fused_gaussian_3d). Checks the setters' validation, that the limit
   reaches the fit's lane width, and that a fit gives the same states and parameters (to float
   rounding) under every limit. The filters' generic-versus-vector equality under the limit is in
   test_filter_api.c and test_filter_gaussian_speedpath.c. */
#include "test_support.h"
#include <math.h>
#include <string.h>
#include "cpu/lm_simd.h"
#include "lumen/fit.h"

static void test_setters(void **state) {
  lumen_ctx *ctx = *state;
  assert_int_equal(lumen_ctx_cpu_simd(ctx), LUMEN_CPU_SIMD_AUTO);
  assert_int_equal(lumen_ctx_cuda_fused_gaussian_3d(ctx), 1);
  assert_int_equal(lumen_ctx_set_cpu_simd(ctx, LUMEN_CPU_SIMD_OFF), LUMEN_OK);
  assert_int_equal(lumen_ctx_cpu_simd(ctx), LUMEN_CPU_SIMD_OFF);
  assert_int_equal(lumen_ctx_set_cpu_simd(ctx, (lumen_cpu_simd)LUMEN_CPU_SIMD_COUNT), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "lumen_ctx_set_cpu_simd"));
  assert_int_equal(lumen_ctx_cpu_simd(ctx), LUMEN_CPU_SIMD_OFF); /* a refused value changes nothing */
  assert_int_equal(lumen_ctx_set_cpu_simd(ctx, (lumen_cpu_simd)-1), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_ctx_set_cpu_simd(NULL, LUMEN_CPU_SIMD_OFF), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_ctx_set_cuda_fused_gaussian_3d(ctx, 0), LUMEN_OK);
  assert_int_equal(lumen_ctx_cuda_fused_gaussian_3d(ctx), 0);
  assert_int_equal(lumen_ctx_set_cuda_fused_gaussian_3d(ctx, 1), LUMEN_OK);
  assert_int_equal(lumen_ctx_cuda_fused_gaussian_3d(ctx), 1);
  assert_int_equal(lumen_ctx_set_cuda_fused_gaussian_3d(NULL, 1), LUMEN_ERR_INVALID_ARGUMENT);
}

/* The limit caps the lane width the fit executor asks for; OFF means the scalar solver. */
static void test_limit_reaches_lane_width(void **state) {
  (void)state;
  const int widest = lumen_lmv_width(LUMEN_CPU_SIMD_AUTO);
  assert_true(widest == 0 || widest == 8 || widest == 16);
  assert_int_equal(lumen_lmv_width(LUMEN_CPU_SIMD_OFF), 0);
  assert_int_equal(lumen_lmvd_width(LUMEN_CPU_SIMD_OFF), 0);
  assert_int_equal(lumen_lmv_width(LUMEN_CPU_SIMD_AVX2), widest > 8 ? 8 : widest);
  assert_int_equal(lumen_lmv_width(LUMEN_CPU_SIMD_AVX512), widest);
  assert_int_equal(lumen_lmvd_width(LUMEN_CPU_SIMD_AUTO), widest / 2);
}

#define N 60
#define CURVES 257 /* not a multiple of any lane width */

/* Progress seen by a fit: calls, cancel at call cancel_at (0: never), whether a fraction decreased. */
typedef struct progress_log {
  int calls, cancel_at;
  double last;
  int decreasing;
} progress_log;

static int log_progress(void *user, double fraction, const char *stage) {
  (void)stage;
  progress_log *l = user;
  if (fraction < l->last) l->decreasing = 1;
  l->last = fraction;
  return ++l->calls == l->cancel_at;
}

/* One Tofts fit of curves on backend (its used name must be that) with the given CPU vector limit
   and threads; log (may be NULL) records the progress. */
static lumen_status run_fit(lumen_cpu_simd simd, const char *backend, int threads, progress_log *log, const double *t,
                            const double *cp, const float *y, int curves, double *params, int32_t *states) {
  lumen_ctx *ctx = lumen_test_ctx();
  assert_int_equal(lumen_ctx_set_cpu_simd(ctx, simd), LUMEN_OK);
  assert_int_equal(lumen_ctx_set_threads(ctx, threads), LUMEN_OK);
  if (log) lumen_ctx_set_progress(ctx, log_progress, log);
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.backend = backend;
  lumen_fit_plan *plan = NULL;
  assert_int_equal(lumen_fit_plan_create(ctx, &o, N, t, cp, &plan), LUMEN_OK);
  lumen_fit_results r;
  memset(&r, 0, sizeof r);
  r.params = params;
  r.state = states;
  lumen_status st = lumen_fit_execute(ctx, plan, curves, y, NULL, &r);
  if (st == LUMEN_OK) assert_string_equal(r.backend_used, backend);
  lumen_fit_plan_destroy(plan);
  lumen_ctx_destroy(ctx);
  return st;
}

static void test_fit_same_under_every_limit(void **state) {
  (void)state;
  static double t[N], cp[N];
  static float y[CURVES * N];
  lumen_test_parker_grid(N, 0.0, 1, t, cp);
  unsigned s = 12345u;
  for (int c = 0; c < CURVES; c++) {
    const double kt = 0.02 + 0.4 * c / CURVES, ve = 0.1 + 0.5 * (c % 17) / 17.0, kep = kt / ve;
    for (int i = 0; i < N; i++) { /* Tofts by trapezoidal convolution, plus uniform noise */
      double acc = 0;
      for (int j = 1; j <= i; j++)
        acc += 0.5 * (t[j] - t[j - 1]) *
               (cp[j] * exp(-kep * (t[i] - t[j])) + cp[j - 1] * exp(-kep * (t[i] - t[j - 1])));
      s = s * 1664525u + 1013904223u;
      y[c * N + i] = (float)(kt * acc + 0.004 * ((double)(s >> 8) / 16777216.0 - 0.5));
    }
  }
  static double p_auto[CURVES * 2], p_avx2[CURVES * 2], p_off[CURVES * 2];
  static int32_t s_auto[CURVES], s_avx2[CURVES], s_off[CURVES];
  assert_int_equal(run_fit(LUMEN_CPU_SIMD_AUTO, "cpu_single", 1, NULL, t, cp, y, CURVES, p_auto, s_auto), LUMEN_OK);
  assert_int_equal(run_fit(LUMEN_CPU_SIMD_AVX2, "cpu_single", 1, NULL, t, cp, y, CURVES, p_avx2, s_avx2), LUMEN_OK);
  assert_int_equal(run_fit(LUMEN_CPU_SIMD_OFF, "cpu_single", 1, NULL, t, cp, y, CURVES, p_off, s_off), LUMEN_OK);
  int converged = 0;
  for (int c = 0; c < CURVES; c++) {
    assert_int_equal(s_auto[c], s_off[c]);
    assert_int_equal(s_avx2[c], s_off[c]);
    converged += s_off[c] == LUMEN_FIT_CONVERGED;
    for (int k = 0; k < 2; k++) {
      lumen_test_assert_close(p_auto[c * 2 + k], p_off[c * 2 + k], 1e-6, 1e-4, "auto vs scalar");
      lumen_test_assert_close(p_avx2[c * 2 + k], p_off[c * 2 + k], 1e-6, 1e-4, "avx2 vs scalar");
    }
  }
  assert_true(converged > CURVES * 9 / 10); /* the comparison is about real fits, not failures */
}

/* The scalar path (vector lanes off) takes blocks of curves from a shared counter on every thread:
   its progress only increases, a cancelling callback leaves a fitted prefix and the rest
   NOT_FITTED, and two threads give one thread's results bit for bit (standard tier too). */
static void test_scalar_path_blocks(void **state) {
  (void)state;
  enum { NC = 20000, NS = 600 };
  static double t[N], cp[N], p1[NC * 2], p2[NC * 2];
  static float y[NC * N];
  static int32_t s1[NC], s2[NC];
  lumen_test_parker_grid(N, 0.0, 1, t, cp);
  for (int c = 0; c < NC; c++)
    for (int i = 0; i < N; i++) y[c * N + i] = (float)(0.05 * (1 + c % 7) * (1 - exp(-0.1 * t[i] * (1 + c % 5))));
  progress_log log;
  /* cancelled at the second report (8192-curve chunks): a prefix is fitted, the rest is not */
  log = (progress_log){.cancel_at = 2};
  assert_int_equal(run_fit(LUMEN_CPU_SIMD_OFF, "cpu", 2, &log, t, cp, y, NC, p1, s1), LUMEN_ERR_CANCELLED);
  assert_int_equal(log.calls, 2);
  assert_false(log.decreasing);
  int k = 0;
  while (k < NC && s1[k] != LUMEN_FIT_NOT_FITTED) k++;
  assert_true(k >= 2 * 8192 && k < NC);
  for (int c = k; c < NC; c++) {
    assert_int_equal(s1[c], LUMEN_FIT_NOT_FITTED);
    assert_true(isnan(p1[2 * c]));
  }
  /* not cancelled: increasing progress, two threads equal one thread bit for bit */
  log = (progress_log){.cancel_at = 0};
  assert_int_equal(run_fit(LUMEN_CPU_SIMD_OFF, "cpu", 2, &log, t, cp, y, NC, p1, s1), LUMEN_OK);
  assert_false(log.decreasing);
  assert_true(log.calls >= 2);
  log = (progress_log){.cancel_at = 0};
  assert_int_equal(run_fit(LUMEN_CPU_SIMD_OFF, "cpu_single", 1, &log, t, cp, y, NC, p2, s2), LUMEN_OK);
  assert_memory_equal(s1, s2, sizeof s1);
  assert_memory_equal(p1, p2, sizeof p1);
  /* the standard tier: progress every 256 curves, increasing; 2 threads = 1 thread */
  log = (progress_log){.cancel_at = 0};
  assert_int_equal(run_fit(LUMEN_CPU_SIMD_OFF, "standard", 2, &log, t, cp, y, NS, p1, s1), LUMEN_OK);
  assert_false(log.decreasing);
  assert_true(log.calls >= NS / 256);
  log = (progress_log){.cancel_at = 0};
  assert_int_equal(run_fit(LUMEN_CPU_SIMD_OFF, "standard", 1, &log, t, cp, y, NS, p2, s2), LUMEN_OK);
  assert_memory_equal(s1, s2, sizeof(int32_t) * NS);
  assert_memory_equal(p1, p2, sizeof(double) * 2 * NS);
}

LUMEN_TEST_MAIN(LUMEN_TEST_WITH_CTX(test_setters), cmocka_unit_test(test_limit_reaches_lane_width),
                cmocka_unit_test(test_fit_same_under_every_limit), cmocka_unit_test(test_scalar_path_blocks))
