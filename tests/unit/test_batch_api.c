/* The public image batch (include/lumen/batch.h, lumen_batch_run): every result equals the op
   called on its image alone, for library ops by name over arrays and for caller callbacks, with
   overlap on and off, a memory limit that forces one image at a time, one and two CPU workers
   and "auto"; the item values (Otsu thresholds, label counts); failures (a read failing at item k
   writes the items before it and returns the read's status with its message), cancellation, and
   the argument errors. No GPU needed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "test_support.h"
#include "lumen/batch.h"

enum { N = 7, W = 40, H = 32 };

/* image i: a deterministic pseudo-random 0..255 pattern with a bright blob */
static lumen_image *make_image(lumen_ctx *ctx, int64_t i) {
  const int64_t dims[2] = {W, H};
  lumen_image *im = lumen_test_image(ctx, 2, dims, LUMEN_DTYPE_FLOAT32);
  float *p = lumen_image_data(im);
  uint32_t s = 12345u + 7919u * (uint32_t)i;
  for (int k = 0; k < W * H; k++) {
    s = s * 1664525u + 1013904223u;
    int x = k % W, y = k / W;
    double blob = (x - 10 - (int)i) * (x - 10 - (int)i) + (y - 12) * (y - 12) < 20 ? 120.0 : 0.0;
    p[k] = (float)((s >> 24) % 100) + (float)blob;
  }
  return im;
}

static void make_inputs(lumen_ctx *ctx, lumen_image *in[N]) {
  for (int i = 0; i < N; i++) in[i] = make_image(ctx, i);
}

static void free_images(lumen_image **im, int n) {
  for (int i = 0; i < n; i++) {
    lumen_image_free(im[i]);
    im[i] = NULL;
  }
}

/* ------------------------------------------------------------------ ops by name over arrays */

static lumen_status one_gaussian(lumen_ctx *ctx, const lumen_image *in, lumen_image **out, double *v) {
  lumen_gaussian_opts g;
  lumen_gaussian_opts_init(&g);
  g.sigma = 1.5;
  *v = NAN;
  return lumen_filter_gaussian(ctx, in, &g, out);
}

static lumen_status one_febds(lumen_ctx *ctx, const lumen_image *in, lumen_image **out, double *v) {
  return lumen_segment_febds(ctx, in, NULL, out, v);
}

static lumen_status one_otsu(lumen_ctx *ctx, const lumen_image *in, lumen_image **out, double *v) {
  return lumen_filter_otsu(ctx, in, NULL, v, out);
}

typedef lumen_status (*single_fn)(lumen_ctx *, const lumen_image *, lumen_image **, double *);

/* every result of the batch equals the op alone, for each device list, overlap and limit */
static void check_named(const char *op, const void *op_opts, single_fn single) {
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_image *in[N], *want[N], *got[N];
  double want_v[N], got_v[N];
  make_inputs(ctx, in);
  for (int i = 0; i < N; i++) assert_int_equal(single(ctx, in[i], &want[i], &want_v[i]), LUMEN_OK);
  const char *lists[] = {NULL, "cpu", "cpu,cpu", "auto"};
  int64_t one_item = 0; /* the charge of one item, from the run without a limit */
  char why[256];
  int n_lists = lumen_test_cuda_devices(why, sizeof why) > 0 ? 3 : 4; /* "auto" is the CPU only without a GPU */
  for (int l = 0; l < n_lists; l++)
    for (int no_overlap = 0; no_overlap <= 1; no_overlap++)
      for (int tight = 0; tight <= 1; tight++) {
        lumen_batch_opts o;
        lumen_batch_opts_init(&o);
        o.devices = lists[l];
        o.no_overlap = no_overlap;
        /* tight: room for exactly one item, so one image at a time (an item over the limit alone is
           refused: memory_limit_refuses_an_item) */
        o.memory_limit = tight ? one_item : 0;
        lumen_batch_callbacks cb = {0};
        cb.inputs = (const lumen_image *const *)in;
        cb.op = op;
        cb.op_opts = op_opts;
        cb.outputs = got;
        cb.values = got_v;
        lumen_batch_report rep;
        lumen_status s = lumen_batch_run(ctx, N, &o, &cb, &rep);
        if (s != LUMEN_OK) fail_msg("%s on %s: %s", op, lists[l] ? lists[l] : "default", lumen_ctx_last_error(ctx));
        assert_int_equal(rep.written, N);
        assert_int_equal(rep.failed_item, -1);
        if (!tight) one_item = rep.item_bytes;
        int64_t sum = 0;
        for (int w = 0; w < rep.workers; w++) sum += rep.per_worker[w];
        assert_int_equal(sum, N);
        if (l == 2) {
          assert_int_equal(rep.workers, 2);
          assert_string_equal(rep.devices, "cpu,cpu");
          assert_string_equal(rep.used, "cpu");
        }
        if (l == 0) assert_string_equal(rep.devices, "default");
        /* never two in flight, also with no_overlap and several workers (each item counts as
           in flight from its admission, src/scale/stages.c serial_worker) */
        if (tight) {
          if (rep.peak_bytes > rep.item_bytes + rep.pinned_bytes)
            fail_msg("%s on %s (no_overlap %d, limit %lld): peak %lld bytes, one item %lld", op,
                     lists[l] ? lists[l] : "default", no_overlap, (long long)o.memory_limit, (long long)rep.peak_bytes,
                     (long long)rep.item_bytes);
          assert_int_equal(rep.over_limit, rep.pinned_bytes > 0); /* only the pinned buffers go over */
        }
        for (int i = 0; i < N; i++) {
          lumen_test_assert_images_equal(got[i], want[i]);
          assert_true((isnan(got_v[i]) && isnan(want_v[i])) || got_v[i] == want_v[i]);
        }
        free_images(got, N);
      }
  free_images(in, N);
  free_images(want, N);
  lumen_ctx_destroy(ctx);
}

static void named_gaussian(void **state) {
  (void)state;
  lumen_gaussian_opts g;
  lumen_gaussian_opts_init(&g);
  g.sigma = 1.5;
  check_named("gaussian", &g, one_gaussian);
}

static void named_febds(void **state) {
  (void)state;
  check_named("febds", NULL, one_febds); /* value: the Otsu threshold */
}

static void named_otsu(void **state) {
  (void)state;
  check_named("otsu", NULL, one_otsu);
}

/* ------------------------------------------------------------------ caller callbacks */

typedef struct calls {
  int fail_read_at;         /* -1: never */
  int cancel_after;         /* progress returns 1 once done reaches it (0: never) */
  lumen_image *res[N];      /* copies of the written results */
  int64_t order[N], nwritten, last_done, progress_n;
} calls;

static lumen_status cb_read(void *user, lumen_ctx *ctx, int64_t i, lumen_image **out) {
  const calls *c = user;
  if (i == c->fail_read_at) return lumen_fail(ctx, LUMEN_ERR_IO, "no such file: image-%lld.png", (long long)i);
  *out = make_image(ctx, i);
  return LUMEN_OK;
}

/* the op: a median of size 3 on the worker's device */
static lumen_status cb_compute(void *user, lumen_ctx *ctx, int64_t i, const char *device, const lumen_image *in,
                               lumen_image **out, double *value) {
  (void)user;
  assert_true(isnan(*value));
  lumen_median_opts m;
  lumen_median_opts_init(&m);
  m.exec.device = device;
  *value = (double)i;
  return lumen_filter_median(ctx, in, &m, out);
}

static lumen_status cb_write(void *user, lumen_ctx *ctx, int64_t i, const lumen_image *result, double value) {
  calls *c = user;
  assert_true(value == (double)i);
  assert_int_equal(lumen_image_device(result).kind, LUMEN_DEVICE_CPU);
  c->order[c->nwritten++] = i;
  return lumen_image_clone(ctx, result, &c->res[i]);
}

static int cb_progress(void *user, int64_t i, int64_t done, int64_t n) {
  calls *c = user;
  (void)i;
  c->last_done = done;
  c->progress_n = n;
  return c->cancel_after > 0 && done >= c->cancel_after;
}

static lumen_status run_calls(lumen_ctx *ctx, calls *c, const char *devices, int no_overlap, lumen_batch_report *rep) {
  lumen_batch_opts o;
  lumen_batch_opts_init(&o);
  o.devices = devices;
  o.no_overlap = no_overlap;
  lumen_batch_callbacks cb = {.user = c, .read = cb_read, .compute = cb_compute, .write = cb_write,
                              .progress = cb_progress};
  return lumen_batch_run(ctx, N, &o, &cb, rep);
}

static void callbacks_equal_single(void **state) {
  lumen_ctx *ctx = *state;
  const char *lists[] = {"cpu", "cpu,cpu", NULL};
  for (int l = 0; l < 3; l++)
    for (int no_overlap = 0; no_overlap <= 1; no_overlap++) {
      calls c = {.fail_read_at = -1};
      lumen_batch_report rep;
      assert_int_equal(run_calls(ctx, &c, lists[l], no_overlap, &rep), LUMEN_OK);
      assert_int_equal(c.nwritten, N);
      assert_int_equal(c.last_done, N);
      assert_int_equal(c.progress_n, N);
      assert_int_equal(rep.written, N);
      for (int i = 0; i < N; i++) {
        if (!no_overlap || l != 1) assert_int_equal(c.order[i], i); /* input order */
        lumen_image *in = make_image(ctx, i), *want = NULL;
        assert_int_equal(lumen_filter_median(ctx, in, NULL, &want), LUMEN_OK);
        lumen_test_assert_images_equal(c.res[i], want);
        lumen_image_free(in);
        lumen_image_free(want);
      }
      free_images(c.res, N);
    }
}

/* a read failing at item 3: items 0..2 written, none after, the read's status and message */
static void read_failure_stops(void **state) {
  lumen_ctx *ctx = *state;
  const char *lists[] = {"cpu", "cpu,cpu", "cpu"};
  for (int r = 0; r < 3; r++) {
    calls c = {.fail_read_at = 3};
    lumen_batch_report rep;
    assert_int_equal(run_calls(ctx, &c, lists[r], r == 2, &rep), LUMEN_ERR_IO);
    const char *msg = lumen_ctx_last_error(ctx);
    assert_non_null(strstr(msg, "item 3"));
    assert_non_null(strstr(msg, "no such file: image-3.png"));
    assert_int_equal(rep.failed_item, 3);
    assert_int_equal(rep.written, 3);
    for (int i = 0; i < N; i++) assert_true(i < 3 ? c.res[i] != NULL : c.res[i] == NULL);
    free_images(c.res, N);
  }
}

static void cancel_from_progress(void **state) {
  lumen_ctx *ctx = *state;
  calls c = {.fail_read_at = -1, .cancel_after = 2};
  lumen_batch_report rep;
  lumen_batch_opts o;
  lumen_batch_opts_init(&o);
  lumen_batch_callbacks cb = {.user = &c, .read = cb_read, .compute = cb_compute, .write = cb_write,
                              .progress = cb_progress};
  /* the charge of one item (a run without cancel), then room for exactly one: nothing is read
     ahead of the cancel */
  calls c0 = {.fail_read_at = -1, .cancel_after = N + 1};
  lumen_batch_callbacks cb0 = cb;
  cb0.user = &c0;
  assert_int_equal(lumen_batch_run(ctx, N, &o, &cb0, &rep), LUMEN_OK);
  free_images(c0.res, N);
  o.memory_limit = rep.item_bytes;
  assert_int_equal(lumen_batch_run(ctx, N, &o, &cb, &rep), LUMEN_ERR_CANCELLED);
  assert_true(rep.written >= 2 && rep.written < N);
  assert_int_equal(rep.failed_item, rep.written);
  for (int i = 0; i < N; i++) assert_true(i < rep.written ? c.res[i] != NULL : c.res[i] == NULL);
  free_images(c.res, N);
}

/* An item that alone needs more than memory_limit is refused, naming its need and the limit (it
   used to run alone, over the limit: issue 40 item 14); the others run. */
static void memory_limit_refuses_an_item(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_image *in[N], *got[N] = {0};
  make_inputs(ctx, in);
  lumen_batch_opts o;
  lumen_batch_opts_init(&o);
  lumen_batch_callbacks cb = {0};
  cb.inputs = (const lumen_image *const *)in;
  cb.op = "gaussian";
  cb.outputs = got;
  lumen_batch_report rep;
  assert_int_equal(lumen_batch_run(ctx, N, &o, &cb, &rep), LUMEN_OK);
  const int64_t one = rep.item_bytes;
  free_images(got, N);
  o.memory_limit = one - 1;
  assert_int_equal(lumen_batch_run(ctx, N, &o, &cb, &rep), LUMEN_ERR_OUT_OF_MEMORY);
  const char *msg = lumen_ctx_last_error(ctx);
  assert_non_null(strstr(msg, "item 0 (1280 voxels) needs about"));
  assert_non_null(strstr(msg, "over the memory limit of"));
  assert_int_equal(rep.written, 0);
  assert_int_equal(rep.over_limit, 0);
  free_images(got, N);
  free_images(in, N);
  lumen_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------ argument errors */

static void expect_invalid(lumen_ctx *ctx, int64_t n, const lumen_batch_opts *o, const lumen_batch_callbacks *cb,
                           const char *a, const char *b) {
  lumen_batch_report rep;
  assert_int_equal(lumen_batch_run(ctx, n, o, cb, &rep), LUMEN_ERR_INVALID_ARGUMENT);
  const char *msg = lumen_ctx_last_error(ctx);
  if (!strstr(msg, a) || (b && !strstr(msg, b))) fail_msg("message '%s' lacks '%s' / '%s'", msg, a, b ? b : "");
  assert_int_equal(rep.written, 0);
}

static void argument_errors(void **state) {
  lumen_ctx *ctx = *state;
  lumen_image *in[N], *out[N];
  make_inputs(ctx, in);
  lumen_batch_callbacks good = {.inputs = (const lumen_image *const *)in, .op = "gaussian", .outputs = out};
  lumen_batch_opts o;
  lumen_batch_opts_init(&o);
  o.devices = "gpu:0";
  expect_invalid(ctx, N, &o, &good, "opts.devices", "'gpu:0'");
  o.devices = "cpu,,cpu";
  expect_invalid(ctx, N, &o, &good, "opts.devices", "empty");
  lumen_batch_opts_init(&o);
  expect_invalid(ctx, -1, &o, &good, "n is -1", ">= 0");
  expect_invalid(ctx, N, &o, NULL, "callbacks is NULL", NULL);
  lumen_batch_callbacks none = {0};
  expect_invalid(ctx, N, &o, &none, "callbacks.read and callbacks.inputs are both NULL", NULL);
  lumen_batch_callbacks no_op = good;
  no_op.op = NULL;
  expect_invalid(ctx, N, &o, &no_op, "callbacks.compute and callbacks.op are both NULL", NULL);
  lumen_batch_callbacks no_out = good;
  no_out.outputs = NULL;
  expect_invalid(ctx, N, &o, &no_out, "callbacks.write and callbacks.outputs are both NULL", NULL);
  lumen_batch_callbacks both = good;
  both.compute = cb_compute;
  expect_invalid(ctx, N, &o, &both, "both set", NULL);
  lumen_batch_callbacks bad_op = good;
  bad_op.op = "sharpen";
  expect_invalid(ctx, N, &o, &bad_op, "callbacks.op is 'sharpen'", "febds");
  o.memory_limit = -5;
  expect_invalid(ctx, N, &o, &good, "opts.memory_limit is -5", NULL);
  lumen_batch_opts_init(&o);
  o.threads = -1;
  expect_invalid(ctx, N, &o, &good, "opts.threads is -1", NULL);
  lumen_batch_opts_init(&o);
  const lumen_image *holes[N] = {in[0], NULL};
  lumen_batch_callbacks hole = good;
  hole.inputs = holes;
  expect_invalid(ctx, N, &o, &hole, "callbacks.inputs[1] is NULL", NULL);
  /* nothing to do */
  assert_int_equal(lumen_batch_run(ctx, 0, NULL, &good, NULL), LUMEN_OK);
  assert_int_equal(lumen_batch_op_known("febds"), 1);
  assert_int_equal(lumen_batch_op_known("region-grow"), 1);
  assert_int_equal(lumen_batch_op_known("sharpen"), 0);
  free_images(in, N);
}

LUMEN_TEST_MAIN(cmocka_unit_test(named_gaussian), cmocka_unit_test(named_febds), cmocka_unit_test(named_otsu),
                LUMEN_TEST_WITH_CTX(callbacks_equal_single), LUMEN_TEST_WITH_CTX(read_failure_stops),
                LUMEN_TEST_WITH_CTX(cancel_from_progress),
                cmocka_unit_test(memory_limit_refuses_an_item), LUMEN_TEST_WITH_CTX(argument_errors))
