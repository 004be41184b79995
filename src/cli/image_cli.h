/* The image-command machinery shared by `lumen filter` and `lumen segment`: input/output pairs
   and --batch lists, reading and writing by extension, the progress display and the summary
   line (image_cli.c); the batch of images over several devices with overlapped reading and
   writing (filter_batch_cli.c). */
#ifndef LUMEN_CLI_IMAGE_CLI_H
#define LUMEN_CLI_IMAGE_CLI_H

#include "cli/cli.h"
#include "scale/scale.h"
#include "lumen/io.h"

typedef struct lumen_imgcli {
  const char *cmd;          /* "filter" or "segment" */
  const char *op;           /* op / algorithm name */
  int quiet, verbose, overwrite;
  const char *device;       /* --device as given: one device or a list (NULL = default cpu) */
  int64_t memory_limit;     /* --memory-limit: bytes the images in flight hold (0 = none) */
  int no_overlap;           /* --no-overlap: each worker reads, computes, writes in turn */
  int precision;            /* LUMEN_FILTER_PRECISION_DEFAULT or a lumen_precision */
  int threads;
  const char *png_scale;    /* "clip" (default) or "minmax" for float outputs written as PNG */
  const char *batch;        /* --batch LIST */
  int npos;
  char **pos;               /* positional arguments after OP */
  int njobs;
  char **in, **out;         /* pairs */
  char *batch_text;         /* storage of the batch file */
  lumen_ctx *ctx;
  double t0;
  int tty;
  int ndim0;                /* ndim of the first input (lumen_imgbatch_check) */
  int64_t count0;           /* its number of voxels (one shape per batch) */
  int64_t dims0[4];         /* its shape */
  int elem0;                /* bytes per voxel as read: 1 (8-bit PNG), 2 (16-bit PNG), 4 (NIfTI) */
  lumen_dist_devices devs;  /* the workers (lumen_imgbatch_run) */
  char used_list[1024];     /* devices that computed, in order of first use ("" = rep->used) */
  lumen_image **pre;        /* DICOM inputs decoded before the batch threads start, by job (image_dicom.c) */
  char **pre_error;         /* or the message of their failed read */
} lumen_imgcli;

int lumen_imgcli_common(lumen_imgcli *c, int argc, char **argv, int *i);
/* The jobs from the positional IN OUT pairs (need_out 0: inputs only) and --batch LIST. Returns the
   exit status: LUMEN_EXIT_USAGE for a missing output or no input at all (nothing read),
   LUMEN_EXIT_FAILURE when the --batch file is missing, unreadable, malformed or empty. */
int lumen_imgcli_jobs(lumen_imgcli *c, int need_out);
/* A zeroed state for command cmd (default precision) with room for argc positional arguments;
   0 when out of memory (image_cli.c). */
int lumen_imgcli_begin(lumen_imgcli *c, const char *cmd, int argc);
/* After parsing: lumen_imgcli_jobs, then the context. LUMEN_EXIT_OK or the exit status. */
int lumen_imgcli_start(lumen_imgcli *c, int need_out);
void lumen_imgcli_free(lumen_imgcli *c);
int lumen_imgcli_read(lumen_imgcli *c, const char *path, lumen_image **out);
int lumen_imgcli_check_out(lumen_imgcli *c, const char *path, int is3d);
int lumen_imgcli_write(lumen_imgcli *c, const char *path, const lumen_image *img, int is_mask, int png_bits);
void lumen_imgcli_progress(lumen_imgcli *c, int done, int total, const char *name);
void lumen_imgcli_summary(lumen_imgcli *c, const char *what, int nimages, const lumen_filter_report *rep);
/* In an option parser: steps *i over the value of option opt, or prints that it needs one and
   returns -1 from the parser when value (the next argument) is NULL. */
#define LUMEN_IMGCLI_TAKE_VALUE(cmd, opt, value, i)                     \
  do {                                                                  \
    if (!(value)) {                                                     \
      lumen_cli_error((cmd), "%s needs a value (see --help)", (opt));   \
      return -1;                                                        \
    }                                                                   \
    (*(i))++;                                                           \
  } while (0)
int lumen_imgcli_number(const char *cmd, const char *opt, const char *text, double *out);
int lumen_imgcli_int(const char *cmd, const char *opt, const char *text, int *out);
/* A range check of an option's value, before anything is read: returns ok, and when it is 0
   prints "OPT is VALUE, expected EXPECTED" (a usage error: the caller exits 2). */
int lumen_imgcli_require(const char *cmd, int ok, const char *opt, double value, const char *expected);
int lumen_imgcli_same_shape(lumen_imgcli *c, lumen_image **imgs, int n);
lumen_ctx *lumen_imgcli_context(lumen_imgcli *c);
/* A further context with the command's log (for a reader, writer or device worker thread);
   threads: CPU threads of its work (0 = all cores). */
lumen_ctx *lumen_imgcli_worker_context(lumen_imgcli *c, int threads);
int lumen_imgcli_read_with(lumen_imgcli *c, lumen_ctx *ctx, const char *path, lumen_image **out);
int lumen_imgcli_write_with(lumen_imgcli *c, lumen_ctx *ctx, const char *path, const lumen_image *img, int is_mask,
                            int png_bits);

/* ---- image_dicom.c: DICOM inputs (a .dcm file, a file with the DICOM signature, or a folder
   holding exactly one DICOM image; docs/DICOM.md) */
int lumen_imgcli_is_dicom(const char *path);
/* Reads one DICOM input (the preloaded image when there is one); 0 with a message. */
/* The window (WindowCenter, WindowWidth; their first values) of a DICOM input path (a file or a
   folder of one image): 1 and the values when the file has both, else 0 (not DICOM, no window). */
int lumen_imgcli_dicom_window(lumen_imgcli *c, const char *path, double *center, double *width);
int lumen_imgcli_read_dicom(lumen_imgcli *c, lumen_ctx *ctx, const char *path, lumen_image **out);
/* The shape from the header (no pixel decoding); 0 with a message. */
int lumen_imgcli_dicom_shape(lumen_imgcli *c, const char *path, int *ndim, int64_t dims[4]);
/* Decodes the DICOM inputs before any thread starts (within --memory-limit, or 1 GiB), so that
   GDCM runs in a child process (the library forks only a single-threaded process). */
void lumen_imgcli_dicom_preload(lumen_imgcli *c);
void lumen_imgcli_dicom_free(lumen_imgcli *c);

/* ---- filter_batch_cli.c: a batch of images over the devices of --device */

/* The header probe refuses a PNG over LUMEN_PNG_MAX_SIDE (lumen/io.h) per side before any
   arithmetic on the sides, like the reader. */

/* Runs the op on one image on device (NULL = the default) with the context of the worker; sets
   whether the result is a mask, the PNG bit depth for it and an optional scalar (NaN = none). */
typedef lumen_status (*lumen_imgbatch_fn)(void *user, lumen_ctx *ctx, int64_t item, const char *device,
                                          lumen_filter_report *rep, const lumen_image *in, lumen_image **out,
                                          int *is_mask, int *png_bits, double *scalar);
/* Before any work: reads every input's header (PNG IHDR, NIfTI header; never a FIFO or device)
   for the shape checks (one shape per batch, 2-D or 3-D, a PNG at most
   LUMEN_PNG_MAX_SIDE per side, a 3-D result not to PNG) and checks the outputs; sets
   c->ndim0, count0, dims0, elem0. Returns 1 when all is well (messages printed otherwise). */
int lumen_imgbatch_check(lumen_imgcli *c);
/* The shape of one input from its header (the full read when the header cannot tell), and the
   bytes per voxel as read; 0 with a message printed when the input is refused. */
int lumen_imgbatch_shape(lumen_imgcli *c, const char *path, int *ndim, int64_t dims[4], int *elem);
/* Sets c->ndim0, dims0, elem0 and count0 (overflow-checked) from one shape. */
void lumen_imgbatch_set_shape(lumen_imgcli *c, int ndim, const int64_t dims[4], int elem);
/* Bytes one image of the batch's shape holds while the op runs (input as read, its float32
   copy, the float32 result, the op's scratch with `threads` CPU threads); INT64_MAX when that
   does not fit. */
int64_t lumen_imgbatch_image_bytes(const lumen_imgcli *c, int threads);
/* Refuses (message naming path, returns 0) an image of c's shape that alone needs more than
   --memory-limit: the limit holds for a single image too, checked before any image is decoded.
   1 when it fits or there is no limit. */
int lumen_imgbatch_fits(lumen_imgcli *c, const char *path, int threads);
/* Runs the jobs: a reader thread reads ahead (under --memory-limit), one worker per device of
   --device computes, the writer writes in input order (docs/SCALE.md); prints progress and the
   summary (what, e.g. "gaussian"). scalar_name: how a scalar result is printed ("threshold").
   First refuses an image over --memory-limit (lumen_imgbatch_fits) and removes the stale
   temporaries of killed runs from every output folder. Returns the exit status: 1 when an
   input's data cannot be used (the library's LUMEN_ERR_INVALID_DATA: NaN voxels, a spacing that
   makes a kernel in mm impossible), 2 when the op refuses the options (LUMEN_ERR_INVALID_ARGUMENT). */
int lumen_imgbatch_run(lumen_imgcli *c, lumen_imgbatch_fn fn, void *user, const char *what, const char *scalar_name);

/* --help text of the options every image command shares (lumen filter, lumen segment) */
#define LUMEN_IMAGE_CLI_BATCH_HELP                                                                    \
  "                    several images: a list spreads them over the devices, one host thread\n"     \
  "                    each, from one shared queue: cuda:all (every GPU; the CPU when there is\n"     \
  "                    none, the summary says why), cuda:0,cuda:1, cpu,cpu (two CPU workers,\n"      \
  "                    each with its share of the cores); outputs equal a single-device run\n"       \
  "  --memory-limit SIZE  cap on the memory of the images in flight (read ahead, computing,\n"         \
  "                    waiting to be written: input, result, the op's scratch, pinned buffers),\n"  \
  "                    e.g. 512M, 2G (default: no cap); an image that alone needs more is\n"        \
  "                    refused before it is read (exit 1, the message says how much it needs)\n"   \
  "  --no-overlap      no reader/writer threads: each worker reads, computes, writes in turn\n"

/* --help text that ends the options of every image command, up to its examples */
#define LUMEN_IMAGE_CLI_REPORT_HELP                                                                   \
  "  --overwrite       replace existing outputs (refused otherwise, before any work)\n"             \
  "  -q                quiet (no progress, no summary);  -v: debug messages\n"                      \
  "\n"                                                                                             \
  "A progress bar (a terminal) or one line per image goes to stderr, then a summary line with the\n" \
  "device requested and used and any fallback reason.\n"                                           \
  "\n"                                                                                             \
  "examples:\n"

#endif
