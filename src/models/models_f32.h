/* Model math instantiated for float: lumen_grid_f32, lumen_model_eval_f32, ... (see model.h). */
#ifndef LUMEN_MODELS_F32_H
#define LUMEN_MODELS_F32_H
#include <math.h>
#include "models/model.h"

#define LT float
#define LF(name) name##_f32
#define LT_EXP expf
#define LT_EXPM1 expm1f
#define LT_LOG logf
#define LT_SQRT sqrtf
#define LT_FABS fabsf
#define LT_SIN sinf
#define LT_COS cosf
#define LT_FMAX fmaxf
#define LT_FMIN fminf
#define LT_EPS 1.1920929e-7f
#define LT_PIVOT_TOL 1e-6f    /* smallest Cholesky pivot of a unit-diagonal normal matrix */
#define LT_UNIFORM_RTOL 1e-3f /* timing deviation, in steps, below which a grid counts as uniform */
#include "models/model_impl.inc"
#include "models/model_undef.inc"
#endif
