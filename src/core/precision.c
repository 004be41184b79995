/* lumen: element types, and float32 <-> IEEE binary16 / bfloat16 conversion.
 *
 * Scalar conversions work on bit patterns with unsigned integer arithmetic only, so their
 * results do not depend on the floating-point environment (rounding mode, FTZ/DAZ) or on the
 * CPU. The array conversions use AVX2 + F16C on x86 when the CPU has them (chosen once at run
 * time) and the scalar code otherwise and for the tails. Both paths give the same bits for every
 * input, NaNs included: a NaN keeps its sign and its top payload bits and comes out quiet
 * (which is what F16C's VCVTPS2PH / VCVTPH2PS do, and what the scalar code does too).
 */
#include "lumen/precision.h"

#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define LUMEN_PRECISION_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define LUMEN_PRECISION_X86 0
#endif

#if !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>
#define LUMEN_PRECISION_ATOMIC 1
#else
#define LUMEN_PRECISION_ATOMIC 0
#endif

/* ------------------------------------------------------------------------------ dtypes */

static const char *const dtype_names[LUMEN_DTYPE_COUNT] = {
  [LUMEN_DTYPE_FLOAT32] = "float32",  [LUMEN_DTYPE_FLOAT16] = "float16",
  [LUMEN_DTYPE_BFLOAT16] = "bfloat16", [LUMEN_DTYPE_FLOAT64] = "float64",
  [LUMEN_DTYPE_UINT8] = "uint8",      [LUMEN_DTYPE_INT8] = "int8",
  [LUMEN_DTYPE_UINT16] = "uint16",    [LUMEN_DTYPE_INT16] = "int16",
  [LUMEN_DTYPE_UINT32] = "uint32",    [LUMEN_DTYPE_INT32] = "int32",
  [LUMEN_DTYPE_UINT64] = "uint64",    [LUMEN_DTYPE_INT64] = "int64",
};

static const unsigned char dtype_sizes[LUMEN_DTYPE_COUNT] = {
  [LUMEN_DTYPE_FLOAT32] = 4, [LUMEN_DTYPE_FLOAT16] = 2, [LUMEN_DTYPE_BFLOAT16] = 2,
  [LUMEN_DTYPE_FLOAT64] = 8, [LUMEN_DTYPE_UINT8] = 1,   [LUMEN_DTYPE_INT8] = 1,
  [LUMEN_DTYPE_UINT16] = 2,  [LUMEN_DTYPE_INT16] = 2,   [LUMEN_DTYPE_UINT32] = 4,
  [LUMEN_DTYPE_INT32] = 4,   [LUMEN_DTYPE_UINT64] = 8,  [LUMEN_DTYPE_INT64] = 8,
};

/* An enum argument may hold any int; compare as int so that negative values are rejected too. */
static int dtype_valid(lumen_dtype dtype) {
  return (int)dtype >= 0 && (int)dtype < (int)LUMEN_DTYPE_COUNT;
}

static int precision_valid(lumen_precision precision) {
  return (int)precision >= 0 && (int)precision < (int)LUMEN_PRECISION_COUNT;
}

size_t lumen_dtype_size(lumen_dtype dtype) {
  return dtype_valid(dtype) ? (size_t)dtype_sizes[dtype] : 0;
}

const char *lumen_dtype_name(lumen_dtype dtype) {
  return dtype_valid(dtype) ? dtype_names[dtype] : "unknown";
}

lumen_status lumen_dtype_parse(const char *name, lumen_dtype *out) {
  if (name == NULL || out == NULL) return LUMEN_ERR_INVALID_ARGUMENT;
  for (int i = 0; i < (int)LUMEN_DTYPE_COUNT; ++i) {
    if (strcmp(name, dtype_names[i]) == 0) {
      *out = (lumen_dtype)i;
      return LUMEN_OK;
    }
  }
  return LUMEN_ERR_INVALID_ARGUMENT;
}

static const char *const precision_names[LUMEN_PRECISION_COUNT] = {
  [LUMEN_PRECISION_FULL] = "full",
  [LUMEN_PRECISION_HALF] = "half",
  [LUMEN_PRECISION_BFLOAT16] = "bfloat16",
};

const char *lumen_precision_name(lumen_precision precision) {
  return precision_valid(precision) ? precision_names[precision] : "unknown";
}

lumen_status lumen_precision_parse(const char *name, lumen_precision *out) {
  static const struct { const char *name; lumen_precision precision; } names[] = {
    {"full", LUMEN_PRECISION_FULL},     {"float32", LUMEN_PRECISION_FULL},
    {"fp32", LUMEN_PRECISION_FULL},     {"half", LUMEN_PRECISION_HALF},
    {"float16", LUMEN_PRECISION_HALF},  {"fp16", LUMEN_PRECISION_HALF},
    {"bfloat16", LUMEN_PRECISION_BFLOAT16}, {"bf16", LUMEN_PRECISION_BFLOAT16},
  };
  if (name == NULL || out == NULL) return LUMEN_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    if (strcmp(name, names[i].name) == 0) {
      *out = names[i].precision;
      return LUMEN_OK;
    }
  }
  return LUMEN_ERR_INVALID_ARGUMENT;
}

lumen_dtype lumen_precision_dtype(lumen_precision precision) {
  switch (precision) {
    case LUMEN_PRECISION_FULL: return LUMEN_DTYPE_FLOAT32;
    case LUMEN_PRECISION_HALF: return LUMEN_DTYPE_FLOAT16;
    case LUMEN_PRECISION_BFLOAT16: return LUMEN_DTYPE_BFLOAT16;
    default: return LUMEN_DTYPE_COUNT;  /* not a dtype: size 0, name "unknown" */
  }
}

/* ------------------------------------------------------------------ scalar conversion */

static uint32_t float_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

static float bits_float(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

static uint16_t f32_bits_to_f16(uint32_t f) {
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t a = f & 0x7FFFFFFFu;
  if (a > 0x7F800000u) {                       /* NaN: quiet, top 9 payload bits kept */
    return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  }
  if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);  /* |x| >= 65520 (and Inf) */
  if (a >= 0x38800000u) {                      /* |x| >= 2^-14: normal half */
    const uint32_t m = a - 0x38000000u;        /* rebias the exponent: 127 - 15 = 112 */
    return (uint16_t)(sign | ((m + 0x0FFFu + ((m >> 13) & 1u)) >> 13));
  }
  if (a <= 0x33000000u) return (uint16_t)sign; /* |x| <= 2^-25: rounds (ties to even) to 0 */
  {                                            /* subnormal half: round(M * 2^(e - 126)) */
    const uint32_t e = a >> 23;                /* 102 .. 112 */
    const uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126u - e;           /* 14 .. 24 */
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (q & 1u))) ++q;  /* may carry into 0x0400: fine */
    return (uint16_t)(sign | q);
  }
}

static uint32_t f16_to_f32_bits(uint16_t h) {
  const uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  const uint32_t e = ((uint32_t)h >> 10) & 0x1Fu;
  uint32_t m = (uint32_t)h & 0x3FFu;
  if (e == 0x1Fu) {
    if (m == 0) return sign | 0x7F800000u;              /* Inf */
    return sign | 0x7FC00000u | (m << 13);              /* NaN, quieted */
  }
  if (e == 0) {
    if (m == 0) return sign;                            /* +-0 */
    /* subnormal, m * 2^-24: were bit 10 set, this would be 1.f * 2^-14; shift m until its
       leading bit reaches bit 10 (the implicit bit), one exponent lower per shift */
    uint32_t biased = 113u;                             /* biased exponent of 2^-14 */
    while ((m & 0x400u) == 0) {
      m <<= 1;
      --biased;
    }
    return sign | (biased << 23) | ((m & 0x3FFu) << 13);
  }
  return sign | ((e + 112u) << 23) | (m << 13);
}

static uint16_t f32_bits_to_bf16(uint32_t f) {
  if ((f & 0x7FFFFFFFu) > 0x7F800000u) {               /* NaN: quiet, top payload kept */
    return (uint16_t)((f >> 16) | 0x0040u);
  }
  /* Round to nearest even on the bit pattern; overflow carries into the exponent and gives
     Inf; float subnormals round like any other value (no flush). Cannot wrap: the largest
     finite magnitude plus 0x8000 stays below the sign bit / below 2^32. */
  return (uint16_t)((f + 0x7FFFu + ((f >> 16) & 1u)) >> 16);
}

static uint32_t bf16_to_f32_bits(uint16_t b) {
  uint32_t f = (uint32_t)b << 16;
  if ((f & 0x7FFFFFFFu) > 0x7F800000u) f |= 0x00400000u; /* NaN, quieted */
  return f;
}

uint16_t lumen_float_to_half(float value) { return f32_bits_to_f16(float_bits(value)); }
float lumen_half_to_float(uint16_t bits) { return bits_float(f16_to_f32_bits(bits)); }
uint16_t lumen_float_to_bfloat16(float value) { return f32_bits_to_bf16(float_bits(value)); }
float lumen_bfloat16_to_float(uint16_t bits) { return bits_float(bf16_to_f32_bits(bits)); }

/* Array forms of the scalar code (also the tails of the vector code). Elements are copied
   through memcpy so that a float holding a signalling NaN is never loaded into an FP register
   (on i386 an x87 load would quiet it). */
static inline void from_f32_scalar(const float *in, uint16_t *out, size_t n, uint16_t (*convert)(uint32_t)) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t f;
    memcpy(&f, in + i, sizeof f);
    out[i] = convert(f);
  }
}

static inline void to_f32_scalar(const uint16_t *in, float *out, size_t n, uint32_t (*convert)(uint16_t)) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t f = convert(in[i]);
    memcpy(out + i, &f, sizeof f);
  }
}

static void f32_to_f16_scalar(const float *in, uint16_t *out, size_t n) { from_f32_scalar(in, out, n, f32_bits_to_f16); }
static void f16_to_f32_scalar(const uint16_t *in, float *out, size_t n) { to_f32_scalar(in, out, n, f16_to_f32_bits); }
static void f32_to_bf16_scalar(const float *in, uint16_t *out, size_t n) { from_f32_scalar(in, out, n, f32_bits_to_bf16); }
static void bf16_to_f32_scalar(const uint16_t *in, float *out, size_t n) { to_f32_scalar(in, out, n, bf16_to_f32_bits); }

/* ------------------------------------------------------------------ AVX2 + F16C path */

#if LUMEN_PRECISION_X86
#define LUMEN_AVX2 __attribute__((target("avx2,f16c")))

LUMEN_AVX2 static void f32_to_f16_avx2(const float *in, uint16_t *out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_loadu_ps(in + i);
    const __m256 b = _mm256_loadu_ps(in + i + 8);
    _mm_storeu_si128((__m128i *)(void *)(out + i),
                     _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    _mm_storeu_si128((__m128i *)(void *)(out + i + 8),
                     _mm256_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128((__m128i *)(void *)(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  f32_to_f16_scalar(in + i, out + i, n - i);
}

LUMEN_AVX2 static void f16_to_f32_avx2(const uint16_t *in, float *out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(in + i));
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(in + i + 8));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(a));
    _mm256_storeu_ps(out + i + 8, _mm256_cvtph_ps(b));
  }
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(in + i))));
  }
  f16_to_f32_scalar(in + i, out + i, n - i);
}

/* 8 float bit patterns -> 8 bf16 patterns, each in the low half of a 32-bit lane. */
LUMEN_AVX2 static __m256i bf16_round8(__m256i f) {
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i bias = _mm256_set1_epi32(0x7FFF);
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i inf = _mm256_set1_epi32(0x7F800000);
  const __m256i quiet = _mm256_set1_epi32(0x0040);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(f, 16), one);
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(f, _mm256_add_epi32(bias, lsb)), 16);
  const __m256i nan_bits = _mm256_or_si256(_mm256_srli_epi32(f, 16), quiet);
  /* |f| as int32 is non-negative, so a signed compare finds NaNs */
  const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(f, abs_mask), inf);
  return _mm256_blendv_epi8(rounded, nan_bits, is_nan);
}

LUMEN_AVX2 static void f32_to_bf16_avx2(const float *in, uint16_t *out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = bf16_round8(_mm256_loadu_si256((const __m256i *)(const void *)(in + i)));
    const __m256i b =
        bf16_round8(_mm256_loadu_si256((const __m256i *)(const void *)(in + i + 8)));
    /* values are in [0, 0xFFFF] so unsigned saturation is exact; packus interleaves the
       128-bit lanes (a0-3 b0-3 a4-7 b4-7), the permute puts them back in order */
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8);
    _mm256_storeu_si256((__m256i *)(void *)(out + i), packed);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256i a = bf16_round8(_mm256_loadu_si256((const __m256i *)(const void *)(in + i)));
    const __m128i packed =
        _mm_packus_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    _mm_storeu_si128((__m128i *)(void *)(out + i), packed);
  }
  f32_to_bf16_scalar(in + i, out + i, n - i);
}

LUMEN_AVX2 static __m256i bf16_widen8(__m128i b) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i inf = _mm256_set1_epi32(0x7F800000);
  const __m256i quiet = _mm256_set1_epi32(0x00400000);
  const __m256i f = _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16);
  const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(f, abs_mask), inf);
  return _mm256_or_si256(f, _mm256_and_si256(is_nan, quiet));
}

LUMEN_AVX2 static void bf16_to_f32_avx2(const uint16_t *in, float *out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(in + i));
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(in + i + 8));
    _mm256_storeu_si256((__m256i *)(void *)(out + i), bf16_widen8(a));
    _mm256_storeu_si256((__m256i *)(void *)(out + i + 8), bf16_widen8(b));
  }
  for (; i + 8 <= n; i += 8) {
    const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(in + i));
    _mm256_storeu_si256((__m256i *)(void *)(out + i), bf16_widen8(a));
  }
  bf16_to_f32_scalar(in + i, out + i, n - i);
}
#endif /* LUMEN_PRECISION_X86 */

/* -------------------------------------------------------------------------- dispatch */

enum { PATH_UNKNOWN = 0, PATH_SCALAR = 1, PATH_AVX2_F16C = 2 };

#if LUMEN_PRECISION_ATOMIC
static atomic_int convert_path = PATH_UNKNOWN;
#else
static volatile int convert_path = PATH_UNKNOWN;
#endif

static int detect_path(void) {
#if LUMEN_PRECISION_X86
  /* __builtin_cpu_supports("avx2") also checks that the OS saves the YMM registers; F16C is
     read from CPUID leaf 1 (ECX bit 29) because older clang does not know "f16c" there. */
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) &&
      (ecx & (1u << 29)) != 0) {
    return PATH_AVX2_F16C;
  }
#endif
  return PATH_SCALAR;
}

/* Chosen once; concurrent first calls may each detect, and all store the same value. */
static int current_path(void) {
#if LUMEN_PRECISION_ATOMIC
  int path = atomic_load_explicit(&convert_path, memory_order_relaxed);
  if (path == PATH_UNKNOWN) {
    path = detect_path();
    atomic_store_explicit(&convert_path, path, memory_order_relaxed);
  }
#else
  int path = convert_path;
  if (path == PATH_UNKNOWN) {
    path = detect_path();
    convert_path = path;
  }
#endif
  return path;
}

const char *lumen_convert_path_name(void) {
  return current_path() == PATH_AVX2_F16C ? "avx2+f16c" : "scalar";
}

/* NULL pointers are an error only when there is something to convert. */
static lumen_status check_args(const void *in, const void *out, int64_t count) {
  if (count < 0) return LUMEN_ERR_INVALID_ARGUMENT;
  if (count > 0 && (in == NULL || out == NULL)) return LUMEN_ERR_INVALID_ARGUMENT;
  if ((uint64_t)count > (uint64_t)(SIZE_MAX / sizeof(float))) return LUMEN_ERR_INVALID_ARGUMENT;
  return LUMEN_OK;
}

/* The loop NAME_avx2 where the CPU has AVX2 and F16C, else NAME_scalar, over in, out, count. */
#if LUMEN_PRECISION_X86
#define CONVERT_ON_BEST_PATH(name)      \
  if (current_path() == PATH_AVX2_F16C) \
    name##_avx2(in, out, (size_t)count); \
  else                                  \
    name##_scalar(in, out, (size_t)count)
#else
#define CONVERT_ON_BEST_PATH(name) name##_scalar(in, out, (size_t)count)
#endif

/* lumen_convert_NAME(in, out, count): the arguments checked, then the best loop for this CPU. */
#define DEFINE_CONVERT(name, in_type, out_type)                                         \
  lumen_status lumen_convert_##name(const in_type *in, out_type *out, int64_t count) { \
    const lumen_status status = check_args(in, out, count);                            \
    if (status != LUMEN_OK || count == 0) return status;                                \
    CONVERT_ON_BEST_PATH(name);                                                         \
    return LUMEN_OK;                                                                    \
  }

DEFINE_CONVERT(f32_to_f16, float, uint16_t)
DEFINE_CONVERT(f16_to_f32, uint16_t, float)
DEFINE_CONVERT(f32_to_bf16, float, uint16_t)
DEFINE_CONVERT(bf16_to_f32, uint16_t, float)
