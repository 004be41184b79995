/* LUMEN_HD marks model functions that compile both as C (static inline) and as CUDA
   (__host__ __device__), so the CPU and GPU solvers share one copy of every formula. */
#ifndef LUMEN_MODELS_HD_H
#define LUMEN_MODELS_HD_H
#ifdef __CUDACC__
#define LUMEN_HD static inline __host__ __device__
#else
#define LUMEN_HD static inline
#endif
#endif
