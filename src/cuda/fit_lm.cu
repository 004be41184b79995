// Batched bounded Levenberg-Marquardt on the GPU: one thread per curve, one kernel per (model,
// precision), so that each kernel holds one model's code only (building every model never
// exhausts a kernel's registers or stack). The solver and the per-curve driver are the CPU's
// source, compiled here: src/solver/lm_impl.inc and src/solver/driver_impl.inc (input checks, starts,
// restarts, escape starts, R^2 and confidence intervals, states) are included into a class
// template on the model, with the model a compile-time constant, on the same model code
// (src/models, LUMEN_HD). Differences to the CPU can only come from arithmetic order (nvcc
// contracts a*b+c into FMAs). Not on the GPU: arterial delay fitting and AUC (the plan then
// selects the CPU tiers).
//
// 2CXM runs in double with geodesic acceleration and Patlak's interior closed form is taken as
// its fit, as on the CPU tiers (lumen_fit_solves_f64, driver_impl.inc).
//
// Memory: the shared grid (t, dt, cp, its integral, weights) is staged into shared memory per
// block when it fits; the per-curve constants (R10, B1) are read with the curve; each resident
// thread has a workspace (y, f, J and the trial f, J) in global memory, reused over a grid-stride
// loop so that its size depends on the device, not on the number of curves.
#include <math.h>
#include "solver/lm.h"          // lumen_lm_problem_f32/_f64 and the damped solve (lm_chol.h)
#include "solver/curve_out.h"   // lumen_fit_curve_out, the driver's result
#include "cuda/fit_kernel.cuh"

namespace lfit {

template <typename T> struct Grid;
template <> struct Grid<float> { typedef lumen_grid_f32 type; };
template <> struct Grid<double> { typedef lumen_grid_f64 type; };

// Fit parameters of a model, as a constant expression read from LUMEN_MODEL_TABLE (lumen_model_np).
__host__ __device__ constexpr int np_of(int m) {
  switch (m) {
#define LFIT_NP_CASE(id, name, fn, derived, flags, p0, p1, p2, p3) \
  case id: return LUMEN_MT_NP_(p0, p1, p2, p3);
    LUMEN_MODEL_TABLE(LFIT_NP_CASE)
#undef LFIT_NP_CASE
    default: return -1;
  }
}

// The LUMEN_MF_* flags of a model, as a constant expression read from LUMEN_MODEL_TABLE.
__host__ __device__ constexpr int flags_of(int m) {
  switch (m) {
#define LFIT_FLAGS_CASE(id, name, fn, derived, flags, p0, p1, p2, p3) \
  case id: return (flags);
    LUMEN_MODEL_TABLE(LFIT_FLAGS_CASE)
#undef LFIT_FLAGS_CASE
    default: return 0;
  }
}

// The flat plan as the driver reads it: the fields of lumen_fit_plan it uses, by the same names,
// pointing into the kernel's lumen_fitcu_problem; the grid and weights in the solver type. np is a
// constant, so that the driver's loops over the parameters unroll and its arrays stay in registers.
template <typename T, int M> struct Plan {
  static constexpr int np = np_of(M);
  int n;
  const double *start, *lo, *hi;
  const unsigned char *fixed, *start_given;
  int has_linear_start, n_extra_starts, n_escape_starts;
  const double (*extra_starts)[LUMEN_FIT_MAX_PARAMS];
  const double (*escape_starts)[LUMEN_FIT_MAX_PARAMS];
  struct {
    const void *weights;  // non-NULL when weighted
    double tolerance;
    int max_iterations;
  } opts;
  const double *w64;
  double t975;
  const typename Grid<T>::type *g;
  const T *w;
};

// The plan view the driver reads besides the fields (as src/fit/fit_internal.h for lumen_fit_plan).
template <int M> __device__ const lumen_grid_f32 *lumen_plan_grid_f32(const Plan<float, M> *pl) { return pl->g; }
template <int M> __device__ const lumen_grid_f64 *lumen_plan_grid_f64(const Plan<double, M> *pl) { return pl->g; }
template <int M> __device__ const float *lumen_plan_w_f32(const Plan<float, M> *pl) { return pl->w; }
template <int M> __device__ const double *lumen_plan_w_f64(const Plan<double, M> *pl) { return pl->w; }
template <typename T, int M> __device__ double lumen_plan_t975(const Plan<T, M> *pl, int dof) {
  (void)dof;
  return pl->t975;
}

// ---------------------------------------------------------------- solver and driver, per model
// src/solver/lm_impl.inc and src/solver/driver_impl.inc as static members of a class template on the
// model LM_M: each kernel instantiates one model's code; geodesic acceleration exists in the 2CXM
// kernels only (the CPU tiers use it for 2CXM only as well).
#define LM_FN static __device__
#define LM_API static __device__
#define LM_MODEL(pr) ((lumen_model)LM_M)
#define LM_GEODESIC(pr) ((flags_of(LM_M) & LUMEN_MF_SOLVE_F64) && (pr)->geodesic)
#define LM_NORMAL_CASES 0  // np is a constant here: the general loop unrolls into registers
#define DRV_FN static __device__
#define DRV_HOST 0
#define DRV_STANDARD 0
#define DPLAN_MODEL(pl) ((lumen_model)LM_M)
#define DF(x) x##_k
template <int LM_M> struct Lm32 {
#define ST float
#define SF(name) name##_f32
#define DT float
#define DM(x) x##_f32
#define DPLAN Plan<float, LM_M>
#include "solver/lm_impl.inc"
#include "solver/driver_impl.inc"
#undef ST
#undef SF
#undef DT
#undef DM
#undef DPLAN
};
template <int LM_M> struct Lm64 {
#define ST double
#define SF(name) name##_f64
#define DT double
#define DM(x) x##_f64
#define DPLAN Plan<double, LM_M>
#include "solver/lm_impl.inc"
#include "solver/driver_impl.inc"
#undef ST
#undef SF
#undef DT
#undef DM
#undef DPLAN
};
#undef LM_FN
#undef LM_API
#undef LM_MODEL
#undef LM_GEODESIC
#undef LM_NORMAL_CASES
#undef DRV_FN
#undef DRV_HOST
#undef DRV_STANDARD
#undef DPLAN_MODEL
#undef DF

template <int M, typename T> struct Lm;
template <int M> struct Lm<M, float> : Lm32<M> {};
template <int M> struct Lm<M, double> : Lm64<M> {};

// ---------------------------------------------------------------- the kernel
template <int M, typename T>
__global__ void __launch_bounds__(128) fit_kernel(const lumen_fitk_args a) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int n = a.pb.n;
  const T *gsrc = (const T *)a.gridmem;
  const double *w64 = a.pb.w ? (const double *)((const unsigned char *)a.gridmem +
                                                 (((size_t)n * 5 * sizeof(T) + 15) & ~(size_t)15))
                             : nullptr;
  const T *garr = gsrc;
  if (a.smem_grid) {
    T *s = (T *)smem_raw;
    for (int i = threadIdx.x; i < 5 * n; i += blockDim.x) s[i] = gsrc[i];
    __syncthreads();
    garr = s;
  }
  typename Grid<T>::type g;
  if constexpr (sizeof(T) == sizeof(float))
    g = a.g32;
  else
    g = a.g64;
  g.t = garr;
  g.dt = garr + n;
  g.cp = lumen_model_is_dce((lumen_model)M) ? garr + 2 * n : nullptr;
  g.icp = lumen_model_is_dce((lumen_model)M) ? garr + 3 * n : nullptr;
  const T *wT = a.pb.w ? garr + 4 * n : nullptr;
  const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  T *y = (T *)a.work + tid * a.work_per_thread;
  Plan<T, M> pl;
  pl.n = n;
  pl.start = a.pb.start;
  pl.lo = a.pb.lo;
  pl.hi = a.pb.hi;
  pl.fixed = a.pb.fixed;
  pl.start_given = a.pb.start_given;
  pl.has_linear_start = a.pb.has_linear_start;
  pl.n_extra_starts = a.pb.n_extra_starts;
  pl.n_escape_starts = a.pb.n_escape_starts;
  pl.extra_starts = a.pb.extra_starts;
  pl.escape_starts = a.pb.escape_starts;
  pl.opts.weights = wT;
  pl.opts.tolerance = a.pb.tol;
  pl.opts.max_iterations = a.pb.max_iterations;
  pl.w64 = w64;
  pl.t975 = a.pb.t975;
  pl.g = &g;
  pl.w = wT;
  typename Lm<M, T>::ws_k ws;
  ws.y = y;
  ws.work = y + n;
  for (int64_t c = tid; c < a.count; c += stride) {
    ws.range_error = 0;
    if (a.data_f64) {
      const double *src = (const double *)a.data + c * n;
      for (int i = 0; i < n; ++i) {
        double v = src[i];
        y[i] = (T)v;
        if (isfinite(v) && !isfinite((double)y[i])) ws.range_error = 1;
      }
    } else {
      const float *src = (const float *)a.data + c * n;
      for (int i = 0; i < n; ++i) y[i] = (T)src[i];
    }
    if (!a.consts) {
      ws.consts[LUMEN_FIT_CONST_R10] = (T)LUMEN_DEFAULT_R10;
      ws.consts[LUMEN_FIT_CONST_B1] = (T)LUMEN_DEFAULT_B1;
    } else if (a.data_f64) {
      for (int j = 0; j < LUMEN_FIT_NCONSTS; ++j) ws.consts[j] = (T)((const double *)a.consts)[c * LUMEN_FIT_NCONSTS + j];
    } else {
      for (int j = 0; j < LUMEN_FIT_NCONSTS; ++j) ws.consts[j] = (T)((const float *)a.consts)[c * LUMEN_FIT_NCONSTS + j];
    }
    lumen_fit_curve_out o;
    Lm<M, T>::drive_k(&pl, nullptr, &ws, a.pb.want, &o);
    lumen_fitcu_row r;
    for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) {
      r.p[k] = o.p[k];
      r.ci_lo[k] = o.ci_lo[k];
      r.ci_hi[k] = o.ci_hi[k];
    }
    r.chi2 = o.chi2;
    r.r2 = o.r2;
    r.iterations = o.iterations;
    r.state = o.state;
    r.bound_mask = o.bound_mask;
    a.rows[c] = r;
  }
}

}  // namespace lfit

// ---------------------------------------------------------------- dispatch: one kernel per model
// A kernel for every row of LUMEN_MODEL_TABLE that has fit parameters (not AUC).
typedef void (*lfit_kernel_fn)(const lumen_fitk_args);

template <int M> static lfit_kernel_fn kernel_for(int f64) {
  if constexpr (lfit::np_of(M) > 0)
    return f64 ? lfit::fit_kernel<M, double> : lfit::fit_kernel<M, float>;
  else
    return nullptr;
}

static lfit_kernel_fn kernel_of(int model, int f64) {
  switch (model) {
#define LFIT_CASE(id, name, fn, derived, flags, p0, p1, p2, p3) \
  case id: return kernel_for<id>(f64);
    LUMEN_MODEL_TABLE(LFIT_CASE)
#undef LFIT_CASE
    default: return nullptr;
  }
}

int lumen_fitk_built(int model) { return kernel_of(model, 0) != nullptr; }

cudaError_t lumen_fitk_occupancy(int model, int f64, int block, size_t smem, int *blocks_per_sm) {
  lfit_kernel_fn k = kernel_of(model, f64);
  *blocks_per_sm = 0;
  if (!k) return cudaErrorInvalidDeviceFunction;
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, k, block, smem);
}

cudaError_t lumen_fitk_launch(const lumen_fitk_args *a, int blocks, int block, size_t smem, cudaStream_t stream) {
  lfit_kernel_fn k = kernel_of(a->pb.model, a->pb.f64);
  if (!k) return cudaErrorInvalidDeviceFunction;
  k<<<blocks, block, smem, stream>>>(*a);
  return cudaGetLastError();
}
