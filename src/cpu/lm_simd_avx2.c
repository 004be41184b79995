/* Lane-batched LM (lm_simd_impl.inc) for AVX2 + FMA: 8 float lanes. Only this file's functions use
   these instructions; lm_simd.c calls them after checking the CPU (portable binaries). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "cpu/lm_simd.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#pragma GCC target("avx2,fma")
#define LV_W 8
#define VN(name) name##_v8
#define LV_DOUBLE 0
#define LV_BYTES_FN lumen_lmv_work_bytes_v8
#define LV_RUN_FN lumen_lmv_run_v8
#include "cpu/lm_simd_impl.inc"
#else
size_t lumen_lmv_work_bytes_v8(int n, int np) { (void)n; (void)np; return 0; }
void lumen_lmv_run_v8(const lumen_lmv_problem *pr, const lumen_lmv_io *io, void *work) {
  (void)pr; (void)io; (void)work;
}
#endif
