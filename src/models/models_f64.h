/* Model math instantiated for double: lumen_grid_f64, lumen_model_eval_f64, ... (see model.h). */
#ifndef LUMEN_MODELS_F64_H
#define LUMEN_MODELS_F64_H
#include <math.h>
#include "models/model.h"

#define LT double
#define LF(name) name##_f64
#define LT_EXP exp
#define LT_EXPM1 expm1
#define LT_LOG log
#define LT_SQRT sqrt
#define LT_FABS fabs
#define LT_SIN sin
#define LT_COS cos
#define LT_FMAX fmax
#define LT_FMIN fmin
#define LT_EPS 2.220446049250313e-16
#define LT_PIVOT_TOL 1e-13
#define LT_UNIFORM_RTOL 1e-9
#include "models/model_impl.inc"
#include "models/model_undef.inc"
#endif
