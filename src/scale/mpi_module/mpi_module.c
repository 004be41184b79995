/* liblumen_mpi.so: lumen's MPI calls on Open MPI (mpi_ops.h), loaded by src/scale/mpi.c only when
   an MPI launcher started the process. */
#include <mpi.h>
#include "scale/mpi_module/mpi_ops.h"

static int init(int *argc, char ***argv, int *rank, int *size) {
  int inited = 0, rc = MPI_Initialized(&inited);
  if (rc == MPI_SUCCESS && !inited) rc = MPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(MPI_COMM_WORLD, rank);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_size(MPI_COMM_WORLD, size);
  return rc;
}

static void finalize(void) { MPI_Finalize(); }

static int rank_size(int *rank, int *size) {
  int rc = MPI_Comm_rank(MPI_COMM_WORLD, rank);
  return rc == MPI_SUCCESS ? MPI_Comm_size(MPI_COMM_WORLD, size) : rc;
}

static int barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }

static int allreduce_int(const int *in, int *out, int n, int max) {
  return MPI_Allreduce(in, out, n, MPI_INT, max ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD);
}

static int allreduce_int64_sum(const int64_t *in, int64_t *out, int n) {
  return MPI_Allreduce(in, out, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
}

static int allreduce_double_max(const double *in, double *out, int n) {
  return MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
}

static int gather(const void *send, int bytes, void *recv) {
  return MPI_Gather(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

static int gather_in_place(void *buf, const int *counts, const int *displs, int rank) {
  if (rank == 0) return MPI_Gatherv(MPI_IN_PLACE, 0, MPI_BYTE, buf, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
  return MPI_Gatherv((char *)buf + displs[rank], counts[rank], MPI_BYTE, NULL, NULL, NULL, MPI_BYTE, 0,
                     MPI_COMM_WORLD);
}

__attribute__((visibility("default"))) const lumen_mpi_ops *lumen_mpi_module_ops(void);
const lumen_mpi_ops *lumen_mpi_module_ops(void) {
  static const lumen_mpi_ops ops = {LUMEN_MPI_OPS_VERSION, init, finalize, rank_size, barrier, allreduce_int,
                                    allreduce_int64_sum, allreduce_double_max, gather, gather_in_place};
  return &ops;
}
