/* lumen_fit_execute: batching, threads, tiers and per-curve fall-through. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "solver/lm.h"
#include "cpu/lm_simd.h"
#include "cpu/patlak_rows.h"
#include "fit/curve_fit.h"
#include "fit/cxm_grid.h"
#include "solver/curve_out.h"
#include "fit/fit_cuda.h"
#include "fit/fit_internal.h"
#include "fit/fit_series.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_OPENMP
#include <omp.h>
#endif

#define DT float
#define DM(x) x##_f32
#define DF(x) x##_acc32
#define DRV_STANDARD 0
#define DRV_LANES 1
#include "solver/driver_impl.inc"
#undef DRV_LANES
#undef DT
#undef DM
#undef DF
#undef DRV_STANDARD

/* 2CXM's grid start (src/fit/cxm_grid.h) on the plan's own grid (a delay-shifted AIF takes the
   linear start), on the accelerated double tiers; pl->cxm_grid is NULL unless a test build asks
   for it (src/fit/plan.c): measured, not the default (docs/BENCHMARKS.md) */
static int cxm_grid_hook(const lumen_fit_plan *pl, const lumen_grid_f64 *g, const double *y, double *ls) {
  if (!pl->cxm_grid || g != &pl->g64) return -1;
  return lumen_cxm_grid_start(pl->cxm_grid, y, ls) ? -1 : 0;
}

#define DT double
#define DM(x) x##_f64
#define DF(x) x##_acc64
#define DRV_STANDARD 0
#define DRV_LANES 1
#define DRV_START_HOOK(pl, ws, ls) cxm_grid_hook(pl, (ws)->g, (ws)->y, ls)
#include "solver/driver_impl.inc"
#undef DRV_START_HOOK
#undef DRV_LANES
#undef DF
#undef DRV_STANDARD

/* the standard tier's own linear start (fit/curve_fit.h) */
static int std_start_hook(const lumen_fit_plan *pl, const lumen_grid_f64 *g, const double *consts, const double *y,
                          double *ls) {
  return lumen_standard_linear_start(pl->model, g, consts, y, ls);
}

#define DF(x) x##_std64
#define DRV_STANDARD 1
#define DRV_START_HOOK(pl, ws, ls) std_start_hook(pl, (ws)->g, (ws)->consts, (ws)->y, ls)
#include "solver/driver_impl.inc"
#undef DRV_START_HOOK
#undef DT
#undef DM
#undef DF
#undef DRV_STANDARD

/* ------------------------------------------------------------------ storing results */
/* dst[0..n-1] = src[0..n-1] for the few values of one curve, n <= N: a loop with a variable
   count became a call of memcpy per array per curve (four per curve; ~2 % of a Tofts fit on the
   lane path). */
#define PUT_VALUES(NAME, N)                                                                    \
  static inline void NAME(double *dst, const double src[N], int n) {                           \
    for (int k = 0; k < (N); ++k)                                                              \
      if (k < n) dst[k] = src[k];                                                              \
  }
PUT_VALUES(put_params, LUMEN_FIT_MAX_PARAMS)
PUT_VALUES(put_derived, LUMEN_FIT_MAX_DERIVED)
#undef PUT_VALUES

static void store(const lumen_fit_plan *pl, lumen_fit_results *res, int64_t c, const lumen_fit_curve_out *o) {
  const int np = pl->np, nd = pl->nd;
  const lumen_model m = pl->model;
  int ok = lumen_fit_state_has_values(o->state);
  double pub[LUMEN_FIT_MAX_PARAMS];
  for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) pub[k] = NAN;
  if (ok && np > 0) lumen_model_to_public_f64(m, o->p, pub);
  if (res->params) put_params(res->params + c * np, pub, np);
  res->state[c] = (int32_t)o->state;
  if (res->derived) { /* only when asked for: a division per curve (Tofts' kep) otherwise wasted */
    double der[LUMEN_FIT_MAX_DERIVED];
    for (int k = 0; k < LUMEN_FIT_MAX_DERIVED; ++k) der[k] = NAN;
    if (ok && np > 0) {
      double tmp[LUMEN_FIT_MAX_DERIVED];
      int nw = lumen_model_derived_f64(m, o->p, tmp);
      for (int k = 0; k < nd && k < nw; ++k) der[k] = tmp[k];
    } else if ((lumen_model_flags(m) & LUMEN_MF_AREAS) && ok) {
      for (int k = 0; k < nd; ++k) der[k] = o->derived[k];
    }
    put_derived(res->derived + c * nd, der, nd);
  }
  if (res->chi2) res->chi2[c] = ok ? o->chi2 : NAN;
  if (res->r2) res->r2[c] = ok ? o->r2 : NAN;
  if (res->iterations) res->iterations[c] = o->iterations;
  if (res->ci_lo || res->ci_hi) {
    double lo[LUMEN_FIT_MAX_PARAMS], hi[LUMEN_FIT_MAX_PARAMS];
    for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) {
      lo[k] = ok ? o->ci_lo[k] : NAN;
      hi[k] = ok ? o->ci_hi[k] : NAN;
    }
    if (res->ci_lo) put_params(res->ci_lo + c * np, lo, np);
    if (res->ci_hi) put_params(res->ci_hi + c * np, hi, np);
  }
  if (res->delay) res->delay[c] = ok && pl->opts.fit_delay ? o->delay : NAN;
  res->bound_mask[c] = ok ? (int32_t)o->bound_mask : 0; /* execute_impl always provides it */
}

static int lane_fast_on = 1; /* lumen_fit_lane_fast_set */
void lumen_fit_lane_fast_set(int on) { lane_fast_on = on != 0; }

/* bytes (a multiple of 64) of zeros on whole cache lines, or NULL. */
static void *zalloc_lines(size_t bytes) {
  void *p = bytes ? aligned_alloc(64, bytes) : NULL;
  if (p) memset(p, 0, bytes);
  return p;
}

/* Whether a curve's result should be tried again on the next tier. */
static int needs_fallthrough(const lumen_fit_plan *pl, const lumen_fit_curve_out *o) {
  if (o->status != LUMEN_OK) return 1;
  if (o->state == LUMEN_FIT_NOT_FINITE || o->state == LUMEN_FIT_SINGULAR) return 1;
  if (lumen_fit_state_has_values(o->state))
    for (int k = 0; k < pl->np; ++k)
      if (!isfinite(o->p[k])) return 1;
  return 0;
}

/* ------------------------------------------------------------------ one tier over a list */
typedef struct exec_in {
  const lumen_fit_plan *pl;
  lumen_ctx *ctx;
  const void *data;
  int data_f64;
  const void *consts;
  int consts_f64;
  lumen_fit_results *res;
  int want; /* 1: confidence intervals, 2: R^2 */
  int lanes32, lanes64; /* vector solver widths within the context's SIMD limit (0: none) */
  const struct patlak_design *patlak; /* Patlak in closed form on tiers cpu/cpu_single, or NULL */
  /* the curves frame-major in a series (lumen_fit_execute_series): curve c's sample i at
     data[index[c] + i * stride] (float); NULL: curve-major, curve c at data + c * n */
  const int64_t *index;
  int64_t stride;
  int64_t n_curves;
} exec_in;

/* Curve c into the workspace dst (samples in T, range_error, the constants); staged (or NULL):
   its float samples already gathered there (the lane path's blocks of a frame-major input). */
#define LOAD_ROW_STAGED(T, dst, in, c, staged)                                                   \
  do {                                                                                           \
    const int n_ = (in)->pl->n;                                                                  \
    const float *stg_ = (staged);                                                                \
    (dst)->range_error = 0;                                                                      \
    if (stg_) {                                                                                  \
      for (int i_ = 0; i_ < n_; ++i_) (dst)->y[i_] = (T)stg_[i_];                                \
    } else if ((in)->data_f64) {                                                                 \
      const double *src_ = (const double *)(in)->data + (c) * (int64_t)n_;                       \
      for (int i_ = 0; i_ < n_; ++i_) {                                                          \
        (dst)->y[i_] = (T)src_[i_];                                                              \
        if (isfinite(src_[i_]) && !isfinite((double)(dst)->y[i_])) (dst)->range_error = 1;       \
      }                                                                                          \
    } else if ((in)->index) {                                                                    \
      const float *src_ = (const float *)(in)->data + (in)->index[c];                            \
      for (int i_ = 0; i_ < n_; ++i_) (dst)->y[i_] = (T)src_[i_ * (in)->stride];                 \
    } else {                                                                                     \
      const float *src_ = (const float *)(in)->data + (c) * (int64_t)n_;                         \
      for (int i_ = 0; i_ < n_; ++i_) (dst)->y[i_] = (T)src_[i_];                                \
    }                                                                                            \
    if (!(in)->consts) {                                                                         \
      (dst)->consts[LUMEN_FIT_CONST_R10] = (T)LUMEN_DEFAULT_R10;                                     \
      (dst)->consts[LUMEN_FIT_CONST_B1] = (T)LUMEN_DEFAULT_B1;                                       \
    } else if ((in)->consts_f64) {                                                               \
      for (int j_ = 0; j_ < LUMEN_FIT_NCONSTS; ++j_)                                                 \
        (dst)->consts[j_] = (T)((const double *)(in)->consts)[(c) * LUMEN_FIT_NCONSTS + j_];         \
    } else {                                                                                     \
      for (int j_ = 0; j_ < LUMEN_FIT_NCONSTS; ++j_)                                                 \
        (dst)->consts[j_] = (T)((const float *)(in)->consts)[(c) * LUMEN_FIT_NCONSTS + j_];          \
    }                                                                                            \
  } while (0)
#define LOAD_ROW(T, dst, in, c) LOAD_ROW_STAGED(T, dst, in, c, (const float *)NULL)

/* Asks for curve c's row ahead of its LOAD_ROW: the lane path loads its lanes' curves 16 at a time,
   and a row's first load missed the cache (the input is streamed once: ~10 % of a Tofts fit).
   The empty volatile asm keeps the loop: GCC 12 at -O3 deleted a loop of nothing but prefetches
   (no side effects, finite), so this asked for nothing until session 17. */
static inline void prefetch_row(const exec_in *in, int64_t c) {
  if (in->index) return; /* frame-major: the lane path stages blocks (lane_impl.inc) */
  const size_t bytes = (size_t)in->pl->n * (in->data_f64 ? sizeof(double) : sizeof(float));
  const char *row = (const char *)in->data + (size_t)c * bytes;
  for (size_t b = 0; b < bytes; b += 64) {
    __builtin_prefetch(row + b);
    __asm__ __volatile__("");
  }
}

enum { KIND_ACC32, KIND_ACC64, KIND_STD64, KIND_PATLAK };

/* ------------------------------------------------------------------ Patlak in closed form */
/* Patlak (Ct = Ktrans icp + vp cp) is linear in its parameters: every curve shares the normal
   matrix A = J^T W J, so the least-squares fit within the box is a right-hand side, a 2 x 2 solve
   (interior with the plan's 1 / det A, else lumen_patlak_box_f64's best edge) and chi2 from the
   same sums; no iterations. The tiers cpu/cpu_single use it when no parameter is fixed and A is
   well conditioned; the standard tier keeps its solver (the independent reference). States, R^2,
   intervals and bounds follow the driver (check_input, the formula of stats, mark_bounds). */
typedef struct patlak_design {
  int level;          /* lumen_cpu_vector_level */
  double a[3];        /* A = [a0 a1; a1 a2] */
  double inv_det;     /* 1 / det A */
  double ci_scale[2]; /* t975(n - 2) sqrt((A^-1)_kk / (n - 2)): the half-width is this x sqrt(chi2) */
  double *mem;        /* w (ones when unweighted), w icp, w cp: n each */
} patlak_design;

/* 1 when the plan's fit can take the closed form (then d is set up; free d->mem). */
static int patlak_design_init(lumen_ctx *ctx, const lumen_fit_plan *pl, patlak_design *d) {
  memset(d, 0, sizeof *d);
  if (!(lumen_model_flags(pl->model) & LUMEN_MF_PATLAK_LINEAR) || pl->np != 2 || pl->opts.fit_delay || pl->fixed[0] ||
      pl->fixed[1])
    return 0;
  const int n = pl->n;
  const double *w = pl->opts.weights ? pl->w64 : NULL, *u = pl->g64.icp, *c = pl->g64.cp;
  double a00 = 0, a01 = 0, a11 = 0;
  for (int i = 0; i < n; ++i) {
    double wi = w ? w[i] : 1.0;
    a00 += wi * u[i] * u[i];
    a01 += wi * u[i] * c[i];
    a11 += wi * c[i] * c[i];
  }
  const double det = a00 * a11 - a01 * a01;
  if (!(a00 > 0) || !(a11 > 0) || !(det > 1e-13 * a00 * a11) || !isfinite(a00 * a11)) return 0;
  if (!(d->mem = malloc(sizeof(double) * 3 * (size_t)n))) return 0; /* the iterative path then */
  for (int i = 0; i < n; ++i) {
    double wi = w ? w[i] : 1.0;
    d->mem[i] = wi;
    d->mem[n + i] = wi * u[i];
    d->mem[2 * n + i] = wi * c[i];
  }
  d->a[0] = a00;
  d->a[1] = a01;
  d->a[2] = a11;
  d->inv_det = 1.0 / det;
  for (int k = 0; k < 2; ++k)
    d->ci_scale[k] = n > 2 ? lumen_plan_t975(pl, n - 2) * sqrt((k ? a00 : a11) / det / (n - 2)) : NAN;
  d->level = lumen_cpu_vector_level(lumen_ctx_cpu_simd(ctx));
  return 1;
}

/* Curve c fitted in closed form, completed as DF(drive) completes a fit: the input checks (in full,
   on the curve loaded into w, only when the screen of the sums or the constants find it suspect),
   R^2, the intervals of DF(stats) from the plan's A^-1, DF(mark_bounds). */
static void patlak_closed(const exec_in *in, ws_acc64 *w, int64_t c, lumen_fit_curve_out *o) {
  const lumen_fit_plan *pl = in->pl;
  const patlak_design *d = in->patlak;
  const int n = pl->n;
  lumen_fit_curve_out_clear(o);
  w->g = &pl->g64;
  const double *ones = d->mem, *wa = d->mem + n, *wb = d->mem + 2 * n;
  const void *y = in->data_f64 ? (const void *)((const double *)in->data + c * (int64_t)n)
                               : (const void *)((const float *)in->data + c * (int64_t)n);
  int y_f64 = in->data_f64;
  if (in->index) { /* frame-major: the curve gathered in double (exact), the same sums */
    LOAD_ROW(double, w, in, c);
    y = w->y;
    y_f64 = 1;
  }
  double rhs[4], r[2], p[LUMEN_FIT_MAX_PARAMS] = {0};
  lumen_patlak_row_rhs(d->level, n, y, y_f64, ones, wa, wb, rhs);
  int suspect = !(rhs[3] > 0 && rhs[3] < INFINITY);
  if (in->consts)
    for (int j = 0; j < LUMEN_FIT_NCONSTS; ++j)
      suspect |= in->consts_f64 ? !isfinite(((const double *)in->consts)[c * LUMEN_FIT_NCONSTS + j])
                                : !isfinite(((const float *)in->consts)[c * LUMEN_FIT_NCONSTS + j]);
  if (suspect) {
    if (!in->index) LOAD_ROW(double, w, in, c);
    if (check_input_acc64(pl, w, o)) return;
  }
  const double a00 = d->a[0], a01 = d->a[1], a11 = d->a[2], sums[5] = {a00, a01, a11, rhs[1], rhs[2]};
  /* the interior solution with the plan's 1 / det; on the box's edges lumen_patlak_box_ */
  p[0] = (rhs[1] * a11 - rhs[2] * a01) * d->inv_det;
  p[1] = (rhs[2] * a00 - rhs[1] * a01) * d->inv_det;
  if (!(p[0] >= pl->lo[0] && p[0] <= pl->hi[0] && p[1] >= pl->lo[1] && p[1] <= pl->hi[1]))
    lumen_patlak_box__f64(sums, pl->lo, pl->hi, p);
  /* chi2 and the total sum of squares from the sums: y'Wy - 2 p'b + p'Ap and y'Wy - (sum w y)^2 /
     sum w; each term is at most ~y'Wy, so their rounding is ~1e-16 y'Wy: kept when the result is
     above 1e-5 y'Wy (relative error < 1e-10), else (a near-perfect fit, a flat curve) one exact
     pass over the residuals */
  const double yy = rhs[3];
  r[0] = yy - 2 * (p[0] * rhs[1] + p[1] * rhs[2]) + (a00 * p[0] * p[0] + 2 * a01 * p[0] * p[1] + a11 * p[1] * p[1]);
  r[1] = yy - rhs[0] * rhs[0] / pl->sum_w;
  if (!(r[0] > 1e-5 * yy) || !(r[1] > 1e-5 * yy))
    lumen_patlak_row_resid(d->level, n, y, y_f64, ones, pl->g64.icp, pl->g64.cp, p[0], p[1], rhs[0] / pl->sum_w,
                           r);
  o->iterations = 0;
  o->chi2 = r[0];
  o->state = isfinite(r[0]) && isfinite(p[0]) && isfinite(p[1]) ? LUMEN_FIT_CONVERGED : LUMEN_FIT_NOT_FINITE;
  if (o->state != LUMEN_FIT_CONVERGED) return;
  o->p[0] = p[0];
  o->p[1] = p[1];
  if (in->want & 2) o->r2 = r[1] > 0 ? 1.0 - r[0] / r[1] : NAN;
  if ((in->want & 1) && n > 2 && r[0] >= 0) {
    const double sc = sqrt(r[0]);
    for (int k = 0; k < 2; ++k) {
      const double h = d->ci_scale[k] * sc;
      if (!isfinite(h)) continue;
      o->ci_lo[k] = p[k] - h;
      o->ci_hi[k] = p[k] + h;
    }
  }
  mark_bounds_acc64(pl, p, o);
}

static void fit_one(const exec_in *in, int kind, void *ws, int64_t c, unsigned char *fail, int64_t pos) {
  lumen_fit_curve_out o;
  switch (kind) {
    case KIND_ACC32: {
      ws_acc32 *w = ws;
      LOAD_ROW(float, w, in, c);
      drive_acc32(in->pl, in->ctx, w, in->want, &o);
      break;
    }
    case KIND_ACC64: {
      ws_acc64 *w = ws;
      LOAD_ROW(double, w, in, c);
      drive_acc64(in->pl, in->ctx, w, in->want, &o);
      break;
    }
    case KIND_PATLAK: {
      patlak_closed(in, ws, c, &o);
      break;
    }
    default: {
      ws_std64 *w = ws;
      LOAD_ROW(double, w, in, c);
      drive_std64(in->pl, in->ctx, w, in->want, &o);
      break;
    }
  }
  store(in->pl, in->res, c, &o);
  fail[pos] = (unsigned char)needs_fallthrough(in->pl, &o);
}

/* ------------------------------------------------------------------ lane-batched path */
/* Tiers cpu/cpu_single without delay fitting, for the models the vector solver knows
   (src/cpu/lm_simd.h): float32 (Tofts, ETM, Patlak, 2CUM, VFA, IR, SR) or double (2CXM, FXR), when the
   CPU has AVX2 or AVX-512: each thread fits curves W at a time, one per lane; curves are taken
   from a shared counter in small blocks (dynamic schedule). src/fit/lane_impl.inc, twice. */
#define LANE_BLOCK 256 /* curves a thread takes at once: large enough that two threads rarely write the
                           same cache line of the result arrays */
#define LANE_BLOCK_MIN 32 /* the smallest block, near the end of a call */
#define LANE_TICKETS (2 * LUMEN_LMV_MAX_WIDTH)
#define LANE_FAST_BATCH 16 /* curves lane_done_fast completes at once (lane_impl.inc) */
#define LANE_PREFETCH 32 /* curves between a row asked for and its load (lane_next) */
#define LANE_DEFER_CAP 256 /* 2CXM curves whose further starts are batched at once (per thread) */

/* The size of the next block a lane thread takes from counter (of nth threads, up to end): LANE_BLOCK
   while many curves are left, then a share of what is left (at least LANE_BLOCK_MIN), so that the
   threads run out of curves at about the same time. With whole blocks to the end, one thread
   fitted up to a block alone while the others waited at the call's end (the worker thread idled
   ~5 % of its time in calls of 10,000 Tofts curves on 2 cores). A hint: blocks are still taken by
   an atomic add. */
static int64_t lane_block(const int64_t *counter, int64_t end, int nth) {
  const int64_t share = (end - __atomic_load_n(counter, __ATOMIC_RELAXED)) / (2 * (int64_t)nth);
  return share >= LANE_BLOCK ? LANE_BLOCK : share > LANE_BLOCK_MIN ? share : LANE_BLOCK_MIN;
}

static int lane_use_simd(const exec_in *in, const lumen_fit_plan *pl, int kind) {
  if (pl->opts.fit_delay || pl->np <= 0 || lumen_model_is_closed_form(pl->model)) return 0;
  if (kind == KIND_ACC32) return lumen_lmv_supported(pl->model, &pl->g32) && in->lanes32 > 0;
  if (kind == KIND_ACC64) return lumen_lmvd_supported(pl->model, &pl->g64) && in->lanes64 > 0;
  return 0;
}

#define DT float
#define DF(x) x##_acc32
#define LN(x) x##_f32
#define LV_PROB lumen_lmv_problem
#define LV_IOT lumen_lmv_io
#define LV_RUN(in, pr, io, work) lumen_lmv_run((in)->lanes32, pr, io, work)
#include "fit/lane_impl.inc"
#include "fit/lane_undef.inc"

#define DT double
#define DF(x) x##_acc64
#define LN(x) x##_f64
#define LV_PROB lumen_lmvd_problem
#define LV_IOT lumen_lmvd_io
#define LV_RUN(in, pr, io, work) lumen_lmvd_run((in)->lanes64, pr, io, work)
#include "fit/lane_impl.inc"
#include "fit/lane_undef.inc"

/* ------------------------------------------------------------------ tier cuda (src/fit/fit_cuda.c) */
typedef struct cuda_user {
  const exec_in *in;
  const int64_t *list;
  unsigned char *fail;
} cuda_user;

/* a device's row -> the results (called from the device's host thread) */
static void cuda_deliver(void *user, int64_t pos, const lumen_fitcu_row *row) {
  const cuda_user *u = user;
  lumen_fit_curve_out o;
  lumen_fit_curve_out_clear(&o);
  for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) {
    o.p[k] = row->p[k];
    o.ci_lo[k] = row->ci_lo[k];
    o.ci_hi[k] = row->ci_hi[k];
  }
  o.chi2 = row->chi2;
  o.r2 = row->r2;
  o.iterations = row->iterations;
  o.bound_mask = row->bound_mask;
  o.state = (lumen_fit_state)row->state;
  store(u->in->pl, u->in->res, u->list[pos], &o);
  u->fail[pos] = (unsigned char)needs_fallthrough(u->in->pl, &o);
}

/* the fake test device (lumen_fitcu_test_set_fake) computes rows with the CPU solver */
static void cuda_cpu_row(void *user, int64_t pos, lumen_fitcu_row *row) {
  const cuda_user *u = user;
  const exec_in *in = u->in;
  const lumen_fit_plan *pl = in->pl;
  const int f64 = lumen_fit_solves_f64(pl);
  long per = f64 ? ws_elems_acc64(pl) : ws_elems_acc32(pl);
  void *mem = calloc((size_t)per, f64 ? sizeof(double) : sizeof(float));
  lumen_fit_curve_out o;
  lumen_fit_curve_out_clear(&o);
  if (mem) {
    int64_t c = u->list[pos];
    if (f64) {
      ws_acc64 w;
      ws_bind_acc64(&w, mem, pl);
      LOAD_ROW(double, &w, in, c);
      drive_acc64(pl, in->ctx, &w, in->want, &o);
    } else {
      ws_acc32 w;
      ws_bind_acc32(&w, mem, pl);
      LOAD_ROW(float, &w, in, c);
      drive_acc32(pl, in->ctx, &w, in->want, &o);
    }
    free(mem);
  }
  for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) {
    row->p[k] = o.p[k];
    row->ci_lo[k] = o.ci_lo[k];
    row->ci_hi[k] = o.ci_hi[k];
  }
  row->chi2 = o.chi2;
  row->r2 = o.r2;
  row->iterations = o.iterations;
  row->bound_mask = o.bound_mask;
  row->state = mem ? (int32_t)o.state : (int32_t)LUMEN_FIT_NOT_FINITE;
}

static lumen_status run_tier_cuda(const exec_in *in, const int64_t *list, int64_t count, unsigned char *fail,
                                  double base, double span) {
  const lumen_fit_plan *pl = in->pl;
  lumen_fitcu_problem pb;
  lumen_fitcu_problem_from_plan(pl, in->want, &pb);
  cuda_user u = {in, list, fail};
  lumen_fitcu_input ci = {in->data, in->data_f64, in->consts, list, count, cuda_deliver, cuda_cpu_row, &u,
                          lumen_ctx_threads(in->ctx), &in->res->kernel_seconds};
  char note[LUMEN_FIT_REASON_MAX] = "";
  lumen_status st = lumen_fitcu_run(in->ctx, &pb, pl->cuda_dev, pl->n_cuda_dev, &ci, fail, note, sizeof note);
  if (note[0]) {
    size_t len = strlen(in->res->reason);
    if (len + 1 < sizeof in->res->reason) snprintf(in->res->reason + len, sizeof in->res->reason - len, "%s", note);
    lumen_log(in->ctx, LUMEN_LOG_WARNING, "fit (cuda)%s", note);
  }
  if (st == LUMEN_OK && span > 0) st = lumen_progress(in->ctx, base + span, "fit");
  return st;
}

/* A frame-major input (lumen_fit_execute_series) on the cuda tier: all its curves gathered
   curve-major first (the device's staging reads rows). */
static lumen_status run_tier_cuda_series(const exec_in *in, const int64_t *list, int64_t count, unsigned char *fail,
                                         double base, double span) {
  const int n = in->pl->n;
  const int64_t n_curves = in->n_curves;
  float *rows = malloc(sizeof(float) * (size_t)n_curves * (size_t)n);
  if (!rows) return lumen_fail(in->ctx, LUMEN_ERR_OUT_OF_MEMORY, "fit: out of host memory for %lld curves", (long long)n_curves);
  lumen_series_gather((const float *)in->data, in->stride, in->index, n_curves, n, rows, lumen_ctx_threads(in->ctx),
                      lumen_cpu_vector_level(lumen_ctx_cpu_simd(in->ctx)));
  exec_in cin = *in;
  cin.data = rows;
  cin.index = NULL;
  lumen_status st = run_tier_cuda(&cin, list, count, fail, base, span);
  free(rows);
  return st;
}

/* The scalar path of run_tier (no vector lanes): one parallel region for the whole list, threads
   take blocks of SCALAR_BLOCK curves from a shared counter, so no barrier holds a thread between
   chunks (issue 20: the standard tier on a busy machine waited at a barrier every 256 curves).
   Progress is reported, serialised and increasing, whenever the count of fitted curves crosses a
   multiple of chunk; a cancelling callback stops further blocks. Every claimed block is finished,
   so the fitted curves are list[0..*fitted-1]. */
#define SCALAR_BLOCK 8
#define CLOSED_BLOCK 256 /* Patlak in closed form: ~100 ns a curve, so a block of 8 would put two
                            threads' result writes in one cache line and their counter in a tight loop */
typedef struct scalar_pass {
  const exec_in *in;
  int kind;
  int64_t block; /* curves a thread takes at once */
  unsigned char *wss;
  size_t ws_size;
  const int64_t *list;
  int64_t count;
  unsigned char *fail;
  int64_t chunk;
  double base, span;
} scalar_pass;

/* One thread's share: fits blocks until none is left or *stop is set; the thread whose block
   takes the fitted count *done across a multiple of chunk reports progress. */
static void scalar_blocks(const scalar_pass *p, void *tw, int64_t *next, int64_t *done, int64_t *reported,
                          int *stop, lumen_status *st) {
  for (;;) {
    if (__atomic_load_n(stop, __ATOMIC_ACQUIRE)) return;
    const int64_t a = __atomic_fetch_add(next, p->block, __ATOMIC_ACQ_REL);
    if (a >= p->count) return;
    const int64_t b = a + p->block < p->count ? a + p->block : p->count;
    for (int64_t i = a; i < b; ++i) fit_one(p->in, p->kind, tw, p->list[i], p->fail, i);
    const int64_t d = __atomic_add_fetch(done, b - a, __ATOMIC_ACQ_REL);
    if (d / p->chunk == (d - (b - a)) / p->chunk && d < p->count) continue;
#if LUMEN_HAVE_OPENMP
#pragma omp critical(lumen_fit_scalar_progress)
#endif
    {
      if (d > *reported && *st == LUMEN_OK && (d < p->count || p->span > 0)) {
        *reported = d;
        *st = lumen_progress(p->in->ctx, p->base + p->span * (double)d / (double)p->count, "fit");
        if (*st != LUMEN_OK) __atomic_store_n(stop, 1, __ATOMIC_RELEASE);
      }
    }
  }
}

static lumen_status scalar_run(const scalar_pass *p, int nth, int64_t *fitted) {
  int64_t next = 0, done = 0, reported = 0;
  int stop = 0;
  lumen_status st = LUMEN_OK;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel num_threads(nth) if (nth > 1)
  scalar_blocks(p, p->wss + (size_t)omp_get_thread_num() * p->ws_size, &next, &done, &reported, &stop, &st);
#else
  (void)nth;
  scalar_blocks(p, p->wss, &next, &done, &reported, &stop, &st);
#endif
  *fitted = next < p->count ? next : p->count;
  return st;
}

/* Runs tier on the curves list[0..count-1]; fail[i] tells whether list[i] must fall through.
   Reports progress in [base, base + span]. */
static lumen_status run_tier(const exec_in *in, lumen_fit_tier tier, const int64_t *list, int64_t count,
                             unsigned char *fail, double base, double span) {
  if (tier == LUMEN_FIT_TIER_CUDA)
    return in->index ? run_tier_cuda_series(in, list, count, fail, base, span)
                     : run_tier_cuda(in, list, count, fail, base, span);
  const lumen_fit_plan *pl = in->pl;
  int kind = tier == LUMEN_FIT_TIER_STANDARD ? KIND_STD64
             : in->patlak                        ? KIND_PATLAK
                                                 : (lumen_fit_solves_f64(pl) ? KIND_ACC64 : KIND_ACC32);
  int nth = tier == LUMEN_FIT_TIER_CPU_SINGLE ? 1 : lumen_ctx_threads(in->ctx);
  if (nth < 1) nth = 1;
#if !LUMEN_HAVE_OPENMP
  nth = 1;
#endif
  if (count < (int64_t)nth * 4) nth = count > 0 ? (int)((count + 3) / 4) : 1;
  if (nth < 1) nth = 1;
  size_t elem = kind == KIND_ACC32 ? sizeof(float) : sizeof(double);
  const int ws_kind = kind == KIND_PATLAK ? KIND_ACC64 : kind; /* the closed form loads curves in double */
  const int lanes = lane_use_simd(in, pl, kind);
  size_t lbytes = !lanes ? 0
                  : ((kind == KIND_ACC32 ? lumen_lmv_work_bytes(in->lanes32, pl->n, pl->np)
                                         : lumen_lmvd_work_bytes(in->lanes64, pl->n, pl->np)) +
                     63) / 64 * 64;
  void *lmem = lanes ? zalloc_lines((size_t)nth * lbytes) : NULL;
  /* a frame-major input on the lane path: each thread's block of curves gathered at once */
  const size_t sbytes = lanes && in->index ? sizeof(float) * LANE_BLOCK * (size_t)pl->n : 0;
  float *smem = sbytes ? aligned_alloc(64, (size_t)nth * sbytes) : NULL;
  long per = ws_kind == KIND_ACC32   ? ws_elems_acc32(pl)
             : ws_kind == KIND_ACC64 ? ws_elems_acc64(pl)
                                     : ws_elems_std64(pl);
  /* each thread's workspaces on cache lines of their own: the threads write theirs every curve, and
     a line shared by two of them went back and forth between the cores (false sharing) */
  size_t ws_size = ws_kind == KIND_ACC32   ? sizeof(ws_acc32)
                   : ws_kind == KIND_ACC64 ? sizeof(ws_acc64)
                                           : sizeof(ws_std64);
  ws_size = (ws_size + 63) / 64 * 64;
  const size_t mem_bytes = ((size_t)per * elem + 63) / 64 * 64;
  void *mem = zalloc_lines((size_t)nth * mem_bytes);
  unsigned char *wss = zalloc_lines((size_t)nth * ws_size);
  if (!mem || !wss || (lanes && !lmem) || (sbytes && !smem)) {
    free(mem);
    free(wss);
    free(lmem);
    free(smem);
    return lumen_fail(in->ctx, LUMEN_ERR_OUT_OF_MEMORY, "fit: out of memory for %d thread workspaces", nth);
  }
  for (int t = 0; t < nth; ++t) {
    void *tm = (char *)mem + (size_t)t * mem_bytes;
    void *tw = wss + (size_t)t * ws_size;
    if (ws_kind == KIND_ACC32) ws_bind_acc32(tw, tm, pl);
    else if (ws_kind == KIND_ACC64) ws_bind_acc64(tw, tm, pl);
    else ws_bind_std64(tw, tm, pl);
  }
  /* progress and cancellation every chunk curves */
  int64_t chunk = pl->opts.fit_delay || tier == LUMEN_FIT_TIER_STANDARD ? 256 : 8192;
  if (lanes && nth > 1) chunk = 65536; /* fewer barriers for the threads of the lane path */
  lumen_status st = LUMEN_OK;
  int64_t fitted = count;
  if (!lanes) {
    scalar_pass pass = {in, kind, kind == KIND_PATLAK ? CLOSED_BLOCK : SCALAR_BLOCK, wss, ws_size, list, count, fail,
                        chunk, base, span};
    st = scalar_run(&pass, nth, &fitted);
  }
  for (int64_t c0 = 0; lanes && c0 < count && st == LUMEN_OK; c0 += chunk) {
    int64_t c1 = c0 + chunk < count ? c0 + chunk : count;
    int64_t counter = c0;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel num_threads(nth) if (nth > 1)
    {
      int t = omp_get_thread_num();
      void *tw = wss + (size_t)t * ws_size, *tl = (char *)lmem + (size_t)t * lbytes;
      float *ts = smem ? (float *)((char *)smem + (size_t)t * sbytes) : NULL;
      if (kind == KIND_ACC32) lane_run_f32(in, tw, tl, ts, list, fail, &counter, c1, nth);
      else lane_run_f64(in, tw, tl, ts, list, fail, &counter, c1, nth);
    }
#else
    if (kind == KIND_ACC32) lane_run_f32(in, wss, lmem, smem, list, fail, &counter, c1, 1);
    else lane_run_f64(in, wss, lmem, smem, list, fail, &counter, c1, 1);
#endif
    if (c1 < count || span > 0) st = lumen_progress(in->ctx, base + span * (double)c1 / (double)count, "fit");
    fitted = c1;
  }
  if (st != LUMEN_OK) /* cancelled: the curves not fitted get the cleared result */
    for (int64_t i = fitted; i < count; ++i) {
      lumen_fit_curve_out o;
      lumen_fit_curve_out_clear(&o);
      store(pl, in->res, list[i], &o);
      fail[i] = 0;
    }
  free(mem);
  free(wss);
  free(lmem);
  free(smem);
  return st;
}

static void strcat_bounded(char *dst, size_t size, const char *src) {
  size_t len = strlen(dst);
  if (len + 1 >= size) return;
  snprintf(dst + len, size - len, "%s", src);
}

/* execute_impl with res->bound_mask set (n_curves entries). */
static lumen_status execute_tiers(lumen_ctx *ctx, const lumen_fit_plan *pl, int64_t n_curves, const void *data,
                                  int data_f64, const int64_t *index, int64_t stride, const void *consts,
                                  lumen_fit_results *res) {
  LUMEN_REQUIRE(ctx, n_curves == 0 || data != NULL, "lumen_fit_execute: data is NULL");
  LUMEN_REQUIRE(ctx, n_curves == 0 || !index || stride > 0, "lumen_fit_execute_series: stride %lld <= 0",
                (long long)stride);
  LUMEN_REQUIRE(ctx, n_curves == 0 || res->state != NULL, "lumen_fit_execute: results.state is NULL (required)");
  LUMEN_REQUIRE(ctx, n_curves == 0 || pl->np == 0 || res->params != NULL,
                "lumen_fit_execute: results.params is NULL (required)");
  LUMEN_REQUIRE(ctx, n_curves == 0 || !(lumen_model_flags(pl->model) & LUMEN_MF_AREAS) || res->derived != NULL,
                "lumen_fit_execute: results.derived is NULL (required for %s, which has no parameters)",
                lumen_model_name(pl->model));
  int64_t total;
  LUMEN_REQUIRE(ctx, !lumen_mul_i64(n_curves, pl->n, &total), "lumen_fit_execute: n_curves x n overflows");
  double t0 = lumen_now_seconds();
  snprintf(res->backend_requested, sizeof res->backend_requested, "%s", pl->requested);
  snprintf(res->backend_selected, sizeof res->backend_selected, "%s", pl->selected);
  res->backend_used[0] = 0;
  snprintf(res->reason, sizeof res->reason, "%s", pl->reason);
  memset(res->curves_per_tier, 0, sizeof res->curves_per_tier);
  memset(res->state_counts, 0, sizeof res->state_counts);
  memset(res->at_lower, 0, sizeof res->at_lower);
  memset(res->at_upper, 0, sizeof res->at_upper);
  res->kernel_seconds = 0.0;
  res->seconds = 0;
  if (n_curves == 0) {
    snprintf(res->backend_used, sizeof res->backend_used, "%s", pl->selected);
    return LUMEN_OK;
  }
  int64_t *list = malloc((size_t)n_curves * sizeof *list);
  unsigned char *fail = malloc((size_t)n_curves);
  if (!list || !fail) {
    free(list);
    free(fail);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_fit_execute: out of memory for %lld curves",
                      (long long)n_curves);
  }
  for (int64_t c = 0; c < n_curves; ++c) list[c] = c;
  exec_in in = {pl, ctx, data, data_f64, consts, data_f64, res,
                (pl->opts.confidence && (res->ci_lo != NULL || res->ci_hi != NULL) ? 1 : 0) |
                    (res->r2 != NULL ? 2 : 0),
                lumen_lmv_width(lumen_ctx_cpu_simd(ctx)), lumen_lmvd_width(lumen_ctx_cpu_simd(ctx)), NULL, index, stride,
                n_curves};
  patlak_design patlak;
  if (patlak_design_init(ctx, pl, &patlak)) in.patlak = &patlak;
  int64_t count = n_curves;
  lumen_status st = LUMEN_OK;
  void *host_copy = NULL;
  for (int oi = 0; oi < pl->norder && count > 0; ++oi) {
    lumen_fit_tier tier = (lumen_fit_tier)pl->order[oi];
    double base = oi == 0 ? 0.0 : 0.9, span = oi == 0 ? 0.9 : 0.1 / (pl->norder - oi);
    if (tier != LUMEN_FIT_TIER_CUDA && oi > 0 && pl->order[0] == LUMEN_FIT_TIER_CUDA && !host_copy &&
        !index && lumen_fitcu_is_device_ptr(data)) {
      /* curves in device memory: the CPU tiers read a host copy */
      size_t el = data_f64 ? sizeof(double) : sizeof(float);
      host_copy = malloc((size_t)total * el + (consts ? (size_t)n_curves * LUMEN_FIT_NCONSTS * el : 0));
      if (!host_copy ||
          lumen_fitcu_copy_to_host(host_copy, data, (size_t)total * el) != LUMEN_OK ||
          (consts && lumen_fitcu_copy_to_host((char *)host_copy + (size_t)total * el, consts,
                                              (size_t)n_curves * LUMEN_FIT_NCONSTS * el) != LUMEN_OK)) {
        st = lumen_fail(ctx, LUMEN_ERR_DEVICE, "lumen_fit_execute: cannot copy the device curves to the host");
        break;
      }
      in.data = host_copy;
      if (consts) in.consts = (char *)host_copy + (size_t)total * el;
    }
    st = run_tier(&in, tier, list, count, fail, base, span);
    int last = oi == pl->norder - 1;
    int64_t nfail = 0;
    for (int64_t i = 0; i < count; ++i) {
      if (fail[i] && !last && st == LUMEN_OK)
        list[nfail++] = list[i];
      else
        res->curves_per_tier[tier]++;
    }
    if (res->curves_per_tier[tier] > 0) {
      if (res->backend_used[0]) strcat_bounded(res->backend_used, sizeof res->backend_used, "+");
      strcat_bounded(res->backend_used, sizeof res->backend_used, lumen_fit_tier_name(tier));
    }
    if (st != LUMEN_OK) break;
    if (nfail > 0) {
      char msg[160];
      snprintf(msg, sizeof msg, "; %lld curve(s) without a finite result on %s fell through to %s", (long long)nfail,
               lumen_fit_tier_name(tier), lumen_fit_tier_name((lumen_fit_tier)pl->order[oi + 1]));
      strcat_bounded(res->reason, sizeof res->reason, msg);
    }
    count = nfail;
  }
  free(list);
  free(fail);
  free(host_copy);
  free(patlak.mem);
  for (int64_t c = 0; c < n_curves; ++c) { /* on one thread while the others wait: kept short */
    int s = res->state[c];
    if (s >= 0 && s < LUMEN_FIT_STATE_COUNT) res->state_counts[s]++;
    const int32_t mask = res->bound_mask[c];
    if (mask)
      for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) {
        res->at_lower[k] += (mask >> (2 * k)) & 1;
        res->at_upper[k] += (mask >> (2 * k + 1)) & 1;
      }
  }
  res->seconds = lumen_now_seconds() - t0;
  if (st != LUMEN_OK) return st;
  return LUMEN_OK;
}

static lumen_status execute_impl(lumen_ctx *ctx, const lumen_fit_plan *pl, int64_t n_curves, const void *data,
                                 int data_f64, const int64_t *index, int64_t stride, const void *consts,
                                 lumen_fit_results *res) {
  LUMEN_REQUIRE_NOT_NULL(ctx, pl);
  LUMEN_REQUIRE_NOT_NULL(ctx, res);
  LUMEN_REQUIRE(ctx, n_curves >= 0, "lumen_fit_execute: n_curves is %lld, expected >= 0", (long long)n_curves);
  /* the tiers store every curve's bound mask: in the caller's array, or in one of ours for the counts */
  int32_t *own_mask = NULL;
  int32_t *user_mask = res->bound_mask;
  if (!user_mask && n_curves > 0 && !(own_mask = malloc((size_t)n_curves * sizeof *own_mask)))
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_fit_execute: out of memory for %lld curves",
                      (long long)n_curves);
  if (own_mask) res->bound_mask = own_mask;
  lumen_status st = execute_tiers(ctx, pl, n_curves, data, data_f64, index, stride, consts, res);
  res->bound_mask = user_mask;
  free(own_mask);
  return st;
}

lumen_status lumen_fit_execute(lumen_ctx *ctx, const lumen_fit_plan *plan, int64_t n_curves, const float *data,
                               const float *consts, lumen_fit_results *results) {
  return execute_impl(ctx, plan, n_curves, data, 0, NULL, 0, consts, results);
}

lumen_status lumen_fit_execute_series(lumen_ctx *ctx, const lumen_fit_plan *plan, int64_t n_curves,
                                      const float *series, const int64_t *index, int64_t stride, const float *consts,
                                      lumen_fit_results *results) {
  return execute_impl(ctx, plan, n_curves, series, 0, index, stride, consts, results);
}

lumen_status lumen_fit_execute_f64(lumen_ctx *ctx, const lumen_fit_plan *plan, int64_t n_curves,
                                   const double *data, const double *consts, lumen_fit_results *results) {
  return execute_impl(ctx, plan, n_curves, data, 1, NULL, 0, consts, results);
}
