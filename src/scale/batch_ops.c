/* The library ops of a public image batch by name (src/scale/batch_ops.h): one row per op with
   its options struct's size and init, and a run wrapper with one signature for all (calling
   lumen_gaussian_opts_init through a void (*)(void *) would be undefined, hence the wrappers). */
#include <string.h>
#include "scale/batch_ops.h"
#include "lumen/filter.h"
#include "lumen/segment.h"

#define INIT(NAME, T) \
  static void init_##NAME(void *o) { NAME##_opts_init((T *)o); }
#define RUN(NAME, T, FN) \
  static lumen_status run_##NAME(lumen_ctx *c, const lumen_image *in, const void *o, lumen_image **out, double *v) { \
    (void)v;                                                                                                     \
    return FN(c, in, (const T *)o, out);                                                                         \
  }

INIT(lumen_gaussian, lumen_gaussian_opts)
INIT(lumen_dog, lumen_dog_opts)
INIT(lumen_laplace, lumen_laplace_opts)
INIT(lumen_median, lumen_median_opts)
INIT(lumen_gamma, lumen_gamma_opts)
INIT(lumen_abs, lumen_abs_opts)
INIT(lumen_contrast, lumen_contrast_opts)
INIT(lumen_convolve, lumen_convolve_opts)
INIT(lumen_bandpass, lumen_bandpass_opts)
INIT(lumen_otsu, lumen_otsu_opts)
INIT(lumen_sauvola, lumen_sauvola_opts)
INIT(lumen_local_variance, lumen_local_variance_opts)
INIT(lumen_morph, lumen_morph_opts)
INIT(lumen_region, lumen_region_opts)
INIT(lumen_febds, lumen_febds_opts)
INIT(lumen_tophat, lumen_tophat_opts)
INIT(lumen_kmeans, lumen_kmeans_opts)
INIT(lumen_fcm, lumen_fcm_opts)
INIT(lumen_region_grow, lumen_region_grow_opts)
INIT(lumen_breast_mask, lumen_breast_mask_opts)
INIT(lumen_window, lumen_window_opts)
INIT(lumen_bits, lumen_bits_opts)
INIT(lumen_grail, lumen_grail_opts)

RUN(gaussian, lumen_gaussian_opts, lumen_filter_gaussian)
RUN(dog, lumen_dog_opts, lumen_filter_dog)
RUN(laplace, lumen_laplace_opts, lumen_filter_gaussian_laplace)
RUN(median, lumen_median_opts, lumen_filter_median)
RUN(gamma, lumen_gamma_opts, lumen_filter_gamma)
RUN(abs, lumen_abs_opts, lumen_filter_abs)
RUN(contrast, lumen_contrast_opts, lumen_filter_contrast)
RUN(convolve, lumen_convolve_opts, lumen_filter_convolve)
RUN(bandpass, lumen_bandpass_opts, lumen_filter_bandpass)
RUN(sauvola, lumen_sauvola_opts, lumen_filter_sauvola)
RUN(local_variance, lumen_local_variance_opts, lumen_filter_local_variance)
RUN(variance_binarize, lumen_local_variance_opts, lumen_filter_variance_binarize)
RUN(morphology, lumen_morph_opts, lumen_filter_morphology)
RUN(fill_holes, lumen_region_opts, lumen_filter_fill_holes)
RUN(largest_component, lumen_region_opts, lumen_filter_largest_component)
RUN(tophat, lumen_tophat_opts, lumen_segment_tophat)
RUN(region_grow, lumen_region_grow_opts, lumen_segment_region_grow)
RUN(breast_mask, lumen_breast_mask_opts, lumen_segment_breast_mask)
RUN(window, lumen_window_opts, lumen_segment_window)

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

#define F(NAME, T, INITN) {#NAME, "filter", sizeof(T), init_##INITN, run_##NAME}
#define S(NAME, T, INITN) {#NAME, "segment", sizeof(T), init_##INITN, run_##NAME}

static const lumen_batch_named_op ops[] = {
  F(gaussian, lumen_gaussian_opts, lumen_gaussian),
  F(dog, lumen_dog_opts, lumen_dog),
  {"gaussian_laplace", "filter", sizeof(lumen_laplace_opts), init_lumen_laplace, run_laplace},
  F(median, lumen_median_opts, lumen_median),
  F(gamma, lumen_gamma_opts, lumen_gamma),
  F(abs, lumen_abs_opts, lumen_abs),
  F(contrast, lumen_contrast_opts, lumen_contrast),
  F(convolve, lumen_convolve_opts, lumen_convolve),
  F(bandpass, lumen_bandpass_opts, lumen_bandpass),
  F(otsu, lumen_otsu_opts, lumen_otsu),
  F(sauvola, lumen_sauvola_opts, lumen_sauvola),
  F(local_variance, lumen_local_variance_opts, lumen_local_variance),
  F(variance_binarize, lumen_local_variance_opts, lumen_local_variance),
  F(morphology, lumen_morph_opts, lumen_morph),
  F(fill_holes, lumen_region_opts, lumen_region),
  F(label, lumen_region_opts, lumen_region),
  F(largest_component, lumen_region_opts, lumen_region),
  S(febds, lumen_febds_opts, lumen_febds),
  S(tophat, lumen_tophat_opts, lumen_tophat),
  S(kmeans, lumen_kmeans_opts, lumen_kmeans),
  S(fcm, lumen_fcm_opts, lumen_fcm),
  S(pfcm, lumen_fcm_opts, lumen_fcm),
  S(region_grow, lumen_region_grow_opts, lumen_region_grow),
  S(breast_mask, lumen_breast_mask_opts, lumen_breast_mask),
  S(window, lumen_window_opts, lumen_window),
  S(normalize_bits, lumen_bits_opts, lumen_bits),
  S(grail, lumen_grail_opts, lumen_grail),
};

const lumen_batch_named_op *lumen_batch_named_op_find(const char *name) {
  if (!name) return NULL;
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
    if (strcmp(ops[k].name, name) == 0) return &ops[k];
  return NULL;
}

const char *lumen_batch_named_op_charge_name(const lumen_batch_named_op *op, const void *opts) {
  static const char *const morph[LUMEN_MORPH_COUNT] = {"erode", "dilate", "open", "close", "tophat"};
  if (strcmp(op->name, "gaussian_laplace") == 0) return "log";
  if (strcmp(op->name, "morphology") == 0) {
    const lumen_morph_opts *m = opts;
    return m && (int)m->op >= 0 && m->op < LUMEN_MORPH_COUNT ? morph[m->op] : "open";
  }
  return op->name;
}
