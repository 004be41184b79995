// CUDA Fourier band-pass: cuFFT real-to-complex transform of every block of the batch in one plan,
// the Butterworth mask (centred on the zero frequency, as the CPU path) applied on the half
// spectrum together with the 1/N normalisation, complex-to-real back, then the storage conversion.
// Plans are cached per shape (up to 8) and run on the default stream with a work area from the
// stream-ordered pool.
#include <cufft.h>  // types and constants only: the library is loaded at run time
#include <dlfcn.h>
#include <math.h>
#include <string.h>
#include <mutex>
#include "cuda/filter_common.cuh"

using namespace lfc;  // the entry points below use the namespace's helpers

namespace lfc {

// cuFFT is loaded with dlopen on first use, like FFTW on the CPU: linking it would map its ~300 MB
// into every lumen process (and fail under a tight address-space limit) although only the band-pass
// needs it. Without it the op returns LUMEN_ERR_NOT_BUILT and reruns on the CPU.
static struct {
  int tried, ok;
  cufftResult (*create)(cufftHandle *);
  cufftResult (*destroy)(cufftHandle);
  cufftResult (*set_auto)(cufftHandle, int);
  cufftResult (*make_many)(cufftHandle, int, int *, int *, int, int, int *, int, int, cufftType, int, size_t *);
  cufftResult (*set_stream)(cufftHandle, cudaStream_t);
  cufftResult (*set_work)(cufftHandle, void *);
  cufftResult (*r2c)(cufftHandle, cufftReal *, cufftComplex *);
  cufftResult (*c2r)(cufftHandle, cufftComplex *, cufftReal *);
} cufft;

#ifndef LUMEN_CUDA_LIBDIR
#define LUMEN_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif

template <class F>
static bool sym(void *lib, const char *name, F *fp) {
  void *p = dlsym(lib, name);
  if (!p) return false;
  memcpy(fp, &p, sizeof p);
  return true;
}

// under plan_lock
static bool load_cufft(char *why, size_t why_size) {
  if (cufft.tried) return cufft.ok;
  cufft.tried = 1;
  static const char *names[] = {"libcufft.so.12", "libcufft.so.13", "libcufft.so.11", "libcufft.so"};
  void *lib = nullptr;
  for (const char *nm : names) {
    if ((lib = dlopen(nm, RTLD_NOW | RTLD_LOCAL))) break;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", LUMEN_CUDA_LIBDIR, nm);
    if ((lib = dlopen(path, RTLD_NOW | RTLD_LOCAL))) break;
  }
  if (!lib) {
    snprintf(why, why_size, "cuFFT (libcufft.so.12) could not be loaded from the library path or %s",
             LUMEN_CUDA_LIBDIR);
    return false;
  }
  cufft.ok = sym(lib, "cufftCreate", &cufft.create) && sym(lib, "cufftDestroy", &cufft.destroy) &&
             sym(lib, "cufftSetAutoAllocation", &cufft.set_auto) && sym(lib, "cufftMakePlanMany", &cufft.make_many) &&
             sym(lib, "cufftSetStream", &cufft.set_stream) && sym(lib, "cufftSetWorkArea", &cufft.set_work) &&
             sym(lib, "cufftExecR2C", &cufft.r2c) && sym(lib, "cufftExecC2R", &cufft.c2r);
  if (!cufft.ok) snprintf(why, why_size, "cuFFT was loaded but lacks an entry point");
  return cufft.ok;
}

__global__ void k_bandpass_mask(cufftComplex *__restrict__ c, int64_t nxc, int64_t ny, int64_t nz, int64_t per_block,
                                int64_t total, double d0, double w, int order2, float scale) {
  for (int64_t t = gtid(); t < total; t += gstride()) {
    const int64_t i = t % per_block;
    const int64_t kx = i % nxc, ky = (i / nxc) % ny, kz = i / (nxc * ny);
    const double fy = (double)(ky <= ny / 2 ? ky : ny - ky), fz = (double)(kz <= nz / 2 ? kz : nz - kz);
    const double fx = (double)kx;
    const double d2 = __dadd_rn(__dadd_rn(__dmul_rn(fx, fx), __dmul_rn(fy, fy)), __dmul_rn(fz, fz));
    double h;
    if (d2 == 0.0) {
      h = d0 == 0.0 ? 1.0 : 0.0;
    } else {
      const double d = sqrt(d2);
      const double q = __ddiv_rn(__dsub_rn(d2, __dmul_rn(d0, d0)), __dmul_rn(__dmul_rn(8.0, w), d));
      h = 1.0 / (1.0 + pow(q, (double)order2));
    }
    const float m = __fmul_rn((float)h, scale);
    cufftComplex v = c[t];
    v.x = __fmul_rn(v.x, m);
    v.y = __fmul_rn(v.y, m);
    c[t] = v;
  }
}

static lumen_status cufft_fail(lumen_ctx *ctx, cufftResult r, const char *fn, const char *what) {
  lumen_status s = r == CUFFT_ALLOC_FAILED ? LUMEN_ERR_DEVICE_OUT_OF_MEMORY : LUMEN_ERR_DEVICE;
  cudaGetLastError();
  return lumen_fail(ctx, s, "%s: %s failed (cufftResult %d)", fn, what, (int)r);
}

// Plans are cached per (device, shape, batch) and made without their own work area: every call
// hands them a work area from the stream-ordered pool (released with the call's other scratch), so
// a cached plan holds no device memory beyond its own small state. The cache lock is held while a
// call enqueues its transforms (two host threads must not set the same plan's work area at once).
struct plan_entry {
  int device, rank, n[3];
  long long batch;
  cufftHandle fwd, inv;
  size_t work;
};
#define PLAN_CACHE 8
static plan_entry plan_cache[PLAN_CACHE];
static int plan_count;
static std::mutex plan_lock;

static void plan_destroy(plan_entry *e) {
  cufft.destroy(e->fwd);
  cufft.destroy(e->inv);
}

// Under plan_lock: the cached plans for this shape, or new ones (*owned = 1: destroy after use
// when the cache is full).
static lumen_status plan_get(lumen_ctx *ctx, const char *fn, int device, int rank, const int *n, long long batch,
                             plan_entry *out, int *owned) {
  *owned = 0;
  for (int i = 0; i < plan_count; i++) {
    const plan_entry *e = &plan_cache[i];
    if (e->device == device && e->rank == rank && e->batch == batch && !memcmp(e->n, n, sizeof(int) * rank)) {
      *out = *e;
      return LUMEN_OK;
    }
  }
  plan_entry e;
  memset(&e, 0, sizeof e);
  e.device = device;
  e.rank = rank;
  memcpy(e.n, n, sizeof(int) * rank);
  e.batch = batch;
  size_t w1 = 0, w2 = 0;
  cufftResult r = cufft.create(&e.fwd);
  if (r != CUFFT_SUCCESS) return cufft_fail(ctx, r, fn, "cufftCreate");
  r = cufft.create(&e.inv);
  if (r != CUFFT_SUCCESS) {
    cufft.destroy(e.fwd);
    return cufft_fail(ctx, r, fn, "cufftCreate");
  }
  cufft.set_auto(e.fwd, 0);
  cufft.set_auto(e.inv, 0);
  r = cufft.make_many(e.fwd, rank, e.n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_R2C, (int)batch, &w1);
  if (r == CUFFT_SUCCESS) r = cufft.make_many(e.inv, rank, e.n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2R, (int)batch, &w2);
  if (r != CUFFT_SUCCESS) {
    plan_destroy(&e);
    return cufft_fail(ctx, r, fn, "cufftMakePlanMany");
  }
  e.work = w1 > w2 ? w1 : w2;
  if (plan_count < PLAN_CACHE)
    plan_cache[plan_count++] = e;
  else
    *owned = 1;
  *out = e;
  return LUMEN_OK;
}

}  // namespace lfc

extern "C" lumen_status lf_cuda_bandpass(lumen_ctx *ctx, lf_call *call) {
  LFC_ENTRY(ctx, call, "lumen_filter_bandpass (cuda)");
  const lumen_bandpass_opts *o = (const lumen_bandpass_opts *)call->opts;
  const lf_geom *g = &call->geom;
  const int S = g->spatial;
  for (int a = 0; a < S; a++)
    if (g->n[a] > INT32_MAX)
      return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "%s: dims[%d] = %lld is too large for cuFFT", fn, a,
                        (long long)g->n[a]);
  if (g->batch > INT32_MAX)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "%s: a batch of %lld is too large for cuFFT", fn,
                      (long long)g->batch);
  int n[3];
  for (int a = 0; a < S; a++) n[a] = (int)g->n[S - 1 - a];  // slowest first
  const int64_t nxc = g->n[0] / 2 + 1, per_block = nxc * g->n[1] * g->n[2];
  const int64_t ncomplex = per_block * g->batch;
  const float *x;
  scratch<float> conv, real;
  scratch<cufftComplex> spec;
  LFC_TRY(input_f32(ctx, fn, call->in[0], &x, &conv));
  LFC_TRY(real.alloc(ctx, fn, g->total));
  LFC_TRY(spec.alloc(ctx, fn, ncomplex));
  // the transform gets its own copy: the input may be the caller's device image
  cudaError_t err = cudaMemcpyAsync(real.p, x, (size_t)g->total * sizeof(float), cudaMemcpyDeviceToDevice, 0);
  if (err != cudaSuccess) return fail(ctx, err, fn, "device copy");
  const float scale = (float)(1.0 / (double)g->block);
  {
    std::lock_guard<std::mutex> hold(plan_lock);
    char why[256];
    if (!load_cufft(why, sizeof why)) return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT, "%s: %s", fn, why);
    plan_entry pe;
    int owned = 0;
    LFC_TRY(plan_get(ctx, fn, call->device.index, S, n, (long long)g->batch, &pe, &owned));
    struct release {
      plan_entry *e;
      int owned;
      ~release() {
        if (owned) {  // an uncached plan: its transforms must finish before it goes
          cudaStreamSynchronize(0);
          plan_destroy(e);
        }
      }
    } rel{&pe, owned};
    scratch<char> work;
    LFC_TRY(work.alloc(ctx, fn, (int64_t)pe.work));
    cufftResult r = cufft.set_stream(pe.fwd, 0);
    if (r == CUFFT_SUCCESS) r = cufft.set_stream(pe.inv, 0);
    if (r == CUFFT_SUCCESS) r = cufft.set_work(pe.fwd, work.p);
    if (r == CUFFT_SUCCESS) r = cufft.set_work(pe.inv, work.p);
    if (r != CUFFT_SUCCESS) return cufft_fail(ctx, r, fn, "cuFFT plan setup");
    r = cufft.r2c(pe.fwd, real.p, spec.p);
    if (r != CUFFT_SUCCESS) return cufft_fail(ctx, r, fn, "cufftExecR2C");
    k_bandpass_mask<<<grid_for(ncomplex), 256>>>(spec.p, nxc, g->n[1], g->n[2], per_block, ncomplex, o->d0, o->width,
                                                 2 * o->order, scale);
    LFC_TRY(launched(ctx, fn, "band-pass mask"));
    r = cufft.c2r(pe.inv, spec.p, real.p);
    if (r != CUFFT_SUCCESS) return cufft_fail(ctx, r, fn, "cufftExecC2R");
  }
  return store_f32(ctx, fn, real.p, call->out, g->total);
}
