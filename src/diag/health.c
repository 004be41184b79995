/* The checks behind `lumen backends`: each row says what works here, or why not. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lumen/aif.h"
#include "lumen/fit.h"
#include "models/models_f64.h"
#include "core/internal.h"
#include "diag/check_rows.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_OPENMP
#include <omp.h>
#endif

const char *lumen_check_status_name(lumen_check_status status) {
  switch (status) {
    case LUMEN_CHECK_PASS: return "PASS";
    case LUMEN_CHECK_FAIL: return "FAIL";
    case LUMEN_CHECK_SKIP: return "SKIP";
  }
  return "?";
}

typedef struct {
  lumen_check *rows;
  int capacity;
  int count;
} row_sink;

static void add_row(row_sink *sink, const char *name, lumen_check_status status, const char *fmt, ...)
    LUMEN_PRINTF(4, 5);
static void add_row(row_sink *sink, const char *name, lumen_check_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lumen_check_vappend(sink->rows, sink->capacity, &sink->count, name, status, fmt, ap);
  va_end(ap);
}

static double gib(int64_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

static void check_cpu(lumen_ctx *ctx, row_sink *sink) {
  lumen_device_info info;
  if (lumen_device_get_info(ctx, lumen_device_cpu(), &info) != LUMEN_OK) {
    add_row(sink, "cpu", LUMEN_CHECK_FAIL, "cannot read CPU information: %s", lumen_ctx_last_error(ctx));
    return;
  }
  add_row(sink, "cpu", LUMEN_CHECK_PASS, "%s; %d logical cores, lumen uses %d threads; %.1f GiB memory (%.1f GiB available)",
          info.name, info.multiprocessors, lumen_ctx_threads(ctx), gib(info.memory_total), gib(info.memory_free));
#if LUMEN_HAVE_OPENMP
  int got = 0;
#pragma omp parallel num_threads(lumen_ctx_threads(ctx))
  {
#pragma omp atomic
    got++;
  }
  add_row(sink, "openmp", got >= 1 ? LUMEN_CHECK_PASS : LUMEN_CHECK_FAIL,
          "OpenMP %d; a parallel region ran %d of %d requested threads", _OPENMP, got, lumen_ctx_threads(ctx));
#else
  add_row(sink, "openmp", LUMEN_CHECK_SKIP, "built without OpenMP: CPU work runs on one thread");
#endif
}

static void check_precision(row_sink *sink) {
  /* A quick self-test of the vector conversion path against known bit patterns. */
  const float in[9] = {1.0f, -2.0f, 65504.0f, 65520.0f, 1.0009765625f, 5.9604644775390625e-08f, INFINITY, 0.0f, 3.0f};
  const uint16_t want_half[9] = {0x3C00, 0xC000, 0x7BFF, 0x7C00, 0x3C01, 0x0001, 0x7C00, 0x0000, 0x4200};
  uint16_t half[9], bf[9];
  int ok = lumen_convert_f32_to_f16(in, half, 9) == LUMEN_OK && lumen_convert_f32_to_bf16(in, bf, 9) == LUMEN_OK;
  for (int i = 0; ok && i < 9; i++) ok = half[i] == want_half[i];
  ok = ok && bf[0] == 0x3F80 && bf[1] == 0xC000;
  add_row(sink, "precision", ok ? LUMEN_CHECK_PASS : LUMEN_CHECK_FAIL,
          "float16/bfloat16 conversion, %s path%s", lumen_convert_path_name(), ok ? "" : ": WRONG RESULTS");
}

static void check_cuda(lumen_ctx *ctx, row_sink *sink) {
  if (!lumen_cuda_built()) {
    add_row(sink, "cuda-build", LUMEN_CHECK_SKIP, "built without CUDA (no nvcc at configure time, or -DLUMEN_CUDA=OFF)");
    add_row(sink, "cuda-driver", LUMEN_CHECK_SKIP, "CUDA not built in");
    return;
  }
  add_row(sink, "cuda-build", LUMEN_CHECK_PASS, "CUDA %s, device code for sm %s", LUMEN_CUDA_COMPILER_VERSION,
          LUMEN_CUDA_ARCHITECTURES);
  int count = 0;
  lumen_status s = lumen_cuda_probe(ctx, &count, NULL, 0);
  int driver = 0, runtime = 0;
  (void)lumen_cuda_versions(ctx, &driver, &runtime);
  if (s != LUMEN_OK) {
    /* No driver or no GPU is a normal machine, not a failure. */
    lumen_check_status st = (s == LUMEN_ERR_NO_DEVICE) ? LUMEN_CHECK_SKIP : LUMEN_CHECK_FAIL;
    add_row(sink, "cuda-driver", st, "%s", lumen_ctx_last_error(ctx));
    lumen_ctx_clear_error(ctx);
    return;
  }
  add_row(sink, "cuda-driver", LUMEN_CHECK_PASS, "driver %d.%d, runtime %d.%d, %d device%s", driver / 1000,
          (driver % 1000) / 10, runtime / 1000, (runtime % 1000) / 10, count, count == 1 ? "" : "s");
  for (int i = 0; i < count; i++) {
    char name[32];
    snprintf(name, sizeof name, "cuda:%d", i);
    lumen_device d = {LUMEN_DEVICE_CUDA, i};
    lumen_device_info info;
    if (lumen_device_get_info(ctx, d, &info) != LUMEN_OK) {
      add_row(sink, name, LUMEN_CHECK_FAIL, "%s", lumen_ctx_last_error(ctx));
      lumen_ctx_clear_error(ctx);
      continue;
    }
    /* Round trip through device memory proves allocation and copies work. */
    const int64_t dims[1] = {1024};
    lumen_image *host = NULL, *dev = NULL, *back = NULL;
    int ok = lumen_image_create(ctx, 1, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &host) == LUMEN_OK;
    if (ok) {
      float *h = lumen_image_data(host);
      for (int k = 0; k < 1024; k++) h[k] = (float)k * 0.5f;
      ok = lumen_image_to_device(ctx, host, d, &dev) == LUMEN_OK &&
           lumen_image_to_device(ctx, dev, lumen_device_cpu(), &back) == LUMEN_OK &&
           memcmp(lumen_image_data(back), h, sizeof(float) * 1024) == 0;
    }
    char why[256] = "";
    if (!ok) snprintf(why, sizeof why, "; memory round trip failed: %s", lumen_ctx_last_error(ctx));
    lumen_image_free(host);
    lumen_image_free(dev);
    lumen_image_free(back);
    add_row(sink, name, ok ? LUMEN_CHECK_PASS : LUMEN_CHECK_FAIL, "%s, compute %d.%d, %d SMs, %.1f GiB (%.1f GiB free)%s",
            info.name, info.compute_major, info.compute_minor, info.multiprocessors, gib(info.memory_total),
            gib(info.memory_free), why);
    lumen_ctx_clear_error(ctx);
  }
}

static void check_solvers(row_sink *sink) {
#if LUMEN_HAVE_GSL
  add_row(sink, "gsl", LUMEN_CHECK_PASS, "GNU Scientific Library linked (standard double-precision solver)");
#else
  add_row(sink, "gsl", LUMEN_CHECK_SKIP, "built without GSL: the standard solver tier is not available");
#endif
}

/* ------------------------------------------------------------------ fitting tiers
   A self-test fit per tier: noise-free Tofts curves fitted on tier cpu (checked against the true
   values), then on each CUDA device for about one second (checked against tier cpu). */
#define FIT_N 40
#define FIT_NC 4096
/* fits the curves on backend; returns the number of curves that converged to within 1e-3 of ref
   (or of the true values when ref is NULL), -1 when the plan or the run failed; *rate fits/s. */
static int fit_selftest(lumen_ctx *ctx, const char *backend, double seconds, const double *t, const double *cp,
                        const float *y, const double *truth, const double *ref, double *params, double *rate,
                        char *used, size_t used_size) {
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.model = LUMEN_MODEL_TOFTS;
  o.backend = backend;
  lumen_fit_plan *plan = NULL;
  if (lumen_fit_plan_create(ctx, &o, FIT_N, t, cp, &plan) != LUMEN_OK) return -1;
  int32_t state[FIT_NC];
  lumen_fit_results r = {.params = params, .state = state};
  double t0 = lumen_now_seconds(), el = 0;
  int64_t done = 0;
  lumen_status st = LUMEN_OK;
  do {
    st = lumen_fit_execute(ctx, plan, FIT_NC, y, NULL, &r);
    done += FIT_NC;
    el = lumen_now_seconds() - t0;
  } while (st == LUMEN_OK && el < seconds);
  snprintf(used, used_size, "%s", r.backend_used);
  lumen_fit_plan_destroy(plan);
  if (st != LUMEN_OK) return -1;
  *rate = el > 0 ? (double)done / el : 0;
  int good = 0;
  for (int c = 0; c < FIT_NC; ++c) {
    int ok = state[c] == LUMEN_FIT_CONVERGED || state[c] == LUMEN_FIT_AT_BOUND;
    for (int k = 0; k < 2 && ok; ++k) {
      double want = ref ? ref[2 * c + k] : truth[2 * (c % 16) + k];
      ok = fabs(params[2 * c + k] - want) <= 1e-3 * fabs(want) + 1e-6;
    }
    good += ok;
  }
  return good;
}

static void check_fitting(lumen_ctx *ctx, row_sink *sink) {
  double t[FIT_N], cp[FIT_N], truth[32];
  float *y = malloc(sizeof(float) * FIT_NC * FIT_N);
  double *pcpu = malloc(sizeof(double) * 4 * FIT_NC), *pdev = pcpu ? pcpu + 2 * FIT_NC : NULL;
  if (!y || !pcpu) {
    add_row(sink, "fit-cpu", LUMEN_CHECK_FAIL, "out of memory for the self-test");
    free(y);
    free(pcpu);
    return;
  }
  for (int i = 0; i < FIT_N; ++i) t[i] = i * 6.0 / 60.0;
  lumen_aif_options ao;
  lumen_aif_options_init(&ao);
  ao.delay = 0.5;
  if (lumen_aif_population(ctx, &ao, FIT_N, t, cp) != LUMEN_OK) {
    add_row(sink, "fit-cpu", LUMEN_CHECK_FAIL, "AIF: %s", lumen_ctx_last_error(ctx));
    lumen_ctx_clear_error(ctx);
    free(y);
    free(pcpu);
    return;
  }
  double dt[FIT_N], icp[FIT_N], f[FIT_N];
  lumen_grid_f64 g;
  lumen_grid_setup_f64(&g, FIT_N, t, cp, dt, icp);
  for (int j = 0; j < 16; ++j) {
    truth[2 * j] = 0.05 + 0.02 * j;
    truth[2 * j + 1] = 0.15 + 0.03 * j;
    lumen_model_eval_f64(LUMEN_MODEL_TOFTS, &g, NULL, truth + 2 * j, f, NULL, NULL);
    for (int c = j; c < FIT_NC; c += 16)
      for (int i = 0; i < FIT_N; ++i) y[(size_t)c * FIT_N + i] = (float)f[i];
  }
  char used[LUMEN_FIT_NAME_MAX] = "";
  double rate = 0;
  int good = fit_selftest(ctx, "cpu", 0.0, t, cp, y, truth, NULL, pcpu, &rate, used, sizeof used);
  if (good < 0) {
    add_row(sink, "fit-cpu", LUMEN_CHECK_FAIL, "self-test fit failed: %s", lumen_ctx_last_error(ctx));
    lumen_ctx_clear_error(ctx);
    free(y);
    free(pcpu);
    return;
  }
  add_row(sink, "fit-cpu", good == FIT_NC ? LUMEN_CHECK_PASS : LUMEN_CHECK_FAIL,
          "tofts self-test on tier %s: %d/%d curves recovered within 1e-3, %.0f fits/s", used, good, FIT_NC, rate);
  int count = 0;
  char why[256] = "";
  if (lumen_cuda_probe(NULL, &count, why, sizeof why) != LUMEN_OK || count < 1) {
    add_row(sink, "fit-cuda", LUMEN_CHECK_SKIP, "no CUDA device: %s", why[0] ? why : "none");
    free(y);
    free(pcpu);
    return;
  }
  for (int d = 0; d < count && d < 16; ++d) {
    char name[32], backend[32];
    snprintf(name, sizeof name, "fit-cuda:%d", d);
    snprintf(backend, sizeof backend, "cuda:%d", d);
    good = fit_selftest(ctx, backend, 1.0, t, cp, y, truth, pcpu, pdev, &rate, used, sizeof used);
    if (good < 0) {
      add_row(sink, name, LUMEN_CHECK_FAIL, "self-test fit failed: %s", lumen_ctx_last_error(ctx));
      lumen_ctx_clear_error(ctx);
      continue;
    }
    int on_dev = strcmp(used, "cuda") == 0;
    add_row(sink, name, good == FIT_NC && on_dev ? LUMEN_CHECK_PASS : LUMEN_CHECK_FAIL,
            "tofts 1 s self-test: tier %s, %d/%d curves equal to tier cpu within 1e-3, %.3g fits/s", used, good,
            FIT_NC, rate);
  }
  free(y);
  free(pcpu);
}

lumen_status lumen_health_checks(lumen_ctx *ctx, lumen_check *rows, int capacity, int *count) {
  LUMEN_REQUIRE_NOT_NULL(ctx, count);
  LUMEN_REQUIRE(ctx, capacity >= 0 && (rows != NULL || capacity == 0),
                "lumen_health_checks: rows is NULL or capacity %d is negative", capacity);
  row_sink sink = {rows, capacity, 0};
  check_cpu(ctx, &sink);
  check_precision(&sink);
  check_cuda(ctx, &sink);
  check_solvers(&sink);
  check_fitting(ctx, &sink);
  *count = sink.count;
  return LUMEN_OK;
}
