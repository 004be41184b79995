/* Internal helpers shared by lumen's C sources: error reporting, logging, checked arithmetic. */
#ifndef LUMEN_CORE_INTERNAL_H
#define LUMEN_CORE_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include "lumen/lumen.h"

#if defined(__GNUC__)
#define LUMEN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define LUMEN_PRINTF(f, a)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Records status and a formatted message as the context's last error (ctx may be NULL),
   logs it at ERROR level, and returns status so callers can `return lumen_fail(...)`. */
lumen_status lumen_fail(lumen_ctx *ctx, lumen_status status, const char *fmt, ...) LUMEN_PRINTF(3, 4);
/* Sends a message to the context's log callback when level is enabled. */
void lumen_log(lumen_ctx *ctx, lumen_log_level level, const char *fmt, ...) LUMEN_PRINTF(3, 4);
/* Reports progress; returns LUMEN_ERR_CANCELLED (with a message) when the callback asks to stop. */
lumen_status lumen_progress(lumen_ctx *ctx, double fraction, const char *stage);

/* Maps the whole pages of [p, p + bytes) for writing in one call, just before a bulk write fills
   them (Linux 5.14+, MADV_POPULATE_WRITE; pages.c): the kernel zeroes them as the first writes
   would, but without a page fault per 4 KiB. A hint: ignored where unsupported; the pages stay
   ordinary pages (no huge pages: their synchronous compaction was slower here). */
void lumen_populate_pages(void *p, size_t bytes);

/* A symbol of an optional module (src/core/module.c): the shared object NAME is looked for beside
   the object holding lumen's code (and in ../lib, ../lib64 from there), then on the dynamic linker's
   path, then at build_path (NULL: not); global: RTLD_GLOBAL (a library whose own plug-ins need its
   symbols, such as Open MPI). NULL when none loads: why holds every place tried and its reason;
   from the path that loaded. Callers load once (pthread_once). */
void *lumen_module_load(const char *name, const char *symbol, const char *build_path, int global, char *from,
                        size_t from_size, char *why, size_t why_size);
/* A helper program of lumen's (src/io/decoder/): NAME beside the object holding lumen's code or in
   ../libexec from there, else build_path; 1 and its path in out when one is a regular executable file. */
int lumen_module_find_program(const char *name, const char *build_path, char *out, size_t size);

/* Progress scopes: between push and pop, lumen_progress(ctx, f, any stage) reports base + span * f
   under label (a pipeline stage's bar over the chunks of a fit, each chunk's fit reporting 0..1).
   label NULL inside a scope: a part of that scope's [base, base + span]. Nested up to
   LUMEN_PROGRESS_SCOPES deep (deeper pushes only count, so that pops match). */
#define LUMEN_PROGRESS_SCOPES 4
void lumen_progress_scope_push(lumen_ctx *ctx, double base, double span, const char *label);
void lumen_progress_scope_pop(lumen_ctx *ctx);

/* dst[b * ds + a] = src[a * ss + b] for a < na, b < nb (a block transposed); level: the vector
   level allowed (lumen_cpu_vector_level: 0 plain, >= 1 AVX); nan (or NULL): nan[b] = whether
   column b of src holds a NaN. Moves only: the same bits at every level. */
void lumen_transpose_f32(const float *src, int64_t ss, int64_t na, int64_t nb, float *dst, int64_t ds, int level,
                         uint8_t *nan);
/* Curves from a frame-major series: dst[k * nt + i] = series[index[k] + i * stride] for k < n,
   i < nt, on threads (runs of consecutive index[k] transposed by lumen_transpose_f32 at level). */
void lumen_series_gather(const float *series, int64_t stride, const int64_t *index, int64_t n, int64_t nt, float *dst,
                         int threads, int level);

/* Checked arithmetic: return 0 on success, 1 on overflow (out untouched then). */
int lumen_mul_i64(int64_t a, int64_t b, int64_t *out);
int lumen_add_i64(int64_t a, int64_t b, int64_t *out);

/* The context's default device (parsed), for device resolution. */
lumen_device lumen_ctx_device_default(const lumen_ctx *ctx);
/* Stores the default device (context.c); lumen_ctx_set_default_device (device.c) parses it. */
void lumen_ctx_store_default_device(lumen_ctx *ctx, lumen_device device);

/* Bytes lumen holds per device, for memory statistics (index -1 = host). */
void lumen_memory_account(lumen_device device, int64_t delta_bytes);
int64_t lumen_memory_allocated(lumen_device device);

/* Seconds on the monotonic clock (clock.c): differences time stages and runs. */
double lumen_now_seconds(void);
/* The vector instructions the CPU-side loops may use within limit (lumen_ctx_cpu_simd): 2 AVX-512F,
   1 AVX2, 0 none (also for LUMEN_CPU_SIMD_OFF). Kernels that need more (FMA, AVX-512DQ) test it. */
int lumen_cpu_vector_level(lumen_cpu_simd limit);

/* 1 when s ends with suffix (suffix.c): exactly, or ignoring the case of s's ASCII letters
   (lower_suffix is written in lower case). */
int lumen_ends_with(const char *s, const char *suffix);
int lumen_ends_with_nocase(const char *s, const char *lower_suffix);

/* Argument check helper: fails with LUMEN_ERR_INVALID_ARGUMENT and the formatted message. */
#define LUMEN_REQUIRE(ctx, cond, ...) \
  do { if (!(cond)) return lumen_fail((ctx), LUMEN_ERR_INVALID_ARGUMENT, __VA_ARGS__); } while (0)
#define LUMEN_REQUIRE_NOT_NULL(ctx, ptr) \
  LUMEN_REQUIRE(ctx, (ptr) != NULL, "%s: argument '%s' is NULL", __func__, #ptr)

#ifdef __cplusplus
}
#endif
#endif
