/* The loader table behind lumen_image_probe / lumen_image_read_any / lumen_image_write_any
   (include/lumen/io.h "image formats"): one row per format, its content test, reader and writer.
   A new format is one more row in image_formats.c and its functions here. */
#ifndef LUMEN_IO_IMAGE_FORMATS_INTERNAL_H
#define LUMEN_IO_IMAGE_FORMATS_INTERNAL_H

#include <stddef.h>
#include "lumen/io.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The first bytes of a file, for the content tests (image_sniff.c): head holds n bytes from
   offset 0; plain holds up to LUMEN_SNIFF_PLAIN bytes of the gzip stream when the file is
   gzip-compressed (plain_n 0 otherwise). */
#define LUMEN_SNIFF_HEAD 1024
#define LUMEN_SNIFF_PLAIN 1024
typedef struct lumen_sniff {
  unsigned char head[LUMEN_SNIFF_HEAD];
  size_t n;
  unsigned char plain[LUMEN_SNIFF_PLAIN];
  size_t plain_n;
  int gzip;
} lumen_sniff;

typedef struct lumen_loader {
  lumen_format_info row; /* static fields only (by_content, suffix_length 0) */
  /* 1 when the bytes are this format's (NULL: no file content, e.g. a folder) */
  int (*sniff)(const lumen_sniff *s);
  /* reads path (opts resolved: never NULL; info never NULL, cleared, info->format set) */
  lumen_status (*read)(lumen_ctx *ctx, const char *path, const lumen_image_read_opts *opts, lumen_image **out,
                       lumen_image_read_info *info);
  /* NULL when lumen does not write the format */
  lumen_status (*write)(lumen_ctx *ctx, const char *path, const lumen_image *image, const lumen_image_write_opts *opts);
} lumen_loader;

/* The row of a format (NULL for UNKNOWN or out of range). */
const lumen_loader *lumen_loader_of(int format);

/* Content tests (image_sniff.c). */
int lumen_sniff_png(const lumen_sniff *s);
int lumen_sniff_nifti(const lumen_sniff *s);
int lumen_sniff_dicom(const lumen_sniff *s);
/* Reads the first bytes of the regular file path into s (and inflates the start of a gzip
   stream); 0 when it cannot be opened or read (no message: the caller decides). */
int lumen_sniff_read(const char *path, lumen_sniff *s);

/* Readers and writers of the rows (image_load.c). */
lumen_status lumen_load_png(lumen_ctx *ctx, const char *path, const lumen_image_read_opts *opts, lumen_image **out,
                            lumen_image_read_info *info);
lumen_status lumen_load_nifti(lumen_ctx *ctx, const char *path, const lumen_image_read_opts *opts, lumen_image **out,
                              lumen_image_read_info *info);
lumen_status lumen_load_dicom(lumen_ctx *ctx, const char *path, const lumen_image_read_opts *opts, lumen_image **out,
                              lumen_image_read_info *info);
lumen_status lumen_load_dicom_folder(lumen_ctx *ctx, const char *path, const lumen_image_read_opts *opts,
                                     lumen_image **out, lumen_image_read_info *info);
lumen_status lumen_save_png(lumen_ctx *ctx, const char *path, const lumen_image *image,
                            const lumen_image_write_opts *opts);
lumen_status lumen_save_nifti(lumen_ctx *ctx, const char *path, const lumen_image *image,
                              const lumen_image_write_opts *opts);

/* ".png, .nii, .nii.gz, .dcm" from the table (writable_only: of the formats lumen writes), for
   messages (image_formats.c). */
void lumen_image_format_suffix_list(char *buf, size_t size, int writable_only);
/* The image's shape and type into info (ndim, dims, dtype), then the max_ndim check of opts:
   LUMEN_ERR_UNSUPPORTED naming path and the shape (image_read_any.c). */
lumen_status lumen_image_read_check_ndim(lumen_ctx *ctx, const char *path, const lumen_image_read_opts *opts,
                                         lumen_image_read_info *info);

/* The one DICOM file directly in folder dir (hidden entries and DICOMDIR skipped): returns how
   many there are (0, 1, or 2 for "several"), the first one's path in file. -1 when the folder
   cannot be opened. */
int lumen_dicom_folder_single(const char *dir, char *file, size_t size);

#ifdef __cplusplus
}
#endif
#endif
