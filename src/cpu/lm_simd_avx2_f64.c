/* Lane-batched LM (lm_simd_impl.inc) in double precision for AVX2 + FMA: 4 double lanes. Only this
   file's functions use these instructions; lm_simd.c calls them after checking the CPU. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "cpu/lm_simd.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#pragma GCC target("avx2,fma")
#define LV_W 4
#define VN(name) name##_d4
#define LV_DOUBLE 1
#define LV_BYTES_FN lumen_lmvd_work_bytes_d4
#define LV_RUN_FN lumen_lmvd_run_d4
#include "cpu/lm_simd_impl.inc"
#else
size_t lumen_lmvd_work_bytes_d4(int n, int np) { (void)n; (void)np; return 0; }
void lumen_lmvd_run_d4(const lumen_lmvd_problem *pr, const lumen_lmvd_io *io, void *work) {
  (void)pr; (void)io; (void)work;
}
#endif
