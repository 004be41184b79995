/* Internal interface of lumen's filters: the op table, the dispatcher and the call record that
 * every backend implementation receives. Compiles as C and as C++ (CUDA .cu files include it).
 *
 * Writing a backend for an op (CUDA helpers: see docs/FILTERS.md "Adding a CUDA kernel"):
 *   lumen_status my_impl(lumen_ctx *ctx, lf_call *call);
 * The public entry validated the options and resolved the parameters (call->params, per op: see
 * the lf_*_params structs below). The dispatcher staged the inputs on the backend's device
 * (call->in[]) and allocated call->out there with dims/geometry of in[0] and dtype
 * call->alloc_dtype. The implementation fills call->out (and/or call->scalar / call->count).
 *   CPU:  call->in_f32[i] are the inputs as float32 host arrays; alloc_dtype is float32 for float
 *         outputs (the dispatcher rounds to half/bfloat16 afterwards), uint8/int32 for masks/labels.
 *   CUDA: alloc_dtype == call->out_dtype (the storage precision); in[] are on call->device;
 *         return LUMEN_ERR_DEVICE_OUT_OF_MEMORY / LUMEN_ERR_DEVICE to have the CPU rerun the op.
 */
#ifndef LUMEN_FILTER_INTERNAL_H
#define LUMEN_FILTER_INTERNAL_H

#include <stdint.h>
#include "core/internal.h"
#include "lumen/filter.h"
#include "filter/filter_hd.h"  /* lf_ext, element runs, Otsu: shared with the CUDA kernels */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lf_op_id {
  LF_OP_GAUSSIAN = 0,
  LF_OP_DOG,
  LF_OP_LAPLACE,
  LF_OP_MEDIAN,
  LF_OP_GAMMA,
  LF_OP_CONTRAST,
  LF_OP_CONVOLVE,
  LF_OP_BANDPASS,
  LF_OP_OTSU,
  LF_OP_SAUVOLA,
  LF_OP_LOCAL_VARIANCE,
  LF_OP_VARIANCE_BINARIZE,
  LF_OP_MORPHOLOGY,
  LF_OP_FILL_HOLES,
  LF_OP_LABEL,
  LF_OP_LARGEST_COMPONENT,
  LF_OP_ENTROPY,
  LF_OP_MUTUAL_INFORMATION,
  LF_OP_VARIANCE,
  LF_OP_ABS,
  LF_OP_COUNT
} lf_op_id;

/* Geometry of a call: spatial dims n[0..2] (1 beyond spatial) and the batch count. */
typedef struct lf_geom {
  int spatial;      /* 1..3 */
  int64_t n[3];     /* x, y, z extents */
  int64_t batch;    /* number of spatial blocks */
  int64_t block;    /* n[0] * n[1] * n[2] */
  int64_t total;    /* block * batch */
} lf_geom;

/* Resolved parameters of the Gaussian family (GAUSSIAN, DOG, LAPLACE). */
typedef struct lf_gauss_params {
  double sigma[2][3];      /* [0]: the (low) sigma per axis in voxels; [1]: DoG high sigma */
  int radius[2][3];        /* int(truncate * sigma + 0.5) */
  double truncate;
  lumen_boundary mode;
  float cval;
  int discrete;            /* LAPLACE: reference form */
} lf_gauss_params;

/* Resolved convolution: kernel as given (x fastest), padded to 3 dims, and the centre per axis. */
typedef struct lf_conv_params {
  const float *kernel;     /* already flipped for convolution (owned by the entry) */
  int64_t kd[3];
  int64_t centre[3];       /* out[i] = sum_j k[j] in[i + j - centre] */
  lumen_boundary mode;
  float cval;
} lf_conv_params;

typedef struct lf_call {
  lf_op_id op;
  const void *opts;              /* the op's public options struct (defaults applied) */
  const void *params;            /* resolved parameters (lf_*_params) or NULL */
  lf_geom geom;                  /* from in[0] and spatial_dims */
  int nin;
  const lumen_image *in[2];      /* inputs on the backend's device */
  const float *in_f32[2];        /* CPU: inputs as float32 host arrays */
  int has_out;                   /* the op produces an image */
  lumen_dtype out_dtype;         /* dtype of the final output */
  lumen_dtype alloc_dtype;       /* dtype of call->out as given to the backend */
  lumen_image *out;              /* allocated by the dispatcher */
  double scalar[8];              /* scalar results (per op) */
  int64_t count;                 /* LABEL: number of labels */
  lumen_device device;           /* where this implementation runs */
  lumen_precision precision;
  int threads;                   /* CPU threads */
  const uint8_t *in_u8[2];       /* CPU: set instead of in_f32 for a uint8 host input when the
                                    op reads masks directly (lf_takes_u8); else NULL */
} lf_call;

typedef lumen_status (*lf_impl)(lumen_ctx *ctx, lf_call *call);

typedef struct lf_op {
  const char *name;
  lf_impl cpu;
  lf_impl cuda;  /* NULL: no CUDA kernel yet (the dispatcher falls back to the CPU with a reason) */
} lf_op;

/* The table (dispatch.c). */
const lf_op *lf_op_get(lf_op_id op);

/* Runs call->op: resolves device and precision from exec, stages inputs, allocates the output,
   runs the backend with one CPU rerun on a device failure, converts to the storage precision,
   fills the report. On success *out (if the op has an image output) receives the output. */
lumen_status lf_dispatch(lumen_ctx *ctx, lf_call *call, const lumen_filter_exec *exec, lumen_image **out);

/* Geometry from an image and a spatial_dims option (0 = min(ndim, 3)); fails on bad values. */
lumen_status lf_geom_make(lumen_ctx *ctx, const char *fn, const lumen_image *im, int spatial_dims, lf_geom *g);

/* Gaussian kernel of scipy.ndimage (_gaussian_kernel1d): order 0 or 2, 2*radius+1 taps,
   computed in double and rounded to float. */
void lf_gaussian_kernel(double sigma, int order, int radius, float *w);

/* CPU implementations (one per op; src/filter/cpu_*.c). */
lumen_status lf_cpu_gaussian(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_dog(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_laplace(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_median(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_gamma(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_abs(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_contrast(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_convolve(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_bandpass(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_otsu(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_sauvola(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_local_variance(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_variance_binarize(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_morphology(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_fill_holes(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_label(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_largest_component(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_entropy(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_mutual_information(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cpu_variance(lumen_ctx *ctx, lf_call *call);

/* Shared CPU building blocks. */
/* madvise(MADV_HUGEPAGE) on the 2 MB-aligned interior of a large host buffer (a hint). */
void lf_advise_huge(void *ptr, size_t bytes);
/* malloc with that hint (free with free()). */
void *lf_malloc_big(size_t bytes);
/* A large work buffer from a one-slot process-wide cache (else lf_malloc_big), so that repeated
   calls on same-sized images reuse pages instead of faulting in freshly zeroed ones. Contents are
   undefined. Give it back with lf_scratch_put (which frees whatever the slot no longer keeps). */
void *lf_scratch_get(size_t bytes);
void lf_scratch_put(void *ptr);
/* Window sums of x and x^2 (float64) with an odd window along every spatial axis. */
lumen_status lf_cpu_box_moments(lumen_ctx *ctx, const float *in, const lf_geom *g, int window, lumen_boundary mode,
                                double cval, double **sum, double **sumsq, int threads);
/* Binary labelling core: labels (int32) of mask != 0; returns count or -1 on allocation failure. */
int64_t lf_cpu_label_core(const float *in, int32_t *labels, const lf_geom *g, int connectivity);

/* ---------------------------------------------------------------- test hooks (not public API)
   Replace the CUDA implementation of an op for tests: with a hook installed, a call resolved to a
   CUDA device runs the hook WITHOUT staging data on the device (the hook sees host inputs and a
   host output of alloc_dtype = the storage dtype), so a machine without a GPU can test the
   fallback path. Pass NULL to remove. Returns the previous hook. Not thread-safe: tests only. */
lf_impl lumen_filter_test_set_cuda_hook(lf_op_id op, lf_impl hook);

#ifdef __cplusplus
}
#endif
#endif
