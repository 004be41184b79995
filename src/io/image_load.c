/* The readers and writers of the loader table (image_formats.c): each format's own reader called
   with lumen_image_read_opts; with headers_only, its header reader (the shape, no pixel). */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include "io/image_formats_internal.h"
#include "io/io_internal.h"
#include "io/png_probe.h"

static void set_shape(lumen_image_read_info *info, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3,
                      lumen_dtype dtype) {
  info->ndim = ndim;
  info->dims[0] = d0, info->dims[1] = d1, info->dims[2] = d2, info->dims[3] = d3;
  info->dtype = dtype;
}

lumen_status lumen_load_png(lumen_ctx *ctx, const char *path, const lumen_image_read_opts *opts, lumen_image **out,
                            lumen_image_read_info *info) {
  if (opts->headers_only) {
    int64_t w = 0, h = 0;
    int bits = 8, found = 0;
    lumen_status s = lumen_png_probe(ctx, path, &w, &h, &bits, &found);
    if (s != LUMEN_OK || found) {
      if (s == LUMEN_OK) {
        info->png_bit_depth = bits;
        set_shape(info, 2, w, h, 1, 1,
                  opts->png_to_float ? LUMEN_DTYPE_FLOAT32 : bits == 16 ? LUMEN_DTYPE_UINT16 : LUMEN_DTYPE_UINT8);
      }
      return s;
    }
    /* no PNG header: the full read says why (read_any frees what it would return) */
  }
  lumen_png_read_opts o = {.to_float = opts->png_to_float, .max_bytes = opts->max_bytes};
  return lumen_png_read(ctx, path, &o, out, &info->png_bit_depth);
}

lumen_status lumen_load_nifti(lumen_ctx *ctx, const char *path, const lumen_image_read_opts *opts, lumen_image **out,
                              lumen_image_read_info *info) {
  lumen_nifti_read_opts o = {.keep_type = opts->nifti_keep_type, .max_bytes = opts->max_bytes};
  if (opts->headers_only) {
    lumen_status s = lumen_nifti_read_header(ctx, path, &o, &info->nifti);
    if (s != LUMEN_OK) return s;
    const lumen_nifti_info *n = &info->nifti;
    set_shape(info, n->ndim, n->dims[0], n->dims[1], n->dims[2], n->dims[3],
              opts->nifti_keep_type ? n->stored_dtype : LUMEN_DTYPE_FLOAT32);
    s = lumen_image_read_check_ndim(ctx, path, opts, info);
    if (s != LUMEN_OK || opts->headers_only) return s;
  }
  return lumen_nifti_read(ctx, path, &o, out, &info->nifti);
}

lumen_status lumen_load_dicom(lumen_ctx *ctx, const char *path, const lumen_image_read_opts *opts, lumen_image **out,
                              lumen_image_read_info *info) {
  lumen_dicom_read_opts o = {.max_bytes = opts->max_bytes};
  if (opts->headers_only) { /* a multi-frame file is 3-D */
    lumen_status s = lumen_dicom_read_header(ctx, path, &o, &info->dicom);
    if (s != LUMEN_OK) return s;
    const lumen_dicom_info *d = &info->dicom;
    set_shape(info, d->frames > 1 ? 3 : 2, d->columns, d->rows, d->frames, 1, LUMEN_DTYPE_FLOAT32);
    s = lumen_image_read_check_ndim(ctx, path, opts, info);
    if (s != LUMEN_OK || opts->headers_only) return s;
  }
  return lumen_dicom_read(ctx, path, &o, out, &info->dicom);
}

int lumen_dicom_folder_single(const char *dir, char *file, size_t size) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int found = 0;
  for (struct dirent *e; found < 2 && (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.' || strcmp(e->d_name, "DICOMDIR") == 0) continue;
    char full[4096];
    if (snprintf(full, sizeof full, "%s/%s", dir, e->d_name) >= (int)sizeof full) continue;
    if (!lumen_dicom_is_dicom_file(full)) continue;
    if (found++ == 0) snprintf(file, size, "%s", full);
  }
  closedir(d);
  return found;
}

/* A folder of one DICOM file is that image; of several (or with the files in subfolders), the
   series reader's 3-D / 4-D image. */
lumen_status lumen_load_dicom_folder(lumen_ctx *ctx, const char *path, const lumen_image_read_opts *opts,
                                     lumen_image **out, lumen_image_read_info *info) {
  char file[4096] = "";
  int n = opts->series_uid ? 2 : lumen_dicom_folder_single(path, file, sizeof file);
  if (n < 0) return lumen_fail(ctx, LUMEN_ERR_IO, "lumen_image_read_any: cannot open the folder '%s'", path);
  if (n == 1) return lumen_load_dicom(ctx, file, opts, out, info);
  lumen_dicom_series_opts o = {.max_bytes = opts->max_bytes, .series_uid = opts->series_uid,
                               .headers_only = opts->headers_only};
  lumen_status s = lumen_dicom_series_read(ctx, &path, 1, &o, out, &info->series);
  if (s != LUMEN_OK) return s;
  info->is_series = 1;
  const lumen_dicom_series_info *si = &info->series;
  if (opts->headers_only)
    set_shape(info, si->frames > 1 ? 4 : 3, si->columns, si->rows, si->slices, si->frames, LUMEN_DTYPE_FLOAT32);
  return LUMEN_OK;
}

lumen_status lumen_save_png(lumen_ctx *ctx, const char *path, const lumen_image *image,
                            const lumen_image_write_opts *opts) {
  lumen_png_write_opts o;
  if (opts->png) o = *opts->png;
  else memset(&o, 0, sizeof o);
  o.overwrite = opts->overwrite;
  return lumen_png_write(ctx, path, image, &o);
}

lumen_status lumen_save_nifti(lumen_ctx *ctx, const char *path, const lumen_image *image,
                              const lumen_image_write_opts *opts) {
  lumen_nifti_write_opts o;
  if (opts->nifti) o = *opts->nifti;
  else memset(&o, 0, sizeof o);
  o.overwrite = opts->overwrite;
  return lumen_nifti_write(ctx, path, image, &o);
}
