/* lumen_fit_execute_series (src/fit/fit_series.h): curves read where they lie, frame-major in a
   series (curve c's sample i at series[index[c] + i * stride]), give the results of
   lumen_fit_execute on the same curves stored curve-major, bit for bit: on the lane path (float
   and double solvers, 2CXM's batched further starts), the scalar path (one lane, cpu_single, the
   standard tier, delay fitting), Patlak in closed form and the cuda tier's host logic (the fake
   device); with runs of consecutive voxels and gaps, invalid curves that fall through, 1 and 2
   threads. */
#include "test_support.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fit/fit_cuda.h"
#include "fit/fit_series.h"

#define N 60
#define NC 1500

typedef struct out {
  double params[NC * LUMEN_FIT_MAX_PARAMS], ci_lo[NC * LUMEN_FIT_MAX_PARAMS], ci_hi[NC * LUMEN_FIT_MAX_PARAMS];
  double derived[NC * LUMEN_FIT_MAX_DERIVED], chi2[NC], r2[NC], delay[NC];
  int32_t state[NC];
  lumen_fit_results r;
} out;

static void out_init(out *o) {
  memset(o, 0, sizeof *o);
  o->r = (lumen_fit_results){.params = o->params, .derived = o->derived, .state = o->state, .chi2 = o->chi2,
                             .r2 = o->r2, .ci_lo = o->ci_lo, .ci_hi = o->ci_hi, .delay = o->delay};
}

/* noisy Tofts curves (deterministic noise), curve-major; a zero curve, a NaN sample, an infinite
   one (invalid inputs, falling through the tiers) */
static void make_curves(const double *t, const double *cp, float *y) {
  const double lo[2] = {0.02, 0.05}, span[2] = {0.4, 0.6};
  const int mod[2] = {19, 23};
  lumen_test_noisy_curves(LUMEN_MODEL_TOFTS, N, NC, t, cp, lo, span, mod, 0.01, 777, y);
  for (int i = 0; i < N; ++i) y[7 * N + i] = 0.0f;
  y[301 * N + 3] = NAN;
  y[1299 * N + 40] = INFINITY;
}

/* runs of 300 consecutive voxels separated by gaps of 7 */
static int64_t voxel_of(int c) { return (int64_t)c + (int64_t)(c / 300) * 7; }

static void fit(const char *backend, lumen_model model, int f64, int delay, int threads, lumen_cpu_simd simd,
                const float *y, const float *series, const int64_t *index, int64_t stride, out *want, out *got) {
  lumen_ctx *ctx = lumen_test_ctx();
  assert_int_equal(lumen_ctx_set_threads(ctx, threads), LUMEN_OK);
  assert_int_equal(lumen_ctx_set_cpu_simd(ctx, simd), LUMEN_OK);
  double t[N], cp[N];
  lumen_test_parker_grid(N, 0.5, 0, t, cp);
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.model = model;
  o.backend = backend;
  o.precision = f64 ? LUMEN_FIT_FLOAT64 : LUMEN_FIT_FLOAT32;
  o.fit_delay = delay;
  lumen_fit_plan *plan = NULL;
  lumen_status st = lumen_fit_plan_create(ctx, &o, N, t, cp, &plan);
  if (st != LUMEN_OK) print_error("plan %s: %s\n", backend, lumen_ctx_last_error(ctx));
  assert_int_equal(st, LUMEN_OK);
  out_init(want);
  out_init(got);
  assert_int_equal(lumen_fit_execute(ctx, plan, NC, y, NULL, &want->r), LUMEN_OK);
  st = lumen_fit_execute_series(ctx, plan, NC, series, index, stride, NULL, &got->r);
  if (st != LUMEN_OK) print_error("series %s: %s\n", backend, lumen_ctx_last_error(ctx));
  assert_int_equal(st, LUMEN_OK);
  lumen_fit_plan_destroy(plan);
  lumen_ctx_destroy(ctx);
}

static void assert_same(const out *a, const out *b, const char *what) {
  int bad = memcmp(a->state, b->state, sizeof a->state) || memcmp(a->params, b->params, sizeof a->params) ||
            memcmp(a->ci_lo, b->ci_lo, sizeof a->ci_lo) || memcmp(a->ci_hi, b->ci_hi, sizeof a->ci_hi) ||
            memcmp(a->derived, b->derived, sizeof a->derived) || memcmp(a->chi2, b->chi2, sizeof a->chi2) ||
            memcmp(a->r2, b->r2, sizeof a->r2) || memcmp(a->delay, b->delay, sizeof a->delay) ||
            memcmp(a->r.curves_per_tier, b->r.curves_per_tier, sizeof a->r.curves_per_tier) ||
            strcmp(a->r.backend_used, b->r.backend_used);
  if (bad) print_error("%s: the series' results differ from the curve-major ones\n", what);
  assert_false(bad);
  int64_t failed = 0, fitted = 0;
  for (int c = 0; c < NC; ++c) {
    failed += a->state[c] == LUMEN_FIT_INVALID_INPUT;
    fitted += a->state[c] == LUMEN_FIT_CONVERGED || a->state[c] == LUMEN_FIT_AT_BOUND;
  }
  assert_true(failed >= 3 && fitted > NC / 2); /* the invalid curves were seen, the others fitted */
}

static void same_as_curve_major(void **state) {
  (void)state;
  double t[N], cp[N];
  lumen_test_parker_grid(N, 0.5, 0, t, cp);
  float *y = malloc(sizeof(float) * N * NC);
  const int64_t nv = voxel_of(NC - 1) + 5;
  float *series = malloc(sizeof(float) * N * (size_t)nv);
  int64_t *index = malloc(sizeof(int64_t) * NC);
  out *want = malloc(sizeof *want), *got = malloc(sizeof *got);
  assert_true(y && series && index && want && got);
  make_curves(t, cp, y);
  for (int64_t k = 0; k < N * nv; ++k) series[k] = -1e30f; /* voxels between the runs: never read */
  for (int c = 0; c < NC; ++c) {
    index[c] = voxel_of(c);
    for (int i = 0; i < N; ++i) series[(int64_t)i * nv + index[c]] = y[(size_t)c * N + i];
  }
  static const struct {
    const char *backend;
    lumen_model model;
    int f64, delay;
    lumen_cpu_simd simd;
  } cases[] = {
      {"cpu", LUMEN_MODEL_TOFTS, 0, 0, LUMEN_CPU_SIMD_AUTO},   /* lanes, float */
      {"cpu", LUMEN_MODEL_TOFTS, 1, 0, LUMEN_CPU_SIMD_AUTO},   /* lanes, double */
      {"cpu", LUMEN_MODEL_TOFTS, 0, 0, LUMEN_CPU_SIMD_AVX2},   /* 8 lanes */
      {"cpu", LUMEN_MODEL_TOFTS, 0, 0, LUMEN_CPU_SIMD_OFF},    /* scalar path */
      {"cpu", LUMEN_MODEL_2CXM, 0, 0, LUMEN_CPU_SIMD_AUTO},    /* further starts batched */
      {"cpu", LUMEN_MODEL_PATLAK, 0, 0, LUMEN_CPU_SIMD_AUTO},  /* closed form */
      {"cpu", LUMEN_MODEL_TOFTS, 0, 1, LUMEN_CPU_SIMD_AUTO},   /* delay fitting: scalar path */
      {"cpu_single", LUMEN_MODEL_ETOFTS, 0, 0, LUMEN_CPU_SIMD_AUTO},
      {"standard", LUMEN_MODEL_TOFTS, 1, 0, LUMEN_CPU_SIMD_AUTO},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k)
    for (int threads = 1; threads <= 2; ++threads) {
      char what[128];
      snprintf(what, sizeof what, "%s %s f64=%d delay=%d simd=%d threads=%d", cases[k].backend,
               lumen_model_name(cases[k].model), cases[k].f64, cases[k].delay, (int)cases[k].simd, threads);
      fit(cases[k].backend, cases[k].model, cases[k].f64, cases[k].delay, threads, cases[k].simd, y, series, index, nv,
          want, got);
      assert_same(want, got, what);
    }
  /* the cuda tier (a fake device computing with the CPU solver): the curves gathered for it */
  lumen_fitcu_fake f = {.devices = 1, .max_chunk = 256};
  lumen_fitcu_test_set_fake(&f);
  fit("cuda", LUMEN_MODEL_TOFTS, 0, 0, 2, LUMEN_CPU_SIMD_AUTO, y, series, index, nv, want, got);
  lumen_fitcu_test_set_fake(NULL);
  assert_true(want->r.curves_per_tier[LUMEN_FIT_TIER_CUDA] > 0);
  assert_same(want, got, "cuda (fake device)");
  free(y); free(series); free(index); free(want); free(got);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(same_as_curve_major)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
