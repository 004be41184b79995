/* The scale layer's own plumbing (the .c files of src/scale and their unit tests): ranges, the stage D range
   fit, the queue's non-blocking side and the reader / devices / writer stages under image batches.
   The front end's part is scale/scale.h. */
#ifndef LUMEN_DIST_INTERNAL_H
#define LUMEN_DIST_INTERNAL_H
#include "scale/scale.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The K-th of N contiguous ranges of n items: [n*k/N, n*(k+1)/N). */
void lumen_dist_range(int64_t n, int k, int nparts, int64_t *lo, int64_t *hi);

/* Fits curves [lo, hi) of the batch with lumen_fit_execute; the others get NaN values and
   state -1 (not fitted here); res's counters and backend fields describe [lo, hi) only. */
lumen_status lumen_dist_fit_range(lumen_ctx *ctx, const lumen_fit_plan *plan, lumen_model model, int64_t n, int64_t nt,
                                  const float *data, const float *consts, lumen_fit_results *res, int64_t lo,
                                  int64_t hi);

/* The same without waiting: NULL when the queue is empty right now (open or closed). */
void *lumen_dist_queue_try_pop(lumen_dist_queue *q, int64_t *bytes);
int64_t lumen_dist_queue_peak_bytes(const lumen_dist_queue *q);

/* ------------------------------------------------------- reader / devices / writer stages */

/* The stages of an image batch. read (the reader thread, items in order) decodes item i into
   *data and says how many bytes it holds until written (*bytes: everything the item holds:
   input, result and the op's scratch); compute (a device worker) turns *data into the result in
   place; write (the writer, the calling thread, items in input order; with overlap 0 the worker
   itself) writes and frees the result (also when it fails); discard frees an item that will not
   be written (after a failure). A callback's non-OK status fails that item (it reports its own
   message).

   Optional, overlap 1 only: a worker may pipeline its items (a CUDA worker: pinned staging
   buffers and its own streams, so that the upload of item k+1 and the download of item k-1
   overlap the op of item k). open (the worker, before its first item) returns nonzero to
   pipeline and sets *reserved, bytes the worker holds for the whole run (pinned buffers),
   charged against the memory limit until close. A pipelining worker then calls, per item:
   begin(slot) when it takes the item (start moving the input to the device; slot 0/1
   alternates per begin: the input staging buffer), compute, end(slot) after a successful
   compute (start moving the result back; slot 0/1 alternates per end: the output staging
   buffer), finish(slot) when the result is needed (wait for it; *data becomes the host result).
   It holds at most three items: k+1 begun, k computing, k-1 ended and not finished; begin(k+1)
   comes before compute(k), end(k-1) before compute(k), finish(k-1) after compute(k), and an
   item is finished before the worker waits for the queue. An input slot is reused by the
   begin two begins later, an output slot by the end after the previous one's finish. discard
   may get an item that was begun and not finished (it must wait for its transfers). */
typedef struct lumen_dist_stages {
  void *user;
  lumen_status (*read)(void *user, int64_t item, void **data, int64_t *bytes);
  lumen_status (*compute)(void *user, int worker, const char *device, int64_t item, void **data);
  lumen_status (*write)(void *user, int64_t item, void *data);
  void (*discard)(void *user, void *data);
  int (*open)(void *user, int worker, const char *device, int64_t *reserved);
  lumen_status (*begin)(void *user, int worker, int64_t item, int slot, void **data);
  lumen_status (*end)(void *user, int worker, int64_t item, int slot, void **data);
  lumen_status (*finish)(void *user, int worker, int64_t item, int slot, void **data);
  void (*close)(void *user, int worker);
} lumen_dist_stages;

/* Runs n items through the stages with one worker thread per device of devs.
   overlap 1: a reader thread reads ahead while the workers compute and the writer writes;
   overlap 0: each worker reads, computes and writes its item itself (no read-ahead). Either
   way the items in flight (read, not yet written: their bytes from read) and the workers'
   reserves hold at most memory_limit bytes (0 = no limit): a new item is read only when its
   charge (that of the item before it) fits, and one item always proceeds. An item that fails
   stops the batch like a serial run: the items before it are written, none after it (overlap
   0 with several workers: items after it that were already running still finish); the status
   of the lowest failed item is returned. Outputs do not depend on the number of workers nor on
   pipelining. stats may be NULL. */
lumen_status lumen_dist_stages_run(lumen_ctx *ctx, const lumen_dist_devices *devs, int64_t n_items, int overlap,
                                   int64_t memory_limit, const lumen_dist_stages *stages,
                                   lumen_dist_stage_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
