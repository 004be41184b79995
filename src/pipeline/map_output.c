/* A parameter map of a run: the NIfTI file with its intent, the JSON sidecar, the report's
   statistics and figure. Several maps: their files written concurrently (pipe_write_maps). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "io/io_internal.h"
#include "pipeline/pipe_maps.h"
#include "pipeline/pipe_outputs.h"
#include "pipeline/pipe_report.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_strbuf.h"
#include "pipeline/pipe_util.h"
#include "lumen_build_config.h"

/* The map's NIfTI file and its JSON sidecar under run->out, errors on ctx: reads the run, changes
   nothing in it, so that threads may write several maps at once, each with its own context. */
static lumen_status write_map_files(lumen_ctx *ctx, const pipe_run *run, const pipe_map_out *m) {
  int64_t dims[3] = {run->nx, run->ny, run->nz};
  lumen_image *im = NULL;
  lumen_status st = lumen_image_wrap(ctx, (void *)m->data, 3, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), &im);
  if (st != LUMEN_OK) return st;
  lumen_image_set_affine(ctx, im, run->affine);
  lumen_image_set_spacing(ctx, im, run->spacing, 3);
  char path[LUMEN_PIPE_PATH_MAX];
  pipe_join(path, sizeof path, run->out, m->name);
  lumen_nifti_write_opts wo;
  memset(&wo, 0, sizeof wo);
  wo.overwrite = run->cfg->overwrite;
  wo.intent_name = m->param;
  wo.intent_code = LUMEN_NIFTI_INTENT_ESTIMATE;
  wo.description = m->description;
  wo.sform_code = run->sform_code > 0 ? run->sform_code : 1;
  wo.qform_code = run->qform_code > 0 ? run->qform_code : 1;
  wo.compress_level = run->cfg->compress_level;
  st = lumen_nifti_write(ctx, path, im, &wo);
  lumen_image_free(im);
  if (st != LUMEN_OK) return st;
  /* sidecar */
  char sname[300], spath[LUMEN_PIPE_PATH_MAX];
  lumen_sidecar_path(ctx, m->name, sname, sizeof sname);
  pipe_join(spath, sizeof spath, run->out, sname);
  lumen_json *j = NULL;
  st = lumen_json_create(ctx, &j);
  if (st != LUMEN_OK) return st;
  lumen_json_set_string(ctx, j, "Parameter", m->param);
  lumen_json_set_string(ctx, j, "Units", m->unit ? m->unit : "");
  lumen_json_set_string(ctx, j, "Model", m->model ? m->model : "");
  lumen_json_set_string(ctx, j, "Description", m->description);
  lumen_json_set_string(ctx, j, "BackendUsed", m->backend_used ? m->backend_used : "");
  lumen_json_set_string(ctx, j, "SoftwareName", "lumen");
  lumen_json_set_string(ctx, j, "SoftwareVersion", lumen_version());
  lumen_json_set_string(ctx, j, "Command", run->command);
  const char *srcs[PIPE_MAX_INPUTS];
  for (int i = 0; i < run->n_inputs; ++i) srcs[i] = run->inputs[i].path;
  lumen_json_set_strings(ctx, j, "Sources", srcs, run->n_inputs);
  st = lumen_json_write(ctx, j, spath, run->cfg->overwrite);
  lumen_json_free(j);
  return st;
}

/* After the map's files: its entries in the run's outputs, its report statistics and figure. */
static lumen_status record_map(pipe_run *run, const pipe_map_out *m) {
  char sname[300];
  lumen_sidecar_path(run->ctx, m->name, sname, sizeof sname);
  pipe_record_output(run, m->name);
  pipe_output *o = &run->outputs[run->n_outputs - 1];
  snprintf(o->param, sizeof o->param, "%.*s", (int)sizeof o->param - 1, m->param); /* as snprintf cuts it */
  snprintf(o->unit, sizeof o->unit, "%s", m->unit ? m->unit : "");
  snprintf(o->model, sizeof o->model, "%s", m->model ? m->model : "");
  o->is_map = 1;
  pipe_record_output(run, sname);
  if (run->cfg->report) pipe_map_stats(run, m->data, m->state, o);  /* every map's row in the report table */
  lumen_status st = LUMEN_OK;
  if (m->figure && run->cfg->report) {
    st = pipe_render_montage(run, m->data, m->state, o);
    if (st == LUMEN_ERR_NOT_BUILT) { lumen_ctx_clear_error(run->ctx); st = LUMEN_OK; }
  }
  return st;
}

static lumen_status write_one_map(pipe_run *run, const pipe_map_out *m) {
  lumen_status st = pipe_before_write(run);
  if (st == LUMEN_OK) st = write_map_files(run->ctx, run, m);
  if (st == LUMEN_OK) st = record_map(run, m);
  return st;
}

lumen_status pipe_write_map(pipe_run *run, const pipe_map_desc *d) {
  pipe_map_out m = {.data = d->data, .unit = d->unit, .model = d->model, .backend_used = d->backend_used,
                    .figure = d->figure};
  snprintf(m.name, sizeof m.name, "%s", d->name);
  snprintf(m.param, sizeof m.param, "%s", d->param);
  snprintf(m.description, sizeof m.description, "%s", d->description ? d->description : "");
  return write_one_map(run, &m);
}

/* ---- several maps at once */
/* A map written on a thread of its own: its context (threads, log and progress of the run's), the
   messages that context logged (each: the level as one character, the text, a NUL) and the
   status. The messages go to the run's context later, in the order of the maps. */
typedef struct map_writer {
  lumen_ctx *ctx;
  pipe_sb log;
  lumen_status st;
} map_writer;

static void keep_message(void *user, lumen_log_level level, const char *message) {
  pipe_sb_printf(&((map_writer *)user)->log, "%c%s%c", '0' + (int)level, message, '\0');
}

/* Progress of a map's write goes to the run's context (serialised there; cancelling stops the write). */
static int forward_progress(void *user, double fraction, const char *stage) {
  return lumen_progress((lumen_ctx *)user, fraction, stage) != LUMEN_OK;
}

static lumen_status writer_start(map_writer *w, lumen_ctx *run_ctx, int threads) {
  memset(w, 0, sizeof *w);
  if (lumen_ctx_create(&w->ctx) != LUMEN_OK) return LUMEN_ERR_OUT_OF_MEMORY;
  lumen_ctx_set_threads(w->ctx, threads);
  lumen_ctx_set_cpu_simd(w->ctx, lumen_ctx_cpu_simd(run_ctx));
  lumen_ctx_set_log(w->ctx, keep_message, w, LUMEN_LOG_DEBUG);
  lumen_ctx_set_progress(w->ctx, forward_progress, run_ctx);
  return LUMEN_OK;
}

static void writer_end(map_writer *w) {
  lumen_ctx_destroy(w->ctx);
  pipe_sb_free(&w->log);
}

/* The messages of a map's write on the run's context, in their order; a failed write's last error
   message becomes the run's error (lumen_fail logs it, as the write on the run's context had). */
static lumen_status writer_replay(lumen_ctx *ctx, const map_writer *w) {
  const char *last_error = NULL;
  for (size_t i = 0; w->st != LUMEN_OK && i < w->log.n; i += strlen(w->log.s + i) + 1)
    if (w->log.s[i] - '0' == LUMEN_LOG_ERROR) last_error = w->log.s + i;
  for (size_t i = 0; i < w->log.n; i += strlen(w->log.s + i) + 1) {
    const char *msg = w->log.s + i;
    if (msg == last_error) lumen_fail(ctx, w->st, "%s", msg + 1);
    else lumen_log(ctx, (lumen_log_level)(msg[0] - '0'), "%s", msg + 1);
  }
  if (w->st != LUMEN_OK && !last_error) /* the log ran out of memory: the status and message still */
    lumen_fail(ctx, w->st, "%s", lumen_ctx_last_error(w->ctx));
  return w->st;
}

/* Writes maps[0..n) with a thread per map (at most threads at a time) and their contexts in w. */
static void write_files_concurrently(const pipe_run *run, const pipe_map_out *maps, map_writer *w, int n, int threads) {
  (void)threads;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
#endif
  for (int i = 0; i < n; ++i) w[i].st = write_map_files(w[i].ctx, run, &maps[i]);
}

lumen_status pipe_write_maps(pipe_run *run, const pipe_map_out *maps, int n) {
  const int threads = lumen_ctx_threads(run->ctx);
  const int outer = threads < n ? threads : n;
  map_writer *w = outer > 1 && LUMEN_HAVE_OPENMP ? calloc((size_t)n, sizeof *w) : NULL;
  int started = 0;
  /* each map's compression gets the threads the maps leave over (one each when they are more) */
  while (w && started < n && writer_start(&w[started], run->ctx, threads / outer) == LUMEN_OK) ++started;
  lumen_status st = LUMEN_OK;
  if (!w || started < n) { /* one at a time: no threads, or no memory for the contexts */
    for (int i = 0; i < n && st == LUMEN_OK; ++i) st = write_one_map(run, &maps[i]);
  } else {
    st = pipe_before_write(run);
    if (st == LUMEN_OK) write_files_concurrently(run, maps, w, n, outer);
    /* the bookkeeping in the order of the maps, up to the first that failed */
    for (int i = 0; i < n && st == LUMEN_OK; ++i) {
      st = writer_replay(run->ctx, &w[i]);
      if (st == LUMEN_OK) st = record_map(run, &maps[i]);
    }
  }
  for (int i = 0; i < started; ++i) writer_end(&w[i]);
  free(w);
  return st;
}

/* ---- filled on demand, in batches */
/* Up to want more buffers of nvox floats into bufs (after scratch, bufs[0]); returns how many in all. */
static int map_buffers(float **bufs, float *scratch, int want, int64_t nvox) {
  int nb = 0;
  bufs[nb++] = scratch;
  while (nb < want + 1 && (bufs[nb] = malloc(sizeof(float) * (size_t)nvox)) != NULL) ++nb;
  return nb;
}

/* The maps from first that the nb buffers can hold (those with data go as they are): fills them on
   the context's threads, each map on one, and returns the end of the batch. */
static int fill_batch(pipe_run *run, pipe_map_out *maps, int first, int n, float **bufs, int nb, const pipe_map_fill *f) {
  int end = first, used = 0, idx[PIPE_MAX_OUTPUTS];
  for (; end < n && (maps[end].data || used < nb); ++end)
    if (!maps[end].data) idx[used++] = end;
  int threads = lumen_ctx_threads(run->ctx);
  if (threads > used) threads = used > 1 ? used : 1;
  (void)threads;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1)
#endif
  for (int b = 0; b < used; ++b) f->fill(f->user, idx[b], bufs[b]);
  for (int b = 0; b < used; ++b) {
    maps[idx[b]].data = bufs[b];
    if (f->keep) f->keep(f->user, idx[b], bufs[b]);
  }
  return end;
}

lumen_status pipe_write_map_list(pipe_run *run, pipe_map_out *maps, int n, float *scratch, const pipe_map_fill *f) {
  if (n > PIPE_MAX_OUTPUTS) /* more would not be recorded anyway */
    return lumen_fail(run->ctx, LUMEN_ERR_INTERNAL, "pipe_write_map_list: %d maps, at most %d", n, PIPE_MAX_OUTPUTS);
  /* buffers beyond scratch: one per map to fill, but no more than two per thread: more would not
     add threads, only memory (a batch waits for its slowest map, so a little more than one each) */
  int want = -1;
  for (int i = 0; i < n; ++i) want += !maps[i].data;
  const int most = 2 * lumen_ctx_threads(run->ctx) - 1;
  if (want > most) want = most;
  float *bufs[PIPE_MAX_OUTPUTS];
  const int nb = map_buffers(bufs, scratch, want, run->nvox);
  lumen_status st = LUMEN_OK;
  for (int first = 0; first < n && st == LUMEN_OK;) {
    int end = fill_batch(run, maps, first, n, bufs, nb, f);
    /* the batch's share of the caller's bar (the maps written so far) */
    lumen_progress_scope_push(run->ctx, (double)first / n, (double)(end - first) / n, NULL);
    st = pipe_write_maps(run, maps + first, end - first);
    lumen_progress_scope_pop(run->ctx);
    if (st == LUMEN_OK) st = lumen_progress(run->ctx, (double)end / n, "maps");
    first = end;
  }
  for (int b = 1; b < nb; ++b) free(bufs[b]);
  return st;
}
