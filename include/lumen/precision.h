/* lumen: element types and float32 <-> float16 / bfloat16 conversion. */
#ifndef LUMEN_PRECISION_H
#define LUMEN_PRECISION_H
#include "lumen/export.h"

#include <stddef.h>
#include <stdint.h>
#include "lumen/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Storage precision of floating-point work. Arithmetic always accumulates in float32. */
typedef enum lumen_precision {
  LUMEN_PRECISION_FULL = 0,  /* float32 */
  LUMEN_PRECISION_HALF,      /* IEEE binary16, stored as uint16 bit patterns on the host */
  LUMEN_PRECISION_BFLOAT16,  /* bfloat16, stored as uint16 bit patterns on the host */
  LUMEN_PRECISION_COUNT
} lumen_precision;

/* Element type of an image: the precisions above plus what files hold. */
typedef enum lumen_dtype {
  LUMEN_DTYPE_FLOAT32 = 0,
  LUMEN_DTYPE_FLOAT16,
  LUMEN_DTYPE_BFLOAT16,
  LUMEN_DTYPE_FLOAT64,
  LUMEN_DTYPE_UINT8,
  LUMEN_DTYPE_INT8,
  LUMEN_DTYPE_UINT16,
  LUMEN_DTYPE_INT16,
  LUMEN_DTYPE_UINT32,
  LUMEN_DTYPE_INT32,
  LUMEN_DTYPE_UINT64,
  LUMEN_DTYPE_INT64,
  LUMEN_DTYPE_COUNT
} lumen_dtype;

/* Bytes per element; 0 for an unknown value. */
LUMEN_API size_t lumen_dtype_size(lumen_dtype dtype);
/* "float32", "float16", "bfloat16", "uint8", ...; "unknown" for an unknown value. */
LUMEN_API const char *lumen_dtype_name(lumen_dtype dtype);
/* Parses a dtype name as printed by lumen_dtype_name. Returns LUMEN_ERR_INVALID_ARGUMENT if unknown. */
LUMEN_API lumen_status lumen_dtype_parse(const char *name, lumen_dtype *out);
/* "full", "half", "bfloat16"; "unknown" otherwise. */
LUMEN_API const char *lumen_precision_name(lumen_precision precision);
LUMEN_API lumen_status lumen_precision_parse(const char *name, lumen_precision *out);
/* The storage dtype of a precision (FULL -> FLOAT32, ...). */
LUMEN_API lumen_dtype lumen_precision_dtype(lumen_precision precision);

/* Scalar conversions: round to nearest, ties to even; NaN stays NaN (sign and the top
   payload bits kept, quieted), +-Inf stays +-Inf, overflow goes to +-Inf, subnormals exact. */
LUMEN_API uint16_t lumen_float_to_half(float value);
LUMEN_API float    lumen_half_to_float(uint16_t bits);
LUMEN_API uint16_t lumen_float_to_bfloat16(float value);
LUMEN_API float    lumen_bfloat16_to_float(uint16_t bits);

/* Array conversions (same rounding as the scalar ones), vectorised where the CPU allows
   (chosen at run time). in and out must not overlap. count may be 0. */
LUMEN_API lumen_status lumen_convert_f32_to_f16(const float *in, uint16_t *out, int64_t count);
LUMEN_API lumen_status lumen_convert_f16_to_f32(const uint16_t *in, float *out, int64_t count);
LUMEN_API lumen_status lumen_convert_f32_to_bf16(const float *in, uint16_t *out, int64_t count);
LUMEN_API lumen_status lumen_convert_bf16_to_f32(const uint16_t *in, float *out, int64_t count);

/* Name of the conversion path in use ("f16c+avx2", "scalar", ...), for reports. */
LUMEN_API const char *lumen_convert_path_name(void);

#ifdef __cplusplus
}
#endif
#endif
