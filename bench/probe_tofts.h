/* The scalar probe of issue 20: a plain C Tofts fit written here as a speed reference for
   bench_fit (never used by the library). One curve at a time, double precision, no SIMD, no
   confidence intervals: a linear least-squares start (Murase's integral form), then a bounded
   Levenberg-Marquardt on (Ktrans, ve) with the model as the trapezoid recursion of the
   convolution on a uniform grid (one exp per model evaluation). */
#ifndef LUMEN_BENCH_PROBE_TOFTS_H
#define LUMEN_BENCH_PROBE_TOFTS_H
#include <stdint.h>

/* Fits `curves` curves of n samples (row-major, float) taken every dt minutes with plasma AIF cp;
   writes ktrans[c] and ve[c] (NaN when the fit fails) with `threads` OpenMP threads. */
void probe_tofts_fit(int n, double dt, const double *cp, int64_t curves, const float *data, int threads,
                     double *ktrans, double *ve);

#endif
