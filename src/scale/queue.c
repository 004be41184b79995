/* The shared work queue (worker threads over a batch of items) and a bounded FIFO for
   reader -> compute -> writer stages (src/scale/dist_internal.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "core/internal.h"
#include "scale/dist_internal.h"

typedef struct pool {
  lumen_dist_item_fn fn;
  void *user;
  int64_t n;
  atomic_llong next;
  atomic_int stop;
  pthread_mutex_t mu;
  lumen_status first;
} pool;

typedef struct worker_arg {
  pool *p;
  int id;
} worker_arg;

static void *worker_main(void *a) {
  worker_arg *w = a;
  pool *p = w->p;
  while (!atomic_load(&p->stop)) {
    long long i = atomic_fetch_add(&p->next, 1);
    if (i >= p->n) break;
    lumen_status st = p->fn(p->user, w->id, (int64_t)i);
    if (st != LUMEN_OK) {
      pthread_mutex_lock(&p->mu);
      if (p->first == LUMEN_OK) p->first = st;
      pthread_mutex_unlock(&p->mu);
      atomic_store(&p->stop, 1);
    }
  }
  return NULL;
}

lumen_status lumen_dist_pool_run(lumen_ctx *ctx, int n_workers, int64_t n_items, lumen_dist_item_fn fn, void *user) {
  if (!fn || n_items < 0) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_dist_pool_run: no function or n_items < 0");
  if (n_workers < 1) n_workers = 1;
  if (n_workers > n_items) n_workers = n_items > 0 ? (int)n_items : 1;
  pool p;
  p.fn = fn; p.user = user; p.n = n_items; p.first = LUMEN_OK;
  atomic_init(&p.next, 0);
  atomic_init(&p.stop, 0);
  pthread_mutex_init(&p.mu, NULL);
  worker_arg *args = calloc((size_t)n_workers, sizeof *args);
  pthread_t *th = calloc((size_t)n_workers, sizeof *th);
  if (!args || !th) { free(args); free(th); pthread_mutex_destroy(&p.mu); return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory"); }
  int started = 0;
  for (int w = 1; w < n_workers; ++w) {
    args[w].p = &p; args[w].id = w;
    if (pthread_create(&th[w], NULL, worker_main, &args[w]) != 0) break;
    started = w;
  }
  args[0].p = &p; args[0].id = 0;
  worker_main(&args[0]);
  for (int w = 1; w <= started; ++w) pthread_join(th[w], NULL);
  free(args); free(th);
  pthread_mutex_destroy(&p.mu);
  return p.first;
}

typedef struct qnode {
  void *item;
  int64_t bytes;
  struct qnode *next;
} qnode;

struct lumen_dist_queue {
  pthread_mutex_t mu;
  pthread_cond_t not_full, not_empty;
  qnode *head, *tail;
  int64_t items, bytes, max_items, max_bytes, peak;
  int closed;
};

lumen_status lumen_dist_queue_create(lumen_ctx *ctx, int64_t max_items, int64_t max_bytes, lumen_dist_queue **out) {
  *out = calloc(1, sizeof **out);
  if (!*out) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory");
  lumen_dist_queue *q = *out;
  q->max_items = max_items > 0 ? max_items : 1;
  q->max_bytes = max_bytes > 0 ? max_bytes : INT64_MAX;
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->not_full, NULL);
  pthread_cond_init(&q->not_empty, NULL);
  return LUMEN_OK;
}

void lumen_dist_queue_push(lumen_dist_queue *q, void *item, int64_t bytes) {
  qnode *nd = malloc(sizeof *nd);
  pthread_mutex_lock(&q->mu);
  while (!q->closed && q->items > 0 && (q->items >= q->max_items || q->bytes + bytes > q->max_bytes))
    pthread_cond_wait(&q->not_full, &q->mu);
  if (nd) {
    nd->item = item; nd->bytes = bytes; nd->next = NULL;
    if (q->tail) q->tail->next = nd; else q->head = nd;
    q->tail = nd;
    q->items++;
    q->bytes += bytes;
    if (q->bytes > q->peak) q->peak = q->bytes;
  }
  pthread_cond_signal(&q->not_empty);
  pthread_mutex_unlock(&q->mu);
}

static void *pop_locked(lumen_dist_queue *q, int wait, int64_t *bytes) {
  pthread_mutex_lock(&q->mu);
  while (wait && !q->head && !q->closed) pthread_cond_wait(&q->not_empty, &q->mu);
  void *item = NULL;
  int64_t b = 0;
  if (q->head) {
    qnode *nd = q->head;
    q->head = nd->next;
    if (!q->head) q->tail = NULL;
    item = nd->item; b = nd->bytes;
    q->items--;
    q->bytes -= b;
    free(nd);
    pthread_cond_broadcast(&q->not_full);
  }
  pthread_mutex_unlock(&q->mu);
  if (bytes) *bytes = b;
  return item;
}

void *lumen_dist_queue_pop(lumen_dist_queue *q, int64_t *bytes) { return pop_locked(q, 1, bytes); }

void *lumen_dist_queue_try_pop(lumen_dist_queue *q, int64_t *bytes) { return pop_locked(q, 0, bytes); }

void lumen_dist_queue_close(lumen_dist_queue *q) {
  pthread_mutex_lock(&q->mu);
  q->closed = 1;
  pthread_cond_broadcast(&q->not_empty);
  pthread_cond_broadcast(&q->not_full);
  pthread_mutex_unlock(&q->mu);
}

int64_t lumen_dist_queue_peak_bytes(const lumen_dist_queue *q) { return q->peak; }

void lumen_dist_queue_free(lumen_dist_queue *q) {
  if (!q) return;
  while (q->head) { qnode *nd = q->head; q->head = nd->next; free(nd); }
  pthread_mutex_destroy(&q->mu);
  pthread_cond_destroy(&q->not_full);
  pthread_cond_destroy(&q->not_empty);
  free(q);
}
