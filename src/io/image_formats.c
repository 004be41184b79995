/* The image formats, decided once: the loader table (one row per format), its listing, the
   format a name asks for, and lumen_image_probe, which asks the content first (include/lumen/io.h
   "image formats"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "io/image_formats_internal.h"
#include "io/io_internal.h"

#define H2 LUMEN_FORMAT_HOLDS_2D
#define H3 LUMEN_FORMAT_HOLDS_3D
#define H4 LUMEN_FORMAT_HOLDS_4D

/* In lumen_image_format order (row k is format k + 1); the content tests run in this order. */
static const lumen_loader loaders[] = {
    {{LUMEN_IMAGE_FORMAT_PNG, "png", "PNG, 8 or 16 bit, grey or colour (read as luminance)", ".png", H2, 1, 0, 0},
     lumen_sniff_png, lumen_load_png, lumen_save_png},
    {{LUMEN_IMAGE_FORMAT_NIFTI, "nifti", "NIfTI-1/2 single file, gzip-compressed or not", ".nii .nii.gz", H2 | H3 | H4,
      1, 0, 0},
     lumen_sniff_nifti, lumen_load_nifti, lumen_save_nifti},
    {{LUMEN_IMAGE_FORMAT_DICOM, "dicom", "DICOM Part 10 file, one image (multi-frame: 3-D)", ".dcm", H2 | H3, 0, 0, 0},
     lumen_sniff_dicom, lumen_load_dicom, NULL},
    {{LUMEN_IMAGE_FORMAT_DICOM_FOLDER, "dicom_folder",
      "folder of DICOM files: one image, or one series (3-D, 4-D with time)", "",
      H2 | H3 | H4 | LUMEN_FORMAT_HOLDS_SERIES, 0, 0, 0},
     NULL, lumen_load_dicom_folder, NULL},
};
#define N_LOADERS ((int)(sizeof loaders / sizeof *loaders))

const lumen_loader *lumen_loader_of(int format) {
  return format >= 1 && format <= N_LOADERS ? &loaders[format - 1] : NULL;
}

int lumen_image_format_count(void) { return N_LOADERS; }

lumen_status lumen_image_format_get(int index, lumen_format_info *info) {
  if (!info) return LUMEN_ERR_INVALID_ARGUMENT;
  memset(info, 0, sizeof *info);
  if (index < 0 || index >= N_LOADERS) return LUMEN_ERR_INVALID_ARGUMENT;
  *info = loaders[index].row;
  return LUMEN_OK;
}

/* The length of the longest suffix of the row's list that ends path (case-insensitive), 0 if none. */
static int suffix_length(const lumen_loader *l, const char *path) {
  int best = 0;
  const char *p = l->row.suffixes;
  while (*p) {
    size_t n = strcspn(p, " ");
    char one[32];
    if (n > 0 && n < sizeof one) {
      memcpy(one, p, n);
      one[n] = 0;
      if (lumen_ends_with_nocase(path, one) && (int)n > best) best = (int)n;
    }
    p += n;
    while (*p == ' ') p++;
  }
  return best;
}

int lumen_image_format_of_name(const char *path, lumen_format_info *info) {
  const lumen_loader *best = NULL;
  int best_len = 0;
  for (int k = 0; path && k < N_LOADERS; k++) {
    int n = suffix_length(&loaders[k], path);
    if (n > best_len) best = &loaders[k], best_len = n;
  }
  if (info) {
    memset(info, 0, sizeof *info);
    if (best) {
      *info = best->row;
      info->suffix_length = best_len;
    }
  }
  return best ? best->row.format : LUMEN_IMAGE_FORMAT_UNKNOWN;
}

/* ".png, .nii, .nii.gz, .dcm" (writable_only: the writable formats'), for messages. */
static void suffix_list(char *buf, size_t size, int writable_only) {
  size_t used = 0;
  buf[0] = 0;
  for (int k = 0; k < N_LOADERS; k++) {
    if (writable_only && !loaders[k].row.can_write) continue;
    for (const char *p = loaders[k].row.suffixes; *p;) {
      size_t n = strcspn(p, " ");
      int w = snprintf(buf + used, size - used, "%s%.*s", used ? ", " : "", (int)n, p);
      if (w < 0 || (size_t)w >= size - used) return;
      used += (size_t)w;
      p += n;
      while (*p == ' ') p++;
    }
  }
}

void lumen_image_format_suffix_list(char *buf, size_t size, int writable_only) { suffix_list(buf, size, writable_only); }

/* What the first bytes look like, for the message about a file of no known format. */
static uint32_t be32_at(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Imaging formats lumen does not read, named so that the message says what to do (nibabel's test
   files: MINC 1 and 2, an Analyze 7.5 .hdr, FreeSurfer's .mgz); NULL for anything else. */
static const char *other_format(const lumen_sniff *s) {
  const unsigned char *h = s->gzip ? s->plain : s->head;
  size_t n = s->gzip ? s->plain_n : s->n;
  if (!s->gzip && n >= 4 && memcmp(h, "CDF", 3) == 0 && (h[3] == 1 || h[3] == 2)) return "a MINC 1 (NetCDF) file";
  if (!s->gzip && n >= 8 && memcmp(h, "\x89HDF\r\n\x1a\n", 8) == 0) return "a MINC 2 (HDF5) file";
  /* sizeof_hdr 348 in either byte order and no NIfTI magic (the NIfTI sniff came first) */
  if (n >= 348 && (be32_at(h) == 348 || (h[0] == 0x5c && h[1] == 1 && h[2] == 0 && h[3] == 0)))
    return "an Analyze 7.5 header (of a .hdr/.img pair)";
  if (n >= 28 && be32_at(h) == 1) { /* MGH: version 1, width, height, depth, frames, type (big endian) */
    int plausible = 1;
    for (int k = 1; k <= 4; k++) plausible &= be32_at(h + 4 * k) >= 1 && be32_at(h + 4 * k) <= (1u << 20);
    uint32_t type = be32_at(h + 20);
    if (plausible && (type == 0 || type == 1 || type == 3 || type == 4)) return "a FreeSurfer MGH file (.mgh, .mgz)";
  }
  return NULL;
}

static void describe_head(const lumen_sniff *s, char *buf, size_t size) {
  const char *other = other_format(s);
  if (other) {
    snprintf(buf, size, "it is %s, which lumen does not read: convert it to NIfTI first", other);
    return;
  }
  if (s->gzip) {
    snprintf(buf, size, "a gzip stream without a NIfTI header in it");
    return;
  }
  char text[17];
  size_t printable = 0;
  for (; printable < s->n && printable < 16; printable++) { /* line ends and tabs shown as spaces */
    unsigned char c = s->head[printable];
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    if (c < 0x20 || c >= 0x7f) break;
    text[printable] = (char)c;
  }
  if (printable >= 4) {
    snprintf(buf, size, "it starts with the text '%.*s'", (int)printable, text);
    return;
  }
  size_t used = (size_t)snprintf(buf, size, "its first bytes are");
  for (size_t i = 0; i < s->n && i < 8 && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, " %02x", s->head[i]);
}

static lumen_status by_name_or_fail(lumen_ctx *ctx, const char *path, const lumen_format_info *by_name,
                                    lumen_format_info *info, lumen_status status, const char *what) {
  if (by_name->format != LUMEN_IMAGE_FORMAT_UNKNOWN) { /* the format's reader gives its precise message */
    *info = *by_name;
    return LUMEN_OK;
  }
  char expected[128];
  suffix_list(expected, sizeof expected, 0);
  return lumen_fail(ctx, status, "lumen_image_probe: '%s' %s: expected an image file (%s) or a folder of DICOM files",
                    path, what, expected);
}

lumen_status lumen_image_probe(lumen_ctx *ctx, const char *path, lumen_format_info *info) {
  LUMEN_REQUIRE_NOT_NULL(ctx, info);
  memset(info, 0, sizeof *info);
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  lumen_format_info by_name;
  lumen_image_format_of_name(path, &by_name);
  struct stat st;
  if (stat(path, &st) != 0) {
    int err = errno;
    struct stat lst;
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
      return lumen_fail(ctx, LUMEN_ERR_IO, "lumen_image_probe: '%s' is a symbolic link to nothing (%s)", path,
                        strerror(err));
    return lumen_fail(ctx, LUMEN_ERR_IO, "lumen_image_probe: cannot open '%s': %s", path, strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    if (!lumen_dicom_is_series_input(path))
      return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                        "lumen_image_probe: '%s' is a folder without a DICOM file (none with \"DICM\" at byte 128, "
                        "4 folder levels down): expected an image file, or a folder of DICOM files (one image or one "
                        "series)", path);
    *info = loaders[LUMEN_IMAGE_FORMAT_DICOM_FOLDER - 1].row;
    info->by_content = 1;
    return LUMEN_OK;
  }
  char what[256];
  if (!S_ISREG(st.st_mode)) {
    snprintf(what, sizeof what, "is %s, not a regular file", lumen_io_kind_name((unsigned)st.st_mode));
    return by_name_or_fail(ctx, path, &by_name, info, LUMEN_ERR_IO, what);
  }
  lumen_sniff s;
  if (!lumen_sniff_read(path, &s)) {
    snprintf(what, sizeof what, "cannot be read (%s)", strerror(errno));
    return by_name_or_fail(ctx, path, &by_name, info, LUMEN_ERR_IO, what);
  }
  for (int k = 0; k < N_LOADERS; k++) {
    if (!loaders[k].sniff || !loaders[k].sniff(&s)) continue;
    *info = loaders[k].row;
    info->by_content = 1;
    info->suffix_length = suffix_length(&loaders[k], path);
    if (by_name.format != LUMEN_IMAGE_FORMAT_UNKNOWN && by_name.format != info->format)
      lumen_log(ctx, LUMEN_LOG_WARNING, "'%s' is named like a %s file but holds %s data: read as %s", path,
                by_name.name, info->name, info->name);
    return LUMEN_OK;
  }
  if (lumen_nifti_pair_member(path) == 2) { /* raw voxels: the .img of a NIfTI pair when its .hdr is one */
    char *hdr = lumen_nifti_pair_sibling(path);
    lumen_sniff hs;
    int pair = hdr && lumen_sniff_read(hdr, &hs) && lumen_sniff_nifti(&hs);
    free(hdr);
    if (pair) {
      *info = loaders[LUMEN_IMAGE_FORMAT_NIFTI - 1].row;
      info->by_content = 1;
      return LUMEN_OK;
    }
  }
  if (s.n == 0) return by_name_or_fail(ctx, path, &by_name, info, LUMEN_ERR_FORMAT, "is empty (0 bytes)");
  char head[160];
  describe_head(&s, head, sizeof head);
  snprintf(what, sizeof what, "is not a PNG, NIfTI or DICOM file (%s), nor named like one", head);
  return by_name_or_fail(ctx, path, &by_name, info, LUMEN_ERR_FORMAT, what);
}
