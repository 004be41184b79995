/* The context: last error (per context, mutex-guarded), callbacks, defaults. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/internal.h"
#include "lumen_build_config.h"

#define LUMEN_ERROR_MAX 1024

struct lumen_ctx {
  pthread_mutex_t lock;           /* guards error, status and progress calls */
  char error[LUMEN_ERROR_MAX];
  lumen_status status;
  lumen_log_fn log_fn;
  void *log_user;
  lumen_log_level log_level;
  lumen_progress_fn progress_fn;
  void *progress_user;
  /* progress scopes (lumen_progress_scope_push): the innermost maps [0, 1] of a callee into
     [base, base + span] of the scope's label */
  struct {
    double base, span;
    char label[64];
  } scope[LUMEN_PROGRESS_SCOPES];
  int n_scopes;
  int threads;
  int online_cpus; /* the online cores at lumen_ctx_create: threads = 0 uses them all */
  lumen_device device;
  lumen_precision precision;
  lumen_cpu_simd cpu_simd;
  int cuda_no_fused_gaussian_3d; /* 0 = fused (the default, so that calloc gives it) */
};

lumen_status lumen_ctx_create(lumen_ctx **out) {
  if (!out) return LUMEN_ERR_INVALID_ARGUMENT;
  *out = NULL;
  lumen_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return LUMEN_ERR_OUT_OF_MEMORY;
  if (pthread_mutex_init(&ctx->lock, NULL) != 0) {
    free(ctx);
    return LUMEN_ERR_INTERNAL;
  }
  ctx->log_level = LUMEN_LOG_WARNING;
  ctx->device.kind = LUMEN_DEVICE_CPU; /* lumen_device_cpu() (device.c, which depends on this file) */
  ctx->device.index = 0;
  ctx->precision = LUMEN_PRECISION_FULL;
  /* once here: glibc's sysconf opens and reads /sys/devices/system/cpu/online on every call, which
     cost every lumen_fit_execute call a file open while its other threads waited */
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  ctx->online_cpus = online > 0 ? (int)online : 1;
  *out = ctx;
  return LUMEN_OK;
}

void lumen_ctx_destroy(lumen_ctx *ctx) {
  if (!ctx) return;
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
}

static void emit_log(lumen_ctx *ctx, lumen_log_level level, const char *message) {
  if (ctx && ctx->log_fn && level <= ctx->log_level) ctx->log_fn(ctx->log_user, level, message);
}

lumen_status lumen_fail(lumen_ctx *ctx, lumen_status status, const char *fmt, ...) {
  if (!ctx) return status;
  char message[LUMEN_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&ctx->lock);
  memcpy(ctx->error, message, sizeof message);
  ctx->status = status;
  pthread_mutex_unlock(&ctx->lock);
  emit_log(ctx, LUMEN_LOG_ERROR, message);
  return status;
}

void lumen_log(lumen_ctx *ctx, lumen_log_level level, const char *fmt, ...) {
  if (!ctx || !ctx->log_fn || level > ctx->log_level) return;
  char message[LUMEN_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  emit_log(ctx, level, message);
}

lumen_status lumen_progress(lumen_ctx *ctx, double fraction, const char *stage) {
  if (!ctx || !ctx->progress_fn) return LUMEN_OK;
  if (fraction < 0) fraction = 0;
  if (fraction > 1) fraction = 1;
  pthread_mutex_lock(&ctx->lock);
  if (ctx->n_scopes > 0) { /* a part of a labelled stage: its share of the stage's bar */
    const int k = (ctx->n_scopes < LUMEN_PROGRESS_SCOPES ? ctx->n_scopes : LUMEN_PROGRESS_SCOPES) - 1;
    fraction = ctx->scope[k].base + ctx->scope[k].span * fraction;
    stage = ctx->scope[k].label;
  }
  int stop = ctx->progress_fn(ctx->progress_user, fraction, stage ? stage : "");
  pthread_mutex_unlock(&ctx->lock);
  if (stop) return lumen_fail(ctx, LUMEN_ERR_CANCELLED, "%s: cancelled by the progress callback at %.1f %%",
                              stage ? stage : "work", 100.0 * fraction);
  return LUMEN_OK;
}

const char *lumen_ctx_last_error(const lumen_ctx *ctx) {
  static _Thread_local char copy[LUMEN_ERROR_MAX];
  if (!ctx) return "lumen_ctx_last_error: context is NULL";
  lumen_ctx *mut = (lumen_ctx *)ctx;  /* the lock is not part of the logical state */
  pthread_mutex_lock(&mut->lock);
  memcpy(copy, ctx->error, sizeof copy);
  pthread_mutex_unlock(&mut->lock);
  return copy;
}

lumen_status lumen_ctx_last_status(const lumen_ctx *ctx) {
  if (!ctx) return LUMEN_ERR_INVALID_ARGUMENT;
  lumen_ctx *mut = (lumen_ctx *)ctx;
  pthread_mutex_lock(&mut->lock);
  lumen_status s = ctx->status;
  pthread_mutex_unlock(&mut->lock);
  return s;
}

void lumen_ctx_clear_error(lumen_ctx *ctx) {
  if (!ctx) return;
  pthread_mutex_lock(&ctx->lock);
  ctx->error[0] = '\0';
  ctx->status = LUMEN_OK;
  pthread_mutex_unlock(&ctx->lock);
}

lumen_status lumen_ctx_set_log(lumen_ctx *ctx, lumen_log_fn fn, void *user, lumen_log_level level) {
  if (!ctx) return LUMEN_ERR_INVALID_ARGUMENT;
  if ((int)level < 0 || level >= LUMEN_LOG_LEVEL_COUNT)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_ctx_set_log: level %d is not a lumen_log_level (0..%d)",
                      (int)level, LUMEN_LOG_LEVEL_COUNT - 1);
  ctx->log_fn = fn;
  ctx->log_user = user;
  ctx->log_level = level;
  return LUMEN_OK;
}

void lumen_progress_scope_push(lumen_ctx *ctx, double base, double span, const char *label) {
  if (!ctx) return;
  pthread_mutex_lock(&ctx->lock);
  if (ctx->n_scopes < LUMEN_PROGRESS_SCOPES) {
    const int k = ctx->n_scopes; /* k > 0 here reads scope[k - 1], which exists */
    if (k > 0 && !label) { /* nested without a label of its own: a part of the outer scope's part */
      base = ctx->scope[k - 1].base + ctx->scope[k - 1].span * base;
      span *= ctx->scope[k - 1].span;
      label = ctx->scope[k - 1].label;
    }
    ctx->scope[k].base = base;
    ctx->scope[k].span = span;
    snprintf(ctx->scope[k].label, sizeof ctx->scope[k].label, "%s", label ? label : "");
  }
  ctx->n_scopes++;
  pthread_mutex_unlock(&ctx->lock);
}

void lumen_progress_scope_pop(lumen_ctx *ctx) {
  if (!ctx) return;
  pthread_mutex_lock(&ctx->lock);
  if (ctx->n_scopes > 0) ctx->n_scopes--;
  pthread_mutex_unlock(&ctx->lock);
}

lumen_status lumen_ctx_set_progress(lumen_ctx *ctx, lumen_progress_fn fn, void *user) {
  if (!ctx) return LUMEN_ERR_INVALID_ARGUMENT;
  pthread_mutex_lock(&ctx->lock);
  ctx->progress_fn = fn;
  ctx->progress_user = user;
  pthread_mutex_unlock(&ctx->lock);
  return LUMEN_OK;
}

lumen_status lumen_ctx_set_cpu_simd(lumen_ctx *ctx, lumen_cpu_simd limit) {
  if (!ctx) return LUMEN_ERR_INVALID_ARGUMENT;
  LUMEN_REQUIRE(ctx, (int)limit >= 0 && limit < LUMEN_CPU_SIMD_COUNT,
                "lumen_ctx_set_cpu_simd: limit %d is not a lumen_cpu_simd (0..%d)", (int)limit, LUMEN_CPU_SIMD_COUNT - 1);
  ctx->cpu_simd = limit;
  return LUMEN_OK;
}

lumen_cpu_simd lumen_ctx_cpu_simd(const lumen_ctx *ctx) { return ctx ? ctx->cpu_simd : LUMEN_CPU_SIMD_AUTO; }

int lumen_cpu_vector_level(lumen_cpu_simd limit) {
  if (limit == LUMEN_CPU_SIMD_OFF) return 0;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  int cpu = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
#else
  int cpu = 0;
#endif
  return limit == LUMEN_CPU_SIMD_AVX2 && cpu > 1 ? 1 : cpu;
}

lumen_status lumen_ctx_set_cuda_fused_gaussian_3d(lumen_ctx *ctx, int enabled) {
  if (!ctx) return LUMEN_ERR_INVALID_ARGUMENT;
  ctx->cuda_no_fused_gaussian_3d = !enabled;
  return LUMEN_OK;
}

int lumen_ctx_cuda_fused_gaussian_3d(const lumen_ctx *ctx) { return !ctx || !ctx->cuda_no_fused_gaussian_3d; }

lumen_status lumen_ctx_set_threads(lumen_ctx *ctx, int threads) {
  if (!ctx) return LUMEN_ERR_INVALID_ARGUMENT;
  LUMEN_REQUIRE(ctx, threads >= 0 && threads <= LUMEN_MAX_THREADS,
                "lumen_ctx_set_threads: threads is %d, expected 0 (all cores) to %d", threads, LUMEN_MAX_THREADS);
  ctx->threads = threads;
  return LUMEN_OK;
}

int lumen_ctx_threads(const lumen_ctx *ctx) {
  if (ctx) return ctx->threads > 0 ? ctx->threads : ctx->online_cpus;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

void lumen_ctx_store_default_device(lumen_ctx *ctx, lumen_device device) { ctx->device = device; }

lumen_device lumen_ctx_device_default(const lumen_ctx *ctx) {
  if (ctx) return ctx->device;
  lumen_device cpu = {LUMEN_DEVICE_CPU, 0};
  return cpu;
}

lumen_status lumen_ctx_set_default_precision(lumen_ctx *ctx, lumen_precision precision) {
  if (!ctx) return LUMEN_ERR_INVALID_ARGUMENT;
  LUMEN_REQUIRE(ctx, (int)precision >= 0 && precision < LUMEN_PRECISION_COUNT,
                "lumen_ctx_set_default_precision: precision %d is not a lumen_precision (0..%d)", (int)precision,
                LUMEN_PRECISION_COUNT - 1);
  ctx->precision = precision;
  return LUMEN_OK;
}

lumen_precision lumen_ctx_default_precision(const lumen_ctx *ctx) {
  return ctx ? ctx->precision : LUMEN_PRECISION_FULL;
}

int lumen_mul_i64(int64_t a, int64_t b, int64_t *out) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return 1;
  *out = r;
  return 0;
}

int lumen_add_i64(int64_t a, int64_t b, int64_t *out) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return 1;
  *out = r;
  return 0;
}

const char *lumen_version(void) { return LUMEN_VERSION_STRING; }

const char *lumen_build_info(void) {
  return "lumen " LUMEN_VERSION_STRING " (" LUMEN_C_COMPILER
#if LUMEN_HAVE_CUDA
         ", CUDA " LUMEN_CUDA_COMPILER_VERSION " sm " LUMEN_CUDA_ARCHITECTURES
#else
         ", no CUDA"
#endif
#if LUMEN_HAVE_OPENMP
         ", OpenMP"
#endif
#if LUMEN_HAVE_GSL
         ", GSL"
#endif
#if LUMEN_TEST_HOOKS
         ", test hooks"
#endif
         ")";
}
