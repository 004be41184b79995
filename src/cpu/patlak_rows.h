/* The per-curve sums of the closed-form Patlak fit (src/fit/execute.c, issue 20): Patlak is linear
   in its parameters, so every curve shares one normal matrix and a fit is two passes over its
   samples. Vectorised over the samples of one curve with the widest instructions allowed; the
   samples are read where they lie (float or double) and summed in double. */
#ifndef LUMEN_CPU_PATLAK_ROWS_H
#define LUMEN_CPU_PATLAK_ROWS_H

/* level: lumen_cpu_vector_level (0 generic, 1 AVX2, 2 AVX-512); y: the curve's n samples, float
   (y_f64 0) or double (y_f64 1); the other arrays hold n doubles.
   out = (sum w y, sum y wa, sum y wb, sum w y^2): the weighted mean's numerator, the right-hand
   side (wa = w icp, wb = w cp; w all ones when unweighted) and y'Wy, which also screens the input
   (not finite and positive: a NaN/Inf or an all-zero curve, or an underflow, for the exact input
   checks; the weights are positive). */
void lumen_patlak_row_rhs(int level, int n, const void *y, int y_f64, const double *w, const double *wa,
                          const double *wb, double out[4]);

/* out = (sum w (y - k a - v b)^2, sum w (y - ybar)^2): chi2 at (k, v) and the total sum of squares. */
void lumen_patlak_row_resid(int level, int n, const void *y, int y_f64, const double *w, const double *a,
                            const double *b, double k, double v, double ybar, double out[2]);

#endif
