/* Device lists for image batches ("cpu,cpu", "cuda:all", "cuda:0,cuda:1") and the choice of one
   GPU per MPI rank (src/scale/dist_internal.h, docs/SCALE.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "lumen/device.h"
#include "scale/dist_internal.h"

static const char expected[] = "expected a comma-separated list of cpu, cuda, cuda:N or cuda:all";

static int add(lumen_dist_devices *d, const char *name) {
  if (d->n >= LUMEN_DIST_MAX_DEVICES) return 0;
  snprintf(d->name[d->n], sizeof d->name[d->n], "%s", name);
  if (strcmp(name, "cpu") == 0) d->n_cpu++;
  d->n++;
  return 1;
}

lumen_status lumen_dist_devices_expand(lumen_ctx *ctx, const char *text, int n_cuda, const char *why,
                                       lumen_dist_devices *out) {
  if (!out) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_dist_devices_expand: out is NULL");
  memset(out, 0, sizeof *out);
  if (!text || !text[0]) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "device list is empty, %s", expected);
  const char *p = text;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char item[32];
    if (len == 0 || len >= sizeof item)
      return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "device list '%s' has an empty or too long entry, %s", text,
                        expected);
    memcpy(item, p, len);
    item[len] = 0;
    int ok = 1;
    if (strcmp(item, "cuda:all") == 0) {
      if (n_cuda > 0) {
        for (int k = 0; k < n_cuda && ok; k++) {
          char nm[16];
          snprintf(nm, sizeof nm, "cuda:%d", k);
          ok = add(out, nm);
        }
      } else {
        if (!out->fell_back)
          snprintf(out->reason, sizeof out->reason, "cuda:all: no usable CUDA device (%s), using the CPU",
                   why && why[0] ? why : "none found");
        out->fell_back = 1;
        ok = add(out, "cpu");
      }
    } else {
      lumen_device dev;
      if (lumen_device_parse(NULL, item, &dev) != LUMEN_OK)
        return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "device list '%s': entry '%s' is not a device, %s", text,
                          item, expected);
      char nm[16];
      lumen_device_format(dev, nm, sizeof nm);
      ok = add(out, nm);
    }
    if (!ok)
      return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "device list '%s' has more than %d workers", text,
                        LUMEN_DIST_MAX_DEVICES);
    if (!comma) break;
    p = comma + 1;
  }
  return LUMEN_OK;
}

lumen_status lumen_dist_devices_parse(lumen_ctx *ctx, const char *text, lumen_dist_devices *out) {
  int n_cuda = 0;
  char why[256] = "";
  if (text && strstr(text, "cuda:all")) {
    lumen_ctx *probe = NULL; /* its own context: the probe's failure is a reason, not an error */
    if (lumen_ctx_create(&probe) != LUMEN_OK) probe = NULL;
    if (lumen_cuda_probe(probe, &n_cuda, why, sizeof why) != LUMEN_OK) n_cuda = 0;
    lumen_ctx_destroy(probe);
  }
  return lumen_dist_devices_expand(ctx, text, n_cuda, why, out);
}

void lumen_dist_devices_format(const lumen_dist_devices *d, char *buf, size_t size) {
  if (!buf || size == 0) return;
  buf[0] = 0;
  size_t len = 0;
  for (int k = 0; d && k < d->n && len + 1 < size; k++) {
    int w = snprintf(buf + len, size - len, "%s%s", k ? "," : "", d->name[k]);
    if (w < 0) break;
    len += (size_t)w;
  }
}

int lumen_dist_rank_device(int local_rank, int n_cuda, const char *backend) {
  if (n_cuda < 2 || local_rank < 0) return -1;
  if (backend && backend[0] && strcmp(backend, "auto") != 0 && strcmp(backend, "cuda") != 0) return -1;
  return local_rank % n_cuda;
}
