/* lumen: a batch of images through one op, on one or several devices (docs/SCALE.md).
 *
 *     lumen_batch_opts o;                 lumen_batch_opts_init(&o);  o.devices = "cuda:0,cuda:1";
 *     lumen_batch_callbacks cb = {0};     cb.inputs = in;  cb.op = "gaussian";  cb.op_opts = &g;
 *                                         cb.outputs = out;
 *     lumen_batch_report rep;
 *     lumen_status s = lumen_batch_run(ctx, n, &o, &cb, &rep);
 *
 * Item i (0 .. n-1) is read (cb->read, or taken from cb->inputs[i]), computed (cb->compute, or
 * the library op that cb->op names), and written (cb->write, or a new host copy stored in
 * cb->outputs[i]), like this serial loop:
 *
 *     for (i = 0; i < n; i++) { read(i, &in); compute(i, device, in, &out); write(i, out); }
 *
 * but with a reader thread that reads ahead (overlap, the default) under opts->memory_limit, one
 * worker thread per device of opts->devices, and the writes in input order on the calling
 * thread. Every result equals the serial loop's on the same device: the number of workers,
 * overlap and the memory limit change when an item runs, never what it computes. A CUDA worker
 * stages its images through pinned double buffers, so that the upload of image k+1 and the
 * download of image k-1 overlap the op on image k (the same engine as `lumen filter --batch`).
 *
 * Threads: the callbacks run on the reader thread, the worker threads and the calling thread,
 * each with a context of its own (passed as ctx; it has the calling context's threads, default
 * device, precision and SIMD limit, and its log messages go to the calling context's log
 * callback; errors become the run's error). compute runs concurrently on the workers (one item
 * per worker at a time). With overlap (the default) read is called for one item at a time, in
 * input order, on the reader thread, and write in input order on the calling thread. With
 * opts->no_overlap each worker reads, computes and writes its own items, so with several
 * workers read and write run concurrently and write is not in input order (each result still
 * goes to its item). progress is called one call at a time, after each write.
 *
 * Failures stop the batch as the serial loop would: the items before the failed one are
 * written, none after it (no_overlap with several workers: items after it already running still
 * finish); lumen_batch_run returns that item's status (a callback's own status,
 * e.g. LUMEN_ERR_IO from read) with a message naming the item in lumen_ctx_last_error(ctx), and
 * report->failed_item is its index. Nothing is printed.
 */
#ifndef LUMEN_BATCH_H
#define LUMEN_BATCH_H
#include "lumen/export.h"

#include <stdint.h>
#include "lumen/context.h"
#include "lumen/image.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LUMEN_BATCH_MAX_DEVICES 64

/* All zero = the defaults (lumen_batch_opts_init zeroes it). */
typedef struct lumen_batch_opts {
  const char *devices;     /* the workers, one per entry:
                              NULL or "" (default): one worker; the op runs on its own default
                                device (the input's device, else the context's default device);
                              "auto": one worker per usable CUDA device, else one CPU worker;
                              "cpu", "cuda", "cuda:N"; "cuda:all" (every usable CUDA device, else
                                the CPU: report->fell_back and reason say so);
                              a comma-separated list: "cuda:0,cuda:1", "cpu,cpu" (two CPU workers
                                sharing the context's threads), "cuda:all,cpu" */
  int no_overlap;          /* 0 (default): a reader thread reads ahead while the workers compute
                              and the calling thread writes; 1: each worker reads, computes and
                              writes its item in turn (no read-ahead) */
  int64_t memory_limit;    /* bytes the items in flight may hold (input, result and the op's
                              scratch of each item read and not yet written, plus pinned
                              buffers); 0 = no limit. An item that alone needs more is refused
                              (LUMEN_ERR_OUT_OF_MEMORY naming its need and the limit), as the
                              command line refuses it */
  int threads;             /* CPU threads of each worker; 0 = the context's threads, divided
                              among the CPU workers when there are several */
  int64_t item_voxels;     /* voxels of the largest image, sizing the pinned buffers and the op's
                              scratch charge; 0 = those of the first image (read before the
                              workers start) */
} lumen_batch_opts;

LUMEN_API void lumen_batch_opts_init(lumen_batch_opts *opts);

/* Item i's input: a new image on the host (the batch frees it after its compute). A non-OK
   status fails item i; a message set through a lumen call on ctx is kept. */
typedef lumen_status (*lumen_batch_read_fn)(void *user, lumen_ctx *ctx, int64_t i, lumen_image **out);
/* Item i's result from its input on device ("cpu", "cuda:N"; NULL when opts->devices is unset:
   the op's default). *out: a new image (the batch frees it after the write); it may stay on the
   device (a CUDA worker then downloads it, overlapped). *value (NaN on entry): an optional number
   for the item (a threshold, a count) passed to write and progress. */
typedef lumen_status (*lumen_batch_compute_fn)(void *user, lumen_ctx *ctx, int64_t i, const char *device,
                                               const lumen_image *in, lumen_image **out, double *value);
/* Item i's result (on the host), lent for the call: copy what is kept. */
typedef lumen_status (*lumen_batch_write_fn)(void *user, lumen_ctx *ctx, int64_t i, const lumen_image *result,
                                             double value);
/* After item i is written, done items in all (done = 0, i = 0 before the first); a nonzero
   return cancels: no item is read after it, the items already read are still written, and the
   run returns LUMEN_ERR_CANCELLED (LUMEN_OK when every item had been read already). */
typedef int (*lumen_batch_progress_fn)(void *user, int64_t i, int64_t done, int64_t n);

/* Give one of read / inputs, one of compute / op, and one of write / outputs. */
typedef struct lumen_batch_callbacks {
  void *user;                        /* every callback's first argument */
  lumen_batch_read_fn read;
  const lumen_image *const *inputs;  /* or: n host images, used as they are (not copied nor freed) */
  lumen_batch_compute_fn compute;
  const char *op;                    /* or: a library op by name: a filter op ("gaussian", "dog",
                                        "gaussian_laplace", "median", "gamma", "abs", "contrast",
                                        "convolve", "bandpass", "otsu", "sauvola", "local_variance",
                                        "variance_binarize", "morphology", "fill_holes", "label",
                                        "largest_component") or a segmentation algorithm
                                        (lumen_segment_algo_name: "febds", "tophat", ...). value:
                                        otsu's threshold, label's count, febds' Otsu threshold;
                                        NaN for the others */
  const void *op_opts;               /* op's options struct (lumen_gaussian_opts for "gaussian",
                                        lumen_febds_opts for "febds", ...); NULL = its defaults.
                                        Its exec.device is replaced by the worker's device when
                                        opts->devices is set, exec.report by the batch's own */
  lumen_batch_write_fn write;
  lumen_image **outputs;             /* or: outputs[i] receives a new host image (the caller frees
                                        it; NULL for the items not written) */
  double *values;                    /* optional: values[i] receives item i's value (NaN = none) */
  lumen_batch_progress_fn progress;  /* optional */
} lumen_batch_callbacks;

/* What a run did (filled also on failure, as far as it got). */
typedef struct lumen_batch_report {
  int workers;                          /* worker threads */
  char devices[1024];                   /* their devices, "cpu,cpu" ("default" when unset) */
  char used[1024];                      /* the devices that computed, in order of the items */
  int fell_back;                        /* a device was replaced by the CPU (cuda:all without CUDA,
                                           or an op's CPU rerun after a device failure) */
  char reason[256];                     /* why ("" when none) */
  int64_t written;                      /* items written */
  int64_t failed_item;                  /* the lowest failed item, -1 when none */
  int64_t per_worker[LUMEN_BATCH_MAX_DEVICES]; /* items computed by each worker */
  double wall_s, read_s, compute_s, write_s;   /* wall time, busy seconds of each stage */
  int64_t peak_bytes;                   /* largest sum of the charges of the items in flight */
  int64_t item_bytes;                   /* the largest charge of one item */
  int64_t pinned_bytes;                 /* pinned staging buffers of the CUDA workers */
  int over_limit;                       /* an item ran although it exceeded the memory limit */
  int pipelined;                        /* workers that pipelined through pinned buffers */
  int64_t peak_rss;                     /* the process's peak resident set, bytes (0: unknown) */
} lumen_batch_report;

LUMEN_API void lumen_batch_report_init(lumen_batch_report *report);

/* Runs the batch of n items (n = 0: nothing to do). opts NULL = defaults; report may be NULL.
   Errors before any item: LUMEN_ERR_INVALID_ARGUMENT for n < 0, a bad device list, a negative
   memory limit or thread count, missing or doubled callbacks, an unknown op; the message names
   the field and the expected value. */
LUMEN_API lumen_status lumen_batch_run(lumen_ctx *ctx, int64_t n, const lumen_batch_opts *opts,
                                       const lumen_batch_callbacks *cb, lumen_batch_report *report);

/* 1 when lumen_batch_callbacks.op accepts name, 0 otherwise. */
LUMEN_API int lumen_batch_op_known(const char *name);

#ifdef __cplusplus
}
#endif
#endif
