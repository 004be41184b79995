/* The segmentation algorithms by id: names, lumen_segment_run (one image) and lumen_segment_many
 * (a batch). Above the algorithms (cluster.c, febds.c, region.c, grail.c), which use seg_common.c below. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "segment/seg_internal.h"

static const char *const algo_names[LUMEN_SEGMENT_ALGO_COUNT] = {
  "febds", "tophat", "kmeans", "fcm", "pfcm", "region_grow", "breast_mask", "window", "normalize_bits",
  "grail"};

const char *lumen_segment_algo_name(lumen_segment_algo algo) {
  return (int)algo >= 0 && algo < LUMEN_SEGMENT_ALGO_COUNT ? algo_names[algo] : "unknown";
}

lumen_status lumen_segment_algo_parse(lumen_ctx *ctx, const char *name, lumen_segment_algo *out) {
  if (!out) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_segment_algo_parse: out is NULL");
  char buf[32];
  size_t n = name ? strlen(name) : 0;
  if (name && n < sizeof buf) {
    for (size_t i = 0; i <= n; i++) buf[i] = name[i] == '-' ? '_' : name[i];
    for (int i = 0; i < LUMEN_SEGMENT_ALGO_COUNT; i++)
      if (strcmp(buf, algo_names[i]) == 0) {
        *out = (lumen_segment_algo)i;
        return LUMEN_OK;
      }
  }
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "lumen_segment_algo_parse: unknown algorithm '%s', expected one of febds, tophat, kmeans, fcm, "
                    "pfcm, region_grow, breast_mask, window, normalize_bits, grail",
                    name ? name : "(null)");
}

lumen_status lumen_segment_run(lumen_ctx *ctx, lumen_segment_algo algo, const void *opts, const lumen_image *in,
                               lumen_image **out) {
  switch (algo) {
    case LUMEN_SEGMENT_FEBDS: return lumen_segment_febds(ctx, in, opts, out, NULL);
    case LUMEN_SEGMENT_TOPHAT: return lumen_segment_tophat(ctx, in, opts, out);
    case LUMEN_SEGMENT_KMEANS: return lumen_segment_kmeans(ctx, in, opts, out, NULL);
    case LUMEN_SEGMENT_FCM: return lumen_segment_fcm(ctx, in, opts, out, NULL);
    case LUMEN_SEGMENT_PFCM: return lumen_segment_pfcm(ctx, in, opts, out, NULL);
    case LUMEN_SEGMENT_REGION_GROW: return lumen_segment_region_grow(ctx, in, opts, out);
    case LUMEN_SEGMENT_BREAST_MASK: return lumen_segment_breast_mask(ctx, in, opts, out);
    case LUMEN_SEGMENT_WINDOW: return lumen_segment_window(ctx, in, opts, out);
    case LUMEN_SEGMENT_NORMALIZE_BITS: return lumen_segment_normalize_bits(ctx, in, opts, out, NULL);
    case LUMEN_SEGMENT_GRAIL: return lumen_segment_grail(ctx, in, opts, out, NULL);
    default: break;
  }
  if (out) *out = NULL;
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_segment_run: algo is %d, expected 0..%d", (int)algo,
                    LUMEN_SEGMENT_ALGO_COUNT - 1);
}

/* The exec member is the first member of every options struct. */
lumen_status lumen_segment_many(lumen_ctx *ctx, lumen_segment_algo algo, const void *opts, int64_t n,
                                const lumen_image *const *in, lumen_image **out) {
  static const char fn[] = "lumen_segment_many";
  LUMEN_REQUIRE(ctx, (int)algo >= 0 && algo < LUMEN_SEGMENT_ALGO_COUNT, "%s: algo is %d, expected 0..%d", fn,
                (int)algo, LUMEN_SEGMENT_ALGO_COUNT - 1);
  LUMEN_REQUIRE(ctx, n >= 0, "%s: n is %lld, expected >= 0", fn, (long long)n);
  LUMEN_REQUIRE(ctx, n == 0 || (in && out), "%s: in or out is NULL", fn);
  for (int64_t i = 0; i < n; i++) out[i] = NULL;
  for (int64_t i = 0; i < n; i++) {
    LUMEN_REQUIRE(ctx, in[i] != NULL, "%s: in[%lld] is NULL", fn, (long long)i);
    int same = lumen_image_ndim(in[i]) == lumen_image_ndim(in[0]) &&
               lumen_image_dtype(in[i]) == lumen_image_dtype(in[0]);
    for (int a = 0; a < LUMEN_IMAGE_MAX_DIMS && same; a++) same = lumen_image_dim(in[i], a) == lumen_image_dim(in[0], a);
    if (!same) {
      char d0[64], di[64];
      snprintf(d0, sizeof d0, "%lldx%lldx%lld %s", (long long)lumen_image_dim(in[0], 0),
               (long long)lumen_image_dim(in[0], 1), (long long)lumen_image_dim(in[0], 2),
               lumen_dtype_name(lumen_image_dtype(in[0])));
      snprintf(di, sizeof di, "%lldx%lldx%lld %s", (long long)lumen_image_dim(in[i], 0),
               (long long)lumen_image_dim(in[i], 1), (long long)lumen_image_dim(in[i], 2),
               lumen_dtype_name(lumen_image_dtype(in[i])));
      return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: in[%lld] is %s, expected the shape and type of in[0] (%s)",
                        fn, (long long)i, di, d0);
    }
  }
  const lumen_filter_exec *exec = opts ? (const lumen_filter_exec *)opts : NULL;
  lumen_filter_report *user = exec ? exec->report : NULL;
  lumen_filter_report total, one;
  memset(&total, 0, sizeof total);
  snprintf(total.op, sizeof total.op, "%s", lumen_segment_algo_name(algo));
  double t0 = lumen_now_seconds();
  /* the per-image calls write their report into `one` through a copy of the options */
  union {
    lumen_febds_opts febds;
    lumen_tophat_opts tophat;
    lumen_kmeans_opts kmeans;
    lumen_fcm_opts fcm;
    lumen_region_grow_opts grow;
    lumen_breast_mask_opts breast;
    lumen_window_opts window;
    lumen_bits_opts bits;
    lumen_grail_opts grail;
  } copy;
  static const size_t sizes[LUMEN_SEGMENT_ALGO_COUNT] = {
    sizeof(lumen_febds_opts), sizeof(lumen_tophat_opts), sizeof(lumen_kmeans_opts), sizeof(lumen_fcm_opts),
    sizeof(lumen_fcm_opts), sizeof(lumen_region_grow_opts), sizeof(lumen_breast_mask_opts),
    sizeof(lumen_window_opts), sizeof(lumen_bits_opts), sizeof(lumen_grail_opts)};
  void *o = NULL;
  if (opts) {
    memcpy(&copy, opts, sizes[algo]);
    ((lumen_filter_exec *)(void *)&copy)->report = &one;
    o = &copy;
  }
  lumen_status s = LUMEN_OK;
  for (int64_t i = 0; i < n && s == LUMEN_OK; i++) {
    memset(&one, 0, sizeof one);
    s = lumen_segment_run(ctx, algo, o, in[i], &out[i]);
    if (i == 0 || s != LUMEN_OK) {
      total.requested = one.requested;
      total.precision = one.precision;
    }
    total.used = one.used;
    if (one.fell_back && !total.fell_back) {
      total.fell_back = 1;
      total.device_status = one.device_status;
      snprintf(total.reason, sizeof total.reason, "%s", one.reason);
    }
    if (s == LUMEN_OK && n > 1) s = lumen_progress(ctx, (double)(i + 1) / (double)n, total.op);
  }
  if (s != LUMEN_OK)
    for (int64_t i = 0; i < n; i++) {
      lumen_image_free(out[i]);
      out[i] = NULL;
    }
  total.seconds = lumen_now_seconds() - t0;
  if (user) *user = total;
  return s;
}
