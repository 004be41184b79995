/* Lane-batched LM (lm_simd_impl.inc) in double precision for AVX2 + FMA: 4 double lanes. Only this
   file's functions use these instructions; lm_simd.c calls them after checking the CPU. */
#define LV_TARGET "avx2,fma"
#define LV_W 4
#define VN(name) name##_d4
#define LV_DOUBLE 1
#define LV_BYTES_FN lumen_lmvd_work_bytes_d4
#define LV_RUN_FN lumen_lmvd_run_d4
#include "cpu/lm_simd_target.inc"
