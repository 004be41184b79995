/* A batch of images for `lumen filter` and `lumen segment` (image_cli.h): the headers are
   checked before any work, then the library's image batch (lumen_dist_imgbatch_run in
   src/scale/scale.h: a reader thread under --memory-limit, one worker per device of
   --device, pinned double buffers on a CUDA worker, the writer in input order) runs the op, so
   every output equals a single-device serial run (docs/SCALE.md). This file is the glue: the
   lumen_imgcli reading and writing, the messages, the progress and the statistics line. */
#if defined(__linux__)
#define _DEFAULT_SOURCE 1 /* mallopt */
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/image_cli.h"
#include "filter/op_registry.h"
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO /* reads and writes images: not in a build without NIfTI/JSON I/O */

/* ------------------------------------------------------------------ headers before any work */

/* The shape of one input without its voxels, and the bytes per voxel as read: the loader
   table's header read (lumen_image_read_any with headers_only; DICOM through image_dicom.c). A
   header it refuses is reported here, before any work; a 4-D image or a path the probe cannot
   place goes to the full read, which prints its message (a damaged file's own error first). */
int lumen_imgbatch_shape(lumen_imgcli *c, const char *path, int *ndim, int64_t dims[4], int *elem) {
  lumen_format_info f;
  if (lumen_image_probe(c->ctx, path, &f) == LUMEN_OK) {
    if (f.format == LUMEN_IMAGE_FORMAT_DICOM || f.format == LUMEN_IMAGE_FORMAT_DICOM_FOLDER) {
      if (!lumen_imgcli_dicom_shape(c, path, ndim, dims)) return 0;
      *elem = 4; /* read as float32 */
      return 1;
    }
    lumen_image_read_opts o = {.format = f.format, .headers_only = 1};
    lumen_image_read_info info;
    lumen_image *none = NULL;
    lumen_status s = lumen_image_read_any(c->ctx, path, &o, &none, &info);
    lumen_image_free(none);
    if (s == LUMEN_OK && info.ndim >= 1 && info.ndim <= 3) {
      *ndim = info.ndim;
      for (int a = 0; a < 4; a++) dims[a] = a < info.ndim ? info.dims[a] : 1;
      /* what the command's reader returns: PNG as stored (8 or 16-bit grey), the rest as float32 */
      *elem = f.format == LUMEN_IMAGE_FORMAT_PNG ? (info.png_bit_depth == 16 ? 2 : 1) : 4;
      lumen_image_read_info_clear(&info);
      return 1;
    }
    if (s != LUMEN_OK) { /* a header the table's reader refuses (a PNG over the per-side cap, ...) */
      const char *m = lumen_ctx_last_error(c->ctx);
      if (strstr(m, path)) lumen_cli_error(c->cmd, "%s", m); /* the reader named the file */
      else lumen_cli_error(c->cmd, "%s: %s", path, m);
      return 0;
    }
    lumen_image_read_info_clear(&info); /* 4-D: the full read reports it */
  }
  lumen_image *im = NULL;
  if (!lumen_imgcli_read(c, path, &im)) return 0; /* unknown type, unreadable or 4-D: message printed */
  *ndim = lumen_image_ndim(im);
  for (int a = 0; a < 4; a++) dims[a] = lumen_image_dim(im, a);
  *elem = (int)(lumen_image_nbytes(im) / (lumen_image_count(im) > 0 ? lumen_image_count(im) : 1));
  lumen_image_free(im);
  return 1;
}

int lumen_imgbatch_check(lumen_imgcli *c) {
  int ndim0 = 0, elem0 = 4;
  int64_t d0[4] = {1, 1, 1, 1};
  for (int k = 0; k < c->njobs; k++) {
    int nd = 0, elem = 4;
    int64_t d[4] = {1, 1, 1, 1};
    if (!lumen_imgbatch_shape(c, c->in[k], &nd, d, &elem)) return 0;
    if (k == 0) {
      ndim0 = nd;
      elem0 = elem;
      memcpy(d0, d, sizeof d0);
    } else {
      int same = nd == ndim0;
      for (int a = 0; a < 4 && same; a++) same = d[a] == d0[a];
      if (!same) {
        lumen_cli_error(c->cmd, "%s is %lldx%lldx%lld, expected the shape of %s (%lldx%lldx%lld): a batch needs one shape",
                        c->in[k], (long long)d[0], (long long)d[1], (long long)d[2], c->in[0], (long long)d0[0],
                        (long long)d0[1], (long long)d0[2]);
        return 0;
      }
      /* budget for the costliest input */
      if (lumen_dist_voxel_charge(elem) > lumen_dist_voxel_charge(elem0)) elem0 = elem;
    }
  }
  for (int k = 0; k < c->njobs; k++)
    if (!lumen_imgcli_check_out(c, c->out[k], d0[2] > 1)) return 0;
  lumen_imgbatch_set_shape(c, ndim0, d0, elem0);
  return 1;
}

void lumen_imgbatch_set_shape(lumen_imgcli *c, int ndim, const int64_t dims[4], int elem) {
  c->ndim0 = ndim;
  c->elem0 = elem;
  memcpy(c->dims0, dims, sizeof c->dims0);
  c->count0 = lumen_dist_image_voxels(dims);
}

/* The scratch table's name of the command's op (src/scale/charge.c): "log" for gaussian_laplace,
   "tophat" for white_tophat, "open" for a morphology by its op (the registry's charge name). */
static const char *charge_name(const lumen_imgcli *c) {
  const lumen_op_info *op = lumen_op_find_kind(strcmp(c->cmd, "segment") == 0 ? LUMEN_OP_KIND_SEGMENT
                                                                              : LUMEN_OP_KIND_FILTER, c->op);
  const lumen_op_row *r = lumen_op_row_of(op);
  if (!r) return c->op;
  return r->charge ? r->charge : strcmp(op->name, "morphology") == 0 ? "open" : op->name;
}

/* What the batch charges for one image, from the header instead of the decoded image. */
int64_t lumen_imgbatch_image_bytes(const lumen_imgcli *c, int threads) {
  return lumen_dist_image_charge(c->cmd, charge_name(c), c->elem0, c->count0, threads);
}

int lumen_imgbatch_fits(lumen_imgcli *c, const char *path, int threads) {
  if (c->memory_limit <= 0) return 1;
  int64_t need = lumen_imgbatch_image_bytes(c, threads);
  if (need <= c->memory_limit) return 1;
  char shape[96];
  int n = snprintf(shape, sizeof shape, "%lld x %lld", (long long)c->dims0[0], (long long)c->dims0[1]);
  if (c->ndim0 > 2 && n > 0 && (size_t)n < sizeof shape)
    snprintf(shape + n, sizeof shape - (size_t)n, " x %lld", (long long)c->dims0[2]);
  lumen_cli_error(c->cmd,
                  "'%s' needs about %.0f MiB (%s, %s input, float32 + working buffers of %s), over --memory-limit "
                  "%.4g MiB; raise --memory-limit or downscale the image",
                  path, ceil((double)need / 1048576.0), shape,
                  c->elem0 == 1 ? "8-bit" : c->elem0 == 2 ? "16-bit" : "float32", c->op,
                  (double)c->memory_limit / 1048576.0);
  return 0;
}

/* ------------------------------------------------------------------ the library's callbacks */

typedef struct glue {
  lumen_imgcli *c;
  const char *scalar_name;
} glue;

static lumen_ctx *glue_context(void *user, int threads) {
  return lumen_imgcli_worker_context(((glue *)user)->c, threads);
}

static lumen_status glue_read(void *user, lumen_ctx *ctx, int64_t i, lumen_image **out) {
  lumen_imgcli *c = ((glue *)user)->c;
  return lumen_imgcli_read_with(c, ctx, c->in[i], out) ? LUMEN_OK : LUMEN_ERR_IO;
}

static lumen_status glue_write(void *user, lumen_ctx *ctx, int64_t i, const lumen_image *res, int is_mask,
                               int png_bits) {
  lumen_imgcli *c = ((glue *)user)->c;
  return lumen_imgcli_write_with(c, ctx, c->out[i], res, is_mask, png_bits) ? LUMEN_OK : LUMEN_ERR_IO;
}

static void glue_progress(void *user, int64_t i, int64_t done, double scalar) {
  glue *g = user;
  lumen_imgcli *c = g->c;
  if (done == 0) {
    lumen_imgcli_progress(c, 0, c->njobs, c->in[0]);
    return;
  }
  if (!isnan(scalar) && !c->quiet) fprintf(stderr, "lumen %s: %s: %s %.10g\n", c->cmd, c->in[i], g->scalar_name, scalar);
  lumen_imgcli_progress(c, (int)done, c->njobs, c->out[i]);
}

static void glue_failed(void *user, int64_t i, lumen_ctx *ctx) {
  lumen_imgcli *c = ((glue *)user)->c;
  lumen_cli_error(c->cmd, "%s: %s", c->in[i], lumen_ctx_last_error(ctx));
}

static void glue_removed(void *user, const char *folder, int count) {
  lumen_imgcli *c = user;
  if (!c->quiet)
    fprintf(stderr, "lumen %s: removed %d temporary file%s left by a killed run in %s\n", c->cmd, count,
            count == 1 ? "" : "s", folder);
}

/* ------------------------------------------------------------------ the run */

/* The statistics line of a batch (several images, or -v). */
static void print_stages(const lumen_imgcli *c, int overlap, const lumen_dist_imgbatch_out *o) {
  const lumen_dist_stage_stats *stats = &o->stats;
  char per[512] = "";
  size_t len = 0;
  for (int w = 0; w < c->devs.n && len + 24 < sizeof per; w++)
    len += (size_t)snprintf(per + len, sizeof per - len, "%s%s %lld", w ? ", " : "", c->devs.name[w],
                            (long long)stats->per_worker[w]);
  char lim[160] = "no limit";
  if (c->memory_limit > 0) {
    int n = snprintf(lim, sizeof lim, "limit %.2f MiB", (double)c->memory_limit / 1048576.0);
    if (stats->over_limit && n > 0 && (size_t)n < sizeof lim)
      snprintf(lim + n, sizeof lim - (size_t)n, "; over it: one image needs %.2f MiB%s, it ran alone",
               (double)stats->item_bytes / 1048576.0, stats->reserved_bytes ? " besides the pinned buffers" : "");
  }
  char pinned[64] = "";
  if (stats->reserved_bytes > 0)
    snprintf(pinned, sizeof pinned, ", %.2f MiB of it pinned (%d worker%s)", (double)stats->reserved_bytes / 1048576.0,
             stats->pipelined, stats->pipelined == 1 ? "" : "s");
  fprintf(stderr,
          "lumen %s: stages%s: read %.3f s, compute %.3f s (images per worker: %s), write %.3f s, wall %.3f s; "
          "peak %.2f MiB in flight%s (%s; %.2f MiB per image); peak RSS %.2f MiB\n",
          c->cmd, overlap ? " (overlapped)" : " (no overlap)", stats->read_s, stats->compute_s, per, stats->write_s,
          stats->wall_s, (double)stats->peak_bytes / 1048576.0, pinned, lim, (double)stats->item_bytes / 1048576.0,
          (double)o->peak_rss / 1048576.0);
}

int lumen_imgbatch_run(lumen_imgcli *c, lumen_imgbatch_fn fn, void *user, const char *what, const char *scalar_name) {
#if defined(__GLIBC__)
  /* Freed image buffers go back to the system at once: a fixed mmap threshold stops glibc from
     raising it after the first large free and then keeping later 4 MB buffers in its arenas,
     so the resident memory follows the buffers --memory-limit charges (docs/SCALE.md). A
     process-wide setting, so the front end makes it, not the library. */
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
  if (lumen_dist_devices_parse(c->ctx, c->device ? c->device : "cpu", &c->devs) != LUMEN_OK) {
    lumen_cli_error(c->cmd, "--device: %s", lumen_ctx_last_error(c->ctx));
    return LUMEN_EXIT_USAGE;
  }
  if (c->devs.fell_back && !c->quiet) fprintf(stderr, "lumen %s: warning: %s\n", c->cmd, c->devs.reason);
  int threads = lumen_dist_worker_threads(&c->devs, c->threads, lumen_ctx_threads(c->ctx));
  int op_threads = threads > 0 ? threads : lumen_ctx_threads(c->ctx);
  if (!lumen_imgbatch_fits(c, c->in[0], op_threads)) return LUMEN_EXIT_FAILURE;
  lumen_dist_sweep_output_folders(c->out, c->njobs, glue_removed, c);
  lumen_imgcli_dicom_preload(c); /* before the batch's threads: GDCM then decodes in a child process */
  glue g = {c, scalar_name ? scalar_name : "value"};
  lumen_dist_imgbatch b = {.n = c->njobs, .devs = &c->devs, .device_given = c->device != NULL,
                           .overlap = !c->no_overlap, .memory_limit = c->memory_limit, .count = c->count0,
                           .scratch = lumen_dist_op_scratch(c->cmd, charge_name(c), c->count0, op_threads),
                           .threads = threads, .user = &g, .context = glue_context, .read = glue_read,
                           .write = glue_write, .compute = fn, .compute_user = user, .progress = glue_progress, .failed = glue_failed};
  lumen_dist_imgbatch_out o;
  lumen_status s = lumen_dist_imgbatch_run(c->ctx, &b, &o);
  if (s == LUMEN_OK) {
    snprintf(c->used_list, sizeof c->used_list, "%s", o.used);
    lumen_imgcli_summary(c, what, c->njobs, &o.total);
    if (!c->quiet && (c->njobs > 1 || c->verbose)) print_stages(c, b.overlap, &o);
    return LUMEN_EXIT_OK;
  }
  if (s == LUMEN_ERR_INVALID_ARGUMENT) return LUMEN_EXIT_USAGE; /* the options; bad data is exit 1 */
  if (!o.started) lumen_cli_error(c->cmd, "out of memory starting the batch");
  else if (o.stats.failed_item < 0) lumen_cli_error(c->cmd, "%s", lumen_ctx_last_error(c->ctx));
  return LUMEN_EXIT_FAILURE;
}
#endif /* LUMEN_HAVE_IO */
