/* The public image batch (include/lumen/batch.h): a thin wrapper over the engine of
   `lumen filter --batch` (lumen_dist_imgbatch_run, src/scale/image_batch.c). This file checks the
   arguments, resolves the device list, gives the engine its callbacks (the caller's, or the
   arrays and the library ops by name of src/scale/batch_ops.c), keeps the status and message of
   the lowest failed item and fills the report. The engine itself is unchanged. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "lumen/batch.h"
#include "scale/batch_ops.h"
#include "scale/dist_internal.h"

typedef struct bstate {
  lumen_ctx *ctx;                 /* the caller's */
  int64_t n;
  const lumen_batch_callbacks *cb;
  const lumen_batch_named_op *op; /* cb->op found, or NULL */
  /* the caller's context settings, copied into every context of the run */
  char device[32];
  lumen_precision precision;
  lumen_cpu_simd simd;
  int fused, threads;
  double *values;                 /* per item: its number (NaN = none) */
  lumen_image *first;             /* item 0, read before the run to size the buffers; given once */
  pthread_mutex_t mu;             /* the failure record and the cancel flag */
  int64_t failed_item;
  lumen_status failed_status;
  char failed_msg[1024];
  int cancelled;
  int64_t limit, scratch;         /* opts->memory_limit (0: none); the op's scratch per item */
} bstate;

/* ------------------------------------------------------------------ contexts, failures */

/* Worker messages reach the caller's log; errors become the run's error instead (one message). */
static void forward_log(void *user, lumen_log_level level, const char *message) {
  if (level != LUMEN_LOG_ERROR) lumen_log(((bstate *)user)->ctx, level, "%s", message);
}

static lumen_ctx *b_context(void *user, int threads) {
  bstate *t = user;
  lumen_ctx *c = NULL;
  if (lumen_ctx_create(&c) != LUMEN_OK) return NULL;
  (void)lumen_ctx_set_threads(c, threads > 0 ? threads : t->threads);
  (void)lumen_ctx_set_default_device(c, t->device);
  (void)lumen_ctx_set_default_precision(c, t->precision);
  (void)lumen_ctx_set_cpu_simd(c, t->simd);
  (void)lumen_ctx_set_cuda_fused_gaussian_3d(c, t->fused);
  (void)lumen_ctx_set_log(c, forward_log, t, LUMEN_LOG_DEBUG);
  return c;
}

/* Keeps the status and message of the lowest failed item. */
static lumen_status record(bstate *t, int64_t i, lumen_status s, const char *stage, lumen_ctx *ctx) {
  const char *m = ctx && lumen_ctx_last_status(ctx) != LUMEN_OK ? lumen_ctx_last_error(ctx) : "";
  pthread_mutex_lock(&t->mu);
  if (t->failed_item < 0 || i < t->failed_item) {
    t->failed_item = i;
    t->failed_status = s;
    snprintf(t->failed_msg, sizeof t->failed_msg, "item %lld: %s: %s", (long long)i, stage,
             m && m[0] ? m : lumen_status_string(s));
  }
  pthread_mutex_unlock(&t->mu);
  return s;
}

static int cancelled(bstate *t) {
  pthread_mutex_lock(&t->mu);
  int c = t->cancelled;
  pthread_mutex_unlock(&t->mu);
  return c;
}

/* ------------------------------------------------------------------ the engine's callbacks */

/* inputs[i] as a new image over the same memory (the engine frees the wrapper, not the data) */
static lumen_status wrap_input(lumen_ctx *ctx, const lumen_image *src, lumen_image **out) {
  int64_t dims[LUMEN_IMAGE_MAX_DIMS];
  int nd = lumen_image_ndim(src);
  for (int a = 0; a < nd; a++) dims[a] = lumen_image_dim(src, a);
  /* the batch only reads it: the ops take a const input */
  lumen_status s = lumen_image_wrap(ctx, (void *)(uintptr_t)lumen_image_const_data(src), nd, dims,
                                    lumen_image_dtype(src), lumen_image_device(src), out);
  if (s != LUMEN_OK) return s;
  double sp[LUMEN_IMAGE_MAX_DIMS], aff[16];
  if (lumen_image_get_spacing(src, sp, nd) == LUMEN_OK) (void)lumen_image_set_spacing(NULL, *out, sp, nd);
  if (lumen_image_get_affine(src, aff) == LUMEN_OK) (void)lumen_image_set_affine(NULL, *out, aff);
  return LUMEN_OK;
}

/* One rule for every entry point (issue 40 item 14): an image whose charge alone (the input, its
   float32 copy, the result and the op's scratch, as the engine charges it) exceeds memory_limit is
   refused, as `lumen filter` refuses it; it used to run alone, over the limit. */
static lumen_status over_limit(const bstate *t, lumen_ctx *ctx, int64_t i, const lumen_image *im) {
  if (t->limit <= 0 || !im) return LUMEN_OK;
  const int64_t count = lumen_image_count(im), f32 = 4 * count;
  const int64_t need = lumen_image_nbytes(im) + f32 + t->scratch + (lumen_image_dtype(im) != LUMEN_DTYPE_FLOAT32 ? f32 : 0);
  if (need <= t->limit) return LUMEN_OK;
  return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY,
                    "item %lld (%lld voxels) needs about %.0f MiB (input, float32 copy, result and the op's working "
                    "buffers), over the memory limit of %.4g MiB; raise memory_limit or downscale the image",
                    (long long)i, (long long)count, ceil((double)need / 1048576.0), (double)t->limit / 1048576.0);
}

static lumen_status b_read(void *user, lumen_ctx *ctx, int64_t i, lumen_image **out) {
  bstate *t = user;
  *out = NULL;
  if (cancelled(t))
    return record(t, i, lumen_fail(ctx, LUMEN_ERR_CANCELLED, "cancelled by the progress callback"), "read", ctx);
  if (i == 0 && t->first) {
    *out = t->first;
    t->first = NULL;
    lumen_status s = over_limit(t, ctx, i, *out);
    if (s != LUMEN_OK) {
      lumen_image_free(*out);
      *out = NULL;
      record(t, i, s, "read", ctx);
    }
    return s;
  }
  lumen_ctx_clear_error(ctx);
  lumen_status s = t->cb->inputs ? wrap_input(ctx, t->cb->inputs[i], out) : t->cb->read(t->cb->user, ctx, i, out);
  if (s == LUMEN_OK && !*out) {
    s = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "the read callback returned LUMEN_OK and no image");
  } else if (s == LUMEN_OK && (s = over_limit(t, ctx, i, *out)) != LUMEN_OK) {
    /* refused: over the memory limit alone (the message is on ctx) */
  } else if (s == LUMEN_OK && lumen_image_device(*out).kind != LUMEN_DEVICE_CPU) {
    char nm[16];
    lumen_device_format(lumen_image_device(*out), nm, sizeof nm);
    s = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "the read callback returned an image on %s, expected a host image",
                   nm);
  }
  if (s != LUMEN_OK) {
    lumen_image_free(*out);
    *out = NULL;
    record(t, i, s, "read", ctx);
  }
  return s;
}

/* the op by name on a copy of its options with the worker's device and the item's report */
static lumen_status run_named(const bstate *t, lumen_ctx *ctx, const char *device, lumen_filter_report *rep,
                              const lumen_image *in, lumen_image **out, double *value) {
  void *o = malloc(t->op->opts_size);
  if (!o) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: no memory for its options", t->op->name);
  if (t->cb->op_opts) memcpy(o, t->cb->op_opts, t->op->opts_size);
  else t->op->init(o);
  lumen_filter_exec *ex = o; /* every options struct starts with its lumen_filter_exec */
  if (device) ex->device = device;
  ex->report = rep;
  lumen_status s = t->op->run(ctx, in, o, out, value);
  free(o);
  return s;
}

static lumen_status b_compute(void *user, lumen_ctx *ctx, int64_t i, const char *device, lumen_filter_report *rep,
                              const lumen_image *in, lumen_image **out, int *is_mask, int *png_bits, double *scalar) {
  bstate *t = user;
  (void)is_mask;
  (void)png_bits;
  double v = NAN;
  lumen_status s;
  if (t->op) {
    s = run_named(t, ctx, device, rep, in, out, &v);
  } else {
    s = t->cb->compute(t->cb->user, ctx, i, device, in, out, &v);
    snprintf(rep->op, sizeof rep->op, "compute");
    if (s == LUMEN_OK && *out) rep->used = lumen_image_device(*out);
  }
  if (s == LUMEN_OK && !*out) s = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "the compute callback returned no image");
  t->values[i] = v;
  *scalar = v;
  if (s != LUMEN_OK) record(t, i, s, "compute", ctx);
  return s;
}

static lumen_status b_write(void *user, lumen_ctx *ctx, int64_t i, const lumen_image *res, int is_mask, int png_bits) {
  bstate *t = user;
  (void)is_mask;
  (void)png_bits;
  lumen_image *host = NULL;
  lumen_ctx_clear_error(ctx);
  lumen_status s = LUMEN_OK;
  if (lumen_image_device(res).kind != LUMEN_DEVICE_CPU) s = lumen_image_to_device(ctx, res, lumen_device_cpu(), &host);
  const lumen_image *r = host ? host : res;
  if (s == LUMEN_OK && t->cb->outputs) {
    if (host) {
      t->cb->outputs[i] = host;
      host = NULL;
    } else {
      s = lumen_image_clone(ctx, r, &t->cb->outputs[i]);
    }
  } else if (s == LUMEN_OK) {
    s = t->cb->write(t->cb->user, ctx, i, r, t->values[i]);
  }
  lumen_image_free(host);
  if (s == LUMEN_OK && t->cb->values) t->cb->values[i] = t->values[i];
  if (s != LUMEN_OK) record(t, i, s, "write", ctx);
  return s;
}

static void b_progress(void *user, int64_t i, int64_t done, double scalar) {
  bstate *t = user;
  (void)scalar;
  if (t->cb->progress && t->cb->progress(t->cb->user, i, done, t->n)) {
    pthread_mutex_lock(&t->mu);
    t->cancelled = 1;
    pthread_mutex_unlock(&t->mu);
  }
}

/* the op's result failed on its way back from the device (compute failures are recorded above) */
static void b_failed(void *user, int64_t i, lumen_ctx *ctx) {
  lumen_status s = lumen_ctx_last_status(ctx);
  record(user, i, s != LUMEN_OK ? s : LUMEN_ERR_DEVICE, "compute", ctx);
}

/* ------------------------------------------------------------------ checks */

#define EXPECTED_OPS                                                                                           \
  "a filter op (gaussian, dog, gaussian_laplace, median, gamma, abs, contrast, convolve, bandpass, otsu, "    \
  "sauvola, local_variance, variance_binarize, morphology, fill_holes, label, largest_component) or a "       \
  "segmentation algorithm (febds, tophat, kmeans, fcm, pfcm, region_grow, breast_mask, window, "              \
  "normalize_bits, grail)"

static const lumen_batch_named_op *find_op(const char *name) {
  const lumen_batch_named_op *op = lumen_batch_named_op_find(name);
  char alt[64];
  if (op || !name || strlen(name) >= sizeof alt) return op;
  snprintf(alt, sizeof alt, "%s", name); /* "region-grow" as the segmentation parser takes it */
  for (char *p = alt; *p; p++)
    if (*p == '-') *p = '_';
  return lumen_batch_named_op_find(alt);
}

/* exactly one of two ways to give a stage */
static lumen_status one_of(lumen_ctx *ctx, int a, int b, const char *na, const char *nb, const char *what) {
  if (a && b)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_batch_run: callbacks.%s and callbacks.%s are both set, "
                      "expected one of them (%s)", na, nb, what);
  if (!a && !b)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_batch_run: callbacks.%s and callbacks.%s are both NULL, "
                      "expected one of them (%s)", na, nb, what);
  return LUMEN_OK;
}

static lumen_status check_args(lumen_ctx *ctx, int64_t n, const lumen_batch_opts *o, const lumen_batch_callbacks *cb) {
  LUMEN_REQUIRE(ctx, n >= 0, "lumen_batch_run: n is %lld, expected >= 0", (long long)n);
  LUMEN_REQUIRE(ctx, cb != NULL, "lumen_batch_run: callbacks is NULL, expected read or inputs, compute or op, "
                "and write or outputs");
  lumen_status s = one_of(ctx, cb->read != NULL, cb->inputs != NULL, "read", "inputs",
                          "a read callback or n input images");
  if (s == LUMEN_OK) s = one_of(ctx, cb->compute != NULL, cb->op != NULL, "compute", "op",
                                "a compute callback or a library op by name");
  if (s == LUMEN_OK) s = one_of(ctx, cb->write != NULL, cb->outputs != NULL, "write", "outputs",
                                "a write callback or an array of n output pointers");
  if (s != LUMEN_OK) return s;
  LUMEN_REQUIRE(ctx, !cb->op || find_op(cb->op), "lumen_batch_run: callbacks.op is '%s', expected %s", cb->op,
                EXPECTED_OPS);
  LUMEN_REQUIRE(ctx, o->memory_limit >= 0, "lumen_batch_run: opts.memory_limit is %lld, expected >= 0 (0 = no limit)",
                (long long)o->memory_limit);
  LUMEN_REQUIRE(ctx, o->threads >= 0 && o->threads <= LUMEN_MAX_THREADS,
                "lumen_batch_run: opts.threads is %d, expected 0 (the context's) to %d", o->threads, LUMEN_MAX_THREADS);
  LUMEN_REQUIRE(ctx, o->item_voxels >= 0, "lumen_batch_run: opts.item_voxels is %lld, expected >= 0",
                (long long)o->item_voxels);
  for (int64_t i = 0; cb->inputs && i < n; i++) {
    LUMEN_REQUIRE(ctx, cb->inputs[i] != NULL, "lumen_batch_run: callbacks.inputs[%lld] is NULL", (long long)i);
    LUMEN_REQUIRE(ctx, lumen_image_device(cb->inputs[i]).kind == LUMEN_DEVICE_CPU,
                  "lumen_batch_run: callbacks.inputs[%lld] is on a CUDA device, expected a host image", (long long)i);
  }
  return LUMEN_OK;
}

/* The workers: NULL/"" one worker on the op's default device, "auto" every usable GPU else the CPU. */
static lumen_status resolve_devices(lumen_ctx *ctx, const char *text, lumen_dist_devices *devs, int *given) {
  *given = text && text[0];
  int is_auto = *given && strcmp(text, "auto") == 0;
  if (lumen_dist_devices_parse(ctx, !*given ? "cpu" : is_auto ? "cuda:all" : text, devs) != LUMEN_OK)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_batch_run: opts.devices: %s, or \"auto\"",
                      lumen_ctx_last_error(ctx));
  if (is_auto) { /* the CPU without a GPU is what auto means, not a fallback */
    devs->fell_back = 0;
    devs->reason[0] = 0;
  }
  return LUMEN_OK;
}

/* ------------------------------------------------------------------ the run */

void lumen_batch_opts_init(lumen_batch_opts *opts) {
  if (opts) memset(opts, 0, sizeof *opts);
}

void lumen_batch_report_init(lumen_batch_report *report) {
  if (!report) return;
  memset(report, 0, sizeof *report);
  report->failed_item = -1;
}

int lumen_batch_op_known(const char *name) { return find_op(name) != NULL; }

static void fill_report(lumen_batch_report *r, const lumen_dist_devices *devs, int given,
                        const lumen_dist_imgbatch_out *out) {
  const lumen_dist_stage_stats *st = &out->stats;
  r->workers = devs->n;
  if (given) lumen_dist_devices_format(devs, r->devices, sizeof r->devices);
  else snprintf(r->devices, sizeof r->devices, "default");
  snprintf(r->used, sizeof r->used, "%s", out->used);
  r->fell_back = devs->fell_back || out->total.fell_back;
  snprintf(r->reason, sizeof r->reason, "%s", devs->fell_back ? devs->reason : out->total.reason);
  r->written = st->written;
  r->failed_item = st->failed_item;
  for (int w = 0; w < devs->n && w < LUMEN_BATCH_MAX_DEVICES; w++) r->per_worker[w] = st->per_worker[w];
  r->wall_s = st->wall_s;
  r->read_s = st->read_s;
  r->compute_s = st->compute_s;
  r->write_s = st->write_s;
  r->peak_bytes = st->peak_bytes;
  r->item_bytes = st->item_bytes;
  r->pinned_bytes = st->reserved_bytes;
  r->over_limit = st->over_limit;
  r->pipelined = st->pipelined;
  r->peak_rss = out->peak_rss;
}

/* The voxels that size the pinned buffers and the scratch charge: opts, the largest input, or
   item 0 read now (kept for the engine's read of item 0). */
static lumen_status item_voxels(bstate *t, int64_t given, int64_t *count) {
  *count = given;
  for (int64_t i = 0; given == 0 && t->cb->inputs && i < t->n; i++)
    if (lumen_image_count(t->cb->inputs[i]) > *count) *count = lumen_image_count(t->cb->inputs[i]);
  if (given != 0 || t->cb->inputs) return LUMEN_OK;
  lumen_ctx *rc = b_context(t, 1);
  if (!rc) return lumen_fail(t->ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_batch_run: out of memory starting the batch");
  lumen_status s = b_read(t, rc, 0, &t->first);
  lumen_ctx_destroy(rc);
  if (s == LUMEN_OK) *count = lumen_image_count(t->first);
  return s;
}

static lumen_status run_engine(bstate *t, const lumen_batch_opts *o, const lumen_dist_devices *devs, int given,
                               lumen_dist_imgbatch_out *out) {
  lumen_ctx *ctx = t->ctx;
  int threads = lumen_dist_worker_threads(devs, o->threads, lumen_ctx_threads(ctx));
  int op_threads = threads > 0 ? threads : lumen_ctx_threads(ctx);
  int64_t count = 0;
  lumen_status s = item_voxels(t, o->item_voxels, &count);
  if (s != LUMEN_OK) {
    out->stats.failed_item = 0;
    return s;
  }
  int64_t scratch = t->op ? lumen_dist_op_scratch(t->op->cmd, lumen_batch_named_op_charge_name(t->op, t->cb->op_opts),
                                                  count, op_threads)
                          : lumen_dist_op_scratch("compute", "compute", count, op_threads); /* 4 float32 images */
  t->limit = o->memory_limit;
  t->scratch = scratch;
  lumen_dist_imgbatch b = {.n = t->n, .devs = devs, .device_given = given, .overlap = !o->no_overlap,
                           .memory_limit = o->memory_limit, .count = count, .scratch = scratch, .threads = threads,
                           .user = t, .context = b_context, .read = b_read, .write = b_write, .compute = b_compute,
                           .compute_user = t, .progress = b_progress, .failed = b_failed};
  s = lumen_dist_imgbatch_run(ctx, &b, out);
  if (!out->started && s != LUMEN_OK)
    return lumen_fail(ctx, s, "lumen_batch_run: out of memory starting the batch");
  return s;
}

lumen_status lumen_batch_run(lumen_ctx *ctx, int64_t n, const lumen_batch_opts *opts, const lumen_batch_callbacks *cb,
                             lumen_batch_report *report) {
  if (report) lumen_batch_report_init(report);
  if (!ctx) return LUMEN_ERR_INVALID_ARGUMENT;
  lumen_batch_opts o;
  lumen_batch_opts_init(&o);
  if (opts) o = *opts;
  lumen_status s = check_args(ctx, n, &o, cb);
  lumen_dist_devices devs;
  int given = 0;
  if (s == LUMEN_OK) s = resolve_devices(ctx, o.devices, &devs, &given);
  if (s != LUMEN_OK || n == 0) return s;
  for (int64_t i = 0; cb->outputs && i < n; i++) cb->outputs[i] = NULL;
  for (int64_t i = 0; cb->values && i < n; i++) cb->values[i] = NAN;
  bstate t = {.ctx = ctx, .n = n, .cb = cb, .op = cb->op ? find_op(cb->op) : NULL,
              .precision = lumen_ctx_default_precision(ctx), .simd = lumen_ctx_cpu_simd(ctx),
              .fused = lumen_ctx_cuda_fused_gaussian_3d(ctx), .threads = lumen_ctx_threads(ctx), .failed_item = -1};
  (void)lumen_ctx_default_device(ctx, t.device, sizeof t.device);
  t.values = malloc((size_t)n * sizeof *t.values);
  if (!t.values) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_batch_run: out of memory for %lld items",
                                   (long long)n);
  pthread_mutex_init(&t.mu, NULL);
  lumen_dist_imgbatch_out out;
  memset(&out, 0, sizeof out);
  out.stats.failed_item = -1;
  s = run_engine(&t, &o, &devs, given, &out);
  if (s != LUMEN_OK && t.failed_item >= 0) s = lumen_fail(ctx, t.failed_status, "lumen_batch_run: %s", t.failed_msg);
  if (report) fill_report(report, &devs, given, &out);
  lumen_image_free(t.first); /* never handed to the engine (it stopped first) */
  pthread_mutex_destroy(&t.mu);
  free(t.values);
  return s;
}
