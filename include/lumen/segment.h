/* lumen: segmentation algorithms built from the image filters (filter.h).
 *
 * One public entry per algorithm:
 *
 *     lumen_status lumen_segment_ALGO(lumen_ctx *ctx, const lumen_image *in,
 *                                     const lumen_ALGO_opts *opts, lumen_image **out, ...);
 *
 * - opts may be NULL (= the defaults of lumen_ALGO_opts_init). Every options struct starts with a
 *   lumen_filter_exec (device, precision, report), with the same rules as the filters: the device
 *   is exec.device, else the input image's, else the context default; every filter step runs
 *   there and reruns once on the CPU after a device failure; steps without a CUDA kernel run on
 *   the CPU. The report (when exec.report is set) names the algorithm, the requested device, the
 *   device that computed the LAST step, fell_back = 1 when any step fell back (reason: the first
 *   one), the precision and the wall time of the whole call.
 * - Precision: float intermediates and float outputs are stored in exec.precision (default: the
 *   context's); arithmetic is float32 (clustering sums float64). Masks are uint8 0/1.
 * - 2-D algorithms (FEBDS, top-hat, breast mask) process a 3-D image slice by slice (every
 *   z-slice is an independent 2-D image) unless their spatial_dims is 3.
 * - Results are host images (or the device of the last step); outputs have the input's dims,
 *   spacing and affine. *out is NULL on failure, with the reason in lumen_ctx_last_error().
 *
 * docs/SEGMENTATION.md lists every parameter and default, where they follow the reference
 * framework (medical_image, shared/IMAGING.md) and which of its flaws lumen fixes.
 */
#ifndef LUMEN_SEGMENT_H
#define LUMEN_SEGMENT_H
#include "lumen/export.h"

#include <stdint.h>
#include "lumen/context.h"
#include "lumen/filter.h"
#include "lumen/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ FEBDS */

typedef enum lumen_febds_method {
  LUMEN_FEBDS_DOG = 0,   /* difference of Gaussians G_1.7 - G_2.0 */
  LUMEN_FEBDS_LOG,       /* Laplacian of Gaussian, sigma 2 */
  LUMEN_FEBDS_FFT,       /* Butterworth band-pass in the Fourier domain (FFTW at run time) */
  LUMEN_FEBDS_METHOD_COUNT
} lumen_febds_method;

LUMEN_API const char *lumen_febds_method_name(lumen_febds_method method); /* "dog", "log", "fft"; "unknown" */
/* Parses "dog", "log" or "fft"; anything else is LUMEN_ERR_INVALID_ARGUMENT with a message that
   names the valid methods (ctx may be NULL: no message). */
LUMEN_API lumen_status lumen_febds_method_parse(lumen_ctx *ctx, const char *name, lumen_febds_method *out);

typedef struct lumen_febds_opts {
  lumen_filter_exec exec;
  lumen_febds_method method;  /* default DOG */
  double dog_low_sigma;       /* 1.7 */
  double dog_high_sigma;      /* 2.0 */
  double log_sigma;           /* 2.0 */
  double fft_d0;              /* 21: band-pass centre radius (frequency samples) */
  double fft_width;           /* 32 */
  int fft_order;              /* 3 */
  int fft_pad;                /* 32: mirror padding on every side before the FFT (2-D), so that the
                                 periodic transform sees no step between opposite borders; 0 = none */
  int median_size;            /* 5 (odd) */
  double gamma;               /* 1.25 */
  double gamma_max;           /* 4095 (12-bit scale) */
  double variance_alpha;      /* fft: local-variance binarisation alpha, 1.0 */
  int variance_window;        /* fft: 5 (odd) */
  int otsu_bins;              /* dog/log: 0 = the filter default (256 for data in [0, 255], else 4096) */
  int closing_size;           /* 7 (odd): binary closing with a square; 0 = no closing */
  int fill_holes;             /* 1: fill holes at the end; 0: no */
  int spatial_dims;           /* 2 (default): per 2-D slice; 3: a 3-D image as one volume */
} lumen_febds_opts;
LUMEN_API void lumen_febds_opts_init(lumen_febds_opts *opts);

/* FEBDS microcalcification segmentation: enhance (method), |.|, median, gamma, threshold (Otsu for
   dog/log, local-variance binarisation for fft), binary closing, hole filling. *mask: uint8 0/1.
   threshold (may be NULL) receives the Otsu threshold of the last slice (NaN for fft). */
LUMEN_API lumen_status lumen_segment_febds(lumen_ctx *ctx, const lumen_image *in, const lumen_febds_opts *opts,
                                 lumen_image **mask, double *threshold);

/* ------------------------------------------------------------------ white top-hat */

typedef struct lumen_tophat_opts {
  lumen_filter_exec exec;
  int radius;              /* disk radius, default 4 (reference); >= 1 */
  int output_mask;         /* 0 (default): the float top-hat map; 1: uint8 mask (map > Otsu threshold) */
  int spatial_dims;        /* 2 (default) per slice (disk); 3: ball */
} lumen_tophat_opts;
LUMEN_API void lumen_tophat_opts_init(lumen_tophat_opts *opts);
/* max(I - open(I), 0) with a disk: bright details smaller than the disk. */
LUMEN_API lumen_status lumen_segment_tophat(lumen_ctx *ctx, const lumen_image *in, const lumen_tophat_opts *opts,
                                  lumen_image **out);

/* ------------------------------------------------------------------ intensity clustering */

#define LUMEN_CLUSTER_MAX 16

typedef enum lumen_cluster_output {
  LUMEN_CLUSTER_MASK = 0,  /* uint8 0/1: the brightest cluster (reference); PFCM: its outlier mask */
  LUMEN_CLUSTER_LABELS,    /* uint8 0..k-1, clusters ordered by centre (0 = darkest) */
  LUMEN_CLUSTER_OUTPUT_COUNT
} lumen_cluster_output;

typedef struct lumen_cluster_result {
  int k;                              /* clusters */
  double centers[LUMEN_CLUSTER_MAX];  /* ascending */
  int64_t sizes[LUMEN_CLUSTER_MAX];   /* voxels assigned (hard assignment) */
  int iterations;
  int converged;                      /* 1: the tolerance was met before max_iterations */
  double objective;                   /* k-means: sum of squared distances; FCM/PFCM: J_m */
} lumen_cluster_result;

typedef struct lumen_kmeans_opts {
  lumen_filter_exec exec;
  int k;                   /* 2 (2..LUMEN_CLUSTER_MAX) */
  int max_iterations;      /* 100 */
  double tolerance;        /* 1e-4: stop when no centre moves more than tol * (max - min) */
  uint64_t seed;           /* 42: k-means++ seeding (deterministic for a seed, any thread count) */
  lumen_cluster_output output;  /* MASK */
} lumen_kmeans_opts;
LUMEN_API void lumen_kmeans_opts_init(lumen_kmeans_opts *opts);
/* Lloyd's k-means on voxel intensities with k-means++ seeding. result may be NULL. */
LUMEN_API lumen_status lumen_segment_kmeans(lumen_ctx *ctx, const lumen_image *in, const lumen_kmeans_opts *opts,
                                  lumen_image **out, lumen_cluster_result *result);

typedef struct lumen_fcm_opts {
  lumen_filter_exec exec;
  int c;                   /* 2 clusters (2..LUMEN_CLUSTER_MAX) */
  double m;                /* 2.0 fuzzifier (> 1) */
  int max_iterations;      /* 100 */
  double tolerance;        /* 1e-3: stop when no membership changes by more than tol */
  uint64_t seed;           /* 42: k-means++ seeding of the first centres */
  lumen_cluster_output output;  /* MASK (hard assignment = largest membership) */
  /* possibilistic FCM only (Pal, Pal, Keller, Bezdek 2005) */
  double eta;              /* 2.0 typicality exponent (> 1) */
  double a;                /* 1.0 weight of memberships */
  double b;                /* 4.0 weight of typicalities */
  double tau;              /* 0.04: PFCM mask = max typicality < tau and not the darkest cluster */
} lumen_fcm_opts;
LUMEN_API void lumen_fcm_opts_init(lumen_fcm_opts *opts);
/* Fuzzy c-means on intensities: u_ij ~ d_ij^(-2/(m-1)). */
LUMEN_API lumen_status lumen_segment_fcm(lumen_ctx *ctx, const lumen_image *in, const lumen_fcm_opts *opts,
                               lumen_image **out, lumen_cluster_result *result);
/* Possibilistic fuzzy c-means: FCM start, then memberships and typicalities
   t_ij = 1 / (1 + ((b / gamma_j) d_ij^2)^(1/(eta-1))), gamma_j = sum u^m d^2 / sum u^m (from FCM).
   output MASK: voxels atypical of every cluster (max_j t_ij < tau) whose hard assignment is not
   the darkest cluster; LABELS: the hard assignment. */
LUMEN_API lumen_status lumen_segment_pfcm(lumen_ctx *ctx, const lumen_image *in, const lumen_fcm_opts *opts,
                                lumen_image **out, lumen_cluster_result *result);

/* ------------------------------------------------------------------ region growing */

typedef struct lumen_region_grow_opts {
  lumen_filter_exec exec;
  const int64_t *seeds;    /* n_seeds voxel coordinates (x, y[, z]: ndim values each, dims[0]
                              fastest); NULL / 0 = automatic: the regional maxima */
  int64_t n_seeds;
  double threshold;        /* NaN (default) = the mean value of the seeds (each regional maximum
                              plateau or given seed counted once) */
  double max_gradient;     /* 0 (default) = off; > 0: a voxel joins only if its gradient magnitude
                              (central differences) is <= max_gradient */
  int connectivity;        /* 0 (default) = full (8 in 2-D, 26 in 3-D); 1 = faces (4 / 6) */
  int smooth_radius;       /* 2: binary closing (dilate, then erode) with a disk (ball in 3-D); 0 = off */
} lumen_region_grow_opts;
LUMEN_API void lumen_region_grow_opts_init(lumen_region_grow_opts *opts);
/* Grows from the seeds through connected voxels with value >= threshold. uint8 0/1 mask. */
LUMEN_API lumen_status lumen_segment_region_grow(lumen_ctx *ctx, const lumen_image *in, const lumen_region_grow_opts *opts,
                                       lumen_image **mask);

/* ------------------------------------------------------------------ breast mask */

typedef struct lumen_breast_mask_opts {
  lumen_filter_exec exec;
  int otsu_bins;           /* 0 = the filter default (256 for [0, 255] data, else 4096) */
  int connectivity;        /* 1 (default, 4-connected) or 2 (8) */
  int fill_holes;          /* 0 (default, reference); 1 = fill holes of the component */
  int spatial_dims;        /* 2 (default) per slice; 3 volume */
} lumen_breast_mask_opts;
LUMEN_API void lumen_breast_mask_opts_init(lumen_breast_mask_opts *opts);
/* Otsu threshold, then the largest connected component. uint8 0/1. */
LUMEN_API lumen_status lumen_segment_breast_mask(lumen_ctx *ctx, const lumen_image *in, const lumen_breast_mask_opts *opts,
                                       lumen_image **mask);

/* ------------------------------------------------------------------ intensity normalisation */

typedef struct lumen_window_opts {
  lumen_filter_exec exec;
  double center;           /* window centre C; NaN (default) = (min + max) / 2 of the image */
  double width;            /* window width W > 0; NaN (default) = max - min (1 when constant) */
  double out_max;          /* 255 */
} lumen_window_opts;
LUMEN_API void lumen_window_opts_init(lumen_window_opts *opts);
/* clamp((x - (C - W/2)) / W, 0, 1) * out_max; float output. */
LUMEN_API lumen_status lumen_segment_window(lumen_ctx *ctx, const lumen_image *in, const lumen_window_opts *opts,
                                  lumen_image **out);

typedef struct lumen_bits_opts {
  lumen_filter_exec exec;
  int bits;                /* bits stored, 1..32; 0 (default) = inferred: 8 if max <= 255,
                              12 if max <= 4095, else 16 */
  double target;           /* 255 */
} lumen_bits_opts;
LUMEN_API void lumen_bits_opts_init(lumen_bits_opts *opts);
/* clamp(x / (2^bits - 1), 0, 1) * target; float output. bits_used (may be NULL) receives bits. */
LUMEN_API lumen_status lumen_segment_normalize_bits(lumen_ctx *ctx, const lumen_image *in, const lumen_bits_opts *opts,
                                          lumen_image **out, int *bits_used);

/* ------------------------------------------------------------------ GRAIL automatic windowing */

/* GRAIL (Albiol, Corbi & Albiol 2017, Med Phys 44(4)): the window [a, b] whose 8-bit display keeps
   the most of the image's texture, measured as the sum over a Gabor bank (n_scales x
   n_orientations real kernels, f = 0.25 / sqrt(2)^m cycles/pixel, sigma = 1 / (2f), size
   ceil(6 sigma) made odd, NEAREST borders) of the mutual information between |Gabor| of the image
   and |Gabor| of its windowed display. Coordinate search: b then a over current +- steps * delta,
   k_max rounds, delta / 10 after each. 2-D images only; CPU only (a CUDA request runs on the CPU
   and the report says so). docs/SEGMENTATION.md lists where lumen differs from the reference. */
typedef struct lumen_grail_opts {
  lumen_filter_exec exec;
  int n_scales;            /* 3 (1..8) */
  int n_orientations;      /* 6 (1..32) */
  double delta;            /* initial search step in intensity units; 0 (default) = 300 on the
                              12-bit scale scaled to the data's bit depth: 300 * (2^bits - 1) / 4095,
                              bits inferred as lumen_bits_opts (8 / 12 / 16) */
  int k_max;               /* 3 rounds (>= 1) */
  int steps;               /* 5: candidates current + j * delta, j = -steps..steps (>= 1) */
  int bins;                /* 256: histogram bins of each response for the mutual information (2..4096) */
  int quantize;            /* 1 (lumen): the metric sees the display rounded to integer levels
                              0..out_max, as an 8-bit screen does; 0: unrounded (the reference) */
  double out_max;          /* 255: output scale, and the display levels - 1 when quantize is on */
} lumen_grail_opts;
LUMEN_API void lumen_grail_opts_init(lumen_grail_opts *opts);

typedef struct lumen_grail_result {
  double a, b;             /* the window found: out = clamp((x - a) / (b - a), 0, 1) * out_max */
  double metric;           /* the GRAIL metric at (a, b): sum of mutual informations, bits */
  double delta;            /* the initial step used */
  int bits;                /* the bit depth that scaled delta (0 when delta was given) */
  int evaluations;         /* metric evaluations of the search */
} lumen_grail_result;

/* Finds [a, b] and writes the linearly windowed image (float, the run's precision). result may
   be NULL; the window is also logged at LUMEN_LOG_INFO. */
LUMEN_API lumen_status lumen_segment_grail(lumen_ctx *ctx, const lumen_image *in, const lumen_grail_opts *opts,
                                 lumen_image **out, lumen_grail_result *result);
/* The GRAIL metric of one window [a, b] (a < b, finite) of a 2-D image, with opts' bank, bins and
   quantisation. */
LUMEN_API lumen_status lumen_segment_grail_metric(lumen_ctx *ctx, const lumen_image *in, const lumen_grail_opts *opts,
                                        double a, double b, double *metric);

/* ------------------------------------------------------------------ by name, and batches */

typedef enum lumen_segment_algo {
  LUMEN_SEGMENT_FEBDS = 0,     /* opts: lumen_febds_opts */
  LUMEN_SEGMENT_TOPHAT,        /* lumen_tophat_opts */
  LUMEN_SEGMENT_KMEANS,        /* lumen_kmeans_opts */
  LUMEN_SEGMENT_FCM,           /* lumen_fcm_opts */
  LUMEN_SEGMENT_PFCM,          /* lumen_fcm_opts */
  LUMEN_SEGMENT_REGION_GROW,   /* lumen_region_grow_opts */
  LUMEN_SEGMENT_BREAST_MASK,   /* lumen_breast_mask_opts */
  LUMEN_SEGMENT_WINDOW,        /* lumen_window_opts */
  LUMEN_SEGMENT_NORMALIZE_BITS,/* lumen_bits_opts */
  LUMEN_SEGMENT_GRAIL,         /* lumen_grail_opts */
  LUMEN_SEGMENT_ALGO_COUNT
} lumen_segment_algo;

/* "febds", "tophat", "kmeans", "fcm", "pfcm", "region_grow", "breast_mask", "window",
   "normalize_bits", "grail"; "unknown" otherwise. Parsing also accepts '-' for '_'. */
LUMEN_API const char *lumen_segment_algo_name(lumen_segment_algo algo);
LUMEN_API lumen_status lumen_segment_algo_parse(lumen_ctx *ctx, const char *name, lumen_segment_algo *out);

/* Runs an algorithm by id; opts points to its options struct (NULL = defaults). */
LUMEN_API lumen_status lumen_segment_run(lumen_ctx *ctx, lumen_segment_algo algo, const void *opts, const lumen_image *in,
                               lumen_image **out);

/* n images of one shape and dtype (a mismatch is LUMEN_ERR_INVALID_ARGUMENT naming the index);
   out[i] receives the result of in[i]. All or nothing: on failure every out[i] is NULL. The
   report (exec.report of opts) covers the whole batch. */
LUMEN_API lumen_status lumen_segment_many(lumen_ctx *ctx, lumen_segment_algo algo, const void *opts, int64_t n,
                                const lumen_image *const *in, lumen_image **out);

#ifdef __cplusplus
}
#endif
#endif
