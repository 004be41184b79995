/* Reader / device workers / writer for a batch of images (lumen_dist_stages_run in
   src/scale/dist_internal.h): the reader reads ahead under a memory cap into the shared queue, one
   host thread per device takes the next image from it (a pipelining worker keeps up to three:
   the next one moving in, the current one computing, the previous one moving out), the writer
   writes the results in input order. Every item is charged from its read until it is written;
   the workers' reserves (pinned buffers) for the whole run. A failed item stops the batch as a
   serial run would: items before it are written, none after it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/internal.h"
#include "scale/dist_internal.h"

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
  int64_t *charge;        /* -1: not charged (never read, or released) */
  int64_t inflight, peak, stop_at, next; /* stop_at: the lowest failed item (n when none) */
  int64_t items;          /* items charged (read, not yet written or dropped) */
  int64_t reserved, item_max, est; /* est: the charge expected of the next item (the last one's) */
  int est_known;          /* an item has been read: est is a real charge */
  int over_limit, pipelined;
  int opening;            /* workers that have not charged their reserve yet (the reader waits) */
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
  if (r->charge[i] >= 0) {
    r->inflight -= r->charge[i];
    r->items--;
  }
  r->charge[i] = -1;
  pthread_cond_broadcast(&r->cv);
}


/* under mu: item i (already charged: charge(r, i, 0)) now holds bytes. */
static void recharge(run *r, int64_t i, int64_t bytes) {
  if (bytes < 0) bytes = 0;
  r->inflight += bytes - r->charge[i];
  r->charge[i] = bytes;
  if (bytes > r->item_max) r->item_max = bytes;
  if (r->inflight > r->peak) r->peak = r->inflight;
  if (r->limit > 0 && r->inflight > r->limit) r->over_limit = 1;
  pthread_cond_broadcast(&r->cv);
}

/* under mu: adds bytes held by an item (i >= 0) or a worker's reserve (i < 0) */
static void charge(run *r, int64_t i, int64_t bytes) {
  if (bytes < 0) bytes = 0;
  if (i >= 0) {
    r->charge[i] = 0;
    r->items++;
    recharge(r, i, bytes);
    return;
  }
  r->reserved += bytes;
  r->inflight += bytes;
  if (r->inflight > r->peak) r->peak = r->inflight;
  if (r->limit > 0 && r->inflight > r->limit) r->over_limit = 1;
}

/* under mu: waits until the next item (charge est) fits, or no item is in flight (one item
   always proceeds) or the batch stopped before item i. 1: go on. */
static int admit(run *r, int64_t i, int64_t est) {
  while (i <= r->stop_at && r->items > 0 && r->limit > 0 && r->inflight + est > r->limit)
    pthread_cond_wait(&r->cv, &r->mu);
  return i <= r->stop_at;
}

static void discard(run *r, void *data) {
  if (data && r->st->discard) r->st->discard(r->st->user, data);
}

/* ------------------------------------------------------------------ overlapped stages */

static void *reader_main(void *arg) {
  run *r = arg;
  pthread_mutex_lock(&r->mu); /* the workers' reserves count before the first item is read */
  while (r->opening > 0) pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
  for (int64_t i = 0; i < r->n; i++) {
    pthread_mutex_lock(&r->mu);
    int stop = !admit(r, i, r->est);
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
    charge(r, i, bytes);
    r->est = bytes > 0 ? bytes : 0;
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

/* ------------------------------------------------------------------ device workers */

typedef struct held {
  int64_t i; /* -1: none */
  void *data;
  int slot;
} held;

static const held no_item = {-1, NULL, 0};

/* 1 when item i comes after a failed item: released, marked dropped and discarded */
static int dropped(run *r, int64_t i, void *data) {
  pthread_mutex_lock(&r->mu);
  int skip = i > r->stop_at;
  if (skip) {
    r->slot[i] = SLOT_DROPPED;
    release(r, i);
  }
  pthread_mutex_unlock(&r->mu);
  if (skip) discard(r, data);
  return skip;
}

static void failed(run *r, int64_t i, lumen_status s, void *data) {
  pthread_mutex_lock(&r->mu);
  release(r, i);
  fail_item(r, i, s);
  pthread_mutex_unlock(&r->mu);
  discard(r, data);
}

static void done(run *r, int64_t i, void *data) { /* the result waits for the writer, still charged */
  pthread_mutex_lock(&r->mu);
  r->result[i] = data;
  r->slot[i] = SLOT_DONE;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

static lumen_status compute(run *r, const worker *w, int64_t i, void **data) {
  double t0 = now_s();
  lumen_status s = r->st->compute(r->st->user, w->id, r->devs->name[w->id], i, data);
  double dt = now_s() - t0;
  pthread_mutex_lock(&r->mu);
  r->compute_s += dt;
  r->per_worker[w->id]++;
  pthread_mutex_unlock(&r->mu);
  return s;
}

/* A pipelining worker takes an item: begin on the next input slot. */
static void take(run *r, const worker *w, item *it, held *h, int *in_slot) {
  int64_t i = it->i;
  void *data = it->data;
  free(it);
  *h = no_item;
  if (dropped(r, i, data)) return;
  lumen_status s = r->st->begin(r->st->user, w->id, i, *in_slot, &data);
  if (s != LUMEN_OK) {
    failed(r, i, s, data);
    return;
  }
  h->i = i;
  h->data = data;
  h->slot = *in_slot;
  *in_slot ^= 1;
}

static void finish_held(run *r, const worker *w, held *h) {
  if (h->i < 0) return;
  lumen_status s = r->st->finish(r->st->user, w->id, h->i, h->slot, &h->data);
  if (s != LUMEN_OK) failed(r, h->i, s, h->data);
  else if (!dropped(r, h->i, h->data)) done(r, h->i, h->data);
  *h = no_item;
}

/* begin(k+1), compute(k), end(k), finish(k-1): the transfers of k+1 and k-1 run while k computes
   (docs/SCALE.md); the previous item is finished before the worker waits for the queue. */
static void pipelined_loop(run *r, const worker *w) {
  held prev = no_item, cur = no_item, next = no_item;
  int in_slot = 0, out_slot = 0;
  for (;;) {
    if (cur.i < 0) {
      item *it = prev.i >= 0 ? lumen_dist_queue_try_pop(r->q, NULL) : NULL;
      if (!it) {
        finish_held(r, w, &prev);
        it = lumen_dist_queue_pop(r->q, NULL);
      }
      if (!it) break;
      take(r, w, it, &cur, &in_slot);
      continue;
    }
    item *it = lumen_dist_queue_try_pop(r->q, NULL);
    if (it) take(r, w, it, &next, &in_slot);
    if (!dropped(r, cur.i, cur.data)) {
      lumen_status s = compute(r, w, cur.i, &cur.data);
      if (s == LUMEN_OK) s = r->st->end(r->st->user, w->id, cur.i, out_slot, &cur.data);
      if (s != LUMEN_OK) {
        failed(r, cur.i, s, cur.data);
        cur = no_item;
      } else {
        cur.slot = out_slot;
        out_slot ^= 1;
      }
    } else {
      cur = no_item;
    }
    finish_held(r, w, &prev);
    prev = cur;
    cur = next;
    next = no_item;
  }
  finish_held(r, w, &prev);
}

static void plain_loop(run *r, const worker *w) {
  item *it;
  while ((it = lumen_dist_queue_pop(r->q, NULL)) != NULL) {
    int64_t i = it->i;
    void *data = it->data;
    free(it);
    if (dropped(r, i, data)) continue;
    lumen_status s = compute(r, w, i, &data);
    if (s != LUMEN_OK) failed(r, i, s, data);
    else done(r, i, data);
  }
}

static void *overlap_worker(void *arg) {
  worker *w = arg;
  run *r = w->r;
  const lumen_dist_stages *st = r->st;
  int64_t reserved = 0;
  int opened = st->open != NULL;
  int pipe = opened && st->open(st->user, w->id, r->devs->name[w->id], &reserved) && st->begin && st->end &&
             st->finish;
  if (reserved < 0 || !pipe) reserved = 0;
  pthread_mutex_lock(&r->mu);
  charge(r, -1, reserved);
  r->pipelined += pipe;
  r->opening--;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  if (pipe) pipelined_loop(r, w);
  else plain_loop(r, w);
  pthread_mutex_lock(&r->mu);
  r->inflight -= reserved;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  if (opened && st->close) st->close(st->user, w->id);
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
    /* the item counts as in flight from its admission (its bytes once read), so that another
       worker is not admitted past the limit while this one reads; before the first read the
       charge is unknown and taken as not fitting beside another item */
    pthread_mutex_lock(&r->mu);
    int64_t i = r->next++;
    int go = i < r->n && admit(r, i, r->est_known ? r->est : r->limit + 1);
    /* charged with the estimate while it is read: another worker must not be admitted beside it
       as if it held nothing (two items in flight under a limit that holds one) */
    if (go) charge(r, i, r->est_known ? r->est : 0);
    pthread_mutex_unlock(&r->mu);
    if (!go) break;
    void *data = NULL;
    int64_t bytes = 0;
    double t0 = now_s();
    lumen_status s = r->st->read(r->st->user, i, &data, &bytes);
    double t1 = now_s();
    if (s == LUMEN_OK) {
      pthread_mutex_lock(&r->mu);
      recharge(r, i, bytes);
      r->est = bytes > 0 ? bytes : 0;
      r->est_known = 1;
      pthread_mutex_unlock(&r->mu);
      s = compute(r, w, i, &data);
    }
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
    r->write_s += t3 - t2;
    release(r, i);
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
  for (int64_t k = 0; r.charge && k < n_items; k++) r.charge[k] = -1;
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
  r.opening = overlap ? nw : 0;
  for (int w = 0; w < nw; w++) {
    args[w].r = &r;
    args[w].id = w;
    started[w] = pthread_create(&th[w], NULL, overlap ? overlap_worker : serial_worker, &args[w]) == 0;
    any_worker |= started[w];
    if (overlap && !started[w]) {
      pthread_mutex_lock(&r.mu);
      r.opening--;
      pthread_mutex_unlock(&r.mu);
    }
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
    stats->reserved_bytes = r.reserved;
    stats->item_bytes = r.item_max;
    stats->over_limit = r.over_limit;
    stats->pipelined = r.pipelined;
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
