/* lumen_image_read_any and lumen_image_write_any: the format from the loader table
   (image_formats.c), then that format's reader or writer (image_load.c). */
#include <stdio.h>
#include <string.h>
#include "io/image_formats_internal.h"
#include "io/io_internal.h"

static const char *expected_dims(int max_ndim) {
  return max_ndim == 3 ? "a 2-D or 3-D image" : max_ndim == 2 ? "a 2-D image" : "a 1-D image";
}

lumen_status lumen_image_read_check_ndim(lumen_ctx *ctx, const char *path, const lumen_image_read_opts *opts,
                                         lumen_image_read_info *info) {
  if (opts->max_ndim <= 0 || info->ndim <= opts->max_ndim) return LUMEN_OK;
  const int64_t *d = info->dims;
  if (info->is_series && info->series.frames > 1)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "'%s' is a series of %lld volumes (a 4-D image), expected %s", path,
                      (long long)info->series.frames, expected_dims(opts->max_ndim));
  return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "'%s' is a %d-D image (%lldx%lldx%lldx%lld), expected %s", path,
                    info->ndim, (long long)d[0], (long long)d[1], (long long)d[2], (long long)d[3],
                    expected_dims(opts->max_ndim));
}

void lumen_image_read_info_clear(lumen_image_read_info *info) {
  if (!info) return;
  lumen_dicom_series_info_clear(&info->series);
  memset(info, 0, sizeof *info);
}

lumen_status lumen_image_read_any(lumen_ctx *ctx, const char *path, const lumen_image_read_opts *opts,
                                  lumen_image **out, lumen_image_read_info *info) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  lumen_image_read_info local;
  if (!info) info = &local;
  memset(info, 0, sizeof *info);
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  lumen_image_read_opts defaults;
  memset(&defaults, 0, sizeof defaults);
  if (!opts) opts = &defaults;
  LUMEN_REQUIRE(ctx, opts->max_ndim >= 0 && opts->max_ndim <= 4,
                "lumen_image_read_any: opts->max_ndim is %d, expected 0 (any) to 4", opts->max_ndim);
  LUMEN_REQUIRE(ctx, opts->format >= 0 && opts->format < LUMEN_IMAGE_FORMAT_COUNT,
                "lumen_image_read_any: opts->format is %d, expected 0 (probe) or a lumen_image_format", opts->format);
  lumen_status s = LUMEN_OK;
  if (opts->format) {
    lumen_format_info named; /* the caller's choice wins; the name only measures its suffix */
    lumen_image_format_of_name(path, &named);
    info->format = lumen_loader_of(opts->format)->row;
    info->format.suffix_length = named.format == opts->format ? named.suffix_length : 0;
  } else {
    s = lumen_image_probe(ctx, path, &info->format);
  }
  if (s == LUMEN_OK) s = lumen_loader_of(info->format.format)->read(ctx, path, opts, out, info);
  if (s == LUMEN_OK && *out) {
    info->ndim = lumen_image_ndim(*out);
    for (int a = 0; a < 4; a++) info->dims[a] = a < info->ndim ? lumen_image_dim(*out, a) : 1;
    info->dtype = lumen_image_dtype(*out);
    s = lumen_image_read_check_ndim(ctx, path, opts, info);
  }
  if (s != LUMEN_OK || opts->headers_only) {
    lumen_image_free(*out);
    *out = NULL;
  }
  if (s != LUMEN_OK || info == &local) lumen_image_read_info_clear(info);
  return s;
}

lumen_status lumen_image_write_any(lumen_ctx *ctx, const char *path, const lumen_image *image,
                                   const lumen_image_write_opts *opts) {
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  LUMEN_REQUIRE_NOT_NULL(ctx, image);
  lumen_image_write_opts defaults;
  memset(&defaults, 0, sizeof defaults);
  if (!opts) opts = &defaults;
  lumen_format_info f;
  const lumen_loader *l = lumen_loader_of(lumen_image_format_of_name(path, &f));
  if (!l || !l->write) {
    char expected[96];
    lumen_image_format_suffix_list(expected, sizeof expected, 1);
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_image_write_any: '%s': %s, expected %s", path,
                      l ? "lumen does not write this format" : "unknown output type (by its name)", expected);
  }
  int ndim = 0; /* dimensions that are not 1 */
  for (int a = 0; a < lumen_image_ndim(image); a++)
    if (lumen_image_dim(image, a) > 1) ndim = a + 1;
  if (ndim > 3 ? !(f.holds & LUMEN_FORMAT_HOLDS_4D) : ndim == 3 ? !(f.holds & LUMEN_FORMAT_HOLDS_3D) : 0)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_image_write_any: '%s': a %d-D image cannot be a %s file, "
                      "expected .nii or .nii.gz", path, ndim, f.name);
  return l->write(ctx, path, image, opts);
}
