/* Internal helpers of lumen's segmentation algorithms (src/segment): device resolution and the
 * combined report, float32 host views, slice iteration. The algorithms compose filter ops
 * (filter.h) and do only light host work (absolute value, clustering, region growing) here. */
#ifndef LUMEN_SEG_INTERNAL_H
#define LUMEN_SEG_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include "core/internal.h"
#include "lumen/segment.h"

/* One algorithm call: the resolved device and precision, the exec given to every filter step,
   and the combined report. */
typedef struct seg_run {
  const char *fn;               /* "lumen_segment_febds" ... for messages */
  lumen_device device;          /* resolved */
  char device_name[32];
  lumen_precision precision;
  lumen_filter_exec step;       /* device = device_name, precision, report = &step_report */
  lumen_filter_report step_report;
  lumen_filter_report total;    /* combined */
  lumen_filter_report *user;    /* the caller's report or NULL */
  double t0;
} seg_run;

/* Resolves device (exec.device, else the input's, else the context's) and precision. */
lumen_status seg_begin(lumen_ctx *ctx, seg_run *run, const char *fn, const char *name, const lumen_filter_exec *exec,
                       const lumen_image *in);
/* The start of every algorithm call: clears *out and requires it (out_name, "out" or "mask",
   names it in the message), then seg_begin (exec NULL: the defaults, as opts NULL gives).
   A failure of seg_begin is returned through seg_end; a NULL out returns before the run starts. */
lumen_status seg_start(lumen_ctx *ctx, seg_run *run, const char *fn, const char *name, const lumen_filter_exec *exec,
                       const lumen_image *in, lumen_image **out, const char *out_name);
/* Folds step_report into total after a filter step. */
void seg_step_done(seg_run *run);
/* Records that a host step ran on the CPU although a CUDA device was requested. */
void seg_host_step(lumen_ctx *ctx, seg_run *run, const char *what);
/* Fills the caller's report (time included). Returns s. */
lumen_status seg_end(seg_run *run, lumen_status s);

/* A float32 host copy/view of an image: *data points at float32 voxels; *tmp (free it) is set
   when a conversion or transfer was needed. */
lumen_status seg_host_f32(lumen_ctx *ctx, const lumen_image *in, lumen_image **tmp, const float **data);
/* Makes img a writable float32 host image that the caller owns (converting/transferring when
   needed; the old image is freed). */
lumen_status seg_own_f32(lumen_ctx *ctx, lumen_image **img);
/* Converts an owned float32 host image to the run's storage precision (in place of *img). */
lumen_status seg_store_precision(lumen_ctx *ctx, seg_run *run, lumen_image **img);
/* A new host image with the dims and geometry of like. */
lumen_status seg_new_like(lumen_ctx *ctx, const lumen_image *like, lumen_dtype dtype, unsigned flags,
                          lumen_image **out);
/* Makes *img a host image (transfers when it lives on a device). */
lumen_status seg_to_host(lumen_ctx *ctx, lumen_image **img);
/* Copies dims/spacing/affine of src onto dst (dims must match). */
void seg_copy_geometry(lumen_image *dst, const lumen_image *src);

/* Per-slice processing of a 2-D algorithm: calls fn on every z-slice (wrapped, no copy) of a
   3-D/4-D image and assembles the results (all of one dtype) into *out. spatial 3 or a 2-D
   image: one call on the whole image. */
typedef lumen_status (*seg_slice_fn)(lumen_ctx *ctx, seg_run *run, const void *opts, const lumen_image *slice,
                                     lumen_image **out, double *scalar);
lumen_status seg_per_slice(lumen_ctx *ctx, seg_run *run, const void *opts, const lumen_image *in, int spatial,
                           seg_slice_fn fn, lumen_image **out, double *scalar);

/* The exec of a NULL opts, as lumen_filter_exec_init sets it: for the static default options that
   the opts_init functions copy and that a NULL opts stands for. */
#define SEG_DEFAULT_EXEC {.device = NULL, .precision = LUMEN_FILTER_PRECISION_DEFAULT, .report = NULL}
/* The definition of the public T_init(T *o): *o = defaults (NULL o: nothing), the exec by
   lumen_filter_exec_init. */
#define SEG_DEFINE_OPTS_INIT(T, defaults) \
  void T##_init(T *o) {                   \
    if (!o) return;                       \
    *o = (defaults);                      \
    lumen_filter_exec_init(&o->exec);     \
  }

/* Deterministic random numbers (splitmix64). */
static inline uint64_t seg_rand_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static inline double seg_rand_uniform(uint64_t *s) { return (double)(seg_rand_next(s) >> 11) * 0x1.0p-53; }

/* Fuzzy c-means memberships of x for the k centres c, exponent e = 2 / (m - 1) (a voxel on a
   centre: 1 there); lumen_segment_fcm and its value-count form (src/filter/cpu_fcm_values.c). */
static inline void seg_fcm_memberships(double x, const double *c, int k, double e, double *u) {
  double dd[LUMEN_CLUSTER_MAX];
  for (int j = 0; j < k; j++) {
    dd[j] = fabs(x - c[j]);
    if (dd[j] == 0) {
      for (int l = 0; l < k; l++) u[l] = l == j ? 1.0 : 0.0;
      return;
    }
  }
  for (int j = 0; j < k; j++) {
    double s = 0;
    for (int l = 0; l < k; l++) {
      const double r = dd[j] / dd[l];
      s += e == 2.0 ? r * r : pow(r, e);
    }
    u[j] = 1.0 / s;
  }
}

#endif
