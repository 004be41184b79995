/* lumen's accelerated solver for one curve: Levenberg-Marquardt with box constraints, written
   once (src/solver/lm_impl.inc) and instantiated for float and double on top of the model math of
   src/models/ (the CUDA kernels of src/cuda/fit_lm.cu compile the same source). The fit plan
   (src/fit/) chooses starts, restarts, delays and tiers; this file only
   solves. No allocation, no global state: thread-safe with one workspace per thread. */
#ifndef LUMEN_SOLVER_LM_H
#define LUMEN_SOLVER_LM_H

#include "lumen/fit_state.h"
#include "models/models_f32.h"
#include "models/models_f64.h"
#include "solver/lm_chol.h" /* LUMEN_FIT_MAX_PARAMS and the damped solve */


/* Workspace of one thread for curves of n samples and np parameters: lumen_lm_work_size()
   elements of the solver type. */
static inline long lumen_lm_work_size(int n, int np) {
  return (long)n * (3 + 2 * (long)np) + 16;
}

#define LUMEN_LM_DECLARE(T, SUF)                                                                    \
  typedef struct lumen_lm_problem##SUF {                                                            \
    lumen_model model;                                                                              \
    const lumen_grid##SUF *grid;  /* n = grid->n samples */                                         \
    const T *consts;              /* LUMEN_FIT_NCONSTS values or NULL */                                \
    const T *y;                   /* n data values */                                               \
    const T *w;                   /* n weights or NULL */                                           \
    const double *lo, *hi;        /* np bounds */                                                   \
    const unsigned char *fixed;   /* np flags or NULL */                                            \
    double tol;                                                                                     \
    int max_iterations;                                                                             \
    int geodesic;                 /* 1: geodesic acceleration (see lm_impl.inc), else 0 */          \
  } lumen_lm_problem##SUF;                                                                          \
  /* Fits p (np values, in: start inside the bounds, out: solution). Returns the state; writes     \
     chi2 and the iterations (trial steps) used. work: lumen_lm_work_size(n, np) elements. */     \
  lumen_fit_state lumen_lm_fit##SUF(const lumen_lm_problem##SUF *pr, T *p, T *work, double *chi2,  \
                                    int *iterations);                                               \
  /* chi2 of p only (no fit); NaN when the model is not finite. work as above. */                  \
  double lumen_lm_chi2##SUF(const lumen_lm_problem##SUF *pr, const T *p, T *work);

LUMEN_LM_DECLARE(float, _f32)
LUMEN_LM_DECLARE(double, _f64)

#endif
