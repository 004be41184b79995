/* A batch of images for `lumen filter` and `lumen segment` (image_cli.h): the headers are
   checked before any work, then a reader thread reads ahead under --memory-limit, one worker
   per device of --device (src/dist stages) runs the op, and the writer writes the results in
   input order, so every output equals a single-device serial run (docs/SCALE.md). An image is
   charged against --memory-limit for its input, its result and the op's scratch; a CUDA worker
   pipelines its images through pinned double buffers (src/dist/xfer.h), charged too. */
#if defined(__linux__)
#define _DEFAULT_SOURCE 1 /* mallopt */
#endif
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/image_cli.h"
#include "dist/xfer.h"
#include "io/io_internal.h"
#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* ------------------------------------------------------------------ headers before any work */

/* a * b, or INT64_MAX when it does not fit (sizes from hostile headers) */
static int64_t mul_sat(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  return a > INT64_MAX / b ? INT64_MAX : a * b;
}

static int64_t add_sat(int64_t a, int64_t b) {
  return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* PNG: the IHDR chunk that must come first. 1 when read (dims and *elem set), 0 when this is
   no PNG header (the full read decides), -1 when refused (message printed): not a regular file
   (a FIFO would block), or a side over the reader's cap. */
static int png_dims(lumen_imgcli *c, const char *path, int64_t dims[4], int *elem) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  unsigned char h[26];
  FILE *f = NULL;
  if (lumen_io_fopen_regular(c->ctx, "PNG input", path, &f) != LUMEN_OK) {
    lumen_cli_error(c->cmd, "%s", lumen_ctx_last_error(c->ctx));
    return -1;
  }
  size_t got = fread(h, 1, sizeof h, f);
  fclose(f);
  if (got != sizeof h || memcmp(h, sig, 8) != 0 || memcmp(h + 12, "IHDR", 4) != 0) return 0;
  uint32_t w = (uint32_t)h[16] << 24 | (uint32_t)h[17] << 16 | (uint32_t)h[18] << 8 | h[19];
  uint32_t ht = (uint32_t)h[20] << 24 | (uint32_t)h[21] << 16 | (uint32_t)h[22] << 8 | h[23];
  if (w == 0 || ht == 0) return 0;
  if (w > LUMEN_PNG_MAX_SIDE || ht > LUMEN_PNG_MAX_SIDE) {
    lumen_cli_error(c->cmd,
                    "'%s': PNG IHDR width %lu x height %lu, expected at most %u per side (the PNG reader's cap): "
                    "a corrupt or hostile header, or not an image to process whole",
                    path, (unsigned long)w, (unsigned long)ht, LUMEN_PNG_MAX_SIDE);
    return -1;
  }
  dims[0] = w;
  dims[1] = ht;
  dims[2] = dims[3] = 1;
  *elem = h[24] == 16 ? 2 : 1; /* the reader gives 8-bit or 16-bit grey */
  return 1;
}

/* The shape of one input without its voxels, and the bytes per voxel as read; on any doubt the
   full read decides (and prints its message when the file is unusable). */
int lumen_imgbatch_shape(lumen_imgcli *c, const char *path, int *ndim, int64_t dims[4], int *elem) {
  if (lumen_ends_with_nocase(path, ".png")) {
    int r = png_dims(c, path, dims, elem);
    if (r < 0) return 0;
    if (r > 0) {
      *ndim = 2;
      return 1;
    }
  }
  if (lumen_ends_with_nocase(path, ".nii") || lumen_ends_with_nocase(path, ".nii.gz")) {
    lumen_nifti_info info;
    if (lumen_nifti_read_header(c->ctx, path, NULL, &info) != LUMEN_OK) {
      lumen_cli_error(c->cmd, "%s: %s", path, lumen_ctx_last_error(c->ctx));
      return 0;
    }
    if (info.ndim <= 3) {
      *ndim = info.ndim;
      for (int a = 0; a < 4; a++) dims[a] = a < info.ndim ? info.dims[a] : 1;
      *elem = 4; /* read as float32 */
      return 1;
    }
    /* 4-D: the full read reports it (or an unreadable file, which takes precedence) */
  }
  lumen_image *im = NULL;
  if (!lumen_imgcli_read(c, path, &im)) return 0; /* unknown type, unreadable or 4-D: message printed */
  *ndim = lumen_image_ndim(im);
  for (int a = 0; a < 4; a++) dims[a] = lumen_image_dim(im, a);
  *elem = (int)(lumen_image_nbytes(im) / (lumen_image_count(im) > 0 ? lumen_image_count(im) : 1));
  lumen_image_free(im);
  return 1;
}

/* Bytes per voxel an input of elem bytes per voxel holds with its result (st_read's charge
   without the op's scratch): input, float32 result, and a float32 copy unless it is one. */
static int voxel_charge(int elem) {
  return elem + 4 + (elem != 4 ? 4 : 0);
}

int lumen_imgbatch_check(lumen_imgcli *c) {
  int ndim0 = 0, elem0 = 4;
  int64_t d0[4] = {1, 1, 1, 1};
  for (int k = 0; k < c->njobs; k++) {
    int nd = 0, elem = 4;
    int64_t d[4] = {1, 1, 1, 1};
    if (!lumen_imgbatch_shape(c, c->in[k], &nd, d, &elem)) return 0;
    if (k == 0) {
      ndim0 = nd;
      elem0 = elem;
      memcpy(d0, d, sizeof d0);
    } else {
      int same = nd == ndim0;
      for (int a = 0; a < 4 && same; a++) same = d[a] == d0[a];
      if (!same) {
        lumen_cli_error(c->cmd, "%s is %lldx%lldx%lld, expected the shape of %s (%lldx%lldx%lld): a batch needs one shape",
                        c->in[k], (long long)d[0], (long long)d[1], (long long)d[2], c->in[0], (long long)d0[0],
                        (long long)d0[1], (long long)d0[2]);
        return 0;
      }
      if (voxel_charge(elem) > voxel_charge(elem0)) elem0 = elem; /* budget for the costliest input */
    }
  }
  for (int k = 0; k < c->njobs; k++)
    if (!lumen_imgcli_check_out(c, c->out[k], d0[2] > 1)) return 0;
  lumen_imgbatch_set_shape(c, ndim0, d0, elem0);
  return 1;
}

void lumen_imgbatch_set_shape(lumen_imgcli *c, int ndim, const int64_t dims[4], int elem) {
  c->ndim0 = ndim;
  c->elem0 = elem;
  memcpy(c->dims0, dims, sizeof c->dims0);
  c->count0 = mul_sat(mul_sat(dims[0], dims[1]), mul_sat(dims[2], dims[3]));
}

/* What st_read charges for one image, from the header instead of the decoded image. */
int64_t lumen_imgbatch_image_bytes(const lumen_imgcli *c, int threads) {
  int64_t need = mul_sat(voxel_charge(c->elem0), c->count0);
  return add_sat(need, lumen_dist_op_scratch(c->cmd, c->op, c->count0, threads));
}

int lumen_imgbatch_fits(lumen_imgcli *c, const char *path, int threads) {
  if (c->memory_limit <= 0) return 1;
  int64_t need = lumen_imgbatch_image_bytes(c, threads);
  if (need <= c->memory_limit) return 1;
  char shape[96];
  int n = snprintf(shape, sizeof shape, "%lld x %lld", (long long)c->dims0[0], (long long)c->dims0[1]);
  if (c->ndim0 > 2 && n > 0 && (size_t)n < sizeof shape)
    snprintf(shape + n, sizeof shape - (size_t)n, " x %lld", (long long)c->dims0[2]);
  lumen_cli_error(c->cmd,
                  "'%s' needs about %.0f MiB (%s, %s input, float32 + working buffers of %s), over --memory-limit "
                  "%.4g MiB; raise --memory-limit or downscale the image",
                  path, ceil((double)need / 1048576.0), shape,
                  c->elem0 == 1 ? "8-bit" : c->elem0 == 2 ? "16-bit" : "float32", c->op,
                  (double)c->memory_limit / 1048576.0);
  return 0;
}

/* ------------------------------------------------------------------ the stages */

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
  lumen_imgcli *c;
  lumen_imgbatch_fn fn;
  void *user;
  const char *scalar_name;
  lumen_ctx *io_ctx[2];                     /* reader, writer (overlap); without overlap each
                                               read and write has a context of its own */
  lumen_ctx *wctx[LUMEN_DIST_MAX_DEVICES];  /* one per worker */
  lumen_filter_report *reps;                /* per item */
  unsigned char *ran;                       /* per item: the op ran (reps valid) */
  int overlap;
  int64_t scratch;                          /* the op's scratch per image (estimate) */
  lumen_dist_xfer *xfer[LUMEN_DIST_MAX_DEVICES]; /* pinned staging of each CUDA worker */
  pthread_mutex_t mu;                       /* progress and messages */
  int done;
} batch;

static lumen_status st_read(void *user, int64_t i, void **data, int64_t *bytes) {
  batch *b = user;
  job *j = calloc(1, sizeof *j);
  if (!j) return LUMEN_ERR_OUT_OF_MEMORY;
  lumen_ctx *ctx = b->overlap ? b->io_ctx[0] : NULL;
  lumen_ctx *own = NULL;
  if (!ctx) ctx = own = lumen_imgcli_worker_context(b->c, 1);
  int ok = ctx && lumen_imgcli_read_with(b->c, ctx, b->c->in[i], &j->in);
  lumen_ctx_destroy(own);
  if (!ok) {
    free(j);
    return LUMEN_ERR_IO;
  }
  /* in flight until written: the decoded input, the result (float32 or smaller) and, while
     the op runs, its scratch */
  int64_t f32 = 4 * lumen_image_count(j->in);
  *bytes = lumen_image_nbytes(j->in) + f32 + b->scratch + (lumen_image_dtype(j->in) != LUMEN_DTYPE_FLOAT32 ? f32 : 0);
  *data = j;
  return LUMEN_OK;
}

static lumen_status st_compute(void *user, int worker, const char *device, int64_t i, void **data) {
  batch *b = user;
  job *j = *data;
  lumen_ctx *ctx = b->wctx[worker];
  lumen_ctx_clear_error(ctx);
  j->scalar = NAN;
  lumen_filter_report *rep = &b->reps[i];
  memset(rep, 0, sizeof *rep);
  lumen_status s = j->dev_in ? lumen_dist_xfer_ready(ctx, j->x, j->in_slot) : LUMEN_OK;
  if (s == LUMEN_OK)
    s = b->fn(b->user, ctx, b->c->device ? device : NULL, rep, j->in, &j->res, &j->is_mask, &j->png_bits, &j->scalar);
  b->ran[i] = 1;
  lumen_image_free(j->in);
  j->in = NULL;
  lumen_dist_xfer_release(j->x, j->dev_in); /* after the op's kernels (stream-ordered) */
  j->dev_in = NULL;
  if (s != LUMEN_OK && (s != LUMEN_ERR_INVALID_ARGUMENT || lumen_ctx_last_status(ctx) != LUMEN_OK))
    lumen_cli_error(b->c->cmd, "%s: %s", b->c->in[i], lumen_ctx_last_error(ctx));
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
  batch *b = user;
  lumen_device dev;
  *reserved = 0;
  if (!b->c->device || lumen_device_parse(NULL, device, &dev) != LUMEN_OK || dev.kind != LUMEN_DEVICE_CUDA) return 0;
  /* a slot holds a float32 input or result; larger inputs are staged by the op as before */
  size_t cap = (size_t)(4 * b->c->count0);
  lumen_ctx *ctx = b->wctx[worker];
  if (lumen_dist_xfer_open(ctx, lumen_dist_xfer_cuda(), dev.index, cap, cap, &b->xfer[worker]) != LUMEN_OK) {
    lumen_log(ctx, LUMEN_LOG_INFO, "%s: no pinned double buffers (%s): images copied on the default stream",
              device, lumen_ctx_last_error(ctx));
    lumen_ctx_clear_error(ctx);
    return 0;
  }
  *reserved = lumen_dist_xfer_pinned(b->xfer[worker]);
  return 1;
}

static void st_close(void *user, int worker) {
  batch *b = user;
  lumen_dist_xfer_close(b->xfer[worker]);
  b->xfer[worker] = NULL;
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
  batch *b = user;
  job *j = *data;
  (void)i;
  lumen_ctx *ctx = b->wctx[worker];
  lumen_dist_xfer *x = b->xfer[worker];
  void *dev = NULL;
  lumen_status s = lumen_dist_xfer_upload(ctx, x, slot, lumen_image_const_data(j->in),
                                          (size_t)lumen_image_nbytes(j->in), &dev);
  if (s != LUMEN_OK || !dev) return s; /* !dev: the op stages the host image itself */
  lumen_device d = {LUMEN_DEVICE_CUDA, 0};
  (void)lumen_device_parse(NULL, b->c->devs.name[worker], &d);
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
  batch *b = user;
  job *j = *data;
  (void)i;
  if (!j->res || lumen_image_device(j->res).kind != LUMEN_DEVICE_CUDA) return LUMEN_OK; /* ran on the CPU */
  int queued = 0;
  lumen_status s = lumen_dist_xfer_download(b->wctx[worker], b->xfer[worker], slot, lumen_image_const_data(j->res),
                                            (size_t)lumen_image_nbytes(j->res), &queued);
  j->x = b->xfer[worker];
  j->downloading = queued;
  return s;
}

static lumen_status st_finish(void *user, int worker, int64_t i, int slot, void **data) {
  batch *b = user;
  job *j = *data;
  if (!j->downloading) return LUMEN_OK; /* on the host, or the writer copies it */
  lumen_ctx *ctx = b->wctx[worker];
  lumen_image *host = NULL;
  lumen_status s = like(ctx, j->res, NULL, lumen_device_cpu(), &host);
  /* waits for the download in any case: res is freed after it */
  lumen_status w = lumen_dist_xfer_collect(ctx, j->x, slot, host ? lumen_image_data(host) : NULL,
                                           host ? (size_t)lumen_image_nbytes(host) : 0);
  j->downloading = 0;
  if (s == LUMEN_OK) s = w;
  if (s != LUMEN_OK) {
    lumen_image_free(host);
    lumen_cli_error(b->c->cmd, "%s: %s", b->c->in[i], lumen_ctx_last_error(ctx));
    return s;
  }
  lumen_image_free(j->res);
  j->res = host;
  return LUMEN_OK;
}

static lumen_status st_write(void *user, int64_t i, void *data) {
  batch *b = user;
  job *j = data;
  lumen_ctx *ctx = b->overlap ? b->io_ctx[1] : NULL, *own = NULL;
  if (!ctx) ctx = own = lumen_imgcli_worker_context(b->c, 1);
  int ok = ctx && lumen_imgcli_write_with(b->c, ctx, b->c->out[i], j->res, j->is_mask, j->png_bits);
  lumen_ctx_destroy(own);
  pthread_mutex_lock(&b->mu);
  if (ok && !isnan(j->scalar) && !b->c->quiet)
    fprintf(stderr, "lumen %s: %s: %s %.10g\n", b->c->cmd, b->c->in[i], b->scalar_name, j->scalar);
  if (ok) lumen_imgcli_progress(b->c, ++b->done, b->c->njobs, b->c->out[i]);
  pthread_mutex_unlock(&b->mu);
  st_discard(b, j);
  return ok ? LUMEN_OK : LUMEN_ERR_IO;
}

/* the devices that computed, in order of the images */
static void used_devices(batch *b, char *buf, size_t size) {
  buf[0] = 0;
  size_t len = 0;
  for (int k = 0; k < b->c->njobs; k++) {
    if (!b->ran[k]) continue;
    char nm[32];
    lumen_device_format(b->reps[k].used, nm, sizeof nm);
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

static int compare_strings(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The folder of path into a new string ("." for a bare name); NULL when out of memory. */
static char *folder_of(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 1;
  if (slash && n == 0) n = 1; /* "/name": the root */
  char *d = malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, slash ? path : ".", n);
  d[n] = 0;
  return d;
}

/* The temporaries a killed run left in the output folders (".NAME.tmp-PID-TAG", their PID gone)
   are removed once per folder before anything is written; best effort. */
static void remove_stale(lumen_imgcli *c) {
  char **dirs = calloc((size_t)c->njobs, sizeof *dirs);
  int n = 0;
  for (int k = 0; dirs && k < c->njobs; k++)
    if ((dirs[n] = folder_of(c->out[k])) != NULL) n++;
  if (dirs) qsort(dirs, (size_t)n, sizeof *dirs, compare_strings);
  for (int k = 0; k < n; k++) {
    if (k > 0 && strcmp(dirs[k], dirs[k - 1]) == 0) continue;
    int removed = lumen_io_remove_stale_temporaries(dirs[k]);
    if (removed > 0 && !c->quiet)
      fprintf(stderr, "lumen %s: removed %d temporary file%s left by a killed run in %s\n", c->cmd, removed,
              removed == 1 ? "" : "s", dirs[k]);
  }
  for (int k = 0; k < n; k++) free(dirs[k]);
  free(dirs);
}

int lumen_imgbatch_run(lumen_imgcli *c, lumen_imgbatch_fn fn, void *user, const char *what, const char *scalar_name) {
#if defined(__GLIBC__)
  /* Freed image buffers go back to the system at once: a fixed mmap threshold stops glibc from
     raising it after the first large free and then keeping later 4 MB buffers in its arenas,
     so the resident memory follows the buffers --memory-limit charges (docs/SCALE.md). */
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
  batch b = {
      .c = c, .fn = fn, .user = user, .scalar_name = scalar_name ? scalar_name : "value", .overlap = !c->no_overlap};
  if (lumen_dist_devices_parse(c->ctx, c->device ? c->device : "cpu", &c->devs) != LUMEN_OK) {
    lumen_cli_error(c->cmd, "--device: %s", lumen_ctx_last_error(c->ctx));
    return LUMEN_EXIT_USAGE;
  }
  if (c->devs.fell_back && !c->quiet)
    fprintf(stderr, "lumen %s: warning: %s\n", c->cmd, c->devs.reason);
  /* CPU threads: --threads for each worker, else the cores shared among the CPU workers */
  int threads = c->threads;
  if (threads == 0 && c->devs.n_cpu > 1) {
    threads = lumen_ctx_threads(c->ctx) / c->devs.n_cpu;
    if (threads < 1) threads = 1;
  }
  int op_threads = threads > 0 ? threads : lumen_ctx_threads(c->ctx);
  if (!lumen_imgbatch_fits(c, c->in[0], op_threads)) return LUMEN_EXIT_FAILURE;
  remove_stale(c);
  int rc = LUMEN_EXIT_FAILURE;
  b.reps = calloc((size_t)c->njobs, sizeof *b.reps);
  b.ran = calloc((size_t)c->njobs, 1);
  int ok = b.reps && b.ran;
  b.scratch = lumen_dist_op_scratch(c->cmd, c->op, c->count0, op_threads);
  for (int w = 0; w < c->devs.n && ok; w++) ok = (b.wctx[w] = lumen_imgcli_worker_context(c, threads)) != NULL;
  for (int k = 0; k < 2 && ok; k++) ok = (b.io_ctx[k] = lumen_imgcli_worker_context(c, 1)) != NULL;
  pthread_mutex_init(&b.mu, NULL);
  lumen_dist_stage_stats stats;
  memset(&stats, 0, sizeof stats);
  lumen_status s = LUMEN_ERR_OUT_OF_MEMORY;
  if (ok) {
    lumen_dist_stages st = {&b,      st_read,  st_compute, st_write, st_discard, st_open,
                            st_begin, st_end,   st_finish,  st_close};
    lumen_imgcli_progress(c, 0, c->njobs, c->in[0]);
    s = lumen_dist_stages_run(c->ctx, &c->devs, c->njobs, b.overlap, c->memory_limit, &st, &stats);
  }
  if (s == LUMEN_OK) {
    lumen_filter_report total = b.reps[0];
    total.used = b.reps[c->njobs - 1].used;
    for (int k = 0; k < c->njobs && !total.fell_back; k++)
      if (b.reps[k].fell_back) {
        total.fell_back = 1;
        snprintf(total.reason, sizeof total.reason, "%s", b.reps[k].reason);
      }
    used_devices(&b, c->used_list, sizeof c->used_list);
    lumen_imgcli_summary(c, what, c->njobs, &total);
    if (!c->quiet && (c->njobs > 1 || c->verbose)) {
      char per[512] = "";
      size_t len = 0;
      for (int w = 0; w < c->devs.n && len + 24 < sizeof per; w++)
        len += (size_t)snprintf(per + len, sizeof per - len, "%s%s %lld", w ? ", " : "", c->devs.name[w],
                                (long long)stats.per_worker[w]);
      char lim[160] = "no limit";
      if (c->memory_limit > 0) {
        int n = snprintf(lim, sizeof lim, "limit %.2f MiB", (double)c->memory_limit / 1048576.0);
        if (stats.over_limit && n > 0 && (size_t)n < sizeof lim)
          snprintf(lim + n, sizeof lim - (size_t)n, "; over it: one image needs %.2f MiB%s, it ran alone",
                   (double)stats.item_bytes / 1048576.0, stats.reserved_bytes ? " besides the pinned buffers" : "");
      }
      char pinned[64] = "";
      if (stats.reserved_bytes > 0)
        snprintf(pinned, sizeof pinned, ", %.2f MiB of it pinned (%d worker%s)", (double)stats.reserved_bytes / 1048576.0,
                 stats.pipelined, stats.pipelined == 1 ? "" : "s");
      fprintf(stderr,
              "lumen %s: stages%s: read %.3f s, compute %.3f s (images per worker: %s), write %.3f s, wall %.3f s; "
              "peak %.2f MiB in flight%s (%s; %.2f MiB per image); peak RSS %.2f MiB\n",
              c->cmd, b.overlap ? " (overlapped)" : " (no overlap)", stats.read_s, stats.compute_s, per, stats.write_s,
              stats.wall_s, (double)stats.peak_bytes / 1048576.0, pinned, lim, (double)stats.item_bytes / 1048576.0,
              (double)peak_rss() / 1048576.0);
    }
    rc = LUMEN_EXIT_OK;
  } else if (s == LUMEN_ERR_INVALID_ARGUMENT) {
    rc = LUMEN_EXIT_USAGE; /* the options; bad data in an input is LUMEN_ERR_INVALID_DATA: exit 1 */
  } else if (!ok) {
    lumen_cli_error(c->cmd, "out of memory starting the batch");
  } else if (stats.failed_item < 0) {
    lumen_cli_error(c->cmd, "%s", lumen_ctx_last_error(c->ctx));
  }
  pthread_mutex_destroy(&b.mu);
  for (int w = 0; w < LUMEN_DIST_MAX_DEVICES; w++) lumen_ctx_destroy(b.wctx[w]);
  for (int k = 0; k < 2; k++) lumen_ctx_destroy(b.io_ctx[k]);
  free(b.reps);
  free(b.ran);
  return rc;
}
