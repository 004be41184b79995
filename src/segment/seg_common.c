/* Shared pieces of the segmentation algorithms: device/precision resolution, the combined report,
 * host float views, slice iteration. (Names, run-by-id and batches, above the algorithms: segment_run.c.) */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "segment/seg_internal.h"

lumen_status seg_begin(lumen_ctx *ctx, seg_run *run, const char *fn, const char *name, const lumen_filter_exec *exec,
                       const lumen_image *in) {
  memset(run, 0, sizeof *run);
  run->fn = fn;
  run->t0 = lumen_now_seconds();
  run->user = exec ? exec->report : NULL;
  snprintf(run->total.op, sizeof run->total.op, "%s", name);
  run->total.requested = run->total.used = lumen_device_cpu();
  if (run->user) *run->user = run->total;
  if (exec && exec->device && exec->device[0]) {
    if (lumen_device_parse(ctx, exec->device, &run->device) != LUMEN_OK)
      return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                        "%s: exec.device is '%s', expected \"cpu\", \"cuda\" or \"cuda:N\"", fn, exec->device);
  } else if (in) {
    run->device = lumen_image_device(in);
  } else {
    run->device = lumen_ctx_device_default(ctx);
  }
  lumen_device_format(run->device, run->device_name, sizeof run->device_name);
  int p = exec ? exec->precision : LUMEN_FILTER_PRECISION_DEFAULT;
  if (p == LUMEN_FILTER_PRECISION_DEFAULT) p = (int)lumen_ctx_default_precision(ctx);
  LUMEN_REQUIRE(ctx, p >= 0 && p < LUMEN_PRECISION_COUNT,
                "%s: exec.precision is %d, expected LUMEN_FILTER_PRECISION_DEFAULT (-1) or a lumen_precision "
                "(0..%d)", fn, p, LUMEN_PRECISION_COUNT - 1);
  run->precision = (lumen_precision)p;
  run->total.requested = run->device;
  run->total.used = run->device.kind == LUMEN_DEVICE_CPU ? run->device : lumen_device_cpu();
  run->total.precision = run->precision;
  run->total.device_status = LUMEN_OK;
  lumen_filter_exec_init(&run->step);
  run->step.device = run->device_name;
  run->step.precision = (int)run->precision;
  run->step.report = &run->step_report;
  if (run->user) *run->user = run->total;
  return LUMEN_OK;
}

lumen_status seg_start(lumen_ctx *ctx, seg_run *run, const char *fn, const char *name, const lumen_filter_exec *exec,
                       const lumen_image *in, lumen_image **out, const char *out_name) {
  if (out) *out = NULL;
  LUMEN_REQUIRE(ctx, out != NULL, "%s: %s is NULL", fn, out_name);
  lumen_status s = seg_begin(ctx, run, fn, name, exec, in);
  return s == LUMEN_OK ? s : seg_end(run, s);
}

void seg_step_done(seg_run *run) {
  run->total.used = run->step_report.used;
  if (run->step_report.fell_back && !run->total.fell_back) {
    run->total.fell_back = 1;
    run->total.device_status = run->step_report.device_status;
    snprintf(run->total.reason, sizeof run->total.reason, "%.31s: %.200s", run->step_report.op,
             run->step_report.reason);
  }
}

void seg_host_step(lumen_ctx *ctx, seg_run *run, const char *what) {
  if (run->device.kind == LUMEN_DEVICE_CPU) return;
  run->total.used = lumen_device_cpu();
  if (!run->total.fell_back) {
    run->total.fell_back = 1;
    run->total.device_status = LUMEN_ERR_NOT_BUILT;
    snprintf(run->total.reason, sizeof run->total.reason, "no CUDA kernel for %s yet", what);
    lumen_log(ctx, LUMEN_LOG_WARNING, "%s: %s -> %s runs on the CPU", run->fn, run->device_name, what);
  }
}

lumen_status seg_end(seg_run *run, lumen_status s) {
  run->total.seconds = lumen_now_seconds() - run->t0;
  if (run->user) *run->user = run->total;
  return s;
}

void seg_copy_geometry(lumen_image *dst, const lumen_image *src) {
  double sp[LUMEN_IMAGE_MAX_DIMS], aff[16];
  int nd = lumen_image_ndim(dst);
  if (nd > lumen_image_ndim(src)) nd = lumen_image_ndim(src);
  if (lumen_image_get_spacing(src, sp, nd) == LUMEN_OK) lumen_image_set_spacing(NULL, dst, sp, nd);
  if (lumen_image_get_affine(src, aff) == LUMEN_OK) lumen_image_set_affine(NULL, dst, aff);
}

lumen_status seg_new_like(lumen_ctx *ctx, const lumen_image *like, lumen_dtype dtype, unsigned flags,
                          lumen_image **out) {
  int64_t dims[LUMEN_IMAGE_MAX_DIMS];
  int nd = lumen_image_ndim(like);
  for (int a = 0; a < nd; a++) dims[a] = lumen_image_dim(like, a);
  lumen_status s = lumen_image_create(ctx, nd, dims, dtype, lumen_device_cpu(), flags, out);
  if (s == LUMEN_OK) seg_copy_geometry(*out, like);
  return s;
}

lumen_status seg_to_host(lumen_ctx *ctx, lumen_image **img) {
  if (lumen_image_device(*img).kind == LUMEN_DEVICE_CPU) return LUMEN_OK;
  lumen_image *h = NULL;
  lumen_status s = lumen_image_to_device(ctx, *img, lumen_device_cpu(), &h);
  if (s != LUMEN_OK) return s;
  seg_copy_geometry(h, *img);
  lumen_image_free(*img);
  *img = h;
  return LUMEN_OK;
}

lumen_status seg_host_f32(lumen_ctx *ctx, const lumen_image *in, lumen_image **tmp, const float **data) {
  *tmp = NULL;
  *data = NULL;
  const lumen_image *h = in;
  lumen_image *host = NULL;
  lumen_status s;
  if (lumen_image_device(in).kind != LUMEN_DEVICE_CPU) {
    s = lumen_image_to_device(ctx, in, lumen_device_cpu(), &host);
    if (s != LUMEN_OK) return s;
    h = host;
  }
  if (lumen_image_dtype(h) != LUMEN_DTYPE_FLOAT32) {
    lumen_image *c = NULL;
    s = lumen_image_convert(ctx, h, LUMEN_DTYPE_FLOAT32, &c);
    lumen_image_free(host);
    if (s != LUMEN_OK) return s;
    host = c;
    h = c;
  }
  *tmp = host;
  *data = lumen_image_const_data(h);
  return LUMEN_OK;
}

lumen_status seg_own_f32(lumen_ctx *ctx, lumen_image **img) {
  lumen_status s = seg_to_host(ctx, img);
  if (s != LUMEN_OK) return s;
  if (lumen_image_dtype(*img) == LUMEN_DTYPE_FLOAT32 && lumen_image_owns_data(*img)) return LUMEN_OK;
  lumen_image *c = NULL;
  if (lumen_image_dtype(*img) == LUMEN_DTYPE_FLOAT32)
    s = lumen_image_clone(ctx, *img, &c);
  else
    s = lumen_image_convert(ctx, *img, LUMEN_DTYPE_FLOAT32, &c);
  if (s != LUMEN_OK) return s;
  seg_copy_geometry(c, *img);
  lumen_image_free(*img);
  *img = c;
  return LUMEN_OK;
}

lumen_status seg_store_precision(lumen_ctx *ctx, seg_run *run, lumen_image **img) {
  lumen_dtype want = lumen_precision_dtype(run->precision);
  if (lumen_image_dtype(*img) == want) return LUMEN_OK;
  lumen_image *c = NULL;
  lumen_status s = lumen_image_convert(ctx, *img, want, &c);
  if (s != LUMEN_OK) return s;
  seg_copy_geometry(c, *img);
  lumen_image_free(*img);
  *img = c;
  return LUMEN_OK;
}

lumen_status seg_per_slice(lumen_ctx *ctx, seg_run *run, const void *opts, const lumen_image *in, int spatial,
                           seg_slice_fn fn, lumen_image **out, double *scalar) {
  int nd = lumen_image_ndim(in);
  if (nd <= 2 || spatial >= 3) return fn(ctx, run, opts, in, out, scalar);
  int64_t nx = lumen_image_dim(in, 0), ny = lumen_image_dim(in, 1);
  int64_t nslices = lumen_image_count(in) / (nx * ny);
  size_t esz = lumen_dtype_size(lumen_image_dtype(in));
  const char *base = lumen_image_const_data(in);
  lumen_image *result = NULL;
  lumen_status s = LUMEN_OK;
  size_t out_slice_bytes = 0;
  int64_t dims2[2] = {nx, ny};
  for (int64_t z = 0; z < nslices && s == LUMEN_OK; z++) {
    lumen_image *view = NULL, *r = NULL;
    s = lumen_image_wrap(ctx, (void *)(uintptr_t)(base + (size_t)z * (size_t)(nx * ny) * esz), 2, dims2,
                         lumen_image_dtype(in), lumen_image_device(in), &view);
    if (s == LUMEN_OK) s = fn(ctx, run, opts, view, &r, scalar);
    lumen_image_free(view);
    if (s == LUMEN_OK) s = seg_to_host(ctx, &r);
    if (s == LUMEN_OK && !result) {
      s = seg_new_like(ctx, in, lumen_image_dtype(r), 0, &result);
      out_slice_bytes = (size_t)(nx * ny) * lumen_dtype_size(lumen_image_dtype(r));
    }
    if (s == LUMEN_OK) {
      if (lumen_image_dtype(r) != lumen_image_dtype(result)) {
        s = lumen_fail(ctx, LUMEN_ERR_INTERNAL, "%s: slices gave different output types", run->fn);
      } else {
        memcpy((char *)lumen_image_data(result) + (size_t)z * out_slice_bytes, lumen_image_const_data(r),
               out_slice_bytes);
      }
    }
    lumen_image_free(r);
    if (s == LUMEN_OK && nslices > 1) s = lumen_progress(ctx, (double)(z + 1) / (double)nslices, run->total.op);
  }
  if (s != LUMEN_OK) {
    lumen_image_free(result);
    return s;
  }
  *out = result;
  return LUMEN_OK;
}
