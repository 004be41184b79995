/* Run-time choice of the lane-batched solver (lm_simd.h). */
#include "cpu/lm_simd.h"

/* The widest float vector this CPU runs: 16 lanes (AVX-512F with AVX2 and FMA), 8 (AVX2 with FMA)
   or 0. */
static int lmv_width_detect(void) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return 16;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 8;
#endif
  return 0;
}

int lumen_lmv_width(lumen_cpu_simd limit) {
  static int width = -1; /* benign race: every thread computes the same value */
  int w = __atomic_load_n(&width, __ATOMIC_RELAXED);
  if (w < 0) {
    w = lmv_width_detect();
    __atomic_store_n(&width, w, __ATOMIC_RELAXED);
  }
  if (limit == LUMEN_CPU_SIMD_OFF) return 0;
  if (limit == LUMEN_CPU_SIMD_AVX2 && w > 8) return 8; /* 16 lanes imply AVX2 and FMA */
  return w;
}

int lumen_lmvd_width(lumen_cpu_simd limit) { return lumen_lmv_width(limit) / 2; }

/* Which models the lane solvers implement: the LUMEN_MF_LANES_* flags of LUMEN_MODEL_TABLE. */
int lumen_lmvd_supported(lumen_model m, const lumen_grid_f64 *g) {
  (void)g;
  return (lumen_model_flags(m) & LUMEN_MF_LANES_F64) != 0;
}

int lumen_lmv_supported(lumen_model m, const lumen_grid_f32 *g) {
  (void)g;
  return (lumen_model_flags(m) & LUMEN_MF_LANES_F32) != 0;
}

size_t lumen_lmv_work_bytes(int width, int n, int np) {
  switch (width) {
    case 16: return lumen_lmv_work_bytes_v16(n, np);
    case 8: return lumen_lmv_work_bytes_v8(n, np);
    default: return 0;
  }
}

void lumen_lmv_run(int width, const lumen_lmv_problem *pr, const lumen_lmv_io *io, void *work) {
  switch (width) {
    case 16: lumen_lmv_run_v16(pr, io, work); break;
    case 8: lumen_lmv_run_v8(pr, io, work); break;
    default: break;
  }
}

size_t lumen_lmvd_work_bytes(int width, int n, int np) {
  switch (width) {
    case 8: return lumen_lmvd_work_bytes_d8(n, np);
    case 4: return lumen_lmvd_work_bytes_d4(n, np);
    default: return 0;
  }
}

void lumen_lmvd_run(int width, const lumen_lmvd_problem *pr, const lumen_lmvd_io *io, void *work) {
  switch (width) {
    case 8: lumen_lmvd_run_d8(pr, io, work); break;
    case 4: lumen_lmvd_run_d4(pr, io, work); break;
    default: break;
  }
}
