/* The MPI calls lumen makes, as a table that liblumen_mpi.so (mpi_module.c, the only file that
   includes mpi.h) hands to src/scale/mpi.c when an MPI launcher started the process: a lumen
   program or library that runs without mpirun never loads Open MPI. Every call is on
   MPI_COMM_WORLD and returns 0 on success (MPI_SUCCESS), else an MPI error code. */
#ifndef LUMEN_DIST_MPI_OPS_H
#define LUMEN_DIST_MPI_OPS_H
#include <stdint.h>

#define LUMEN_MPI_OPS_VERSION 1

typedef struct lumen_mpi_ops {
  int version; /* LUMEN_MPI_OPS_VERSION: a module from another build is refused */
  /* MPI_Init unless already initialised, then this rank and the world size */
  int (*init)(int *argc, char ***argv, int *rank, int *size);
  void (*finalize)(void);
  int (*rank_size)(int *rank, int *size);
  int (*barrier)(void);
  /* out[i] = sum (or max, when max) over ranks of in[i], on every rank */
  int (*allreduce_int)(const int *in, int *out, int n, int max);
  int (*allreduce_int64_sum)(const int64_t *in, int64_t *out, int n);
  int (*allreduce_double_max)(const double *in, double *out, int n);
  /* bytes from every rank into recv on rank 0, rank order */
  int (*gather)(const void *send, int bytes, void *recv);
  /* rank r's counts[r] bytes at displs[r] of buf gathered into rank 0's buf in place */
  int (*gather_in_place)(void *buf, const int *counts, const int *displs, int rank);
} lumen_mpi_ops;

/* The module's one entry point (looked up by name). */
typedef const lumen_mpi_ops *(*lumen_mpi_ops_fn)(void);
#define LUMEN_MPI_OPS_SYMBOL "lumen_mpi_module_ops"

#endif
