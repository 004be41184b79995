/* Lane-batched LM (lm_simd_impl.inc) for AVX-512F: 16 float lanes. Only this file's functions use
   these instructions; lm_simd.c calls them after checking the CPU (portable binaries). */
#define LV_TARGET "avx512f,avx2,fma"
#define LV_W 16
#define VN(name) name##_v16
#define LV_DOUBLE 0
#define LV_BYTES_FN lumen_lmv_work_bytes_v16
#define LV_RUN_FN lumen_lmv_run_v16
#include "cpu/lm_simd_target.inc"
