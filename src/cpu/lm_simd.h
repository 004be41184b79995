/* lumen's lane-batched accelerated solver: the Levenberg-Marquardt of lm_impl.inc run on W
   curves at once, one curve per SIMD lane (W = 8 float lanes with AVX2, 16 with AVX-512), each
   lane with its own parameters, lambda, iteration count and state; a lane whose curve finished
   is refilled with the next curve at once, so lanes never idle while curves remain. The model
   is evaluated on vectors by instantiating the SAME model code (src/models/model_impl.inc) with
   a GCC vector type. float32 only; the vector path is chosen at run time from the CPU's features
   (portable binaries: no -march needed). Per lane the arithmetic is that of lumen_lm_fit_f32
   (same operations in the same order, sums in double), so results agree with the scalar solver
   to float rounding (bitwise on the tested machines). */
#ifndef LUMEN_CPU_LM_SIMD_H
#define LUMEN_CPU_LM_SIMD_H

#include "cpu/lm.h"

#define LUMEN_LMV_MAX_WIDTH 16

typedef struct lumen_lmv_problem {
  lumen_model model;
  const lumen_grid_f32 *grid;   /* the plan's grid (shared by every curve) */
  const float *w;               /* n weights or NULL */
  const double *lo, *hi;        /* np bounds */
  const unsigned char *fixed;   /* np flags or NULL */
  double tol;
  int max_iterations;
  int linear_start;             /* 1: compute the linear starts on vectors (see start()) */
} lumen_lmv_problem;

/* Curve source and sink, called from the thread running lumen_lmv_run. A curve is known by a
   ticket (0 <= ticket < 2 LUMEN_LMV_MAX_WIDTH) from next() to done():
   next() loads the next curve: n samples into y, LUMEN_NCONSTS values into consts; returns 1, or
     0 when no curve is left.
   start() gives the curve's start (inside the bounds) in p. Curves are loaded W at a time and
     their closed-form linear starts computed on vectors first (Tofts, ETM: Murase; Patlak), with
     the results of lumen_linear_start_f32: ls and its return value ls_ret; ls_ret = -1 when the
     model has no vector linear start (or problem.linear_start is 0): start() computes its own.
   done() hands back the result as lumen_lm_fit_f32 would: state, parameters, chi2 and iterations
     (y still holds the curve). */
typedef struct lumen_lmv_io {
  void *user;
  int (*next)(void *user, int ticket, float *y, float *consts);
  void (*start)(void *user, int ticket, const float *y, const float *ls, int ls_ret, float *p);
  void (*done)(void *user, int ticket, const float *y, lumen_fit_state state, const float *p, double chi2,
               int iterations);
} lumen_lmv_io;

/* Lanes of the vector path on this CPU (16, 8), or 0 when it has none (then use lumen_lm_fit_f32).
   LUMEN_SIMD=off|avx2|avx512 in the environment restricts the choice (tests, benchmarks). */
int lumen_lmv_width(void);
/* 1 when model m on grid g can take the vector path. */
int lumen_lmv_supported(lumen_model m, const lumen_grid_f32 *g);
/* Bytes of workspace lumen_lmv_run needs (one per thread). */
size_t lumen_lmv_work_bytes(int n, int np);
/* Fits curves from io until next() returns 0 on every lane. work: lumen_lmv_work_bytes(n, np). */
void lumen_lmv_run(const lumen_lmv_problem *pr, const lumen_lmv_io *io, void *work);

/* The instantiations behind the dispatch (src/cpu/lm_simd_avx2.c, lm_simd_avx512.c). */
size_t lumen_lmv_work_bytes_v8(int n, int np);
void lumen_lmv_run_v8(const lumen_lmv_problem *pr, const lumen_lmv_io *io, void *work);
size_t lumen_lmv_work_bytes_v16(int n, int np);
void lumen_lmv_run_v16(const lumen_lmv_problem *pr, const lumen_lmv_io *io, void *work);

#endif
