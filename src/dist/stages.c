/* Reader / device workers / writer for a batch of images (lumen_dist_stages_run in
   include/lumen/dist.h): the reader reads ahead under a memory cap into the shared queue, one
   host thread per device takes the next image from it, the writer writes the results in input
   order. A failed item stops the batch as a serial run would: items before it are written,
   none after it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/internal.h"
#include "lumen/dist.h"

enum { SLOT_PENDING = 0, SLOT_DONE, SLOT_FAILED, SLOT_DROPPED };

typedef struct run {
  const lumen_dist_stages *st;
  const lumen_dist_devices *devs;
  int64_t n, limit;
  lumen_dist_queue *q;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* guarded by mu */
  unsigned char *slot;
  void **result;
  int64_t *charge;
  int64_t inflight, peak, stop_at, next; /* stop_at: the lowest failed item (n when none) */
  lumen_status status;
  double read_s, compute_s, write_s;
  int64_t written, per_worker[LUMEN_DIST_MAX_DEVICES];
} run;

typedef struct item {
  int64_t i;
  void *data;
} item;

typedef struct worker {
  run *r;
  int id;
} worker;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* under mu */
static void fail_item(run *r, int64_t i, lumen_status s) {
  r->slot[i] = SLOT_FAILED;
  if (i < r->stop_at) {
    r->stop_at = i;
    r->status = s;
  }
  pthread_cond_broadcast(&r->cv);
}

static void release(run *r, int64_t i) { /* under mu */
  r->inflight -= r->charge[i];
  r->charge[i] = 0;
  pthread_cond_broadcast(&r->cv);
}

static void discard(run *r, void *data) {
  if (data && r->st->discard) r->st->discard(r->st->user, data);
}

/* ------------------------------------------------------------------ overlapped stages */

static void *reader_main(void *arg) {
  run *r = arg;
  int64_t est = 0;
  for (int64_t i = 0; i < r->n; i++) {
    pthread_mutex_lock(&r->mu);
    while (i <= r->stop_at && r->inflight > 0 && r->limit > 0 && r->inflight + est > r->limit)
      pthread_cond_wait(&r->cv, &r->mu);
    int stop = i > r->stop_at;
    pthread_mutex_unlock(&r->mu);
    if (stop) break;
    void *data = NULL;
    int64_t bytes = 0;
    double t0 = now_s();
    lumen_status s = r->st->read(r->st->user, i, &data, &bytes);
    double dt = now_s() - t0;
    pthread_mutex_lock(&r->mu);
    r->read_s += dt;
    if (s != LUMEN_OK) {
      fail_item(r, i, s);
      pthread_mutex_unlock(&r->mu);
      discard(r, data);
      break;
    }
    if (bytes < 0) bytes = 0;
    r->charge[i] = bytes;
    r->inflight += bytes;
    if (r->inflight > r->peak) r->peak = r->inflight;
    est = bytes;
    pthread_mutex_unlock(&r->mu);
    item *it = malloc(sizeof *it);
    if (!it) {
      pthread_mutex_lock(&r->mu);
      release(r, i);
      fail_item(r, i, LUMEN_ERR_OUT_OF_MEMORY);
      pthread_mutex_unlock(&r->mu);
      discard(r, data);
      break;
    }
    it->i = i;
    it->data = data;
    lumen_dist_queue_push(r->q, it, 0);
  }
  lumen_dist_queue_close(r->q);
  return NULL;
}

static void *overlap_worker(void *arg) {
  worker *w = arg;
  run *r = w->r;
  item *it;
  while ((it = lumen_dist_queue_pop(r->q, NULL)) != NULL) {
    int64_t i = it->i;
    void *data = it->data;
    free(it);
    pthread_mutex_lock(&r->mu);
    int skip = i > r->stop_at;
    if (skip) {
      r->slot[i] = SLOT_DROPPED;
      release(r, i);
    }
    pthread_mutex_unlock(&r->mu);
    if (skip) {
      discard(r, data);
      continue;
    }
    double t0 = now_s();
    lumen_status s = r->st->compute(r->st->user, w->id, r->devs->name[w->id], i, &data);
    double dt = now_s() - t0;
    pthread_mutex_lock(&r->mu);
    r->compute_s += dt;
    r->per_worker[w->id]++;
    if (s != LUMEN_OK) {
      release(r, i);
      fail_item(r, i, s);
    } else {
      r->result[i] = data;
      r->slot[i] = SLOT_DONE;
      data = NULL;
      pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    discard(r, data);
  }
  return NULL;
}

/* the writer: items in input order, until the end or the first failed item */
static void write_in_order(run *r) {
  for (int64_t k = 0; k < r->n; k++) {
    pthread_mutex_lock(&r->mu);
    while (r->slot[k] == SLOT_PENDING && k <= r->stop_at) pthread_cond_wait(&r->cv, &r->mu);
    if (r->slot[k] != SLOT_DONE || k > r->stop_at) {
      pthread_mutex_unlock(&r->mu);
      return;
    }
    void *data = r->result[k];
    r->result[k] = NULL;
    pthread_mutex_unlock(&r->mu);
    double t0 = now_s();
    lumen_status s = r->st->write(r->st->user, k, data);
    double dt = now_s() - t0;
    pthread_mutex_lock(&r->mu);
    r->write_s += dt;
    release(r, k);
    if (s != LUMEN_OK) fail_item(r, k, s);
    else r->written++;
    pthread_mutex_unlock(&r->mu);
    if (s != LUMEN_OK) return;
  }
}

/* ------------------------------------------------------------------ without overlap */

static void *serial_worker(void *arg) {
  worker *w = arg;
  run *r = w->r;
  for (;;) {
    pthread_mutex_lock(&r->mu);
    int64_t i = r->next++;
    int stop = i >= r->n || i > r->stop_at;
    pthread_mutex_unlock(&r->mu);
    if (stop) break;
    void *data = NULL;
    int64_t bytes = 0;
    double t0 = now_s();
    lumen_status s = r->st->read(r->st->user, i, &data, &bytes);
    double t1 = now_s();
    if (s == LUMEN_OK) s = r->st->compute(r->st->user, w->id, r->devs->name[w->id], i, &data);
    double t2 = now_s();
    int wrote = 0;
    if (s == LUMEN_OK) {
      s = r->st->write(r->st->user, i, data);
      data = NULL;
      wrote = s == LUMEN_OK;
    }
    double t3 = now_s();
    pthread_mutex_lock(&r->mu);
    r->read_s += t1 - t0;
    r->compute_s += t2 - t1;
    r->write_s += t3 - t2;
    r->per_worker[w->id]++;
    if (bytes > r->peak) r->peak = bytes;
    if (wrote) r->written++;
    if (s != LUMEN_OK) fail_item(r, i, s);
    pthread_mutex_unlock(&r->mu);
    discard(r, data);
  }
  return NULL;
}

/* ------------------------------------------------------------------ the run */

lumen_status lumen_dist_stages_run(lumen_ctx *ctx, const lumen_dist_devices *devs, int64_t n_items, int overlap,
                                   int64_t memory_limit, const lumen_dist_stages *stages,
                                   lumen_dist_stage_stats *stats) {
  if (stats) {
    memset(stats, 0, sizeof *stats);
    stats->failed_item = -1;
  }
  if (!devs || devs->n < 1 || devs->n > LUMEN_DIST_MAX_DEVICES)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_dist_stages_run: devs has %d workers, expected 1..%d",
                      devs ? devs->n : 0, LUMEN_DIST_MAX_DEVICES);
  if (!stages || !stages->read || !stages->compute || !stages->write || n_items < 0)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "lumen_dist_stages_run: read, compute and write are required and n_items >= 0");
  run r;
  memset(&r, 0, sizeof r);
  r.st = stages;
  r.devs = devs;
  r.n = n_items;
  r.limit = memory_limit > 0 ? memory_limit : 0;
  r.stop_at = n_items;
  r.status = LUMEN_OK;
  size_t cnt = n_items > 0 ? (size_t)n_items : 1;
  r.slot = calloc(cnt, 1);
  r.result = calloc(cnt, sizeof *r.result);
  r.charge = calloc(cnt, sizeof *r.charge);
  int nw = devs->n;
  pthread_t th[LUMEN_DIST_MAX_DEVICES + 1];
  worker args[LUMEN_DIST_MAX_DEVICES];
  int started[LUMEN_DIST_MAX_DEVICES + 1] = {0};
  lumen_status st = LUMEN_OK;
  if (!r.slot || !r.result || !r.charge) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dist_stages_run: out of memory");
  if (st == LUMEN_OK && overlap &&
      lumen_dist_queue_create(ctx, 2 * (int64_t)nw, 0, &r.q) != LUMEN_OK)
    st = LUMEN_ERR_OUT_OF_MEMORY;
  if (st != LUMEN_OK) {
    free(r.slot);
    free(r.result);
    free(r.charge);
    return st;
  }
  pthread_mutex_init(&r.mu, NULL);
  pthread_cond_init(&r.cv, NULL);
  double t0 = now_s();
  int any_worker = 0;
  for (int w = 0; w < nw; w++) {
    args[w].r = &r;
    args[w].id = w;
    started[w] = pthread_create(&th[w], NULL, overlap ? overlap_worker : serial_worker, &args[w]) == 0;
    any_worker |= started[w];
  }
  if (overlap && any_worker) started[nw] = pthread_create(&th[nw], NULL, reader_main, &r) == 0;
  int all_up = any_worker && (!overlap || started[nw]);
  if (!all_up) { /* stop everything: the workers see a closed queue or stop_at = -1 */
    pthread_mutex_lock(&r.mu);
    r.stop_at = -1;
    r.status = lumen_fail(ctx, LUMEN_ERR_INTERNAL, "lumen_dist_stages_run: could not start the worker threads");
    pthread_mutex_unlock(&r.mu);
    if (overlap) lumen_dist_queue_close(r.q);
  } else if (overlap) {
    write_in_order(&r);
  }
  for (int w = 0; w <= nw; w++)
    if (started[w]) pthread_join(th[w], NULL);
  /* results computed but not written (after a failure) */
  for (int64_t k = 0; k < n_items; k++) discard(&r, r.result[k]);
  if (overlap) {
    item *it;
    while ((it = lumen_dist_queue_pop(r.q, NULL)) != NULL) {
      discard(&r, it->data);
      free(it);
    }
    lumen_dist_queue_free(r.q);
  }
  st = r.status;
  if (st == LUMEN_OK && r.written < n_items)
    st = lumen_fail(ctx, LUMEN_ERR_INTERNAL, "lumen_dist_stages_run: %lld of %lld items written",
                    (long long)r.written, (long long)n_items);
  if (stats) {
    stats->wall_s = now_s() - t0;
    stats->read_s = r.read_s;
    stats->compute_s = r.compute_s;
    stats->write_s = r.write_s;
    stats->peak_bytes = r.peak;
    stats->written = r.written;
    stats->failed_item = r.stop_at >= 0 && r.stop_at < n_items ? r.stop_at : -1;
    memcpy(stats->per_worker, r.per_worker, sizeof r.per_worker);
  }
  pthread_mutex_destroy(&r.mu);
  pthread_cond_destroy(&r.cv);
  free(r.slot);
  free(r.result);
  free(r.charge);
  return st;
}
