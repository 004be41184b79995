/* THE table of image operations (include/lumen/ops.h): one row per op, its option descriptors
   beside it. The command line, the batch engine, the Python binding and the docs table are
   derived from these rows; docs/ADDING_A_FILTER.md shows how to add one. Ranges are the
   library's own checks of each option (tests/unit/test_ops_registry.c holds them to it). */
#include <stddef.h>
#include <string.h>
#include "core/internal.h"
#include "filter/op_registry.h"
#include "lumen/segment.h"

/* ------------------------------------------------------------------ wrappers of one signature */

#define INIT(T) \
  static void init_##T(void *o) { T##_opts_init((T##_opts *)o); }
#define RUN(NAME, T, FN) \
  static lumen_status run_##NAME(lumen_ctx *c, const lumen_image *in, const void *o, lumen_image **out, double *v) { \
    (void)v;                                                                                                     \
    return FN(c, in, (const T##_opts *)o, out);                                                                  \
  }

INIT(lumen_gaussian)
INIT(lumen_dog)
INIT(lumen_laplace)
INIT(lumen_median)
INIT(lumen_gamma)
INIT(lumen_abs)
INIT(lumen_contrast)
INIT(lumen_convolve)
INIT(lumen_bandpass)
INIT(lumen_otsu)
INIT(lumen_sauvola)
INIT(lumen_local_variance)
INIT(lumen_morph)
INIT(lumen_region)
INIT(lumen_stats)
INIT(lumen_febds)
INIT(lumen_tophat)
INIT(lumen_kmeans)
INIT(lumen_fcm)
INIT(lumen_region_grow)
INIT(lumen_breast_mask)
INIT(lumen_window)
INIT(lumen_bits)
INIT(lumen_grail)

/* the morphology operations by their own names: the morphology options with op fixed */
#define INIT_MORPH(NAME, OP)                \
  static void init_##NAME(void *o) {        \
    lumen_morph_opts_init((lumen_morph_opts *)o); \
    ((lumen_morph_opts *)o)->op = OP;       \
  }
INIT_MORPH(erode, LUMEN_MORPH_ERODE)
INIT_MORPH(dilate, LUMEN_MORPH_DILATE)
INIT_MORPH(open, LUMEN_MORPH_OPEN)
INIT_MORPH(close, LUMEN_MORPH_CLOSE)
INIT_MORPH(white_tophat, LUMEN_MORPH_TOPHAT)

RUN(gaussian, lumen_gaussian, lumen_filter_gaussian)
RUN(dog, lumen_dog, lumen_filter_dog)
RUN(laplace, lumen_laplace, lumen_filter_gaussian_laplace)
RUN(median, lumen_median, lumen_filter_median)
RUN(gamma, lumen_gamma, lumen_filter_gamma)
RUN(abs, lumen_abs, lumen_filter_abs)
RUN(contrast, lumen_contrast, lumen_filter_contrast)
RUN(convolve, lumen_convolve, lumen_filter_convolve)
RUN(bandpass, lumen_bandpass, lumen_filter_bandpass)
RUN(sauvola, lumen_sauvola, lumen_filter_sauvola)
RUN(local_variance, lumen_local_variance, lumen_filter_local_variance)
RUN(variance_binarize, lumen_local_variance, lumen_filter_variance_binarize)
RUN(morphology, lumen_morph, lumen_filter_morphology)
RUN(fill_holes, lumen_region, lumen_filter_fill_holes)
RUN(largest_component, lumen_region, lumen_filter_largest_component)
RUN(tophat, lumen_tophat, lumen_segment_tophat)
RUN(region_grow, lumen_region_grow, lumen_segment_region_grow)
RUN(breast_mask, lumen_breast_mask, lumen_segment_breast_mask)
RUN(window, lumen_window, lumen_segment_window)

/* ops with a number besides the image */
static lumen_status run_otsu(lumen_ctx *c, const lumen_image *in, const void *o, lumen_image **out, double *v) {
  return lumen_filter_otsu(c, in, o, v, out);
}
static lumen_status run_label(lumen_ctx *c, const lumen_image *in, const void *o, lumen_image **out, double *v) {
  int64_t count = 0;
  lumen_status s = lumen_filter_label(c, in, o, out, &count);
  if (s == LUMEN_OK) *v = (double)count;
  return s;
}
static lumen_status run_febds(lumen_ctx *c, const lumen_image *in, const void *o, lumen_image **out, double *v) {
  return lumen_segment_febds(c, in, o, out, v);
}
static lumen_status run_kmeans(lumen_ctx *c, const lumen_image *in, const void *o, lumen_image **out, double *v) {
  (void)v;
  return lumen_segment_kmeans(c, in, o, out, NULL);
}
static lumen_status run_fcm(lumen_ctx *c, const lumen_image *in, const void *o, lumen_image **out, double *v) {
  (void)v;
  return lumen_segment_fcm(c, in, o, out, NULL);
}
static lumen_status run_pfcm(lumen_ctx *c, const lumen_image *in, const void *o, lumen_image **out, double *v) {
  (void)v;
  return lumen_segment_pfcm(c, in, o, out, NULL);
}
static lumen_status run_normalize_bits(lumen_ctx *c, const lumen_image *in, const void *o, lumen_image **out,
                                       double *v) {
  int bits = 0;
  lumen_status s = lumen_segment_normalize_bits(c, in, o, out, &bits);
  if (s == LUMEN_OK) *v = bits;
  return s;
}
static lumen_status run_grail(lumen_ctx *c, const lumen_image *in, const void *o, lumen_image **out, double *v) {
  (void)v;
  return lumen_segment_grail(c, in, o, out, NULL);
}
/* statistics: no image (*out stays NULL) */
static lumen_status run_entropy(lumen_ctx *c, const lumen_image *in, const void *o, lumen_image **out, double *v) {
  if (out) *out = NULL;
  return lumen_filter_entropy(c, in, o, v);
}
static lumen_status run_variance(lumen_ctx *c, const lumen_image *in, const void *o, lumen_image **out, double *v) {
  if (out) *out = NULL;
  return lumen_filter_variance(c, in, o, NULL, v);
}

/* ------------------------------------------------------------------ lists checked against the image */

/* convolve: kernel_dims given, or a 1-D kernel of every value; their product = the values given */
static lumen_status prepare_convolve(lumen_ctx *ctx, void *opts, const lumen_image *in, const lumen_op_lists *l) {
  (void)in;
  lumen_convolve_opts *o = opts;
  if (!o->kernel) return LUMEN_OK; /* the filter says it is required */
  if (o->kernel_ndim == 0) {
    o->kernel_ndim = 1;
    o->kernel_dims[0] = l->n_floats;
    o->kernel_dims[1] = o->kernel_dims[2] = 1;
  }
  int64_t need = 1;
  for (int a = 0; a < o->kernel_ndim && a < 3; a++) need *= o->kernel_dims[a];
  if (need != l->n_floats)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "convolve: kernel has %lld value(s), expected %lld (the product of kernel_dims)",
                      (long long)l->n_floats, (long long)need);
  return LUMEN_OK;
}

/* region_grow: every seed point has one coordinate per image axis */
static lumen_status prepare_region_grow(lumen_ctx *ctx, void *opts, const lumen_image *in, const lumen_op_lists *l) {
  const lumen_region_grow_opts *o = opts;
  if (o->n_seeds > 0 && l->point_dims != lumen_image_ndim(in))
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "region_grow: seeds have %d coordinates, expected %d (the image's dims)", l->point_dims,
                      lumen_image_ndim(in));
  return LUMEN_OK;
}

/* ------------------------------------------------------------------ option descriptors */

static const char *const boundary_names[] = {"reflect", "nearest", "constant", "wrap", "mirror", NULL};
static const char *const units_names[] = {"voxels", "mm", NULL};
static const char *const morph_names[] = {"erode", "dilate", "open", "close", "tophat", NULL};
static const char *const element_names[] = {"disk", "square", "ball", "cube", NULL};
static const char *const febds_names[] = {"dog", "log", "fft", NULL};

#define ANY LUMEN_OP_ANY_MIN, LUMEN_OP_ANY_MAX
#define POS 0.0, LUMEN_OP_ANY_MAX                 /* with LUMEN_OPT_MIN_OPEN: > 0 */
#define NONNEG 0.0, LUMEN_OP_ANY_MAX              /* >= 0 */
#define ODD_MAX 200001.0
/* O(type, OPT, field, min, max, flags, enum names, doc); OA(..., field, aliases, min, ...) */
#define O(T, F, field, ...) {#field, NULL, LUMEN_OPT_##F, offsetof(T, field), 0, __VA_ARGS__}
#define OA(T, F, field, alias, ...) {#field, alias, LUMEN_OPT_##F, offsetof(T, field), 0, __VA_ARGS__}
#define OPTS(list) (int)(sizeof list / sizeof list[0]), list

/* options every op of the Gaussian family, median, convolve and local variance share */
#define MODE(T, doc) O(T, ENUM, mode, 0, 4, 0, boundary_names, doc)
#define CVAL(T) O(T, DOUBLE, cval, ANY, 0, NULL, "the value outside the image for mode constant")
#define SPATIAL(T) O(T, INT, spatial_dims, 1, 3, LUMEN_OPT_ZERO_OK, NULL, "axes filtered together (0 = all; 2 = per slice)")
#define UNITS(T) O(T, ENUM, units, 0, 1, 0, units_names, "units of the sigmas")
#define TRUNCATE(T) O(T, DOUBLE, truncate, POS, LUMEN_OPT_MIN_OPEN, NULL, "kernel radius in sigmas")

static const lumen_op_option gaussian_opts[] = {
  O(lumen_gaussian_opts, DOUBLE, sigma, POS, LUMEN_OPT_MIN_OPEN, NULL, "standard deviation"),
  O(lumen_gaussian_opts, DOUBLE3, sigma_axis, NONNEG, 0, NULL, "per-axis sigma x,y,z (0 = sigma)"),
  UNITS(lumen_gaussian_opts), TRUNCATE(lumen_gaussian_opts), MODE(lumen_gaussian_opts, "border mode"),
  CVAL(lumen_gaussian_opts), SPATIAL(lumen_gaussian_opts),
};
static const lumen_op_option dog_opts[] = {
  OA(lumen_dog_opts, DOUBLE, low_sigma, "sigma", POS, LUMEN_OPT_MIN_OPEN, NULL, "sigma of the narrow Gaussian"),
  O(lumen_dog_opts, DOUBLE, high_sigma, NONNEG, 0, NULL, "sigma of the wide Gaussian (0 = 1.6 x low_sigma)"),
  UNITS(lumen_dog_opts), TRUNCATE(lumen_dog_opts), MODE(lumen_dog_opts, "border mode"), CVAL(lumen_dog_opts),
  SPATIAL(lumen_dog_opts),
};
static const lumen_op_option laplace_opts[] = {
  O(lumen_laplace_opts, DOUBLE, sigma, POS, LUMEN_OPT_MIN_OPEN, NULL, "standard deviation"),
  UNITS(lumen_laplace_opts), TRUNCATE(lumen_laplace_opts), MODE(lumen_laplace_opts, "border mode"),
  CVAL(lumen_laplace_opts), SPATIAL(lumen_laplace_opts),
  O(lumen_laplace_opts, BOOL, discrete, 0, 1, 0, NULL, "the reference's form: Gaussian, then the discrete Laplacian"),
};
static const lumen_op_option median_opts[] = {
  O(lumen_median_opts, INT, size, 1, 255, LUMEN_OPT_ODD, NULL, "window width"),
  MODE(lumen_median_opts, "border mode"), CVAL(lumen_median_opts), SPATIAL(lumen_median_opts),
};
static const lumen_op_option gamma_opts[] = {
  O(lumen_gamma_opts, DOUBLE, gamma, POS, LUMEN_OPT_MIN_OPEN, NULL, "exponent"),
  O(lumen_gamma_opts, DOUBLE, max_value, POS, LUMEN_OPT_MIN_OPEN, NULL, "the data's full scale"),
};
static const lumen_op_option contrast_opts[] = {
  O(lumen_contrast_opts, DOUBLE, contrast, ANY, 0, NULL, "contrast C: slope C / (bins / 2) + 1"),
  O(lumen_contrast_opts, DOUBLE, brightness, ANY, 0, NULL, "brightness B: offset B - C"),
  O(lumen_contrast_opts, INT, bins, 1, 2147483647.0, LUMEN_OPT_ZERO_OK, NULL, "output scale (0 = 255 or 4095 by range)"),
};
static const lumen_op_option convolve_opts[] = {
  O(lumen_convolve_opts, FLOATS, kernel, ANY, 0, NULL, "kernel values, x fastest (required)"),
  {"kernel_dims", NULL, LUMEN_OPT_INT64_3, offsetof(lumen_convolve_opts, kernel_dims),
   offsetof(lumen_convolve_opts, kernel_ndim), 1, 4096, 0, NULL, "kernel shape x[,y[,z]] (default: 1-D, every value)"},
  MODE(lumen_convolve_opts, "border mode"), CVAL(lumen_convolve_opts),
  O(lumen_convolve_opts, BOOL, correlate, 0, 1, 0, NULL, "correlation instead of convolution"),
  SPATIAL(lumen_convolve_opts),
};
static const lumen_op_option bandpass_opts[] = {
  O(lumen_bandpass_opts, DOUBLE, d0, NONNEG, 0, NULL, "band centre radius (frequency samples)"),
  O(lumen_bandpass_opts, DOUBLE, width, POS, LUMEN_OPT_MIN_OPEN, NULL, "band width"),
  O(lumen_bandpass_opts, INT, order, 1, 64, 0, NULL, "Butterworth order"),
  SPATIAL(lumen_bandpass_opts),
};
static const lumen_op_option otsu_opts[] = {
  O(lumen_otsu_opts, INT, bins, 1, 16777216.0, LUMEN_OPT_ZERO_OK, NULL, "histogram bins (0 = 256 for [0,255] data, else 4096)"),
};
static const lumen_op_option sauvola_opts[] = {
  O(lumen_sauvola_opts, INT, window, 1, ODD_MAX, LUMEN_OPT_ODD, NULL, "window width"),
  O(lumen_sauvola_opts, DOUBLE, k, ANY, 0, NULL, "k of T = m (1 + k (s / r - 1))"),
  O(lumen_sauvola_opts, DOUBLE, r, POS, LUMEN_OPT_MIN_OPEN, NULL, "dynamic range of the standard deviation"),
  O(lumen_sauvola_opts, BOOL, output_threshold, 0, 1, 0, NULL, "write the float threshold map T"),
  O(lumen_sauvola_opts, INT, foreground, 1, 255, 0, NULL, "mask value"),
  SPATIAL(lumen_sauvola_opts),
};
static const lumen_op_option local_variance_opts[] = {
  O(lumen_local_variance_opts, INT, window, 1, ODD_MAX, LUMEN_OPT_ODD, NULL, "window width"),
  MODE(lumen_local_variance_opts, "border mode"), CVAL(lumen_local_variance_opts),
  SPATIAL(lumen_local_variance_opts),
};
static const lumen_op_option variance_binarize_opts[] = {
  O(lumen_local_variance_opts, INT, window, 1, ODD_MAX, LUMEN_OPT_ODD, NULL, "window width"),
  O(lumen_local_variance_opts, DOUBLE, alpha, NONNEG, 0, NULL, "mask lv^2 >= alpha gv^2"),
  MODE(lumen_local_variance_opts, "border mode"), CVAL(lumen_local_variance_opts),
  SPATIAL(lumen_local_variance_opts),
};
#define MORPH_SHAPE                                                                                          \
  O(lumen_morph_opts, ENUM, element, 0, 3, 0, element_names, "structuring element"),                       \
  O(lumen_morph_opts, INT, radius, 0, 1000, 0, NULL, "disk or ball radius"),                               \
  O(lumen_morph_opts, INT, size, 1, ODD_MAX, LUMEN_OPT_ODD, NULL, "square or cube width"),                 \
  O(lumen_morph_opts, BOOL, binary, 0, 1, 0, NULL, "binary morphology of input != 0 (uint8 0/1 output)")
static const lumen_op_option morphology_opts[] = {
  O(lumen_morph_opts, ENUM, op, 0, 4, 0, morph_names, "operation"),
  MORPH_SHAPE,
};
static const lumen_op_option morph_fixed_opts[] = {MORPH_SHAPE};
static const lumen_op_option region_opts[] = {
  O(lumen_region_opts, INT, connectivity, 1, 3, 0, NULL, "1 = faces .. spatial dims = every neighbour"),
  SPATIAL(lumen_region_opts),
};
static const lumen_op_option entropy_opts[] = {
  O(lumen_stats_opts, INT, bins, 0, 65536, 0, NULL, "histogram bins (0 = one per distinct value)"),
};
static const lumen_op_option mi_opts[] = {
  O(lumen_stats_opts, INT, bins, 1, 4096, 0, NULL, "bins of the joint histogram per axis"),
};
static const lumen_op_option variance_opts[] = {
  O(lumen_stats_opts, INT, ddof, 0, 1, 0, NULL, "0 = population, 1 = sample variance"),
};

/* segmentations */
static const lumen_op_option febds_opts[] = {
  O(lumen_febds_opts, ENUM, method, 0, 2, 0, febds_names, "enhancement"),
  O(lumen_febds_opts, DOUBLE, dog_low_sigma, POS, LUMEN_OPT_MIN_OPEN, NULL, "dog: narrow sigma"),
  O(lumen_febds_opts, DOUBLE, dog_high_sigma, POS, LUMEN_OPT_MIN_OPEN, NULL, "dog: wide sigma (> dog_low_sigma)"),
  O(lumen_febds_opts, DOUBLE, log_sigma, POS, LUMEN_OPT_MIN_OPEN, NULL, "log: sigma"),
  O(lumen_febds_opts, DOUBLE, fft_d0, NONNEG, 0, NULL, "fft: band centre radius"),
  O(lumen_febds_opts, DOUBLE, fft_width, POS, LUMEN_OPT_MIN_OPEN, NULL, "fft: band width"),
  O(lumen_febds_opts, INT, fft_order, 1, 64, 0, NULL, "fft: Butterworth order"),
  O(lumen_febds_opts, INT, fft_pad, 0, 100000, 0, NULL, "fft: mirror padding per side (0 = none)"),
  O(lumen_febds_opts, INT, median_size, 1, 255, LUMEN_OPT_ODD, NULL, "median window"),
  O(lumen_febds_opts, DOUBLE, gamma, POS, LUMEN_OPT_MIN_OPEN, NULL, "gamma exponent"),
  O(lumen_febds_opts, DOUBLE, gamma_max, POS, LUMEN_OPT_MIN_OPEN, NULL, "gamma full scale"),
  OA(lumen_febds_opts, DOUBLE, variance_alpha, "alpha", NONNEG, 0, NULL, "fft: local-variance threshold alpha"),
  O(lumen_febds_opts, INT, variance_window, 1, ODD_MAX, LUMEN_OPT_ODD, NULL, "fft: local-variance window"),
  O(lumen_febds_opts, INT, otsu_bins, 1, 16777216.0, LUMEN_OPT_ZERO_OK, NULL, "dog/log: Otsu bins (0 = auto)"),
  O(lumen_febds_opts, INT, closing_size, 1, ODD_MAX, LUMEN_OPT_ODD | LUMEN_OPT_ZERO_OK, NULL, "binary closing square (0 = none)"),
  O(lumen_febds_opts, BOOL, fill_holes, 0, 1, 0, NULL, "fill holes at the end"),
  O(lumen_febds_opts, INT, spatial_dims, 2, 3, 0, NULL, "2 = per slice, 3 = volume"),
};
static const lumen_op_option tophat_opts[] = {
  O(lumen_tophat_opts, INT, radius, 1, 1000, 0, NULL, "disk radius"),
  OA(lumen_tophat_opts, BOOL, output_mask, "mask", 0, 1, 0, NULL, "the Otsu mask of the map instead of the map"),
  O(lumen_tophat_opts, INT, spatial_dims, 2, 3, 0, NULL, "2 = per slice (disk), 3 = ball"),
};
#define CLUSTER_COMMON(T)                                                                        \
  O(T, INT, max_iterations, 1, 2147483647.0, 0, NULL, "iteration limit"),                        \
  O(T, DOUBLE, tolerance, NONNEG, 0, NULL, "convergence tolerance"),                             \
  O(T, UINT64, seed, 0, 18446744073709551615.0, 0, NULL, "k-means++ seed"),                      \
  {"labels", NULL, LUMEN_OPT_BOOL, offsetof(T, output), 0, 0, 1, 0, NULL, "write labels 0..k-1 (darkest first), not the mask"}
static const lumen_op_option kmeans_opts[] = {
  O(lumen_kmeans_opts, INT, k, 2, LUMEN_CLUSTER_MAX, 0, NULL, "clusters"),
  CLUSTER_COMMON(lumen_kmeans_opts),
};
#define FCM_COMMON                                                                       \
  OA(lumen_fcm_opts, INT, c, "k", 2, LUMEN_CLUSTER_MAX, 0, NULL, "clusters"),            \
  O(lumen_fcm_opts, DOUBLE, m, 1, LUMEN_OP_ANY_MAX, LUMEN_OPT_MIN_OPEN, NULL, "fuzzifier"), \
  CLUSTER_COMMON(lumen_fcm_opts)
static const lumen_op_option fcm_opts[] = {FCM_COMMON};
static const lumen_op_option pfcm_opts[] = {
  FCM_COMMON,
  O(lumen_fcm_opts, DOUBLE, eta, 1, LUMEN_OP_ANY_MAX, LUMEN_OPT_MIN_OPEN, NULL, "typicality exponent"),
  O(lumen_fcm_opts, DOUBLE, a, NONNEG, 0, NULL, "weight of memberships"),
  O(lumen_fcm_opts, DOUBLE, b, POS, LUMEN_OPT_MIN_OPEN, NULL, "weight of typicalities"),
  O(lumen_fcm_opts, DOUBLE, tau, 0, 1, LUMEN_OPT_MIN_OPEN, NULL, "mask: max typicality < tau"),
};
static const lumen_op_option region_grow_opts[] = {
  {"seeds", "seed_point", LUMEN_OPT_POINTS, offsetof(lumen_region_grow_opts, seeds),
   offsetof(lumen_region_grow_opts, n_seeds), 0, LUMEN_OP_ANY_MAX, 0, NULL, "a seed voxel x,y[,z] (repeatable; none = the regional maxima)"},
  O(lumen_region_grow_opts, DOUBLE, threshold, ANY, LUMEN_OPT_NAN_OK, NULL, "grow through values >= threshold (auto = mean of the seeds)"),
  O(lumen_region_grow_opts, DOUBLE, max_gradient, NONNEG, 0, NULL, "join only where the gradient <= this (0 = off)"),
  O(lumen_region_grow_opts, INT, connectivity, 0, 1, 0, NULL, "0 = full (8/26), 1 = faces (4/6)"),
  O(lumen_region_grow_opts, INT, smooth_radius, 0, 1000, 0, NULL, "closing radius (0 = off)"),
};
static const lumen_op_option breast_mask_opts[] = {
  O(lumen_breast_mask_opts, INT, otsu_bins, 1, 16777216.0, LUMEN_OPT_ZERO_OK, NULL, "Otsu bins (0 = auto)"),
  O(lumen_breast_mask_opts, INT, connectivity, 1, 2, 0, NULL, "1 = 4-connected, 2 = 8"),
  O(lumen_breast_mask_opts, BOOL, fill_holes, 0, 1, 0, NULL, "fill holes of the component"),
  O(lumen_breast_mask_opts, INT, spatial_dims, 2, 3, 0, NULL, "2 = per slice, 3 = volume"),
};
static const lumen_op_option window_opts[] = {
  OA(lumen_window_opts, DOUBLE, center, "centre", ANY, LUMEN_OPT_NAN_OK, NULL, "window centre (auto = mid-range)"),
  O(lumen_window_opts, DOUBLE, width, POS, LUMEN_OPT_MIN_OPEN | LUMEN_OPT_NAN_OK, NULL, "window width (auto = the range)"),
  O(lumen_window_opts, DOUBLE, out_max, POS, LUMEN_OPT_MIN_OPEN, NULL, "output scale"),
};
static const lumen_op_option bits_opts[] = {
  O(lumen_bits_opts, INT, bits, 1, 32, LUMEN_OPT_ZERO_OK, NULL, "bits stored (0 = 8, 12 or 16 by the maximum)"),
  O(lumen_bits_opts, DOUBLE, target, POS, LUMEN_OPT_MIN_OPEN, NULL, "output scale"),
};
static const lumen_op_option grail_opts[] = {
  O(lumen_grail_opts, INT, n_scales, 1, 8, 0, NULL, "Gabor scales"),
  O(lumen_grail_opts, INT, n_orientations, 1, 32, 0, NULL, "Gabor orientations"),
  O(lumen_grail_opts, DOUBLE, delta, POS, LUMEN_OPT_MIN_OPEN | LUMEN_OPT_ZERO_OK, NULL, "first search step (0 = 300 on the 12-bit scale)"),
  O(lumen_grail_opts, INT, k_max, 1, 12, 0, NULL, "search rounds"),
  O(lumen_grail_opts, INT, steps, 1, 1000, 0, NULL, "candidates each side per round"),
  O(lumen_grail_opts, INT, bins, 2, 4096, 0, NULL, "mutual-information histogram bins"),
  O(lumen_grail_opts, BOOL, quantize, 0, 1, 0, NULL, "the metric sees integer display levels"),
  O(lumen_grail_opts, DOUBLE, out_max, 1, LUMEN_OP_ANY_MAX, 0, NULL, "output scale"),
};

/* ------------------------------------------------------------------ the rows */

#define KF LUMEN_OP_KIND_FILTER
#define KS LUMEN_OP_KIND_SEGMENT
#define KT LUMEN_OP_KIND_STATISTIC
#define OUT(x) LUMEN_OP_OUTPUT_##x
/* ROW(name, aliases, kind, output, scalar, entry, options type, options list, init, run, doc) */
#define ROW(name, aliases, kind, out, scalar, entry, T, list, init, run, doc) \
  {{name, aliases, doc, kind, out, scalar, entry, sizeof(T), OPTS(list)}, init, run
/* the rest of a row: prepare, dispatch, cuda_steps, charge */
#define FILTER_CUDA(dispatch) NULL, dispatch, 0, NULL}
#define STEPS(cuda) NULL, NULL, cuda, NULL}

static const lumen_op_option no_opts[1] = {{0}};
#define NO_OPTS 0, no_opts

static const lumen_op_row rows[] = {
  ROW("gaussian", NULL, KF, OUT(IMAGE), NULL, "lumen_filter_gaussian", lumen_gaussian_opts, gaussian_opts,
      init_lumen_gaussian, run_gaussian, "Gaussian smoothing (scipy.ndimage.gaussian_filter)"),
      FILTER_CUDA("gaussian"),
  ROW("dog", "difference_of_gaussians", KF, OUT(IMAGE), NULL, "lumen_filter_dog", lumen_dog_opts, dog_opts,
      init_lumen_dog, run_dog, "difference of Gaussians G_low - G_high (skimage)"), FILTER_CUDA("dog"),
  {{"gaussian_laplace", "log laplace", "Laplacian of Gaussian (scipy.ndimage.gaussian_laplace)", KF, OUT(IMAGE),
    NULL, "lumen_filter_gaussian_laplace", sizeof(lumen_laplace_opts), OPTS(laplace_opts)},
   init_lumen_laplace, run_laplace, NULL, "gaussian_laplace", 0, "log"},
  ROW("median", NULL, KF, OUT(IMAGE), NULL, "lumen_filter_median", lumen_median_opts, median_opts,
      init_lumen_median, run_median, "median over a size^d window (scipy.ndimage.median_filter)"),
      FILTER_CUDA("median"),
  ROW("gamma", NULL, KF, OUT(IMAGE), NULL, "lumen_filter_gamma", lumen_gamma_opts, gamma_opts, init_lumen_gamma,
      run_gamma, "max_value * clamp(x / max_value, 0, inf)^gamma"), FILTER_CUDA("gamma"),
  {{"abs", "absolute", "absolute value |x|", KF, OUT(IMAGE), NULL, "lumen_filter_abs", sizeof(lumen_abs_opts),
    NO_OPTS}, init_lumen_abs, run_abs, NULL, "abs", 0, NULL},
  ROW("contrast", NULL, KF, OUT(IMAGE), NULL, "lumen_filter_contrast", lumen_contrast_opts, contrast_opts,
      init_lumen_contrast, run_contrast, "the reference's contrast and brightness, clamped to [0, bins]"),
      FILTER_CUDA("contrast"),
  {{"convolve", NULL, "convolution with a 1-D to 3-D kernel (scipy.ndimage.convolve / correlate)", KF, OUT(IMAGE),
    NULL, "lumen_filter_convolve", sizeof(lumen_convolve_opts), OPTS(convolve_opts)},
   init_lumen_convolve, run_convolve, prepare_convolve, "convolve", 0, NULL},
  ROW("bandpass", NULL, KF, OUT(IMAGE), NULL, "lumen_filter_bandpass", lumen_bandpass_opts, bandpass_opts,
      init_lumen_bandpass, run_bandpass, "Butterworth band-pass in the Fourier domain (FFTW at run time)"),
      FILTER_CUDA("bandpass"),
  ROW("otsu", NULL, KF, OUT(MASK), "threshold", "lumen_filter_otsu", lumen_otsu_opts, otsu_opts, init_lumen_otsu,
      run_otsu, "Otsu threshold t and the mask I > t (skimage.filters.threshold_otsu)"), FILTER_CUDA("otsu"),
  ROW("sauvola", NULL, KF, OUT(IMAGE), NULL, "lumen_filter_sauvola", lumen_sauvola_opts, sauvola_opts,
      init_lumen_sauvola, run_sauvola, "Sauvola local threshold: mask (I > T) * foreground, or the map T"),
      FILTER_CUDA("sauvola"),
  ROW("local_variance", NULL, KF, OUT(IMAGE), NULL, "lumen_filter_local_variance", lumen_local_variance_opts,
      local_variance_opts, init_lumen_local_variance, run_local_variance, "window variance E[x^2] - E[x]^2"),
      FILTER_CUDA("local_variance"),
  ROW("variance_binarize", NULL, KF, OUT(MASK), NULL, "lumen_filter_variance_binarize", lumen_local_variance_opts,
      variance_binarize_opts, init_lumen_local_variance, run_variance_binarize,
      "mask of lv^2 >= alpha gv^2 (local vs global variance)"), FILTER_CUDA("variance_binarize"),
  {{"morphology", NULL, "grey or binary morphology: erode, dilate, open, close, tophat", KF, OUT(VARIES), NULL,
    "lumen_filter_morphology", sizeof(lumen_morph_opts), OPTS(morphology_opts)},
   init_lumen_morph, run_morphology, NULL, "morphology", 0, NULL /* by op: src/scale/batch_ops.c */},
#define MORPH_ROW(name, aliases, init, doc)                                                                  \
  {{name, aliases, doc, KF, OUT(VARIES), NULL, "lumen_filter_morphology", sizeof(lumen_morph_opts),          \
    OPTS(morph_fixed_opts)}, init, run_morphology, NULL, "morphology", 0, NULL}
  MORPH_ROW("erode", "erosion", init_erode, "morphological erosion (minimum over the element)"),
  MORPH_ROW("dilate", "dilation", init_dilate, "morphological dilation (maximum over the element)"),
  MORPH_ROW("open", "opening", init_open, "opening: dilate(erode(I))"),
  MORPH_ROW("close", "closing", init_close, "closing: erode(dilate(I))"),
  {{"white_tophat", "tophat", "white top-hat I - open(I) with any element (lumen segment tophat: the disk "
    "algorithm)", KF, OUT(VARIES), NULL, "lumen_filter_morphology", sizeof(lumen_morph_opts),
    OPTS(morph_fixed_opts)}, init_white_tophat, run_morphology, NULL, "morphology", 0, "tophat"},
  ROW("fill_holes", NULL, KF, OUT(MASK), NULL, "lumen_filter_fill_holes", lumen_region_opts, region_opts,
      init_lumen_region, run_fill_holes, "fill holes of input != 0 (scipy.ndimage.binary_fill_holes)"),
      FILTER_CUDA("fill_holes"),
  ROW("label", NULL, KF, OUT(LABELS), "labels", "lumen_filter_label", lumen_region_opts, region_opts,
      init_lumen_region, run_label, "connected components as int32 labels 1..n (scipy.ndimage.label)"),
      FILTER_CUDA("label"),
  ROW("largest_component", NULL, KF, OUT(MASK), NULL, "lumen_filter_largest_component", lumen_region_opts,
      region_opts, init_lumen_region, run_largest_component, "mask of the largest connected component"),
      FILTER_CUDA("largest_component"),
  ROW("entropy", NULL, KT, OUT(NONE), "entropy", "lumen_filter_entropy", lumen_stats_opts, entropy_opts,
      init_lumen_stats, run_entropy, "Shannon entropy of the histogram, bits"), FILTER_CUDA("entropy"),
  ROW("mutual_information", NULL, KT, OUT(NONE), NULL, "lumen_filter_mutual_information", lumen_stats_opts,
      mi_opts, init_lumen_stats, NULL, "mutual information of two images, bits (two inputs)"),
      FILTER_CUDA("mutual_information"),
  ROW("variance", NULL, KT, OUT(NONE), "variance", "lumen_filter_variance", lumen_stats_opts, variance_opts,
      init_lumen_stats, run_variance, "mean and variance of every voxel"), FILTER_CUDA("variance"),

  ROW("febds", NULL, KS, OUT(MASK), "threshold", "lumen_segment_febds", lumen_febds_opts, febds_opts,
      init_lumen_febds, run_febds, "FEBDS microcalcification mask"), STEPS(1),
  ROW("tophat", NULL, KS, OUT(VARIES), NULL, "lumen_segment_tophat", lumen_tophat_opts, tophat_opts,
      init_lumen_tophat, run_tophat, "white top-hat map max(I - open(I), 0) with a disk, or its Otsu mask"),
      STEPS(1),
  ROW("kmeans", NULL, KS, OUT(VARIES), NULL, "lumen_segment_kmeans", lumen_kmeans_opts, kmeans_opts,
      init_lumen_kmeans, run_kmeans, "k-means on intensities: brightest-cluster mask or labels"), STEPS(0),
  ROW("fcm", NULL, KS, OUT(VARIES), NULL, "lumen_segment_fcm", lumen_fcm_opts, fcm_opts, init_lumen_fcm, run_fcm,
      "fuzzy c-means on intensities: brightest-cluster mask or labels"), STEPS(0),
  ROW("pfcm", NULL, KS, OUT(VARIES), NULL, "lumen_segment_pfcm", lumen_fcm_opts, pfcm_opts, init_lumen_fcm,
      run_pfcm, "possibilistic fuzzy c-means: outlier mask or labels"), STEPS(0),
  {{"region_grow", NULL, "seeded region growing (seeds: the regional maxima by default)", KS, OUT(MASK), NULL,
    "lumen_segment_region_grow", sizeof(lumen_region_grow_opts), OPTS(region_grow_opts)},
   init_lumen_region_grow, run_region_grow, prepare_region_grow, NULL, 1, NULL},
  ROW("breast_mask", NULL, KS, OUT(MASK), NULL, "lumen_segment_breast_mask", lumen_breast_mask_opts,
      breast_mask_opts, init_lumen_breast_mask, run_breast_mask, "Otsu, then the largest connected component"),
      STEPS(1),
  ROW("window", NULL, KS, OUT(IMAGE), NULL, "lumen_segment_window", lumen_window_opts, window_opts,
      init_lumen_window, run_window, "DICOM window clamp((x - (C - W/2)) / W, 0, 1) * out_max"), STEPS(0),
  ROW("normalize_bits", NULL, KS, OUT(IMAGE), "bits", "lumen_segment_normalize_bits", lumen_bits_opts, bits_opts,
      init_lumen_bits, run_normalize_bits, "clamp(x / (2^bits - 1), 0, 1) * target"), STEPS(0),
  ROW("grail", NULL, KS, OUT(IMAGE), NULL, "lumen_segment_grail", lumen_grail_opts, grail_opts, init_lumen_grail,
      run_grail, "GRAIL automatic window (Gabor mutual information; 2-D, CPU)"), STEPS(0),
};

/* the rows of the one-file ops of src/filter/ops/ (src/filter/op_native.h), after the table's:
   CMake lists them (cmake/LumenNativeOps.cmake), so adding one edits nothing here */
#define LUMEN_NATIVE_OP(NAME) extern const lumen_op_row lumen_op_native_##NAME;
#include "lumen_native_ops.inc"
#undef LUMEN_NATIVE_OP
static const lumen_op_row *const native_rows[] = {
#define LUMEN_NATIVE_OP(NAME) &lumen_op_native_##NAME,
#include "lumen_native_ops.inc"
#undef LUMEN_NATIVE_OP
    NULL /* the end (and an array that is never empty) */
};

#define N_TABLE_ROWS ((int)(sizeof rows / sizeof rows[0]))
#define N_NATIVE_ROWS ((int)(sizeof native_rows / sizeof native_rows[0]) - 1)

int lumen_op_row_count(void) { return N_TABLE_ROWS + N_NATIVE_ROWS; }

const lumen_op_row *lumen_op_row_at(int index) {
  if (index < 0 || index >= lumen_op_row_count()) return NULL;
  return index < N_TABLE_ROWS ? &rows[index] : native_rows[index - N_TABLE_ROWS];
}

int lumen_op_row_index(const lumen_op_info *op) {
  for (int k = 0; op && k < lumen_op_row_count(); k++)
    if (&lumen_op_row_at(k)->info == op) return k;
  return -1;
}

const lumen_op_row *lumen_op_row_of(const lumen_op_info *op) { return lumen_op_row_at(lumen_op_row_index(op)); }
