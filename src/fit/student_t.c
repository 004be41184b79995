/* The 97.5 % quantile of Student's t (confidence intervals of the fit parameters); its own file so
   that plan.c and the CUDA problem setup (fit_cuda.c) both use it without depending on each other. */
#include <math.h>
#include "fit/fit_internal.h"

double lumen_fit_t975(int dof) {
  static const double table[31] = {NAN,    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646,
                                   2.3060, 2.2622,  2.2281, 2.2010, 2.1788, 2.1604, 2.1448, 2.1314,
                                   2.1199, 2.1098,  2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687,
                                   2.0639, 2.0595,  2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (dof < 1) return NAN;
  if (dof <= 30) return table[dof];
  /* Cornish-Fisher expansion around the normal quantile (error < 1e-5 for dof > 30) */
  const double z = 1.959963984540054, v = (double)dof;
  const double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2;
  return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * v * v * v) +
         (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * v * v * v * v);
}
