/* The pipelining device worker of src/scale/stages.c with the pinned double buffers of
   src/scale/xfer.c, on a fake device whose copies happen only when they are waited for (as a
   stream would do them later): a staging buffer refilled too early, or a result read before its
   download, gives wrong bytes. Checked: outputs equal the serial single-worker run bit for bit
   (1 and 2 "GPU" workers, mixed with a CPU worker, with a memory limit, with device
   out-of-memory on some uploads); the order begin(k+1) < compute(k) < finish(k-1) and the slot
   alternation; the pinned buffers charged against the limit; one item proceeds even when the
   pinned buffers and one item exceed the limit (reported); a failed item stops like a serial
   run. No GPU needed. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "scale/xfer.h"
#include "test_support.h"
#include "scale/dist_internal.h"

#define NIMG 24
#define NVOX 3000
#define MAXLOG 1024

/* ------------------------------------------------------------------ the fake device */

typedef struct copy {
  void *dst;
  const void *src;
  size_t bytes;
  int pending;
} copy;

typedef struct fake_dev {
  copy up[2], down[2];
} fake_dev;

static atomic_int fake_oom_every; /* > 0: every n-th device allocation fails */
static atomic_int fake_allocs;
static atomic_llong fake_pinned;

static void run_copy(copy *c) {
  if (c->pending) memcpy(c->dst, c->src, c->bytes);
  c->pending = 0;
}
static lumen_status f_create(lumen_ctx *ctx, int device, void **state) {
  (void)ctx, (void)device;
  *state = calloc(1, sizeof(fake_dev));
  return *state ? LUMEN_OK : LUMEN_ERR_OUT_OF_MEMORY;
}
static void f_destroy(void *state) {
  fake_dev *d = state;
  for (int s = 0; s < 2; s++) assert_int_equal(d->up[s].pending + d->down[s].pending, 0);
  free(state);
}
static lumen_status f_host_alloc(lumen_ctx *ctx, size_t bytes, void **out) {
  (void)ctx;
  *out = malloc(bytes);
  atomic_fetch_add(&fake_pinned, (long long)bytes);
  return *out ? LUMEN_OK : LUMEN_ERR_OUT_OF_MEMORY;
}
static void f_host_free(void *p) { free(p); }
static lumen_status f_alloc(lumen_ctx *ctx, void *state, size_t bytes, void **dev) {
  (void)state;
  int n = atomic_fetch_add(&fake_allocs, 1) + 1, every = atomic_load(&fake_oom_every);
  if (every > 0 && n % every == 0) {
    *dev = NULL;
    return lumen_fail(ctx, LUMEN_ERR_DEVICE_OUT_OF_MEMORY, "fake device: out of memory");
  }
  *dev = malloc(bytes);
  return *dev ? LUMEN_OK : LUMEN_ERR_OUT_OF_MEMORY;
}
static void f_free(void *state, void *dev) {
  (void)state;
  free(dev);
}
/* Queues the copy of a slot, run when it is waited for; the slot's last copy was waited for. */
static lumen_status queue_copy(copy *c, void *dst, const void *src, size_t bytes) {
  assert_int_equal(c->pending, 0);
  *c = (copy){dst, src, bytes, 1};
  return LUMEN_OK;
}
static lumen_status wait_copy(copy *c) {
  run_copy(c);
  return LUMEN_OK;
}
static lumen_status f_h2d(lumen_ctx *ctx, void *state, int slot, void *dev, const void *pinned, size_t bytes) {
  (void)ctx;
  return queue_copy(&((fake_dev *)state)->up[slot], dev, pinned, bytes);
}
static lumen_status f_d2h(lumen_ctx *ctx, void *state, int slot, void *pinned, const void *dev, size_t bytes) {
  (void)ctx;
  return queue_copy(&((fake_dev *)state)->down[slot], pinned, dev, bytes);
}
static lumen_status f_wait_h2d(lumen_ctx *ctx, void *state, int slot) {
  (void)ctx;
  return wait_copy(&((fake_dev *)state)->up[slot]);
}
static lumen_status f_wait_d2h(lumen_ctx *ctx, void *state, int slot) {
  (void)ctx;
  return wait_copy(&((fake_dev *)state)->down[slot]);
}
/* the op's stream waits for the upload: the copy lands before the op reads it */
static const lumen_dist_xfer_ops fake_ops = {f_create,    f_destroy, f_host_alloc, f_host_free, f_alloc, f_free,
                                             f_h2d,       f_wait_h2d, f_wait_h2d,  f_d2h,       f_wait_d2h};

/* ------------------------------------------------------------------ the batch */

enum { EV_BEGIN = 1, EV_COMPUTE, EV_END, EV_FINISH };

typedef struct ev {
  int kind, worker, slot;
  int64_t item;
} ev;

typedef struct job {
  float *in, *res;      /* host */
  float *dev_in, *dev_res;
  int in_slot, downloading;
  lumen_dist_xfer *x;
} job;

typedef struct tb {
  float *out[NIMG];
  lumen_dist_xfer *x[LUMEN_DIST_MAX_DEVICES];
  int64_t item_bytes;
  int fail_compute;
  int wait_reads; /* compute waits (up to 0.2 s) until the next two items were read */
  pthread_mutex_t mu;
  ev log[MAXLOG];
  int nlog;
  atomic_int alive, reads;
} tb;

static void note(tb *t, int kind, int worker, int64_t item, int slot) {
  pthread_mutex_lock(&t->mu);
  if (t->nlog < MAXLOG) t->log[t->nlog++] = (ev){kind, worker, slot, item};
  pthread_mutex_unlock(&t->mu);
}

/* A stage callback's start: its event noted, the job of *data. */
static job *noted_job(tb *t, int kind, int worker, int64_t item, int slot, void **data) {
  note(t, kind, worker, item, slot);
  return *data;
}

static float src_value(int64_t item, int v) { return (float)((item * 7919 + v * 104729) % 1000) * 0.5f; }

/* the "kernel": a 3-point blur plus the item's number */
static void kernel(const float *in, float *out, int64_t item) {
  for (int v = 0; v < NVOX; v++) {
    float l = in[v > 0 ? v - 1 : v], r = in[v < NVOX - 1 ? v + 1 : v];
    out[v] = (l + 2.0f * in[v] + r) * 0.25f + (float)item;
  }
}

static lumen_status t_read(void *user, int64_t i, void **data, int64_t *bytes) {
  tb *t = user;
  job *j = calloc(1, sizeof *j);
  j->in = malloc(NVOX * sizeof(float));
  for (int v = 0; v < NVOX; v++) j->in[v] = src_value(i, v);
  atomic_fetch_add(&t->alive, 1);
  atomic_fetch_add(&t->reads, 1);
  *data = j;
  *bytes = t->item_bytes;
  return LUMEN_OK;
}

static void t_discard(void *user, void *data) {
  tb *t = user;
  job *j = data;
  if (!j) return;
  lumen_dist_xfer_abandon(j->x, j->in_slot, j->dev_in);
  free(j->dev_res);
  free(j->in);
  free(j->res);
  free(j);
  atomic_fetch_sub(&t->alive, 1);
}

static lumen_status t_compute(void *user, int worker, const char *device, int64_t i, void **data) {
  tb *t = user;
  job *j = *data;
  (void)device;
  note(t, EV_COMPUTE, worker, i, -1);
  /* the reader has read the next items (up to 0.2 s: a limit may hold it back), and had the
     time to queue them: the worker's prefetch finds them */
  struct timespec ts = {0, 100000};
  for (int k = 0; t->wait_reads && k < 2000 && atomic_load(&t->reads) < (i + 3 < NIMG ? i + 3 : NIMG); k++) nanosleep(&ts, NULL);
  nanosleep(&ts, NULL);
  if (i == t->fail_compute) return lumen_fail(NULL, LUMEN_ERR_DEVICE, "injected failure");
  if (j->dev_in) { /* on the "device": the result stays there until end */
    assert_int_equal(lumen_dist_xfer_ready(NULL, j->x, j->in_slot), LUMEN_OK);
    j->dev_res = malloc(NVOX * sizeof(float));
    kernel(j->dev_in, j->dev_res, i);
    lumen_dist_xfer_release(j->x, j->dev_in);
    j->dev_in = NULL;
  } else { /* the CPU, or a device that had no memory for the upload */
    j->res = malloc(NVOX * sizeof(float));
    kernel(j->in, j->res, i);
  }
  return LUMEN_OK;
}

static lumen_status t_write(void *user, int64_t i, void *data) {
  tb *t = user;
  job *j = data;
  assert_non_null(j->res);
  assert_null(j->dev_res);
  t->out[i] = j->res;
  j->res = NULL;
  t_discard(t, j);
  return LUMEN_OK;
}

static int t_open(void *user, int worker, const char *device, int64_t *reserved) {
  tb *t = user;
  if (strncmp(device, "cuda", 4) != 0) return 0;
  assert_int_equal(lumen_dist_xfer_open(NULL, &fake_ops, 0, NVOX * sizeof(float), NVOX * sizeof(float), &t->x[worker]),
                   LUMEN_OK);
  *reserved = lumen_dist_xfer_pinned(t->x[worker]);
  return 1;
}

static void t_close(void *user, int worker) {
  tb *t = user;
  lumen_dist_xfer_close(t->x[worker]);
  t->x[worker] = NULL;
}

static lumen_status t_begin(void *user, int worker, int64_t i, int slot, void **data) {
  tb *t = user;
  job *j = noted_job(t, EV_BEGIN, worker, i, slot, data);
  void *dev = NULL;
  lumen_status s = lumen_dist_xfer_upload(NULL, t->x[worker], slot, j->in, NVOX * sizeof(float), &dev);
  if (s != LUMEN_OK || !dev) return s;
  memset(j->in, 0xff, NVOX * sizeof(float)); /* the host copy is no longer used */
  j->dev_in = dev;
  j->x = t->x[worker];
  j->in_slot = slot;
  return LUMEN_OK;
}

static lumen_status t_end(void *user, int worker, int64_t i, int slot, void **data) {
  tb *t = user;
  job *j = noted_job(t, EV_END, worker, i, slot, data);
  if (!j->dev_res) return LUMEN_OK;
  int queued = 0;
  lumen_status s = lumen_dist_xfer_download(NULL, t->x[worker], slot, j->dev_res, NVOX * sizeof(float), &queued);
  assert_int_equal(queued, 1);
  j->downloading = 1;
  return s;
}

static lumen_status t_finish(void *user, int worker, int64_t i, int slot, void **data) {
  tb *t = user;
  job *j = noted_job(t, EV_FINISH, worker, i, slot, data);
  if (!j->downloading) return LUMEN_OK;
  j->res = malloc(NVOX * sizeof(float));
  lumen_status s = lumen_dist_xfer_collect(NULL, t->x[worker], slot, j->res, NVOX * sizeof(float));
  free(j->dev_res);
  j->dev_res = NULL;
  j->downloading = 0;
  return s;
}

static lumen_status t_run(tb *t, const char *devices, int overlap, int64_t limit, lumen_dist_stage_stats *st) {
  for (int k = 0; k < NIMG; k++) {
    free(t->out[k]);
    t->out[k] = NULL;
  }
  t->nlog = 0;
  atomic_store(&t->reads, 0);
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_dist_devices d;
  assert_int_equal(lumen_dist_devices_expand(ctx, devices, 2, NULL, &d), LUMEN_OK);
  lumen_dist_stages stages = {t, t_read, t_compute, t_write, t_discard, t_open, t_begin, t_end, t_finish, t_close};
  atomic_store(&fake_pinned, 0);
  lumen_status s = lumen_dist_stages_run(ctx, &d, NIMG, overlap, limit, &stages, st);
  lumen_ctx_destroy(ctx);
  assert_int_equal(atomic_load(&t->alive), 0); /* everything read was written or discarded */
  return s;
}

static void tb_init(tb *t) {
  memset(t, 0, sizeof *t);
  pthread_mutex_init(&t->mu, NULL);
  t->item_bytes = 1000;
  t->fail_compute = -1;
}

static void tb_free(tb *t) {
  for (int k = 0; k < NIMG; k++) free(t->out[k]);
  pthread_mutex_destroy(&t->mu);
}

static void expect_reference(const tb *t) {
  float ref[NVOX], in[NVOX];
  for (int k = 0; k < NIMG; k++) {
    for (int v = 0; v < NVOX; v++) in[v] = src_value(k, v);
    kernel(in, ref, k);
    assert_non_null(t->out[k]);
    assert_memory_equal(t->out[k], ref, sizeof ref);
  }
}

/* the order of one worker's calls: begin < compute < end < finish per item; an input slot
   alternates per begin, an output slot per end; at most three items held; the transfers of
   the neighbours overlap the compute of an item at least once */
static void check_order(const tb *t, int worker, int overlapped) {
  int64_t pos[NIMG][5];
  for (int k = 0; k < NIMG; k++)
    for (int e = 0; e < 5; e++) pos[k][e] = -1;
  int last_in = -1, last_out = -1, held = 0, maxheld = 0, prefetched = 0, downloads = 0;
  for (int n = 0; n < t->nlog; n++) {
    const ev *e = &t->log[n];
    if (e->worker != worker) continue;
    pos[e->item][e->kind] = n;
    if (e->kind == EV_BEGIN) {
      if (last_in >= 0) assert_int_equal(e->slot, last_in ^ 1);
      last_in = e->slot;
      if (++held > maxheld) maxheld = held;
    } else if (e->kind == EV_END) {
      if (last_out >= 0) assert_int_equal(e->slot, last_out ^ 1);
      last_out = e->slot;
    } else if (e->kind == EV_FINISH) {
      held--;
    }
  }
  assert_true(maxheld <= 3);
  int64_t prev = -1;
  for (int n = 0; n < t->nlog; n++) {
    const ev *e = &t->log[n];
    if (e->worker != worker || e->kind != EV_COMPUTE) continue;
    int64_t k = e->item;
    assert_true(pos[k][EV_BEGIN] >= 0 && pos[k][EV_BEGIN] < pos[k][EV_COMPUTE]);
    assert_true(pos[k][EV_COMPUTE] < pos[k][EV_END] && pos[k][EV_END] < pos[k][EV_FINISH]);
    if (prev >= 0) {
      assert_true(pos[prev][EV_END] < pos[k][EV_COMPUTE]); /* k-1's download is queued first */
      downloads += pos[prev][EV_FINISH] > pos[k][EV_COMPUTE];  /* ... and collected after k ran */
    }
    for (int64_t m = 0; m < NIMG; m++) /* an item begun before k computed: its upload overlapped k */
      if (m != k && pos[m][EV_BEGIN] >= 0 && pos[m][EV_BEGIN] < pos[k][EV_COMPUTE] && pos[m][EV_COMPUTE] > pos[k][EV_COMPUTE])
        prefetched++;
    prev = k;
  }
  if (overlapped) { /* the queue had the next items: both transfers overlapped a compute */
    assert_true(prefetched > 0);
    assert_true(downloads > 0);
  }
}

static void pipelined_equals_serial(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  lumen_dist_stage_stats st;
  const int64_t pinned = 2 * 2 * NVOX * (int64_t)sizeof(float);
  /* no overlap: nothing pipelines */
  assert_int_equal(t_run(&t, "cuda:0", 0, 0, &st), LUMEN_OK);
  assert_int_equal(st.pipelined, 0);
  assert_int_equal(t.nlog, NIMG);
  expect_reference(&t);
  const char *lists[] = {"cuda:0", "cuda:0,cuda:1", "cuda:0,cpu"};
  t.wait_reads = 1;
  for (size_t l = 0; l < 3; l++) {
    assert_int_equal(t_run(&t, lists[l], 1, 0, &st), LUMEN_OK);
    expect_reference(&t);
    int gpus = l == 1 ? 2 : 1;
    assert_int_equal(st.pipelined, gpus);
    assert_int_equal(st.reserved_bytes, gpus * pinned);
    assert_int_equal(atomic_load(&fake_pinned), gpus * pinned);
    assert_true(st.peak_bytes >= st.reserved_bytes + t.item_bytes);
    check_order(&t, 0, 1);
  }
  t.wait_reads = 0;
  /* a limit: the pinned buffers count; at most (limit - pinned) / item items in flight */
  int64_t limit = pinned + 3 * t.item_bytes;
  assert_int_equal(t_run(&t, "cuda:0", 1, limit, &st), LUMEN_OK);
  expect_reference(&t);
  assert_true(st.peak_bytes <= limit);
  assert_int_equal(st.over_limit, 0);
  assert_int_equal(st.item_bytes, t.item_bytes);
  check_order(&t, 0, 0);
  /* a limit below the pinned buffers and one item: one item at a time, reported */
  assert_int_equal(t_run(&t, "cuda:0", 1, pinned / 2, &st), LUMEN_OK);
  expect_reference(&t);
  assert_int_equal(st.over_limit, 1);
  assert_int_equal(st.peak_bytes, pinned + t.item_bytes);
  /* the device out of memory for every third upload: those items compute from the host copy */
  atomic_store(&fake_oom_every, 3);
  assert_int_equal(t_run(&t, "cuda:0,cuda:1", 1, 0, &st), LUMEN_OK);
  expect_reference(&t);
  atomic_store(&fake_oom_every, 0);
  tb_free(&t);
}

static void pipelined_failure_stops_like_serial(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  lumen_dist_stage_stats st;
  const char *lists[] = {"cuda:0", "cuda:0,cuda:1"};
  for (size_t l = 0; l < 2; l++) {
    t.fail_compute = 7;
    assert_int_equal(t_run(&t, lists[l], 1, 0, &st), LUMEN_ERR_DEVICE);
    assert_int_equal(st.failed_item, 7);
    for (int k = 0; k < 7; k++) assert_non_null(t.out[k]);
    for (int k = 7; k < NIMG; k++) assert_null(t.out[k]);
  }
  tb_free(&t);
}

/* the queue's non-blocking pop */
static void queue_try_pop(void **state) {
  (void)state;
  lumen_dist_queue *q = NULL;
  assert_int_equal(lumen_dist_queue_create(NULL, 4, 0, &q), LUMEN_OK);
  int a = 1;
  assert_null(lumen_dist_queue_try_pop(q, NULL));
  lumen_dist_queue_push(q, &a, 5);
  int64_t b = 0;
  assert_ptr_equal(lumen_dist_queue_try_pop(q, &b), &a);
  assert_int_equal(b, 5);
  lumen_dist_queue_close(q);
  assert_null(lumen_dist_queue_try_pop(q, NULL));
  lumen_dist_queue_free(q);
}

/* the scratch estimate: known ops from the table, unknown ones generous */
static void scratch_estimate(void **state) {
  (void)state;
  const int64_t n = 1024 * 1024, f = 4 * n;
  assert_int_equal(lumen_dist_op_scratch("filter", "gamma", n, 4), 0);
  assert_int_equal(lumen_dist_op_scratch("filter", "gaussian", n, 2), 2 * 1048576);
  assert_int_equal(lumen_dist_op_scratch("filter", "sauvola", n, 1), 5 * f);
  assert_int_equal(lumen_dist_op_scratch("segment", "febds", n, 1), 9 * f / 4);
  assert_int_equal(lumen_dist_op_scratch("filter", "no_such_op", n, 1), 4 * f + 2 * 1048576);
  assert_int_equal(lumen_dist_op_scratch("filter", "gaussian", 16, 8), 2 * 64); /* rings <= 2 F */
  assert_int_equal(lumen_dist_op_scratch("segment", "grail", n, 1), 25 * f); /* its 18 responses count */
  assert_int_equal(lumen_dist_op_scratch("segment", "grail", INT64_MAX / 1024 + 1, 1), INT64_MAX); /* saturates */
}

LUMEN_TEST_MAIN(cmocka_unit_test(pipelined_equals_serial),
                cmocka_unit_test(pipelined_failure_stops_like_serial),
                cmocka_unit_test(queue_try_pop),
                cmocka_unit_test(scratch_estimate))
