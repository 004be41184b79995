/* Devices: parsing, enumeration (CPU + CUDA probed at run time), memory statistics, device contexts. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/cuda_iface.h"
#include "core/internal.h"

#define LUMEN_MAX_TRACKED_DEVICES 64

/* Bytes held per device: slot 0 is the host, slot 1 + N is cuda:N. */
static _Atomic int64_t allocated_bytes[LUMEN_MAX_TRACKED_DEVICES + 1];

static int tracking_slot(lumen_device device) {
  if (device.kind == LUMEN_DEVICE_CPU) return 0;
  if (device.index < 0 || device.index >= LUMEN_MAX_TRACKED_DEVICES) return -1;
  return 1 + device.index;
}

void lumen_memory_account(lumen_device device, int64_t delta_bytes) {
  int slot = tracking_slot(device);
  if (slot >= 0) atomic_fetch_add(&allocated_bytes[slot], delta_bytes);
}

int64_t lumen_memory_allocated(lumen_device device) {
  int slot = tracking_slot(device);
  return slot >= 0 ? atomic_load(&allocated_bytes[slot]) : 0;
}

lumen_device lumen_device_cpu(void) {
  lumen_device d = {LUMEN_DEVICE_CPU, 0};
  return d;
}

int lumen_device_equal(lumen_device a, lumen_device b) {
  return a.kind == b.kind && (a.kind == LUMEN_DEVICE_CPU || a.index == b.index);
}

lumen_status lumen_device_parse(lumen_ctx *ctx, const char *text, lumen_device *out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, text);
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  if (strcmp(text, "cpu") == 0) {
    *out = lumen_device_cpu();
    return LUMEN_OK;
  }
  if (strcmp(text, "cuda") == 0) {
    out->kind = LUMEN_DEVICE_CUDA;
    out->index = 0;
    return LUMEN_OK;
  }
  if (strncmp(text, "cuda:", 5) == 0 && text[5] >= '0' && text[5] <= '9') {
    char *end = NULL;
    long index = strtol(text + 5, &end, 10);
    if (*end == '\0' && index >= 0 && index < 1024) {
      out->kind = LUMEN_DEVICE_CUDA;
      out->index = (int)index;
      return LUMEN_OK;
    }
  }
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "device \"%s\" is not a device name: expected \"cpu\", \"cuda\" or \"cuda:N\" (N = 0..1023)", text);
}

lumen_status lumen_device_format(lumen_device device, char *buf, size_t size) {
  if (!buf || size == 0) return LUMEN_ERR_INVALID_ARGUMENT;
  int n;
  if (device.kind == LUMEN_DEVICE_CPU)
    n = snprintf(buf, size, "cpu");
  else if (device.kind == LUMEN_DEVICE_CUDA && device.index >= 0)
    n = snprintf(buf, size, "cuda:%d", device.index);
  else {
    snprintf(buf, size, "?");
    return LUMEN_ERR_INVALID_ARGUMENT;
  }
  return (n < 0 || (size_t)n >= size) ? LUMEN_ERR_OVERFLOW : LUMEN_OK;
}

/* ---- the context's default device (here, not in context.c: device names depend on the context's
   errors, so the context does not depend on them; context.c stores the value) */
lumen_status lumen_ctx_set_default_device(lumen_ctx *ctx, const char *device) {
  if (!ctx) return LUMEN_ERR_INVALID_ARGUMENT;
  lumen_device d;
  lumen_status s = lumen_device_parse(ctx, device, &d);
  if (s != LUMEN_OK) return s;
  lumen_ctx_store_default_device(ctx, d);
  return LUMEN_OK;
}

lumen_status lumen_ctx_default_device(const lumen_ctx *ctx, char *buf, size_t size) {
  if (!ctx || !buf) return LUMEN_ERR_INVALID_ARGUMENT;
  return lumen_device_format(lumen_ctx_device_default(ctx), buf, size);
}

int lumen_cuda_built(void) { return lumen_cudai_built(); }

lumen_status lumen_cuda_probe(lumen_ctx *ctx, int *device_count, char *reason, size_t reason_size) {
  int count = 0;
  lumen_status s = lumen_cudai_probe(ctx, &count);
  if (device_count) *device_count = count;
  if (reason && reason_size > 0) {
    if (s == LUMEN_OK)
      snprintf(reason, reason_size, "%d CUDA device%s usable", count, count == 1 ? "" : "s");
    else
      snprintf(reason, reason_size, "%s", ctx ? lumen_ctx_last_error(ctx) : lumen_status_string(s));
  }
  return s;
}

lumen_status lumen_cuda_versions(lumen_ctx *ctx, int *driver_version, int *runtime_version) {
  return lumen_cudai_versions(ctx, driver_version, runtime_version);
}

/* Reads a "key : value" field of /proc/cpuinfo or /proc/meminfo (value copied, trimmed). */
static int read_proc_field(const char *path, const char *key, char *value, size_t size) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[512];
  size_t klen = strlen(key);
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, klen) != 0) continue;
    const char *p = strchr(line, ':');
    if (!p) continue;
    p++;
    while (*p == ' ' || *p == '\t') p++;
    snprintf(value, size, "%s", p);
    size_t n = strlen(value);
    while (n > 0 && (value[n - 1] == '\n' || value[n - 1] == ' ')) value[--n] = '\0';
    found = 1;
    break;
  }
  fclose(f);
  return found;
}

static void host_memory(int64_t *total, int64_t *available) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  *total = (pages > 0 && page > 0) ? (int64_t)pages * page : 0;
  char value[128];
  if (read_proc_field("/proc/meminfo", "MemAvailable", value, sizeof value))
    *available = (int64_t)strtoll(value, NULL, 10) * 1024;  /* reported in kB */
  else {
    long avail = sysconf(_SC_AVPHYS_PAGES);
    *available = (avail > 0 && page > 0) ? (int64_t)avail * page : 0;
  }
}

static void cpu_info(lumen_device_info *out) {
  memset(out, 0, sizeof *out);
  out->device = lumen_device_cpu();
  if (!read_proc_field("/proc/cpuinfo", "model name", out->name, sizeof out->name))
    snprintf(out->name, sizeof out->name, "CPU");
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  out->multiprocessors = cores > 0 ? (int)cores : 1;
  host_memory(&out->memory_total, &out->memory_free);
}

lumen_status lumen_device_get_info(lumen_ctx *ctx, lumen_device device, lumen_device_info *out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  if (device.kind == LUMEN_DEVICE_CPU) {
    cpu_info(out);
    return LUMEN_OK;
  }
  LUMEN_REQUIRE(ctx, device.kind == LUMEN_DEVICE_CUDA && device.index >= 0,
                "lumen_device_get_info: device kind %d index %d is not a device", (int)device.kind, device.index);
  return lumen_cudai_device_info(ctx, device.index, out);
}

lumen_status lumen_devices_list(lumen_ctx *ctx, lumen_device_info *infos, int capacity, int *count) {
  LUMEN_REQUIRE_NOT_NULL(ctx, count);
  LUMEN_REQUIRE(ctx, capacity >= 0, "lumen_devices_list: capacity is %d, expected >= 0", capacity);
  LUMEN_REQUIRE(ctx, infos != NULL || capacity == 0, "lumen_devices_list: infos is NULL with capacity %d", capacity);
  int n = 0;
  if (n < capacity) cpu_info(&infos[n]);
  n++;
  int cuda_count = 0;
  if (lumen_cudai_probe(ctx, &cuda_count) == LUMEN_OK) {
    for (int i = 0; i < cuda_count; i++, n++) {
      if (n >= capacity) continue;
      lumen_status s = lumen_cudai_device_info(ctx, i, &infos[n]);
      if (s != LUMEN_OK) return s;
    }
  }
  /* A missing CUDA is not an error here: the CPU is always listed. */
  lumen_ctx_clear_error(ctx);
  *count = n;
  return LUMEN_OK;
}

lumen_status lumen_device_memory(lumen_ctx *ctx, lumen_device device, lumen_memory_stats *out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  lumen_device_info info;
  lumen_status s = lumen_device_get_info(ctx, device, &info);
  if (s != LUMEN_OK) return s;
  out->device = device;
  out->allocated = lumen_memory_allocated(device);
  out->free = info.memory_free;
  out->total = info.memory_total;
  return LUMEN_OK;
}

/* ---------------------------------------------------------------- device contexts */
struct lumen_device_ctx {
  lumen_ctx *ctx;
  lumen_device device;
  int fell_back;
};

/* Checks that a device can be used now: the CPU always, CUDA when probed and in range. */
static lumen_status device_usable(lumen_ctx *ctx, lumen_device d) {
  if (d.kind == LUMEN_DEVICE_CPU) return LUMEN_OK;
  int count = 0;
  lumen_status s = lumen_cudai_probe(ctx, &count);
  if (s != LUMEN_OK) return s;
  if (d.index >= count)
    return lumen_fail(ctx, LUMEN_ERR_NO_DEVICE, "cuda:%d does not exist: %d CUDA device%s found", d.index, count,
                      count == 1 ? "" : "s");
  return LUMEN_OK;
}

lumen_status lumen_device_ctx_open(lumen_ctx *ctx, const char *device, const char *fallback, lumen_device_ctx **out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, device);
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  lumen_device want, use;
  lumen_status s = lumen_device_parse(ctx, device, &want);
  if (s != LUMEN_OK) return s;
  use = want;
  int fell_back = 0;
  s = device_usable(ctx, want);
  if (s != LUMEN_OK) {
    if (!fallback) return s;
    char reason[1024];
    snprintf(reason, sizeof reason, "%s", lumen_ctx_last_error(ctx));
    lumen_device alt;
    lumen_status ps = lumen_device_parse(ctx, fallback, &alt);
    if (ps != LUMEN_OK) return ps;
    ps = device_usable(ctx, alt);
    if (ps != LUMEN_OK) return ps;
    lumen_log(ctx, LUMEN_LOG_WARNING, "device %s is not usable (%s); using %s instead", device, reason, fallback);
    lumen_ctx_clear_error(ctx);
    use = alt;
    fell_back = 1;
  }
  lumen_device_ctx *d = calloc(1, sizeof *d);
  if (!d) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_device_ctx_open: out of host memory");
  d->ctx = ctx;
  d->device = use;
  d->fell_back = fell_back;
  if (use.kind == LUMEN_DEVICE_CUDA) (void)lumen_cudai_release_cache(ctx, use.index);
  *out = d;
  return LUMEN_OK;
}

lumen_device lumen_device_ctx_device(const lumen_device_ctx *dctx) {
  return dctx ? dctx->device : lumen_device_cpu();
}

int lumen_device_ctx_fell_back(const lumen_device_ctx *dctx) { return dctx ? dctx->fell_back : 0; }

lumen_status lumen_device_ctx_memory(lumen_device_ctx *dctx, lumen_memory_stats *out) {
  if (!dctx) return LUMEN_ERR_INVALID_ARGUMENT;
  return lumen_device_memory(dctx->ctx, dctx->device, out);
}

lumen_status lumen_device_ctx_release_cache(lumen_device_ctx *dctx) {
  if (!dctx) return LUMEN_ERR_INVALID_ARGUMENT;
  if (dctx->device.kind != LUMEN_DEVICE_CUDA) return LUMEN_OK;  /* the host keeps no cache */
  return lumen_cudai_release_cache(dctx->ctx, dctx->device.index);
}

void lumen_device_ctx_close(lumen_device_ctx *dctx) {
  if (!dctx) return;
  if (dctx->device.kind == LUMEN_DEVICE_CUDA) (void)lumen_cudai_release_cache(dctx->ctx, dctx->device.index);
  free(dctx);
}
