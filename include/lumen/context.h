/* lumen: the context carries error messages, callbacks and defaults for a caller. */
#ifndef LUMEN_CONTEXT_H
#define LUMEN_CONTEXT_H
#include "lumen/export.h"

#include <stddef.h>
#include "lumen/status.h"
#include "lumen/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lumen_ctx lumen_ctx;

typedef enum lumen_log_level {
  LUMEN_LOG_ERROR = 0,
  LUMEN_LOG_WARNING,
  LUMEN_LOG_INFO,
  LUMEN_LOG_DEBUG,
  LUMEN_LOG_LEVEL_COUNT
} lumen_log_level;

/* Receives every message at or above the context's log level. The library never prints. */
typedef void (*lumen_log_fn)(void *user, lumen_log_level level, const char *message);
/* Receives progress in [0, 1] for the named stage; return non-zero to cancel the work,
   which then ends with LUMEN_ERR_CANCELLED. May be called from worker threads, serialised. */
typedef int (*lumen_progress_fn)(void *user, double fraction, const char *stage);

/* Creates a context with: no callbacks, log level WARNING, threads 0 (= all cores),
   default device "cpu", default precision FULL. */
LUMEN_API lumen_status lumen_ctx_create(lumen_ctx **out);
LUMEN_API void lumen_ctx_destroy(lumen_ctx *ctx);   /* NULL is allowed */

/* The message of the last failed call made with this context ("" if none). The pointer is
   valid on the calling thread until its next call of this function. Thread-safe. */
LUMEN_API const char *lumen_ctx_last_error(const lumen_ctx *ctx);
/* Status of the last failed call (LUMEN_OK if none or cleared). */
LUMEN_API lumen_status lumen_ctx_last_status(const lumen_ctx *ctx);
LUMEN_API void lumen_ctx_clear_error(lumen_ctx *ctx);

LUMEN_API lumen_status lumen_ctx_set_log(lumen_ctx *ctx, lumen_log_fn fn, void *user, lumen_log_level level);
LUMEN_API lumen_status lumen_ctx_set_progress(lumen_ctx *ctx, lumen_progress_fn fn, void *user);

/* Threads for CPU work: 0 means all cores (those online when the context was created); negative
   is an error. */
/* The most CPU threads any call takes (lumen_ctx_set_threads, lumen_batch_run, every --threads):
   more is refused (LUMEN_ERR_INVALID_ARGUMENT), never tried (libgomp dies or the stacks exhaust
   memory). */
#define LUMEN_MAX_THREADS 4096
LUMEN_API lumen_status lumen_ctx_set_threads(lumen_ctx *ctx, int threads);
/* The number of threads CPU work will use (resolves 0 to the core count). */
LUMEN_API int lumen_ctx_threads(const lumen_ctx *ctx);

/* Default device for operations given no device and no input image on a device:
   "cpu", "cuda" (= cuda:0) or "cuda:N". The device need not exist now: it is resolved when used. */
LUMEN_API lumen_status lumen_ctx_set_default_device(lumen_ctx *ctx, const char *device);
/* Writes the default device's name into buf. */
LUMEN_API lumen_status lumen_ctx_default_device(const lumen_ctx *ctx, char *buf, size_t size);

LUMEN_API lumen_status lumen_ctx_set_default_precision(lumen_ctx *ctx, lumen_precision precision);
LUMEN_API lumen_precision lumen_ctx_default_precision(const lumen_ctx *ctx);

/* The widest CPU vector instructions lumen's kernels may use (fit solver lanes, filter loops and
   median networks). AUTO, the default, takes the widest this CPU has; a lower limit compares code
   paths or reproduces a smaller machine: OFF gives the scalar fit solver and the generic filter
   loops, AVX2 at most 256-bit vectors. Results agree to rounding whichever is used (the fit's vector
   lanes do the scalar solver's operations in the same order). A limit above what the CPU has is
   not an error: the CPU's widest is used. The command-line tool and the Python binding set it from
   LUMEN_SIMD=off|avx2|avx512 in the environment; the library itself reads no environment. */
typedef enum lumen_cpu_simd {
  LUMEN_CPU_SIMD_AUTO = 0,
  LUMEN_CPU_SIMD_OFF,
  LUMEN_CPU_SIMD_AVX2,
  LUMEN_CPU_SIMD_AVX512,
  LUMEN_CPU_SIMD_COUNT
} lumen_cpu_simd;
LUMEN_API lumen_status lumen_ctx_set_cpu_simd(lumen_ctx *ctx, lumen_cpu_simd limit);
LUMEN_API lumen_cpu_simd lumen_ctx_cpu_simd(const lumen_ctx *ctx);

/* 1 (the default): 3-D Gaussians with small radii run as one fused CUDA kernel (docs/GPU.md);
   0: as separate xy and z passes, for benchmarks that compare the two. Both give the same image. */
LUMEN_API lumen_status lumen_ctx_set_cuda_fused_gaussian_3d(lumen_ctx *ctx, int enabled);
LUMEN_API int lumen_ctx_cuda_fused_gaussian_3d(const lumen_ctx *ctx);

/* Library version ("0.1.0") and a one-line description of what this build contains. */
LUMEN_API const char *lumen_version(void);
LUMEN_API const char *lumen_build_info(void);

#ifdef __cplusplus
}
#endif
#endif
