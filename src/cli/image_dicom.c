/* DICOM inputs of `lumen filter` / `lumen segment` (docs/DICOM.md): a .dcm file (or any file
 * with the DICOM Part 10 signature), or a folder holding one DICOM image, or a series (read by
 * lumen_dicom_series_read, as lumen dce and lumen convert read it: a 3-D or 4-D image). The images of
 * a run are decoded before the batch starts its threads (lumen_imgcli_dicom_preload), so that
 * the library can isolate GDCM in a child process (it only forks a single-threaded process). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/image_cli.h"
#include "io/io_internal.h"

static int is_folder(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int lumen_imgcli_is_dicom(const char *path) {
  return lumen_ends_with_nocase(path, ".dcm") || lumen_ends_with_nocase(path, ".dicom") || is_folder(path) ||
         lumen_dicom_is_dicom_file(path);
}

/* The file to read for input path: path itself, or the one DICOM file in the folder path; 2
   when the folder holds several (a series: path is read as one); 0 with a message when it holds none. */
static int dicom_file(lumen_imgcli *c, const char *path, char *file, size_t size, int quiet) {
  if (!is_folder(path)) {
    snprintf(file, size, "%s", path);
    return 1;
  }
  DIR *d = opendir(path);
  if (!d) {
    if (!quiet) lumen_cli_error(c->cmd, "%s: cannot open the folder", path);
    return 0;
  }
  int found = 0;
  char first[4096] = "";
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.' || strcmp(e->d_name, "DICOMDIR") == 0) continue;
    char full[4096];
    if (snprintf(full, sizeof full, "%s/%s", path, e->d_name) >= (int)sizeof full) continue;
    if (!lumen_dicom_is_dicom_file(full)) continue;
    if (found == 0) snprintf(first, sizeof first, "%s", full);
    found++;
  }
  closedir(d);
  if (found > 1) return 2;
  if (found == 0) {
    if (!quiet)
      lumen_cli_error(c->cmd, "%s: a folder without a DICOM file (\"DICM\" at byte 128), expected an image or a series",
                      path);
    return 0;
  }
  snprintf(file, size, "%s", first);
  return 1;
}

int lumen_imgcli_dicom_window(lumen_imgcli *c, const char *path, double *center, double *width) {
  char file[4096];
  lumen_dicom_info info;
  if (!lumen_imgcli_is_dicom(path) || dicom_file(c, path, file, sizeof file, 1) != 1) return 0;
  if (lumen_dicom_read_header(c->ctx, file, NULL, &info) != LUMEN_OK) { /* the read reports it */
    lumen_ctx_clear_error(c->ctx);
    return 0;
  }
  if (!info.has_window || !(info.window_width > 0) || !isfinite(info.window_center)) return 0;
  *center = info.window_center;
  *width = info.window_width;
  return 1;
}

/* A folder of several DICOM files: the series reader's 3-D / 4-D image. Several series in it
   (the reader lists them, one per line, for --series, which filter and segment do not have): one
   line pointing to lumen convert --list. */
static lumen_status read_series(lumen_ctx *ctx, const char *path, const lumen_dicom_series_opts *o, lumen_image **out,
                                lumen_dicom_series_info *info) {
  lumen_status s = lumen_dicom_series_read(ctx, &path, 1, o, out, info);
  if (s == LUMEN_ERR_INVALID_ARGUMENT && strstr(lumen_ctx_last_error(ctx), "holds several series"))
    s = lumen_fail(ctx, s, "'%s' holds several series ('lumen convert %s --list' lists them): give the folder or "
                   "files of one series", path, path);
  if (s == LUMEN_OK && *out && lumen_image_ndim(*out) == 4) {  /* as a 4-D NIfTI input is refused */
    s = lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "'%s' is a series of %lld volumes (a 4-D image), expected a 2-D or 3-D "
                   "image: 'lumen convert' writes it as NIfTI", path, (long long)lumen_image_dim(*out, 3));
    lumen_image_free(*out);
    *out = NULL;
  }
  return s;
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
  char file[4096];
  int kind = dicom_file(c, path, file, sizeof file, 0);
  if (!kind) return 0;
  lumen_dicom_info info;
  if ((kind == 2 ? read_series(ctx, path, NULL, out, NULL) : lumen_dicom_read(ctx, file, NULL, out, &info)) != LUMEN_OK) {
    lumen_cli_error(c->cmd, "%s: %s", path, lumen_ctx_last_error(ctx));
    return 0;
  }
  return 1;
}

int lumen_imgcli_dicom_shape(lumen_imgcli *c, const char *path, int *ndim, int64_t dims[4]) {
  char file[4096];
  int kind = dicom_file(c, path, file, sizeof file, 0);
  if (!kind) return 0;
  if (kind == 2) {  /* a series: its headers (every check of the reader, no pixel) */
    lumen_dicom_series_opts o = {.max_bytes = c->memory_limit, .headers_only = 1};
    lumen_dicom_series_info si;
    lumen_image *none = NULL;
    if (read_series(c->ctx, path, &o, &none, &si) != LUMEN_OK) {
      lumen_cli_error(c->cmd, "%s: %s", path, lumen_ctx_last_error(c->ctx));
      return 0;
    }
    dims[0] = si.columns, dims[1] = si.rows, dims[2] = si.slices, dims[3] = 1;
    *ndim = 3;
    int64_t frames = si.frames;
    lumen_dicom_series_info_clear(&si);
    if (frames > 1) {
      lumen_cli_error(c->cmd, "%s: a series of %lld volumes (a 4-D image), expected a 2-D or 3-D image: 'lumen convert' "
                      "writes it as NIfTI", path, (long long)frames);
      return 0;
    }
    return 1;
  }
  lumen_dicom_info info;
  if (lumen_dicom_read_header(c->ctx, file, NULL, &info) != LUMEN_OK) {
    lumen_cli_error(c->cmd, "%s: %s", path, lumen_ctx_last_error(c->ctx));
    return 0;
  }
  dims[0] = info.columns;
  dims[1] = info.rows;
  dims[2] = info.frames;
  dims[3] = 1;
  *ndim = info.frames > 1 ? 3 : 2;
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
    char file[4096];
    lumen_dicom_info info;
    const char *err = NULL;
    int kind = 1;
    if (is_folder(c->in[i])) {
      if (!(kind = dicom_file(c, c->in[i], file, sizeof file, 1))) continue; /* the batch read reports it */
    } else {
      snprintf(file, sizeof file, "%s", c->in[i]);
    }
    lumen_status rs = kind == 2 ? read_series(c->ctx, c->in[i], NULL, &c->pre[i], NULL)
                                : lumen_dicom_read(c->ctx, file, NULL, &c->pre[i], &info);
    if (rs != LUMEN_OK)
      err = lumen_ctx_last_error(c->ctx);
    if (err) {
      c->pre_error[i] = strdup(err);
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
