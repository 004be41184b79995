// The batched LM kernels of src/cuda/fit_lm.cu as src/cuda/fit_host.cu launches them.
#ifndef LUMEN_CUDA_FIT_KERNEL_CUH
#define LUMEN_CUDA_FIT_KERNEL_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include "fit/fit_cuda.h"
#include "models/models_f32.h"
#include "models/models_f64.h"

struct lumen_fitk_args {
  lumen_fitcu_problem pb;    // by value; its host pointers are not used on the device
  lumen_grid_f32 g32;        // scalars of the shared grid (pointers replaced on the device)
  lumen_grid_f64 g64;
  const void *gridmem;       // device: T t[n], dt[n], cp[n], icp[n], w[n] (T = solver type), then double w64[n]
  int smem_grid;             // 1: the T arrays are staged in shared memory
  const void *data;          // count x n curves, float or double (data_f64)
  int data_f64;
  const void *consts;        // count x LUMEN_FIT_NCONSTS, same type, or NULL
  lumen_fitcu_row *rows;     // count results
  int64_t count;
  void *work;                // per resident thread: work_per_thread solver elements
  int64_t work_per_thread;
};

// Solver elements of one thread's workspace: y, f, ft, J, Jt and the geodesic evaluation fv.
static inline int64_t lumen_fitk_work_elems(int n, int np) { return (int64_t)n * (4 + 2 * (int64_t)(np > 0 ? np : 1)) + 16; }
// Bytes of the grid block on the device.
static inline size_t lumen_fitk_grid_bytes(int n, int f64) {
  return (size_t)n * 5 * (f64 ? sizeof(double) : sizeof(float)) + 16 + (size_t)n * sizeof(double);
}
// 1 when the model has a CUDA kernel.
int lumen_fitk_built(int model);
// The kernel of (model, precision) and its occupancy at `block` threads with smem bytes of shared memory.
cudaError_t lumen_fitk_occupancy(int model, int f64, int block, size_t smem, int *blocks_per_sm);
cudaError_t lumen_fitk_launch(const lumen_fitk_args *a, int blocks, int block, size_t smem, cudaStream_t stream);

#endif
