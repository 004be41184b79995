/* Tests of lumen's dtypes and float32 <-> float16 / bfloat16 conversions.
 *
 * Every conversion is checked against references built here from the definitions of the
 * formats, not from the functions under test:
 *  - half and bfloat16 values are computed with ldexp from sign, exponent and mantissa;
 *  - float -> half / bfloat16 rounding is a search for the nearest representable value in the
 *    exhaustive table of non-negative values (in double, where every value and every midpoint
 *    is exact), with ties going to the even bit pattern and the first value past the largest
 *    finite one standing for Inf (so that IEEE's overflow threshold follows from the same rule);
 *  - NaNs must come out as NaN with their sign, their top payload bits and the quiet bit set.
 * The array (vectorised) conversions must give the same bits as the scalar ones.
 * Set LUMEN_TEST_EXHAUSTIVE=1 to also check all 2^32 float inputs (tens of seconds).
 */
#include "test_support.h"

#include <fenv.h>
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_X86_CPUID 1
#include <cpuid.h>
#else
#define HAVE_X86_CPUID 0
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ helpers */

/* The bits of a float and back (a union member read is the C11 way to reinterpret them). */
typedef union {
  float f;
  uint32_t u;
} float_word;
static uint32_t f2u(float f) { return (float_word){.f = f}.u; }
static float u2f(uint32_t u) { return (float_word){.u = u}.f; }

static uint64_t splitmix_state;
static uint64_t splitmix(void) { return lumen_test_splitmix64(&splitmix_state); }

/* Value of a non-negative half pattern 0x0000 .. 0x7C00 from the definition; 0x7C00 gives
   65536, the value the next binade would start with, which stands for "overflow to Inf". */
static double half_value(uint32_t h) {
  const int e = (int)(h >> 10);
  const int m = (int)(h & 0x3FF);
  if (e == 0) return ldexp((double)m, -24);
  return ldexp((double)(1024 + m), e - 25);
}

/* Same for bfloat16 patterns 0x0000 .. 0x7F80 (0x7F80 gives 2^128). */
static double bf16_value(uint32_t b) {
  const int e = (int)(b >> 7);
  const int m = (int)(b & 0x7F);
  if (e == 0) return ldexp((double)m, -133);
  return ldexp((double)(128 + m), e - 134);
}

#define HALF_LAST 0x7C00u
#define BF16_LAST 0x7F80u
static double half_table[HALF_LAST + 1];
static double bf16_table[BF16_LAST + 1];

static void build_tables(void) {
  static int built = 0;
  if (built) return;
  for (uint32_t h = 0; h <= HALF_LAST; ++h) half_table[h] = half_value(h);
  for (uint32_t b = 0; b <= BF16_LAST; ++b) bf16_table[b] = bf16_value(b);
  built = 1;
}

/* Index of the table value nearest to x >= 0, ties to the even index; last = overflow. */
static uint32_t nearest_even(const double *table, uint32_t last, double x) {
  if (x >= table[last]) return last;
  uint32_t lo = 0, hi = last;  /* table[lo] <= x < table[hi] */
  while (hi - lo > 1) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (table[mid] <= x) lo = mid; else hi = mid;
  }
  const double midpoint = (table[lo] + table[hi]) / 2;  /* exact in double */
  if (x < midpoint) return lo;
  if (x > midpoint) return hi;
  return (lo & 1u) ? hi : lo;
}

/* A 16-bit format as the references see it: its value table (overflow index last), the value of
   a pattern from the definition, its Inf pattern, and its NaN payload (quiet bit, payload mask,
   the shift between float's mantissa and its own). */
typedef struct ref_format {
  const double *table;
  uint32_t last;
  double (*value)(uint32_t pattern);
  uint32_t inf, quiet, payload;
  int shift;
} ref_format;
static const ref_format half_format = {half_table, HALF_LAST, half_value, 0x7C00u, 0x0200u, 0x1FFu, 13};
static const ref_format bf16_format = {bf16_table, BF16_LAST, bf16_value, 0x7F80u, 0x0040u, 0x3Fu, 16};

static uint16_t ref_from_f32(const ref_format *f, uint32_t u) {
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return (uint16_t)(sign | f->inf | f->quiet | ((a >> f->shift) & f->payload));
  if (a == 0x7F800000u) return (uint16_t)(sign | f->inf);
  return (uint16_t)(sign | nearest_even(f->table, f->last, (double)u2f(a)));
}
static uint16_t ref_f32_to_f16(uint32_t u) { return ref_from_f32(&half_format, u); }
static uint16_t ref_f32_to_bf16(uint32_t u) { return ref_from_f32(&bf16_format, u); }

/* Expected float bits of a half / bfloat16 pattern, from the definition (every value of either
   format is a float exactly). */
static uint32_t ref_to_f32(const ref_format *f, uint16_t h) {
  const uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  const uint32_t a = h & 0x7FFFu;
  if (a > f->inf) return sign | 0x7F800000u | 0x00400000u | ((a & f->payload) << f->shift);
  if (a == f->inf) return sign | 0x7F800000u;
  return sign | f2u((float)f->value(a));
}
static uint32_t ref_f16_to_f32(uint16_t h) { return ref_to_f32(&half_format, h); }
static uint32_t ref_bf16_to_f32(uint16_t b) { return ref_to_f32(&bf16_format, b); }

/* ------------------------------------------------------------------ the test inputs */

typedef struct { uint32_t *v; size_t n, cap; } u32_list;

static void push(u32_list *l, uint32_t u) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 4096;
    l->v = realloc(l->v, l->cap * sizeof *l->v);
    assert_non_null(l->v);
  }
  l->v[l->n++] = u;
}

static void push_around(u32_list *l, uint32_t u, uint32_t radius) {
  for (uint32_t d = 0; d <= radius; ++d) {
    push(l, u + d);
    if (d) push(l, u - d);
  }
}

/* Specials, every half and bfloat16 value and midpoint (+-2 ulp, both signs), denormals,
   NaN payloads and several million pseudo-random patterns. Built once, deterministic. */
static u32_list float_inputs;

static const uint32_t special_inputs[] = {
  0x00000000u, 0x80000000u,                         /* +-0 */
  0x7F800000u, 0xFF800000u,                         /* +-Inf */
  0x7F7FFFFFu, 0xFF7FFFFFu,                         /* +-FLT_MAX */
  0x00000001u, 0x80000001u, 0x007FFFFFu, 0x807FFFFFu, 0x00800000u, 0x00400000u,
  0x00008000u, 0x00018000u, 0x00017FFFu, 0x00008001u, /* float subnormal bf16 ties */
  0x477FE000u,                                      /* 65504 */
  0x477FEFFFu,                                      /* 65519.99 */
  0x477FF000u, 0xC77FF000u,                         /* +-65520: first value that overflows */
  0x47800000u,                                      /* 65536 */
  0x38800000u, 0x387FFFFFu, 0x387FE000u, 0x387FF000u, /* around the smallest normal half */
  0x33800000u, 0x33000000u, 0x33000001u, 0x32FFFFFFu, /* around the smallest subnormal half */
  0x33C00000u, 0x34200000u,                         /* 1.5 and 2.5 x 2^-24: ties */
  0x3F808000u, 0x3F818000u, 0x3F808001u, 0x3F817FFFu, /* bf16 ties around 1.0 */
  0x3F800000u, 0xBF800000u, 0x3F801000u, 0x3F803000u, 0x3F802000u, 0x3F806000u,
  0x7F800001u, 0xFF800001u, 0x7FC00000u, 0xFFC00000u, 0x7FFFFFFFu, 0xFFFFFFFFu,
  0x7FA00000u, 0x7F802000u, 0x7F801FFFu, 0x7F810000u, 0x7F80FFFFu, 0x7FBFFFFFu,
  0x7F7F8000u, 0x7F7F7FFFu, 0x7F7EFFFFu,           /* bf16 overflow boundary */
};

/* Every value of format f's table with the given sign, and every midpoint between neighbours
   (exact as a float), each with the floats around it. */
static void push_table_values(u32_list *l, uint32_t sign, const ref_format *f) {
  for (uint32_t h = 0; h < f->last; ++h) {
    const float value = (float)f->table[h];
    const float midpoint = (float)((f->table[h] + f->table[h + 1]) / 2);
    assert_true((double)midpoint == (f->table[h] + f->table[h + 1]) / 2);
    push_around(l, sign | f2u(value), 1);
    push_around(l, sign | f2u(midpoint), 2);
  }
}

static void build_inputs(void) {
  if (float_inputs.n) return;
  build_tables();
  u32_list *l = &float_inputs;
  for (size_t i = 0; i < sizeof special_inputs / sizeof special_inputs[0]; ++i) {
    push(l, special_inputs[i]);
  }
  for (uint32_t s = 0; s < 2; ++s) {
    const uint32_t sign = s << 31;
    push_table_values(l, sign, &half_format);
    push_table_values(l, sign, &bf16_format);
  }
  splitmix_state = 0x1234567887654321ull;
  for (int i = 0; i < 3000000; ++i) push(l, (uint32_t)splitmix());  /* any pattern */
  for (int i = 0; i < 1000000; ++i) {                /* exponents where half is interesting */
    const uint64_t r = splitmix();
    const uint32_t e = 100u + (uint32_t)(r % 46u);   /* 2^-27 .. 2^18 */
    push(l, ((uint32_t)(r >> 32) & 0x807FFFFFu) | (e << 23));
  }
  for (int i = 0; i < 200000; ++i) {                 /* float subnormals */
    push(l, (uint32_t)splitmix() & 0x807FFFFFu);
  }
  for (int i = 0; i < 50000; ++i) {                  /* NaNs with payloads */
    const uint32_t payload = (uint32_t)splitmix() & 0x807FFFFFu;
    push(l, 0x7F800000u | (payload ? payload : 1u));
  }
}

/* ------------------------------------------------------------------------ dtypes */

static void test_dtype_names_sizes(void **state) {
  (void)state;
  static const struct { lumen_dtype dtype; const char *name; size_t size; } expected[] = {
    {LUMEN_DTYPE_FLOAT32, "float32", 4}, {LUMEN_DTYPE_FLOAT16, "float16", 2},
    {LUMEN_DTYPE_BFLOAT16, "bfloat16", 2}, {LUMEN_DTYPE_FLOAT64, "float64", 8},
    {LUMEN_DTYPE_UINT8, "uint8", 1}, {LUMEN_DTYPE_INT8, "int8", 1},
    {LUMEN_DTYPE_UINT16, "uint16", 2}, {LUMEN_DTYPE_INT16, "int16", 2},
    {LUMEN_DTYPE_UINT32, "uint32", 4}, {LUMEN_DTYPE_INT32, "int32", 4},
    {LUMEN_DTYPE_UINT64, "uint64", 8}, {LUMEN_DTYPE_INT64, "int64", 8},
  };
  assert_int_equal(sizeof expected / sizeof expected[0], LUMEN_DTYPE_COUNT);
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; ++i) {
    assert_string_equal(lumen_dtype_name(expected[i].dtype), expected[i].name);
    assert_int_equal(lumen_dtype_size(expected[i].dtype), expected[i].size);
    lumen_dtype parsed = LUMEN_DTYPE_COUNT;
    assert_int_equal(lumen_dtype_parse(expected[i].name, &parsed), LUMEN_OK);
    assert_int_equal(parsed, expected[i].dtype);
  }
  assert_string_equal(lumen_dtype_name(LUMEN_DTYPE_COUNT), "unknown");
  assert_string_equal(lumen_dtype_name((lumen_dtype)-1), "unknown");
  assert_string_equal(lumen_dtype_name((lumen_dtype)1000), "unknown");
  assert_int_equal(lumen_dtype_size(LUMEN_DTYPE_COUNT), 0);
  assert_int_equal(lumen_dtype_size((lumen_dtype)-1), 0);
}

static void test_dtype_parse_errors(void **state) {
  (void)state;
  static const char *const bad[] = {"", "float", "Float32", "float32 ", " float32", "fp16",
                                    "half", "int", "uint128", "unknown", "float3"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    lumen_dtype parsed = LUMEN_DTYPE_INT64;
    assert_int_equal(lumen_dtype_parse(bad[i], &parsed), LUMEN_ERR_INVALID_ARGUMENT);
    assert_int_equal(parsed, LUMEN_DTYPE_INT64);  /* untouched on failure */
  }
  lumen_dtype parsed;
  assert_int_equal(lumen_dtype_parse(NULL, &parsed), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_dtype_parse("float32", NULL), LUMEN_ERR_INVALID_ARGUMENT);
}

static void test_precision_names(void **state) {
  (void)state;
  assert_string_equal(lumen_precision_name(LUMEN_PRECISION_FULL), "full");
  assert_string_equal(lumen_precision_name(LUMEN_PRECISION_HALF), "half");
  assert_string_equal(lumen_precision_name(LUMEN_PRECISION_BFLOAT16), "bfloat16");
  assert_string_equal(lumen_precision_name(LUMEN_PRECISION_COUNT), "unknown");
  assert_string_equal(lumen_precision_name((lumen_precision)-3), "unknown");

  static const struct { const char *name; lumen_precision precision; } good[] = {
    {"full", LUMEN_PRECISION_FULL}, {"float32", LUMEN_PRECISION_FULL},
    {"fp32", LUMEN_PRECISION_FULL}, {"half", LUMEN_PRECISION_HALF},
    {"float16", LUMEN_PRECISION_HALF}, {"fp16", LUMEN_PRECISION_HALF},
    {"bfloat16", LUMEN_PRECISION_BFLOAT16}, {"bf16", LUMEN_PRECISION_BFLOAT16},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; ++i) {
    lumen_precision p = LUMEN_PRECISION_COUNT;
    assert_int_equal(lumen_precision_parse(good[i].name, &p), LUMEN_OK);
    assert_int_equal(p, good[i].precision);
  }
  for (int i = 0; i < (int)LUMEN_PRECISION_COUNT; ++i) {  /* names parse back */
    lumen_precision p = LUMEN_PRECISION_COUNT;
    assert_int_equal(lumen_precision_parse(lumen_precision_name((lumen_precision)i), &p),
                     LUMEN_OK);
    assert_int_equal(p, i);
  }
  static const char *const bad[] = {"", "double", "float64", "Full", "fp8", "unknown", "bf"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    lumen_precision p = LUMEN_PRECISION_HALF;
    assert_int_equal(lumen_precision_parse(bad[i], &p), LUMEN_ERR_INVALID_ARGUMENT);
    assert_int_equal(p, LUMEN_PRECISION_HALF);
  }
  lumen_precision p;
  assert_int_equal(lumen_precision_parse(NULL, &p), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_precision_parse("full", NULL), LUMEN_ERR_INVALID_ARGUMENT);

  assert_int_equal(lumen_precision_dtype(LUMEN_PRECISION_FULL), LUMEN_DTYPE_FLOAT32);
  assert_int_equal(lumen_precision_dtype(LUMEN_PRECISION_HALF), LUMEN_DTYPE_FLOAT16);
  assert_int_equal(lumen_precision_dtype(LUMEN_PRECISION_BFLOAT16), LUMEN_DTYPE_BFLOAT16);
  assert_int_equal(lumen_dtype_size(lumen_precision_dtype(LUMEN_PRECISION_HALF)), 2);
  assert_int_equal(lumen_dtype_size(lumen_precision_dtype(LUMEN_PRECISION_COUNT)), 0);
}

/* ------------------------------------------------------------------------- half */

/* Every 16-bit pattern of format f: to_float gives the reference's float bits, and from_float of
   that float gives the pattern back (a NaN quieted: its quiet bit set). */
static void check_all_patterns(const ref_format *f, float (*to_float)(uint16_t), uint16_t (*from_float)(float),
                               const char *kind) {
  const uint32_t mantissa = 2 * f->quiet - 1;
  long bad = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint32_t got = f2u(to_float((uint16_t)h));
    const uint32_t want = ref_to_f32(f, (uint16_t)h);
    const int is_nan = (h & f->inf) == f->inf && (h & mantissa) != 0;
    const uint16_t back = from_float(u2f(got));
    const uint16_t back_want = is_nan ? (uint16_t)(h | f->quiet) : (uint16_t)h;
    if (got != want || back != back_want) {
      if (bad++ < 10) print_error("%s 0x%04x -> float 0x%08x (expected 0x%08x) -> 0x%04x\n", kind, h, got, want, back);
    }
  }
  assert_int_equal(bad, 0);
}

static void test_half_all_patterns(void **state) {
  (void)state;
  check_all_patterns(&half_format, lumen_half_to_float, lumen_float_to_half, "half");
  /* a few values written out, as a check on the reference itself */
  assert_true(lumen_half_to_float(0x3C00) == 1.0f);
  assert_true(lumen_half_to_float(0xC000) == -2.0f);
  assert_true(lumen_half_to_float(0x7BFF) == 65504.0f);
  assert_true(lumen_half_to_float(0x0001) == ldexpf(1.0f, -24));
  assert_true(lumen_half_to_float(0x03FF) == ldexpf(1023.0f, -24));
  assert_true(lumen_half_to_float(0x0400) == ldexpf(1.0f, -14));
  assert_true(lumen_half_to_float(0x3555) == 0.333251953125f);
  assert_int_equal(f2u(lumen_half_to_float(0x8000)), 0x80000000u);
  assert_true(isinf(lumen_half_to_float(0xFC00)) && lumen_half_to_float(0xFC00) < 0);
  assert_true(isnan(lumen_half_to_float(0x7C01)));
}

/* Every float of the test inputs rounds to the 16-bit pattern the reference gives. */
static void check_rounding(uint16_t (*convert)(float), uint16_t (*reference)(uint32_t), const char *kind) {
  build_inputs();
  long bad = 0;
  for (size_t i = 0; i < float_inputs.n; ++i) {
    const uint32_t u = float_inputs.v[i];
    const uint16_t got = convert(u2f(u));
    const uint16_t want = reference(u);
    if (got != want) {
      if (bad++ < 10) print_error("float 0x%08x (%.9g) -> %s 0x%04x, expected 0x%04x\n",
                                  u, (double)u2f(u), kind, got, want);
    }
  }
  assert_int_equal(bad, 0);
}

static void test_float_to_half_rounding(void **state) {
  (void)state;
  check_rounding(lumen_float_to_half, ref_f32_to_f16, "half");
  /* written-out values, as a check on the reference itself */
  assert_int_equal(lumen_float_to_half(1.0f), 0x3C00);
  assert_int_equal(lumen_float_to_half(-0.0f), 0x8000);
  assert_int_equal(lumen_float_to_half(65504.0f), 0x7BFF);
  assert_int_equal(lumen_float_to_half(65519.99f), 0x7BFF);
  assert_int_equal(lumen_float_to_half(nextafterf(65520.0f, 0.0f)), 0x7BFF);
  assert_int_equal(lumen_float_to_half(65520.0f), 0x7C00);
  assert_int_equal(lumen_float_to_half(-65520.0f), 0xFC00);
  assert_int_equal(lumen_float_to_half(1e10f), 0x7C00);
  assert_int_equal(lumen_float_to_half(INFINITY), 0x7C00);
  assert_int_equal(lumen_float_to_half(-INFINITY), 0xFC00);
  assert_int_equal(lumen_float_to_half(1.0f + ldexpf(1.0f, -11)), 0x3C00);        /* tie, even */
  assert_int_equal(lumen_float_to_half(1.0f + 3 * ldexpf(1.0f, -11)), 0x3C02);    /* tie, even */
  assert_int_equal(lumen_float_to_half(ldexpf(1.0f, -25)), 0x0000);               /* tie, even */
  assert_int_equal(lumen_float_to_half(ldexpf(3.0f, -25)), 0x0002);               /* tie, even */
  assert_int_equal(lumen_float_to_half(nextafterf(ldexpf(1.0f, -25), 1.0f)), 0x0001);
  assert_int_equal(lumen_float_to_half(ldexpf(1.0f, -149)), 0x0000);
  assert_int_equal(lumen_float_to_half(-ldexpf(1.0f, -149)), 0x8000);
  assert_int_equal(lumen_float_to_half(ldexpf(2047.0f, -25)), 0x0400);  /* subnormal -> normal */
  assert_int_equal(lumen_float_to_half(0.1f), 0x2E66);
  assert_int_equal(lumen_float_to_half(u2f(0x7F800001u)), 0x7E00);  /* sNaN stays NaN */
  assert_int_equal(lumen_float_to_half(u2f(0xFFC00000u)), 0xFE00);
  assert_int_equal(lumen_float_to_half(u2f(0x7F802000u)), 0x7E01);
}

/* ---------------------------------------------------------------------- bfloat16 */

static void test_bf16_all_patterns(void **state) {
  (void)state;
  check_all_patterns(&bf16_format, lumen_bfloat16_to_float, lumen_float_to_bfloat16, "bf16");
  assert_true(lumen_bfloat16_to_float(0x3F80) == 1.0f);
  assert_true(lumen_bfloat16_to_float(0xC040) == -3.0f);
  assert_true(lumen_bfloat16_to_float(0x0001) == ldexpf(1.0f, -133));
}

static void test_float_to_bf16_rounding(void **state) {
  (void)state;
  check_rounding(lumen_float_to_bfloat16, ref_f32_to_bf16, "bf16");
  assert_int_equal(lumen_float_to_bfloat16(u2f(0x3F808000u)), 0x3F80);  /* tie, even */
  assert_int_equal(lumen_float_to_bfloat16(u2f(0x3F818000u)), 0x3F82);  /* tie, even */
  assert_int_equal(lumen_float_to_bfloat16(u2f(0x3F808001u)), 0x3F81);
  assert_int_equal(lumen_float_to_bfloat16(u2f(0xBF818000u)), 0xBF82);
  assert_int_equal(lumen_float_to_bfloat16(u2f(0x7F7FFFFFu)), 0x7F80);  /* FLT_MAX -> Inf */
  assert_int_equal(lumen_float_to_bfloat16(u2f(0x7F7F7FFFu)), 0x7F7F);
  assert_int_equal(lumen_float_to_bfloat16(u2f(0x00018000u)), 0x0002);  /* subnormal tie */
  assert_int_equal(lumen_float_to_bfloat16(u2f(0x00008000u)), 0x0000);
  assert_int_equal(lumen_float_to_bfloat16(u2f(0x007FFFFFu)), 0x0080);  /* -> smallest normal */
  assert_int_equal(lumen_float_to_bfloat16(-0.0f), 0x8000);
  assert_int_equal(lumen_float_to_bfloat16(-INFINITY), 0xFF80);
  assert_int_equal(lumen_float_to_bfloat16(u2f(0x7F800001u)), 0x7FC0);  /* sNaN stays NaN */
  assert_int_equal(lumen_float_to_bfloat16(u2f(0xFF810000u)), 0xFFC1);
}

/* ------------------------------------------------------------------ array versions */

static const int64_t array_lengths[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 31, 32, 33, 1000003};

/* Converts in[offset .. offset+len) with the array function; compares with the scalar one
   and checks that nothing past out[len) was written. */
static long check_f32_to_16(const float *in, int64_t len, int bf16) {
  uint16_t *out = malloc(((size_t)len + 8) * sizeof *out);
  assert_non_null(out);
  for (int64_t i = 0; i < len + 8; ++i) out[i] = 0xA5A5u;
  const lumen_status s = bf16 ? lumen_convert_f32_to_bf16(in, out, len)
                              : lumen_convert_f32_to_f16(in, out, len);
  assert_int_equal(s, LUMEN_OK);
  long bad = 0;
  for (int64_t i = 0; i < len; ++i) {
    const uint16_t want = bf16 ? lumen_float_to_bfloat16(in[i]) : lumen_float_to_half(in[i]);
    if (out[i] != want) {
      if (bad++ < 10) print_error("%s array[%lld] of %lld: 0x%08x -> 0x%04x, scalar 0x%04x\n",
                                  bf16 ? "bf16" : "f16", (long long)i, (long long)len,
                                  f2u(in[i]), out[i], want);
    }
  }
  for (int64_t i = len; i < len + 8; ++i) {
    if (out[i] != 0xA5A5u) bad++;
  }
  free(out);
  return bad;
}

static long check_16_to_f32(const uint16_t *in, int64_t len, int bf16) {
  uint32_t *out = malloc(((size_t)len + 8) * sizeof *out);
  assert_non_null(out);
  for (int64_t i = 0; i < len + 8; ++i) out[i] = 0xA5A5A5A5u;
  float *fout = malloc(((size_t)len + 8) * sizeof *fout);
  assert_non_null(fout);
  memcpy(fout, out, ((size_t)len + 8) * sizeof *out);
  const lumen_status s = bf16 ? lumen_convert_bf16_to_f32(in, fout, len)
                              : lumen_convert_f16_to_f32(in, fout, len);
  assert_int_equal(s, LUMEN_OK);
  memcpy(out, fout, ((size_t)len + 8) * sizeof *out);
  long bad = 0;
  for (int64_t i = 0; i < len; ++i) {
    const uint32_t want = bf16 ? ref_bf16_to_f32(in[i]) : ref_f16_to_f32(in[i]);
    const uint32_t scalar = f2u(bf16 ? lumen_bfloat16_to_float(in[i]) : lumen_half_to_float(in[i]));
    if (out[i] != want || out[i] != scalar) {
      if (bad++ < 10) print_error("%s array[%lld]: 0x%04x -> 0x%08x, scalar 0x%08x, ref 0x%08x\n",
                                  bf16 ? "bf16" : "f16", (long long)i, in[i], out[i], scalar, want);
    }
  }
  for (int64_t i = len; i < len + 8; ++i) {
    if (out[i] != 0xA5A5A5A5u) bad++;
  }
  free(fout);
  free(out);
  return bad;
}

static float *inputs_as_floats(void) {
  build_inputs();
  float *f = malloc(float_inputs.n * sizeof *f);
  assert_non_null(f);
  memcpy(f, float_inputs.v, float_inputs.n * sizeof *f);  /* bits, NaN payloads included */
  return f;
}

static void test_array_f32_to_16_matches_scalar(void **state) {
  (void)state;
  float *in = inputs_as_floats();
  const int64_t n = (int64_t)float_inputs.n;
  for (int bf16 = 0; bf16 < 2; ++bf16) {
    assert_int_equal(check_f32_to_16(in, n, bf16), 0);  /* everything */
    for (size_t k = 0; k < sizeof array_lengths / sizeof array_lengths[0]; ++k) {
      for (int64_t offset = 0; offset < 4; ++offset) {  /* unaligned starts too */
        /* slices from the start (specials), the middle (midpoints) and the end (NaNs) */
        const int64_t len = array_lengths[k];
        assert_int_equal(check_f32_to_16(in + offset, len, bf16), 0);
        assert_int_equal(check_f32_to_16(in + 400000 + offset, len, bf16), 0);
        assert_int_equal(check_f32_to_16(in + n - len - offset, len, bf16), 0);
      }
    }
  }
  free(in);
}

static void test_array_16_to_f32_matches_scalar(void **state) {
  (void)state;
  build_tables();
  uint16_t *in = malloc((65536 + 1000003 + 8) * sizeof *in);
  assert_non_null(in);
  for (uint32_t i = 0; i < 65536; ++i) in[i] = (uint16_t)i;
  splitmix_state = 42;
  for (uint32_t i = 65536; i < 65536 + 1000003 + 8; ++i) in[i] = (uint16_t)splitmix();
  for (int bf16 = 0; bf16 < 2; ++bf16) {
    assert_int_equal(check_16_to_f32(in, 65536 + 1000003 + 8, bf16), 0);
    for (size_t k = 0; k < sizeof array_lengths / sizeof array_lengths[0]; ++k) {
      for (int64_t offset = 0; offset < 4; ++offset) {
        const int64_t len = array_lengths[k];
        assert_int_equal(check_16_to_f32(in + offset, len, bf16), 0);
        assert_int_equal(check_16_to_f32(in + 0x7BF0 + offset, len, bf16), 0);  /* NaN, Inf */
        assert_int_equal(check_16_to_f32(in + 0xFBF0 + offset, len, bf16), 0);
      }
    }
  }
  free(in);
}

/* The results must not depend on the floating-point rounding mode. */
static void test_rounding_mode_independent(void **state) {
  (void)state;
  build_inputs();
  const size_t n = 200000;
  float *in = malloc(n * sizeof *in);
  uint16_t *h = malloc(n * sizeof *h), *b = malloc(n * sizeof *b), *tmp = malloc(n * sizeof *tmp);
  assert_true(in && h && b && tmp);
  /* a mix of midpoints (near the start) and random patterns (the end) */
  memcpy(in, float_inputs.v, n / 2 * sizeof *in);
  memcpy(in + n / 2, float_inputs.v + float_inputs.n - n / 2 - 60000, n / 2 * sizeof *in);
  for (size_t i = 0; i < n; ++i) {
    h[i] = ref_f32_to_f16(f2u(in[i]));
    b[i] = ref_f32_to_bf16(f2u(in[i]));
  }
  static const int modes[] = {
#ifdef FE_UPWARD
    FE_UPWARD,
#endif
#ifdef FE_DOWNWARD
    FE_DOWNWARD,
#endif
#ifdef FE_TOWARDZERO
    FE_TOWARDZERO,
#endif
    FE_TONEAREST};
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; ++m) {
    assert_int_equal(fesetround(modes[m]), 0);
    long bad = 0;
    if (lumen_convert_f32_to_f16(in, tmp, (int64_t)n) != LUMEN_OK) bad++;
    for (size_t i = 0; i < n; ++i) bad += tmp[i] != h[i];
    if (lumen_convert_f32_to_bf16(in, tmp, (int64_t)n) != LUMEN_OK) bad++;
    for (size_t i = 0; i < n; ++i) bad += tmp[i] != b[i];
    for (size_t i = 0; i < n; ++i) {
      bad += lumen_float_to_half(in[i]) != h[i];
      bad += lumen_float_to_bfloat16(in[i]) != b[i];
    }
    fesetround(FE_TONEAREST);
    if (bad) print_error("rounding mode %d: %ld differences\n", modes[m], bad);
    assert_int_equal(bad, 0);
  }
  free(in);
  free(h);
  free(b);
  free(tmp);
}

static void test_array_bad_arguments(void **state) {
  (void)state;
  float f[4] = {1, 2, 3, 4};
  uint16_t u[4] = {0, 0, 0, 0};
  assert_int_equal(lumen_convert_f32_to_f16(NULL, u, 4), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_convert_f32_to_f16(f, NULL, 4), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_convert_f32_to_f16(f, u, -1), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_convert_f32_to_f16(NULL, NULL, -1), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_convert_f32_to_f16(NULL, NULL, 0), LUMEN_OK);
  assert_int_equal(lumen_convert_f32_to_bf16(NULL, u, 4), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_convert_f32_to_bf16(f, NULL, 4), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_convert_f32_to_bf16(f, u, INT64_MIN), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_convert_f32_to_bf16(NULL, NULL, 0), LUMEN_OK);
  assert_int_equal(lumen_convert_f16_to_f32(NULL, f, 4), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_convert_f16_to_f32(u, NULL, 4), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_convert_f16_to_f32(u, f, -5), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_convert_f16_to_f32(NULL, NULL, 0), LUMEN_OK);
  assert_int_equal(lumen_convert_bf16_to_f32(NULL, f, 4), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_convert_bf16_to_f32(u, NULL, 4), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_convert_bf16_to_f32(u, f, -1), LUMEN_ERR_INVALID_ARGUMENT);
  assert_int_equal(lumen_convert_bf16_to_f32(NULL, NULL, 0), LUMEN_OK);
  /* nothing was written by the failed calls */
  for (int i = 0; i < 4; ++i) {
    assert_true(f[i] == (float)(i + 1));
    assert_int_equal(u[i], 0);
  }
  /* count 0 with valid pointers writes nothing */
  assert_int_equal(lumen_convert_f16_to_f32(u, f, 0), LUMEN_OK);
  assert_true(f[0] == 1.0f);
}

static void test_path_name(void **state) {
  (void)state;
  const char *path = lumen_convert_path_name();
  assert_non_null(path);
  assert_true(strcmp(path, "avx2+f16c") == 0 || strcmp(path, "scalar") == 0);
  assert_string_equal(lumen_convert_path_name(), path);  /* chosen once */
#if HAVE_X86_CPUID
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) &&
      (ecx & (1u << 29)) != 0) {
    assert_string_equal(path, "avx2+f16c");  /* the vector path is the one tested here */
  }
#endif
  print_message("conversion path: %s\n", path);
}

/* Opt-in: every float bit pattern through the scalar and array conversions, against the
   reference. The reference walks the sorted tables alongside the increasing inputs. */
static void test_exhaustive_all_floats(void **state) {
  (void)state;
  const char *env = getenv("LUMEN_TEST_EXHAUSTIVE");
  if (!env || strcmp(env, "1") != 0) {
    print_message("set LUMEN_TEST_EXHAUSTIVE=1 to check all 2^32 floats\n");
    skip();
  }
  build_tables();
  enum { CHUNK = 1 << 20 };
  float *in = malloc(CHUNK * sizeof *in);
  uint16_t *h = malloc(CHUNK * sizeof *h), *b = malloc(CHUNK * sizeof *b);
  assert_true(in && h && b);
  long bad = 0;
  for (uint32_t sign = 0; sign < 2; ++sign) {
    uint32_t hi = 0, bi = 0;  /* table[hi] <= |x| < table[hi + 1] */
    for (uint64_t start = 0; start < 0x80000000ull; start += CHUNK) {
      for (uint32_t k = 0; k < CHUNK; ++k) {
        const uint32_t u = (sign << 31) | (uint32_t)(start + k);
        memcpy(in + k, &u, sizeof u);
      }
      assert_int_equal(lumen_convert_f32_to_f16(in, h, CHUNK), LUMEN_OK);
      assert_int_equal(lumen_convert_f32_to_bf16(in, b, CHUNK), LUMEN_OK);
      for (uint32_t k = 0; k < CHUNK; ++k) {
        const uint32_t a = (uint32_t)(start + k);
        const uint32_t u = (sign << 31) | a;
        uint16_t want_h, want_b;
        if (a >= 0x7F800000u) {
          want_h = ref_f32_to_f16(u);
          want_b = ref_f32_to_bf16(u);
        } else {
          const double x = (double)u2f(a);
          while (hi < HALF_LAST && half_table[hi + 1] <= x) ++hi;
          while (bi < BF16_LAST && bf16_table[bi + 1] <= x) ++bi;
          uint32_t rh = hi, rb = bi;
          if (hi < HALF_LAST) {
            const double mid = (half_table[hi] + half_table[hi + 1]) / 2;
            if (x > mid || (x == mid && (hi & 1u))) rh = hi + 1;
          }
          if (bi < BF16_LAST) {
            const double mid = (bf16_table[bi] + bf16_table[bi + 1]) / 2;
            if (x > mid || (x == mid && (bi & 1u))) rb = bi + 1;
          }
          want_h = (uint16_t)(((u >> 16) & 0x8000u) | rh);
          want_b = (uint16_t)(((u >> 16) & 0x8000u) | rb);
        }
        const uint16_t sh = lumen_float_to_half(in[k]), sb = lumen_float_to_bfloat16(in[k]);
        if (h[k] != want_h || sh != want_h || b[k] != want_b || sb != want_b) {
          if (bad++ < 10) {
            print_error("0x%08x: half array 0x%04x scalar 0x%04x ref 0x%04x; "
                        "bf16 array 0x%04x scalar 0x%04x ref 0x%04x\n",
                        u, h[k], sh, want_h, b[k], sb, want_b);
          }
        }
      }
    }
  }
  free(in);
  free(h);
  free(b);
  assert_int_equal(bad, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_dtype_names_sizes),
    cmocka_unit_test(test_dtype_parse_errors),
    cmocka_unit_test(test_precision_names),
    cmocka_unit_test(test_half_all_patterns),
    cmocka_unit_test(test_float_to_half_rounding),
    cmocka_unit_test(test_bf16_all_patterns),
    cmocka_unit_test(test_float_to_bf16_rounding),
    cmocka_unit_test(test_array_f32_to_16_matches_scalar),
    cmocka_unit_test(test_array_16_to_f32_matches_scalar),
    cmocka_unit_test(test_rounding_mode_independent),
    cmocka_unit_test(test_array_bad_arguments),
    cmocka_unit_test(test_path_name),
    cmocka_unit_test(test_exhaustive_all_floats),
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  free(float_inputs.v);
  return failed;
}
