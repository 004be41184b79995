/* Host logic of the cuda fitting tier (see fit_cuda.h): the shared work queue over one or more
   devices (one host thread each), chunk sizing from free device memory, halving on allocation
   failure, giving the rest to the next tier, and the fake device + fault injection used by the
   unit tests on machines without a GPU. Plain C: it runs the same against real and fake devices.
   Staging curves in and results out (lumen_fitcu_gather/deliver): fit_cuda_staging.c. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fit/fit_cuda.h"
#include "fit/fit_internal.h"
#include "lumen_build_config.h"

/* ------------------------------------------------------------------ test hooks */
static pthread_mutex_t hook_mu = PTHREAD_MUTEX_INITIALIZER;
static lumen_fitcu_fake fake_cfg;  /* devices == 0: off */
static int hook_fail_next;
static int64_t hook_fail_above;
static int hook_fail_kernel;       /* k-th chunk from now; 0 = never */
static int hook_chunks_seen;
static int64_t hook_max_chunk;
static int stat_alloc_failures, stat_chunks;
static int64_t stat_smallest;

void lumen_fitcu_test_set_fake(const lumen_fitcu_fake *fake) {
  pthread_mutex_lock(&hook_mu);
  if (fake) fake_cfg = *fake;
  else memset(&fake_cfg, 0, sizeof fake_cfg);
  pthread_mutex_unlock(&hook_mu);
}

void lumen_fitcu_test_fail_allocs(int fail_next, int64_t fail_above_bytes) {
  pthread_mutex_lock(&hook_mu);
  hook_fail_next = fail_next > 0 ? fail_next : 0;
  hook_fail_above = fail_above_bytes > 0 ? fail_above_bytes : 0;
  pthread_mutex_unlock(&hook_mu);
}

void lumen_fitcu_test_fail_kernel(int kth_chunk) {
  pthread_mutex_lock(&hook_mu);
  hook_fail_kernel = kth_chunk > 0 ? kth_chunk : 0;
  hook_chunks_seen = 0;
  pthread_mutex_unlock(&hook_mu);
}

void lumen_fitcu_test_max_chunk(int64_t max_chunk) {
  pthread_mutex_lock(&hook_mu);
  hook_max_chunk = max_chunk > 0 ? max_chunk : 0;
  pthread_mutex_unlock(&hook_mu);
}

void lumen_fitcu_test_stats(int *alloc_failures, int64_t *smallest_chunk, int *chunks_run) {
  pthread_mutex_lock(&hook_mu);
  if (alloc_failures) *alloc_failures = stat_alloc_failures;
  if (smallest_chunk) *smallest_chunk = stat_smallest;
  if (chunks_run) *chunks_run = stat_chunks;
  pthread_mutex_unlock(&hook_mu);
}

/* 1 when the injected faults say this allocation fails */
static int injected_alloc_failure(int64_t bytes) {
  int fail = 0;
  pthread_mutex_lock(&hook_mu);
  if (hook_fail_next > 0) {
    hook_fail_next--;
    fail = 1;
  } else if (hook_fail_above > 0 && bytes > hook_fail_above) {
    fail = 1;
  }
  pthread_mutex_unlock(&hook_mu);
  return fail;
}

static int injected_kernel_failure(void) {
  int fail = 0;
  pthread_mutex_lock(&hook_mu);
  hook_chunks_seen++;
  if (hook_fail_kernel > 0 && hook_chunks_seen == hook_fail_kernel) fail = 1;
  pthread_mutex_unlock(&hook_mu);
  return fail;
}

/* ------------------------------------------------------------------ the fake device */
/* It stages the curves as a GPU would (lumen_fitcu_gather into its own buffers), computes each
   row with the CPU solver from the caller's data, and reports the solver's time as kernel time. */
typedef struct fake_handle {
  const lumen_fitcu_input *in;
  size_t row, crow;          /* bytes of one curve / one curve's constants */
  int64_t chunk;
  int64_t first[2], count[2];
  lumen_fitcu_row *rows[2];
  unsigned char *stage[2], *cstage[2];
  double busy_s;
} fake_handle;

static int fake_device_count(char *why, size_t why_size) {
  (void)why;
  (void)why_size;
  return fake_cfg.devices;
}

static int fake_supports(int dev, const lumen_fitcu_problem *pb, char *why, size_t why_size) {
  (void)dev;
  (void)pb;
  (void)why;
  (void)why_size;
  return 1;
}

static lumen_status fake_open(int dev, const lumen_fitcu_problem *pb, const lumen_fitcu_input *in, void **handle,
                              int64_t *free_bytes, char *why, size_t why_size) {
  (void)dev;
  fake_handle *h = calloc(1, sizeof *h);
  if (!h || !in->cpu_row) {
    free(h);
    snprintf(why, why_size, "fake device: %s", h ? "no CPU solver to stand in" : "out of memory");
    return LUMEN_ERR_DEVICE;
  }
  h->in = in;
  h->row = (size_t)pb->n * (in->data_f64 ? sizeof(double) : sizeof(float));
  h->crow = in->consts ? LUMEN_FIT_NCONSTS * (in->data_f64 ? sizeof(double) : sizeof(float)) : 0;
  *free_bytes = fake_cfg.free_bytes > 0 ? fake_cfg.free_bytes : ((int64_t)1 << 30);
  *handle = h;
  return LUMEN_OK;
}

static void fake_bytes(void *handle, int64_t *per_curve, int64_t *fixed) {
  const fake_handle *h = handle;
  *per_curve = 2 * ((int64_t)sizeof(lumen_fitcu_row) + (int64_t)h->row + (int64_t)h->crow);
  *fixed = 4096;
}

static lumen_status fake_alloc(void *handle, int64_t chunk, char *why, size_t why_size) {
  fake_handle *h = handle;
  (void)why;
  (void)why_size;
  for (int s = 0; s < 2; ++s) {
    free(h->rows[s]);
    free(h->stage[s]);
    free(h->cstage[s]);
    h->rows[s] = calloc((size_t)chunk, sizeof(lumen_fitcu_row));
    h->stage[s] = malloc((size_t)chunk * h->row);
    h->cstage[s] = h->crow ? malloc((size_t)chunk * h->crow) : NULL;
    if (!h->rows[s] || !h->stage[s] || (h->crow && !h->cstage[s])) {
      snprintf(why, why_size, "fake device: out of host memory");
      return LUMEN_ERR_DEVICE_OUT_OF_MEMORY;
    }
  }
  h->chunk = chunk;
  return LUMEN_OK;
}

static lumen_status fake_submit(void *handle, int slot, int64_t first, int64_t count, char *why, size_t why_size) {
  fake_handle *h = handle;
  (void)why;
  (void)why_size;
  h->first[slot] = first;
  h->count[slot] = count;
  lumen_fitcu_gather(h->in, first, count, h->stage[slot], h->row, h->cstage[slot], h->crow);
  double t0 = lumen_now_seconds();
  for (int64_t i = 0; i < count; ++i) h->in->cpu_row(h->in->user, first + i, &h->rows[slot][i]);
  h->busy_s += lumen_now_seconds() - t0;
  return LUMEN_OK;
}

static lumen_status fake_finish(void *handle, int slot, char *why, size_t why_size) {
  fake_handle *h = handle;
  (void)why;
  (void)why_size;
  lumen_fitcu_deliver(h->in, h->first[slot], h->count[slot], h->rows[slot]);
  h->count[slot] = 0;
  return LUMEN_OK;
}

static double fake_kernel_seconds(void *handle) { return ((const fake_handle *)handle)->busy_s; }

static void fake_close(void *handle) {
  fake_handle *h = handle;
  if (!h) return;
  for (int s = 0; s < 2; ++s) {
    free(h->rows[s]);
    free(h->stage[s]);
    free(h->cstage[s]);
  }
  free(h);
}

static const lumen_fitcu_ops fake_ops = {fake_device_count, fake_supports, fake_open,   fake_bytes,
                                         fake_alloc,        fake_submit,   fake_finish, fake_kernel_seconds,
                                         fake_close};

static const lumen_fitcu_ops *current_ops(void) {
  pthread_mutex_lock(&hook_mu);
  int fake = fake_cfg.devices > 0;
  pthread_mutex_unlock(&hook_mu);
  return fake ? &fake_ops : lumen_fitcu_real_ops();
}

/* ------------------------------------------------------------------ device lists */
int lumen_fitcu_parse_devices(const char *request, int *devices, int max) {
  if (!request || strncmp(request, "cuda", 4) != 0) return 0;
  const char *s = request + 4;
  if (*s == 0) return 0;
  if (*s != ':') return 0;
  ++s;
  if (strcmp(s, "all") == 0) {
    devices[0] = -1;
    return 1;
  }
  int n = 0;
  while (*s) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || v < 0 || v >= LUMEN_FITCU_MAX_DEVICES || n >= max) return -1;
    for (int i = 0; i < n; ++i)
      if (devices[i] == (int)v) return -1;
    devices[n++] = (int)v;
    s = end;
    if (*s == ',') {
      ++s;
      if (!*s) return -1;
    } else if (*s) {
      return -1;
    }
  }
  return n > 0 ? n : -1;
}

/* expands the plan's list (-1 = all) against the device count */
static int expand_devices(const int *devices, int ndev, int count, int *out) {
  int n = 0;
  if (ndev <= 0) {
    if (count > 0) out[n++] = 0;
    return n;
  }
  if (devices[0] < 0) {
    for (int d = 0; d < count && d < LUMEN_FITCU_MAX_DEVICES; ++d) out[n++] = d;
    return n;
  }
  for (int i = 0; i < ndev; ++i)
    if (devices[i] < count) out[n++] = devices[i];
  return n;
}

int lumen_fitcu_available(const lumen_fitcu_problem *pb, const int *devices, int ndev, char *why, size_t why_size) {
  const lumen_fitcu_ops *ops = current_ops();
  char r[256] = "";
  int count = ops->device_count(r, sizeof r);
  if (count <= 0) {
    snprintf(why, why_size, "no device: %s", r[0] ? r : "none found");
    return 0;
  }
  int list[LUMEN_FITCU_MAX_DEVICES];
  int n = expand_devices(devices, ndev, count, list);
  if (n == 0) {
    snprintf(why, why_size, "no requested device among the %d present", count);
    return 0;
  }
  for (int i = 0; i < n; ++i)
    if (!ops->supports(list[i], pb, r, sizeof r)) {
      snprintf(why, why_size, "cuda:%d: %s", list[i], r);
      return 0;
    }
  return 1;
}

/* ------------------------------------------------------------------ the run */
typedef struct run_shared {
  const lumen_fitcu_ops *ops;
  const lumen_fitcu_problem *pb;
  const lumen_fitcu_input *in;
  unsigned char *fail;
  pthread_mutex_t mu;
  int64_t next;              /* next position to hand out */
  int64_t done;              /* curves delivered */
  int64_t chunk_cap;
  double kernel_s;           /* summed over devices (under mu) */
  char *note;
  size_t note_size;
} run_shared;

typedef struct dev_thread {
  run_shared *sh;
  int dev;
  int ndev;
} dev_thread;

static void note_add(run_shared *sh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_add(run_shared *sh, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pthread_mutex_lock(&sh->mu);
  size_t len = strlen(sh->note);
  if (len + 1 < sh->note_size) vsnprintf(sh->note + len, sh->note_size - len, fmt, ap);
  pthread_mutex_unlock(&sh->mu);
  va_end(ap);
}

static int64_t take(run_shared *sh, int64_t chunk, int64_t *first) {
  pthread_mutex_lock(&sh->mu);
  int64_t left = sh->in->count - sh->next, got = left < chunk ? left : chunk;
  *first = sh->next;
  sh->next += got;
  pthread_mutex_unlock(&sh->mu);
  return got;
}

static void mark_failed(run_shared *sh, int64_t first, int64_t count) {
  for (int64_t i = 0; i < count; ++i) sh->fail[first + i] = 1;
}

static void *device_worker(void *arg) {
  dev_thread *dt = arg;
  run_shared *sh = dt->sh;
  const lumen_fitcu_ops *ops = sh->ops;
  char why[300] = "";
  void *h = NULL;
  int64_t free_b = 0;
  lumen_status st = ops->open(dt->dev, sh->pb, sh->in, &h, &free_b, why, sizeof why);
  if (st != LUMEN_OK) {
    note_add(sh, "; cuda:%d unusable (%s)", dt->dev, why);
    return NULL;
  }
  int64_t per = 0, fixed = 0;
  ops->bytes(h, &per, &fixed);
  if (per < 1) per = 1;
  /* chunk: half the free memory, within [MIN, MAX] and the cap, and about 1/8 of a device's share
     of the work (at least PIPE_MIN curves): the host stages chunk k+1 and delivers chunk k-1 while
     the kernel of chunk k runs, so several chunks per device keep both sides busy, and with several
     devices they keep the shared queue balanced */
  int64_t budget = free_b / 2 - fixed;
  int64_t chunk = budget > 0 ? budget / per : LUMEN_FITCU_MIN_CHUNK;
  const int64_t per_dev = (sh->in->count + dt->ndev - 1) / dt->ndev;
  int64_t share = (per_dev + 7) / 8;
  if (share < LUMEN_FITCU_PIPE_MIN) share = per_dev < LUMEN_FITCU_PIPE_MIN ? per_dev : LUMEN_FITCU_PIPE_MIN;
  if (chunk > share) chunk = share;
  if (chunk > LUMEN_FITCU_MAX_CHUNK) chunk = LUMEN_FITCU_MAX_CHUNK;
  if (sh->chunk_cap > 0 && chunk > sh->chunk_cap) chunk = sh->chunk_cap;
  if (chunk < LUMEN_FITCU_MIN_CHUNK) chunk = LUMEN_FITCU_MIN_CHUNK;
  /* buffers, halving on failure (one note per device: the reasons are long) */
  const int64_t chunk0 = chunk;
  int nfail = 0;
  for (;;) {
    int64_t bytes = fixed + per * chunk;
    if (injected_alloc_failure(bytes)) {
      snprintf(why, sizeof why, "injected allocation failure of %lld bytes", (long long)bytes);
      st = LUMEN_ERR_DEVICE_OUT_OF_MEMORY;
    } else {
      st = ops->alloc(h, chunk, why, sizeof why);
    }
    if (st == LUMEN_OK) break;
    nfail++;
    pthread_mutex_lock(&hook_mu);
    stat_alloc_failures++;
    pthread_mutex_unlock(&hook_mu);
    if (st != LUMEN_ERR_DEVICE_OUT_OF_MEMORY || chunk <= LUMEN_FITCU_MIN_CHUNK) {
      note_add(sh, "; cuda:%d: %s at a chunk of %lld curves (%d allocation failure(s) from %lld), giving up the device",
               dt->dev, why, (long long)chunk, nfail, (long long)chunk0);
      ops->close(h);
      return NULL;
    }
    chunk /= 2;
    if (chunk < LUMEN_FITCU_MIN_CHUNK) chunk = LUMEN_FITCU_MIN_CHUNK;
  }
  if (nfail > 0)
    note_add(sh, "; cuda:%d: %d allocation failure(s) (last: %s), chunk halved from %lld to %lld curves", dt->dev,
             nfail, why, (long long)chunk0, (long long)chunk);
  pthread_mutex_lock(&hook_mu);
  if (stat_smallest == 0 || chunk < stat_smallest) stat_smallest = chunk;
  pthread_mutex_unlock(&hook_mu);
  /* two slots: submit one while the other computes, finish the older one */
  int64_t first[2] = {0, 0}, cnt[2] = {0, 0};
  int slot = 0, broken = 0;
  for (;;) {
    int64_t f0 = 0, c0 = broken ? 0 : take(sh, chunk, &f0);
    if (cnt[slot] > 0) { /* the slot we are about to reuse */
      st = ops->finish(h, slot, why, sizeof why);
      if (st != LUMEN_OK && !broken) {
        note_add(sh, "; cuda:%d: %s, %lld curves rerun on the next tier", dt->dev, why, (long long)cnt[slot]);
        broken = 1;
      }
      if (st != LUMEN_OK) mark_failed(sh, first[slot], cnt[slot]);
      cnt[slot] = 0;
    }
    if (c0 == 0) {
      if (cnt[slot ^ 1] == 0) break;
      slot ^= 1;
      continue;
    }
    if (broken) { /* taken after the failure: not run here */
      mark_failed(sh, f0, c0);
      continue;
    }
    pthread_mutex_lock(&hook_mu);
    stat_chunks++;
    pthread_mutex_unlock(&hook_mu);
    if (injected_kernel_failure()) {
      snprintf(why, sizeof why, "injected kernel error");
      st = LUMEN_ERR_DEVICE;
    } else {
      st = ops->submit(h, slot, f0, c0, why, sizeof why);
    }
    if (st != LUMEN_OK) {
      note_add(sh, "; cuda:%d: %s, %lld curves rerun on the next tier", dt->dev, why, (long long)c0);
      mark_failed(sh, f0, c0);
      broken = 1;
      continue;
    }
    first[slot] = f0;
    cnt[slot] = c0;
    slot ^= 1;
  }
  double ks = ops->kernel_seconds(h);
  pthread_mutex_lock(&sh->mu);
  sh->kernel_s += ks;
  pthread_mutex_unlock(&sh->mu);
  ops->close(h);
  return NULL;
}

lumen_status lumen_fitcu_run(lumen_ctx *ctx, const lumen_fitcu_problem *pb, const int *devices, int ndev,
                             const lumen_fitcu_input *in, unsigned char *fail, char *note, size_t note_size) {
  (void)ctx;
  const lumen_fitcu_ops *ops = current_ops();
  for (int64_t i = 0; i < in->count; ++i) fail[i] = 0;
  pthread_mutex_lock(&hook_mu);
  stat_alloc_failures = 0;
  stat_chunks = 0;
  stat_smallest = 0;
  int64_t cap = hook_max_chunk;
  if (fake_cfg.devices > 0 && fake_cfg.max_chunk > 0 && (cap == 0 || fake_cfg.max_chunk < cap)) cap = fake_cfg.max_chunk;
  pthread_mutex_unlock(&hook_mu);
  char r[256] = "";
  int count = ops->device_count(r, sizeof r);
  int list[LUMEN_FITCU_MAX_DEVICES];
  int n = count > 0 ? expand_devices(devices, ndev, count, list) : 0;
  run_shared sh = {
      .ops = ops, .pb = pb, .in = in, .fail = fail, .chunk_cap = cap, .note = note, .note_size = note_size};
  /* the host threads are shared out over the devices' threads */
  lumen_fitcu_input local = *in;
  local.threads = n > 1 ? in->threads / n : in->threads;
  if (local.threads < 1) local.threads = 1;
  sh.in = &local;
  pthread_mutex_init(&sh.mu, NULL);
  dev_thread dts[LUMEN_FITCU_MAX_DEVICES];
  pthread_t th[LUMEN_FITCU_MAX_DEVICES];
  int started[LUMEN_FITCU_MAX_DEVICES] = {0};
  for (int i = 0; i < n; ++i) {
    dts[i].sh = &sh;
    dts[i].dev = list[i];
    dts[i].ndev = n;
  }
  if (n == 1) {
    device_worker(&dts[0]);
  } else {
    for (int i = 0; i < n; ++i) started[i] = pthread_create(&th[i], NULL, device_worker, &dts[i]) == 0;
    for (int i = 0; i < n; ++i)
      if (!started[i]) device_worker(&dts[i]); /* no thread: run it here */
    for (int i = 0; i < n; ++i)
      if (started[i]) pthread_join(th[i], NULL);
  }
  if (n == 0) note_add(&sh, "; cuda: no device (%s)", r[0] ? r : "none");
  /* whatever no device took reruns on the next tier */
  if (sh.next < in->count) {
    mark_failed(&sh, sh.next, in->count - sh.next);
    note_add(&sh, "; %d device(s) gave up: %lld curves left to the next tier", n, (long long)(in->count - sh.next));
  }
  if (in->kernel_seconds) *in->kernel_seconds += sh.kernel_s;
  pthread_mutex_destroy(&sh.mu);
  return LUMEN_OK;
}

/* ------------------------------------------------------------------ the plan, flattened */
void lumen_fitcu_problem_from_plan(const lumen_fit_plan *pl, int want, lumen_fitcu_problem *pb) {
  memset(pb, 0, sizeof *pb);
  pb->model = (int)pl->model;
  pb->n = pl->n;
  pb->np = pl->np;
  pb->f64 = lumen_fit_solves_f64(pl);
  pb->conv = pl->g64.conv;
  pb->tr = pl->opts.tr;
  pb->r1 = pl->opts.r1;
  pb->t = pl->t64;
  pb->cp = lumen_model_is_dce(pl->model) ? pl->cp64 : NULL;
  pb->w = pl->opts.weights ? pl->w64 : NULL;
  for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) {
    pb->lo[k] = pl->lo[k];
    pb->hi[k] = pl->hi[k];
    pb->start[k] = pl->start[k];
    pb->fixed[k] = pl->fixed[k];
    pb->start_given[k] = pl->start_given[k];
  }
  pb->has_linear_start = pl->has_linear_start;
  pb->n_extra_starts = pl->n_extra_starts;
  pb->n_escape_starts = pl->n_escape_starts;
  memcpy(pb->extra_starts, pl->extra_starts, sizeof pb->extra_starts);
  memcpy(pb->escape_starts, pl->escape_starts, sizeof pb->escape_starts);
  pb->tol = pl->opts.tolerance;
  pb->max_iterations = pl->opts.max_iterations;
  pb->want = want;
  int m = 0;
  for (int k = 0; k < pl->np; ++k) m += !pl->fixed[k];
  pb->t975 = pl->n - m >= 1 ? lumen_fit_t975(pl->n - m) : 0.0;
}
