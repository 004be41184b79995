/* The Patlak row sums (patlak_rows.h): generic builds and, on x86 with GCC or clang, AVX2 and
   AVX-512 builds chosen at run time (portable binaries: no -march needed); each for float and
   double samples. */
#include "cpu/patlak_rows.h"
#include <string.h>

typedef double vd2 __attribute__((vector_size(2 * sizeof(double))));
#define PR_W 2
#define PR_ATTR
#define PR_VD vd2
#define PR_IN float
#define PR(name) name##_f32_generic
#include "cpu/patlak_rows_impl.inc"
#undef PR
#undef PR_IN
#define PR_IN double
#define PR(name) name##_f64_generic
#include "cpu/patlak_rows_impl.inc"
#undef PR
#undef PR_IN
#undef PR_VD
#undef PR_ATTR
#undef PR_W

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define PR_X86 1
typedef double vd4 __attribute__((vector_size(4 * sizeof(double))));
typedef double vd8 __attribute__((vector_size(8 * sizeof(double))));
#define PR_W 4
#define PR_ATTR __attribute__((target("avx2,fma")))
#define PR_VD vd4
#define PR_IN float
#define PR(name) name##_f32_avx2
#include "cpu/patlak_rows_impl.inc"
#undef PR
#undef PR_IN
#define PR_IN double
#define PR(name) name##_f64_avx2
#include "cpu/patlak_rows_impl.inc"
#undef PR
#undef PR_IN
#undef PR_VD
#undef PR_ATTR
#undef PR_W

#define PR_W 8
#define PR_ATTR __attribute__((target("avx512f,avx2,fma")))
#define PR_VD vd8
#define PR_IN float
#define PR(name) name##_f32_avx512
#include "cpu/patlak_rows_impl.inc"
#undef PR
#undef PR_IN
#define PR_IN double
#define PR(name) name##_f64_avx512
#include "cpu/patlak_rows_impl.inc"
#undef PR
#undef PR_IN
#undef PR_VD
#undef PR_ATTR
#undef PR_W
#else
#define PR_X86 0
#endif

/* Calls NAME's build for the level and the sample type with the arguments that follow. */
#if PR_X86
#define PR_DISPATCH(NAME, T, ...)                                                                \
  do {                                                                                           \
    if (level >= 2) NAME##_##T##_avx512(__VA_ARGS__);                                            \
    else if (level == 1) NAME##_##T##_avx2(__VA_ARGS__);                                         \
    else NAME##_##T##_generic(__VA_ARGS__);                                                      \
  } while (0)
#else
#define PR_DISPATCH(NAME, T, ...) NAME##_##T##_generic(__VA_ARGS__)
#endif

void lumen_patlak_row_rhs(int level, int n, const void *y, int y_f64, const double *w, const double *wa,
                          const double *wb, double out[4]) {
  (void)level;
  if (y_f64) PR_DISPATCH(rhs, f64, n, (const double *)y, w, wa, wb, out);
  else PR_DISPATCH(rhs, f32, n, (const float *)y, w, wa, wb, out);
}

void lumen_patlak_row_resid(int level, int n, const void *y, int y_f64, const double *w, const double *a,
                            const double *b, double k, double v, double ybar, double out[2]) {
  (void)level;
  if (y_f64) PR_DISPATCH(resid, f64, n, (const double *)y, w, a, b, k, v, ybar, out);
  else PR_DISPATCH(resid, f32, n, (const float *)y, w, a, b, k, v, ybar, out);
}
