/* The cuda tier's host logic without a GPU: a fake device (src/fit/fit_cuda.c, computing with the
   CPU solver) and injected faults prove the chunk halving on allocation failures, the rerun on tier
   cpu at the smallest chunk and after a kernel error, the shared queue over several devices, the
   device lists of the backend request and the selection rules; results must equal tier cpu and
   every fallback must be recorded with its reason. */
#include "test_support.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fit/fit_cuda.h"

#define N 60
#define NC 1000

/* One run's results: arrays for NC curves in one allocation (block), and the results naming them. */
typedef struct out_arrays {
  double params[2 * NC], ci_lo[2 * NC], ci_hi[2 * NC], chi2[NC], r2[NC];
  int32_t state[NC];
} out_arrays;
typedef struct out {
  out_arrays *block;
  lumen_fit_results r;
} out;

static void make_grid(double *t, double *cp) { lumen_test_parker_grid(N, 0.5, 0, t, cp); }

/* noisy Tofts curves (deterministic noise), a few invalid ones */
static float *make_data(const double *t, const double *cp) {
  float *y = malloc(sizeof(float) * N * NC);
  assert_non_null(y);
  const double lo[2] = {0.05, 0.1}, span[2] = {0.3, 0.5};
  const int mod[2] = {17, 13};
  lumen_test_noisy_curves(LUMEN_MODEL_TOFTS, N, NC, t, cp, lo, span, mod, 0.004, 12345, y);
  for (int i = 0; i < N; ++i) y[7 * N + i] = 0.0f; /* all zero: invalid input */
  y[11 * N + 3] = NAN;
  return y;
}

static void out_init(out *o) {
  memset(o, 0, sizeof *o);
  out_arrays *b = o->block = calloc(1, sizeof *o->block);
  assert_non_null(b);
  o->r = (lumen_fit_results){
      .params = b->params, .state = b->state, .chi2 = b->chi2, .r2 = b->r2, .ci_lo = b->ci_lo, .ci_hi = b->ci_hi};
}

static void out_free(out *o) { free(o->block); }

static void run(const char *backend, int f64, out *o) {
  lumen_ctx *ctx = lumen_test_ctx();
  double t[N], cp[N];
  make_grid(t, cp);
  float *y = make_data(t, cp);
  lumen_fit_options opts;
  lumen_fit_options_init(&opts);
  opts.model = LUMEN_MODEL_TOFTS;
  opts.backend = backend;
  opts.precision = f64 ? LUMEN_FIT_FLOAT64 : LUMEN_FIT_FLOAT32;
  lumen_fit_plan *plan = NULL;
  lumen_status st = lumen_fit_plan_create(ctx, &opts, N, t, cp, &plan);
  if (st != LUMEN_OK) print_error("plan %s: %s\n", backend, lumen_ctx_last_error(ctx));
  assert_int_equal(st, LUMEN_OK);
  out_init(o);
  st = lumen_fit_execute(ctx, plan, NC, y, NULL, &o->r);
  if (st != LUMEN_OK) print_error("execute %s: %s\n", backend, lumen_ctx_last_error(ctx));
  assert_int_equal(st, LUMEN_OK);
  lumen_fit_plan_destroy(plan);
  lumen_ctx_destroy(ctx);
  free(y);
}

static int same(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  return fabs(a - b) <= 1e-9 + 1e-5 * fabs(b);
}

static void assert_equal_results(const out *ra, const out *rb) {
  const out_arrays *a = ra->block, *b = rb->block;
  for (int c = 0; c < NC; ++c) {
    if (a->state[c] != b->state[c]) print_error("curve %d: state %d vs %d\n", c, a->state[c], b->state[c]);
    assert_int_equal(a->state[c], b->state[c]);
    for (int k = 0; k < 2; ++k) {
      if (!same(a->params[2 * c + k], b->params[2 * c + k]))
        print_error("curve %d p%d: %.9g vs %.9g\n", c, k, a->params[2 * c + k], b->params[2 * c + k]);
      assert_true(same(a->params[2 * c + k], b->params[2 * c + k]));
      assert_true(same(a->ci_lo[2 * c + k], b->ci_lo[2 * c + k]));
      assert_true(same(a->ci_hi[2 * c + k], b->ci_hi[2 * c + k]));
    }
    assert_true(same(a->chi2[c], b->chi2[c]));
    assert_true(same(a->r2[c], b->r2[c]));
  }
}

static void fake_on(int devices, int64_t max_chunk) {
  lumen_fitcu_fake f = {.devices = devices, .max_chunk = max_chunk};
  lumen_fitcu_test_set_fake(&f);
  lumen_fitcu_test_fail_allocs(0, 0);
  lumen_fitcu_test_fail_kernel(0);
  lumen_fitcu_test_max_chunk(0);
}

static int teardown(void **s) {
  (void)s;
  lumen_fitcu_test_set_fake(NULL);
  lumen_fitcu_test_fail_allocs(0, 0);
  lumen_fitcu_test_fail_kernel(0);
  lumen_fitcu_test_max_chunk(0);
  return 0;
}

static int64_t total(const lumen_fit_results *r) {
  int64_t s = 0;
  for (int t = 0; t < LUMEN_FIT_TIER_COUNT; ++t) s += r->curves_per_tier[t];
  return s;
}

/* allocation failures halve the chunk until it fits; everything then runs on the (fake) device */
static void test_halving(void **s) {
  (void)s;
  out ref, got;
  run("cpu", 0, &ref);
  fake_on(1, 256);
  lumen_fitcu_test_fail_allocs(2, 0);
  run("cuda", 0, &got);
  int fails = 0, chunks = 0;
  int64_t smallest = 0;
  lumen_fitcu_test_stats(&fails, &smallest, &chunks);
  assert_int_equal(fails, 2);
  assert_int_equal(smallest, 64);
  assert_true(chunks >= NC / 64);
  assert_int_equal(total(&got.r), NC);
  assert_true(got.r.curves_per_tier[LUMEN_FIT_TIER_CUDA] >= NC - 5);
  assert_non_null(strstr(got.r.reason, "2 allocation failure(s)"));
  assert_non_null(strstr(got.r.reason, "chunk halved from 256 to 64 curves"));
  assert_string_equal(got.r.backend_selected, "cuda");
  assert_equal_results(&got, &ref);
  /* kernel time: the fake device reports its solver's time; tier cpu has no kernels */
  assert_true(got.r.kernel_seconds > 0.0 && got.r.kernel_seconds <= got.r.seconds);
  assert_true(ref.r.kernel_seconds == 0.0);
  out_free(&ref);
  out_free(&got);
}

/* the host side of a chunk (shared by real and fake devices): gathering curves and constants at
   listed positions into contiguous staging rows, and delivering rows to their positions, on one
   and on several threads, for contiguous and scattered lists */
typedef struct deliver_log {
  int64_t *seen;    /* per position: how many times delivered */
  double *value;    /* per position: the row's chi2 */
} deliver_log;

static void log_deliver(void *user, int64_t pos, const lumen_fitcu_row *row) {
  deliver_log *d = user;
  d->seen[pos]++;
  d->value[pos] = row->chi2;
}

static void test_host_staging(void **s) {
  (void)s;
  enum { NCUR = 9000, NS = 7, COUNT = 6000 };
  float *data = malloc(sizeof(float) * NCUR * NS), *consts = malloc(sizeof(float) * NCUR * LUMEN_FIT_NCONSTS);
  float *dst = malloc(sizeof(float) * COUNT * NS), *cdst = malloc(sizeof(float) * COUNT * LUMEN_FIT_NCONSTS);
  int64_t *list = malloc(sizeof(int64_t) * (COUNT + 10));
  lumen_fitcu_row *rows = calloc(COUNT, sizeof *rows);
  deliver_log d = {calloc(COUNT + 10, sizeof(int64_t)), calloc(COUNT + 10, sizeof(double))};
  assert_true(data && consts && dst && cdst && list && rows && d.seen && d.value);
  for (int64_t i = 0; i < (int64_t)NCUR * NS; ++i) data[i] = (float)i;
  for (int64_t i = 0; i < (int64_t)NCUR * LUMEN_FIT_NCONSTS; ++i) consts[i] = (float)(-i);
  for (int scattered = 0; scattered < 2; ++scattered) {
    for (int i = 0; i < COUNT + 10; ++i) list[i] = scattered ? (int64_t)((i * 7919) % NCUR) : (int64_t)(i + 1000);
    for (int threads = 1; threads <= 3; threads += 2) {
      lumen_fitcu_input in = {
          .data = data, .consts = consts, .list = list, .count = COUNT + 10, .deliver = log_deliver, .user = &d,
          .threads = threads};
      memset(dst, 0xff, sizeof(float) * COUNT * NS);
      memset(cdst, 0xff, sizeof(float) * COUNT * LUMEN_FIT_NCONSTS);
      /* positions [10, 10 + COUNT) */
      lumen_fitcu_gather(&in, 10, COUNT, dst, NS * sizeof(float), cdst, LUMEN_FIT_NCONSTS * sizeof(float));
      for (int i = 0; i < COUNT; ++i) {
        int64_t c = list[10 + i];
        for (int k = 0; k < NS; ++k) assert_true(dst[(size_t)i * NS + k] == (float)(c * NS + k));
        for (int k = 0; k < LUMEN_FIT_NCONSTS; ++k)
          assert_true(cdst[(size_t)i * LUMEN_FIT_NCONSTS + k] == (float)(-(c * LUMEN_FIT_NCONSTS + k)));
      }
      memset(d.seen, 0, sizeof(int64_t) * (COUNT + 10));
      for (int i = 0; i < COUNT; ++i) rows[i].chi2 = 0.5 * i;
      lumen_fitcu_deliver(&in, 10, COUNT, rows);
      for (int64_t pos = 0; pos < COUNT + 10; ++pos) {
        assert_int_equal(d.seen[pos], pos >= 10 ? 1 : 0);
        if (pos >= 10) assert_true(d.value[pos] == 0.5 * (double)(pos - 10));
      }
    }
  }
  free(data);
  free(consts);
  free(dst);
  free(cdst);
  free(list);
  free(rows);
  free(d.seen);
  free(d.value);
}

/* allocations above a size fail: halving down to the smallest chunk, then tier cpu reruns it all */
static void test_smallest_chunk_reruns_on_cpu(void **s) {
  (void)s;
  out ref, got;
  run("cpu", 0, &ref);
  fake_on(1, 1024);
  lumen_fitcu_test_fail_allocs(0, 1); /* every chunk allocation fails */
  run("cuda", 0, &got);
  int fails = 0;
  lumen_fitcu_test_stats(&fails, NULL, NULL);
  assert_int_equal(fails, 6); /* 1000 (all work), 500, 250, 125, 62, 32 */
  assert_int_equal(got.r.curves_per_tier[LUMEN_FIT_TIER_CUDA], 0);
  assert_int_equal(got.r.curves_per_tier[LUMEN_FIT_TIER_CPU], NC);
  assert_string_equal(got.r.backend_used, "cpu");
  if (!strstr(got.r.reason, "giving up the device")) print_error("reason: %s\n", got.r.reason);
  assert_non_null(strstr(got.r.reason, "giving up the device"));
  assert_non_null(strstr(got.r.reason, "fell through to cpu"));
  assert_equal_results(&got, &ref);
  out_free(&ref);
  out_free(&got);
  /* float64 too */
  run("cpu", 1, &ref);
  lumen_fitcu_test_fail_allocs(0, 1);
  run("cuda", 1, &got);
  assert_int_equal(got.r.curves_per_tier[LUMEN_FIT_TIER_CPU], NC);
  assert_equal_results(&got, &ref);
  out_free(&ref);
  out_free(&got);
}

/* a kernel error: that chunk and the rest rerun on tier cpu */
static void test_kernel_error(void **s) {
  (void)s;
  out ref, got;
  run("cpu", 0, &ref);
  fake_on(1, 100);
  lumen_fitcu_test_fail_kernel(3);
  run("cuda", 0, &got);
  assert_int_equal(total(&got.r), NC);
  assert_true(got.r.curves_per_tier[LUMEN_FIT_TIER_CUDA] >= 150 && got.r.curves_per_tier[LUMEN_FIT_TIER_CUDA] <= 205);
  assert_true(got.r.curves_per_tier[LUMEN_FIT_TIER_CPU] >= NC - 205);
  assert_string_equal(got.r.backend_used, "cuda+cpu");
  assert_non_null(strstr(got.r.reason, "injected kernel error"));
  assert_equal_results(&got, &ref);
  out_free(&ref);
  out_free(&got);
}

/* several devices share the queue; results as on one */
static void test_multi_device(void **s) {
  (void)s;
  out ref, got, two;
  run("cpu", 0, &ref);
  fake_on(3, 64);
  run("cuda:all", 0, &got);
  int chunks = 0;
  lumen_fitcu_test_stats(NULL, NULL, &chunks);
  assert_true(chunks >= NC / 64);
  assert_true(got.r.curves_per_tier[LUMEN_FIT_TIER_CUDA] >= NC - 5);
  assert_equal_results(&got, &ref);
  /* one device of three fails its allocations at every size: the others take its share */
  lumen_fitcu_test_fail_allocs(0, 0);
  run("cuda:0,2", 0, &two);
  assert_true(two.r.curves_per_tier[LUMEN_FIT_TIER_CUDA] >= NC - 5);
  assert_equal_results(&two, &ref);
  out_free(&ref);
  out_free(&got);
  out_free(&two);
}

/* device lists and selection */
static void test_selection(void **s) {
  (void)s;
  int d[16];
  assert_int_equal(lumen_fitcu_parse_devices("cuda", d, 16), 0);
  assert_int_equal(lumen_fitcu_parse_devices("cpu", d, 16), 0);
  assert_int_equal(lumen_fitcu_parse_devices("cuda:all", d, 16), 1);
  assert_int_equal(d[0], -1);
  assert_int_equal(lumen_fitcu_parse_devices("cuda:0,3", d, 16), 2);
  assert_int_equal(d[1], 3);
  assert_int_equal(lumen_fitcu_parse_devices("cuda:1,", d, 16), -1);
  assert_int_equal(lumen_fitcu_parse_devices("cuda:x", d, 16), -1);
  assert_int_equal(lumen_fitcu_parse_devices("cuda:1,1", d, 16), -1);

  lumen_ctx *ctx = lumen_test_ctx();
  double t[N], cp[N];
  make_grid(t, cp);
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  lumen_fit_plan *plan = NULL;
  o.backend = "cuda:zz";
  assert_int_equal(lumen_fit_plan_create(ctx, &o, N, t, cp, &plan), LUMEN_ERR_INVALID_ARGUMENT);
  /* no fake: this machine may or may not have a GPU; auto then takes cuda only with a device */
  o.backend = "auto";
  assert_int_equal(lumen_fit_plan_create(ctx, &o, N, t, cp, &plan), LUMEN_OK);
  int ndev = 0;
  char why[256];
  int have = lumen_cuda_probe(NULL, &ndev, why, sizeof why) == LUMEN_OK && ndev > 0;
  if (!have) assert_string_not_equal(lumen_fit_plan_backend_selected(plan), "cuda");
  lumen_fit_plan_destroy(plan);
  /* a fake device: auto takes cuda; delay fitting and auc stay on the CPU with a reason */
  fake_on(1, 0);
  assert_int_equal(lumen_fit_plan_create(ctx, &o, N, t, cp, &plan), LUMEN_OK);
  assert_string_equal(lumen_fit_plan_backend_selected(plan), "cuda");
  lumen_fit_plan_destroy(plan);
  o.fit_delay = 1;
  assert_int_equal(lumen_fit_plan_create(ctx, &o, N, t, cp, &plan), LUMEN_OK);
  assert_string_not_equal(lumen_fit_plan_backend_selected(plan), "cuda");
  assert_non_null(strstr(lumen_fit_plan_backend_reason(plan), "delay"));
  lumen_fit_plan_destroy(plan);
  o.fit_delay = 0;
  o.model = LUMEN_MODEL_AUC;
  assert_int_equal(lumen_fit_plan_create(ctx, &o, N, t, cp, &plan), LUMEN_OK);
  assert_string_not_equal(lumen_fit_plan_backend_selected(plan), "cuda");
  lumen_fit_plan_destroy(plan);
  /* a device index beyond the fake's count */
  o.model = LUMEN_MODEL_TOFTS;
  o.backend = "cuda:5";
  assert_int_equal(lumen_fit_plan_create(ctx, &o, N, t, cp, &plan), LUMEN_OK);
  assert_string_not_equal(lumen_fit_plan_backend_selected(plan), "cuda");
  lumen_fit_plan_destroy(plan);
  lumen_ctx_destroy(ctx);
}

LUMEN_TEST_MAIN(cmocka_unit_test_teardown(test_halving, teardown),
                cmocka_unit_test(test_host_staging),
                cmocka_unit_test_teardown(test_smallest_chunk_reruns_on_cpu, teardown),
                cmocka_unit_test_teardown(test_kernel_error, teardown),
                cmocka_unit_test_teardown(test_multi_device, teardown),
                cmocka_unit_test_teardown(test_selection, teardown))
