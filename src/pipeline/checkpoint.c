/* Stage D checkpoints and --resume (checkpoint.h). Record layout (native byte order; the file
   lives next to the outputs and is read back only by the same build):
     char magic[8] "LUMCKPT3", uint64 fingerprint, int64 start, int64 count, uint64 payload
     bytes, uint64 XXH3-64 of the payload (the fingerprint is XXH3-64 too); then the payload:
     the result strings, the tier and state counts and seconds of the chunk, and its slices of
     every result array. A "LUMCKPT2" file (the former layout, FNV-1a) is refused with a message
     and the fit starts over.
   A torn or foreign record ends the usable part; only that part is copied into the new file (see
   replace_checkpoint) and fitting goes on. */
#include "lumen_build_config.h"
#include "io/io_internal.h"
#include "pipeline/fit_counts.h"
#include "pipeline/checkpoint.h"
#include "pipeline/pipe_checksum.h"
#include "pipeline/pipe_conc.h"
#include "pipeline/pipe_outputs.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_util.h"
#include "fit/fit_series.h"
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CK_MAGIC "LUMCKPT3"
#define CK_MAGIC_FNV "LUMCKPT2" /* the former layout: FNV-1a checksums */

typedef struct ck_head {
  char magic[8];
  uint64_t fingerprint;
  int64_t start, count;
  uint64_t payload_bytes, payload_xxh3;
} ck_head;

/* Chained XXH3-64: each piece is hashed with the hash so far as its seed. */
static uint64_t chain(uint64_t h, const void *p, size_t n) { return pipe_checksum_bytes(h, p, n); }

/* One result array: base pointer, element size, elements per curve. */
typedef struct ck_array { void *base; size_t elem; int64_t per; } ck_array;

static int arrays_of(const lumen_fit_results *r, lumen_model model, ck_array *a) {
  int np = lumen_model_param_count(model), nd = lumen_fit_derived_count(model), k = 0;
  a[k++] = (ck_array){r->params, sizeof(double), np > 0 ? np : 1};
  a[k++] = (ck_array){r->state, sizeof(int32_t), 1};
  a[k++] = (ck_array){r->derived, sizeof(double), nd > 0 ? nd : 1};
  a[k++] = (ck_array){r->chi2, sizeof(double), 1};
  a[k++] = (ck_array){r->r2, sizeof(double), 1};
  a[k++] = (ck_array){r->iterations, sizeof(int32_t), 1};
  a[k++] = (ck_array){r->ci_lo, sizeof(double), np > 0 ? np : 1};
  a[k++] = (ck_array){r->ci_hi, sizeof(double), np > 0 ? np : 1};
  a[k++] = (ck_array){r->delay, sizeof(double), 1};
  a[k++] = (ck_array){r->bound_mask, sizeof(int32_t), 1};
  return k;
}

/* Copies n bytes between field and buf at *off: into buf when to_buf (buf NULL: only counts),
   out of buf otherwise; moves *off past them. */
static void move_bytes(unsigned char *buf, size_t *off, void *field, size_t n, int to_buf) {
  if (!to_buf) memcpy(field, buf + *off, n);
  else if (buf) memcpy(buf + *off, field, n);
  *off += n;
}

/* The record of chunk [start, start + count) of r, chunk-local counts in c: one layout for both
   directions (to_buf: c and r are only read). Returns its size. */
static size_t chunk_record(unsigned char *buf, lumen_fit_results *r, lumen_fit_results *c, lumen_model model,
                           int64_t start, int64_t count, int to_buf) {
  struct { void *p; size_t n; } head[] = {
      {c->backend_requested, sizeof c->backend_requested}, {c->backend_selected, sizeof c->backend_selected},
      {c->backend_used, sizeof c->backend_used},           {c->reason, sizeof c->reason},
      {c->curves_per_tier, sizeof c->curves_per_tier},     {c->state_counts, sizeof c->state_counts},
      {c->at_lower, sizeof c->at_lower},                   {c->at_upper, sizeof c->at_upper},
      {&c->seconds, sizeof c->seconds}};
  size_t off = 0;
  for (size_t i = 0; i < sizeof head / sizeof head[0]; ++i) move_bytes(buf, &off, head[i].p, head[i].n, to_buf);
  ck_array a[16];
  int na = arrays_of(r, model, a);
  for (int i = 0; i < na; ++i)
    if (a[i].base)
      move_bytes(buf, &off, (unsigned char *)a[i].base + (size_t)(start * a[i].per) * a[i].elem,
                 (size_t)(count * a[i].per) * a[i].elem, to_buf);
  return off;
}

/* Serialises chunk [start, start + count) of r (chunk-local counts in c) into buf (NULL: its size). */
static size_t pack(unsigned char *buf, const lumen_fit_results *r, const lumen_fit_results *c, lumen_model model,
                   int64_t start, int64_t count) {
  /* chunk_record only reads r and c when writing into buf */
  return chunk_record(buf, (lumen_fit_results *)r, (lumen_fit_results *)c, model, start, count, 1);
}

static void unpack(const unsigned char *buf, lumen_fit_results *r, lumen_fit_results *c, lumen_model model,
                   int64_t start, int64_t count) {
  chunk_record((unsigned char *)buf, r, c, model, start, count, 0);  /* only reads buf */
  c->backend_requested[sizeof c->backend_requested - 1] = c->backend_selected[sizeof c->backend_selected - 1] = '\0';
  c->backend_used[sizeof c->backend_used - 1] = c->reason[sizeof c->reason - 1] = '\0';
}

static void ckpt_path(pipe_run *run, lumen_model model, char *buf, size_t size) {
  char name[400];
  snprintf(name, sizeof name, ".%s_model-%s.ckpt", run->prefix, lumen_model_name(model));
  pipe_join(buf, size, run->out, name);
}

/* XXH3 of n bytes at p in blocks of FP_BLOCK hashed on the threads, then the block hashes in
   order (a serial XXH3 of the 670 MB of curves of a 2.1 M-voxel run took 0.11 s). */
enum { FP_BLOCK = 4 << 20 };
static uint64_t chain_parallel(uint64_t h, const void *p, size_t n, int threads) {
  const size_t nb = (n + FP_BLOCK - 1) / FP_BLOCK;
  if (nb < 2) return chain(h, p, n);
  uint64_t *bh = malloc(nb * sizeof *bh);
  if (!bh) return chain(h, p, n);
  int nth = threads > 0 ? threads : 1;
  (void)nth;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for schedule(static) num_threads(nth)
#endif
  for (size_t b = 0; b < nb; ++b) {
    size_t len = b + 1 < nb ? (size_t)FP_BLOCK : n - b * (size_t)FP_BLOCK;
    bh[b] = chain(0, (const unsigned char *)p + b * (size_t)FP_BLOCK, len);
  }
  h = chain(h, bh, nb * sizeof *bh);
  free(bh);
  return h;
}

static uint64_t fingerprint(const pipe_fit_job *job, int64_t chunk, const lumen_fit_results *r, int threads) {
  const lumen_fit_options *o = job->o;
  const int64_t nlist = job->nlist, nt = job->nt;
  const float *data = job->data, *consts = job->consts;
  const pipe_curves *src = job->src;
  uint64_t h = 0;
  int64_t head[6] = {o->model, nlist, nt, chunk, r->ci_lo != NULL, r->delay != NULL};
  h = chain(h, head, sizeof head);
  if (data) h = chain_parallel(h, data, sizeof(float) * (size_t)(nlist * nt), threads);
  else { /* the series the curves were converted in place in, and which of its voxels they are */
    h = chain_parallel(h, src->base, sizeof(float) * (size_t)(src->nvox * nt), threads);
    h = chain(h, src->list, sizeof(int64_t) * (size_t)nlist);
  }
  if (consts) h = chain(h, consts, sizeof(float) * (size_t)nlist * LUMEN_FIT_NCONSTS);
  h = chain(h, job->t_min, sizeof(double) * (size_t)nt);
  h = chain(h, job->cp, sizeof(double) * (size_t)nt);
  double num[4] = {o->tolerance, o->r1, (double)o->max_iterations, (double)o->force_cpu};
  int ints[5] = {o->fit_delay, (int)o->conv, (int)o->precision, o->confidence, (int)o->bounds_preset};
  h = chain(h, num, sizeof num);
  h = chain(h, ints, sizeof ints);
  h = chain(h, o->start, sizeof o->start);
  h = chain(h, o->lo, sizeof o->lo);
  h = chain(h, o->hi, sizeof o->hi);
  if (o->backend) h = chain(h, o->backend, strlen(o->backend));
  return h;
}

static int write_all(int fd, const void *p, size_t n) {
  const unsigned char *b = p;
  while (n) {
    ssize_t w = write(fd, b, n);
    if (w < 0) { if (errno == EINTR) continue; return -1; }
    b += w; n -= (size_t)w;
  }
  return 0;
}

static int read_all(int fd, void *p, size_t n) {
  unsigned char *b = p;
  while (n) {
    ssize_t r = read(fd, b, n);
    if (r < 0) { if (errno == EINTR) continue; return -1; }
    if (r == 0) return -1;
    b += r; n -= (size_t)r;
  }
  return 0;
}

static void add_counts(lumen_fit_results *res, const lumen_fit_results *c, int first) {
  const pipe_fit_piece piece = {c->curves_per_tier, c->state_counts, c->at_lower, c->at_upper, c->seconds,
                                c->backend_requested, c->backend_selected, c->backend_used, c->reason};
  pipe_add_fit_piece(res, &piece, first);
}

/* Test hook, in test builds only (LUMEN_TEST_HOOKS): LUMEN_TEST_ABORT_AFTER_CHUNK=K ends the
   process (_exit(75), as a kill would) right after the K-th checkpointed chunk of this process
   (counted over every model). */
#if LUMEN_TEST_HOOKS
static int g_chunks_written;
static void test_abort_hook(void) {
  const char *e = getenv("LUMEN_TEST_ABORT_AFTER_CHUNK");
  if (e && *e && ++g_chunks_written == atoi(e)) _exit(75);
}
#else
static void test_abort_hook(void) {}
#endif

/* ---- the checkpoint file (issue 15): never a link or another user's file
   A planted symbolic link (or FIFO, device, hard link) at the checkpoint's name must not be
   followed, truncated or written through. The previous file is only read (O_NOFOLLOW); the new one
   is created privately (O_EXCL under an unpredictable temporary name, mode 0600), filled with the
   usable records of the previous one and renamed over the name. */

/* LUMEN_OK when PATH is absent or a regular file, else a failure naming what is there. */
static lumen_status refuse_non_regular(lumen_ctx *ctx, const char *path) {
  struct stat sb;
  if (lstat(path, &sb) != 0 || S_ISREG(sb.st_mode)) return LUMEN_OK;
  return lumen_fail(ctx, LUMEN_ERR_IO,
                    "checkpoint '%s' is %s, not a regular file: lumen neither follows nor replaces it; remove it and "
                    "run again",
                    path, lumen_io_kind_name((unsigned)sb.st_mode));
}

/* Opens the previous checkpoint for reading (*fd = -1 when there is none). */
static lumen_status open_previous(lumen_ctx *ctx, const char *path, int *fd) {
  *fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (*fd < 0) {
    if (errno == ENOENT) return LUMEN_OK;
    if (errno == ELOOP) return refuse_non_regular(ctx, path);
    return lumen_fail(ctx, LUMEN_ERR_IO, "stage D: cannot read the checkpoint '%s': %s", path, strerror(errno));
  }
  struct stat sb;
  if (fstat(*fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(*fd);
    *fd = -1;
    return lumen_fail(ctx, LUMEN_ERR_IO, "checkpoint '%s' is %s, not a regular file: lumen does not read it; remove it",
                      path, lumen_io_kind_name((unsigned)sb.st_mode));
  }
  return LUMEN_OK;
}

/* A new private file in the checkpoint's folder: ".NAME.tmp-PID-TAG", as the atomic writer names
   its temporaries, so that a killed run's leftover is removed by the stale-temporary cleaner. */
static lumen_status create_private(lumen_ctx *ctx, const char *path, char *tmp, size_t size, int *fd) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  for (int attempt = 0; attempt < 8; ++attempt) {
    unsigned long long tag = 0;
    int rnd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (rnd < 0 || read(rnd, &tag, sizeof tag) != (ssize_t)sizeof tag) tag = (unsigned long long)time(NULL);
    if (rnd >= 0) close(rnd);
    tag ^= (unsigned long long)attempt << 56;
    snprintf(tmp, size, "%.*s.%s.tmp-%ld-%016llx", (int)(base - path), path, base, (long)getpid(), tag);
    *fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (*fd >= 0) return LUMEN_OK;
    if (errno != EEXIST) break;
  }
  return lumen_fail(ctx, LUMEN_ERR_IO, "stage D: cannot create the checkpoint '%s': %s", tmp, strerror(errno));
}

/* Copies the first n bytes of src (from its start) to dst. */
static int copy_prefix(int src, int dst, off_t n) {
  unsigned char buf[1 << 14];
  off_t done = 0;
  while (done < n) {
    size_t want = (size_t)(n - done < (off_t)sizeof buf ? n - done : (off_t)sizeof buf);
    ssize_t r = pread(src, buf, want, done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || write_all(dst, buf, (size_t)r)) return -1;
    done += r;
  }
  return 0;
}

/* The new checkpoint: a private file holding the first `good` bytes of the previous one (prev,
   may be -1), renamed over path; returns its descriptor, positioned at the end, in *fd. */
static lumen_status replace_checkpoint(lumen_ctx *ctx, const char *path, int prev, off_t good, int *fd) {
  char tmp[LUMEN_PIPE_PATH_MAX + 64];
  lumen_status st = create_private(ctx, path, tmp, sizeof tmp, fd);
  if (st != LUMEN_OK) return st;
  if ((prev >= 0 && good > 0 && copy_prefix(prev, *fd, good)) || fsync(*fd))
    st = lumen_fail(ctx, LUMEN_ERR_IO, "stage D: cannot write the checkpoint '%s': %s", tmp, strerror(errno));
  if (st == LUMEN_OK) st = refuse_non_regular(ctx, path); /* again, right before the rename */
  if (st == LUMEN_OK && rename(tmp, path) != 0)
    st = lumen_fail(ctx, LUMEN_ERR_IO, "stage D: cannot write the checkpoint '%s': %s", path, strerror(errno));
  if (st != LUMEN_OK) {
    unlink(tmp);
    close(*fd);
    *fd = -1;
  }
  return st;
}

lumen_status pipe_checkpoint_check(pipe_run *run, const lumen_model *models, int n) {
  char path[LUMEN_PIPE_PATH_MAX];
  lumen_status st = LUMEN_OK;
  for (int m = 0; m < n && st == LUMEN_OK; ++m) {
    ckpt_path(run, models[m], path, sizeof path);
    st = refuse_non_regular(run->ctx, path);
  }
  return st;
}

/* c: the slices of res's arrays from curve `start` on, with zeroed counts (one chunk's results). */
static void chunk_view(const lumen_fit_results *res, lumen_model model, int64_t start, lumen_fit_results *c) {
  *c = *res;
  ck_array a[16];
  int na = arrays_of(res, model, a);
  void **slots[10] = {(void **)&c->params, (void **)&c->state, (void **)&c->derived, (void **)&c->chi2,
                      (void **)&c->r2, (void **)&c->iterations, (void **)&c->ci_lo, (void **)&c->ci_hi,
                      (void **)&c->delay, (void **)&c->bound_mask};
  for (int i = 0; i < na && i < 10; ++i)
    *slots[i] = a[i].base ? (unsigned char *)a[i].base + (size_t)(start * a[i].per) * a[i].elem : NULL;
  memset(c->curves_per_tier, 0, sizeof c->curves_per_tier);
  memset(c->state_counts, 0, sizeof c->state_counts);
  memset(c->at_lower, 0, sizeof c->at_lower);
  memset(c->at_upper, 0, sizeof c->at_upper);
  c->seconds = 0;
}

lumen_status pipe_fit_chunked(pipe_run *run, const pipe_fit_job *job, lumen_fit_results *res) {
  const lumen_fit_plan *plan = job->plan;
  const int64_t nlist = job->nlist, nt = job->nt;
  const float *data = job->data, *consts = job->consts;
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  lumen_model model = job->o->model;
  int64_t chunk = cfg->chunk_voxels > 0 ? cfg->chunk_voxels : PIPE_CHUNK_DEFAULT;
  memset(res->curves_per_tier, 0, sizeof res->curves_per_tier);
  memset(res->state_counts, 0, sizeof res->state_counts);
  memset(res->at_lower, 0, sizeof res->at_lower);
  memset(res->at_upper, 0, sizeof res->at_upper);
  res->seconds = 0;
  if (nlist <= 0) return lumen_fit_execute(ctx, plan, nlist, data, consts, res);
  char path[LUMEN_PIPE_PATH_MAX];
  ckpt_path(run, model, path, sizeof path);
  /* the fingerprint hashes the 4 bytes x nlist x nt curves: computed only when a previous
     checkpoint is read or the first record is written (a fit that ends within a second needs
     neither) */
  uint64_t fp = 0;
  int have_fp = 0;
  size_t max_payload = pack(NULL, res, res, model, 0, chunk < nlist ? chunk : nlist);
  unsigned char *buf = malloc(max_payload);
  if (!buf)
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "stage D: out of host memory for a checkpoint of %zu bytes", max_payload);
  /* resume: load the good prefix of the previous file (read only) */
  int64_t done = 0;
  off_t good = 0;
  int loaded = 0, prev = -1, fd = -1;
  lumen_status st = pipe_before_write(run);
  if (st == LUMEN_OK && cfg->resume) st = open_previous(ctx, path, &prev);
  if (st == LUMEN_OK && prev >= 0) {
    fp = fingerprint(job, chunk, res, lumen_ctx_threads(ctx));
    have_fp = 1;
    ck_head h;
    while (done < nlist && read_all(prev, &h, sizeof h) == 0) {
      if (done == 0 && !memcmp(h.magic, CK_MAGIC_FNV, 8))
        lumen_log(ctx, LUMEN_LOG_WARNING, "stage D (%s): the checkpoint '%s' has the former format (FNV-1a "
                  "checksums): not used, fitting from the start", lumen_model_name(model), path);
      int64_t want = nlist - done < chunk ? nlist - done : chunk;
      if (memcmp(h.magic, CK_MAGIC, 8) || h.fingerprint != fp || h.start != done || h.count != want ||
          h.payload_bytes != pack(NULL, res, res, model, 0, want) || read_all(prev, buf, (size_t)h.payload_bytes) ||
          pipe_checksum_bytes(0, buf, (size_t)h.payload_bytes) != h.payload_xxh3)
        break;
      lumen_fit_results c;
      memset(&c, 0, sizeof c);
      unpack(buf, res, &c, model, done, want);
      add_counts(res, &c, done == 0);
      done += want;
      good = lseek(prev, 0, SEEK_CUR);
      ++loaded;
    }
    if (loaded)
      lumen_log(ctx, LUMEN_LOG_INFO, "stage D (%s): resumed: %lld of %lld voxels from the checkpoint '%s'",
                lumen_model_name(model), (long long)done, (long long)nlist, path);
  }
  /* a torn or foreign tail is left behind with the previous file */
  if (st == LUMEN_OK) st = replace_checkpoint(ctx, path, prev, good, &fd);
  if (prev >= 0) close(prev);
  /* Records are written once the fit has run a second (a fit that ends sooner is simply redone
     after a kill; it no longer pays a record per chunk), at once from the first chunk when --chunk
     was given (the caller asked for that granularity; the resume tests rely on it). fsync: at most
     once a second and after the last record. */
  const int eager = cfg->chunk_voxels > 0;
  const double t_fit = lumen_now_seconds();
  double synced = t_fit;
  /* the chunks fitted but not yet written, with their own results (counts, backend) */
  const int64_t max_pend = eager ? 1 : (nlist - done + chunk - 1) / chunk;
  lumen_fit_results *pend = malloc(sizeof *pend * (size_t)(max_pend > 0 ? max_pend : 1));
  int64_t npend = 0, first_pend = done;
  if (!pend) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "stage D: out of host memory for the checkpoint's chunks");
  while (st == LUMEN_OK && done < nlist) {
    int64_t count = nlist - done < chunk ? nlist - done : chunk;
    lumen_fit_results *c = &pend[npend];
    chunk_view(res, model, done, c);
    /* src: the curves read where they lie, frame-major in the converted series */
    /* the chunk's own progress (0..1) as its share of the model's bar */
    lumen_progress_scope_push(ctx, (double)done / (double)nlist, (double)count / (double)nlist, NULL);
    st = data ? lumen_fit_execute(ctx, plan, count, data + done * nt, consts ? consts + done * LUMEN_FIT_NCONSTS : NULL, c)
              : lumen_fit_execute_series(ctx, plan, count, job->src->base, job->src->list + done, job->src->nvox,
                                         consts ? consts + done * LUMEN_FIT_NCONSTS : NULL, c);
    lumen_progress_scope_pop(ctx);
    if (st != LUMEN_OK) break;
    add_counts(res, c, done == 0);
    done += count;
    ++npend;
    const double now = lumen_now_seconds();
    if (!eager && now - t_fit < 1.0) continue;
    if (!have_fp) {
      fp = fingerprint(job, chunk, res, lumen_ctx_threads(ctx));
      have_fp = 1;
    }
    for (int64_t j = 0, at = first_pend; st == LUMEN_OK && j < npend; ++j, at += chunk) {
      int64_t k = done - at < chunk ? done - at : chunk;
      ck_head h;
      memcpy(h.magic, CK_MAGIC, 8);
      h.fingerprint = fp;
      h.start = at;
      h.count = k;
      h.payload_bytes = pack(buf, res, &pend[j], model, at, k);
      h.payload_xxh3 = pipe_checksum_bytes(0, buf, (size_t)h.payload_bytes);
      if (write_all(fd, &h, sizeof h) || write_all(fd, buf, (size_t)h.payload_bytes))
        st = lumen_fail(ctx, LUMEN_ERR_IO, "stage D: cannot write the checkpoint '%s': %s", path, strerror(errno));
      if (st == LUMEN_OK && j + 1 < npend) test_abort_hook();
    }
    npend = 0;
    first_pend = done;
    if (st == LUMEN_OK && (done >= nlist || now - synced >= 1.0)) {
      if (fsync(fd))
        st = lumen_fail(ctx, LUMEN_ERR_IO, "stage D: cannot write the checkpoint '%s': %s", path, strerror(errno));
      synced = now;
    }
    if (st == LUMEN_OK) test_abort_hook();
  }
  free(pend);
  free(buf);
  if (fd >= 0 && close(fd) != 0 && st == LUMEN_OK)
    st = lumen_fail(ctx, LUMEN_ERR_IO, "stage D: cannot write the checkpoint '%s': %s", path, strerror(errno));
  return st;
}

void pipe_checkpoint_remove(pipe_run *run, const lumen_model *models, int n) {
  char path[LUMEN_PIPE_PATH_MAX];
  for (int m = 0; m < n; ++m) {
    ckpt_path(run, models[m], path, sizeof path);
    unlink(path);
  }
}

/* Removes the temporaries of killed runs (io_stale.c) from DIR. */
static void clean_dir(lumen_ctx *ctx, const char *dir) {
  int n = lumen_io_remove_stale_temporaries(dir);
  if (n > 0) lumen_log(ctx, LUMEN_LOG_INFO, "removed %d temporary file(s) left by a killed run in '%s'", n, dir);
}

void pipe_checkpoint_clean_tmp(pipe_run *run) {
  char fig[LUMEN_PIPE_PATH_MAX];
  clean_dir(run->ctx, run->out);
  pipe_join(fig, sizeof fig, run->out, "figures");
  clean_dir(run->ctx, fig);
}
