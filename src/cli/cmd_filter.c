/* lumen filter: one filter op on PNG / NIfTI images, one or many at once. The image-command
 * machinery it shares with lumen segment is in image_cli.c. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/image_cli.h"
#include "io/io_internal.h"

/* ------------------------------------------------------------------ lumen filter */

#define CMD "filter"

static const char *const filter_ops[] = {
  "gaussian", "dog", "log", "median", "gamma", "abs", "contrast", "convolve", "bandpass", "otsu", "sauvola",
  "local_variance", "variance_binarize", "erode", "dilate", "open", "close", "tophat", "fill_holes", "label",
  "largest_component", "entropy", "mutual_information", "variance"};
#define N_FILTER_OPS ((int)(sizeof filter_ops / sizeof filter_ops[0]))

static void filter_help(FILE *out) {
  fprintf(out,
          "usage: lumen filter OP IN OUT [IN OUT ...] [options]\n"
          "       lumen filter OP --batch LIST [options]      (LIST: one 'IN OUT' pair per line, '#' comments)\n"
          "       lumen filter entropy|variance IN [IN ...]   and   lumen filter mutual_information A B\n"
          "\n"
          "Applies one image operation (docs/FILTERS.md) to 2-D or 3-D images. Inputs: PNG (8/16-bit grey)\n"
          "or NIfTI (.nii, .nii.gz); the output format follows the extension. Masks are written as 8-bit\n"
          "PNG (0/255) or uint8 NIfTI (0/1); float results as float32 NIfTI or PNG (--png-scale).\n"
          "\n"
          "ops and their options (default):\n"
          "  gaussian          --sigma S (1) --sigma-axis X,Y,Z (0 = sigma) --units voxels|mm --truncate T (4)\n"
          "                    --mode M (nearest) --cval V (0) --spatial-dims D (0 = all; 2 = per slice)\n"
          "  dog               --low-sigma S (1) --high-sigma S (1.6 x low) --mode (nearest) --truncate\n"
          "  log               Laplacian of Gaussian: --sigma S (2) --mode (reflect) --discrete (reference form)\n"
          "  median            --size N (3, odd) --mode (reflect) --cval\n"
          "  gamma             --gamma G (1) --max-value M (4095)\n"
          "  abs               absolute value |x|\n"
          "  contrast          --contrast C (0) --brightness B (0) --bins N (0 = 255 or 4095 by range)\n"
          "  convolve          --kernel V,V,... (required) --kernel-dims NX[,NY[,NZ]] --mode (reflect) --correlate\n"
          "  bandpass          Butterworth: --d0 D (21) --width W (32) --order N (3)\n"
          "  otsu              mask I > t: --bins N (0 = 256 for [0,255] data, else 4096); prints t\n"
          "  sauvola           --window N (15, odd) --k K (0.5) --r R (128) --output-threshold --foreground F (255)\n"
          "  local_variance    --window N (5) --mode (mirror)\n"
          "  variance_binarize --window N (5) --alpha A (1)\n"
          "  erode, dilate, open, close, tophat\n"
          "                    --element disk|square|ball|cube (disk) --radius R (4) --size N (7) --binary\n"
          "  fill_holes, label, largest_component   --connectivity C (1)\n"
          "  entropy           --bins N (256; 0 = one per value); prints bits\n"
          "  mutual_information A B   --bins N (256)\n"
          "  variance          --ddof D (0); prints mean and variance\n"
          "  (--spatial-dims applies to every op that filters: 2 filters each slice of a 3-D image)\n"
          "  modes: reflect, nearest, constant, wrap, mirror\n"
          "\n"
          "common options:\n"
          "  --device D        cpu, cuda or cuda:N (default: the context default, cpu); ops without a CUDA\n"
          "                    kernel, or a failed device, rerun on the CPU and the summary says why\n"
          LUMEN_IMAGE_CLI_BATCH_HELP
          "  --precision P     full (default), half or bfloat16: storage of float results (NIfTI files keep\n"
          "                    float32)\n"
          "  --threads N       CPU threads (0 = all cores)\n"
          "  --batch LIST      more 'IN OUT' pairs from a file (all inputs must have one shape)\n"
          "  --png-scale clip|minmax   float results written as PNG: rounded and clipped (default) or\n"
          "                    stretched to the full range\n"
          LUMEN_IMAGE_CLI_REPORT_HELP
          "  lumen filter gaussian in.nii.gz out.nii.gz --sigma 2 --mode reflect\n"
          "  lumen filter median mammo.png med.png --size 5\n"
          "  lumen filter otsu in.png mask.png\n\n");
  lumen_cli_help_exit_status(out);
}

typedef struct fvals {
  double sigma, sigma_axis[3], truncate, cval, low, high, gamma, max_value, contrast, brightness, d0, width, k, r,
      alpha;
  int has_sigma, has_sigma_axis, has_truncate, has_cval, has_mode, has_low, has_high, has_gamma, has_max, has_bins,
      has_d0, has_width, has_order, has_window, has_k, has_r, has_alpha, has_size, has_radius, has_element, has_conn,
      has_units, has_spatial;
  lumen_boundary mode;
  lumen_units units;
  lumen_element element;
  int spatial, size, bins, order, window, fg, has_fg, outthr, discrete, correlate, binary, radius, conn, ddof;
  float *kernel;
  int nkernel;
  int64_t kdims[3];
  int kndim;
} fvals;

static int parse_list(const char *opt, const char *text, double *v, int max, int *n) {
  *n = 0;
  const char *p = text;
  while (*p) {
    char *end;
    errno = 0;
    double x = strtod(p, &end);
    if (end == p || errno == ERANGE || *n >= max) {
      lumen_cli_error(CMD, "%s expects up to %d numbers separated by commas, got '%s'", opt, max, text);
      return 0;
    }
    v[(*n)++] = x;
    p = end;
    if (*p == ',') p++;
    else if (*p) {
      lumen_cli_error(CMD, "%s expects numbers separated by commas, got '%s'", opt, text);
      return 0;
    }
  }
  if (*n == 0) {
    lumen_cli_error(CMD, "%s expects numbers, got '%s'", opt, text);
    return 0;
  }
  return 1;
}

/* Op-specific options. Returns 1 consumed, 0 unknown, -1 bad value. */
static int filter_opt(fvals *f, int argc, char **argv, int *i) {
  const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
#define V() LUMEN_IMGCLI_TAKE_VALUE(CMD, a, v, i)
#define DBL(name, field, flag)                                          \
  if (strcmp(a, name) == 0) {                                           \
    V();                                                                \
    if (!lumen_imgcli_number(CMD, a, v, &f->field)) return -1;          \
    f->flag = 1;                                                        \
    return 1;                                                           \
  }
#define INT(name, field, flag)                                          \
  if (strcmp(a, name) == 0) {                                           \
    V();                                                                \
    if (!lumen_imgcli_int(CMD, a, v, &f->field)) return -1;             \
    f->flag = 1;                                                        \
    return 1;                                                           \
  }
  DBL("--sigma", sigma, has_sigma)
  DBL("--truncate", truncate, has_truncate)
  DBL("--cval", cval, has_cval)
  DBL("--low-sigma", low, has_low)
  DBL("--high-sigma", high, has_high)
  DBL("--gamma", gamma, has_gamma)
  DBL("--max-value", max_value, has_max)
  DBL("--d0", d0, has_d0)
  DBL("--width", width, has_width)
  DBL("--k", k, has_k)
  DBL("--r", r, has_r)
  DBL("--alpha", alpha, has_alpha)
  INT("--spatial-dims", spatial, has_spatial)
  INT("--size", size, has_size)
  INT("--bins", bins, has_bins)
  INT("--order", order, has_order)
  INT("--window", window, has_window)
  INT("--foreground", fg, has_fg)
  INT("--radius", radius, has_radius)
  INT("--connectivity", conn, has_conn)
  if (strcmp(a, "--contrast") == 0) {
    V();
    return lumen_imgcli_number(CMD, a, v, &f->contrast) ? 1 : -1;
  }
  if (strcmp(a, "--brightness") == 0) {
    V();
    return lumen_imgcli_number(CMD, a, v, &f->brightness) ? 1 : -1;
  }
  if (strcmp(a, "--ddof") == 0) {
    V();
    return lumen_imgcli_int(CMD, a, v, &f->ddof) ? 1 : -1;
  }
  if (strcmp(a, "--discrete") == 0) return f->discrete = 1;
  if (strcmp(a, "--correlate") == 0) return f->correlate = 1;
  if (strcmp(a, "--binary") == 0) return f->binary = 1;
  if (strcmp(a, "--output-threshold") == 0) return f->outthr = 1;
  if (strcmp(a, "--mode") == 0) {
    V();
    if (lumen_boundary_parse(v, &f->mode) != LUMEN_OK) {
      lumen_cli_error(CMD, "--mode is '%s', expected reflect, nearest, constant, wrap or mirror", v);
      return -1;
    }
    f->has_mode = 1;
    return 1;
  }
  if (strcmp(a, "--units") == 0) {
    V();
    if (strcmp(v, "voxels") == 0) f->units = LUMEN_UNITS_VOXELS;
    else if (strcmp(v, "mm") == 0) f->units = LUMEN_UNITS_MM;
    else {
      lumen_cli_error(CMD, "--units is '%s', expected voxels or mm", v);
      return -1;
    }
    f->has_units = 1;
    return 1;
  }
  if (strcmp(a, "--element") == 0) {
    V();
    static const char *const el[] = {"disk", "square", "ball", "cube"};
    for (int k = 0; k < 4; k++)
      if (strcmp(v, el[k]) == 0) {
        f->element = (lumen_element)k;
        f->has_element = 1;
        return 1;
      }
    lumen_cli_error(CMD, "--element is '%s', expected disk, square, ball or cube", v);
    return -1;
  }
  if (strcmp(a, "--sigma-axis") == 0) {
    V();
    int n;
    if (!parse_list(a, v, f->sigma_axis, 3, &n)) return -1;
    f->has_sigma_axis = 1;
    return 1;
  }
  if (strcmp(a, "--kernel") == 0) {
    V();
    int n = 0, cap = 1;
    for (const char *p = v; *p; p++) cap += *p == ',';
    double *tmp = malloc((size_t)cap * sizeof *tmp);
    free(f->kernel);
    f->kernel = malloc((size_t)cap * sizeof *f->kernel);
    if (!tmp || !f->kernel || !parse_list(a, v, tmp, cap, &n)) {
      free(tmp);
      return -1;
    }
    for (int k = 0; k < n; k++) f->kernel[k] = (float)tmp[k];
    f->nkernel = n;
    free(tmp);
    return 1;
  }
  if (strcmp(a, "--kernel-dims") == 0) {
    V();
    double d[3];
    int n;
    if (!parse_list(a, v, d, 3, &n)) return -1;
    f->kndim = n;
    for (int k = 0; k < n; k++) f->kdims[k] = (int64_t)d[k];
    return 1;
  }
  return 0;
#undef V
#undef DBL
#undef INT
}

/* Runs the op on one image. *is_mask tells the writer. */
static lumen_status run_filter(lumen_ctx *ctx, const char *op, const fvals *f, lumen_filter_exec ex,
                               const lumen_image *in, lumen_image **out, int *is_mask, double *scalar) {
  *is_mask = 0;
  if (strcmp(op, "gaussian") == 0) {
    lumen_gaussian_opts o;
    lumen_gaussian_opts_init(&o);
    o.exec = ex;
    if (f->has_sigma) o.sigma = f->sigma;
    if (f->has_sigma_axis) memcpy(o.sigma_axis, f->sigma_axis, sizeof o.sigma_axis);
    if (f->has_units) o.units = f->units;
    if (f->has_truncate) o.truncate = f->truncate;
    if (f->has_mode) o.mode = f->mode;
    if (f->has_cval) o.cval = f->cval;
    if (f->has_spatial) o.spatial_dims = f->spatial;
    return lumen_filter_gaussian(ctx, in, &o, out);
  }
  if (strcmp(op, "dog") == 0) {
    lumen_dog_opts o;
    lumen_dog_opts_init(&o);
    o.exec = ex;
    if (f->has_low) o.low_sigma = f->low;
    if (f->has_sigma) o.low_sigma = f->sigma;
    if (f->has_high) o.high_sigma = f->high;
    if (f->has_units) o.units = f->units;
    if (f->has_truncate) o.truncate = f->truncate;
    if (f->has_mode) o.mode = f->mode;
    if (f->has_cval) o.cval = f->cval;
    if (f->has_spatial) o.spatial_dims = f->spatial;
    return lumen_filter_dog(ctx, in, &o, out);
  }
  if (strcmp(op, "log") == 0) {
    lumen_laplace_opts o;
    lumen_laplace_opts_init(&o);
    o.exec = ex;
    if (f->has_sigma) o.sigma = f->sigma;
    if (f->has_units) o.units = f->units;
    if (f->has_truncate) o.truncate = f->truncate;
    if (f->has_mode) o.mode = f->mode;
    if (f->has_cval) o.cval = f->cval;
    if (f->has_spatial) o.spatial_dims = f->spatial;
    o.discrete = f->discrete;
    return lumen_filter_gaussian_laplace(ctx, in, &o, out);
  }
  if (strcmp(op, "median") == 0) {
    lumen_median_opts o;
    lumen_median_opts_init(&o);
    o.exec = ex;
    if (f->has_size) o.size = f->size;
    if (f->has_mode) o.mode = f->mode;
    if (f->has_cval) o.cval = f->cval;
    if (f->has_spatial) o.spatial_dims = f->spatial;
    return lumen_filter_median(ctx, in, &o, out);
  }
  if (strcmp(op, "gamma") == 0) {
    lumen_gamma_opts o;
    lumen_gamma_opts_init(&o);
    o.exec = ex;
    if (f->has_gamma) o.gamma = f->gamma;
    if (f->has_max) o.max_value = f->max_value;
    return lumen_filter_gamma(ctx, in, &o, out);
  }
  if (strcmp(op, "abs") == 0) {
    lumen_abs_opts o;
    lumen_abs_opts_init(&o);
    o.exec = ex;
    return lumen_filter_abs(ctx, in, &o, out);
  }
  if (strcmp(op, "contrast") == 0) {
    lumen_contrast_opts o;
    lumen_contrast_opts_init(&o);
    o.exec = ex;
    o.contrast = f->contrast;
    o.brightness = f->brightness;
    if (f->has_bins) o.bins = f->bins;
    return lumen_filter_contrast(ctx, in, &o, out);
  }
  if (strcmp(op, "convolve") == 0) {
    lumen_convolve_opts o;
    lumen_convolve_opts_init(&o);
    o.exec = ex;
    o.kernel = f->kernel;
    if (f->kndim) {
      o.kernel_ndim = f->kndim;
      for (int k = 0; k < 3; k++) o.kernel_dims[k] = k < f->kndim ? f->kdims[k] : 1;
    } else {
      o.kernel_ndim = 1;
      o.kernel_dims[0] = f->nkernel;
      o.kernel_dims[1] = o.kernel_dims[2] = 1;
    }
    if (f->has_mode) o.mode = f->mode;
    if (f->has_cval) o.cval = f->cval;
    o.correlate = f->correlate;
    if (f->has_spatial) o.spatial_dims = f->spatial;
    int64_t need = o.kernel_dims[0] * (o.kernel_ndim > 1 ? o.kernel_dims[1] : 1) * (o.kernel_ndim > 2 ? o.kernel_dims[2] : 1);
    if (!f->kernel || need != f->nkernel) {
      *out = NULL;
      lumen_cli_error(CMD, "--kernel has %d value(s), expected %lld (the product of --kernel-dims)", f->nkernel,
                      (long long)need);
      return LUMEN_ERR_INVALID_ARGUMENT;
    }
    return lumen_filter_convolve(ctx, in, &o, out);
  }
  if (strcmp(op, "bandpass") == 0) {
    lumen_bandpass_opts o;
    lumen_bandpass_opts_init(&o);
    o.exec = ex;
    if (f->has_d0) o.d0 = f->d0;
    if (f->has_width) o.width = f->width;
    if (f->has_order) o.order = f->order;
    if (f->has_spatial) o.spatial_dims = f->spatial;
    return lumen_filter_bandpass(ctx, in, &o, out);
  }
  if (strcmp(op, "otsu") == 0) {
    lumen_otsu_opts o;
    lumen_otsu_opts_init(&o);
    o.exec = ex;
    if (f->has_bins) o.bins = f->bins;
    *is_mask = 1;
    return lumen_filter_otsu(ctx, in, &o, scalar, out);
  }
  if (strcmp(op, "sauvola") == 0) {
    lumen_sauvola_opts o;
    lumen_sauvola_opts_init(&o);
    o.exec = ex;
    if (f->has_window) o.window = f->window;
    if (f->has_k) o.k = f->k;
    if (f->has_r) o.r = f->r;
    o.output_threshold = f->outthr;
    if (f->has_fg) o.foreground = f->fg;
    if (f->has_spatial) o.spatial_dims = f->spatial;
    return lumen_filter_sauvola(ctx, in, &o, out);
  }
  if (strcmp(op, "local_variance") == 0 || strcmp(op, "variance_binarize") == 0) {
    lumen_local_variance_opts o;
    lumen_local_variance_opts_init(&o);
    o.exec = ex;
    if (f->has_window) o.window = f->window;
    if (f->has_mode) o.mode = f->mode;
    if (f->has_cval) o.cval = f->cval;
    if (f->has_alpha) o.alpha = f->alpha;
    if (f->has_spatial) o.spatial_dims = f->spatial;
    if (op[0] == 'l') return lumen_filter_local_variance(ctx, in, &o, out);
    *is_mask = 1;
    return lumen_filter_variance_binarize(ctx, in, &o, out);
  }
  static const char *const morph[] = {"erode", "dilate", "open", "close", "tophat"};
  for (int k = 0; k < 5; k++)
    if (strcmp(op, morph[k]) == 0) {
      lumen_morph_opts o;
      lumen_morph_opts_init(&o);
      o.exec = ex;
      o.op = (lumen_morph_op)k;
      if (f->has_element) o.element = f->element;
      if (f->has_radius) o.radius = f->radius;
      if (f->has_size) o.size = f->size;
      o.binary = f->binary;
      *is_mask = f->binary;
      return lumen_filter_morphology(ctx, in, &o, out);
    }
  if (strcmp(op, "fill_holes") == 0 || strcmp(op, "label") == 0 || strcmp(op, "largest_component") == 0) {
    lumen_region_opts o;
    lumen_region_opts_init(&o);
    o.exec = ex;
    if (f->has_conn) o.connectivity = f->conn;
    if (f->has_spatial) o.spatial_dims = f->spatial;
    if (op[0] == 'l' && op[1] == 'a') {
      int64_t n = 0;
      lumen_status s = lumen_filter_label(ctx, in, &o, out, &n);
      *scalar = (double)n;
      return s;
    }
    *is_mask = 1;
    return op[0] == 'f' ? lumen_filter_fill_holes(ctx, in, &o, out) : lumen_filter_largest_component(ctx, in, &o, out);
  }
  *out = NULL;
  return LUMEN_ERR_INVALID_ARGUMENT;
}

/* one image of a batch (lumen_imgbatch_fn): the op on the worker's device */
typedef struct filter_job {
  const char *op;
  const fvals *f;
  int precision;
} filter_job;

static lumen_status filter_one(void *user, lumen_ctx *ctx, const char *device, lumen_filter_report *rep,
                               const lumen_image *in, lumen_image **out, int *is_mask, int *png_bits, double *scalar) {
  const filter_job *fj = user;
  lumen_filter_exec ex;
  lumen_filter_exec_init(&ex);
  ex.device = device;
  ex.precision = fj->precision;
  ex.report = rep;
  lumen_status s = run_filter(ctx, fj->op, fj->f, ex, in, out, is_mask, scalar);
  *png_bits = lumen_image_dtype(in) == LUMEN_DTYPE_UINT16 ? 16 : 8;
  if (s == LUMEN_OK && lumen_image_dtype(*out) == LUMEN_DTYPE_INT32) *png_bits = 16;
  return s;
}

/* --memory-limit holds for the statistics too: the header decides before the voxels are read
   (and a FIFO is refused, not waited on). */
static int stats_input_fits(lumen_imgcli *c, const char *path) {
  int nd = 0, elem = 4;
  int64_t d[4] = {1, 1, 1, 1};
  if (c->memory_limit <= 0) return 1;
  if (!lumen_imgbatch_shape(c, path, &nd, d, &elem)) return 0;
  lumen_imgbatch_set_shape(c, nd, d, elem);
  return lumen_imgbatch_fits(c, path, c->threads > 0 ? c->threads : lumen_ctx_threads(c->ctx));
}

/* One result line on stdout; 0 (message printed) when it cannot be written (/dev/full, a
   closed pipe): the run stops there instead of computing results nobody receives. */
static int stats_line(lumen_imgcli *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int stats_line(lumen_imgcli *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vprintf(fmt, ap);
  va_end(ap);
  if (n >= 0 && !ferror(stdout)) return 1;
  (void)lumen_cli_finish_stdout(c->cmd); /* prints the reason */
  return 0;
}

static int stats_ops(lumen_imgcli *c, const fvals *f, lumen_filter_exec ex) {
  lumen_stats_opts o;
  lumen_stats_opts_init(&o);
  o.exec = ex;
  lumen_filter_report rep;
  o.exec.report = &rep;
  memset(&rep, 0, sizeof rep);
  if (f->has_bins) o.bins = f->bins;
  o.ddof = f->ddof;
  int mi = strcmp(c->op, "mutual_information") == 0;
  if (mi && c->njobs != 2) {
    lumen_cli_error(CMD, "mutual_information needs two inputs A B, got %d", c->njobs);
    return LUMEN_EXIT_USAGE;
  }
  lumen_image *imgs[2] = {NULL, NULL};
  int rc = LUMEN_EXIT_OK;
  for (int k = 0; k < c->njobs && rc == LUMEN_EXIT_OK; k++) {
    lumen_image *im = NULL;
    if (!stats_input_fits(c, c->in[k]) || !lumen_imgcli_read(c, c->in[k], &im)) {
      rc = LUMEN_EXIT_FAILURE;
      break;
    }
    lumen_status s = LUMEN_OK;
    if (mi) {
      imgs[k] = im;
      im = NULL;
      if (k == 1) {
        lumen_mi_result r;
        s = lumen_filter_mutual_information(c->ctx, imgs[0], imgs[1], &o, &r);
        if (s == LUMEN_OK &&
            !stats_line(c, "%s %s: mutual information %.10g bits (H(A) %.10g, H(B) %.10g, H(A,B) %.10g)\n", c->in[0],
                        c->in[1], r.mutual_information, r.entropy_a, r.entropy_b, r.joint_entropy))
          rc = LUMEN_EXIT_FAILURE;
      }
    } else if (strcmp(c->op, "entropy") == 0) {
      double e = 0;
      s = lumen_filter_entropy(c->ctx, im, &o, &e);
      if (s == LUMEN_OK && !stats_line(c, "%s: entropy %.10g bits\n", c->in[k], e)) rc = LUMEN_EXIT_FAILURE;
    } else {
      double mean = 0, var = 0;
      s = lumen_filter_variance(c->ctx, im, &o, &mean, &var);
      if (s == LUMEN_OK && !stats_line(c, "%s: mean %.10g variance %.10g\n", c->in[k], mean, var))
        rc = LUMEN_EXIT_FAILURE;
    }
    lumen_image_free(im);
    if (s != LUMEN_OK) {
      lumen_cli_error(CMD, "%s: %s", c->in[k], lumen_ctx_last_error(c->ctx));
      rc = LUMEN_EXIT_FAILURE;
    }
  }
  lumen_image_free(imgs[0]);
  lumen_image_free(imgs[1]);
  /* the last lines may sit in stdout's buffer: a full disk shows only at the flush */
  if (rc == LUMEN_EXIT_OK) rc = lumen_cli_finish_stdout(CMD);
  if (rc == LUMEN_EXIT_OK) lumen_imgcli_summary(c, c->op, c->njobs, &rep);
  return rc;
}

/* ---- option values: checked against the library's rules before anything is read, so a bad value
   is a usage error (exit 2) that names the option, not a failure of the first image */

#define REQ(cond, opt, value, expected) \
  if (!lumen_imgcli_require(CMD, (cond), opt, (double)(value), expected)) return 0

static int odd_window(int w, int max) { return w >= 1 && (w & 1) && w <= max; }

static int check_smoothing(const char *op, const fvals *f) {
  if (f->has_truncate) REQ(isfinite(f->truncate) && f->truncate > 0, "--truncate", f->truncate, "> 0");
  if (strcmp(op, "dog") == 0) {
    lumen_dog_opts o;
    lumen_dog_opts_init(&o);
    if (f->has_low) o.low_sigma = f->low;
    if (f->has_sigma) o.low_sigma = f->sigma;
    if (f->has_high) o.high_sigma = f->high;
    REQ(isfinite(o.low_sigma) && o.low_sigma > 0, f->has_sigma ? "--sigma" : "--low-sigma", o.low_sigma, "> 0");
    if (f->has_high && o.high_sigma != 0.0 && !(isfinite(o.high_sigma) && o.high_sigma > o.low_sigma)) {
      lumen_cli_error(CMD, "--high-sigma is %g, expected > --low-sigma (%g), or 0 (= 1.6 x --low-sigma)", o.high_sigma,
                      o.low_sigma);
      return 0;
    }
    return 1;
  }
  if (f->has_sigma) REQ(isfinite(f->sigma) && f->sigma > 0, "--sigma", f->sigma, "> 0");
  for (int a = 0; a < 3 && f->has_sigma_axis && op[0] == 'g'; a++)
    REQ(isfinite(f->sigma_axis[a]) && f->sigma_axis[a] >= 0, "--sigma-axis value", f->sigma_axis[a],
        "> 0 (or 0 = --sigma)");
  return 1;
}

static int check_window_ops(const char *op, const fvals *f) {
  if (strcmp(op, "median") == 0 && f->has_size)
    REQ(odd_window(f->size, 255), "--size", f->size, "an odd size 1..255");
  if (strcmp(op, "sauvola") == 0) {
    if (f->has_window) REQ(odd_window(f->window, 200001), "--window", f->window, "an odd size >= 1");
    if (f->has_k) REQ(isfinite(f->k), "--k", f->k, "a finite value");
    if (f->has_r) REQ(isfinite(f->r) && f->r > 0, "--r", f->r, "> 0");
    if (f->has_fg) REQ(f->fg >= 1 && f->fg <= 255, "--foreground", f->fg, "1..255");
  }
  if (strcmp(op, "local_variance") == 0 || strcmp(op, "variance_binarize") == 0) {
    if (f->has_window) REQ(odd_window(f->window, 200001), "--window", f->window, "an odd size >= 1");
    if (f->has_alpha) REQ(isfinite(f->alpha) && f->alpha >= 0, "--alpha", f->alpha, ">= 0");
  }
  return 1;
}

static int check_morph(const char *op, const fvals *f) {
  static const char *const morph[] = {"erode", "dilate", "open", "close", "tophat"};
  int is_morph = 0;
  for (int k = 0; k < 5; k++) is_morph |= strcmp(op, morph[k]) == 0;
  if (!is_morph) return 1;
  lumen_element el = f->has_element ? f->element : LUMEN_ELEMENT_DISK;
  if (el == LUMEN_ELEMENT_DISK || el == LUMEN_ELEMENT_BALL) {
    if (f->has_radius) REQ(f->radius >= 0 && f->radius <= 1000, "--radius", f->radius, "0..1000");
  } else if (f->has_size) {
    REQ(odd_window(f->size, 200001), "--size", f->size, "an odd size >= 1");
  }
  return 1;
}

static int check_levels(const char *op, const fvals *f) {
  if (strcmp(op, "gamma") == 0) {
    if (f->has_gamma) REQ(isfinite(f->gamma) && f->gamma > 0, "--gamma", f->gamma, "> 0");
    if (f->has_max) REQ(isfinite(f->max_value) && f->max_value > 0, "--max-value", f->max_value, "> 0");
  }
  if (strcmp(op, "contrast") == 0) {
    REQ(isfinite(f->contrast), "--contrast", f->contrast, "a finite value");
    REQ(isfinite(f->brightness), "--brightness", f->brightness, "a finite value");
    if (f->has_bins) REQ(f->bins >= 0, "--bins", f->bins, "0 (auto) or > 0");
  }
  if (strcmp(op, "bandpass") == 0) {
    if (f->has_d0) REQ(isfinite(f->d0) && f->d0 >= 0, "--d0", f->d0, ">= 0");
    if (f->has_width) REQ(isfinite(f->width) && f->width > 0, "--width", f->width, "> 0");
    if (f->has_order) REQ(f->order >= 1 && f->order <= 64, "--order", f->order, "1..64");
  }
  if (strcmp(op, "otsu") == 0 && f->has_bins)
    REQ(f->bins >= 0 && f->bins <= (1 << 24), "--bins", f->bins, "0 (auto) or 1..2^24");
  if (strcmp(op, "entropy") == 0 && f->has_bins)
    REQ(f->bins >= 0 && f->bins <= 65536, "--bins", f->bins, "0..65536");
  if (strcmp(op, "mutual_information") == 0 && f->has_bins)
    REQ(f->bins >= 1 && f->bins <= 4096, "--bins", f->bins, "1..4096");
  if (strcmp(op, "variance") == 0) REQ(f->ddof == 0 || f->ddof == 1, "--ddof", f->ddof, "0 or 1");
  return 1;
}

/* 1 when the values of the op's options are within the library's ranges that do not depend on
   the image (the rest is checked when the op runs: exit 2 as well). */
static int filter_check_values(const char *op, const fvals *f) {
  int region = strcmp(op, "fill_holes") == 0 || strcmp(op, "label") == 0 || strcmp(op, "largest_component") == 0;
  if (region && f->has_conn) REQ(f->conn >= 1, "--connectivity", f->conn, "1..the spatial dims");
  if (strcmp(op, "gaussian") == 0 || strcmp(op, "dog") == 0 || strcmp(op, "log") == 0)
    if (!check_smoothing(op, f)) return 0;
  return check_window_ops(op, f) && check_morph(op, f) && check_levels(op, f);
}
#undef REQ

/* The op name (aliases resolved) and every option, before anything is read: LUMEN_EXIT_OK, or
   LUMEN_EXIT_USAGE with the message printed. */
static int filter_parse(lumen_imgcli *c, fvals *f, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] == '-' && a[1]) {
      int r = lumen_imgcli_common(c, argc, argv, &i);
      if (r == 0) r = filter_opt(f, argc, argv, &i);
      if (r < 0) return LUMEN_EXIT_USAGE;
      if (r == 0) {
        lumen_cli_error(CMD, "unknown option '%s' (see 'lumen filter --help')", a);
        return LUMEN_EXIT_USAGE;
      }
    } else if (!c->op) {
      c->op = a;
    } else {
      c->pos[c->npos++] = argv[i];
    }
  }
  if (!c->op) {
    lumen_cli_error(CMD, "no op given (see 'lumen filter --help')");
    return LUMEN_EXIT_USAGE;
  }
  int known = 0;
  for (int k = 0; k < N_FILTER_OPS; k++) known |= strcmp(c->op, filter_ops[k]) == 0;
  if (strcmp(c->op, "gaussian_laplace") == 0) c->op = "log", known = 1;
  if (strcmp(c->op, "laplace") == 0) c->op = "log", known = 1;
  if (!known) {
    fprintf(stderr, "lumen filter: unknown op '%s', expected one of:", c->op);
    for (int k = 0; k < N_FILTER_OPS; k++) fprintf(stderr, "%s %s", k ? "," : "", filter_ops[k]);
    fputc('\n', stderr);
    return LUMEN_EXIT_USAGE;
  }
  return filter_check_values(c->op, f) ? LUMEN_EXIT_OK : LUMEN_EXIT_USAGE;
}

int lumen_cmd_filter_check(int argc, char **argv) {
  lumen_imgcli c;
  fvals f = {0};
  int rc = lumen_imgcli_begin(&c, CMD, argc) ? filter_parse(&c, &f, argc, argv) : LUMEN_EXIT_FAILURE;
  free(f.kernel);
  lumen_imgcli_free(&c);
  return rc;
}

int lumen_cmd_filter(int argc, char **argv) {
  lumen_imgcli c;
  fvals f = {0};
  if (!lumen_imgcli_begin(&c, CMD, argc)) return LUMEN_EXIT_FAILURE;
  int rc = LUMEN_EXIT_OK;
  if (lumen_cli_asks_help(argc, argv)) {
    filter_help(stdout);
    goto out;
  }
  if ((rc = filter_parse(&c, &f, argc, argv)) != LUMEN_EXIT_OK) goto out;
  int stats = strcmp(c.op, "entropy") == 0 || strcmp(c.op, "variance") == 0 || strcmp(c.op, "mutual_information") == 0;
  if ((rc = lumen_imgcli_start(&c, !stats)) != LUMEN_EXIT_OK) goto out;
  lumen_filter_exec ex;
  lumen_filter_exec_init(&ex);
  ex.device = c.device;
  ex.precision = c.precision;
  if (stats) { /* one image at a time, on the first device of a list */
    if (c.device && lumen_dist_devices_parse(c.ctx, c.device, &c.devs) == LUMEN_OK) ex.device = c.devs.name[0];
    rc = stats_ops(&c, &f, ex);
    goto out;
  }
  /* headers first: a batch must have one shape, and outputs are checked before any work */
  if (!lumen_imgbatch_check(&c)) {
    rc = LUMEN_EXIT_FAILURE;
    goto out;
  }
  filter_job fj = {c.op, &f, c.precision};
  rc = lumen_imgbatch_run(&c, filter_one, &fj, c.op, strcmp(c.op, "label") == 0 ? "labels" : "threshold");
out:
  free(f.kernel);
  lumen_imgcli_free(&c);
  return rc;
}
