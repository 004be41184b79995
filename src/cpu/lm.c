/* Instantiates the accelerated Levenberg-Marquardt solver (src/solver/lm_impl.inc) for float and
   double; the CUDA kernels (src/cuda/fit_lm.cu) compile the same file per model. */
#include <math.h>
#include "solver/lm.h"

#define ST float
#define SF(name) name##_f32
#include "solver/lm_impl.inc"
#undef ST
#undef SF

#define ST double
#define SF(name) name##_f64
#include "solver/lm_impl.inc"
#undef ST
#undef SF
