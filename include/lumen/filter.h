/* lumen: image filters, thresholds, morphology and image statistics (2-D and 3-D).
 *
 * One public entry per operation:
 *
 *     lumen_status lumen_filter_OP(lumen_ctx *ctx, const lumen_image *in,
 *                                  const lumen_OP_opts *opts, lumen_image **out);
 *
 * - opts may be NULL (= the defaults of lumen_OP_opts_init). Every options struct starts with a
 *   lumen_filter_exec: the device, the precision and an optional report of where the op ran.
 * - Device resolution: opts->exec.device ("cpu", "cuda", "cuda:N") when set (NULL or "" = unset),
 *   else the input image's device, else the context's default device.
 * - Precision: opts->exec.precision (a lumen_precision) or LUMEN_FILTER_PRECISION_DEFAULT for the
 *   context's default (lumen_ctx_default_precision). Float outputs are STORED in that type
 *   (float32, float16 or bfloat16); arithmetic is done in float32 (sums of many terms in float64
 *   where the reference does). Inputs of any lumen_dtype are accepted and read as float32.
 * - Outputs are new images on the device that computed them (report->used), with the input's
 *   dims, spacing and affine. Masks are uint8 (0/1, or 0/foreground), labels int32.
 * - Dimensions: by default an image of ndim <= 3 is filtered as one ndim-D image; the extra
 *   axes of a 4-D image are a batch of 3-D volumes. spatial_dims = 2 filters every 2-D slice of
 *   a 3-D/4-D image independently (a batch of 2-D images), with results equal to the 2-D op.
 * - CUDA: when the resolved device is a CUDA device and the op has a CUDA kernel, it runs there;
 *   if that fails with LUMEN_ERR_DEVICE_OUT_OF_MEMORY, LUMEN_ERR_DEVICE, LUMEN_ERR_NO_DEVICE or
 *   LUMEN_ERR_NOT_BUILT (or the op has no CUDA kernel yet), the op reruns ONCE on the CPU and the
 *   report records fell_back = 1 and the reason (also logged at WARNING level).
 * - Errors: a status and a message naming the function, the argument and the expected value in
 *   lumen_ctx_last_error(); *out is NULL on failure. Nothing is printed.
 *
 * docs/FILTERS.md lists every op with its defaults, where they follow the reference framework
 * (medical_image) or scipy/scikit-image, the precision error bounds and measured speed.
 */
#ifndef LUMEN_FILTER_H
#define LUMEN_FILTER_H
#include "lumen/export.h"

#include <stdint.h>
#include "lumen/context.h"
#include "lumen/device.h"
#include "lumen/image.h"
#include "lumen/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ common pieces */

/* How a filter extends an image past its border (scipy.ndimage names and semantics). */
typedef enum lumen_boundary {
  LUMEN_BOUNDARY_REFLECT = 0, /* d c b a | a b c d | d c b a  (half-sample symmetric, scipy 'reflect') */
  LUMEN_BOUNDARY_NEAREST,     /* a a a a | a b c d | d d d d  (edge replicated) */
  LUMEN_BOUNDARY_CONSTANT,    /* k k k k | a b c d | k k k k  (k = cval) */
  LUMEN_BOUNDARY_WRAP,        /* a b c d | a b c d | a b c d  (periodic) */
  LUMEN_BOUNDARY_MIRROR,      /* d c b | a b c d | c b a      (whole-sample symmetric; numpy/PyTorch 'reflect') */
  LUMEN_BOUNDARY_COUNT
} lumen_boundary;

/* Units of a sigma: voxels, or millimetres (divided by the image spacing of each axis). */
typedef enum lumen_units {
  LUMEN_UNITS_VOXELS = 0,
  LUMEN_UNITS_MM,
  LUMEN_UNITS_COUNT
} lumen_units;

#define LUMEN_FILTER_PRECISION_DEFAULT (-1)
#define LUMEN_FILTER_REASON_MAX 256

/* Where an op ran and why (filled when exec.report is not NULL, also on failure). */
typedef struct lumen_filter_report {
  char op[32];                  /* "gaussian", "median", ... */
  lumen_device requested;       /* the resolved device */
  lumen_device used;            /* the device that computed the result */
  int fell_back;                /* 1 when the CUDA path was abandoned and the CPU reran the op */
  lumen_status device_status;   /* the status that caused the fallback (LUMEN_OK when none) */
  lumen_precision precision;    /* storage precision of float outputs */
  char reason[LUMEN_FILTER_REASON_MAX]; /* why it fell back ("" when it did not) */
  double seconds;               /* wall time of the whole call */
} lumen_filter_report;

/* Execution settings shared by every op (the first member of each options struct). */
typedef struct lumen_filter_exec {
  const char *device;           /* "cpu", "cuda", "cuda:N"; NULL or "" = unset (see above) */
  int precision;                /* a lumen_precision, or LUMEN_FILTER_PRECISION_DEFAULT */
  lumen_filter_report *report;  /* optional out: where the op ran, fallback and reason */
} lumen_filter_exec;

LUMEN_API void lumen_filter_exec_init(lumen_filter_exec *exec);

/* Names of boundary modes ("reflect", "nearest", "constant", "wrap", "mirror") and parsing. */
LUMEN_API const char *lumen_boundary_name(lumen_boundary mode);
LUMEN_API lumen_status lumen_boundary_parse(const char *name, lumen_boundary *out);

/* The ops lumen_filter dispatches, by name, and whether a CUDA kernel is registered for one. */
LUMEN_API int lumen_filter_op_count(void);
LUMEN_API const char *lumen_filter_op_name(int index);   /* NULL when out of range */
LUMEN_API int lumen_filter_op_has_cuda(const char *op);  /* 1 or 0 */

/* ------------------------------------------------------------------ Gaussian family */

typedef struct lumen_gaussian_opts {
  lumen_filter_exec exec;
  double sigma;            /* default 1.0; > 0 (used for every axis whose sigma_axis is 0) */
  double sigma_axis[3];    /* per-axis sigma x, y, z; 0 = use sigma. Default {0, 0, 0} */
  lumen_units units;       /* VOXELS (default) or MM */
  double truncate;         /* default 4.0: radius = int(truncate * sigma + 0.5) per axis */
  lumen_boundary mode;     /* default NEAREST (reference framework; scipy's default is REFLECT) */
  double cval;             /* value outside the image for CONSTANT; default 0 */
  int spatial_dims;        /* 0 (default) = min(ndim, 3); 1, 2 or 3: the rest is a batch */
} lumen_gaussian_opts;
LUMEN_API void lumen_gaussian_opts_init(lumen_gaussian_opts *opts);

/* scipy.ndimage.gaussian_filter (separable, float32 accumulation). */
LUMEN_API lumen_status lumen_filter_gaussian(lumen_ctx *ctx, const lumen_image *in, const lumen_gaussian_opts *opts,
                                   lumen_image **out);
/* A 3-D/4-D image as a batch of 2-D images (axes 0, 1 filtered; the others are the batch):
   the same as lumen_filter_gaussian with spatial_dims = 2. Result per slice == 2-D op. */
LUMEN_API lumen_status lumen_filter_gaussian_batch(lumen_ctx *ctx, const lumen_image *batch, const lumen_gaussian_opts *opts,
                                         lumen_image **out);
/* n separate images of one shape and dtype; out[i] receives the filtered in[i]. All or nothing:
   on failure every out[i] is NULL. Mismatched shapes are LUMEN_ERR_INVALID_ARGUMENT. */
LUMEN_API lumen_status lumen_filter_gaussian_many(lumen_ctx *ctx, int64_t n, const lumen_image *const *in,
                                        const lumen_gaussian_opts *opts, lumen_image **out);

typedef struct lumen_dog_opts {
  lumen_filter_exec exec;
  double low_sigma;        /* default 1.0; > 0 */
  double high_sigma;       /* default 0 = 1.6 * low_sigma (reference and scikit-image); > low_sigma */
  lumen_units units;       /* VOXELS */
  double truncate;         /* 4.0 */
  lumen_boundary mode;     /* NEAREST (skimage.filters.difference_of_gaussians) */
  double cval;             /* 0 */
  int spatial_dims;        /* 0 */
} lumen_dog_opts;
LUMEN_API void lumen_dog_opts_init(lumen_dog_opts *opts);
/* G_low(I) - G_high(I), as skimage.filters.difference_of_gaussians. */
LUMEN_API lumen_status lumen_filter_dog(lumen_ctx *ctx, const lumen_image *in, const lumen_dog_opts *opts, lumen_image **out);

typedef struct lumen_laplace_opts {
  lumen_filter_exec exec;
  double sigma;            /* default 2.0 (FEBDS 'log'); > 0 */
  lumen_units units;       /* VOXELS */
  double truncate;         /* 4.0 */
  lumen_boundary mode;     /* REFLECT (scipy.ndimage.gaussian_laplace) */
  double cval;             /* 0 */
  int spatial_dims;        /* 0 */
  int discrete;            /* 0 (default): scipy.ndimage.gaussian_laplace (sum of second-derivative-
                              of-Gaussian passes). 1: the reference framework's form: Gaussian
                              (mode), then the 4/6-neighbour discrete Laplacian with MIRROR borders */
} lumen_laplace_opts;
LUMEN_API void lumen_laplace_opts_init(lumen_laplace_opts *opts);
/* Laplacian of Gaussian. */
LUMEN_API lumen_status lumen_filter_gaussian_laplace(lumen_ctx *ctx, const lumen_image *in, const lumen_laplace_opts *opts,
                                           lumen_image **out);

/* ------------------------------------------------------------------ rank, point and linear ops */

typedef struct lumen_median_opts {
  lumen_filter_exec exec;
  int size;                /* window width, odd >= 1 (default 3); size^spatial_dims voxels */
  lumen_boundary mode;     /* REFLECT (scipy.ndimage.median_filter) */
  double cval;             /* 0 */
  int spatial_dims;        /* 0 */
} lumen_median_opts;
LUMEN_API void lumen_median_opts_init(lumen_median_opts *opts);
LUMEN_API lumen_status lumen_filter_median(lumen_ctx *ctx, const lumen_image *in, const lumen_median_opts *opts,
                                 lumen_image **out);

typedef struct lumen_gamma_opts {
  lumen_filter_exec exec;
  double gamma;            /* default 1.0 (FEBDS uses 1.25); > 0 */
  double max_value;        /* default 4095 (12-bit data): out = max * clamp(x / max, 0, inf)^gamma */
} lumen_gamma_opts;
LUMEN_API void lumen_gamma_opts_init(lumen_gamma_opts *opts);
LUMEN_API lumen_status lumen_filter_gamma(lumen_ctx *ctx, const lumen_image *in, const lumen_gamma_opts *opts,
                                lumen_image **out);

typedef struct lumen_abs_opts {
  lumen_filter_exec exec;
} lumen_abs_opts;
LUMEN_API void lumen_abs_opts_init(lumen_abs_opts *opts);
/* Absolute value |x| (float output in the storage precision; NaN stays NaN). FEBDS takes it of
   the enhanced image before the median, on the algorithm's device. */
LUMEN_API lumen_status lumen_filter_abs(lumen_ctx *ctx, const lumen_image *in, const lumen_abs_opts *opts, lumen_image **out);

typedef struct lumen_contrast_opts {
  lumen_filter_exec exec;
  double contrast;         /* default 0 */
  double brightness;       /* default 0 */
  int bins;                /* 0 (default) = 255 when max(I) <= 255 else 4095; or a positive value */
} lumen_contrast_opts;
LUMEN_API void lumen_contrast_opts_init(lumen_contrast_opts *opts);
/* Reference contrast adjustment: a = contrast / (bins / 2) + 1, b = brightness - contrast,
   out = clamp(a * x + b, 0, bins). */
LUMEN_API lumen_status lumen_filter_contrast(lumen_ctx *ctx, const lumen_image *in, const lumen_contrast_opts *opts,
                                   lumen_image **out);

typedef struct lumen_convolve_opts {
  lumen_filter_exec exec;
  const float *kernel;     /* kernel_dims[0] fastest (x), like images; required */
  int kernel_ndim;         /* 1..3, <= the image's spatial dims */
  int64_t kernel_dims[3];  /* each >= 1 */
  lumen_boundary mode;     /* REFLECT (scipy.ndimage.convolve) */
  double cval;             /* 0 */
  int correlate;           /* 0 (default): convolution (scipy.ndimage.convolve, kernel flipped, the
                              same origin rule for even sizes); 1: correlation (scipy.ndimage.correlate;
                              the reference framework's 'convolution' is correlation with CONSTANT 0) */
  int spatial_dims;        /* 0 */
} lumen_convolve_opts;
LUMEN_API void lumen_convolve_opts_init(lumen_convolve_opts *opts);
LUMEN_API lumen_status lumen_filter_convolve(lumen_ctx *ctx, const lumen_image *in, const lumen_convolve_opts *opts,
                                   lumen_image **out);

typedef struct lumen_bandpass_opts {
  lumen_filter_exec exec;
  double d0;               /* centre radius of the band, in frequency samples; default 21 */
  double width;            /* band width W; default 32; > 0 */
  int order;               /* Butterworth order n; default 3; >= 1 */
  int spatial_dims;        /* 0 */
} lumen_bandpass_opts;
LUMEN_API void lumen_bandpass_opts_init(lumen_bandpass_opts *opts);
/* Butterworth band-pass in the Fourier domain, H = 1 / (1 + ((D^2 - D0^2) / (8 W D))^(2n)) with D
   the distance from the zero frequency (the centre of the shifted spectrum; H(0) = 0), applied to
   the real FFT of the image (FFTW, loaded at run time; LUMEN_ERR_NOT_BUILT when absent). */
LUMEN_API lumen_status lumen_filter_bandpass(lumen_ctx *ctx, const lumen_image *in, const lumen_bandpass_opts *opts,
                                   lumen_image **out);

/* ------------------------------------------------------------------ thresholds */

typedef struct lumen_otsu_opts {
  lumen_filter_exec exec;
  int bins;                /* 0 (default) = 256 when the data lie in [0, 255], else 4096 (reference);
                              skimage.filters.threshold_otsu's default is 256 */
} lumen_otsu_opts;
LUMEN_API void lumen_otsu_opts_init(lumen_otsu_opts *opts);
/* skimage.filters.threshold_otsu (float semantics: a histogram of bins over [min, max]).
   *threshold receives the value; mask (may be NULL) receives uint8 (I > threshold). */
LUMEN_API lumen_status lumen_filter_otsu(lumen_ctx *ctx, const lumen_image *in, const lumen_otsu_opts *opts, double *threshold,
                               lumen_image **mask);

typedef struct lumen_sauvola_opts {
  lumen_filter_exec exec;
  int window;              /* odd >= 1, default 15 (the reference's 10 is even and rejected) */
  double k;                /* default 0.5 (reference; skimage 0.2) */
  double r;                /* default 128 (reference; skimage: half the dtype range) > 0 */
  int output_threshold;    /* 0 (default): uint8 mask (I > T) * foreground; 1: the float threshold map T */
  int foreground;          /* mask value, 1..255; default 255 (reference) */
  int spatial_dims;        /* 0 */
} lumen_sauvola_opts;
LUMEN_API void lumen_sauvola_opts_init(lumen_sauvola_opts *opts);
/* T = m (1 + k (s / r - 1)), m and s the window mean and standard deviation with MIRROR borders
   (skimage.filters.threshold_sauvola). */
LUMEN_API lumen_status lumen_filter_sauvola(lumen_ctx *ctx, const lumen_image *in, const lumen_sauvola_opts *opts,
                                  lumen_image **out);

typedef struct lumen_local_variance_opts {
  lumen_filter_exec exec;
  int window;              /* odd >= 1, default 5 */
  lumen_boundary mode;     /* MIRROR (the reference's PyTorch 'reflect') */
  double cval;             /* 0 */
  double alpha;            /* binarisation only: default 1.0 (FEBDS fft) */
  int spatial_dims;        /* 0 */
} lumen_local_variance_opts;
LUMEN_API void lumen_local_variance_opts_init(lumen_local_variance_opts *opts);
/* Window variance E[x^2] - E[x]^2 (population, float64 sums), float output. */
LUMEN_API lumen_status lumen_filter_local_variance(lumen_ctx *ctx, const lumen_image *in,
                                         const lumen_local_variance_opts *opts, lumen_image **out);
/* Reference local-variance binarisation: uint8 (lv^2 >= alpha * gv^2), gv the global population
   variance of the image. */
LUMEN_API lumen_status lumen_filter_variance_binarize(lumen_ctx *ctx, const lumen_image *in,
                                            const lumen_local_variance_opts *opts, lumen_image **out);

/* ------------------------------------------------------------------ morphology, regions */

typedef enum lumen_morph_op {
  LUMEN_MORPH_ERODE = 0,
  LUMEN_MORPH_DILATE,
  LUMEN_MORPH_OPEN,        /* dilate(erode(I)) */
  LUMEN_MORPH_CLOSE,       /* erode(dilate(I)) */
  LUMEN_MORPH_TOPHAT,      /* white top-hat: I - open(I) (>= 0) */
  LUMEN_MORPH_COUNT
} lumen_morph_op;

typedef enum lumen_element {
  LUMEN_ELEMENT_DISK = 0,  /* x^2 + y^2 <= r^2 (skimage.morphology.disk), per 2-D slice */
  LUMEN_ELEMENT_SQUARE,    /* size x size, per 2-D slice (size odd) */
  LUMEN_ELEMENT_BALL,      /* x^2 + y^2 + z^2 <= r^2 (skimage.morphology.ball) */
  LUMEN_ELEMENT_CUBE,      /* size^3 (size odd) */
  LUMEN_ELEMENT_COUNT
} lumen_element;

typedef struct lumen_morph_opts {
  lumen_filter_exec exec;
  lumen_morph_op op;       /* default ERODE */
  lumen_element element;   /* default DISK */
  int radius;              /* DISK, BALL: default 4 (reference); >= 0 */
  int size;                /* SQUARE, CUBE: odd width, default 7 (reference closing) */
  int binary;              /* 0 (default): grey (float, skimage.morphology.erosion ...);
                              1: binary, input != 0 is foreground, uint8 0/1 output
                              (skimage.morphology.binary_*: pixels outside the image are ignored) */
} lumen_morph_opts;
LUMEN_API void lumen_morph_opts_init(lumen_morph_opts *opts);
LUMEN_API lumen_status lumen_filter_morphology(lumen_ctx *ctx, const lumen_image *in, const lumen_morph_opts *opts,
                                     lumen_image **out);

typedef struct lumen_region_opts {
  lumen_filter_exec exec;
  int connectivity;        /* 1 (default: 4 in 2-D, 6 in 3-D) .. spatial_dims (8 in 2-D, 26 in 3-D),
                              as scipy.ndimage.generate_binary_structure */
  int spatial_dims;        /* 0 */
} lumen_region_opts;
LUMEN_API void lumen_region_opts_init(lumen_region_opts *opts);
/* scipy.ndimage.binary_fill_holes: uint8 0/1 (input != 0 is foreground). */
LUMEN_API lumen_status lumen_filter_fill_holes(lumen_ctx *ctx, const lumen_image *in, const lumen_region_opts *opts,
                                     lumen_image **out);
/* scipy.ndimage.label: int32 labels 1..count in raster order (0 = background); count may be NULL.
   With spatial_dims < ndim the labels continue across the batch. */
LUMEN_API lumen_status lumen_filter_label(lumen_ctx *ctx, const lumen_image *in, const lumen_region_opts *opts,
                                lumen_image **labels, int64_t *count);
/* uint8 mask of the largest connected component (ties: the lowest label); all 0 when empty. */
LUMEN_API lumen_status lumen_filter_largest_component(lumen_ctx *ctx, const lumen_image *in, const lumen_region_opts *opts,
                                            lumen_image **mask);

/* ------------------------------------------------------------------ statistics */

typedef struct lumen_stats_opts {
  lumen_filter_exec exec;
  int bins;                /* histogram bins over [min, max] (numpy.histogram rules); default 256;
                              0 = one bin per distinct value (skimage.measure.shannon_entropy) */
  int ddof;                /* variance: 0 (default, population) or 1 (sample) */
} lumen_stats_opts;
LUMEN_API void lumen_stats_opts_init(lumen_stats_opts *opts);

/* Shannon entropy of the histogram, in bits. */
LUMEN_API lumen_status lumen_filter_entropy(lumen_ctx *ctx, const lumen_image *in, const lumen_stats_opts *opts,
                                  double *entropy);

typedef struct lumen_mi_result {
  double mutual_information;  /* H(A) + H(B) - H(A, B), bits */
  double entropy_a, entropy_b, joint_entropy;
} lumen_mi_result;
/* Mutual information from a bins x bins joint histogram (each image over its own [min, max]);
   a and b must have the same number of voxels (shape mismatch is an error). bins >= 1 here. */
LUMEN_API lumen_status lumen_filter_mutual_information(lumen_ctx *ctx, const lumen_image *a, const lumen_image *b,
                                             const lumen_stats_opts *opts, lumen_mi_result *out);

/* Mean and variance (float64 sums) of every voxel; either pointer may be NULL. */
LUMEN_API lumen_status lumen_filter_variance(lumen_ctx *ctx, const lumen_image *in, const lumen_stats_opts *opts, double *mean,
                                   double *variance);

/* ---------------------------------------------------------------- fused host primitives
   One threaded pass each over float32 host images (the compat layer lumen.medical_image uses
   them in place of several numpy or torch passes). in and out are host images (out: of in's
   voxel count, allocated by the caller, e.g. a wrapped numpy array). */

/* The smallest and largest finite voxel (NaN and +-Inf skipped; 0, 0 when none is finite);
   finite (may be NULL): how many are finite; integral (may be NULL): 1 when every finite voxel
   is an integer of magnitude <= 2^24. */
LUMEN_API lumen_status lumen_filter_finite_range(lumen_ctx *ctx, const lumen_image *in, double *min, double *max,
                                                 int64_t *finite, int *integral);
/* out = (float)(clamp((in - offset) * scale, 0, 1) * out_max) in float64 (NaN stays NaN):
   lumen_segment_window's map (offset = centre - width / 2, scale = 1 / width) and
   lumen_segment_normalize_bits' (offset 0, scale 1 / (2^bits - 1)), the same values. out may be
   in. offset, scale and out_max must be finite. */
LUMEN_API lumen_status lumen_filter_scale_clamp(lumen_ctx *ctx, const lumen_image *in, double offset, double scale,
                                                double out_max, lumen_image *out);
/* medical-image-std's bit-depth normalisation without BitsStored: bits = 8, 12 or 16 as the
   largest voxel is <= 255, <= 4095 or more (numpy's max: a NaN or +Inf anywhere gives 16), then
   lumen_filter_scale_clamp(in, 0, 1 / (2^bits - 1), out_max, out)'s values. One pass over the
   data when the bit depth of a sample of 1024 voxels is the data's (else two); out may be in (then
   two). bits (may be NULL): the depth used. out_max must be finite. */
LUMEN_API lumen_status lumen_filter_normalize_bits_detect(lumen_ctx *ctx, const lumen_image *in, double out_max,
                                                          lumen_image *out, int *bits);
/* medical-image-std's Otsu threshold: bins 256 when the largest finite voxel is <= 255, else
   4096, over the finite range (numpy.histogram's edges); lumen_filter_otsu's class split; the
   threshold the bin centre linspace(min, max, bins)[i] (numpy's float64 linspace rounded to
   float32). A constant image gives its value. mask (uint8, may be NULL) = in > threshold. */
LUMEN_API lumen_status lumen_filter_otsu_linspace(lumen_ctx *ctx, const lumen_image *in, lumen_image *mask,
                                                  double *threshold);
/* medical-image-std's Butterworth band-pass transfer function (Filters.butterworth_kernel) into out
   (float32, height x width voxels, row-major): H = 1 / (1 + ((D^2 - d0^2) / (8 w D))^(2 order)),
   D = sqrt((u - width / 2)^2 + (v - height / 2)^2), in the original's float32 steps (a zero
   8 w D taken as 1e-6); the power as products (torch: pow), the same values within a few float32
   ulps. height, width 1 .. 2^24; order 1 .. 64; d0, w finite, |d0|, |w| <= 1e18. */
LUMEN_API lumen_status lumen_filter_butterworth_kernel(lumen_ctx *ctx, int64_t height, int64_t width, double d0,
                                                       double w, int order, lumen_image *out);

typedef struct lumen_fcm_values_result {
  int applicable;      /* 1: every voxel finite and an integer, max - min + 1 <= counts_len and 2^20;
                          0: nothing else is set (use lumen_segment_fcm) */
  double min, max;     /* the data range; counts[i] is the number of voxels of value min + i */
  int k;
  double centers[16];  /* ascending (LUMEN_CLUSTER_MAX of lumen/segment.h) */
  int iterations;
  int converged;
} lumen_fcm_values_result;
/* lumen_segment_fcm (c clusters, fuzziness m, its stopping rule and k-means++ seeding from seed)
   for integer-valued images, iterating over the counts of each value (written to counts, which
   holds counts_len entries) instead of every voxel: the same seeds and memberships, centres
   equal to rounding (the sums are taken in another order); hard labels: the nearest centre. */
LUMEN_API lumen_status lumen_filter_fcm_values(lumen_ctx *ctx, const lumen_image *in, int c, double m,
                                               int max_iterations, double tolerance, uint64_t seed, int64_t *counts,
                                               int64_t counts_len, lumen_fcm_values_result *result);

#ifdef __cplusplus
}
#endif
#endif
