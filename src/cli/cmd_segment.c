/* lumen segment: a segmentation algorithm (segment.h) on PNG / NIfTI images, one or many at once.
 * The image-command machinery (pairs, --batch, reading/writing, progress, summary) lives in
 * image_cli.c and is declared in image_cli.h. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/image_cli.h"

#define CMD "segment"

static void segment_help(FILE *out) {
  fprintf(out,
          "usage: lumen segment ALGO IN OUT [IN OUT ...] [options]\n"
          "       lumen segment ALGO --batch LIST [options]   (LIST: one 'IN OUT' pair per line)\n"
          "\n"
          "Segmentation algorithms (docs/SEGMENTATION.md) on 2-D or 3-D images: PNG (8/16-bit grey),\n"
          "NIfTI or DICOM (.dcm, or a folder of one image or one 3-D series; docs/DICOM.md) in, the output format\n"
          "from the extension. Masks: 8-bit PNG (0/255) or uint8 NIfTI (0/1).\n"
          "\n"
          "algorithms and their options (default):\n"
          "  febds           microcalcification mask: --method dog|log|fft (dog)\n"
          "                  --dog-low-sigma (1.7) --dog-high-sigma (2.0) --log-sigma (2.0)\n"
          "                  --fft-d0 (21) --fft-width (32) --fft-order (3) --fft-pad (32)\n"
          "                  --median-size (5) --gamma (1.25) --gamma-max (4095) --otsu-bins (0 = auto)\n"
          "                  --alpha (1, fft threshold) --variance-window (5) --closing-size (7; 0 = none)\n"
          "                  --no-fill-holes --spatial-dims 2|3 (2: per slice)\n"
          "  tophat          white top-hat map: --radius (4) --mask (Otsu mask of the map) --spatial-dims\n"
          "  kmeans          brightest-cluster mask: --k (2) --max-iterations (100) --tolerance (1e-4)\n"
          "                  --seed (42) --labels (write cluster labels 0..k-1 instead)\n"
          "  fcm             fuzzy c-means: --c (2) --m (2) --max-iterations (100) --tolerance (1e-3)\n"
          "                  --seed (42) --labels\n"
          "  pfcm            possibilistic FCM outlier mask: fcm options and --eta (2) --a (1) --b (4)\n"
          "                  --tau (0.04)\n"
          "  region_grow     --seed-point X,Y[,Z] (repeatable; default: the regional maxima)\n"
          "                  --threshold T (mean of the seeds) --max-gradient G (0 = off)\n"
          "                  --connectivity 0|1 (0 = 8/26) --smooth-radius R (2)\n"
          "  breast_mask     Otsu + largest component: --otsu-bins (0) --connectivity 1|2 (1) --fill-holes\n"
          "  window          DICOM window: --center C --width W (a DICOM input's own, else the data range) --out-max (255)\n"
          "  normalize_bits  --bits B (0 = infer 8/12/16) --target (255)\n"
          "  grail           automatic window (GRAIL, Gabor mutual information; 2-D, CPU): --n-scales (3)\n"
          "                  --n-orientations (6) --delta (0 = 300 on the 12-bit scale) --k-max (3)\n"
          "                  --steps (5) --bins (256) --no-quantize --out-max (255); -v logs a and b\n"
          "\n"
          "common options:\n"
          "  --device D        cpu, cuda or cuda:N; steps without a CUDA kernel, or a failed device, run on\n"
          "                    the CPU and the summary says why\n"
          LUMEN_IMAGE_CLI_BATCH_HELP
          "  --precision P     full (default), half or bfloat16: storage of float intermediates and results\n"
          "  --threads N       CPU threads (0 = all cores)\n"
          "  --batch LIST      more 'IN OUT' pairs from a file (all inputs must have one shape)\n"
          "  --png-scale clip|minmax   float results written as PNG (default clip)\n"
          LUMEN_IMAGE_CLI_REPORT_HELP
          "  lumen segment febds mammo.png mask.png --method dog\n"
          "  lumen segment kmeans in.nii.gz labels.nii.gz --k 3 --labels\n\n");
  lumen_cli_help_exit_status(out);
}

typedef struct svals {
  lumen_febds_opts febds;
  lumen_tophat_opts tophat;
  lumen_kmeans_opts kmeans;
  lumen_fcm_opts fcm;
  lumen_region_grow_opts grow;
  lumen_breast_mask_opts breast;
  lumen_window_opts window;
  lumen_bits_opts bits;
  lumen_grail_opts grail;
  int64_t *seeds;
  int nseeds, seed_dims;
} svals;

/* --seed of the clusterings: an integer 0..2^64-1. 1, or -1 with the message printed. */
static int parse_seed(const char *opt, const char *text, uint64_t *seed) {
  double s;
  if (!lumen_imgcli_number(CMD, opt, text, &s)) return -1;
  if (!(s >= 0 && s < 18446744073709551616.0)) { /* the cast below is defined only there */
    lumen_cli_error(CMD, "--seed is '%s', expected an integer from 0 to 2^64-1", text);
    return -1;
  }
  *seed = (uint64_t)s;
  return 1;
}

/* --seed-point X,Y[,Z] of region_grow, repeatable: appended to v->seeds. 1, or -1 with the message. */
static int add_seed_point(svals *v, const char *text) {
  long long c[3];
  int n = sscanf(text, "%lld,%lld,%lld", &c[0], &c[1], &c[2]);
  if (n < 2) {
    lumen_cli_error(CMD, "--seed-point is '%s', expected X,Y or X,Y,Z (voxel indices)", text);
    return -1;
  }
  if (v->seed_dims && n != v->seed_dims) {
    lumen_cli_error(CMD, "--seed-point '%s' has %d coordinates, the first one had %d", text, n, v->seed_dims);
    return -1;
  }
  v->seed_dims = n;
  int64_t *s = realloc(v->seeds, (size_t)(v->nseeds + 1) * 3 * sizeof *s);
  if (!s) return -1;
  v->seeds = s;
  for (int k = 0; k < n; k++) s[v->nseeds * n + k] = c[k];
  v->nseeds++;
  return 1;
}

/* How an option sets its field: a value (number, integer, seed, febds method, seed point) or a
   switch that stores a fixed value. */
typedef enum {
  SEG_DOUBLE, SEG_INT, SEG_SEED, SEG_METHOD, SEG_POINT, /* take a value */
  SEG_SET_0, SEG_SET_1, SEG_LABELS                      /* switches */
} seg_kind;

typedef struct {
  unsigned algos;   /* SEG_ALGO bits of the algorithms that have the option */
  const char *name;
  seg_kind kind;
  size_t offset;    /* of the field in svals */
} seg_option;

#define SEG_ALGO(a) (1u << LUMEN_SEGMENT_##a)
#define SEG_FCMS (SEG_ALGO(FCM) | SEG_ALGO(PFCM)) /* fcm and pfcm share their options struct */
#define SEG_FIELD(f) offsetof(svals, f)
static const seg_option seg_options[] = {
  {SEG_ALGO(FEBDS), "--method", SEG_METHOD, SEG_FIELD(febds.method)},
  {SEG_ALGO(FEBDS), "--dog-low-sigma", SEG_DOUBLE, SEG_FIELD(febds.dog_low_sigma)},
  {SEG_ALGO(FEBDS), "--dog-high-sigma", SEG_DOUBLE, SEG_FIELD(febds.dog_high_sigma)},
  {SEG_ALGO(FEBDS), "--log-sigma", SEG_DOUBLE, SEG_FIELD(febds.log_sigma)},
  {SEG_ALGO(FEBDS), "--fft-d0", SEG_DOUBLE, SEG_FIELD(febds.fft_d0)},
  {SEG_ALGO(FEBDS), "--fft-width", SEG_DOUBLE, SEG_FIELD(febds.fft_width)},
  {SEG_ALGO(FEBDS), "--fft-order", SEG_INT, SEG_FIELD(febds.fft_order)},
  {SEG_ALGO(FEBDS), "--fft-pad", SEG_INT, SEG_FIELD(febds.fft_pad)},
  {SEG_ALGO(FEBDS), "--median-size", SEG_INT, SEG_FIELD(febds.median_size)},
  {SEG_ALGO(FEBDS), "--gamma", SEG_DOUBLE, SEG_FIELD(febds.gamma)},
  {SEG_ALGO(FEBDS), "--gamma-max", SEG_DOUBLE, SEG_FIELD(febds.gamma_max)},
  {SEG_ALGO(FEBDS), "--alpha", SEG_DOUBLE, SEG_FIELD(febds.variance_alpha)},
  {SEG_ALGO(FEBDS), "--variance-window", SEG_INT, SEG_FIELD(febds.variance_window)},
  {SEG_ALGO(FEBDS), "--otsu-bins", SEG_INT, SEG_FIELD(febds.otsu_bins)},
  {SEG_ALGO(FEBDS), "--closing-size", SEG_INT, SEG_FIELD(febds.closing_size)},
  {SEG_ALGO(FEBDS), "--spatial-dims", SEG_INT, SEG_FIELD(febds.spatial_dims)},
  {SEG_ALGO(FEBDS), "--no-fill-holes", SEG_SET_0, SEG_FIELD(febds.fill_holes)},
  {SEG_ALGO(TOPHAT), "--radius", SEG_INT, SEG_FIELD(tophat.radius)},
  {SEG_ALGO(TOPHAT), "--spatial-dims", SEG_INT, SEG_FIELD(tophat.spatial_dims)},
  {SEG_ALGO(TOPHAT), "--mask", SEG_SET_1, SEG_FIELD(tophat.output_mask)},
  {SEG_ALGO(KMEANS), "--k", SEG_INT, SEG_FIELD(kmeans.k)},
  {SEG_ALGO(KMEANS), "--max-iterations", SEG_INT, SEG_FIELD(kmeans.max_iterations)},
  {SEG_ALGO(KMEANS), "--tolerance", SEG_DOUBLE, SEG_FIELD(kmeans.tolerance)},
  {SEG_ALGO(KMEANS), "--seed", SEG_SEED, SEG_FIELD(kmeans.seed)},
  {SEG_ALGO(KMEANS), "--labels", SEG_LABELS, SEG_FIELD(kmeans.output)},
  {SEG_FCMS, "--c", SEG_INT, SEG_FIELD(fcm.c)},
  {SEG_FCMS, "--k", SEG_INT, SEG_FIELD(fcm.c)},
  {SEG_FCMS, "--m", SEG_DOUBLE, SEG_FIELD(fcm.m)},
  {SEG_FCMS, "--max-iterations", SEG_INT, SEG_FIELD(fcm.max_iterations)},
  {SEG_FCMS, "--tolerance", SEG_DOUBLE, SEG_FIELD(fcm.tolerance)},
  {SEG_FCMS, "--eta", SEG_DOUBLE, SEG_FIELD(fcm.eta)},
  {SEG_FCMS, "--a", SEG_DOUBLE, SEG_FIELD(fcm.a)},
  {SEG_FCMS, "--b", SEG_DOUBLE, SEG_FIELD(fcm.b)},
  {SEG_FCMS, "--tau", SEG_DOUBLE, SEG_FIELD(fcm.tau)},
  {SEG_FCMS, "--seed", SEG_SEED, SEG_FIELD(fcm.seed)},
  {SEG_FCMS, "--labels", SEG_LABELS, SEG_FIELD(fcm.output)},
  {SEG_ALGO(REGION_GROW), "--threshold", SEG_DOUBLE, SEG_FIELD(grow.threshold)},
  {SEG_ALGO(REGION_GROW), "--max-gradient", SEG_DOUBLE, SEG_FIELD(grow.max_gradient)},
  {SEG_ALGO(REGION_GROW), "--connectivity", SEG_INT, SEG_FIELD(grow.connectivity)},
  {SEG_ALGO(REGION_GROW), "--smooth-radius", SEG_INT, SEG_FIELD(grow.smooth_radius)},
  {SEG_ALGO(REGION_GROW), "--seed-point", SEG_POINT, SEG_FIELD(seeds)},
  {SEG_ALGO(BREAST_MASK), "--otsu-bins", SEG_INT, SEG_FIELD(breast.otsu_bins)},
  {SEG_ALGO(BREAST_MASK), "--connectivity", SEG_INT, SEG_FIELD(breast.connectivity)},
  {SEG_ALGO(BREAST_MASK), "--spatial-dims", SEG_INT, SEG_FIELD(breast.spatial_dims)},
  {SEG_ALGO(BREAST_MASK), "--fill-holes", SEG_SET_1, SEG_FIELD(breast.fill_holes)},
  {SEG_ALGO(WINDOW), "--center", SEG_DOUBLE, SEG_FIELD(window.center)},
  {SEG_ALGO(WINDOW), "--centre", SEG_DOUBLE, SEG_FIELD(window.center)},
  {SEG_ALGO(WINDOW), "--width", SEG_DOUBLE, SEG_FIELD(window.width)},
  {SEG_ALGO(WINDOW), "--out-max", SEG_DOUBLE, SEG_FIELD(window.out_max)},
  {SEG_ALGO(NORMALIZE_BITS), "--bits", SEG_INT, SEG_FIELD(bits.bits)},
  {SEG_ALGO(NORMALIZE_BITS), "--target", SEG_DOUBLE, SEG_FIELD(bits.target)},
  {SEG_ALGO(GRAIL), "--n-scales", SEG_INT, SEG_FIELD(grail.n_scales)},
  {SEG_ALGO(GRAIL), "--n-orientations", SEG_INT, SEG_FIELD(grail.n_orientations)},
  {SEG_ALGO(GRAIL), "--delta", SEG_DOUBLE, SEG_FIELD(grail.delta)},
  {SEG_ALGO(GRAIL), "--k-max", SEG_INT, SEG_FIELD(grail.k_max)},
  {SEG_ALGO(GRAIL), "--steps", SEG_INT, SEG_FIELD(grail.steps)},
  {SEG_ALGO(GRAIL), "--bins", SEG_INT, SEG_FIELD(grail.bins)},
  {SEG_ALGO(GRAIL), "--no-quantize", SEG_SET_0, SEG_FIELD(grail.quantize)},
  {SEG_ALGO(GRAIL), "--out-max", SEG_DOUBLE, SEG_FIELD(grail.out_max)},
};

static const seg_option *seg_option_find(lumen_segment_algo algo, const char *name) {
  for (size_t k = 0; k < sizeof seg_options / sizeof seg_options[0]; k++)
    if (((seg_options[k].algos >> algo) & 1u) && strcmp(seg_options[k].name, name) == 0) return &seg_options[k];
  return NULL;
}

/* An option of the algorithm at argv[*i] (its value, if any, steps *i): 1 taken, 0 not one of
   the algorithm's, -1 a bad value (message printed). */
static int seg_opt(svals *v, lumen_segment_algo algo, int argc, char **argv, int *i) {
  const char *a = argv[*i], *t = *i + 1 < argc ? argv[*i + 1] : NULL;
  const seg_option *o = algo < LUMEN_SEGMENT_ALGO_COUNT ? seg_option_find(algo, a) : NULL;
  if (!o) return 0;
  void *field = (char *)v + o->offset;
  switch (o->kind) {
    case SEG_SET_0: *(int *)field = 0; return 1;
    case SEG_SET_1: *(int *)field = 1; return 1;
    case SEG_LABELS: *(lumen_cluster_output *)field = LUMEN_CLUSTER_LABELS; return 1;
    default: break;
  }
  LUMEN_IMGCLI_TAKE_VALUE(CMD, a, t, i);
  switch (o->kind) {
    case SEG_DOUBLE: return lumen_imgcli_number(CMD, a, t, field) ? 1 : -1;
    case SEG_INT: return lumen_imgcli_int(CMD, a, t, field) ? 1 : -1;
    case SEG_SEED: return parse_seed(a, t, field);
    case SEG_POINT: return add_seed_point(v, t);
    default: /* SEG_METHOD */
      if (lumen_febds_method_parse(NULL, t, field) == LUMEN_OK) return 1;
      lumen_cli_error(CMD, "--method is '%s', expected one of dog, log, fft", t);
      return -1;
  }
}

/* one image of a batch (lumen_imgbatch_fn): a copy of the options with the worker's device */
typedef struct seg_job {
  lumen_segment_algo algo;
  const void *opts;
  const svals *v;
  int precision;
  const double *window_from_file; /* window: per input, the DICOM WindowCenter/Width or NaN (NULL: none) */
} seg_job;

static lumen_status segment_one(void *user, lumen_ctx *ctx, int64_t item, const char *device,
                                lumen_filter_report *rep, const lumen_image *in, lumen_image **out, int *is_mask,
                                int *png_bits, double *scalar) {
  const seg_job *sj = user;
  svals local = *sj->v; /* every options struct starts with its lumen_filter_exec */
  void *opts = (char *)&local + ((const char *)sj->opts - (const char *)sj->v);
  lumen_filter_exec *ex = opts;
  if (sj->window_from_file && isfinite(sj->window_from_file[2 * item])) { /* the DICOM file's window */
    local.window.center = sj->window_from_file[2 * item];
    local.window.width = sj->window_from_file[2 * item + 1];
  }
  ex->device = device;
  ex->precision = sj->precision;
  ex->report = rep;
  (void)scalar;
  lumen_status s = lumen_segment_run(ctx, sj->algo, opts, in, out);
  if (s != LUMEN_OK) return s;
  const svals *v = sj->v;
  *is_mask = lumen_image_dtype(*out) == LUMEN_DTYPE_UINT8 &&
             !((sj->algo == LUMEN_SEGMENT_KMEANS && v->kmeans.output == LUMEN_CLUSTER_LABELS) ||
               ((sj->algo == LUMEN_SEGMENT_FCM || sj->algo == LUMEN_SEGMENT_PFCM) && v->fcm.output == LUMEN_CLUSTER_LABELS));
  *png_bits = lumen_image_dtype(in) == LUMEN_DTYPE_UINT16 && !*is_mask ? 16 : 8;
  return LUMEN_OK;
}

/* ---- option values: checked against the library's rules before anything is read, so a bad value
   is a usage error (exit 2) that names the option, not a failure of the first image */

/* "--OPT: FIELD is V, expected E": the option as typed and the library's name for it */
static int seg_require(int ok, const char *opt, const char *field, double value, const char *expected) {
  if (!ok) lumen_cli_error(CMD, "%s: %s is %g, expected %s", opt, field, value, expected);
  return ok;
}
#define REQ(cond, opt, field, value, expected) \
  if (!seg_require((cond), opt, field, (double)(value), expected)) return 0

static int odd_size(int w) { return w >= 1 && w % 2 == 1; }

static int check_febds(const lumen_febds_opts *o) {
  REQ(isfinite(o->dog_low_sigma) && o->dog_low_sigma > 0, "--dog-low-sigma", "dog_low_sigma", o->dog_low_sigma,
      "> 0");
  if (!(isfinite(o->dog_high_sigma) && o->dog_high_sigma > o->dog_low_sigma)) {
    lumen_cli_error(CMD, "--dog-high-sigma: dog_high_sigma is %g, expected > dog_low_sigma (%g)",
                    o->dog_high_sigma, o->dog_low_sigma);
    return 0;
  }
  REQ(isfinite(o->log_sigma) && o->log_sigma > 0, "--log-sigma", "log_sigma", o->log_sigma, "> 0");
  REQ(odd_size(o->median_size), "--median-size", "median_size", o->median_size, "an odd size >= 1");
  REQ(isfinite(o->gamma) && o->gamma > 0, "--gamma", "gamma", o->gamma, "> 0");
  REQ(isfinite(o->gamma_max) && o->gamma_max > 0, "--gamma-max", "gamma_max", o->gamma_max, "> 0");
  REQ(o->closing_size == 0 || odd_size(o->closing_size), "--closing-size", "closing_size", o->closing_size,
      "0 (none) or an odd size");
  REQ(odd_size(o->variance_window), "--variance-window", "variance_window", o->variance_window,
      "an odd size >= 1");
  REQ(o->spatial_dims == 0 || o->spatial_dims == 2 || o->spatial_dims == 3, "--spatial-dims", "spatial_dims",
      o->spatial_dims,
      "2 (per slice) or 3 (volume)");
  return 1;
}

static int check_clusters(lumen_segment_algo algo, const svals *v) {
  if (algo == LUMEN_SEGMENT_KMEANS) {
    const lumen_kmeans_opts *o = &v->kmeans;
    REQ(o->k >= 2 && o->k <= LUMEN_CLUSTER_MAX, "--k", "k", o->k, "2..16 (clusters)");
    REQ(o->max_iterations >= 1, "--max-iterations", "max_iterations", o->max_iterations, ">= 1");
    REQ(isfinite(o->tolerance) && o->tolerance >= 0, "--tolerance", "tolerance", o->tolerance, ">= 0");
    return 1;
  }
  const lumen_fcm_opts *o = &v->fcm;
  REQ(o->c >= 2 && o->c <= LUMEN_CLUSTER_MAX, "--c", "c", o->c, "2..16 (clusters)");
  REQ(isfinite(o->m) && o->m > 1, "--m", "m", o->m, "> 1");
  REQ(o->max_iterations >= 1, "--max-iterations", "max_iterations", o->max_iterations, ">= 1");
  REQ(isfinite(o->tolerance) && o->tolerance >= 0, "--tolerance", "tolerance", o->tolerance, ">= 0");
  if (algo == LUMEN_SEGMENT_PFCM) {
    REQ(isfinite(o->eta) && o->eta > 1, "--eta", "eta", o->eta, "> 1");
    REQ(isfinite(o->a) && o->a >= 0, "--a", "a", o->a, ">= 0");
    REQ(isfinite(o->b) && o->b > 0, "--b", "b", o->b, "> 0");
    REQ(o->tau > 0 && o->tau <= 1, "--tau", "tau", o->tau, "in (0, 1]");
  }
  return 1;
}

/* 1 when the algorithm's option values are within the library's ranges that do not depend on
   the image (the rest is checked when it runs: exit 2 as well). */
static int segment_check_values(lumen_segment_algo algo, const svals *v) {
  switch (algo) {
    case LUMEN_SEGMENT_FEBDS: return check_febds(&v->febds);
    case LUMEN_SEGMENT_KMEANS:
    case LUMEN_SEGMENT_FCM:
    case LUMEN_SEGMENT_PFCM: return check_clusters(algo, v);
    case LUMEN_SEGMENT_REGION_GROW:
      REQ(v->grow.connectivity == 0 || v->grow.connectivity == 1, "--connectivity", "connectivity",
          v->grow.connectivity,
          "0 (full) or 1 (faces)");
      REQ(v->grow.smooth_radius >= 0, "--smooth-radius", "smooth_radius", v->grow.smooth_radius, ">= 0");
      REQ(v->grow.max_gradient >= 0, "--max-gradient", "max_gradient", v->grow.max_gradient, ">= 0 (0 = off)");
      return 1;
    case LUMEN_SEGMENT_WINDOW:
      REQ(isnan(v->window.width) || (isfinite(v->window.width) && v->window.width > 0), "--width", "width",
          v->window.width,
          "> 0");
      REQ(isnan(v->window.center) || isfinite(v->window.center), "--center", "center", v->window.center, "a number");
      REQ(isfinite(v->window.out_max) && v->window.out_max > 0, "--out-max", "out_max", v->window.out_max, "> 0");
      return 1;
    case LUMEN_SEGMENT_GRAIL:
      REQ(v->grail.n_scales >= 1 && v->grail.n_scales <= 8, "--n-scales", "n_scales", v->grail.n_scales, "1..8");
      REQ(v->grail.n_orientations >= 1 && v->grail.n_orientations <= 32, "--n-orientations", "n_orientations",
          v->grail.n_orientations, "1..32");
      REQ(isfinite(v->grail.delta) && v->grail.delta >= 0, "--delta", "delta", v->grail.delta,
          "> 0 (or 0 = 300 on the 12-bit scale)");
      REQ(v->grail.k_max >= 1 && v->grail.k_max <= 12, "--k-max", "k_max", v->grail.k_max, "1..12");
      REQ(v->grail.steps >= 1 && v->grail.steps <= 1000, "--steps", "steps", v->grail.steps, "1..1000");
      REQ(v->grail.bins >= 2 && v->grail.bins <= 4096, "--bins", "bins", v->grail.bins, "2..4096");
      REQ(isfinite(v->grail.out_max) && v->grail.out_max >= 1, "--out-max", "out_max", v->grail.out_max, ">= 1");
      return 1;
    default: return 1;
  }
}
#undef REQ

static void svals_init(svals *v) {
  memset(v, 0, sizeof *v);
  lumen_febds_opts_init(&v->febds);
  lumen_tophat_opts_init(&v->tophat);
  lumen_kmeans_opts_init(&v->kmeans);
  lumen_fcm_opts_init(&v->fcm);
  lumen_region_grow_opts_init(&v->grow);
  lumen_breast_mask_opts_init(&v->breast);
  lumen_window_opts_init(&v->window);
  lumen_bits_opts_init(&v->bits);
  lumen_grail_opts_init(&v->grail);
}

/* The algorithm and every option, before anything is read: LUMEN_EXIT_OK, or LUMEN_EXIT_USAGE
   with the message printed. */
static int segment_parse(lumen_imgcli *c, svals *v, lumen_segment_algo *algo, int argc, char **argv) {
  *algo = LUMEN_SEGMENT_ALGO_COUNT;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] == '-' && a[1]) {
      int r = lumen_imgcli_common(c, argc, argv, &i);
      if (r == 0 && *algo == LUMEN_SEGMENT_ALGO_COUNT) {
        lumen_cli_error(CMD, "give the algorithm before its options ('%s')", a);
        return LUMEN_EXIT_USAGE;
      }
      if (r == 0) r = seg_opt(v, *algo, argc, argv, &i);
      if (r < 0) return LUMEN_EXIT_USAGE;
      if (r == 0) {
        lumen_cli_error(CMD, "unknown option '%s' for %s (see 'lumen segment --help')", a, c->op);
        return LUMEN_EXIT_USAGE;
      }
    } else if (!c->op) {
      c->op = a;
      if (lumen_segment_algo_parse(NULL, a, algo) != LUMEN_OK) {
        lumen_cli_error(CMD,
                        "unknown algorithm '%s', expected one of febds, tophat, kmeans, fcm, pfcm, region_grow, "
                        "breast_mask, window, normalize_bits, grail",
                        a);
        return LUMEN_EXIT_USAGE;
      }
    } else {
      c->pos[c->npos++] = argv[i];
    }
  }
  if (!c->op) {
    lumen_cli_error(CMD, "no algorithm given (see 'lumen segment --help')");
    return LUMEN_EXIT_USAGE;
  }
  return segment_check_values(*algo, v) ? LUMEN_EXIT_OK : LUMEN_EXIT_USAGE;
}

int lumen_cmd_segment_check(int argc, char **argv) {
  lumen_imgcli c;
  svals v;
  svals_init(&v);
  lumen_segment_algo algo;
  int rc = lumen_imgcli_begin(&c, CMD, argc) ? segment_parse(&c, &v, &algo, argc, argv) : LUMEN_EXIT_FAILURE;
  free(v.seeds);
  lumen_imgcli_free(&c);
  return rc;
}

int lumen_cmd_segment(int argc, char **argv) {
  lumen_imgcli c;
  svals v;
  svals_init(&v);
  if (!lumen_imgcli_begin(&c, CMD, argc)) return LUMEN_EXIT_FAILURE;
  int rc = LUMEN_EXIT_OK;
  if (lumen_cli_asks_help(argc, argv)) {
    segment_help(stdout);
    goto out;
  }
  lumen_segment_algo algo;
  if ((rc = segment_parse(&c, &v, &algo, argc, argv)) != LUMEN_EXIT_OK) goto out;
  if ((rc = lumen_imgcli_start(&c, 1)) != LUMEN_EXIT_OK) goto out;
  if (v.nseeds) {
    v.grow.seeds = v.seeds;
    v.grow.n_seeds = v.nseeds;
  }
  void *opts = NULL;
  switch (algo) {
    case LUMEN_SEGMENT_FEBDS: opts = &v.febds; break;
    case LUMEN_SEGMENT_TOPHAT: opts = &v.tophat; break;
    case LUMEN_SEGMENT_KMEANS: opts = &v.kmeans; break;
    case LUMEN_SEGMENT_FCM:
    case LUMEN_SEGMENT_PFCM: opts = &v.fcm; break;
    case LUMEN_SEGMENT_REGION_GROW: opts = &v.grow; break;
    case LUMEN_SEGMENT_BREAST_MASK: opts = &v.breast; break;
    case LUMEN_SEGMENT_WINDOW: opts = &v.window; break;
    case LUMEN_SEGMENT_GRAIL: opts = &v.grail; break;
    default: opts = &v.bits; break;
  }
  if (!lumen_imgbatch_check(&c)) {
    rc = LUMEN_EXIT_FAILURE;
    goto out;
  }
  if (v.nseeds && v.seed_dims != c.ndim0) {
    lumen_cli_error(CMD, "--seed-point has %d coordinates, expected %d for %s", v.seed_dims, c.ndim0, c.in[0]);
    rc = LUMEN_EXIT_FAILURE;
    goto out;
  }
  char what[64];
  if (algo == LUMEN_SEGMENT_FEBDS)
    snprintf(what, sizeof what, "febds (%s)", lumen_febds_method_name(v.febds.method));
  else
    snprintf(what, sizeof what, "%s", lumen_segment_algo_name(algo));
  seg_job sj = {algo, opts, &v, c.precision, NULL};
  double *win = NULL;
  if (algo == LUMEN_SEGMENT_WINDOW && isnan(v.window.center) && isnan(v.window.width)) {
    /* no --center/--width: a DICOM input's own WindowCenter/WindowWidth (its first values) */
    win = malloc(sizeof(double) * 2 * (size_t)c.njobs);
    if (!win) {
      lumen_cli_error(CMD, "out of memory");
      rc = LUMEN_EXIT_FAILURE;
      goto out;
    }
    for (int k = 0; k < c.njobs; k++) {
      win[2 * k] = win[2 * k + 1] = NAN;
      if (lumen_imgcli_dicom_window(&c, c.in[k], &win[2 * k], &win[2 * k + 1]) && c.verbose)
        fprintf(stderr, "lumen segment: %s: window from the DICOM header: WindowCenter %g, WindowWidth %g\n", c.in[k],
                win[2 * k], win[2 * k + 1]);
    }
    sj.window_from_file = win;
  }
  rc = lumen_imgbatch_run(&c, segment_one, &sj, what, "value");
  free(win);
out:
  free(v.seeds);
  lumen_imgcli_free(&c);
  return rc;
}
