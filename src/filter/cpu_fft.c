/* CPU Fourier band-pass with FFTW (single precision), loaded at run time with dlopen so that the
 * core library has no link dependency (the GPU machine has no -dev packages). Plans are created
 * once per shape and thread count under a mutex (FFTW's planner is not thread-safe) and executed
 * with the new-array interface (thread-safe) on fftwf_malloc'd buffers.
 *
 * The mask is centred on the zero frequency: D is the distance of a frequency sample from
 * frequency 0, i.e. from the centre of the shifted spectrum. (The reference framework applied the
 * mask to an unshifted spectrum, centring the "band-pass" on the Nyquist corner.) */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "filter/filter_internal.h"

typedef float lf_fftwf_complex[2];
typedef void *lf_fftwf_plan;

#define LF_FFTW_ESTIMATE (1U << 6)

static struct {
  int tried, ok, threads_ok;
  void *lib, *tlib;
  lf_fftwf_plan (*plan_r2c)(int, const int *, float *, lf_fftwf_complex *, unsigned);
  lf_fftwf_plan (*plan_c2r)(int, const int *, lf_fftwf_complex *, float *, unsigned);
  void (*exec_r2c)(const lf_fftwf_plan, float *, lf_fftwf_complex *);
  void (*exec_c2r)(const lf_fftwf_plan, lf_fftwf_complex *, float *);
  void *(*fmalloc)(size_t);
  void (*ffree)(void *);
  int (*init_threads)(void);
  void (*plan_with_nthreads)(int);
} fftw;

#define PLAN_CACHE 16
static struct plan_entry {
  int rank, n[3], threads;
  lf_fftwf_plan fwd, inv;
} plans[PLAN_CACHE];
static int nplans;
static pthread_mutex_t fftw_lock = PTHREAD_MUTEX_INITIALIZER;

static int load_fftw(void) {
  if (fftw.tried) return fftw.ok;
  fftw.tried = 1;
  const char *names[] = {"libfftw3f.so.3", "libfftw3f.so", "libfftw3f.3.dylib"};
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !fftw.lib; i++)
    fftw.lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
  if (!fftw.lib) return 0;
#define SYM(field, name)                                         \
  do {                                                           \
    void *p_ = dlsym(fftw.lib, name);                            \
    if (!p_) return 0;                                           \
    memcpy(&fftw.field, &p_, sizeof p_);                         \
  } while (0)
  SYM(plan_r2c, "fftwf_plan_dft_r2c");
  SYM(plan_c2r, "fftwf_plan_dft_c2r");
  SYM(exec_r2c, "fftwf_execute_dft_r2c");
  SYM(exec_c2r, "fftwf_execute_dft_c2r");
  SYM(fmalloc, "fftwf_malloc");
  SYM(ffree, "fftwf_free");
#undef SYM
  fftw.ok = 1;
  fftw.tlib = dlopen("libfftw3f_threads.so.3", RTLD_NOW | RTLD_GLOBAL);
  if (fftw.tlib) {
    void *a = dlsym(fftw.tlib, "fftwf_init_threads"), *b = dlsym(fftw.tlib, "fftwf_plan_with_nthreads");
    if (a && b) {
      memcpy(&fftw.init_threads, &a, sizeof a);
      memcpy(&fftw.plan_with_nthreads, &b, sizeof b);
      fftw.threads_ok = fftw.init_threads() != 0;
    }
  }
  return 1;
}

/* Returns the cached plans for this shape (planning under the lock). */
static int get_plans(int rank, const int *n, int threads, float *rbuf, lf_fftwf_complex *cbuf, lf_fftwf_plan *fwd,
                     lf_fftwf_plan *inv) {
  int found = 0;
  pthread_mutex_lock(&fftw_lock);
  if (!fftw.threads_ok) threads = 1;
  for (int i = 0; i < nplans && !found; i++)
    if (plans[i].rank == rank && plans[i].threads == threads && !memcmp(plans[i].n, n, (size_t)rank * sizeof *n)) {
      *fwd = plans[i].fwd;
      *inv = plans[i].inv;
      found = 1;
    }
  if (!found) {
    if (fftw.threads_ok) fftw.plan_with_nthreads(threads);
    *fwd = fftw.plan_r2c(rank, n, rbuf, cbuf, LF_FFTW_ESTIMATE);
    *inv = fftw.plan_c2r(rank, n, cbuf, rbuf, LF_FFTW_ESTIMATE);
    if (*fwd && *inv) {
      found = 1;
      if (nplans < PLAN_CACHE) {
        struct plan_entry *e = &plans[nplans++];
        memset(e, 0, sizeof *e);
        e->rank = rank;
        memcpy(e->n, n, (size_t)rank * sizeof *n);
        e->threads = threads;
        e->fwd = *fwd;
        e->inv = *inv;
      }
      /* a full cache keeps its plans; this one is leaked (bounded by distinct shapes) */
    }
  }
  pthread_mutex_unlock(&fftw_lock);
  return found;
}

lumen_status lf_cpu_bandpass(lumen_ctx *ctx, lf_call *call) {
  static const char fn[] = "lumen_filter_bandpass";
  const lumen_bandpass_opts *o = call->opts;
  const lf_geom *g = &call->geom;
  pthread_mutex_lock(&fftw_lock);
  int ok = load_fftw();
  pthread_mutex_unlock(&fftw_lock);
  if (!ok)
    return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT,
                      "%s: FFTW (libfftw3f.so.3) could not be loaded; install libfftw3-single3 (Debian)", fn);
  const int S = g->spatial;
  for (int a = 0; a < S; a++)
    if (g->n[a] > INT32_MAX)
      return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "%s: dims[%d] = %lld is too large for FFTW", fn, a,
                        (long long)g->n[a]);
  int n[3];
  for (int a = 0; a < S; a++) n[a] = (int)g->n[S - 1 - a]; /* FFTW: slowest first */
  const int64_t nx = g->n[0], nxc = nx / 2 + 1, ny = g->n[1], nz = g->n[2];
  const int64_t ncomplex = nxc * ny * nz;
  float *rbuf = fftw.fmalloc((size_t)g->block * sizeof(float));
  lf_fftwf_complex *cbuf = fftw.fmalloc((size_t)ncomplex * sizeof(lf_fftwf_complex));
  float *mask = malloc((size_t)ncomplex * sizeof *mask);
  if (!rbuf || !cbuf || !mask) {
    if (rbuf) fftw.ffree(rbuf);
    if (cbuf) fftw.ffree(cbuf);
    free(mask);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory for the spectrum", fn);
  }
  lf_fftwf_plan fwd, inv;
  if (!get_plans(S, n, call->threads, rbuf, cbuf, &fwd, &inv)) {
    fftw.ffree(rbuf);
    fftw.ffree(cbuf);
    free(mask);
    return lumen_fail(ctx, LUMEN_ERR_INTERNAL, "%s: FFTW could not plan a transform of this shape", fn);
  }
  /* Butterworth band-pass on the half spectrum */
  const double d0 = o->d0, w = o->width;
  const int order2 = 2 * o->order;
#pragma omp parallel for schedule(static) num_threads(call->threads)
  for (int64_t i = 0; i < ncomplex; i++) {
    int64_t kx = i % nxc, ky = (i / nxc) % ny, kz = i / (nxc * ny);
    double fy = (double)(ky <= ny / 2 ? ky : ny - ky), fz = (double)(kz <= nz / 2 ? kz : nz - kz);
    double fx = (double)kx;
    double d2 = fx * fx + fy * fy + fz * fz;
    double h;
    if (d2 == 0.0) {
      h = d0 == 0.0 ? 1.0 : 0.0;
    } else {
      double d = sqrt(d2);
      double q = (d2 - d0 * d0) / (8.0 * w * d);
      h = 1.0 / (1.0 + pow(q, order2));
    }
    mask[i] = (float)h;
  }
  const float scale = (float)(1.0 / (double)g->block);
  const float *in = call->in_f32[0];
  float *out = lumen_image_data(call->out);
  for (int64_t b = 0; b < g->batch; b++) {
    memcpy(rbuf, in + b * g->block, (size_t)g->block * sizeof(float));
    fftw.exec_r2c(fwd, rbuf, cbuf);
#pragma omp parallel for schedule(static) num_threads(call->threads)
    for (int64_t i = 0; i < ncomplex; i++) {
      float m = mask[i] * scale;
      cbuf[i][0] *= m;
      cbuf[i][1] *= m;
    }
    fftw.exec_c2r(inv, cbuf, rbuf);
    memcpy(out + b * g->block, rbuf, (size_t)g->block * sizeof(float));
  }
  fftw.ffree(rbuf);
  fftw.ffree(cbuf);
  free(mask);
  return LUMEN_OK;
}
