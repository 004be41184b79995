/* lumen: devices ("cpu", "cuda:N"), their properties, and device contexts. */
#ifndef LUMEN_DEVICE_H
#define LUMEN_DEVICE_H
#include "lumen/export.h"

#include <stddef.h>
#include <stdint.h>
#include "lumen/context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lumen_device_kind {
  LUMEN_DEVICE_CPU = 0,
  LUMEN_DEVICE_CUDA,
  LUMEN_DEVICE_KIND_COUNT
} lumen_device_kind;

typedef struct lumen_device {
  lumen_device_kind kind;
  int index;            /* CUDA ordinal; 0 for the CPU */
} lumen_device;

#define LUMEN_DEVICE_NAME_MAX 256

typedef struct lumen_device_info {
  lumen_device device;
  char name[LUMEN_DEVICE_NAME_MAX];  /* "NVIDIA H200", or the CPU model */
  int64_t memory_total;              /* bytes */
  int64_t memory_free;               /* bytes */
  int compute_major, compute_minor;  /* CUDA compute capability; 0 for the CPU */
  int multiprocessors;               /* SMs, or logical CPU cores */
} lumen_device_info;

/* The CPU device. */
LUMEN_API lumen_device lumen_device_cpu(void);
/* Parses "cpu", "cuda" (= cuda:0) or "cuda:N" (N >= 0). Does not check that it exists. */
LUMEN_API lumen_status lumen_device_parse(lumen_ctx *ctx, const char *text, lumen_device *out);
/* Writes "cpu" or "cuda:N" into buf (at least 16 bytes is always enough). */
LUMEN_API lumen_status lumen_device_format(lumen_device device, char *buf, size_t size);
LUMEN_API int lumen_device_equal(lumen_device a, lumen_device b);

/* Whether this build contains CUDA code (1) or not (0). */
LUMEN_API int lumen_cuda_built(void);
/* Probes CUDA at run time. LUMEN_OK and the device count when at least one device is usable;
   otherwise LUMEN_ERR_NOT_BUILT or LUMEN_ERR_NO_DEVICE with the reason (no driver, driver too
   old, no device, ...) in the context's last error and in reason (when reason is not NULL).
   Never fails on a machine without a GPU or driver beyond returning that status. */
LUMEN_API lumen_status lumen_cuda_probe(lumen_ctx *ctx, int *device_count, char *reason, size_t reason_size);
/* CUDA driver and runtime versions as 1000*major + 10*minor (0 when unknown). */
LUMEN_API lumen_status lumen_cuda_versions(lumen_ctx *ctx, int *driver_version, int *runtime_version);

/* Lists the CPU and every usable CUDA device into infos (up to capacity entries).
   *count receives the number of devices that exist, which may exceed capacity. */
LUMEN_API lumen_status lumen_devices_list(lumen_ctx *ctx, lumen_device_info *infos, int capacity, int *count);
/* Properties of one device, memory figures current. */
LUMEN_API lumen_status lumen_device_get_info(lumen_ctx *ctx, lumen_device device, lumen_device_info *out);

/* ----- device contexts: scope work to a device and release its cached memory at the end */
typedef struct lumen_device_ctx lumen_device_ctx;

typedef struct lumen_memory_stats {
  lumen_device device;
  int64_t allocated;  /* bytes lumen currently holds on the device (images, buffers) */
  int64_t free;       /* bytes free on the device (host: available physical memory) */
  int64_t total;      /* bytes on the device (host: physical memory) */
} lumen_memory_stats;

/* Opens a context on device ("cpu", "cuda:N"). If that device cannot be used and fallback is
   not NULL, the fallback device is used instead and a warning with the reason is logged;
   lumen_device_ctx_fell_back() tells whether that happened. */
LUMEN_API lumen_status lumen_device_ctx_open(lumen_ctx *ctx, const char *device, const char *fallback,
                                   lumen_device_ctx **out);
LUMEN_API lumen_device lumen_device_ctx_device(const lumen_device_ctx *dctx);
LUMEN_API int lumen_device_ctx_fell_back(const lumen_device_ctx *dctx);
LUMEN_API lumen_status lumen_device_ctx_memory(lumen_device_ctx *dctx, lumen_memory_stats *out);
/* Returns cached device memory (CUDA's stream-ordered pool) to the driver. */
LUMEN_API lumen_status lumen_device_ctx_release_cache(lumen_device_ctx *dctx);
/* Releases cached memory and frees the context. NULL is allowed. */
LUMEN_API void lumen_device_ctx_close(lumen_device_ctx *dctx);

/* Memory statistics of any device without opening a context. */
LUMEN_API lumen_status lumen_device_memory(lumen_ctx *ctx, lumen_device device, lumen_memory_stats *out);

#ifdef __cplusplus
}
#endif
#endif
