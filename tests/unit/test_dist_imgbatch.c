/* src/scale image batches and distributed dce command lines, without the command line: a batch
   of in-memory images on 1 and 2 CPU workers (with and without overlap) writes every result once,
   in input order, with the progress and scalar of each; a failing op stops it like a serial run
   and names the image; which run `lumen dce ARGS` is and the rewritten arguments; the PNG
   header probe (sizes, a hostile header refused, a file that is no PNG). No GPU needed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/internal.h"
#include "test_support.h"
#include "scale/dist_internal.h"
#include "io/png_probe.h"

/* ------------------------------------------------------------------ image batches */

enum { N_IMAGES = 7, SIDE = 5 };

typedef struct source {
  int fail_at;              /* the op fails on this image (-1: never) */
  float written[N_IMAGES];  /* first voxel of each written result (NaN: not written) */
  int64_t order[N_IMAGES];  /* images in the order written */
  int64_t nwritten, last_done, failed;
  double scalars[N_IMAGES];
} source;

static lumen_ctx *src_context(void *user, int threads) {
  (void)user;
  lumen_ctx *ctx = lumen_test_ctx();
  if (ctx && threads > 0) lumen_ctx_set_threads(ctx, threads);
  return ctx;
}

/* image i: every voxel i */
static lumen_status src_read(void *user, lumen_ctx *ctx, int64_t i, lumen_image **out) {
  (void)user;
  const int64_t dims[2] = {SIDE, SIDE};
  lumen_status s = lumen_image_create(ctx, 2, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, out);
  if (s != LUMEN_OK) return s;
  float *p = lumen_image_data(*out);
  for (int k = 0; k < SIDE * SIDE; k++) p[k] = (float)i;
  return LUMEN_OK;
}

/* the op: doubles the voxels; its scalar is the image's number */
static lumen_status src_compute(void *user, lumen_ctx *ctx, int64_t item, const char *device,
                                lumen_filter_report *rep, const lumen_image *in, lumen_image **out, int *is_mask,
                                int *png_bits, double *scalar) {
  (void)item;
  const source *src = user;
  (void)device;
  (void)is_mask;
  (void)png_bits;
  const float v = ((const float *)lumen_image_const_data(in))[0];
  if ((int)v == src->fail_at) return lumen_fail(ctx, LUMEN_ERR_INVALID_DATA, "image %d refused", src->fail_at);
  lumen_status s = lumen_image_clone(ctx, in, out);
  if (s != LUMEN_OK) return s;
  float *p = lumen_image_data(*out);
  for (int k = 0; k < SIDE * SIDE; k++) p[k] *= 2;
  rep->used = lumen_device_cpu();
  *scalar = v;
  return LUMEN_OK;
}

static lumen_status src_write(void *user, lumen_ctx *ctx, int64_t i, const lumen_image *res, int is_mask,
                              int png_bits) {
  source *src = user;
  (void)ctx;
  (void)is_mask;
  (void)png_bits;
  src->written[i] = ((const float *)lumen_image_const_data(res))[SIDE * SIDE - 1];
  return LUMEN_OK;
}

static void src_progress(void *user, int64_t i, int64_t done, double scalar) {
  source *src = user;
  if (done == 0) return;
  src->order[src->nwritten++] = i;
  src->scalars[i] = scalar;
  src->last_done = done;
}

static void src_failed(void *user, int64_t i, lumen_ctx *ctx) {
  source *src = user;
  src->failed = i;
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "refused"));
}

static lumen_status run_batch(source *src, const char *devices, int overlap, lumen_dist_imgbatch_out *out) {
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_dist_devices devs;
  assert_int_equal(lumen_dist_devices_expand(ctx, devices, 0, NULL, &devs), LUMEN_OK);
  for (int k = 0; k < N_IMAGES; k++) src->written[k] = NAN;
  src->nwritten = src->last_done = 0;
  src->failed = -1;
  lumen_dist_imgbatch b = {.n = N_IMAGES, .devs = &devs, .overlap = overlap, .count = SIDE * SIDE,
                           .threads = lumen_dist_worker_threads(&devs, 0, 4), .user = src,
                           .context = src_context, .read = src_read, .write = src_write, .compute = src_compute,
                           .compute_user = src, .progress = src_progress, .failed = src_failed};
  lumen_status s = lumen_dist_imgbatch_run(ctx, &b, out);
  lumen_ctx_destroy(ctx);
  return s;
}

static void batch_writes_in_order(void **state) {
  (void)state;
  const char *lists[] = {"cpu", "cpu,cpu"};
  for (int l = 0; l < 2; l++)
    for (int overlap = 0; overlap <= 1; overlap++) {
      source src = {.fail_at = -1};
      lumen_dist_imgbatch_out out;
      assert_int_equal(run_batch(&src, lists[l], overlap, &out), LUMEN_OK);
      assert_int_equal(out.started, 1);
      assert_string_equal(out.used, "cpu");
      assert_int_equal(out.stats.written, N_IMAGES);
      assert_int_equal(src.nwritten, N_IMAGES);
      assert_int_equal(src.last_done, N_IMAGES);
      assert_int_equal(src.failed, -1);
      for (int k = 0; k < N_IMAGES; k++) {
        assert_true(src.written[k] == 2.0f * (float)k);
        assert_true(src.scalars[k] == (double)k);
        if (overlap) assert_int_equal(src.order[k], k); /* the writer keeps input order */
      }
    }
}

static void batch_stops_at_failure(void **state) {
  (void)state;
  source src = {.fail_at = 3};
  lumen_dist_imgbatch_out out;
  assert_int_equal(run_batch(&src, "cpu", 1, &out), LUMEN_ERR_INVALID_DATA);
  assert_int_equal(out.started, 1);
  assert_int_equal(out.stats.failed_item, 3);
  assert_int_equal(src.failed, 3);
  for (int k = 0; k < N_IMAGES; k++) assert_true(k < 3 ? src.written[k] == 2.0f * (float)k : isnan(src.written[k]));
}

static void worker_threads(void **state) {
  lumen_ctx *ctx = *state;
  lumen_dist_devices devs;
  assert_int_equal(lumen_dist_devices_expand(ctx, "cpu,cpu,cpu", 0, NULL, &devs), LUMEN_OK);
  assert_int_equal(lumen_dist_worker_threads(&devs, 0, 8), 2); /* the cores shared */
  assert_int_equal(lumen_dist_worker_threads(&devs, 0, 2), 1);
  assert_int_equal(lumen_dist_worker_threads(&devs, 5, 8), 5); /* --threads as given */
  assert_int_equal(lumen_dist_devices_expand(ctx, "cpu", 0, NULL, &devs), LUMEN_OK);
  assert_int_equal(lumen_dist_worker_threads(&devs, 0, 8), 0); /* all cores */
}

static void image_charge(void **state) {
  (void)state;
  const int64_t dims[4] = {1000, 1000, 3, 1}, big[4] = {100000, 100000, 1000, 1};
  const int64_t hostile[4] = {0xFFFFFFFFll, 0xFFFFFFFFll, 1, 1}; /* a PNG IHDR's largest sides */
  assert_int_equal(lumen_dist_image_voxels(dims), 3000000);
  assert_int_equal(lumen_dist_image_voxels(big), 10000000000000ll);
  assert_int_equal(lumen_dist_image_voxels(hostile), INT64_MAX); /* saturates */
  assert_int_equal(lumen_dist_voxel_charge(1), 9);  /* 8-bit input, float32 copy and result */
  assert_int_equal(lumen_dist_voxel_charge(4), 8);  /* float32 input and result */
  assert_int_equal(lumen_dist_image_charge("filter", "gamma", 4, 1000, 1), 8000);
  assert_int_equal(lumen_dist_image_charge("filter", "gamma", 4, INT64_MAX, 1), INT64_MAX);
}

/* ------------------------------------------------------------------ dce command lines */

static void dce_runs(void **state) {
  (void)state;
  char *shard[] = {"dce", "--dce", "d.nii", "--shard", "1/4", "--out", "o", "-q"};
  char *help[] = {"dce", "--shard", "1/4", "--help"};
  char *plain[] = {"dce", "--dce", "d.nii", "--out", "o"};
  const char *v = NULL;
  assert_int_equal(lumen_dist_dce_run_of(8, shard, &v), LUMEN_DIST_DCE_SHARD);
  assert_string_equal(v, "1/4");
  assert_int_equal(lumen_dist_dce_run_of(4, help, &v), LUMEN_DIST_DCE_PLAIN);
  if (!lumen_dist_mpi_launched()) assert_int_equal(lumen_dist_dce_run_of(5, plain, &v), LUMEN_DIST_DCE_PLAIN);
  assert_string_equal(lumen_dist_arg_value(8, shard, "--out"), "o");
  assert_null(lumen_dist_arg_value(5, plain, "--shard"));
  assert_int_equal(lumen_dist_quiet(8, shard), 1);
  assert_int_equal(lumen_dist_quiet(5, plain), 0);
  int n = 0;
  char **a = lumen_dist_strip_args(8, shard, 0, &n);
  assert_non_null(a);
  assert_int_equal(n, 6);
  assert_string_equal(a[3], "--out");
  free(a);
  a = lumen_dist_strip_args(8, shard, 1, &n);
  assert_int_equal(n, 4);
  assert_string_equal(a[3], "-q");
  free(a);
  char path[256];
  lumen_dist_part_path(path, sizeof path, NULL, "sub-01", 2, 3);
  assert_string_equal(path, "./sub-01_shard-2-of-3.part");
  lumen_dist_part_path(path, sizeof path, "out", "x", 0, 1);
  assert_string_equal(path, "out/x_shard-0-of-1.part");
  lumen_dist_absolute_path(path, sizeof path, "/abs/dir");
  assert_string_equal(path, "/abs/dir");
}

static void rank_folder(void **state) {
  (void)state;
  char dir[4200];
  assert_int_equal(lumen_dist_rank_folder(dir, sizeof dir, NULL), 1);
  assert_non_null(strstr(dir, "/tmp/lumen-rank-"));
  char file[4300];
  snprintf(file, sizeof file, "%s/part", dir);
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fclose(f);
  lumen_dist_remove_tree(dir);
  assert_int_equal(access(dir, F_OK), -1);
}

/* ------------------------------------------------------------------ the PNG header probe */

static void write_header(const char *path, uint32_t w, uint32_t h, int bits) {
  unsigned char b[33] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
  for (int k = 0; k < 4; k++) {
    b[16 + k] = (unsigned char)(w >> (24 - 8 * k));
    b[20 + k] = (unsigned char)(h >> (24 - 8 * k));
  }
  b[24] = (unsigned char)bits;
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fwrite(b, 1, sizeof b, f);
  fclose(f);
}

static void png_probe(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  char path[64];
  snprintf(path, sizeof path, "/tmp/lumen-probe-%ld.png", (long)getpid());
  int64_t w = 0, h = 0;
  int bits = 0, found = -1;
  write_header(path, 640, 480, 16);
  assert_int_equal(lumen_png_probe(ctx, path, &w, &h, &bits, &found), LUMEN_OK);
  assert_int_equal(found, 1);
  assert_int_equal(w, 640);
  assert_int_equal(h, 480);
  assert_int_equal(bits, 16);
  write_header(path, 0xFFFFFFFFu, 1, 8);
  assert_int_equal(lumen_png_probe(ctx, path, &w, &h, &bits, &found), LUMEN_ERR_INVALID_DATA);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "PNG IHDR width 4294967295 x height 1"));
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("not a PNG, only text long enough for a header", f);
  fclose(f);
  assert_int_equal(lumen_png_probe(ctx, path, &w, &h, &bits, &found), LUMEN_OK);
  assert_int_equal(found, 0);
  remove(path);
  assert_int_not_equal(lumen_png_probe(ctx, "/tmp", &w, &h, &bits, &found), LUMEN_OK); /* a folder */
  lumen_ctx_destroy(ctx);
}

LUMEN_TEST_MAIN(cmocka_unit_test(batch_writes_in_order),
                cmocka_unit_test(batch_stops_at_failure),
                LUMEN_TEST_WITH_CTX(worker_threads),
                cmocka_unit_test(image_charge),
                cmocka_unit_test(dce_runs),
                cmocka_unit_test(rank_folder),
                cmocka_unit_test(png_probe))
