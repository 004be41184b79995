/* The filter dispatcher: device and precision resolution, staging, the op table, the single CPU
 * rerun after a device failure (lumen's gpu_safe, for every op), the report. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include "core/cuda_iface.h"
#include "filter/filter_internal.h"
#include "filter/op_native.h"

/* CUDA kernels register here. A CUDA build that provides src/cuda/filter_*.cu defines
   LUMEN_FILTER_CUDA_KERNELS and declares the lf_cuda_* functions in filter/filter_cuda.h; until an
   op has one its entry stays NULL and a CUDA request reruns on the CPU with a recorded reason. */
#if defined(LUMEN_FILTER_CUDA_KERNELS)
#include "filter/filter_cuda.h"
#define LF_CUDA(fn) fn
#else
#define LF_CUDA(fn) NULL
#endif

static const lf_op op_table[LF_OP_COUNT] = {
  [LF_OP_GAUSSIAN] = {"gaussian", lf_cpu_gaussian, LF_CUDA(lf_cuda_gaussian)},
  [LF_OP_DOG] = {"dog", lf_cpu_dog, LF_CUDA(lf_cuda_dog)},
  [LF_OP_LAPLACE] = {"gaussian_laplace", lf_cpu_laplace, LF_CUDA(lf_cuda_laplace)},
  [LF_OP_MEDIAN] = {"median", lf_cpu_median, LF_CUDA(lf_cuda_median)},
  [LF_OP_GAMMA] = {"gamma", lf_cpu_gamma, LF_CUDA(lf_cuda_gamma)},
  [LF_OP_CONTRAST] = {"contrast", lf_cpu_contrast, LF_CUDA(lf_cuda_contrast)},
  [LF_OP_CONVOLVE] = {"convolve", lf_cpu_convolve, LF_CUDA(lf_cuda_convolve)},
  [LF_OP_BANDPASS] = {"bandpass", lf_cpu_bandpass, LF_CUDA(lf_cuda_bandpass)},
  [LF_OP_OTSU] = {"otsu", lf_cpu_otsu, LF_CUDA(lf_cuda_otsu)},
  [LF_OP_SAUVOLA] = {"sauvola", lf_cpu_sauvola, LF_CUDA(lf_cuda_sauvola)},
  [LF_OP_LOCAL_VARIANCE] = {"local_variance", lf_cpu_local_variance, LF_CUDA(lf_cuda_local_variance)},
  [LF_OP_VARIANCE_BINARIZE] = {"variance_binarize", lf_cpu_variance_binarize, LF_CUDA(lf_cuda_variance_binarize)},
  [LF_OP_MORPHOLOGY] = {"morphology", lf_cpu_morphology, LF_CUDA(lf_cuda_morphology)},
  /* hole filling on the device by monotone sweeps to a fixpoint (filter_region.cu); labelling and the
     largest component stay on the CPU (a CUDA request reruns there with a reason) */
  [LF_OP_FILL_HOLES] = {"fill_holes", lf_cpu_fill_holes, LF_CUDA(lf_cuda_fill_holes)},
  [LF_OP_LABEL] = {"label", lf_cpu_label, LF_CUDA(NULL)},
  [LF_OP_LARGEST_COMPONENT] = {"largest_component", lf_cpu_largest_component, LF_CUDA(NULL)},
  [LF_OP_ENTROPY] = {"entropy", lf_cpu_entropy, LF_CUDA(lf_cuda_entropy)},
  [LF_OP_MUTUAL_INFORMATION] = {"mutual_information", lf_cpu_mutual_information, LF_CUDA(lf_cuda_mutual_information)},
  [LF_OP_VARIANCE] = {"variance", lf_cpu_variance, LF_CUDA(lf_cuda_variance)},
  [LF_OP_ABS] = {"abs", lf_cpu_abs, LF_CUDA(lf_cuda_abs)},
};

static lf_impl test_hooks[LF_OP_COUNT];

lf_impl lumen_filter_test_set_cuda_hook(lf_op_id op, lf_impl hook) {
  if ((int)op < 0 || op >= LF_OP_COUNT) return NULL;
  lf_impl prev = test_hooks[op];
  test_hooks[op] = hook;
  return prev;
}

const lf_op *lf_op_get(lf_op_id op) {
  if ((int)op < 0 || op >= LF_OP_COUNT) return NULL;
  return &op_table[op];
}

int lumen_filter_op_count(void) { return LF_OP_COUNT; }

const char *lumen_filter_op_name(int index) {
  return index >= 0 && index < LF_OP_COUNT ? op_table[index].name : NULL;
}

int lumen_filter_op_has_cuda(const char *op) {
  if (!op) return 0;
  for (int i = 0; i < LF_OP_COUNT; i++)
    if (strcmp(op, op_table[i].name) == 0) return op_table[i].cuda != NULL;
  return 0;
}

void lumen_filter_exec_init(lumen_filter_exec *exec) {
  if (!exec) return;
  exec->device = NULL;
  exec->precision = LUMEN_FILTER_PRECISION_DEFAULT;
  exec->report = NULL;
}

static const char *const boundary_names[LUMEN_BOUNDARY_COUNT] = {"reflect", "nearest", "constant", "wrap", "mirror"};

const char *lumen_boundary_name(lumen_boundary mode) {
  return (int)mode >= 0 && mode < LUMEN_BOUNDARY_COUNT ? boundary_names[mode] : "unknown";
}

lumen_status lumen_boundary_parse(const char *name, lumen_boundary *out) {
  if (!name || !out) return LUMEN_ERR_INVALID_ARGUMENT;
  for (int i = 0; i < LUMEN_BOUNDARY_COUNT; i++)
    if (strcmp(name, boundary_names[i]) == 0) {
      *out = (lumen_boundary)i;
      return LUMEN_OK;
    }
  if (strcmp(name, "grid-wrap") == 0) { *out = LUMEN_BOUNDARY_WRAP; return LUMEN_OK; }
  if (strcmp(name, "grid-constant") == 0) { *out = LUMEN_BOUNDARY_CONSTANT; return LUMEN_OK; }
  if (strcmp(name, "edge") == 0 || strcmp(name, "replicate") == 0) { *out = LUMEN_BOUNDARY_NEAREST; return LUMEN_OK; }
  if (strcmp(name, "symmetric") == 0) { *out = LUMEN_BOUNDARY_REFLECT; return LUMEN_OK; }
  return LUMEN_ERR_INVALID_ARGUMENT;
}

lumen_status lf_geom_make(lumen_ctx *ctx, const char *fn, const lumen_image *im, int spatial_dims, lf_geom *g) {
  int ndim = lumen_image_ndim(im);
  int s = spatial_dims == 0 ? (ndim < 3 ? ndim : 3) : spatial_dims;
  LUMEN_REQUIRE(ctx, spatial_dims >= 0 && spatial_dims <= 3 && s <= ndim,
                "%s: spatial_dims is %d, expected 0 (auto) or 1..min(3, ndim = %d)", fn, spatial_dims, ndim);
  memset(g, 0, sizeof *g);
  g->spatial = s;
  g->batch = 1;
  for (int a = 0; a < 3; a++) g->n[a] = a < s ? lumen_image_dim(im, a) : 1;
  for (int a = s; a < LUMEN_IMAGE_MAX_DIMS; a++) g->batch *= lumen_image_dim(im, a);
  g->block = g->n[0] * g->n[1] * g->n[2];
  g->total = g->block * g->batch;
  return LUMEN_OK;
}

static void copy_geometry(lumen_image *dst, const lumen_image *src) {
  double sp[LUMEN_IMAGE_MAX_DIMS], aff[16];
  int nd = lumen_image_ndim(dst);
  if (lumen_image_get_spacing(src, sp, nd) == LUMEN_OK) lumen_image_set_spacing(NULL, dst, sp, nd);
  if (lumen_image_get_affine(src, aff) == LUMEN_OK) lumen_image_set_affine(NULL, dst, aff);
}

static lumen_status alloc_out(lumen_ctx *ctx, lf_call *call, lumen_device dev, lumen_dtype dtype) {
  const lumen_image *in = call->in[0];
  int64_t dims[LUMEN_IMAGE_MAX_DIMS];
  int nd = lumen_image_ndim(in);
  for (int a = 0; a < nd; a++) dims[a] = lumen_image_dim(in, a);
  call->alloc_dtype = dtype;
  lumen_status s = lumen_image_create(ctx, nd, dims, dtype, dev, 0, &call->out);
  if (s == LUMEN_OK && dev.kind == LUMEN_DEVICE_CPU)
    lf_advise_huge(lumen_image_data(call->out), (size_t)lumen_image_nbytes(call->out));
  return s;
}

static int device_failure(lumen_status s) {
  return s == LUMEN_ERR_DEVICE_OUT_OF_MEMORY || s == LUMEN_ERR_DEVICE || s == LUMEN_ERR_NO_DEVICE ||
         s == LUMEN_ERR_NOT_BUILT;
}

/* A CPU fallback for an expected absence (no CUDA kernel for the op, no usable device or no CUDA
   in this build) is a warning the first time per process and cause, then info: a segmentation
   runs several filters, and each step falling back for the same reason would repeat it. A device
   that fails (an error, memory full) is news each time: always a warning. */
static lumen_log_level fallback_level(lumen_status s) {
  static atomic_uint warned;
  unsigned bit = s == LUMEN_ERR_NOT_BUILT ? 1u : s == LUMEN_ERR_NO_DEVICE ? 2u : 0u;
  if (!bit) return LUMEN_LOG_WARNING;
  return atomic_fetch_or(&warned, bit) & bit ? LUMEN_LOG_INFO : LUMEN_LOG_WARNING;
}

/* The CUDA attempt: stage inputs on dev (unless a test hook runs), allocate the output, run. */
/* The end of a run on a device or the CPU: the output dropped on failure, the inputs it moved or
   converted freed, and the call's own inputs (and no data views) back in place. */
static void end_run(lf_call *call, lumen_status s, const lumen_image *const orig[2], lumen_image *const moved[2],
                    lumen_image *const conv[2]) {
  if (s != LUMEN_OK) {
    lumen_image_free(call->out);
    call->out = NULL;
  }
  for (int i = 0; i < 2; i++) {
    lumen_image_free(moved[i]);
    lumen_image_free(conv[i]);
    call->in[i] = orig[i];
    call->in_f32[i] = NULL;
    call->in_u8[i] = NULL;
  }
}

static lumen_status run_device(lumen_ctx *ctx, lf_call *call, lumen_device dev, lf_impl impl, int hooked) {
  const lumen_image *orig[2] = {call->in[0], call->in[1]};
  lumen_image *staged[2] = {NULL, NULL};
  lumen_image *conv[2] = {NULL, NULL};
  lumen_status s = LUMEN_OK;
  call->device = dev;
  call->out = NULL;
  for (int i = 0; i < call->nin && s == LUMEN_OK; i++) {
    if (hooked) {
      /* test hook: host data, float32 view as the CPU path gets */
      if (lumen_image_dtype(orig[i]) == LUMEN_DTYPE_FLOAT32) {
        call->in_f32[i] = lumen_image_const_data(orig[i]);
      } else {
        s = lumen_image_convert(ctx, orig[i], LUMEN_DTYPE_FLOAT32, &conv[i]);
        if (s == LUMEN_OK) call->in_f32[i] = lumen_image_const_data(conv[i]);
      }
    } else if (!lumen_device_equal(lumen_image_device(orig[i]), dev)) {
      s = lumen_image_to_device(ctx, orig[i], dev, &staged[i]);
      if (s == LUMEN_OK) call->in[i] = staged[i];
    }
  }
  if (s == LUMEN_OK && call->has_out)
    s = alloc_out(ctx, call, hooked ? lumen_device_cpu() : dev, call->out_dtype);
  if (s == LUMEN_OK) s = impl(ctx, call);
  end_run(call, s, orig, staged, conv);
  return s;
}

/* CPU ops that read a uint8 input directly (x != 0), avoiding a float32 copy of a mask: binary
   box morphology, hole filling, labelling and the largest component (single input). */
static int takes_u8(const lf_call *call) {
  if (call->nin != 1) return 0;
  if (call->op == LF_OP_FILL_HOLES || call->op == LF_OP_LABEL || call->op == LF_OP_LARGEST_COMPONENT) return 1;
  if (call->op == LF_OP_MORPHOLOGY) {
    const lumen_morph_opts *o = call->opts;
    return o && o->binary && (o->element == LUMEN_ELEMENT_SQUARE || o->element == LUMEN_ELEMENT_CUBE);
  }
  return 0;
}

static lumen_status run_cpu(lumen_ctx *ctx, lf_call *call, const lf_op *op) {
  const lumen_image *orig[2] = {call->in[0], call->in[1]};
  lumen_image *host[2] = {NULL, NULL};
  lumen_image *conv[2] = {NULL, NULL};
  lumen_status s = LUMEN_OK;
  call->device = lumen_device_cpu();
  call->out = NULL;
  for (int i = 0; i < call->nin && s == LUMEN_OK; i++) {
    const lumen_image *h = orig[i];
    if (lumen_image_device(h).kind != LUMEN_DEVICE_CPU) {
      s = lumen_image_to_device(ctx, h, lumen_device_cpu(), &host[i]);
      if (s != LUMEN_OK) break;
      h = host[i];
    }
    if (lumen_image_dtype(h) == LUMEN_DTYPE_UINT8 && takes_u8(call)) {
      /* a mask read as bytes: no float32 copy */
      call->in[i] = h;
      call->in_u8[i] = lumen_image_const_data(h);
      continue;
    }
    if (lumen_image_dtype(h) != LUMEN_DTYPE_FLOAT32) {
      s = lumen_image_convert(ctx, h, LUMEN_DTYPE_FLOAT32, &conv[i]);
      if (s != LUMEN_OK) break;
      h = conv[i];
    }
    call->in[i] = h;
    call->in_f32[i] = lumen_image_const_data(h);
  }
  int float_out = call->out_dtype == LUMEN_DTYPE_FLOAT32 || call->out_dtype == LUMEN_DTYPE_FLOAT16 ||
                  call->out_dtype == LUMEN_DTYPE_BFLOAT16;
  if (s == LUMEN_OK && call->has_out)
    s = alloc_out(ctx, call, lumen_device_cpu(), float_out ? LUMEN_DTYPE_FLOAT32 : call->out_dtype);
  if (s == LUMEN_OK) s = op->cpu(ctx, call);
  if (s == LUMEN_OK && call->has_out && call->out_dtype != call->alloc_dtype) {
    lumen_image *rounded = NULL;
    s = lumen_image_convert(ctx, call->out, call->out_dtype, &rounded);
    lumen_image_free(call->out);
    call->out = rounded;
  }
  end_run(call, s, orig, host, conv);
  return s;
}

/* The dispatch of one op, from the table (lf_dispatch) or defined in its own file (lf_dispatch_native);
   hook: the test hook of a table op's CUDA path, NULL for none. */
static lumen_status dispatch_op(lumen_ctx *ctx, lf_call *call, const lf_op *op, lf_impl hook,
                                const lumen_filter_exec *exec, lumen_image **out) {
  double t0 = lumen_now_seconds();
  lumen_filter_report local;
  lumen_filter_report *rep = exec && exec->report ? exec->report : &local;
  memset(rep, 0, sizeof *rep);
  snprintf(rep->op, sizeof rep->op, "%s", op->name);
  rep->requested = rep->used = lumen_device_cpu();
  rep->device_status = LUMEN_OK;

  /* device: explicit, else the input's, else the context default */
  lumen_device dev;
  lumen_status s;
  if (exec && exec->device && exec->device[0]) {
    s = lumen_device_parse(ctx, exec->device, &dev);
    if (s != LUMEN_OK)
      return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                        "lumen_filter_%s: exec.device is '%s', expected \"cpu\", \"cuda\" or \"cuda:N\"", op->name,
                        exec->device);
  } else if (call->in[0]) {
    dev = lumen_image_device(call->in[0]);
  } else {
    dev = lumen_ctx_device_default(ctx);
  }
  rep->requested = dev;

  /* precision: explicit, else the context default */
  int p = exec ? exec->precision : LUMEN_FILTER_PRECISION_DEFAULT;
  if (p == LUMEN_FILTER_PRECISION_DEFAULT) p = (int)lumen_ctx_default_precision(ctx);
  LUMEN_REQUIRE(ctx, p >= 0 && p < LUMEN_PRECISION_COUNT,
                "lumen_filter_%s: exec.precision is %d, expected LUMEN_FILTER_PRECISION_DEFAULT (-1) or a "
                "lumen_precision (0..%d)",
                op->name, p, LUMEN_PRECISION_COUNT - 1);
  call->precision = (lumen_precision)p;
  rep->precision = call->precision;
  if (call->out_dtype == LUMEN_DTYPE_FLOAT32) call->out_dtype = lumen_precision_dtype(call->precision);
  call->threads = lumen_ctx_threads(ctx);

  s = LUMEN_ERR_NOT_BUILT;
  int done = 0;
  if (dev.kind == LUMEN_DEVICE_CUDA) {
    lf_impl impl = hook ? hook : op->cuda;
    if (!impl) {
      rep->fell_back = 1;
      rep->device_status = LUMEN_ERR_NOT_BUILT;
      snprintf(rep->reason, sizeof rep->reason, "no CUDA kernel for %s yet", op->name);
    } else {
      s = run_device(ctx, call, dev, impl, hook != NULL);
      if (s == LUMEN_OK) {
        done = 1;
        rep->used = dev;
      } else if (device_failure(s)) {
        rep->fell_back = 1;
        rep->device_status = s;
        snprintf(rep->reason, sizeof rep->reason, "%s: %s", lumen_status_name(s), lumen_ctx_last_error(ctx));
        lumen_ctx_clear_error(ctx);
        if (!hook) {
          lumen_cudai_release_cache(ctx, dev.index);
          lumen_ctx_clear_error(ctx);
        }
      } else {
        rep->seconds = lumen_now_seconds() - t0;
        return s;
      }
    }
    if (!done) {
      char name[32];
      lumen_device_format(dev, name, sizeof name);
      lumen_log_level lv = fallback_level(rep->device_status);
      lumen_log(ctx, lv, "lumen_filter_%s: %s -> running on the CPU (%s)%s", op->name, name, rep->reason,
                lv == LUMEN_LOG_WARNING ? "; said once: later steps that fall back for this reason are logged at info level" : "");
    }
  }
  if (!done) {
    s = run_cpu(ctx, call, op);
    rep->used = lumen_device_cpu();
  }
  if (s == LUMEN_OK && call->has_out) {
    copy_geometry(call->out, call->in[0]);
    if (out) *out = call->out;
    else lumen_image_free(call->out);
    call->out = NULL;
  }
  rep->seconds = lumen_now_seconds() - t0;
  return s;
}

lumen_status lf_dispatch(lumen_ctx *ctx, lf_call *call, const lumen_filter_exec *exec, lumen_image **out) {
  const lf_op *op = lf_op_get(call->op);
  if (out) *out = NULL;
  if (!op) return lumen_fail(ctx, LUMEN_ERR_INTERNAL, "lf_dispatch: unknown op %d", (int)call->op);
  return dispatch_op(ctx, call, op, test_hooks[call->op], exec, out);
}

lumen_status lf_dispatch_native(lumen_ctx *ctx, lf_call *call, const lf_op *op, const lumen_filter_exec *exec,
                                lumen_image **out) {
  if (out) *out = NULL;
  if (!op || !op->cpu) return lumen_fail(ctx, LUMEN_ERR_INTERNAL, "lf_dispatch_native: an op without a CPU kernel");
  call->op = LF_OP_COUNT; /* not a table op: no test hook, no uint8 shortcut */
  return dispatch_op(ctx, call, op, NULL, exec, out);
}
