/* GPU filter checks: every CUDA filter op against the CPU op on the same input, for each boundary
 * mode and storage precision, on random and natural-image-like data; the device memory report
 * before and after; the CPU rerun after a device failure (real and injected).
 *
 * Plain C without cmocka, so the GPU machine (no -dev packages) can run it: as the program
 * gpu_filter_check (tests/gpu/CMakeLists.txt; prints PASS/FAIL/SKIP lines, exits 1 on a failure,
 * 77 without a usable CUDA device) and, where cmocka exists, through tests/unit/test_gpu_filter.c,
 * which includes this file with GPU_FILTER_CHECKS_NO_MAIN.
 *
 * Tolerances (|gpu - cpu| <= rtol |cpu| + atol, per precision; docs/GPU.md):
 *   exact ops (median, morphology, contrast, masks of Otsu/binary morphology, histograms): equal.
 *   float ops written in the CPU order (Gaussian, DoG, LoG, convolution, local variance, Sauvola
 *   map): FULL rtol 1e-6, atol 1e-6 max|cpu|; HALF rtol 2^-10 (one float16 step where a float32
 *   difference flips the rounding); BFLOAT16 rtol 2^-7. Expected bit-identical; the line reports
 *   how many values are.
 *   gamma (powf differs by an ulp between libm and CUDA): as float ops.
 *   band-pass (cuFFT vs FFTW): atol 1e-4 max|input|.
 *   Sauvola / local-variance masks: at most 1e-4 of the pixels differ (threshold ties).
 *   scalars: Otsu threshold equal, entropy/MI 1e-12, variance 1e-12 relative. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "filter/filter_internal.h"
#include "lumen/lumen.h"

typedef struct gchk {
  FILE *log;
  int pass, fail, skip;
  lumen_ctx *ctx;
  const char *dev; /* "cuda:0" */
} gchk;

static void gline(gchk *c, int verdict, const char *fmt, ...) {
  /* verdict: 1 pass, 0 fail, -1 skip */
  const char *tag = verdict > 0 ? "PASS" : verdict == 0 ? "FAIL" : "SKIP";
  if (verdict > 0) c->pass++;
  else if (verdict == 0) c->fail++;
  else c->skip++;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(c->log, "%s %s\n", tag, buf);
  fflush(c->log);
}

/* ---------------------------------------------------------------- data */

static uint64_t g_rng = 88172645463325252ULL;
static double urand(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}

/* kind 0: uniform random in [0, 4095); kind 1: natural-image-like 12-bit (smooth background, blobs,
   edges, bright specks, noise, rounded to integers) */
static lumen_image *make_image(lumen_ctx *ctx, int ndim, const int64_t *dims, int kind) {
  lumen_image *im = NULL;
  if (lumen_image_create(ctx, ndim, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im) != LUMEN_OK) return NULL;
  float *p = lumen_image_data(im);
  const int64_t n = lumen_image_count(im);
  const int64_t n0 = dims[0], n1 = ndim > 1 ? dims[1] : 1;
  double bx[6], by[6], bz[6], bs[6], ba[6];
  for (int b = 0; b < 6; b++) {
    bx[b] = urand() * (double)n0;
    by[b] = urand() * (double)n1;
    bz[b] = urand() * (ndim > 2 ? (double)dims[2] : 1.0);
    bs[b] = 3.0 + urand() * 0.15 * (double)n0;
    ba[b] = 400.0 + urand() * 1500.0;
  }
  for (int64_t i = 0; i < n; i++) {
    if (kind == 0) {
      p[i] = (float)(urand() * 4095.0);
      continue;
    }
    const double x = (double)(i % n0), y = (double)((i / n0) % n1), z = ndim > 2 ? (double)((i / (n0 * n1)) % dims[2]) : 0;
    double v = 900.0 + 4.0 * x + 2.0 * y + 3.0 * z;
    for (int b = 0; b < 6; b++) {
      double d2 = (x - bx[b]) * (x - bx[b]) + (y - by[b]) * (y - by[b]) + (z - bz[b]) * (z - bz[b]);
      v += ba[b] * exp(-d2 / (2.0 * bs[b] * bs[b]));
    }
    if (x > 0.6 * (double)n0) v += 500.0;
    if (urand() < 0.003) v += 1500.0;
    v += (urand() - 0.5) * 60.0;
    v = v < 0 ? 0 : v > 4095 ? 4095 : v;
    p[i] = (float)floor(v + 0.5);
  }
  return im;
}

static lumen_image *host_f32(lumen_ctx *ctx, const lumen_image *im) {
  lumen_image *h = NULL, *f = NULL;
  if (lumen_image_device(im).kind != LUMEN_DEVICE_CPU) {
    if (lumen_image_to_device(ctx, im, lumen_device_cpu(), &h) != LUMEN_OK) return NULL;
    im = h;
  }
  lumen_status s = lumen_image_convert(ctx, im, LUMEN_DTYPE_FLOAT32, &f);
  lumen_image_free(h);
  return s == LUMEN_OK ? f : NULL;
}

typedef struct cmp_res {
  int64_t n, bad, equal;
  double maxerr, maxabs;
} cmp_res;

static int compare(lumen_ctx *ctx, const lumen_image *gpu, const lumen_image *cpu, double rtol, double atol_rel,
                   double atol_abs, cmp_res *r) {
  memset(r, 0, sizeof *r);
  lumen_image *a = host_f32(ctx, gpu), *b = host_f32(ctx, cpu);
  if (!a || !b || lumen_image_count(a) != lumen_image_count(b)) {
    lumen_image_free(a);
    lumen_image_free(b);
    return -1;
  }
  const float *pa = lumen_image_const_data(a), *pb = lumen_image_const_data(b);
  r->n = lumen_image_count(a);
  for (int64_t i = 0; i < r->n; i++)
    if (fabs((double)pb[i]) > r->maxabs && isfinite(pb[i])) r->maxabs = fabs((double)pb[i]);
  const double atol = atol_rel * r->maxabs + atol_abs;
  for (int64_t i = 0; i < r->n; i++) {
    double x = pa[i], y = pb[i];
    if (memcmp(&pa[i], &pb[i], sizeof(float)) == 0 || x == y) {
      r->equal++;
      continue;
    }
    double e = fabs(x - y);
    if (!(e <= rtol * fabs(y) + atol)) r->bad++;
    if (e > r->maxerr || isnan(e)) r->maxerr = e;
  }
  lumen_image_free(a);
  lumen_image_free(b);
  return 0;
}

/* ---------------------------------------------------------------- op adapters */

typedef lumen_status (*op_fn)(lumen_ctx *ctx, const lumen_image *in, lumen_filter_exec ex, const void *arg,
                              lumen_image **out);

#define ADAPT(NAME, OPTS, CALL)                                                                              \
  static lumen_status NAME(lumen_ctx *ctx, const lumen_image *in, lumen_filter_exec ex, const void *arg,    \
                           lumen_image **out) {                                                             \
    OPTS o = *(const OPTS *)arg;                                                                            \
    o.exec = ex;                                                                                            \
    return CALL(ctx, in, &o, out);                                                                          \
  }
ADAPT(op_gauss, lumen_gaussian_opts, lumen_filter_gaussian)
ADAPT(op_gauss_batch, lumen_gaussian_opts, lumen_filter_gaussian_batch)
ADAPT(op_dog, lumen_dog_opts, lumen_filter_dog)
ADAPT(op_log, lumen_laplace_opts, lumen_filter_gaussian_laplace)
ADAPT(op_median, lumen_median_opts, lumen_filter_median)
ADAPT(op_gamma, lumen_gamma_opts, lumen_filter_gamma)
ADAPT(op_abs, lumen_abs_opts, lumen_filter_abs)
ADAPT(op_contrast, lumen_contrast_opts, lumen_filter_contrast)
ADAPT(op_conv, lumen_convolve_opts, lumen_filter_convolve)
ADAPT(op_bandpass, lumen_bandpass_opts, lumen_filter_bandpass)
ADAPT(op_sauvola, lumen_sauvola_opts, lumen_filter_sauvola)
ADAPT(op_lvar, lumen_local_variance_opts, lumen_filter_local_variance)
ADAPT(op_vbin, lumen_local_variance_opts, lumen_filter_variance_binarize)
ADAPT(op_morph, lumen_morph_opts, lumen_filter_morphology)
ADAPT(op_fill, lumen_region_opts, lumen_filter_fill_holes)

static lumen_status op_otsu_mask(lumen_ctx *ctx, const lumen_image *in, lumen_filter_exec ex, const void *arg,
                                 lumen_image **out) {
  lumen_otsu_opts o = *(const lumen_otsu_opts *)arg;
  o.exec = ex;
  double t;
  return lumen_filter_otsu(ctx, in, &o, &t, out);
}

static const char *prec_name(int p) { return p == LUMEN_PRECISION_FULL ? "full" : p == LUMEN_PRECISION_HALF ? "half" : "bf16"; }

/* One check, named by the printf format name and the values after it: fn with arg on the CPU and
   on the device. tolerance class: 0 exact, 1 float op, 2 band-pass, 3 mask with ties */
__attribute__((format(printf, 8, 9))) static void run_op(gchk *c, op_fn fn, const void *arg, const lumen_image *in,
                                                         int prec, int tclass, int expect_fallback, const char *name,
                                                         ...) {
  char what[160];
  va_list ap;
  va_start(ap, name);
  vsnprintf(what, sizeof what, name, ap);
  va_end(ap);
  lumen_filter_exec ex;
  lumen_filter_exec_init(&ex);
  lumen_filter_report rc, rg;
  lumen_image *cpu = NULL, *gpu = NULL;
  ex.device = "cpu";
  ex.precision = prec;
  ex.report = &rc;
  lumen_status s = fn(c->ctx, in, ex, arg, &cpu);
  if (s == LUMEN_ERR_NOT_BUILT) {
    gline(c, -1, "%s [%s]: CPU op not available here (%s)", what, prec_name(prec), lumen_ctx_last_error(c->ctx));
    return;
  }
  ex.device = c->dev;
  ex.report = &rg;
  lumen_status sg = fn(c->ctx, in, ex, arg, &gpu);
  if (s != LUMEN_OK || sg != LUMEN_OK) {
    gline(c, 0, "%s [%s]: status cpu %s, cuda %s (%s)", what, prec_name(prec), lumen_status_name(s),
          lumen_status_name(sg), lumen_ctx_last_error(c->ctx));
    lumen_image_free(cpu);
    lumen_image_free(gpu);
    return;
  }
  const int self_test = strcmp(c->dev, "cpu") == 0; /* harness self-test: "cuda" runs are CPU runs */
  int ran_gpu = (self_test || rg.used.kind == LUMEN_DEVICE_CUDA) && !rg.fell_back;
  if (self_test && expect_fallback) {
    gline(c, -1, "%s [%s]: fallback not testable on the CPU", what, prec_name(prec));
    lumen_image_free(cpu);
    lumen_image_free(gpu);
    return;
  }
  if (expect_fallback ? ran_gpu || !rg.fell_back || !rg.reason[0] : !ran_gpu) {
    gline(c, 0, "%s [%s]: expected %s, got used=%s fell_back=%d reason '%s'", what, prec_name(prec),
          expect_fallback ? "a CPU rerun with a reason" : "a CUDA run", rg.used.kind == LUMEN_DEVICE_CUDA ? "cuda" : "cpu",
          rg.fell_back, rg.reason);
    lumen_image_free(cpu);
    lumen_image_free(gpu);
    return;
  }
  if (lumen_image_dtype(gpu) != lumen_image_dtype(cpu)) {
    gline(c, 0, "%s [%s]: dtype cuda %s, cpu %s", what, prec_name(prec), lumen_dtype_name(lumen_image_dtype(gpu)),
          lumen_dtype_name(lumen_image_dtype(cpu)));
    lumen_image_free(cpu);
    lumen_image_free(gpu);
    return;
  }
  double rtol = 0, arel = 0, aabs = 0;
  if (tclass == 1 || tclass == 3) {
    rtol = prec == LUMEN_PRECISION_FULL ? 1e-6 : prec == LUMEN_PRECISION_HALF ? 1.0 / 1024 : 1.0 / 128;
    arel = 1e-6;
    aabs = prec == LUMEN_PRECISION_HALF ? 6e-8 : 0;
  } else if (tclass == 2) {
    rtol = prec == LUMEN_PRECISION_FULL ? 0 : prec == LUMEN_PRECISION_HALF ? 1.0 / 1024 : 1.0 / 128;
    arel = 0;
    lumen_image *f = host_f32(c->ctx, in);
    double mx = 0;
    if (f) {
      const float *p = lumen_image_const_data(f);
      for (int64_t i = 0; i < lumen_image_count(f); i++) mx = fabs(p[i]) > mx ? fabs(p[i]) : mx;
    }
    lumen_image_free(f);
    aabs = 1e-4 * mx;
  }
  if (tclass == 3) rtol = arel = aabs = 0;
  cmp_res r;
  if (compare(c->ctx, gpu, cpu, rtol, arel, aabs, &r) != 0) {
    gline(c, 0, "%s [%s]: could not compare", what, prec_name(prec));
  } else {
    int ok = tclass == 3 ? (double)r.bad <= 1e-4 * (double)r.n : r.bad == 0;
    gline(c, ok, "%s [%s]: %lld values, %lld bit-equal, %lld beyond tolerance, max |diff| %.3g (max |cpu| %.4g)%s", what,
          prec_name(prec), (long long)r.n, (long long)r.equal, (long long)r.bad, r.maxerr, r.maxabs,
          expect_fallback ? ", reran on the CPU" : "");
  }
  lumen_image_free(cpu);
  lumen_image_free(gpu);
}

/* ---------------------------------------------------------------- groups */

static const int precs[3] = {LUMEN_PRECISION_FULL, LUMEN_PRECISION_HALF, LUMEN_PRECISION_BFLOAT16};

typedef struct dataset {
  lumen_image *im2[2], *im3[2], *im1, *batch;
} dataset;

static void data_make(gchk *c, dataset *d) {
  const int64_t d2[2] = {131, 97}, d3[3] = {45, 38, 29}, d1[1] = {1000}, db[3] = {70, 50, 4};
  for (int k = 0; k < 2; k++) {
    d->im2[k] = make_image(c->ctx, 2, d2, k);
    d->im3[k] = make_image(c->ctx, 3, d3, k);
  }
  d->im1 = make_image(c->ctx, 1, d1, 1);
  d->batch = make_image(c->ctx, 3, db, 1);
}

static void data_free(dataset *d) {
  for (int k = 0; k < 2; k++) {
    lumen_image_free(d->im2[k]);
    lumen_image_free(d->im3[k]);
  }
  lumen_image_free(d->im1);
  lumen_image_free(d->batch);
}

static const char *kind_name(int k) { return k ? "natural" : "random"; }

static void group_gaussian(gchk *c, dataset *d) {
  for (int m = 0; m < LUMEN_BOUNDARY_COUNT; m++)
    for (int k = 0; k < 2; k++)
      for (int p = 0; p < 3; p++) {
        lumen_gaussian_opts o;
        lumen_gaussian_opts_init(&o);
        o.mode = (lumen_boundary)m;
        o.cval = 17.5;
        o.sigma = 2.0;
        run_op(c, op_gauss, &o, d->im2[k], precs[p], 1, 0, "gaussian 2-D sigma 2 %s %s", lumen_boundary_name(o.mode), kind_name(k));
        o.sigma = 1.5;
        run_op(c, op_gauss, &o, d->im3[k], precs[p], 1, 0, "gaussian 3-D sigma 1.5 %s %s", lumen_boundary_name(o.mode), kind_name(k));
      }
  for (int p = 0; p < 3; p++) {
    lumen_gaussian_opts o;
    lumen_gaussian_opts_init(&o);
    o.sigma = 8.0; /* radius 32: the generic per-axis passes */
    o.mode = LUMEN_BOUNDARY_REFLECT;
    run_op(c, op_gauss, &o, d->im2[1], precs[p], 1, 0, "gaussian 2-D sigma 8 (generic passes) reflect");
    run_op(c, op_gauss, &o, d->im3[1], precs[p], 1, 0, "gaussian 3-D sigma 8 (generic passes) reflect");
    o.sigma = 1.0;
    o.sigma_axis[0] = 0.7;
    o.sigma_axis[1] = 3.0;
    o.sigma_axis[2] = 2.0;
    o.mode = LUMEN_BOUNDARY_WRAP;
    run_op(c, op_gauss, &o, d->im3[0], precs[p], 1, 0, "gaussian 3-D anisotropic wrap");
    o.sigma_axis[0] = o.sigma_axis[1] = 0.5; /* radius 20 along z: xy kernel + staged z pass */
    o.sigma_axis[2] = 5.0;
    o.mode = LUMEN_BOUNDARY_MIRROR;
    run_op(c, op_gauss, &o, d->im3[1], precs[p], 1, 0, "gaussian 3-D sigma (0.5, 0.5, 5) mirror (xy + z pass)");
    o.mode = LUMEN_BOUNDARY_CONSTANT;
    run_op(c, op_gauss, &o, d->im3[0], precs[p], 1, 0, "gaussian 3-D sigma (0.5, 0.5, 5) constant (xy + z pass)");
    lumen_gaussian_opts_init(&o);
    o.sigma = 3.0;
    o.mode = LUMEN_BOUNDARY_MIRROR;
    run_op(c, op_gauss, &o, d->im1, precs[p], 1, 0, "gaussian 1-D sigma 3 mirror");
    o.sigma = 2.0;
    run_op(c, op_gauss_batch, &o, d->batch, precs[p], 1, 0, "gaussian batch (3-D as 2-D slices)");
  }
  /* reduced-precision and integer inputs, and an input already on the device */
  lumen_gaussian_opts o;
  lumen_gaussian_opts_init(&o);
  o.sigma = 2.0;
  const lumen_dtype tys[3] = {LUMEN_DTYPE_FLOAT16, LUMEN_DTYPE_BFLOAT16, LUMEN_DTYPE_UINT16};
  for (int t = 0; t < 3; t++) {
    lumen_image *cv = NULL;
    lumen_status cs;
    if (tys[t] == LUMEN_DTYPE_UINT16) { /* the natural image holds integers 0..4095 */
      const int64_t dims[2] = {lumen_image_dim(d->im2[1], 0), lumen_image_dim(d->im2[1], 1)};
      cs = lumen_image_create(c->ctx, 2, dims, LUMEN_DTYPE_UINT16, lumen_device_cpu(), 0, &cv);
      if (cs == LUMEN_OK) {
        const float *src = lumen_image_const_data(d->im2[1]);
        uint16_t *dst = lumen_image_data(cv);
        for (int64_t i = 0; i < dims[0] * dims[1]; i++) dst[i] = (uint16_t)src[i];
      }
    } else {
      cs = lumen_image_convert(c->ctx, d->im2[1], tys[t], &cv);
    }
    if (cs != LUMEN_OK) {
      gline(c, 0, "convert to %s", lumen_dtype_name(tys[t]));
      continue;
    }
    for (int p = 0; p < 3; p++) {
      run_op(c, op_gauss, &o, cv, precs[p], 1, 0, "gaussian 2-D, %s input", lumen_dtype_name(tys[t]));
    }
    lumen_image_free(cv);
  }
  lumen_device dev;
  lumen_device_parse(c->ctx, c->dev, &dev);
  lumen_image *on = NULL, *out = NULL, *ref = NULL;
  lumen_filter_report rep;
  o.exec.report = &rep;
  if (lumen_image_to_device(c->ctx, d->im3[1], dev, &on) == LUMEN_OK &&
      lumen_filter_gaussian(c->ctx, on, &o, &out) == LUMEN_OK) {
    o.exec.device = "cpu";
    lumen_filter_gaussian(c->ctx, d->im3[1], &o, &ref);
    cmp_res r;
    int ok = lumen_image_device(out).kind == LUMEN_DEVICE_CUDA && ref && compare(c->ctx, out, ref, 1e-6, 1e-6, 0, &r) == 0 &&
             r.bad == 0;
    if (strcmp(c->dev, "cpu") == 0) gline(c, -1, "device-resident image: not testable on the CPU");
    else gline(c, ok, "gaussian of a device-resident image stays on the device and equals the CPU");
  } else {
    gline(c, 0, "gaussian of a device-resident image: %s", lumen_ctx_last_error(c->ctx));
  }
  lumen_image_free(on);
  lumen_image_free(out);
  lumen_image_free(ref);
}

static void group_dog_log_conv(gchk *c, dataset *d) {
  static const float k2[12] = {1, 2, 0, -1, 0.5f, 3, 1, -2, 0, 1, 1, 0.25f}; /* 4 x 3, even width */
  static const float k3[27] = {0, 1, 0, 1, 2, 1, 0, 1, 0, 1, 2, 1, 2, -12, 2, 1, 2, 1, 0, 1, 0, 1, 2, 1, 0, 1, 0};
  for (int m = 0; m < LUMEN_BOUNDARY_COUNT; m++)
    for (int p = 0; p < 3; p++) {
      const int k = m % 2;
      lumen_dog_opts g;
      lumen_dog_opts_init(&g);
      g.low_sigma = 1.7;
      g.high_sigma = 2.0;
      g.mode = (lumen_boundary)m;
      g.cval = 3;
      run_op(c, op_dog, &g, d->im2[k], precs[p], 1, 0, "dog 1.7/2.0 2-D %s %s", lumen_boundary_name(g.mode), kind_name(k));
      run_op(c, op_dog, &g, d->im3[1], precs[p], 1, 0, "dog 3-D %s", lumen_boundary_name(g.mode));
      lumen_laplace_opts l;
      lumen_laplace_opts_init(&l);
      l.mode = (lumen_boundary)m;
      l.cval = 3;
      for (int disc = 0; disc < 2; disc++) {
        l.discrete = disc;
        run_op(c, op_log, &l, d->im2[1], precs[p], 1, 0, "LoG sigma 2 %s 2-D %s", disc ? "discrete" : "scipy", lumen_boundary_name(l.mode));
        run_op(c, op_log, &l, d->im3[k], precs[p], 1, 0, "LoG sigma 2 %s 3-D %s", disc ? "discrete" : "scipy", lumen_boundary_name(l.mode));
      }
      lumen_convolve_opts cv;
      lumen_convolve_opts_init(&cv);
      cv.mode = (lumen_boundary)m;
      cv.cval = -5;
      cv.kernel = k2;
      cv.kernel_ndim = 2;
      cv.kernel_dims[0] = 4;
      cv.kernel_dims[1] = 3;
      for (int corr = 0; corr < 2; corr++) {
        cv.correlate = corr;
        run_op(c, op_conv, &cv, d->im2[k], precs[p], 1, 0, "%s 4x3 2-D %s", corr ? "correlate" : "convolve", lumen_boundary_name(cv.mode));
      }
      cv.kernel = k3;
      cv.kernel_ndim = 3;
      cv.kernel_dims[0] = cv.kernel_dims[1] = cv.kernel_dims[2] = 3;
      run_op(c, op_conv, &cv, d->im3[0], precs[p], 1, 0, "convolve 3x3x3 3-D %s", lumen_boundary_name(cv.mode));
    }
}

static void group_rank(gchk *c, dataset *d) {
  for (int m = 0; m < LUMEN_BOUNDARY_COUNT; m++)
    for (int p = 0; p < 3; p++) {
      lumen_median_opts o;
      lumen_median_opts_init(&o);
      o.mode = (lumen_boundary)m;
      o.cval = 100;
      const int sizes2[3] = {3, 5, 7};
      for (int s = 0; s < 3; s++)
        for (int k = 0; k < 2; k++) {
          o.size = sizes2[s];
          run_op(c, op_median, &o, d->im2[k], precs[p], 0, 0, "median %dx%d %s %s", o.size, o.size, lumen_boundary_name(o.mode), kind_name(k));
        }
      o.size = 3;
      run_op(c, op_median, &o, d->im3[1], precs[p], 0, 0, "median 3x3x3 %s", lumen_boundary_name(o.mode));
      o.size = 5;
      run_op(c, op_median, &o, d->im3[0], precs[p], 0, 0, "median 5x5x5 %s", lumen_boundary_name(o.mode));
    }
  /* morphology */
  for (int p = 0; p < 3; p++)
    for (int op = 0; op < LUMEN_MORPH_COUNT; op++)
      for (int el = 0; el < LUMEN_ELEMENT_COUNT; el++)
        for (int bin = 0; bin < 2; bin++) {
          if (bin && p) continue; /* binary output is uint8 whatever the precision */
          lumen_morph_opts o;
          lumen_morph_opts_init(&o);
          o.op = (lumen_morph_op)op;
          o.element = (lumen_element)el;
          o.radius = el == LUMEN_ELEMENT_BALL ? 2 : 4;
          o.size = el == LUMEN_ELEMENT_CUBE ? 3 : 7;
          o.binary = bin;
          static const char *ops[] = {"erode", "dilate", "open", "close", "tophat"};
          static const char *els[] = {"disk", "square", "ball", "cube"};
          lumen_image *src = el >= LUMEN_ELEMENT_BALL ? d->im3[1] : d->im2[1];
          lumen_image *thr = NULL;
          if (bin) { /* a sparse binary input: the natural image above its 70th percentile-ish */
            lumen_otsu_opts to;
            lumen_otsu_opts_init(&to);
            double t;
            to.exec.device = "cpu";
            if (lumen_filter_otsu(c->ctx, src, &to, &t, &thr) != LUMEN_OK) {
              gline(c, 0, "morphology input");
              continue;
            }
            src = thr;
          }
          run_op(c, op_morph, &o, src, precs[p], 0, 0, "%s %s %s %s", bin ? "binary" : "grey", ops[op], els[el], el >= LUMEN_ELEMENT_BALL ? "3-D" : "2-D");
          lumen_image_free(thr);
        }
  /* DISK on a 3-D image: per slice */
  lumen_morph_opts o;
  lumen_morph_opts_init(&o);
  o.op = LUMEN_MORPH_TOPHAT;
  run_op(c, op_morph, &o, d->im3[1], LUMEN_PRECISION_FULL, 0, 0, "grey tophat disk 4 on a 3-D image (per slice)");
}

static void group_point_threshold(gchk *c, dataset *d) {
  const int self_test = strcmp(c->dev, "cpu") == 0; /* harness self-test: the "cuda" runs are CPU runs */
  /* abs of signed data (a DoG-like response) */
  {
    const int64_t ds[2] = {131, 97};
    lumen_image *sg = NULL;
    if (lumen_image_create(c->ctx, 2, ds, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &sg) == LUMEN_OK) {
      float *v = lumen_image_data(sg);
      for (int64_t i = 0; i < lumen_image_count(sg); i++) v[i] = (float)(urand() * 400.0 - 200.0);
      lumen_abs_opts ao;
      lumen_abs_opts_init(&ao);
      for (int p = 0; p < 3; p++) run_op(c, op_abs, &ao, sg, precs[p], 1, 0, "abs of signed data");
    } else {
      gline(c, 0, "abs input");
    }
    lumen_image_free(sg);
  }
  for (int p = 0; p < 3; p++)
    for (int k = 0; k < 2; k++) {
      lumen_gamma_opts g;
      lumen_gamma_opts_init(&g);
      g.gamma = 1.25;
      run_op(c, op_gamma, &g, d->im2[k], precs[p], 1, 0, "gamma 1.25 %s", kind_name(k));
      lumen_contrast_opts ct;
      lumen_contrast_opts_init(&ct);
      ct.contrast = 300;
      ct.brightness = -20;
      run_op(c, op_contrast, &ct, d->im3[k], precs[p], 0, 0, "contrast auto bins %s", kind_name(k));
      lumen_sauvola_opts sv;
      lumen_sauvola_opts_init(&sv);
      sv.output_threshold = 1;
      run_op(c, op_sauvola, &sv, d->im2[k], precs[p], 1, 0, "sauvola 15 threshold map %s", kind_name(k));
      sv.output_threshold = 0;
      sv.window = 7;
      run_op(c, op_sauvola, &sv, d->im3[k], precs[p], 3, 0, "sauvola 7 mask 3-D %s", kind_name(k));
      lumen_bandpass_opts bp;
      lumen_bandpass_opts_init(&bp);
      bp.d0 = 12;
      bp.width = 6;
      run_op(c, op_bandpass, &bp, d->im2[k], precs[p], 2, 0, "band-pass 2-D %s", kind_name(k));
      run_op(c, op_bandpass, &bp, d->im3[k], precs[p], 2, 0, "band-pass 3-D %s", kind_name(k));
    }
  for (int m = 0; m < LUMEN_BOUNDARY_COUNT; m++)
    for (int p = 0; p < 3; p++) {
      lumen_local_variance_opts lv;
      lumen_local_variance_opts_init(&lv);
      lv.mode = (lumen_boundary)m;
      lv.cval = 50;
      run_op(c, op_lvar, &lv, d->im2[1], precs[p], 1, 0, "local variance 5 2-D %s", lumen_boundary_name(lv.mode));
      run_op(c, op_lvar, &lv, d->im3[0], precs[p], 1, 0, "local variance 5 3-D %s", lumen_boundary_name(lv.mode));
      if (p == 0) {
        run_op(c, op_vbin, &lv, d->im2[m % 2], precs[p], 3, 0, "variance binarisation 2-D %s", lumen_boundary_name(lv.mode));
      }
    }
  /* Otsu: threshold equal, mask equal */
  for (int k = 0; k < 2; k++)
    for (int b = 0; b < 3; b++) {
      lumen_otsu_opts o;
      lumen_otsu_opts_init(&o);
      const int bins[3] = {0, 256, 1000};
      o.bins = bins[b];
      double tc = 0, tg = 0;
      lumen_filter_report rep;
      o.exec.report = &rep;
      o.exec.device = "cpu";
      lumen_status s1 = lumen_filter_otsu(c->ctx, d->im2[k], &o, &tc, NULL);
      o.exec.device = c->dev;
      lumen_status s2 = lumen_filter_otsu(c->ctx, d->im2[k], &o, &tg, NULL);
      gline(c, s1 == LUMEN_OK && s2 == LUMEN_OK && tc == tg && (self_test || rep.used.kind == LUMEN_DEVICE_CUDA),
            "otsu bins %d %s: threshold cpu %.9g cuda %.9g", o.bins, kind_name(k), tc, tg);
      run_op(c, op_otsu_mask, &o, d->im3[k], LUMEN_PRECISION_FULL, 0, 0, "otsu mask bins %d %s", o.bins, kind_name(k));
    }
  /* statistics */
  for (int k = 0; k < 2; k++) {
    lumen_stats_opts so;
    lumen_stats_opts_init(&so);
    lumen_filter_report rep;
    so.exec.report = &rep;
    double ec = 0, eg = 0;
    so.exec.device = "cpu";
    lumen_filter_entropy(c->ctx, d->im3[k], &so, &ec);
    so.exec.device = c->dev;
    lumen_status s = lumen_filter_entropy(c->ctx, d->im3[k], &so, &eg);
    gline(c, s == LUMEN_OK && fabs(ec - eg) <= 1e-12 && (self_test || rep.used.kind == LUMEN_DEVICE_CUDA),
          "entropy 256 bins %s: cpu %.15g cuda %.15g", kind_name(k), ec, eg);
    lumen_mi_result mc, mg;
    memset(&mc, 0, sizeof mc);
    memset(&mg, 0, sizeof mg);
    so.bins = 64;
    so.exec.device = "cpu";
    lumen_filter_mutual_information(c->ctx, d->im2[0], d->im2[1], &so, &mc);
    so.exec.device = c->dev;
    s = lumen_filter_mutual_information(c->ctx, d->im2[0], d->im2[1], &so, &mg);
    gline(c, s == LUMEN_OK && fabs(mc.mutual_information - mg.mutual_information) <= 1e-12 &&
                 fabs(mc.joint_entropy - mg.joint_entropy) <= 1e-12 && (self_test || rep.used.kind == LUMEN_DEVICE_CUDA),
          "mutual information 64 bins: cpu %.15g cuda %.15g", mc.mutual_information, mg.mutual_information);
    double m1 = 0, v1 = 0, m2 = 0, v2 = 0;
    so.ddof = k;
    so.exec.device = "cpu";
    lumen_filter_variance(c->ctx, d->im3[k], &so, &m1, &v1);
    so.exec.device = c->dev;
    s = lumen_filter_variance(c->ctx, d->im3[k], &so, &m2, &v2);
    gline(c, s == LUMEN_OK && fabs(m1 - m2) <= 1e-12 * fabs(m1) && fabs(v1 - v2) <= 1e-12 * fabs(v1) &&
                 (self_test || rep.used.kind == LUMEN_DEVICE_CUDA),
          "variance ddof %d: mean %.15g / %.15g, variance %.15g / %.15g", k, m1, m2, v1, v2);
  }
}

/* a 0/1 float32 mask: foreground with probability p (random), or a square spiral maze whose
   corridors turn `rings` times (the device sweeps need about one round per turn) */
static lumen_image *make_mask(lumen_ctx *ctx, int ndim, const int64_t *dims, double p, int maze) {
  lumen_image *im = NULL;
  if (lumen_image_create(ctx, ndim, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im) != LUMEN_OK) return NULL;
  float *v = lumen_image_data(im);
  const int64_t n = lumen_image_count(im), n0 = dims[0], n1 = ndim > 1 ? dims[1] : 1;
  for (int64_t i = 0; i < n; i++) {
    if (!maze) {
      v[i] = urand() < p ? 1.0f : 0.0f;
      continue;
    }
    /* walls on every other ring (Chebyshev distance from the centre even), each with one gap
       that alternates between the top and the bottom side */
    const int64_t x = i % n0, y = (i / n0) % n1, cx = n0 / 2, cy = n1 / 2;
    const int64_t dx = x > cx ? x - cx : cx - x, dy = y > cy ? y - cy : cy - y, r = dx > dy ? dx : dy;
    int wall = r % 2 == 0 && r > 0;
    if (wall && dx <= 1 && ((r / 2) % 2 ? y < cy : y > cy)) wall = 0; /* the gap */
    v[i] = wall ? 1.0f : 0.0f;
  }
  return im;
}

static void group_region(gchk *c, dataset *d) {
  (void)d;
  const int64_t d2[2] = {131, 97}, d3[3] = {45, 38, 29}, db[3] = {70, 50, 4}, dm[2] = {301, 301};
  const double dens[3] = {0.3, 0.5, 0.62};
  for (int k = 0; k < 3; k++) {
    lumen_image *m2 = make_mask(c->ctx, 2, d2, dens[k], 0), *m3 = make_mask(c->ctx, 3, d3, dens[k], 0);
    lumen_image *mb = make_mask(c->ctx, 3, db, dens[k], 0), *u8 = NULL;
    if (m2 && lumen_image_create(c->ctx, 2, d2, LUMEN_DTYPE_UINT8, lumen_device_cpu(), 0, &u8) == LUMEN_OK) {
      const float *f = lumen_image_const_data(m2);
      uint8_t *b = lumen_image_data(u8);
      for (int64_t i = 0; i < lumen_image_count(m2); i++) b[i] = f[i] != 0.0f;
    }
    if (!m2 || !m3 || !mb || !u8) {
      gline(c, 0, "fill_holes masks");
    } else {
      lumen_region_opts o;
      lumen_region_opts_init(&o);
      for (o.connectivity = 1; o.connectivity <= 3; o.connectivity++) {
        if (o.connectivity <= 2) {
          o.spatial_dims = 0;
          run_op(c, op_fill, &o, m2, LUMEN_PRECISION_FULL, 0, 0, "fill_holes 2-D density %.2f connectivity %d", dens[k], o.connectivity);
          run_op(c, op_fill, &o, u8, LUMEN_PRECISION_FULL, 0, 0, "fill_holes 2-D uint8 density %.2f connectivity %d", dens[k], o.connectivity);
          o.spatial_dims = 2;
          run_op(c, op_fill, &o, mb, LUMEN_PRECISION_FULL, 0, 0, "fill_holes batch of 4 2-D density %.2f connectivity %d", dens[k], o.connectivity);
          o.spatial_dims = 0;
        }
        run_op(c, op_fill, &o, m3, LUMEN_PRECISION_FULL, 0, 0, "fill_holes 3-D density %.2f connectivity %d", dens[k], o.connectivity);
      }
    }
    lumen_image_free(m2);
    lumen_image_free(m3);
    lumen_image_free(mb);
    lumen_image_free(u8);
  }
  lumen_image *maze = make_mask(c->ctx, 2, dm, 0, 1);
  lumen_region_opts o;
  lumen_region_opts_init(&o);
  if (maze) run_op(c, op_fill, &o, maze, LUMEN_PRECISION_FULL, 0, 0, "fill_holes spiral maze 301x301 (about 75 turns)");
  else gline(c, 0, "fill_holes maze");
  lumen_image_free(maze);
}

static lumen_status oom_hook(lumen_ctx *ctx, lf_call *call) {
  (void)call;
  return lumen_fail(ctx, LUMEN_ERR_DEVICE_OUT_OF_MEMORY, "injected: CUDA allocation of 1 TB failed");
}

static void group_fallback_memory(gchk *c, dataset *d) {
  /* the device memory report before and after a run of ops */
  lumen_device_ctx *dctx = NULL;
  if (lumen_device_ctx_open(c->ctx, c->dev, NULL, &dctx) != LUMEN_OK) {
    gline(c, 0, "device context: %s", lumen_ctx_last_error(c->ctx));
    return;
  }
  lumen_memory_stats before, after;
  lumen_device_ctx_memory(dctx, &before);
  {
    lumen_gaussian_opts g;
    lumen_gaussian_opts_init(&g);
    g.exec.device = c->dev;
    lumen_image *o1 = NULL, *o2 = NULL, *o3 = NULL;
    lumen_filter_gaussian(c->ctx, d->im3[1], &g, &o1);
    lumen_dog_opts dg;
    lumen_dog_opts_init(&dg);
    dg.exec.device = c->dev;
    lumen_filter_dog(c->ctx, d->im2[1], &dg, &o2);
    lumen_bandpass_opts bp;
    lumen_bandpass_opts_init(&bp);
    bp.exec.device = c->dev;
    lumen_filter_bandpass(c->ctx, d->im2[1], &bp, &o3);
    lumen_memory_stats during;
    lumen_device_ctx_memory(dctx, &during);
    int64_t expect = (o1 ? lumen_image_nbytes(o1) : 0) + (o2 ? lumen_image_nbytes(o2) : 0) +
                     (o3 ? lumen_image_nbytes(o3) : 0);
    gline(c, o1 && o2 && during.allocated - before.allocated == expect,
          "memory report: outputs held on the device = %lld bytes (expected %lld)",
          (long long)(during.allocated - before.allocated), (long long)expect);
    lumen_image_free(o1);
    lumen_image_free(o2);
    lumen_image_free(o3);
  }
  lumen_device_ctx_release_cache(dctx);
  lumen_device_ctx_memory(dctx, &after);
  gline(c, after.allocated == before.allocated && after.total == before.total && after.free > 0,
        "memory report before/after: allocated %lld -> %lld bytes, free %lld -> %lld MB", (long long)before.allocated,
        (long long)after.allocated, (long long)(before.free >> 20), (long long)(after.free >> 20));
  lumen_device_ctx_close(dctx);

  /* a real CPU rerun: windows the CUDA median does not cover, entropy of distinct values */
  lumen_median_opts mo;
  lumen_median_opts_init(&mo);
  mo.size = 13;
  run_op(c, op_median, &mo, d->im2[1], LUMEN_PRECISION_FULL, 0, 1, "median 13x13 (169 values: CPU rerun)");
  lumen_region_opts ro;
  lumen_region_opts_init(&ro);
  {
    lumen_filter_report rep;
    ro.exec.report = &rep;
    ro.exec.device = c->dev;
    lumen_image *lab = NULL;
    int64_t count = 0;
    lumen_otsu_opts to;
    lumen_otsu_opts_init(&to);
    double t;
    lumen_image *m = NULL;
    lumen_filter_otsu(c->ctx, d->im2[1], &to, &t, &m);
    lumen_status s = lumen_filter_label(c->ctx, m, &ro, &lab, &count);
    if (strcmp(c->dev, "cpu") == 0)
      gline(c, -1, "label's CPU rerun: not testable on the CPU (%lld components)", (long long)count);
    else
      gline(c, s == LUMEN_OK && rep.fell_back && lumen_filter_op_has_cuda("label") == 0,
            "label on cuda reruns on the CPU: %lld components, reason '%s'", (long long)count, rep.reason);
    lumen_image_free(lab);
    lumen_image_free(m);
  }
  /* injected allocation failure: equal result, recorded reason */
  lf_impl prev = lumen_filter_test_set_cuda_hook(LF_OP_GAUSSIAN, oom_hook);
  lumen_gaussian_opts g;
  lumen_gaussian_opts_init(&g);
  run_op(c, op_gauss, &g, d->im2[1], LUMEN_PRECISION_HALF, 0, 1, "gaussian with an injected device OOM (CPU rerun)");
  lumen_filter_test_set_cuda_hook(LF_OP_GAUSSIAN, prev);
  /* every registered op claims its kernel */
  const char *with[] = {"gaussian", "dog", "gaussian_laplace", "median", "gamma", "contrast", "convolve", "bandpass",
                        "otsu", "sauvola", "local_variance", "variance_binarize", "morphology", "entropy",
                        "mutual_information", "variance", "fill_holes", "abs"};
  int all = 1;
  for (size_t i = 0; i < sizeof with / sizeof with[0]; i++) all &= lumen_filter_op_has_cuda(with[i]);
  gline(c, all, "18 ops report a CUDA kernel; label and largest_component stay on the CPU");
}

typedef void (*group_fn)(gchk *, dataset *);
static const struct {
  const char *name;
  group_fn fn;
} gpu_groups[] = {
    {"gaussian", group_gaussian},
    {"dog_log_conv", group_dog_log_conv},
    {"rank", group_rank},
    {"point_threshold", group_point_threshold},
    {"fallback_memory", group_fallback_memory},
    {"region", group_region},
};
#define GPU_GROUP_COUNT ((int)(sizeof gpu_groups / sizeof gpu_groups[0]))

/* 77 when no usable CUDA device; else the number of failures of the group(s) (only = NULL: all).
   device: "cuda:N" (NULL = "cuda:0"), or "cpu" to self-test the harness on a machine without a GPU
   (both sides run on the CPU; device-only assertions then fail or skip). */
static int gpu_filter_checks_run_on(FILE *log, const char *only, const char *device) {
  int ndev = 0;
  char reason[256] = "";
  lumen_ctx *ctx = NULL;
  if (lumen_ctx_create(&ctx) != LUMEN_OK) return 1;
  const int self_test = device && strcmp(device, "cpu") == 0;
  if (!self_test && (lumen_cuda_probe(ctx, &ndev, reason, sizeof reason) != LUMEN_OK || ndev < 1)) {
    fprintf(log, "SKIP gpu filter checks: no CUDA device (%s)\n", reason);
    lumen_ctx_destroy(ctx);
    return 77;
  }
  gchk c;
  memset(&c, 0, sizeof c);
  c.log = log;
  c.ctx = ctx;
  c.dev = device ? device : "cuda:0";
  dataset d;
  data_make(&c, &d);
  for (int i = 0; i < GPU_GROUP_COUNT; i++)
    if (!only || strcmp(only, gpu_groups[i].name) == 0) gpu_groups[i].fn(&c, &d);
  data_free(&d);
  fprintf(log, "gpu filter checks%s%s: %d passed, %d failed, %d skipped\n", only ? " " : "", only ? only : "", c.pass,
          c.fail, c.skip);
  lumen_ctx_destroy(ctx);
  return c.fail;
}

#ifdef GPU_FILTER_CHECKS_NO_MAIN
static int gpu_filter_checks_run(FILE *log, const char *only) { return gpu_filter_checks_run_on(log, only, NULL); }
#else
/* gpu_filter_check [--device cuda:N|cpu] [group] */
int main(int argc, char **argv) {
  const char *device = NULL, *group = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
    else group = argv[i];
  }
  int r = gpu_filter_checks_run_on(stdout, group, device);
  return r == 77 ? 77 : r ? 1 : 0;
}
#endif
