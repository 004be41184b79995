/* 2CXM's grid start (issue 43): Ct = a G(K+) + b G(K-), G(K) = exp(-K t) convolved with the
   AIF, is linear in (a, b) for given (K+, K-). The plan precomputes G on a log grid of K and
   their inner products; a curve's start is the grid pair whose 2x2 least-squares (a, b >= 0)
   fits best, refined by a parabola in log K each way, mapped back to (E, ve, vp, Fp).
   Not the default start: it cuts 2CXM's iterations by a third but, scalar per curve, costs more
   than it saves (docs/BENCHMARKS.md); test builds run it with LUMEN_TEST_CXM_GRID_START=1
   (src/fit/plan.c). The default start refines Flouri's by variable projection instead
   (src/models/model_2cxm_vp.inc), which needs no grid. */
#ifndef LUMEN_FIT_CXM_GRID_H
#define LUMEN_FIT_CXM_GRID_H

#include "models/models_f64.h"

typedef struct lumen_cxm_grid lumen_cxm_grid;

/* The grid's convolutions and their (weighted: w may be NULL) inner products on g. NULL when out
   of memory or g has no AIF. */
lumen_cxm_grid *lumen_cxm_grid_create(const lumen_grid_f64 *g, const double *w);
void lumen_cxm_grid_destroy(lumen_cxm_grid *cg);

/* The start for the curve y (n samples of cg's grid), fit parameters p = (E, ve, vp, Fp),
   unclipped. Returns 0, or 1 when no pair has both amplitudes positive (p untouched). */
int lumen_cxm_grid_start(const lumen_cxm_grid *cg, const double *y, double *p);

/* The map (K+, K-, a, b) -> (E, ve, vp, Fp), K+ > K- > 0, a, b > 0 (MODELS.md's 2CXM:
   Ct = Fp [(1 - A) G(K+) + A G(K-)], so Fp = a + b, A = b / Fp). Exposed for the unit test. */
void lumen_cxm_from_exponentials(double kp, double km, double a, double b, double *p);

#endif
