/* src/scale: voxel ranges, --shard parsing, the shared work queue (results identical for any
   number of workers, first error stops it), the bounded FIFO (memory cap), and subject
   discovery from a list file and a BIDS folder. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "test_support.h"
#include "scale/dist_internal.h"

static void ranges(void **state) {
  (void)state;
  for (int64_t n = 0; n < 50; ++n)
    for (int parts = 1; parts <= 7; ++parts) {
      int64_t next = 0;
      for (int k = 0; k < parts; ++k) {
        int64_t lo, hi;
        lumen_dist_range(n, k, parts, &lo, &hi);
        assert_int_equal(lo, next);
        assert_true(hi >= lo);
        assert_true(hi - lo <= n / parts + 1);
        next = hi;
      }
      assert_int_equal(next, n);
    }
}

static void shard_parse(void **state) {
  lumen_ctx *ctx = *state;
  int k = -1, n = -1;
  assert_int_equal(lumen_dist_shard_parse(ctx, "2/5", &k, &n), LUMEN_OK);
  assert_int_equal(k, 2);
  assert_int_equal(n, 5);
  const char *bad[] = {"5/5", "-1/3", "1/0", "x", "1/", "/2", "1/2x", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i)
    assert_int_equal(lumen_dist_shard_parse(ctx, bad[i], &k, &n), LUMEN_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "--shard"));
}

/* a deterministic "image filter" per item: out[i] = smoothed in[i] */
typedef struct work {
  int64_t n, len;
  const double *in;
  double *out;
  int *runs;
  int fail_at;
  pthread_mutex_t mu;
} work;

static lumen_status item_fn(void *user, int worker, int64_t i) {
  work *w = user;
  assert_true(worker >= 0);
  if (i == w->fail_at) return LUMEN_ERR_IO;
  const double *x = w->in + i * w->len;
  double *y = w->out + i * w->len;
  for (int64_t k = 0; k < w->len; ++k) {
    double a = x[k > 0 ? k - 1 : 0], b = x[k], c = x[k + 1 < w->len ? k + 1 : k];
    y[k] = 0.25 * a + 0.5 * b + 0.25 * c + sin((double)i);
  }
  pthread_mutex_lock(&w->mu);
  w->runs[i]++;
  pthread_mutex_unlock(&w->mu);
  return LUMEN_OK;
}

static void pool_identical(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t n = 97, len = 301;
  double *in = malloc(sizeof(double) * (size_t)(n * len));
  double *ref = calloc((size_t)(n * len), sizeof(double));
  double *out = calloc((size_t)(n * len), sizeof(double));
  int *runs = calloc((size_t)n, sizeof(int));
  assert_non_null(in); assert_non_null(ref); assert_non_null(out); assert_non_null(runs);
  for (int64_t i = 0; i < n * len; ++i) in[i] = cos(0.37 * (double)i) * 100.0;
  work w = {n, len, in, ref, runs, -1, PTHREAD_MUTEX_INITIALIZER};
  assert_int_equal(lumen_dist_pool_run(ctx, 1, n, item_fn, &w), LUMEN_OK);
  for (int workers = 2; workers <= 8; workers *= 2) {
    memset(runs, 0, sizeof(int) * (size_t)n);
    memset(out, 0, sizeof(double) * (size_t)(n * len));
    w.out = out;
    assert_int_equal(lumen_dist_pool_run(ctx, workers, n, item_fn, &w), LUMEN_OK);
    for (int64_t i = 0; i < n; ++i) assert_int_equal(runs[i], 1);
    assert_memory_equal(out, ref, sizeof(double) * (size_t)(n * len));
  }
  /* an error stops the queue and is returned; no item runs twice */
  memset(runs, 0, sizeof(int) * (size_t)n);
  w.fail_at = 10;
  assert_int_equal(lumen_dist_pool_run(ctx, 4, n, item_fn, &w), LUMEN_ERR_IO);
  int total = 0;
  for (int64_t i = 0; i < n; ++i) { assert_true(runs[i] <= 1); total += runs[i]; }
  assert_true(total < n);
  assert_int_equal(lumen_dist_pool_run(ctx, 3, 0, item_fn, &w), LUMEN_OK);
  assert_int_equal(lumen_dist_pool_run(ctx, 3, -1, item_fn, &w), LUMEN_ERR_INVALID_ARGUMENT);
  free(in); free(ref); free(out); free(runs);
}

enum { NPUSHED = 200 };

/* Pushes the numbers 0 .. NPUSHED - 1 (100 bytes each) into the queue q, then closes it. */
static void *producer(void *q) {
  for (int i = 0; i < NPUSHED; ++i) {
    int *v = malloc(sizeof *v);
    *v = i;
    lumen_dist_queue_push(q, v, 100);
  }
  lumen_dist_queue_close(q);
  return NULL;
}

static void bounded_queue(void **state) {
  lumen_ctx *ctx = *state;
  lumen_dist_queue *q = NULL;
  assert_int_equal(lumen_dist_queue_create(ctx, 10, 250, &q), LUMEN_OK);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, producer, q), 0);
  int expect = 0;
  int64_t bytes;
  int *v;
  while ((v = lumen_dist_queue_pop(q, &bytes))) {
    assert_int_equal(*v, expect++);  /* FIFO order */
    assert_int_equal(bytes, 100);
    free(v);
    if (expect % 50 == 0) { struct timespec ts = {0, 2000000}; nanosleep(&ts, NULL); }
  }
  pthread_join(th, NULL);
  assert_int_equal(expect, NPUSHED);
  assert_true(lumen_dist_queue_peak_bytes(q) <= 250);  /* the memory cap held */
  lumen_dist_queue_free(q);
  /* an item bigger than the cap still passes alone */
  assert_int_equal(lumen_dist_queue_create(ctx, 4, 10, &q), LUMEN_OK);
  int x = 5;
  lumen_dist_queue_push(q, &x, 1000);
  assert_ptr_equal(lumen_dist_queue_pop(q, NULL), &x);
  lumen_dist_queue_close(q);
  assert_null(lumen_dist_queue_pop(q, NULL));
  lumen_dist_queue_free(q);
}

static void touch(const char *p) {
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs("x", f);
  fclose(f);
}

static void subjects(void **state) {
  lumen_ctx *ctx = *state;
  char root[] = "/tmp/lumen-test-dist-XXXXXX";
  assert_non_null(mkdtemp(root));
  char p[512];
  const char *dirs[] = {"bids", "bids/sub-02", "bids/sub-02/perf", "bids/sub-01", "bids/sub-01/ses-2",
                        "bids/sub-01/ses-2/perf", "bids/sub-01/ses-1", "bids/sub-01/ses-1/perf", "bids/sub-01/ses-1/anat",
                        "bids/derivatives"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; ++i) {
    snprintf(p, sizeof p, "%s/%s", root, dirs[i]);
    assert_int_equal(mkdir(p, 0777), 0);
  }
  const char *files[] = {"bids/sub-02/perf/sub-02_dce.nii.gz", "bids/sub-01/ses-1/perf/sub-01_ses-1_dce.nii.gz",
                         "bids/sub-01/ses-1/anat/sub-01_ses-1_T1map.nii.gz", "bids/sub-01/ses-2/perf/sub-01_ses-2_dce.nii",
                         "bids/sub-01/ses-2/perf/sub-01_ses-2_mask.nii.gz", "bids/sub-02/perf/notes.txt"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; ++i) {
    snprintf(p, sizeof p, "%s/%s", root, files[i]);
    touch(p);
  }
  snprintf(p, sizeof p, "%s/bids", root);
  lumen_dist_subjects s;
  assert_int_equal(lumen_dist_bids_scan(ctx, p, "dce", &s), LUMEN_OK);
  assert_int_equal(s.n, 3);
  assert_string_equal(s.items[0].id, "sub-01");
  assert_string_equal(s.items[0].session, "ses-1");
  assert_int_equal(s.items[0].argc, 4);  /* --dce F --t1map F */
  assert_string_equal(s.items[0].argv[2], "--t1map");
  assert_string_equal(s.items[1].session, "ses-2");
  assert_int_equal(s.items[1].argc, 4);  /* --dce F --mask F */
  assert_string_equal(s.items[1].argv[2], "--mask");
  assert_string_equal(s.items[2].id, "sub-02");
  assert_string_equal(s.items[2].session, "");
  lumen_dist_subjects_clear(&s);
  /* filter: one item per image, masks left out */
  assert_int_equal(lumen_dist_bids_scan(ctx, p, "filter", &s), LUMEN_OK);
  assert_int_equal(s.n, 4);
  lumen_dist_subjects_clear(&s);
  assert_int_equal(lumen_dist_bids_scan(ctx, p, "t1", &s), LUMEN_ERR_FORMAT);
  /* list file */
  snprintf(p, sizeof p, "%s/list.txt", root);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs("# cohort\nsub-a --dce a.nii.gz --t1 1.2\n\n  sub-b\t--dce b.nii.gz # comment\n", f);
  fclose(f);
  assert_int_equal(lumen_dist_list_read(ctx, p, &s), LUMEN_OK);
  assert_int_equal(s.n, 2);
  assert_string_equal(s.items[0].id, "sub-a");
  assert_int_equal(s.items[0].argc, 4);
  assert_string_equal(s.items[1].argv[1], "b.nii.gz");
  assert_int_equal(s.items[1].argc, 2);
  lumen_dist_subjects_clear(&s);
  f = fopen(p, "w");
  fputs("sub-a x\nsub-a y\n", f);
  fclose(f);
  assert_int_equal(lumen_dist_list_read(ctx, p, &s), LUMEN_ERR_FORMAT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "twice"));
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  assert_int_equal(system(cmd), 0);
}

LUMEN_TEST_MAIN(cmocka_unit_test(ranges),
                LUMEN_TEST_WITH_CTX(shard_parse),
                LUMEN_TEST_WITH_CTX(pool_identical),
                LUMEN_TEST_WITH_CTX(bounded_queue),
                LUMEN_TEST_WITH_CTX(subjects))
