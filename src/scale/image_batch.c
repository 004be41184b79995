/* A batch of images (lumen_dist_imgbatch_run in src/scale/dist_internal.h): the stages of
   stages.c with decoded images as items, a context per reader, writer and device worker, and
   on a CUDA worker pinned double buffers (xfer.h) so that uploads and downloads overlap the op.
   The front end reads, computes and writes one image through its callbacks. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "lumen/device.h"
#include "scale/dist_internal.h"
#include "scale/xfer.h"

typedef struct job {
  lumen_image *in, *res;
  int is_mask, png_bits;
  double scalar;
  /* on a pipelining CUDA worker: in wraps dev_in, uploaded through input slot in_slot; res is
     being downloaded when downloading is set */
  lumen_dist_xfer *x;
  void *dev_in;
  int in_slot, downloading;
} job;

typedef struct batch {
  const lumen_dist_imgbatch *b;
  lumen_ctx *io_ctx[2];                     /* reader, writer (overlap); without overlap each
                                               read and write has a context of its own */
  lumen_ctx *wctx[LUMEN_DIST_MAX_DEVICES];  /* one per worker */
  lumen_filter_report *reps;                /* per item */
  unsigned char *ran;                       /* per item: the op ran (reps valid) */
  lumen_dist_xfer *xfer[LUMEN_DIST_MAX_DEVICES]; /* pinned staging of each CUDA worker */
  pthread_mutex_t mu;                       /* progress */
  int64_t done;
} batch;

static lumen_status st_read(void *user, int64_t i, void **data, int64_t *bytes) {
  batch *t = user;
  job *j = calloc(1, sizeof *j);
  if (!j) return LUMEN_ERR_OUT_OF_MEMORY;
  lumen_ctx *ctx = t->b->overlap ? t->io_ctx[0] : NULL;
  lumen_ctx *own = NULL;
  if (!ctx) ctx = own = t->b->context(t->b->user, 1);
  int ok = ctx && t->b->read(t->b->user, ctx, i, &j->in) == LUMEN_OK;
  lumen_ctx_destroy(own);
  if (!ok) {
    free(j);
    return LUMEN_ERR_IO;
  }
  /* in flight until written: the decoded input, the result (float32 or smaller) and, while
     the op runs, its scratch */
  int64_t f32 = 4 * lumen_image_count(j->in);
  *bytes = lumen_image_nbytes(j->in) + f32 + t->b->scratch + (lumen_image_dtype(j->in) != LUMEN_DTYPE_FLOAT32 ? f32 : 0);
  *data = j;
  return LUMEN_OK;
}

static lumen_status st_compute(void *user, int worker, const char *device, int64_t i, void **data) {
  batch *t = user;
  job *j = *data;
  lumen_ctx *ctx = t->wctx[worker];
  lumen_ctx_clear_error(ctx);
  j->scalar = NAN;
  lumen_filter_report *rep = &t->reps[i];
  memset(rep, 0, sizeof *rep);
  lumen_status s = j->dev_in ? lumen_dist_xfer_ready(ctx, j->x, j->in_slot) : LUMEN_OK;
  if (s == LUMEN_OK)
    s = t->b->compute(t->b->compute_user, ctx, i, t->b->device_given ? device : NULL, rep, j->in, &j->res,
                      &j->is_mask, &j->png_bits, &j->scalar);
  t->ran[i] = 1;
  lumen_image_free(j->in);
  j->in = NULL;
  lumen_dist_xfer_release(j->x, j->dev_in); /* after the op's kernels (stream-ordered) */
  j->dev_in = NULL;
  /* an op that refused its options printed why itself (no error in its context) */
  if (s != LUMEN_OK && (s != LUMEN_ERR_INVALID_ARGUMENT || lumen_ctx_last_status(ctx) != LUMEN_OK))
    t->b->failed(t->b->user, i, ctx);
  return s;
}

static void st_discard(void *user, void *data) {
  (void)user;
  job *j = data;
  if (!j) return;
  lumen_dist_xfer_abandon(j->x, j->in_slot, j->dev_in); /* begun, never computed */
  lumen_image_free(j->in);
  lumen_image_free(j->res);
  free(j);
}

/* ---- a CUDA worker pipelines its images (lumen_dist_stages' open / begin / end / finish) */

static int st_open(void *user, int worker, const char *device, int64_t *reserved) {
  batch *t = user;
  lumen_device dev;
  *reserved = 0;
  if (!t->b->device_given || lumen_device_parse(NULL, device, &dev) != LUMEN_OK || dev.kind != LUMEN_DEVICE_CUDA)
    return 0;
  /* a slot holds a float32 input or result; larger inputs are staged by the op as before */
  size_t cap = (size_t)(4 * t->b->count);
  lumen_ctx *ctx = t->wctx[worker];
  if (lumen_dist_xfer_open(ctx, lumen_dist_xfer_cuda(), dev.index, cap, cap, &t->xfer[worker]) != LUMEN_OK) {
    lumen_log(ctx, LUMEN_LOG_INFO, "%s: no pinned double buffers (%s): images copied on the default stream",
              device, lumen_ctx_last_error(ctx));
    lumen_ctx_clear_error(ctx);
    return 0;
  }
  *reserved = lumen_dist_xfer_pinned(t->xfer[worker]);
  return 1;
}

static void st_close(void *user, int worker) {
  batch *t = user;
  lumen_dist_xfer_close(t->xfer[worker]);
  t->xfer[worker] = NULL;
}

static void same_geometry(lumen_image *dst, const lumen_image *src) {
  double sp[LUMEN_IMAGE_MAX_DIMS], aff[16];
  int nd = lumen_image_ndim(dst);
  if (lumen_image_get_spacing(src, sp, nd) == LUMEN_OK) lumen_image_set_spacing(NULL, dst, sp, nd);
  if (lumen_image_get_affine(src, aff) == LUMEN_OK) lumen_image_set_affine(NULL, dst, aff);
}

/* a new image of src's shape, type and geometry on device, wrapping data or allocating */
static lumen_status like(lumen_ctx *ctx, const lumen_image *src, void *data, lumen_device device, lumen_image **out) {
  int64_t dims[LUMEN_IMAGE_MAX_DIMS];
  int nd = lumen_image_ndim(src);
  for (int a = 0; a < nd; a++) dims[a] = lumen_image_dim(src, a);
  lumen_status s = data ? lumen_image_wrap(ctx, data, nd, dims, lumen_image_dtype(src), device, out)
                        : lumen_image_create(ctx, nd, dims, lumen_image_dtype(src), device, 0, out);
  if (s == LUMEN_OK) same_geometry(*out, src);
  return s;
}

static lumen_status st_begin(void *user, int worker, int64_t i, int slot, void **data) {
  batch *t = user;
  job *j = *data;
  (void)i;
  lumen_ctx *ctx = t->wctx[worker];
  lumen_dist_xfer *x = t->xfer[worker];
  void *dev = NULL;
  lumen_status s = lumen_dist_xfer_upload(ctx, x, slot, lumen_image_const_data(j->in),
                                          (size_t)lumen_image_nbytes(j->in), &dev);
  if (s != LUMEN_OK || !dev) return s; /* !dev: the op stages the host image itself */
  lumen_device d = {LUMEN_DEVICE_CUDA, 0};
  (void)lumen_device_parse(NULL, t->b->devs->name[worker], &d);
  lumen_image *wrapped = NULL;
  s = like(ctx, j->in, dev, d, &wrapped);
  j->x = x;
  j->dev_in = dev;
  j->in_slot = slot;
  if (s != LUMEN_OK) return s; /* discard abandons dev_in */
  lumen_image_free(j->in); /* the host copy is no longer needed: a CPU rerun copies dev_in back */
  j->in = wrapped;
  return LUMEN_OK;
}

static lumen_status st_end(void *user, int worker, int64_t i, int slot, void **data) {
  batch *t = user;
  job *j = *data;
  (void)i;
  if (!j->res || lumen_image_device(j->res).kind != LUMEN_DEVICE_CUDA) return LUMEN_OK; /* ran on the CPU */
  int queued = 0;
  lumen_status s = lumen_dist_xfer_download(t->wctx[worker], t->xfer[worker], slot, lumen_image_const_data(j->res),
                                            (size_t)lumen_image_nbytes(j->res), &queued);
  j->x = t->xfer[worker];
  j->downloading = queued;
  return s;
}

static lumen_status st_finish(void *user, int worker, int64_t i, int slot, void **data) {
  batch *t = user;
  job *j = *data;
  if (!j->downloading) return LUMEN_OK; /* on the host, or the writer copies it */
  lumen_ctx *ctx = t->wctx[worker];
  lumen_image *host = NULL;
  lumen_status s = like(ctx, j->res, NULL, lumen_device_cpu(), &host);
  /* waits for the download in any case: res is freed after it */
  lumen_status w = lumen_dist_xfer_collect(ctx, j->x, slot, host ? lumen_image_data(host) : NULL,
                                           host ? (size_t)lumen_image_nbytes(host) : 0);
  j->downloading = 0;
  if (s == LUMEN_OK) s = w;
  if (s != LUMEN_OK) {
    lumen_image_free(host);
    t->b->failed(t->b->user, i, ctx);
    return s;
  }
  lumen_image_free(j->res);
  j->res = host;
  return LUMEN_OK;
}

static lumen_status st_write(void *user, int64_t i, void *data) {
  batch *t = user;
  job *j = data;
  lumen_ctx *ctx = t->b->overlap ? t->io_ctx[1] : NULL, *own = NULL;
  if (!ctx) ctx = own = t->b->context(t->b->user, 1);
  int ok = ctx && t->b->write(t->b->user, ctx, i, j->res, j->is_mask, j->png_bits) == LUMEN_OK;
  lumen_ctx_destroy(own);
  if (ok) {
    pthread_mutex_lock(&t->mu);
    t->b->progress(t->b->user, i, ++t->done, j->scalar);
    pthread_mutex_unlock(&t->mu);
  }
  st_discard(t, j);
  return ok ? LUMEN_OK : LUMEN_ERR_IO;
}

/* ------------------------------------------------------------------ what the batch did */

/* the devices that computed, in order of the images */
static void used_devices(const batch *t, char *buf, size_t size) {
  buf[0] = 0;
  size_t len = 0;
  for (int64_t k = 0; k < t->b->n; k++) {
    if (!t->ran[k]) continue;
    char nm[32];
    lumen_device_format(t->reps[k].used, nm, sizeof nm);
    int seen = 0;
    for (const char *p = buf; *p && !seen;) {
      const char *comma = strchr(p, ',');
      size_t l = comma ? (size_t)(comma - p) : strlen(p);
      seen = l == strlen(nm) && strncmp(p, nm, l) == 0;
      p = comma ? comma + 1 : p + l;
    }
    if (seen || len + strlen(nm) + 2 >= size) continue;
    len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "", nm);
  }
}

/* The peak resident set of this process (VmHWM), bytes; 0 when unknown. */
static int64_t peak_rss(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  long long kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %lld kB", &kb) == 1) break;
  fclose(f);
  return (int64_t)kb * 1024;
}

/* the first image's report with the last device used and the first fallback */
static void total_report(const batch *t, lumen_filter_report *total) {
  *total = t->reps[0];
  total->used = t->reps[t->b->n - 1].used;
  for (int64_t k = 0; k < t->b->n && !total->fell_back; k++)
    if (t->reps[k].fell_back) {
      total->fell_back = 1;
      snprintf(total->reason, sizeof total->reason, "%s", t->reps[k].reason);
    }
}

/* ------------------------------------------------------------------ the run */

int lumen_dist_worker_threads(const lumen_dist_devices *devs, int threads, int ctx_threads) {
  if (threads == 0 && devs->n_cpu > 1) {
    threads = ctx_threads / devs->n_cpu;
    if (threads < 1) threads = 1;
  }
  return threads;
}

/* the per-item records and the contexts; 0 when out of memory */
static int batch_open(batch *t) {
  const lumen_dist_imgbatch *b = t->b;
  t->reps = calloc((size_t)b->n, sizeof *t->reps);
  t->ran = calloc((size_t)b->n, 1);
  int ok = t->reps && t->ran;
  for (int w = 0; w < b->devs->n && ok; w++) ok = (t->wctx[w] = b->context(b->user, b->threads)) != NULL;
  for (int k = 0; k < 2 && ok; k++) ok = (t->io_ctx[k] = b->context(b->user, 1)) != NULL;
  return ok;
}

static void batch_close(batch *t) {
  for (int w = 0; w < LUMEN_DIST_MAX_DEVICES; w++) lumen_ctx_destroy(t->wctx[w]);
  for (int k = 0; k < 2; k++) lumen_ctx_destroy(t->io_ctx[k]);
  free(t->reps);
  free(t->ran);
}

lumen_status lumen_dist_imgbatch_run(lumen_ctx *ctx, const lumen_dist_imgbatch *b, lumen_dist_imgbatch_out *out) {
  memset(out, 0, sizeof *out);
  out->stats.failed_item = -1;
  batch t = {.b = b};
  pthread_mutex_init(&t.mu, NULL);
  lumen_status s = LUMEN_ERR_OUT_OF_MEMORY;
  if (b->n > 0 && batch_open(&t)) {
    out->started = 1;
    lumen_dist_stages st = {&t, st_read, st_compute, st_write, st_discard, st_open, st_begin, st_end, st_finish,
                            st_close};
    b->progress(b->user, 0, 0, NAN);
    s = lumen_dist_stages_run(ctx, b->devs, b->n, b->overlap, b->memory_limit, &st, &out->stats);
  }
  if (s == LUMEN_OK) {
    total_report(&t, &out->total);
    used_devices(&t, out->used, sizeof out->used);
    out->peak_rss = peak_rss();
  }
  pthread_mutex_destroy(&t.mu);
  batch_close(&t);
  return s;
}
