/* lumen's lane-batched accelerated solver: the Levenberg-Marquardt of src/solver/lm_impl.inc run on W
   curves at once, one curve per SIMD lane, each lane with its own parameters, lambda, iteration
   count and state; a lane whose curve finished is refilled with the next curve at once, so lanes
   never idle while curves remain. The model is evaluated on vectors by instantiating the SAME
   model code (src/models/model_impl.inc) with a GCC vector type. The vector path is chosen at run
   time from the CPU's features (portable binaries: no -march needed). Per lane the arithmetic is
   that of lumen_lm_fit_f32 / _f64 (same operations in the same order, sums in double), so results
   agree with the scalar solver to rounding (bitwise on the tested machines).
   Two element types:
   - float (lumen_lmv_*): 8 lanes with AVX2, 16 with AVX-512; Tofts, ETM, Patlak, 2CUM, VFA, IR, SR;
   - double (lumen_lmvd_*): 4 lanes with AVX2, 8 with AVX-512; 2CXM (which the fit driver solves in
     double, with geodesic acceleration: see lm_impl.inc) and FXR (solved in double, plain LM). */
#ifndef LUMEN_CPU_LM_SIMD_H
#define LUMEN_CPU_LM_SIMD_H

#include "solver/lm.h"
#include "lumen/context.h"

#define LUMEN_LMV_MAX_WIDTH 16

/* Problem and curve source/sink of one element type T (grid type G), named P##_problem, P##_io.
   Curve source and sink, called from the thread running the solver. A curve is known by a
   ticket (0 <= ticket < 2 LUMEN_LMV_MAX_WIDTH) from next() to done():
   next() loads the next curve: n samples into y, LUMEN_FIT_NCONSTS values into consts; returns 1, or
     0 when no curve is left.
   start() gives the curve's start (inside the bounds) in p. Curves are loaded W at a time and
     (float only) their closed-form linear starts computed on vectors first (Tofts, ETM: Murase; 2CUM;
     Patlak), with the results of lumen_linear_start_f32: ls and its return value ls_ret;
     ls_ret = -1 when there is no vector linear start (or problem.linear_start is 0): start()
     computes its own. With problem.check_samples, ls_ret = -2 says the curve has a NaN or infinite
     sample or none but zeros (tested on the loaded lanes' bit patterns): start() records it as
     invalid input and the solver drops it (it never reaches done()). start() returns 1 when p is already the least-squares solution (a linear
     model's exact closed form inside the box): the curve is then evaluated once and ends
     converged with 0 iterations; else 0.
   done() hands back the result as lumen_lm_fit would: state, parameters, chi2 and iterations
     (y still holds the curve), and A: J^T W J over all np parameters (row stride
     LUMEN_FIT_MAX_PARAMS, summed in double) at the solver's last evaluated point, which is p, or
     the point before p when the fit ended with lm_impl.inc's unevaluated final step (the
     predicted-decrease stop: one step of at most tol chi2 predicted decrease), from which the
     confidence intervals come without another evaluation; NULL when the curve never had a finite
     evaluation; and sst: the curve's total sum of squares about its mean, R^2's denominator, summed
     exactly as the driver's DF(r2) sums it (four interleaved partial sums, then the squares about
     the mean), or NaN when not asked for (problem.sst 0) or weighted (the driver sums it). */
#define LUMEN_LMV_DECLARE(T, G, P)                                                                 \
  typedef struct P##_problem {                                                                     \
    lumen_model model;                                                                             \
    const G *grid;                /* the plan's grid (shared by every curve) */                    \
    const T *w;                   /* n weights or NULL */                                          \
    const double *lo, *hi;        /* np bounds */                                                  \
    const unsigned char *fixed;   /* np flags or NULL */                                           \
    double tol;                                                                                    \
    int max_iterations;                                                                            \
    int linear_start;             /* 1: compute the linear starts on vectors (see start()) */      \
    int geodesic;                 /* 1: geodesic acceleration (as lumen_lm_problem.geodesic) */    \
    int sst;                      /* 1: hand R^2's denominator to done() (else NaN) */             \
    int check_samples;            /* 1: drop curves with a NaN/Inf sample or none but zeros      \
                                     (start() gets ls_ret -2) */                                   \
  } P##_problem;                                                                                   \
  typedef struct P##_io {                                                                          \
    void *user;                                                                                    \
    int (*next)(void *user, int ticket, T *y, T *consts);                                          \
    int (*start)(void *user, int ticket, const T *y, const T *ls, int ls_ret, T *p);              \
    void (*done)(void *user, int ticket, const T *y, lumen_fit_state state, const T *p,           \
                 double chi2, int iterations, const double *A, double sst);                        \
  } P##_io;

LUMEN_LMV_DECLARE(float, lumen_grid_f32, lumen_lmv)
LUMEN_LMV_DECLARE(double, lumen_grid_f64, lumen_lmvd)

/* Lanes of the vector path on this CPU within the context's limit (lumen_ctx_cpu_simd; float: 16,
   8; double: 8, 4), or 0 when there is none (then use the scalar solver). */
int lumen_lmv_width(lumen_cpu_simd limit);
int lumen_lmvd_width(lumen_cpu_simd limit);
/* 1 when model m on grid g can take the float (lmv) or double (lmvd) vector path. */
int lumen_lmv_supported(lumen_model m, const lumen_grid_f32 *g);
int lumen_lmvd_supported(lumen_model m, const lumen_grid_f64 *g);
/* Bytes of workspace the run functions need (one per thread) at the given lane width. */
size_t lumen_lmv_work_bytes(int width, int n, int np);
size_t lumen_lmvd_work_bytes(int width, int n, int np);
/* Fits curves from io until next() returns 0 on every lane, width lanes at a time (a width from
   lumen_lmv_width / lumen_lmvd_width). work: the work_bytes above. */
void lumen_lmv_run(int width, const lumen_lmv_problem *pr, const lumen_lmv_io *io, void *work);
void lumen_lmvd_run(int width, const lumen_lmvd_problem *pr, const lumen_lmvd_io *io, void *work);

/* The instantiations behind the dispatch (src/cpu/lm_simd_avx2*.c, lm_simd_avx512*.c). */
size_t lumen_lmv_work_bytes_v8(int n, int np);
void lumen_lmv_run_v8(const lumen_lmv_problem *pr, const lumen_lmv_io *io, void *work);
size_t lumen_lmv_work_bytes_v16(int n, int np);
void lumen_lmv_run_v16(const lumen_lmv_problem *pr, const lumen_lmv_io *io, void *work);
size_t lumen_lmvd_work_bytes_d4(int n, int np);
void lumen_lmvd_run_d4(const lumen_lmvd_problem *pr, const lumen_lmvd_io *io, void *work);
size_t lumen_lmvd_work_bytes_d8(int n, int np);
void lumen_lmvd_run_d8(const lumen_lmvd_problem *pr, const lumen_lmvd_io *io, void *work);

#endif
