/* Stage A's float arithmetic (conc_f32.h): one kernel (conc_f32_impl.inc) at 1, 4, 8 and 16 lanes. */
#include "pipeline/conc_f32.h"
#include "core/internal.h"
#include <math.h>

#define CF_W 1
#define CF_N(x) x##_w1
#define CF_TARGET
#include "pipeline/conc_f32_impl.inc"
#undef CF_W
#undef CF_N
#undef CF_TARGET
/* 4 lanes in the baseline instruction set (SSE2 on x86-64, NEON on AArch64): level 0's rows */
#define CF_W 4
#define CF_N(x) x##_w4
#define CF_TARGET
#include "pipeline/conc_f32_impl.inc"
#undef CF_W
#undef CF_N
#undef CF_TARGET

#if defined(__GNUC__) && defined(__x86_64__)
#define CONC_F32_X86 1
#define CF_W 8
#define CF_N(x) x##_w8
#define CF_TARGET __attribute__((target("avx2")))
#include "pipeline/conc_f32_impl.inc"
#undef CF_W
#undef CF_N
#undef CF_TARGET
#define CF_W 16
#define CF_N(x) x##_w16
#define CF_TARGET __attribute__((target("avx512f")))
#include "pipeline/conc_f32_impl.inc"
#undef CF_W
#undef CF_N
#undef CF_TARGET
#else
#define CONC_F32_X86 0
#endif

int pipe_conc_level(lumen_cpu_simd limit) {
#if CONC_F32_X86
  return lumen_cpu_vector_level(limit);
#else
  (void)limit;
  return 0;
#endif
}

const char *pipe_conc_name(int level) {
  return level >= 2   ? "lumen float32 log1p, AVX-512 (16 lanes)"
         : level == 1 ? "lumen float32 log1p, AVX2 (8 lanes)"
                      : "lumen float32 log1p, 4 lanes (baseline vectors)";
}

void pipe_conc_spgr_row(int level, int64_t n, const float *s, const float *a, const float *ca, const float *om,
                        const float *c0, float k, float *out, const float *pf) {
  int64_t j = 0;
#if CONC_F32_X86
  if (level >= 2) j = row_w16(n, s, a, ca, om, c0, k, out, pf);
  else if (level == 1) j = row_w8(n, s, a, ca, om, c0, k, out, pf);
  else j = row_w4(n, s, a, ca, om, c0, k, out, pf);
#else
  (void)level;
  j = row_w4(n, s, a, ca, om, c0, k, out, pf);
#endif
  row_w1(n - j, s + j, a + j, ca + j, om + j, c0 + j, k, out + j, pf ? pf + j : NULL);
}

float pipe_conc_spgr_one(float s, float a, float ca, float om, float c0, float k) {
  const vf_w1 c = conc_w1((vf_w1){s}, (vf_w1){a}, (vf_w1){ca}, (vf_w1){om}, (vf_w1){c0}, k);
  return c[0];
}
