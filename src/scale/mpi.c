/* MPI: one voxel range per rank, gathered on rank 0 (src/scale/dist_internal.h). The MPI calls
   themselves are in a module, liblumen_mpi.so (mpi_module/), built when Open MPI is found (CMake
   option LUMEN_MPI) and loaded only when an MPI launcher started the process: every other lumen
   run starts without Open MPI's seven libraries. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "fit/fit_internal.h"
#include "lumen/device.h"
#include "scale/dist_internal.h"
#include "scale/mpi_module/mpi_ops.h"

int lumen_dist_mpi_launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

#if LUMEN_HAVE_MPI
#define MODULE "liblumen_mpi.so"
#ifndef LUMEN_MPI_BUILD_MODULE
#define LUMEN_MPI_BUILD_MODULE NULL
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const lumen_mpi_ops *mpi; /* set by a successful lumen_dist_mpi_init under a launcher */
static const lumen_mpi_ops *loaded;
static char why[1024 + 4096], from[4096];

/* RTLD_GLOBAL: Open MPI's components (plug-ins it dlopens itself) need libmpi's symbols. */
static void load(void) {
  char tried[768];
  lumen_mpi_ops_fn fn = (lumen_mpi_ops_fn)(uintptr_t)lumen_module_load(MODULE, LUMEN_MPI_OPS_SYMBOL,
                                                                       LUMEN_MPI_BUILD_MODULE, 1, from, sizeof from,
                                                                       tried, sizeof tried);
  const lumen_mpi_ops *ops = fn ? fn() : NULL;
  if (!fn)
    snprintf(why, sizeof why, "lumen's MPI module (" MODULE ") was not found or did not load: %s", tried);
  else if (!ops || ops->version != LUMEN_MPI_OPS_VERSION)
    snprintf(why, sizeof why, "lumen's MPI module %s is from another lumen build (table version %d, expected %d)",
             from, ops ? ops->version : -1, LUMEN_MPI_OPS_VERSION);
  else
    loaded = ops;
}

int lumen_dist_have_mpi(void) { return 1; }

const char *lumen_dist_mpi_error(void) { return why[0] ? why : "MPI_Init failed"; }

int lumen_dist_mpi_module(char *detail, size_t size) {
  pthread_once(&once, load);
  snprintf(detail, size, "%s", loaded ? from : why);
  return loaded != NULL;
}

/* The rank's position on its node: Open MPI / MPICH / Slurm variables, else the world rank. */
int lumen_dist_local_rank(int rank) {
  const char *vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID"};
  for (size_t k = 0; k < sizeof vars / sizeof vars[0]; k++) {
    const char *v = getenv(vars[k]);
    char *end = NULL;
    long x = v && v[0] ? strtol(v, &end, 10) : -1;
    if (v && end && !*end && x >= 0 && x < 1000000) return (int)x;
  }
  return rank;
}
/* One GPU per rank: when the plan runs the CUDA tier on the default device (backend auto or
   cuda) and the node has several devices, a copy of the plan whose device is local rank mod
   count (the plan's arrays are shared, read-only); otherwise the plan itself. */
static const lumen_fit_plan *rank_plan(lumen_ctx *ctx, const lumen_fit_plan *plan, int rank, lumen_fit_plan *copy) {
  if (!plan || plan->norder < 1 || plan->order[0] != LUMEN_FIT_TIER_CUDA || plan->n_cuda_dev != 1 ||
      plan->cuda_dev[0] != 0)
    return plan;
  static int n_cuda = -1; /* probed once per process */
  if (n_cuda < 0) {
    int c = 0;
    if (lumen_cuda_probe(NULL, &c, NULL, 0) != LUMEN_OK) c = 0;
    n_cuda = c;
  }
  int lr = lumen_dist_local_rank(rank);
  int dev = lumen_dist_rank_device(lr, n_cuda, plan->opts.backend);
  if (dev < 0) return plan;
  *copy = *plan;
  copy->cuda_dev[0] = dev;
  lumen_log(ctx, LUMEN_LOG_INFO, "MPI rank %d (node-local rank %d): cuda:%d of %d devices", rank, lr, dev, n_cuda);
  return copy;
}

lumen_status lumen_dist_mpi_init(int *argc, char ***argv, int *rank, int *size) {
  *rank = 0;
  *size = 1;
  if (!lumen_dist_mpi_launched()) return LUMEN_OK;
  pthread_once(&once, load);
  if (!loaded) return LUMEN_ERR_NOT_BUILT;
  int rc = loaded->init(argc, argv, rank, size);
  if (rc != 0) {
    snprintf(why, sizeof why, "MPI_Init failed (MPI error %d)", rc);
    return LUMEN_ERR_INTERNAL;
  }
  mpi = loaded;
  return LUMEN_OK;
}

void lumen_dist_mpi_finalize(void) {
  if (mpi) mpi->finalize();
  mpi = NULL;
}

int lumen_dist_mpi_allsum(int v) {
  int s = v;
  if (mpi) mpi->allreduce_int(&v, &s, 1, 0);
  return s;
}

void lumen_dist_mpi_gather(const void *send, int bytes, void *recv) {
  if (!mpi) { memcpy(recv, send, (size_t)bytes); return; }
  mpi->gather(send, bytes, recv);
}

void lumen_dist_mpi_barrier(void) {
  if (mpi) mpi->barrier();
}

/* Gathers rows [lo_r, hi_r) of every rank into buf on rank 0 (in place: each rank's own rows
   are already at their place in its buf). 0 on success. */
static int gather_rows(void *buf, size_t row_bytes, int64_t n, int rank, int size) {
  if (!buf) return 0;
  int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
  if (!counts || !displs) { free(counts); free(displs); return 1; }
  for (int r = 0; r < size; ++r) {
    int64_t lo, hi;
    lumen_dist_range(n, r, size, &lo, &hi);
    counts[r] = (int)((hi - lo) * (int64_t)row_bytes);
    displs[r] = (int)(lo * (int64_t)row_bytes);
  }
  int rc = mpi->gather_in_place(buf, counts, displs, rank);
  free(counts);
  free(displs);
  return rc;
}

lumen_status lumen_dist_mpi_fit(void *unused, lumen_ctx *ctx, const lumen_fit_plan *plan, lumen_model model, int64_t n,
                                int64_t nt, const float *data, const float *consts, lumen_fit_results *res) {
  (void)unused;
  int rank = 0, size = 1;
  if (mpi) mpi->rank_size(&rank, &size);
  int64_t lo, hi;
  lumen_dist_range(n, rank, size, &lo, &hi);
  lumen_fit_plan copy;
  const lumen_fit_plan *use = size > 1 ? rank_plan(ctx, plan, rank, &copy) : plan;
  lumen_status st = lumen_dist_fit_range(ctx, use, model, n, nt, data, consts, res, lo, hi);
  if (!mpi || size == 1) return st;
  /* every rank takes part in the gathers even after a failure, then all agree on the status */
  int bad = st != LUMEN_OK, anybad = 0;
  mpi->allreduce_int(&bad, &anybad, 1, 1);
  if (anybad) return st != LUMEN_OK ? st : lumen_fail(ctx, LUMEN_ERR_INTERNAL, "stage D failed on another MPI rank");
  if ((n * 16 * (int64_t)sizeof(double)) > 0x7fffffff)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "MPI: %lld voxels are too many for one gather", (long long)n);
  const size_t np = (size_t)lumen_model_param_count(model), nd = (size_t)lumen_fit_derived_count(model);
  int rc = 0;
  if (np) rc |= gather_rows(res->params, sizeof(double) * np, n, rank, size);
  if (nd) rc |= gather_rows(res->derived, sizeof(double) * nd, n, rank, size);
  rc |= gather_rows(res->chi2, sizeof(double), n, rank, size);
  rc |= gather_rows(res->r2, sizeof(double), n, rank, size);
  if (np) rc |= gather_rows(res->ci_lo, sizeof(double) * np, n, rank, size);
  if (np) rc |= gather_rows(res->ci_hi, sizeof(double) * np, n, rank, size);
  rc |= gather_rows(res->delay, sizeof(double), n, rank, size);
  rc |= gather_rows(res->state, sizeof(int32_t), n, rank, size);
  rc |= gather_rows(res->iterations, sizeof(int32_t), n, rank, size);
  /* counts: curves per tier, per state, at the lower / upper bound per fit parameter */
  enum { NT = LUMEN_FIT_TIER_COUNT, NS = LUMEN_FIT_STATE_COUNT, NB = LUMEN_FIT_MAX_PARAMS, NC = NT + NS + 2 * NB };
  int64_t cnt[NC], tot[NC];
  memcpy(cnt, res->curves_per_tier, sizeof res->curves_per_tier);
  memcpy(cnt + NT, res->state_counts, sizeof res->state_counts);
  memcpy(cnt + NT + NS, res->at_lower, sizeof res->at_lower);
  memcpy(cnt + NT + NS + NB, res->at_upper, sizeof res->at_upper);
  rc |= mpi->allreduce_int64_sum(cnt, tot, NC);
  memcpy(res->curves_per_tier, tot, sizeof res->curves_per_tier);
  memcpy(res->state_counts, tot + NT, sizeof res->state_counts);
  memcpy(res->at_lower, tot + NT + NS, sizeof res->at_lower);
  memcpy(res->at_upper, tot + NT + NS + NB, sizeof res->at_upper);
  double sec = res->seconds;
  rc |= mpi->allreduce_double_max(&sec, &res->seconds, 1);
  if (rc != 0) return lumen_fail(ctx, LUMEN_ERR_INTERNAL, "MPI: gathering stage D results failed");
  return LUMEN_OK;
}
#else
int lumen_dist_have_mpi(void) { return 0; }
const char *lumen_dist_mpi_error(void) { return "this lumen was built without MPI (libopenmpi-dev)"; }
int lumen_dist_mpi_module(char *detail, size_t size) {
  snprintf(detail, size, "%s", lumen_dist_mpi_error());
  return 0;
}
int lumen_dist_local_rank(int rank) { return rank; }
lumen_status lumen_dist_mpi_init(int *argc, char ***argv, int *rank, int *size) {
  (void)argc; (void)argv;
  *rank = 0;
  *size = 1;
  return LUMEN_OK;
}
void lumen_dist_mpi_finalize(void) {}
int lumen_dist_mpi_allsum(int v) { return v; }
void lumen_dist_mpi_gather(const void *send, int bytes, void *recv) { memcpy(recv, send, (size_t)bytes); }
void lumen_dist_mpi_barrier(void) {}
lumen_status lumen_dist_mpi_fit(void *unused, lumen_ctx *ctx, const lumen_fit_plan *plan, lumen_model model, int64_t n,
                                int64_t nt, const float *data, const float *consts, lumen_fit_results *res) {
  (void)unused;
  return lumen_dist_fit_range(ctx, plan, model, n, nt, data, consts, res, 0, n);
}
#endif
