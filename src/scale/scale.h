/* The scale layer's interface to its front end, the command line (docs/SCALE.md): running at scale
   (lumen dce --shard, merge, batch, image batches). Not part of the public API and not exported
   from liblumen.so; what only src/scale itself uses is in scale/dist_internal.h. Lives in the library lumen_dist (needs lumen_pipeline);
   the MPI parts are compiled only when Open MPI is found (LUMEN_MPI).

   - Voxel shards: `lumen dce --shard K/N` fits only the K-th of N contiguous ranges of the
     fitted voxels and saves the raw results as a part file; `lumen merge` reruns the cheap stages
     with the saved options and takes stage D's results from the parts, so its outputs are
     byte-identical to one run (the fit of a voxel does not depend on the other voxels).
   - MPI: the same ranges, one per rank, gathered on rank 0, which alone writes.
   - A shared work queue (lumen_dist_pool_run) driving worker threads over a batch of items.
   - `lumen batch`: subjects from a list file or a BIDS folder, a BIDS derivatives folder,
     per-subject logs with checksums for resuming. */
#ifndef LUMEN_SCALE_H
#define LUMEN_SCALE_H

#include <stddef.h>
#include <stdint.h>
#include "lumen/context.h"
#include "lumen/filter.h"
#include "lumen/fit.h"
#include "lumen/image.h"
#include "lumen/models.h"
#include "lumen/pipeline.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ stage D executors */
/* The distributed runs give `lumen dce` their stage D executor through lumen_pipe_config's
   fit_executor (include/lumen/pipeline.h). */
typedef lumen_pipe_fit_fn lumen_dist_fit_fn;

/* Parses "K/N" (0 <= K < N, N >= 1). */
lumen_status lumen_dist_shard_parse(lumen_ctx *ctx, const char *text, int *k, int *n);


/* ------------------------------------------------------------------------- shards / parts */

typedef struct lumen_dist_part lumen_dist_part;

/* A recorder for shard K of N: use lumen_dist_part_fit as the hook with the part as user. */
lumen_status lumen_dist_part_create(lumen_ctx *ctx, int k, int n, lumen_dist_part **out);
lumen_status lumen_dist_part_fit(void *part, lumen_ctx *ctx, const lumen_fit_plan *plan, lumen_model model, int64_t n,
                                 int64_t nt, const float *data, const float *consts, lumen_fit_results *res);
/* Saves the part (the command's arguments, the working folder, and the results) atomically. */
lumen_status lumen_dist_part_write(lumen_ctx *ctx, const lumen_dist_part *part, const char *path, int argc,
                                   char *const *argv);
lumen_status lumen_dist_part_read(lumen_ctx *ctx, const char *path, lumen_dist_part **out);
void lumen_dist_part_free(lumen_dist_part *part);
/* Accessors of a read part. */
int lumen_dist_part_index(const lumen_dist_part *part);
int lumen_dist_part_count(const lumen_dist_part *part);
int lumen_dist_part_argc(const lumen_dist_part *part);
const char *lumen_dist_part_arg(const lumen_dist_part *part, int i);
const char *lumen_dist_part_cwd(const lumen_dist_part *part);

/* A merger over all N parts (checked: same N, each index once, same arguments); the hook takes
   stage D's results from the parts (lumen_dist_merge_fit with the merger as user). */
typedef struct lumen_dist_merger lumen_dist_merger;
lumen_status lumen_dist_merger_create(lumen_ctx *ctx, lumen_dist_part **parts, int nparts, lumen_dist_merger **out);
lumen_status lumen_dist_merge_fit(void *merger, lumen_ctx *ctx, const lumen_fit_plan *plan, lumen_model model,
                                  int64_t n, int64_t nt, const float *data, const float *consts,
                                  lumen_fit_results *res);
void lumen_dist_merger_free(lumen_dist_merger *m);  /* does not free the parts */

/* ------------------------------------------------------------------------------------ MPI */

/* 1 when this build has MPI. lumen_dist_mpi_init initialises MPI only when the process was
   started by mpirun (OMPI_COMM_WORLD_SIZE / PMI_SIZE set) and reports rank and size (0, 1
   otherwise). lumen_dist_mpi_fit is the stage D hook that fits this rank's range and gathers
   the results on rank 0. */
int lumen_dist_have_mpi(void);
lumen_status lumen_dist_mpi_init(int *argc, char ***argv, int *rank, int *size);
/* Why lumen_dist_mpi_init failed (the MPI module did not load, MPI_Init failed). */
const char *lumen_dist_mpi_error(void);
/* Loads the MPI module (without initialising MPI: `lumen backends`): 1 and its path in detail,
   else 0 and why. */
int lumen_dist_mpi_module(char *detail, size_t size);
void lumen_dist_mpi_finalize(void);
lumen_status lumen_dist_mpi_fit(void *unused, lumen_ctx *ctx, const lumen_fit_plan *plan, lumen_model model, int64_t n,
                                int64_t nt, const float *data, const float *consts, lumen_fit_results *res);
/* Sum of an int over ranks, result on every rank (the value itself without MPI). */
int lumen_dist_mpi_allsum(int v);
/* Gathers a fixed-size record from every rank to rank 0 (recv: size * bytes on rank 0). */
void lumen_dist_mpi_gather(const void *send, int bytes, void *recv);
void lumen_dist_mpi_barrier(void);

/* 1 when an MPI launcher started this process (mpirun, srun: OMPI_COMM_WORLD_SIZE, PMI_SIZE or
   PMIX_RANK set), with or without MPI in this build. */
int lumen_dist_mpi_launched(void);

/* ------------------------------------------------------- the command line of distributed runs */
/* src/scale/dce_args.c: `lumen dce ARGS` (argv[0] = "dce") as a shard, an MPI rank or a plain run. */

typedef enum lumen_dist_dce_run {
  LUMEN_DIST_DCE_PLAIN = 0, /* no --shard, no MPI launcher (or no MPI in this build), or -h/--help */
  LUMEN_DIST_DCE_SHARD,     /* --shard K/N: *shard is K/N (unparsed) */
  LUMEN_DIST_DCE_MPI        /* started by an MPI launcher in a build with MPI */
} lumen_dist_dce_run;
lumen_dist_dce_run lumen_dist_dce_run_of(int argc, char *const *argv, const char **shard);
/* The value of the last "NAME VALUE" among the arguments after argv[0] (NULL when none). */
const char *lumen_dist_arg_value(int argc, char *const *argv, const char *name);
/* 1 when -q or --quiet is among the arguments after argv[0]. */
int lumen_dist_quiet(int argc, char *const *argv);
/* A new array (free it; the strings are argv's) of the arguments without "--shard V", and without
   "--out V" when drop_out (merge sets its own); NULL when out of memory. */
char **lumen_dist_strip_args(int argc, char *const *argv, int drop_out, int *nargc);
/* "OUT/PREFIX_shard-K-of-N.part" (OUT NULL: the working folder) into buf. */
void lumen_dist_part_path(char *buf, size_t size, const char *out, const char *prefix, int k, int n);
/* path made absolute against the working folder (as given when that is unknown) into buf. */
void lumen_dist_absolute_path(char *buf, size_t size, const char *path);
/* A new private folder for an MPI rank's unused outputs (BASE/lumen-rank-XXXXXX; base NULL or "":
   /tmp) into buf; 0 when it cannot be made. lumen_dist_remove_tree removes it with its contents. */
int lumen_dist_rank_folder(char *buf, size_t size, const char *base);
void lumen_dist_remove_tree(const char *path);

/* ------------------------------------------------------------------------- work queue */

/* Runs fn(user, worker, item) for item = 0..n_items-1 on n_workers threads that take the next
   item from one shared counter (a worker per CPU core now, one host thread per GPU later).
   Items run exactly once; the first non-OK status stops workers from taking new items and is
   returned (the others finish their current item). n_workers <= 1 runs in the calling thread. */
typedef lumen_status (*lumen_dist_item_fn)(void *user, int worker, int64_t item);
lumen_status lumen_dist_pool_run(lumen_ctx *ctx, int n_workers, int64_t n_items, lumen_dist_item_fn fn, void *user);

/* A bounded FIFO of pointers for reader -> compute -> writer stages: push blocks while the
   queue holds max_items items or max_bytes bytes (an item larger than max_bytes is let through
   alone); pop blocks until an item arrives or the queue is closed and empty (*item = NULL). */
typedef struct lumen_dist_queue lumen_dist_queue;
lumen_status lumen_dist_queue_create(lumen_ctx *ctx, int64_t max_items, int64_t max_bytes, lumen_dist_queue **out);
void lumen_dist_queue_push(lumen_dist_queue *q, void *item, int64_t bytes);
void *lumen_dist_queue_pop(lumen_dist_queue *q, int64_t *bytes);
void lumen_dist_queue_close(lumen_dist_queue *q);
void lumen_dist_queue_free(lumen_dist_queue *q);

/* ------------------------------------------------------- devices for image batches */

/* The workers of an image batch: one host thread per entry, each running its images on that
   device ("cpu" or "cuda:N"). Built from a device list (docs/SCALE.md):
     "cpu", "cuda", "cuda:N"   one worker;      "cuda:all"  one worker per usable CUDA device;
     "A,B,..."                 one worker per entry, e.g. "cuda:0,cuda:1", "cpu,cpu" (two CPU
                               workers), "cuda:all,cpu" (every GPU and a CPU worker).
   cuda:all with no usable CUDA device becomes one CPU worker, with fell_back = 1 and the reason
   (never an error). A named device that fails later falls back per image (the filter dispatch
   reruns the op on the CPU and reports why). */
#define LUMEN_DIST_MAX_DEVICES 64
typedef struct lumen_dist_devices {
  int n;                                  /* workers (>= 1) */
  char name[LUMEN_DIST_MAX_DEVICES][16];  /* device of each worker: "cpu" or "cuda:N" */
  int n_cpu;                              /* workers on the CPU */
  int fell_back;                          /* cuda:all found no usable CUDA device */
  char reason[256];                       /* why ("" when it did not fall back) */
} lumen_dist_devices;

/* Expands a device list given the number of usable CUDA devices (n_cuda <= 0: none; why says
   why, may be NULL). Pure: no probing, so it is testable without a GPU. Errors name the entry
   and the expected forms. */
lumen_status lumen_dist_devices_expand(lumen_ctx *ctx, const char *text, int n_cuda, const char *why,
                                       lumen_dist_devices *out);
/* The same, probing CUDA (lumen_cuda_probe) only when the list holds "cuda:all". */
lumen_status lumen_dist_devices_parse(lumen_ctx *ctx, const char *text, lumen_dist_devices *out);
/* Writes "cpu", "cpu,cpu", "cuda:0,cuda:1"... into buf. */
void lumen_dist_devices_format(const lumen_dist_devices *d, char *buf, size_t size);

/* One GPU per MPI rank: the CUDA device that the rank with this node-local rank uses when the
   node has n_cuda usable devices: local_rank mod n_cuda when n_cuda >= 2, -1 (keep the
   default device) otherwise. backend: the fit backend request ("auto", "cuda", NULL = auto);
   an explicit list ("cuda:1", "cuda:0,1", "cuda:all") or a CPU tier also gives -1. */
int lumen_dist_rank_device(int local_rank, int n_cuda, const char *backend);
/* The MPI rank's position on its node (Open MPI, MPICH, PMI or Slurm variables; else rank). */
int lumen_dist_local_rank(int rank);

/* ------------------------------------------------------- what an image batch measured */

/* Of the reader / devices / writer stages that run an image batch (scale/dist_internal.h). */
typedef struct lumen_dist_stage_stats {
  double wall_s, read_s, compute_s, write_s; /* busy seconds of each stage (compute: all workers) */
  int64_t peak_bytes;     /* largest sum of the bytes of the items in flight and the reserves */
  int64_t reserved_bytes; /* bytes the workers reserved (pinned staging buffers), summed */
  int64_t item_bytes;     /* the largest charge of one item */
  int over_limit;         /* 1: an item ran although the limit was exceeded (one item, or the
                             reserves and one item, above the limit: one item always proceeds) */
  int64_t written;        /* items written */
  int64_t failed_item;    /* the first (lowest) failed item, -1 when none */
  int64_t per_worker[LUMEN_DIST_MAX_DEVICES]; /* items computed by each worker */
  int pipelined;          /* workers that pipelined their items (open returned nonzero) */
} lumen_dist_stage_stats;

/* Bytes an image op ("filter" / "segment" and the op or algorithm name, e.g. "gaussian",
   "febds") holds while it runs on the CPU besides its input and its float32 result: scratch
   buffers, estimated per op from the voxel count and the CPU threads (src/scale/charge.c; an
   unknown op: 4 float32 images). A non-float32 input adds its float32 copy (the caller's). */
int64_t lumen_dist_op_scratch(const char *cmd, const char *op, int64_t count, int threads);

/* The memory budget of an image batch, from the shape in the headers before any image is
   decoded (src/scale/charge.c; sizes from hostile headers saturate at INT64_MAX):
   lumen_dist_image_voxels: dims[0] * dims[1] * dims[2] * dims[3];
   lumen_dist_voxel_charge: bytes per voxel of an input of elem bytes per voxel with its result:
     the input, the float32 result and a float32 copy unless the input is one;
   lumen_dist_image_charge: what one image holds while the op runs with `threads` CPU threads
     (the voxels' charge and lumen_dist_op_scratch). */
int64_t lumen_dist_image_voxels(const int64_t dims[4]);
int lumen_dist_voxel_charge(int elem);
int64_t lumen_dist_image_charge(const char *cmd, const char *op, int elem, int64_t count, int threads);

/* ------------------------------------------------------------------------- image batches */

/* A batch of images over the devices of a list (src/scale/image_batch.c, docs/SCALE.md): the
   stages above with images as items. A reader thread reads ahead under the memory limit, one
   worker per device runs the op, the results are written in input order, so every output equals
   a single-device serial run. An image is charged for its input, its result and the op's
   scratch; a CUDA worker pipelines its images through pinned double buffers (src/scale/xfer.h),
   charged too. The front end (the command line, a binding) gives the reading, computing and
   writing of one item and prints the messages; the callbacks may run on several threads. */

/* Runs the op on image item (0-based, in the batch's order) on device (NULL = the default) with
   the worker's context; sets whether the result is a mask, the PNG bit depth for it and an
   optional scalar (NaN = none). */
typedef lumen_status (*lumen_dist_image_fn)(void *user, lumen_ctx *ctx, int64_t item, const char *device,
                                            lumen_filter_report *rep, const lumen_image *in, lumen_image **out,
                                            int *is_mask, int *png_bits, double *scalar);

typedef struct lumen_dist_imgbatch {
  int64_t n;                      /* images */
  const lumen_dist_devices *devs; /* the workers */
  int device_given;               /* 0: the op runs on its default device, no pinned buffers */
  int overlap;                    /* reader and writer threads (0: each worker in turn) */
  int64_t memory_limit;           /* bytes of the images in flight (0 = no limit) */
  int64_t count;                  /* voxels of one image (one shape per batch): sizes the pinned slots */
  int64_t scratch;                /* the op's scratch per image (lumen_dist_op_scratch) */
  int threads;                    /* CPU threads of each worker (0 = all cores) */
  void *user;
  /* a new context for a reader, writer or worker thread with threads CPU threads (0 = all) */
  lumen_ctx *(*context)(void *user, int threads);
  /* reads image i / writes its result; non-OK after printing why */
  lumen_status (*read)(void *user, lumen_ctx *ctx, int64_t i, lumen_image **out);
  lumen_status (*write)(void *user, lumen_ctx *ctx, int64_t i, const lumen_image *res, int is_mask, int png_bits);
  lumen_dist_image_fn compute;
  void *compute_user;             /* compute's user (the op's state); the other callbacks get user */
  /* under a lock: done = 0 before the first image (i = 0), then after each image written, with
     the op's scalar (NaN = none) */
  void (*progress)(void *user, int64_t i, int64_t done, double scalar);
  /* image i failed in the op or on its way back from the device: ctx holds the error (not
     called when the op refused its options and printed why itself: LUMEN_ERR_INVALID_ARGUMENT
     with no error in ctx) */
  void (*failed)(void *user, int64_t i, lumen_ctx *ctx);
} lumen_dist_imgbatch;

typedef struct lumen_dist_imgbatch_out {
  int started;                   /* 0: out of memory before the first image */
  lumen_filter_report total;     /* the first image's report, the last device used, the first fallback */
  char used[1024];               /* the devices that computed, in order of the images ("cpu,cuda:0") */
  lumen_dist_stage_stats stats;
  int64_t peak_rss;              /* the process's peak resident set (VmHWM), bytes; 0 when unknown */
} lumen_dist_imgbatch_out;

/* Runs the batch (lumen_dist_stages_run); returns the status of the lowest failed image, or of
   the setup (out->started 0). The resident memory follows the charges only when freed buffers
   go back to the system at once: a process-wide malloc setting that the front end makes
   (glibc's mmap threshold, docs/SCALE.md), not the library. */
lumen_status lumen_dist_imgbatch_run(lumen_ctx *ctx, const lumen_dist_imgbatch *b, lumen_dist_imgbatch_out *out);

/* CPU threads of each worker: threads when given, else the ctx_threads cores shared among the
   CPU workers when there are several, else 0 (all cores). */
int lumen_dist_worker_threads(const lumen_dist_devices *devs, int threads, int ctx_threads);

/* Removes the temporaries a killed run left (".NAME.tmp-PID-TAG", their process gone) once from
   each folder of the n output paths, before anything is written; best effort. removed (may be
   NULL) is told each folder where it removed some. */
void lumen_dist_sweep_output_folders(char *const *paths, int64_t n,
                                     void (*removed)(void *user, const char *folder, int count), void *user);

/* ---------------------------------------------------------------------------- subjects */

#define LUMEN_DIST_MAX_ARGS 64
typedef struct lumen_dist_subject {
  char id[128];             /* "sub-01" or the list file's first column */
  char session[128];        /* "ses-1" or "" */
  int argc;                 /* arguments for the command (inputs), owned */
  char *argv[LUMEN_DIST_MAX_ARGS];
} lumen_dist_subject;

typedef struct lumen_dist_subjects {
  int n;
  lumen_dist_subject *items;
} lumen_dist_subjects;

/* List file: one subject per line, "ID ARG ARG ..." (whitespace separated; '#' comments). */
lumen_status lumen_dist_list_read(lumen_ctx *ctx, const char *path, lumen_dist_subjects *out);
/* BIDS dataset: sub-X/[ses-Y/]<any folder>/ files (X, Y any label). command "dce": *_dce.nii[.gz] (with
   *_T1map (or the older demo name *_T1w-map, an alias) and *_mask in the same session when present
   -> --t1map, --mask); "t1": the *_VFA /
   *_flip-*_ files -> --in FILES; "filter"/"segment": every image the io table knows by its name
   (lumen_image_format_of_name: .png, .nii, .nii.gz, .dcm), one item per image (ID = the image's name). Sorted by subject, session, name. */
lumen_status lumen_dist_bids_scan(lumen_ctx *ctx, const char *root, const char *command, lumen_dist_subjects *out);
void lumen_dist_subjects_clear(lumen_dist_subjects *s);

#ifdef __cplusplus
}
#endif
#endif
