/* src/scale devices and stages: device lists ("cpu,cpu", "cuda:all" with and without GPUs), the
   GPU of an MPI rank, and the reader / device workers / writer executor: a batch of Gaussian
   filters on 1, 2 and 3 workers (with and without overlap, with a failing "GPU" worker that
   falls back per image) equals the 1-worker result bit for bit; a failed item stops the batch
   like a serial run; --memory-limit caps the items in flight. No GPU needed. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "filter/filter_internal.h"
#include "test_support.h"
#include "scale/dist_internal.h"

/* ------------------------------------------------------------------ device lists */

static void device_lists(void **state) {
  lumen_ctx *ctx = *state;
  lumen_dist_devices d;
  char buf[256];
  assert_int_equal(lumen_dist_devices_expand(ctx, "cpu", 0, NULL, &d), LUMEN_OK);
  assert_int_equal(d.n, 1);
  assert_int_equal(d.n_cpu, 1);
  assert_int_equal(d.fell_back, 0);
  assert_int_equal(lumen_dist_devices_expand(ctx, "cpu,cpu,cpu", 0, NULL, &d), LUMEN_OK);
  assert_int_equal(d.n, 3);
  assert_int_equal(d.n_cpu, 3);
  assert_int_equal(lumen_dist_devices_expand(ctx, "cuda,cuda:1,cpu", 0, NULL, &d), LUMEN_OK);
  lumen_dist_devices_format(&d, buf, sizeof buf);
  assert_string_equal(buf, "cuda:0,cuda:1,cpu");
  assert_int_equal(d.n_cpu, 1);
  /* cuda:all with 3 GPUs: one worker each */
  assert_int_equal(lumen_dist_devices_expand(ctx, "cuda:all", 3, "3 usable", &d), LUMEN_OK);
  lumen_dist_devices_format(&d, buf, sizeof buf);
  assert_string_equal(buf, "cuda:0,cuda:1,cuda:2");
  assert_int_equal(d.fell_back, 0);
  assert_string_equal(d.reason, "");
  /* cuda:all without a GPU: the CPU, with the reason */
  assert_int_equal(lumen_dist_devices_expand(ctx, "cuda:all", 0, "cudaErrorNoDevice", &d), LUMEN_OK);
  lumen_dist_devices_format(&d, buf, sizeof buf);
  assert_string_equal(buf, "cpu");
  assert_int_equal(d.fell_back, 1);
  assert_non_null(strstr(d.reason, "no usable CUDA device (cudaErrorNoDevice)"));
  /* the probing form on this build: never an error */
  assert_int_equal(lumen_dist_devices_parse(ctx, "cuda:all", &d), LUMEN_OK);
  assert_true(d.n >= 1);
  if (d.fell_back) assert_string_equal(d.name[0], "cpu");
  const char *bad[] = {"", "gpu", "cpu,", ",cpu", "cpu,,cpu", "cuda:x", "cuda:-1", "cpu;cpu"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(lumen_dist_devices_expand(ctx, bad[i], 0, NULL, &d), LUMEN_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(lumen_ctx_last_error(ctx), "expected a comma-separated list of cpu, cuda, cuda:N or cuda:all"));
  }
  assert_non_null(strstr((lumen_dist_devices_expand(ctx, "cpu,tpu", 0, NULL, &d), lumen_ctx_last_error(ctx)), "'tpu'"));
  char many[4096] = "cpu";
  for (int k = 1; k < LUMEN_DIST_MAX_DEVICES + 1; k++) strcat(many, ",cpu");
  assert_int_equal(lumen_dist_devices_expand(ctx, many, 0, NULL, &d), LUMEN_ERR_INVALID_ARGUMENT);
}

static void rank_device(void **state) {
  (void)state;
  /* several GPUs: local rank mod count, for auto / cuda / unset */
  assert_int_equal(lumen_dist_rank_device(0, 4, "auto"), 0);
  assert_int_equal(lumen_dist_rank_device(5, 4, NULL), 1);
  assert_int_equal(lumen_dist_rank_device(3, 2, "cuda"), 1);
  assert_int_equal(lumen_dist_rank_device(7, 8, ""), 7);
  /* one or no GPU: keep the default */
  assert_int_equal(lumen_dist_rank_device(3, 1, "cuda"), -1);
  assert_int_equal(lumen_dist_rank_device(1, 0, "auto"), -1);
  /* an explicit device list or a CPU tier is the user's choice */
  assert_int_equal(lumen_dist_rank_device(1, 2, "cuda:1"), -1);
  assert_int_equal(lumen_dist_rank_device(1, 2, "cuda:all"), -1);
  assert_int_equal(lumen_dist_rank_device(1, 2, "standard"), -1);
  assert_int_equal(lumen_dist_rank_device(-1, 2, "auto"), -1);
  /* the node-local rank: the launcher's variable when built with MPI, else the rank itself */
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
  assert_int_equal(lumen_dist_local_rank(9), lumen_dist_have_mpi() ? 3 : 9);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "x", 1);
  unsetenv("MPI_LOCALRANKID");
  unsetenv("PMI_LOCAL_RANK");
  unsetenv("SLURM_LOCALID");
  assert_int_equal(lumen_dist_local_rank(9), 9); /* unusable value: the world rank */
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
}

/* ------------------------------------------------------------------ the executor on filters */

#define NIMG 11
typedef struct gbatch {
  lumen_image *src[NIMG];
  lumen_image *out[NIMG];
  lumen_ctx *wctx[LUMEN_DIST_MAX_DEVICES];
  lumen_filter_report rep[NIMG];
  int fail_read, fail_compute, fail_write;  /* item index, -1 = none */
  atomic_int alive, max_alive, reads, computes, writes, discards;
  int64_t bytes;                            /* per item; 0 = the image's */
} gbatch;

static void alive_add(gbatch *g, int d) {
  int a = atomic_fetch_add(&g->alive, d) + d;
  int m = atomic_load(&g->max_alive);
  while (a > m && !atomic_compare_exchange_weak(&g->max_alive, &m, a)) {}
}

static lumen_status g_read(void *user, int64_t i, void **data, int64_t *bytes) {
  gbatch *g = user;
  atomic_fetch_add(&g->reads, 1);
  if (i == g->fail_read) return LUMEN_ERR_IO;
  lumen_image *im = NULL;
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_status s = lumen_image_clone(ctx, g->src[i], &im);
  lumen_ctx_destroy(ctx);
  if (s != LUMEN_OK) return s;
  alive_add(g, 1);
  *data = im;
  *bytes = g->bytes ? g->bytes : 2 * lumen_image_nbytes(im);
  return LUMEN_OK;
}

static lumen_status g_compute(void *user, int worker, const char *device, int64_t i, void **data) {
  gbatch *g = user;
  atomic_fetch_add(&g->computes, 1);
  if (i == g->fail_compute) return LUMEN_ERR_INVALID_ARGUMENT;
  lumen_gaussian_opts o;
  lumen_gaussian_opts_init(&o);
  o.sigma = 1.7;
  o.mode = LUMEN_BOUNDARY_REFLECT;
  o.exec.device = device;
  o.exec.report = &g->rep[i];
  lumen_image *res = NULL;
  lumen_status s = lumen_filter_gaussian(g->wctx[worker], *data, &o, &res);
  lumen_image_free(*data);
  *data = res;
  return s;
}

static lumen_status g_write(void *user, int64_t i, void *data) {
  gbatch *g = user;
  atomic_fetch_add(&g->writes, 1);
  alive_add(g, -1);
  if (i == g->fail_write) {
    lumen_image_free(data);
    return LUMEN_ERR_IO;
  }
  g->out[i] = data;
  return LUMEN_OK;
}

static void g_discard(void *user, void *data) {
  gbatch *g = user;
  atomic_fetch_add(&g->discards, 1);
  alive_add(g, -1);
  lumen_image_free(data);
}

static void g_init(gbatch *g) {
  memset(g, 0, sizeof *g);
  g->fail_read = g->fail_compute = g->fail_write = -1;
  lumen_ctx *ctx = lumen_test_ctx();
  int64_t dims[2] = {57, 43};
  for (int k = 0; k < NIMG; k++) {
    assert_int_equal(lumen_image_create(ctx, 2, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &g->src[k]), LUMEN_OK);
    float *p = lumen_image_data(g->src[k]);
    uint32_t x = 2463534242u + (uint32_t)k * 7919u;
    for (int64_t v = 0; v < dims[0] * dims[1]; v++) {
      x ^= x << 13; x ^= x >> 17; x ^= x << 5;
      p[v] = (float)(x % 100000) * 0.01f;
    }
  }
  lumen_ctx_destroy(ctx);
  for (int w = 0; w < LUMEN_DIST_MAX_DEVICES; w++) g->wctx[w] = NULL;
}

static void g_free(gbatch *g) {
  for (int k = 0; k < NIMG; k++) {
    lumen_image_free(g->src[k]);
    lumen_image_free(g->out[k]);
    g->out[k] = NULL;
  }
  for (int w = 0; w < LUMEN_DIST_MAX_DEVICES; w++) lumen_ctx_destroy(g->wctx[w]);
}

static lumen_status g_run(gbatch *g, const char *devices, int overlap, int64_t limit, lumen_dist_stage_stats *st) {
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_dist_devices d;
  assert_int_equal(lumen_dist_devices_expand(ctx, devices, 0, NULL, &d), LUMEN_OK);
  for (int w = 0; w < d.n; w++)
    if (!g->wctx[w]) {
      g->wctx[w] = lumen_test_ctx();
      lumen_ctx_set_threads(g->wctx[w], 1 + w % 2); /* results must not depend on it */
    }
  for (int k = 0; k < NIMG; k++) {
    lumen_image_free(g->out[k]);
    g->out[k] = NULL;
  }
  atomic_store(&g->alive, 0);
  atomic_store(&g->max_alive, 0);
  lumen_dist_stages stages = {.user = g, .read = g_read, .compute = g_compute, .write = g_write, .discard = g_discard};
  lumen_status s = lumen_dist_stages_run(ctx, &d, NIMG, overlap, limit, &stages, st);
  lumen_ctx_destroy(ctx);
  assert_int_equal(atomic_load(&g->alive), 0); /* everything read was written or discarded */
  return s;
}

static lumen_status gpu_fails(lumen_ctx *ctx, lf_call *call) {
  (void)call;
  return lumen_fail(ctx, LUMEN_ERR_DEVICE_OUT_OF_MEMORY, "injected device failure");
}

static void same_as_one_worker(void **state) {
  (void)state;
  gbatch ref, g;
  g_init(&ref);
  lumen_dist_stage_stats st;
  assert_int_equal(g_run(&ref, "cpu", 0, 0, &st), LUMEN_OK);
  assert_int_equal(st.written, NIMG);
  assert_int_equal(st.failed_item, -1);
  g_init(&g);
  /* a "GPU" worker whose device always fails: the dispatch reruns each image on the CPU */
  lf_impl prev = lumen_filter_test_set_cuda_hook(LF_OP_GAUSSIAN, gpu_fails);
  const char *lists[] = {"cpu", "cpu,cpu", "cpu,cpu,cpu", "cuda:0,cpu", "cuda:0,cuda:1,cpu"};
  for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++)
    for (int overlap = 0; overlap <= 1; overlap++)
      for (int lim = 0; lim <= 1; lim++) {
        int64_t limit = lim ? 3 * 2 * 57 * 43 * 4 : 0;
        assert_int_equal(g_run(&g, lists[l], overlap, limit, &st), LUMEN_OK);
        assert_int_equal(st.written, NIMG);
        int64_t sum = 0;
        for (int w = 0; w < LUMEN_DIST_MAX_DEVICES; w++) sum += st.per_worker[w];
        assert_int_equal(sum, NIMG);
        for (int k = 0; k < NIMG; k++) {
          assert_non_null(g.out[k]);
          assert_int_equal(lumen_image_nbytes(g.out[k]), lumen_image_nbytes(ref.out[k]));
          assert_memory_equal(lumen_image_const_data(g.out[k]), lumen_image_const_data(ref.out[k]),
                              (size_t)lumen_image_nbytes(ref.out[k]));
          assert_int_equal(g.rep[k].used.kind, LUMEN_DEVICE_CPU);
          if (g.rep[k].requested.kind == LUMEN_DEVICE_CUDA) {
            assert_int_equal(g.rep[k].fell_back, 1);
            assert_non_null(strstr(g.rep[k].reason, "injected device failure"));
          }
        }
        if (lim && overlap) assert_true(st.peak_bytes <= limit);
      }
  lumen_filter_test_set_cuda_hook(LF_OP_GAUSSIAN, prev);
  g_free(&g);
  g_free(&ref);
}

/* a failed item: the items before it are written, none after it (overlap: in input order) */
static void failure_stops_like_serial(void **state) {
  (void)state;
  gbatch g;
  g_init(&g);
  const char *lists[] = {"cpu", "cpu,cpu", "cpu,cpu,cpu"};
  for (int kind = 0; kind < 3; kind++)
    for (size_t l = 0; l < 3; l++)
      for (int overlap = 0; overlap <= 1; overlap++) {
        g.fail_read = kind == 0 ? 4 : -1;
        g.fail_compute = kind == 1 ? 4 : -1;
        g.fail_write = kind == 2 ? 4 : -1;
        lumen_dist_stage_stats st;
        lumen_status s = g_run(&g, lists[l], overlap, 0, &st);
        assert_int_equal(s, kind == 1 ? LUMEN_ERR_INVALID_ARGUMENT : LUMEN_ERR_IO);
        assert_int_equal(st.failed_item, 4);
        for (int k = 0; k < 4; k++) assert_non_null(g.out[k]);
        assert_null(g.out[4]);
        if (overlap || l == 0)
          for (int k = 5; k < NIMG; k++) assert_null(g.out[k]);
      }
  g_free(&g);
}

/* --memory-limit: the items read and not yet written stay within the limit */
static void memory_limit_caps_in_flight(void **state) {
  (void)state;
  gbatch g;
  g_init(&g);
  g.bytes = 1000;
  lumen_dist_stage_stats st;
  assert_int_equal(g_run(&g, "cpu,cpu,cpu", 1, 2500, &st), LUMEN_OK);
  assert_true(st.peak_bytes <= 2500);
  assert_true(atomic_load(&g.max_alive) <= 2);
  /* a limit below one item: one at a time, never stuck */
  assert_int_equal(g_run(&g, "cpu,cpu", 1, 10, &st), LUMEN_OK);
  assert_int_equal(st.peak_bytes, 1000);
  assert_int_equal(atomic_load(&g.max_alive), 1);
  assert_int_equal(st.written, NIMG);
  /* no limit: read-ahead is bounded by the queue (2 per worker) plus the items computing */
  assert_int_equal(g_run(&g, "cpu", 1, 0, &st), LUMEN_OK);
  assert_true(st.peak_bytes >= 1000);
  g_free(&g);
  /* bad arguments */
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_dist_devices d;
  memset(&d, 0, sizeof d);
  lumen_dist_stages none = {.user = NULL};
  assert_int_equal(lumen_dist_stages_run(ctx, &d, 1, 1, 0, &none, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_dist_devices_expand(ctx, "cpu", 0, NULL, &d), LUMEN_OK);
  assert_int_equal(lumen_dist_stages_run(ctx, &d, 1, 1, 0, &none, NULL), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "read, compute and write are required"));
  lumen_ctx_destroy(ctx);
}

LUMEN_TEST_MAIN(LUMEN_TEST_WITH_CTX(device_lists),
                cmocka_unit_test(rank_device),
                cmocka_unit_test(same_as_one_worker),
                cmocka_unit_test(failure_stops_like_serial),
                cmocka_unit_test(memory_limit_caps_in_flight))
