/* Internal: the fit plan shared by src/fit/plan.c and src/fit/execute.c. */
#ifndef LUMEN_FIT_INTERNAL_H
#define LUMEN_FIT_INTERNAL_H

#include "core/internal.h"
#include "lumen/fit.h"
#include "models/models_f32.h"
#include "models/models_f64.h"

#define LUMEN_PLAN_MAX_STARTS 8

struct lumen_fit_plan {
  lumen_fit_options opts;    /* copy; opts.backend and opts.weights point into the plan */
  lumen_model model;
  int n;                     /* samples */
  int np;                    /* fit parameters */
  int npub;                  /* public parameters (== np) */
  int nd;                    /* derived values */
  double start[LUMEN_FIT_MAX_PARAMS], lo[LUMEN_FIT_MAX_PARAMS], hi[LUMEN_FIT_MAX_PARAMS];
  unsigned char fixed[LUMEN_FIT_MAX_PARAMS];
  unsigned char start_given[LUMEN_FIT_MAX_PARAMS];
  int has_linear_start;      /* the model has a closed-form start and opts.linear_start is on */
  /* extra deterministic starts (2cxm multi-start), fit parameters */
  int n_extra_starts;
  double extra_starts[LUMEN_PLAN_MAX_STARTS][LUMEN_FIT_MAX_PARAMS];
  /* 2cxm, 2cum: further starts tried only when the best fit rests on a bound (2cxm: of E, ve or
     vp; degenerate corners such as E -> 0, where exchange vanishes, or 2cum's Tp -> 0 with Fp at
     its maximum attract projected LM steps) */
  int n_escape_starts;
  double escape_starts[LUMEN_PLAN_MAX_STARTS][LUMEN_FIT_MAX_PARAMS];
  /* 2cxm: the grid start's tables (fit/cxm_grid.h) when a test build asks for it, else NULL */
  struct lumen_cxm_grid *cxm_grid;
  /* shared grids in both precisions; all arrays owned by the plan (one allocation) */
  double *t64, *cp64, *dt64, *icp64, *w64;
  float *t32, *cp32, *dt32, *icp32, *w32;
  lumen_grid_f64 g64;
  lumen_grid_f32 g32;
  void *block;
  double step;               /* delay search: the integer shift step, minutes */
  double sum_w;              /* sum of weights (n when unweighted) */
  double t975_m[LUMEN_FIT_MAX_PARAMS + 1]; /* lumen_fit_t975(n - m): the intervals' quantile with m free parameters */
  /* backend */
  int order[LUMEN_FIT_TIER_COUNT];  /* runnable tiers in the order they are tried */
  int norder;
  int cuda_dev[16];           /* cuda tier: devices to use ("cuda:all" = {-1}; default {0}) */
  int n_cuda_dev;
  char requested[LUMEN_FIT_NAME_MAX];
  char selected[LUMEN_FIT_NAME_MAX];
  char reason[LUMEN_FIT_REASON_MAX];
};

/* The precision the accelerated tiers (cpu, cpu_single, cuda) solve in: double when asked, and
   always for the LUMEN_MF_SOLVE_F64 and LUMEN_MF_ACC_F64 models, 2CXM and FXR (float32 cannot
   resolve their flat valleys: docs/FITTING.md). */
static inline int lumen_fit_solves_f64(const lumen_fit_plan *pl) {
  return pl->opts.precision == LUMEN_FIT_FLOAT64 ||
         (lumen_model_flags(pl->model) & (LUMEN_MF_SOLVE_F64 | LUMEN_MF_ACC_F64));
}

/* 97.5 % quantile of Student's t with dof degrees of freedom (dof >= 1). */
double lumen_fit_t975(int dof);

/* The lane path's completion of the common case (lane_done_fast in src/fit/lane_impl.inc): on (1,
   the default) or off (0: every curve through DF(lane_done)), for the unit test that holds the two
   to the same bits. Not thread-safe: tests only. */
void lumen_fit_lane_fast_set(int on);

/* The plan as the per-curve driver (src/solver/driver_impl.inc) and the lane path read it: the
   grid and weights in the driver's precision, the Student t quantile of the confidence intervals.
   The CUDA kernels define the same names for their flat plan (src/cuda/fit_lm.cu). */
static inline const lumen_grid_f32 *lumen_plan_grid_f32(const lumen_fit_plan *pl) { return &pl->g32; }
static inline const lumen_grid_f64 *lumen_plan_grid_f64(const lumen_fit_plan *pl) { return &pl->g64; }
static inline const float *lumen_plan_w_f32(const lumen_fit_plan *pl) { return pl->w32; }
static inline const double *lumen_plan_w_f64(const lumen_fit_plan *pl) { return pl->w64; }
static inline double lumen_plan_t975(const lumen_fit_plan *pl, int dof) {
  const int m = pl->n - dof; /* the plan's own table: the quantile cost ~2 % of a Tofts fit per curve */
  return m >= 0 && m <= LUMEN_FIT_MAX_PARAMS ? pl->t975_m[m] : lumen_fit_t975(dof);
}

#endif
