/* DICOM inputs of `lumen filter` / `lumen segment` (docs/DICOM.md): what lumen_image_probe calls a
 * DICOM file (the Part 10 signature, or a .dcm name) or a DICOM folder (one image, or a series read
 * by lumen_dicom_series_read, as lumen dce and lumen convert read it: a 3-D or 4-D image), read by
 * lumen_image_read_any. The images of a run are decoded before the batch starts its threads
 * (lumen_imgcli_dicom_preload), so that the library can isolate GDCM in a child process (it only
 * forks a single-threaded process). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/image_cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO /* reads and writes images: not in a build without NIfTI/JSON I/O */

int lumen_imgcli_is_dicom(const char *path) {
  lumen_format_info f;
  lumen_ctx *ctx = NULL; /* the probe's message is not wanted here: the read reports */
  if (lumen_ctx_create(&ctx) != LUMEN_OK) return 0;
  lumen_status s = lumen_image_probe(ctx, path, &f);
  lumen_ctx_destroy(ctx);
  return s == LUMEN_OK && (f.format == LUMEN_IMAGE_FORMAT_DICOM || f.format == LUMEN_IMAGE_FORMAT_DICOM_FOLDER);
}

/* The options of a DICOM input: 2-D or 3-D only (a series of several volumes is refused). */
static lumen_image_read_opts dicom_opts(int64_t max_bytes, int headers_only) {
  lumen_image_read_opts o = {.max_ndim = 3, .max_bytes = max_bytes, .headers_only = headers_only};
  return o;
}

/* read_any's message (the context's last error) made specific to these commands: several series
   in one folder (filter and segment have no --series) point to lumen convert --list; a 4-D
   series to lumen convert. Returns buf. */
static const char *explain(lumen_ctx *ctx, const char *path, char *buf, size_t size) {
  const char *m = lumen_ctx_last_error(ctx);
  if (lumen_ctx_last_status(ctx) == LUMEN_ERR_INVALID_ARGUMENT && strstr(m, "holds several series"))
    snprintf(buf, size, "'%s' holds several series ('lumen convert %s --list' lists them): give the folder or files "
             "of one series", path, path);
  else if (lumen_ctx_last_status(ctx) == LUMEN_ERR_UNSUPPORTED && strstr(m, "(a 4-D image)"))
    snprintf(buf, size, "%s: 'lumen convert' writes it as NIfTI", m);
  else
    snprintf(buf, size, "%s", m);
  return buf;
}

int lumen_imgcli_dicom_window(lumen_imgcli *c, const char *path, double *center, double *width) {
  if (!lumen_imgcli_is_dicom(path)) return 0;
  lumen_image_read_opts o = dicom_opts(0, 1);
  lumen_image_read_info info;
  lumen_image *none = NULL;
  if (lumen_image_read_any(c->ctx, path, &o, &none, &info) != LUMEN_OK) { /* the read reports it */
    lumen_ctx_clear_error(c->ctx);
    return 0;
  }
  int is_series = info.is_series;
  lumen_dicom_info d = info.dicom;
  lumen_image_read_info_clear(&info);
  if (is_series || !d.has_window || !(d.window_width > 0) || !isfinite(d.window_center)) return 0;
  *center = d.window_center;
  *width = d.window_width;
  return 1;
}

int lumen_imgcli_read_dicom(lumen_imgcli *c, lumen_ctx *ctx, const char *path, lumen_image **out) {
  *out = NULL;
  for (int i = 0; c->pre && i < c->njobs; i++)
    if (c->in[i] == path && (c->pre[i] || c->pre_error[i])) { /* decoded before the threads started */
      if (c->pre_error[i]) {
        lumen_cli_error(c->cmd, "%s: %s", path, c->pre_error[i]);
        return 0;
      }
      *out = c->pre[i];
      c->pre[i] = NULL;
      return 1;
    }
  lumen_image_read_opts o = dicom_opts(0, 0);
  char msg[2048];
  if (lumen_image_read_any(ctx, path, &o, out, NULL) != LUMEN_OK) {
    lumen_cli_error(c->cmd, "%s: %s", path, explain(ctx, path, msg, sizeof msg));
    return 0;
  }
  return 1;
}

int lumen_imgcli_dicom_shape(lumen_imgcli *c, const char *path, int *ndim, int64_t dims[4]) {
  /* a series: its headers (every check of the reader, the memory limit, no pixel) */
  lumen_image_read_opts o = dicom_opts(c->memory_limit, 1);
  lumen_image_read_info info;
  lumen_image *none = NULL;
  char msg[2048];
  if (lumen_image_read_any(c->ctx, path, &o, &none, &info) != LUMEN_OK) {
    lumen_cli_error(c->cmd, "%s: %s", path, explain(c->ctx, path, msg, sizeof msg));
    return 0;
  }
  *ndim = info.ndim;
  memcpy(dims, info.dims, sizeof info.dims);
  lumen_image_read_info_clear(&info);
  return 1;
}

void lumen_imgcli_dicom_preload(lumen_imgcli *c) {
  int any = 0;
  for (int i = 0; i < c->njobs && !any; i++) any = lumen_imgcli_is_dicom(c->in[i]);
  if (!any) return;
  c->pre = calloc((size_t)c->njobs, sizeof *c->pre);
  c->pre_error = calloc((size_t)c->njobs, sizeof *c->pre_error);
  if (!c->pre || !c->pre_error) {  /* then every image is read in the batch, in-process */
    free(c->pre);
    free(c->pre_error);
    c->pre = NULL;
    c->pre_error = NULL;
    return;
  }
  /* only what fits --memory-limit (without one: 1 GiB) is decoded ahead; the rest is read in the
     batch, in-process after the pre-check (docs/DICOM.md) */
  int64_t held = 0, budget = c->memory_limit > 0 ? c->memory_limit : INT64_C(1) << 30;
  for (int i = 0; i < c->njobs; i++) {
    if (!lumen_imgcli_is_dicom(c->in[i])) continue;
    int64_t bytes = c->count0 * 4;
    if (held + bytes > budget) break;
    lumen_image_read_opts o = dicom_opts(0, 0);
    char msg[2048];
    if (lumen_image_read_any(c->ctx, c->in[i], &o, &c->pre[i], NULL) != LUMEN_OK) {
      c->pre_error[i] = strdup(explain(c->ctx, c->in[i], msg, sizeof msg));
      if (!c->pre_error[i]) c->pre_error[i] = strdup("out of memory");
    } else {
      held += bytes;
    }
  }
}

void lumen_imgcli_dicom_free(lumen_imgcli *c) {
  for (int i = 0; c->pre && i < c->njobs; i++) {
    lumen_image_free(c->pre[i]);
    free(c->pre_error[i]);
  }
  free(c->pre);
  free(c->pre_error);
  c->pre = NULL;
  c->pre_error = NULL;
}
#endif /* LUMEN_HAVE_IO */
