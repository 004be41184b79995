/* The CUDA fitting tier: the C interface between src/fit/ and the kernels in src/cuda/fit_*.cu.

   Layering: src/fit/fit_cuda.c owns the host logic that must be testable without a GPU (device
   queue, chunk sizing, halving on allocation failure, giving up to the next tier, the test
   hooks); it drives a device through the lumen_fitcu_ops table. The real table is implemented
   by src/cuda/fit_host.cu (kernels in src/cuda/fit_lm.cu) when CUDA is built, and by
   src/cuda/nocuda/fit_stub.c (no devices) otherwise. A fake table inside fit_cuda.c, switched
   on with lumen_fitcu_test_set_fake(), stands in for GPUs in unit tests. */
#ifndef LUMEN_FIT_FIT_CUDA_H
#define LUMEN_FIT_FIT_CUDA_H

#include <stddef.h>
#include <stdint.h>
#include "lumen/fit.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LUMEN_FITCU_MAX_STARTS 8
#define LUMEN_FITCU_MAX_DEVICES 16
#define LUMEN_FITCU_MIN_CHUNK 32       /* smallest chunk before giving up to the next tier */
#define LUMEN_FITCU_MAX_CHUNK (1 << 20)
#define LUMEN_FITCU_PIPE_MIN (1 << 16)  /* smallest chunk the work is cut into for pipelining */

/* Everything a device needs to fit the curves of one plan (a flat copy of the plan). */
typedef struct lumen_fitcu_problem {
  int model;                 /* lumen_model */
  int n, np;
  int f64;                   /* 1: double arithmetic, 0: float */
  int conv;                  /* LUMEN_CONV_* */
  double tr, r1;
  const double *t, *cp, *w;  /* n each (plan memory); w NULL when unweighted */
  double lo[LUMEN_FIT_MAX_PARAMS], hi[LUMEN_FIT_MAX_PARAMS], start[LUMEN_FIT_MAX_PARAMS];
  unsigned char fixed[LUMEN_FIT_MAX_PARAMS], start_given[LUMEN_FIT_MAX_PARAMS];
  int has_linear_start;
  int n_extra_starts, n_escape_starts;
  double extra_starts[LUMEN_FITCU_MAX_STARTS][LUMEN_FIT_MAX_PARAMS];
  double escape_starts[LUMEN_FITCU_MAX_STARTS][LUMEN_FIT_MAX_PARAMS];
  double tol;
  int max_iterations;
  int want;                  /* 1: confidence intervals, 2: R^2 */
  double t975;               /* Student t quantile for the CI (dof = n - free parameters) */
} lumen_fitcu_problem;

/* One curve's result as a device writes it (fit parameters; CIs of the public parameters). */
typedef struct lumen_fitcu_row {
  double p[LUMEN_FIT_MAX_PARAMS];
  double ci_lo[LUMEN_FIT_MAX_PARAMS], ci_hi[LUMEN_FIT_MAX_PARAMS];
  double chi2, r2;
  int32_t iterations, state;
  int32_t bound_mask;        /* lumen_fit_results.bound_mask */
} lumen_fitcu_row;

/* The input of one execute call: curves list[pos] for pos in [0, count). */
typedef struct lumen_fitcu_input {
  const void *data;          /* n_curves x n, float or double; host or device memory */
  int data_f64;
  const void *consts;        /* n_curves x LUMEN_FIT_NCONSTS or NULL; same type as data */
  const int64_t *list;       /* positions -> curve indices */
  int64_t count;
  /* called from the device's host thread for every finished curve (distinct pos per call) */
  void (*deliver)(void *user, int64_t pos, const lumen_fitcu_row *row);
  /* the fake test device computes a curve with this (the CPU solver, installed by execute.c) */
  void (*cpu_row)(void *user, int64_t pos, lumen_fitcu_row *row);
  void *user;
  int threads;               /* host threads for staging and delivering rows (0 or 1: the device's thread) */
  double *kernel_seconds;    /* out (may be NULL): time the fitting kernels ran, summed over devices */
} lumen_fitcu_input;

/* A device as the chunk loop sees it. Every call returns LUMEN_OK or a status with a reason. */
typedef struct lumen_fitcu_ops {
  /* number of usable devices (0 and a reason when none) */
  int (*device_count)(char *why, size_t why_size);
  /* 1 when device dev can run the problem's model and precision (compute capability, kernel built) */
  int (*supports)(int dev, const lumen_fitcu_problem *pb, char *why, size_t why_size);
  /* opens a device for one run: streams, the shared grid; *free_bytes = free device memory */
  lumen_status (*open)(int dev, const lumen_fitcu_problem *pb, const lumen_fitcu_input *in, void **handle,
                       int64_t *free_bytes, char *why, size_t why_size);
  /* device + pinned bytes per curve of chunk buffers (two slots) and the fixed part */
  void (*bytes)(void *handle, int64_t *per_curve, int64_t *fixed);
  /* (re)allocates buffers for chunks of up to `chunk` curves; LUMEN_ERR_DEVICE_OUT_OF_MEMORY on failure */
  lumen_status (*alloc)(void *handle, int64_t chunk, char *why, size_t why_size);
  /* starts positions [first, first + count) on slot (0 or 1): staging, copies, kernel, copy back */
  lumen_status (*submit)(void *handle, int slot, int64_t first, int64_t count, char *why, size_t why_size);
  /* waits for slot and delivers its rows */
  lumen_status (*finish)(void *handle, int slot, char *why, size_t why_size);
  /* seconds the device ran this handle's kernels so far (overlapping kernels counted once) */
  double (*kernel_seconds)(void *handle);
  void (*close)(void *handle);
} lumen_fitcu_ops;

/* The real devices (src/cuda/fit_host.cu, or the stub without CUDA). */
const lumen_fitcu_ops *lumen_fitcu_real_ops(void);
/* 1 when data is a pointer into CUDA device memory (0 without CUDA). */
int lumen_fitcu_is_device_ptr(const void *p);
/* Copies bytes from device memory to host memory (synchronous). */
lumen_status lumen_fitcu_copy_to_host(void *dst, const void *src, size_t bytes);

/* Host-side work of a chunk, shared by the real and the fake devices; parallel over in->threads
   (OpenMP) so that one device's host thread keeps up with the GPU (a 256x256x32x80 volume is
   0.67 GB of float32 curves and 2.1 million result rows). */
/* Copies the curves (and constants, when cdst) at positions [first, first + count) into contiguous
   rows of dst (row bytes each) and cdst (crow bytes each). */
void lumen_fitcu_gather(const lumen_fitcu_input *in, int64_t first, int64_t count, void *dst, size_t row,
                        void *cdst, size_t crow);
/* Delivers rows[0..count) as positions first.. (in->deliver is safe for distinct positions). */
void lumen_fitcu_deliver(const lumen_fitcu_input *in, int64_t first, int64_t count, const lumen_fitcu_row *rows);

/* ---- used by src/fit (fit_cuda.c) */
/* Fills pb from a plan (want: 1 = CIs, 2 = R^2). */
void lumen_fitcu_problem_from_plan(const lumen_fit_plan *pl, int want, lumen_fitcu_problem *pb);
/* Whether the cuda tier can run the model (1) or why not (0). devices: the plan's device list. */
int lumen_fitcu_available(const lumen_fitcu_problem *pb, const int *devices, int ndev, char *why, size_t why_size);
/* Parses "cuda", "cuda:N", "cuda:all", "cuda:0,2": writes the device list (-1 = all) and returns
   the count, 0 when the string is not of that form, -1 when malformed. */
int lumen_fitcu_parse_devices(const char *request, int *devices, int max);
/* Runs the input over the devices. Curves a device could not finish get fail[pos] = 1 (their
   rows are never delivered); note gets the fallbacks and their reasons (appended). Returns
   LUMEN_OK unless the caller must stop (cancellation). */
lumen_status lumen_fitcu_run(lumen_ctx *ctx, const lumen_fitcu_problem *pb, const int *devices, int ndev,
                             const lumen_fitcu_input *in, unsigned char *fail, char *note, size_t note_size);

/* ---- test hooks (internal; not thread-safe against running fits) */
typedef struct lumen_fitcu_fake {
  int devices;               /* number of fake devices; 0 turns the fake off (real devices) */
  int64_t free_bytes;        /* free memory each fake device reports (0: 1 GiB) */
  int64_t max_chunk;         /* 0: no cap; else the largest chunk tried first */
} lumen_fitcu_fake;
/* NULL: real devices. */
void lumen_fitcu_test_set_fake(const lumen_fitcu_fake *fake);
/* Allocation faults, on real and fake devices alike: the next `fail_next` chunk allocations fail,
   and every chunk allocation above `fail_above_bytes` bytes fails (0 = no limit). */
void lumen_fitcu_test_fail_allocs(int fail_next, int64_t fail_above_bytes);
/* The k-th chunk (1-based, counted over all devices from now) reports a kernel error; 0 = never. */
void lumen_fitcu_test_fail_kernel(int kth_chunk);
/* Caps the chunk size on real and fake devices (0 = no cap). */
void lumen_fitcu_test_max_chunk(int64_t max_chunk);
/* Statistics of the last run (for tests): allocation failures seen, smallest chunk used. */
void lumen_fitcu_test_stats(int *alloc_failures, int64_t *smallest_chunk, int *chunks_run);

#ifdef __cplusplus
}
#endif
#endif
