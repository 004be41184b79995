// Batched bounded Levenberg-Marquardt on the GPU: one thread per curve, one kernel per (model,
// precision), so that each kernel holds one model's code only (building every model never
// exhausts a kernel's registers or stack). The algorithm is src/cpu/lm_impl.inc and the driver
// of src/fit/driver_impl.inc line by line (starts, restarts, escape starts, R^2 and confidence
// intervals, states), on the same model code (src/models, LUMEN_HD). Differences to the CPU can
// only come from arithmetic order (nvcc contracts a*b+c into FMAs). Not on the GPU: arterial
// delay fitting and AUC (the plan then selects the CPU tiers).
//
// 2CXM runs in double with geodesic acceleration and Patlak's interior closed form is taken as
// its fit, as on the CPU tiers (lumen_fit_solves_f64, driver_impl.inc).
//
// Memory: the shared grid (t, dt, cp, its integral, weights) is staged into shared memory per
// block when it fits; the per-curve constants (R10, B1) are read with the curve; each resident
// thread has a workspace (y, f, J and the trial f, J) in global memory, reused over a grid-stride
// loop so that its size depends on the device, not on the number of curves.
#include <math.h>
#include "cpu/lm_chol.h"  // the damped solve, shared with the CPU solvers
#include "cuda/fit_kernel.cuh"

namespace lfit {

template <typename T> struct Grid;
template <> struct Grid<float> { typedef lumen_grid_f32 type; };
template <> struct Grid<double> { typedef lumen_grid_f64 type; };

__device__ __forceinline__ void meval(int m, const lumen_grid_f32 *g, const float *c, const float *p, float *y, float *J) {
  lumen_model_eval_f32((lumen_model)m, g, c, p, y, J, nullptr);
}
__device__ __forceinline__ void meval(int m, const lumen_grid_f64 *g, const double *c, const double *p, double *y, double *J) {
  lumen_model_eval_f64((lumen_model)m, g, c, p, y, J, nullptr);
}
__device__ __forceinline__ int mlin(int m, const lumen_grid_f32 *g, const float *c, const float *y, float *p) {
  return lumen_linear_start_f32((lumen_model)m, g, c, y, p);
}
__device__ __forceinline__ int mlin(int m, const lumen_grid_f64 *g, const double *c, const double *y, double *p) {
  return lumen_linear_start_f64((lumen_model)m, g, c, y, p);
}

template <typename T> __device__ __forceinline__ T eps();
template <> __device__ __forceinline__ float eps<float>() { return 1.1920929e-7f; }
template <> __device__ __forceinline__ double eps<double>() { return 2.220446049250313e-16; }

#define LFIT_MAXP LUMEN_FIT_MAX_PARAMS

// ---------------------------------------------------------------- the solver (lm_impl.inc)
template <typename T> struct Problem {
  const typename Grid<T>::type *g;
  const T *consts, *y, *w;
  const lumen_fitcu_problem *pb;
};

template <typename T>
__device__ double chi2_of(int n, const T *y, const T *f, const T *w) {
  double s = 0.0;
  if (w) {
    for (int i = 0; i < n; ++i) {
      double r = (double)y[i] - (double)f[i];
      s += (double)w[i] * r * r;
    }
  } else {
    for (int i = 0; i < n; ++i) {
      double r = (double)y[i] - (double)f[i];
      s += r * r;
    }
  }
  return s;
}

template <int M, typename T>
__device__ double lm_chi2(const Problem<T> &pr, const T *p, T *work) {
  const int n = pr.g->n;
  meval(M, pr.g, pr.consts, p, work, nullptr);
  double c = chi2_of<T>(n, pr.y, work, pr.w);
  return isfinite(c) ? c : NAN;
}

template <int NP, typename T>
__device__ void lm_normal(int n, const T *y, const T *f, const T *w, const T *J, double A0[LFIT_MAXP][LFIT_MAXP],
                          double *g) {
  double gs[NP], as[NP][NP];
#pragma unroll
  for (int a = 0; a < NP; ++a) {
    gs[a] = 0;
#pragma unroll
    for (int b = 0; b < NP; ++b) as[a][b] = 0;
  }
  for (int i = 0; i < n; ++i) {
    double r = (double)y[i] - (double)f[i];
    double wi = w ? (double)w[i] : 1.0;
    double j[NP];
#pragma unroll
    for (int a = 0; a < NP; ++a) j[a] = (double)J[(long)a * n + i];
#pragma unroll
    for (int a = 0; a < NP; ++a) {
      gs[a] += (w ? wi * j[a] : j[a]) * r;
#pragma unroll
      for (int b = 0; b <= a; ++b) as[a][b] += (w ? wi * j[a] : j[a]) * j[b];
    }
  }
#pragma unroll
  for (int a = 0; a < NP; ++a) {
    g[a] = gs[a];
#pragma unroll
    for (int b = 0; b <= a; ++b) A0[a][b] = A0[b][a] = as[a][b];
  }
}

// Geodesic acceleration of the LM step d (lm_impl.inc's lm_geodesic): 0 with d replaced by
// v + a/2 (or unchanged when the model is not finite at p + h v), 1 when the correction is too large.
template <int M, int NP, typename T>
__device__ int lm_geodesic(const Problem<T> &pr, int m, const int *idx, const T *p, const T *f, const T *J, T *fv,
                           double A0[LFIT_MAXP][LFIT_MAXP], double L[LFIT_MAXP][LFIT_MAXP], double *d) {
  const int n = pr.g->n;
  const double h = 0.1;
  T ph[LFIT_MAXP];
  for (int k = 0; k < NP; ++k) ph[k] = p[k];
  for (int a = 0; a < m; ++a) ph[idx[a]] = (T)((double)p[idx[a]] + h * d[a]);
  meval(M, pr.g, pr.consts, ph, fv, (T *)nullptr);
  double gacc[LFIT_MAXP] = {0, 0, 0, 0};
  for (int i = 0; i < n; ++i) {
    double jv = 0.0;
    for (int a = 0; a < m; ++a) jv += (double)J[(long)idx[a] * n + i] * d[a];
    double fvv = (2.0 / h) * (((double)fv[i] - (double)f[i]) / h - jv);
    if (!isfinite(fvv)) return 0;
    double wi = pr.w ? (double)pr.w[i] : 1.0;
    for (int a = 0; a < m; ++a) gacc[idx[a]] -= wi * (double)J[(long)idx[a] * n + i] * fvv;
  }
  double acc[LFIT_MAXP];
  lumen_lm_subst(m, idx, L, gacc, acc);
  double nv = 0.0, na = 0.0;
  for (int a = 0; a < m; ++a) {
    double dk = A0[idx[a]][idx[a]];
    nv += dk * d[a] * d[a];
    na += dk * acc[a] * acc[a];
  }
  if (4.0 * na > 0.5625 * nv) return 1;
  for (int a = 0; a < m; ++a) d[a] += 0.5 * acc[a];
  return 0;
}

template <int M, int NP, typename T>
__device__ lumen_fit_state lm_fit(const Problem<T> &pr, T *p, T *work, double *chi2_out, int *iterations_out) {
  const lumen_fitcu_problem &pb = *pr.pb;
  const int n = pr.g->n;
  const T *y = pr.y, *w = pr.w;
  T *f = work, *ft = work + n;
  T *J = work + 2 * (long)n, *Jt = J + (long)n * NP;
  T *fv = Jt + (long)n * NP;  // geodesic acceleration (2CXM, as the CPU tiers)
  T pt[LFIT_MAXP];
  int nfree = 0;
  for (int k = 0; k < NP; ++k)
    if (!pb.fixed[k]) nfree++;
  *iterations_out = 0;
  meval(M, pr.g, pr.consts, p, f, J);
  double chi2 = chi2_of<T>(n, y, f, w);
  *chi2_out = chi2;
  if (!isfinite(chi2)) return LUMEN_FIT_NOT_FINITE;
  if (nfree == 0) return LUMEN_FIT_CONVERGED;
  double lambda = 1e-3;
  const double tol = pb.tol;
  const double floor_k = 2.0 * 8.0 * (double)eps<T>();
  double syy = 0.0;
  for (int i = 0; i < n; ++i) syy += (w ? (double)w[i] : 1.0) * (double)y[i] * (double)y[i];
  int it = 0;
  lumen_fit_state state = LUMEN_FIT_MAX_ITERATIONS;
  int have_normal = 0;
  double A0[LFIT_MAXP][LFIT_MAXP], g[LFIT_MAXP];
  while (it < pb.max_iterations) {
    if (!have_normal) {
      lm_normal<NP, T>(n, y, f, w, J, A0, g);
      have_normal = 1;
      if (!isfinite(g[0] + A0[0][0])) {
        state = LUMEN_FIT_NOT_FINITE;
        break;
      }
    }
    int idx[LFIT_MAXP], m = 0;
    double dmax = 0.0;
    for (int k = 0; k < NP; ++k) {
      if (pb.fixed[k]) continue;
      double pk = (double)p[k];
      if (pk <= pb.lo[k] && g[k] < 0.0) continue;
      if (pk >= pb.hi[k] && g[k] > 0.0) continue;
      idx[m++] = k;
      if (A0[k][k] > dmax) dmax = A0[k][k];
    }
    if (m == 0) {
      state = LUMEN_FIT_CONVERGED;
      break;
    }
    if (!(dmax > 0.0)) {
      state = LUMEN_FIT_SINGULAR;
      break;
    }
    double L[LFIT_MAXP][LFIT_MAXP], d[LFIT_MAXP];
    int ok = lumen_lm_factor(m, idx, A0, lambda, dmax, L) == 0;
    if (ok) lumen_lm_subst(m, idx, L, g, d);
    if (!ok) {
      lambda *= 10.0;
      if (lambda > 1e20) {
        state = LUMEN_FIT_SINGULAR;
        break;
      }
      continue;
    }
    if (M == LUMEN_MODEL_2CXM && lm_geodesic<M, NP, T>(pr, m, idx, p, f, J, fv, A0, L, d)) {
      lambda *= 10.0;
      if (lambda > 1e20) {
        state = LUMEN_FIT_CONVERGED;
        break;
      }
      continue;
    }
    for (int k = 0; k < NP; ++k) pt[k] = p[k];
    for (int a = 0; a < m; ++a) {
      int k = idx[a];
      double v = (double)p[k] + d[a];
      if (v < pb.lo[k]) v = pb.lo[k];
      if (v > pb.hi[k]) v = pb.hi[k];
      pt[k] = (T)v;
    }
    ++it;
    meval(M, pr.g, pr.consts, pt, ft, Jt);
    double chi2t = chi2_of<T>(n, y, ft, w);
    double thr = fmax(tol * chi2, floor_k * sqrt(chi2 * syy));
    int same = 1;
    for (int k = 0; k < NP; ++k) same &= pt[k] == p[k];
    int conv = isfinite(chi2t) && fabs(chi2 - chi2t) <= thr && (lambda <= 1.0 || same);
    if (isfinite(chi2t) && chi2t <= chi2) {
      for (int k = 0; k < NP; ++k) p[k] = pt[k];
      T *tmp = f; f = ft; ft = tmp;
      tmp = J; J = Jt; Jt = tmp;
      chi2 = chi2t;
      have_normal = 0;
      lambda *= 0.1;
      if (lambda < 1e-12) lambda = 1e-12;
      if (conv) { state = LUMEN_FIT_CONVERGED; break; }
    } else {
      if (conv) { state = LUMEN_FIT_CONVERGED; break; }
      lambda *= 10.0;
      if (lambda > 1e20) {
        state = LUMEN_FIT_CONVERGED;
        break;
      }
    }
  }
  *chi2_out = chi2;
  *iterations_out = it;
  return state;
}

// ---------------------------------------------------------------- the driver (driver_impl.inc)
template <typename T> struct Att {
  T p[LFIT_MAXP];
  double chi2;
  lumen_fit_state state;
};

__device__ __forceinline__ int rank_of(lumen_fit_state s) {
  return s == LUMEN_FIT_CONVERGED ? 0 : s == LUMEN_FIT_MAX_ITERATIONS ? 1 : 2;
}

template <typename T> __device__ int better(const Att<T> &a, const Att<T> &b) {
  int ra = rank_of(a.state), rb = rank_of(b.state);
  if (ra == 2 || rb == 2) return ra < rb;
  if (ra == 1 && rb == 0) return a.chi2 < b.chi2 * (1 - 1e-3);
  if (ra == 0 && rb == 1) return !(b.chi2 < a.chi2 * (1 - 1e-3));
  return a.chi2 < b.chi2;
}

template <int M, int NP, typename T>
__device__ void solve(const Problem<T> &pr, T *work, const T *s, Att<T> &a, int *iters) {
  for (int k = 0; k < NP; ++k) a.p[k] = s[k];
  int it = 0;
  a.state = lm_fit<M, NP, T>(pr, a.p, work, &a.chi2, &it);
  *iters += it;
  if (a.state == LUMEN_FIT_CONVERGED || a.state == LUMEN_FIT_MAX_ITERATIONS) {
    for (int k = 0; k < NP; ++k)
      if (!isfinite((double)a.p[k])) a.state = LUMEN_FIT_NOT_FINITE;
    if (!isfinite(a.chi2)) a.state = LUMEN_FIT_NOT_FINITE;
  }
}

template <typename T> __device__ __forceinline__ T clip(const lumen_fitcu_problem &pb, int k, double v) {
  if (!(v >= pb.lo[k])) v = pb.lo[k];
  if (v > pb.hi[k]) v = pb.hi[k];
  return (T)v;
}

template <typename T> __device__ int on_bound(const lumen_fitcu_problem &pb, const Att<T> &a, int np) {
  for (int k = 0; k < np; ++k) {
    if (pb.fixed[k]) continue;
    double range = pb.hi[k] - pb.lo[k], v = (double)a.p[k];
    if (v <= pb.lo[k] + 1e-6 * fmin(range, 1.0 + fabs(pb.lo[k])) ||
        v >= pb.hi[k] - 1e-6 * fmin(range, 1.0 + fabs(pb.hi[k])))
      return 1;
  }
  return 0;
}

template <int M, int NP, typename T>
__device__ void fit_starts(const Problem<T> &pr, T *work, Att<T> &best, int *iters) {
  const lumen_fitcu_problem &pb = *pr.pb;
  T s[LFIT_MAXP], cfg[LFIT_MAXP];
  for (int k = 0; k < NP; ++k) s[k] = cfg[k] = (T)pb.start[k];
  int used_linear = 0, exact = 0;
  if (pb.has_linear_start) {
    T ls[LFIT_MAXP];
    if (mlin(M, pr.g, pr.consts, pr.y, ls) == 0) {
      int fin = 1;
      for (int k = 0; k < NP; ++k) fin &= isfinite((double)ls[k]);
      if (fin) {
        for (int k = 0; k < NP; ++k)
          if (!pb.start_given[k] && !pb.fixed[k]) s[k] = clip<T>(pb, k, (double)ls[k]);
        used_linear = 1;
        // Patlak's closed form strictly inside the box is the solution (driver_impl.inc's linear_exact)
        exact = M == LUMEN_MODEL_PATLAK && !pr.w;
        for (int k = 0; k < NP; ++k)
          exact &= !pb.fixed[k] && !pb.start_given[k] && s[k] == ls[k] && (double)s[k] > pb.lo[k] &&
                   (double)s[k] < pb.hi[k];
      }
    }
  }
  if (exact) {
    for (int k = 0; k < NP; ++k) best.p[k] = s[k];
    best.chi2 = lm_chi2<M, T>(pr, s, work);
    best.state = isfinite(best.chi2) ? LUMEN_FIT_CONVERGED : LUMEN_FIT_NOT_FINITE;
    return;
  }
  solve<M, NP, T>(pr, work, s, best, iters);
  Att<T> a;
  if ((best.state != LUMEN_FIT_CONVERGED || on_bound<T>(pb, best, NP)) && used_linear && M != LUMEN_MODEL_2CXM) {
    solve<M, NP, T>(pr, work, cfg, a, iters);
    if (better<T>(a, best)) best = a;
  }
  if (M == LUMEN_MODEL_ETOFTS && best.state != LUMEN_FIT_CONVERGED && !pb.fixed[0]) {
    const double mult[2] = {10.0, 100.0};
    for (int r = 0; r < 2 && best.state != LUMEN_FIT_CONVERGED; ++r) {
      T s2[LFIT_MAXP];
      for (int k = 0; k < NP; ++k) s2[k] = cfg[k];
      s2[0] = clip<T>(pb, 0, pb.start[0] * mult[r]);
      solve<M, NP, T>(pr, work, s2, a, iters);
      if (better<T>(a, best)) best = a;
    }
  }
  const int extra = best.state != LUMEN_FIT_CONVERGED;  // 2CXM: further starts only after a failed fit
  for (int j = 0; extra && j < pb.n_extra_starts; ++j) {
    T s2[LFIT_MAXP];
    for (int k = 0; k < NP; ++k) s2[k] = (T)pb.extra_starts[j][k];
    solve<M, NP, T>(pr, work, s2, a, iters);
    if (better<T>(a, best)) best = a;
  }
  // escape starts, in order, until the best fit no longer fails or rests on a bound
  const int nb = M == LUMEN_MODEL_2CXM ? 3 : NP;
  for (int j = 0; j < pb.n_escape_starts && (rank_of(best.state) == 2 || on_bound<T>(pb, best, nb)); ++j) {
    T s2[LFIT_MAXP];
    for (int k = 0; k < NP; ++k) s2[k] = (T)pb.escape_starts[j][k];
    solve<M, NP, T>(pr, work, s2, a, iters);
    if (better<T>(a, best)) best = a;
  }
}

__device__ int invert(int m, double A[LFIT_MAXP][LFIT_MAXP], double X[LFIT_MAXP][LFIT_MAXP]) {
  double Mx[LFIT_MAXP][2 * LFIT_MAXP];
  double scale = 0;
  for (int i = 0; i < m; ++i) scale = fmax(scale, fabs(A[i][i]));
  if (!(scale > 0)) return 1;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < 2 * m; ++j) Mx[i][j] = j < m ? A[i][j] : (j - m == i ? 1.0 : 0.0);
  for (int c = 0; c < m; ++c) {
    int piv = c;
    for (int r = c + 1; r < m; ++r)
      if (fabs(Mx[r][c]) > fabs(Mx[piv][c])) piv = r;
    if (!(fabs(Mx[piv][c]) > 1e-14 * scale)) return 1;
    if (piv != c)
      for (int j = 0; j < 2 * m; ++j) {
        double t = Mx[c][j]; Mx[c][j] = Mx[piv][j]; Mx[piv][j] = t;
      }
    double inv = 1.0 / Mx[c][c];
    for (int j = 0; j < 2 * m; ++j) Mx[c][j] *= inv;
    for (int r = 0; r < m; ++r) {
      if (r == c) continue;
      double f = Mx[r][c];
      if (f != 0.0)
        for (int j = 0; j < 2 * m; ++j) Mx[r][j] -= f * Mx[c][j];
    }
  }
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j) X[i][j] = Mx[i][j + m];
  return 0;
}

template <int M, int NP, typename T>
__device__ void stats(const Problem<T> &pr, const double *w64, T *work, const T *p, double chi2, lumen_fitcu_row &o) {
  const lumen_fitcu_problem &pb = *pr.pb;
  const int n = pr.g->n;
  const double *w = w64;
  if (pb.want & 2) {
    double sw = 0, swy = 0;
    for (int i = 0; i < n; ++i) {
      double wi = w ? w[i] : 1.0;
      sw += wi;
      swy += wi * (double)pr.y[i];
    }
    double ybar = sw > 0 ? swy / sw : 0, sst = 0;
    for (int i = 0; i < n; ++i) {
      double wi = w ? w[i] : 1.0, r = (double)pr.y[i] - ybar;
      sst += wi * r * r;
    }
    o.r2 = sst > 0 ? 1.0 - chi2 / sst : NAN;
  }
  if (!(pb.want & 1) || NP == 0) return;
  T *f = work, *J = work + n;
  meval(M, pr.g, pr.consts, p, f, J);
  int idx[LFIT_MAXP], m = 0;
  for (int k = 0; k < NP; ++k)
    if (!pb.fixed[k]) idx[m++] = k;
  int dof = n - m;
  if (m == 0 || dof < 1) return;
  double A[LFIT_MAXP][LFIT_MAXP], C[LFIT_MAXP][LFIT_MAXP];
  for (int a = 0; a < m; ++a)
    for (int b = 0; b <= a; ++b) {
      const T *Ja = J + (long)idx[a] * n, *Jb = J + (long)idx[b] * n;
      double s = 0;
      for (int i = 0; i < n; ++i) s += (w ? w[i] : 1.0) * (double)Ja[i] * (double)Jb[i];
      A[a][b] = A[b][a] = s;
    }
  if (invert(m, A, C)) return;
  double cov[LFIT_MAXP][LFIT_MAXP];
  for (int a = 0; a < LFIT_MAXP; ++a)
    for (int b = 0; b < LFIT_MAXP; ++b) cov[a][b] = 0;
  double s2 = chi2 / dof;
  for (int a = 0; a < m; ++a)
    for (int b = 0; b < m; ++b) cov[idx[a]][idx[b]] = C[a][b] * s2;
  double tq = pb.t975;
  double pub[LFIT_MAXP];
  for (int k = 0; k < NP; ++k) pub[k] = (double)p[k];
  if (M == LUMEN_MODEL_2CXM) pub[0] = (double)p[0] * (double)p[3];
  for (int k = 0; k < NP; ++k) {
    double var = cov[k][k];
    if (M == LUMEN_MODEL_2CXM && k == 0) {
      double e = (double)p[0], fp = (double)p[3];
      var = fp * fp * cov[0][0] + e * e * cov[3][3] + 2 * e * fp * cov[0][3];
    }
    if (pb.fixed[k] && !(M == LUMEN_MODEL_2CXM && k == 0 && !pb.fixed[3])) continue;
    if (!(var >= 0) || !isfinite(var)) continue;
    double h = tq * sqrt(var);
    o.ci_lo[k] = pub[k] - h;
    o.ci_hi[k] = pub[k] + h;
  }
}

template <int M, int NP, typename T>
__device__ void drive(const Problem<T> &pr, const double *w64, T *work, int range_error, lumen_fitcu_row &o) {
  const lumen_fitcu_problem &pb = *pr.pb;
  const int n = pr.g->n;
  for (int k = 0; k < LFIT_MAXP; ++k) o.p[k] = o.ci_lo[k] = o.ci_hi[k] = NAN;
  o.chi2 = o.r2 = NAN;
  o.iterations = 0;
  o.state = LUMEN_FIT_NOT_FITTED;
  if (range_error) {
    o.state = LUMEN_FIT_NOT_FINITE;
    return;
  }
  int nonzero = 0;
  for (int i = 0; i < n; ++i) {
    double v = (double)pr.y[i];
    if (!isfinite(v)) {
      o.state = LUMEN_FIT_INVALID_INPUT;
      return;
    }
    if (v != 0.0) nonzero = 1;
  }
  if (!nonzero) {
    o.state = LUMEN_FIT_INVALID_INPUT;
    return;
  }
  for (int j = 0; j < LUMEN_NCONSTS; ++j)
    if (!isfinite((double)pr.consts[j])) {
      o.state = LUMEN_FIT_INVALID_INPUT;
      return;
    }
  if (M == LUMEN_MODEL_FXR && !(pr.consts[LUMEN_CONST_R10] > 0)) {
    o.state = LUMEN_FIT_INVALID_INPUT;
    return;
  }
  if ((M == LUMEN_MODEL_VFA || M == LUMEN_MODEL_VFA_LINEAR || M == LUMEN_MODEL_VFA_2PT) &&
      !(pr.consts[LUMEN_CONST_B1] > 0)) {
    o.state = LUMEN_FIT_INVALID_INPUT;
    return;
  }
  Att<T> best;
  int iters = 0;
  if (M == LUMEN_MODEL_VFA_LINEAR || M == LUMEN_MODEL_VFA_2PT) {
    if (mlin(M, pr.g, pr.consts, pr.y, best.p) != 0) {
      o.state = LUMEN_FIT_SINGULAR;
      return;
    }
    best.chi2 = lm_chi2<M, T>(pr, best.p, work);
    best.state = isfinite(best.chi2) ? LUMEN_FIT_CONVERGED : LUMEN_FIT_NOT_FINITE;
  } else {
    fit_starts<M, NP, T>(pr, work, best, &iters);
  }
  o.state = best.state;
  o.iterations = iters;
  o.chi2 = best.chi2;
  if (best.state != LUMEN_FIT_CONVERGED && best.state != LUMEN_FIT_MAX_ITERATIONS) return;
  for (int k = 0; k < NP; ++k) o.p[k] = pb.fixed[k] ? pb.start[k] : (double)best.p[k];
  stats<M, NP, T>(pr, w64, work, best.p, best.chi2, o);
}

template <int M> struct NParams { static const int value = 2; };
template <> struct NParams<LUMEN_MODEL_ETOFTS> { static const int value = 3; };
template <> struct NParams<LUMEN_MODEL_2CUM> { static const int value = 3; };
template <> struct NParams<LUMEN_MODEL_2CXM> { static const int value = 4; };
template <> struct NParams<LUMEN_MODEL_FXR> { static const int value = 3; };


// ---------------------------------------------------------------- the kernel
template <int M, typename T>
__global__ void __launch_bounds__(128) fit_kernel(const lumen_fitk_args a) {
  constexpr int NP = NParams<M>::value;
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
  T *ws = (T *)a.work + tid * a.work_per_thread;
  T *y = ws, *work = ws + n;
  T consts[LUMEN_NCONSTS];
  Problem<T> pr;
  pr.g = &g;
  pr.consts = consts;
  pr.y = y;
  pr.w = wT;
  pr.pb = &a.pb;
  for (int64_t c = tid; c < a.count; c += stride) {
    int range_error = 0;
    if (a.data_f64) {
      const double *src = (const double *)a.data + c * n;
      for (int i = 0; i < n; ++i) {
        double v = src[i];
        y[i] = (T)v;
        if (isfinite(v) && !isfinite((double)y[i])) range_error = 1;
      }
    } else {
      const float *src = (const float *)a.data + c * n;
      for (int i = 0; i < n; ++i) y[i] = (T)src[i];
    }
    if (!a.consts) {
      consts[LUMEN_CONST_R10] = (T)LUMEN_DEFAULT_R10;
      consts[LUMEN_CONST_B1] = (T)LUMEN_DEFAULT_B1;
    } else if (a.data_f64) {
      for (int j = 0; j < LUMEN_NCONSTS; ++j) consts[j] = (T)((const double *)a.consts)[c * LUMEN_NCONSTS + j];
    } else {
      for (int j = 0; j < LUMEN_NCONSTS; ++j) consts[j] = (T)((const float *)a.consts)[c * LUMEN_NCONSTS + j];
    }
    lumen_fitcu_row o;
    drive<M, NP, T>(pr, w64, work, range_error, o);
    a.rows[c] = o;
  }
}

}  // namespace lfit

// ---------------------------------------------------------------- dispatch: one kernel per model
#define LFIT_MODELS(X)                                                                                     \
  X(LUMEN_MODEL_TOFTS) X(LUMEN_MODEL_ETOFTS) X(LUMEN_MODEL_PATLAK) X(LUMEN_MODEL_2CUM) X(LUMEN_MODEL_2CXM) \
  X(LUMEN_MODEL_FXR) X(LUMEN_MODEL_VFA) X(LUMEN_MODEL_VFA_LINEAR) X(LUMEN_MODEL_VFA_2PT) X(LUMEN_MODEL_IR) \
  X(LUMEN_MODEL_SR)

typedef void (*lfit_kernel_fn)(const lumen_fitk_args);

static lfit_kernel_fn kernel_of(int model, int f64) {
  switch (model) {
#define LFIT_CASE(m) \
  case m: return f64 ? lfit::fit_kernel<m, double> : lfit::fit_kernel<m, float>;
    LFIT_MODELS(LFIT_CASE)
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
