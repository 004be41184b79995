/* NIfTI-1 / NIfTI-2 reading and writing. Headers are parsed and validated here (every size is
   checked before anything is allocated); nifti_clib provides the header layouts, byte swapping
   and the quaternion <-> matrix conversions; zlib does the (de)compression. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <nifti2_io.h>
#include "io/io_internal.h"
#include "lumen_build_config.h"

#define READ_CHUNK ((size_t)4 << 20)
/* voxel data of more than one block report progress ("read <basename>") after every block */
#define PROGRESS_BLOCK ((int64_t)16 << 20)
#define PARALLEL_READ_MIN ((int64_t)64 << 20) /* smaller voxel data: one thread reads it */
/* deflate cannot compress more than about 1032:1; a .nii.gz claiming more data is truncated */
#define GZIP_MAX_RATIO 1032
/* decompressed bytes read after the voxel data of a .nii.gz to reach the gzip trailer; beyond this
   the rest is ignored, not decompressed */
#define TRAILING_MAX ((int64_t)1 << 20)

/* -------------------------------------------------------------------------- datatypes */

static int dtype_from_nifti(int datatype, lumen_dtype *out, int *bytes) {
  switch (datatype) {
    case NIFTI_TYPE_UINT8: *out = LUMEN_DTYPE_UINT8; *bytes = 1; return 1;
    case NIFTI_TYPE_INT8: *out = LUMEN_DTYPE_INT8; *bytes = 1; return 1;
    case NIFTI_TYPE_UINT16: *out = LUMEN_DTYPE_UINT16; *bytes = 2; return 1;
    case NIFTI_TYPE_INT16: *out = LUMEN_DTYPE_INT16; *bytes = 2; return 1;
    case NIFTI_TYPE_UINT32: *out = LUMEN_DTYPE_UINT32; *bytes = 4; return 1;
    case NIFTI_TYPE_INT32: *out = LUMEN_DTYPE_INT32; *bytes = 4; return 1;
    case NIFTI_TYPE_UINT64: *out = LUMEN_DTYPE_UINT64; *bytes = 8; return 1;
    case NIFTI_TYPE_INT64: *out = LUMEN_DTYPE_INT64; *bytes = 8; return 1;
    case NIFTI_TYPE_FLOAT32: *out = LUMEN_DTYPE_FLOAT32; *bytes = 4; return 1;
    case NIFTI_TYPE_FLOAT64: *out = LUMEN_DTYPE_FLOAT64; *bytes = 8; return 1;
    default: return 0;
  }
}

static int nifti_from_dtype(lumen_dtype d) {
  switch (d) {
    case LUMEN_DTYPE_UINT8: return NIFTI_TYPE_UINT8;
    case LUMEN_DTYPE_INT8: return NIFTI_TYPE_INT8;
    case LUMEN_DTYPE_UINT16: return NIFTI_TYPE_UINT16;
    case LUMEN_DTYPE_INT16: return NIFTI_TYPE_INT16;
    case LUMEN_DTYPE_UINT32: return NIFTI_TYPE_UINT32;
    case LUMEN_DTYPE_INT32: return NIFTI_TYPE_INT32;
    case LUMEN_DTYPE_UINT64: return NIFTI_TYPE_UINT64;
    case LUMEN_DTYPE_INT64: return NIFTI_TYPE_INT64;
    case LUMEN_DTYPE_FLOAT64: return NIFTI_TYPE_FLOAT64;
    default: return NIFTI_TYPE_FLOAT32;  /* float32, float16, bfloat16 */
  }
}

/* Bit width a known-but-unsupported datatype has (for the bitpix check and the message). */
static const char *unsupported_type_name(int datatype) {
  switch (datatype) {
    case NIFTI_TYPE_COMPLEX64: return "complex64";
    case NIFTI_TYPE_COMPLEX128: return "complex128";
    case NIFTI_TYPE_COMPLEX256: return "complex256";
    case NIFTI_TYPE_FLOAT128: return "float128";
    case NIFTI_TYPE_RGB24: return "rgb24";
    case NIFTI_TYPE_RGBA32: return "rgba32";
    case DT_BINARY: return "binary (1 bit)";
    default: return NULL;
  }
}

/* ----------------------------------------------------------------------- header parsing */

typedef struct parsed_header {
  int version;
  int swapped;
  int64_t dim[8];
  int datatype, bitpix;
  double pixdim[8];
  int64_t vox_offset;
  double scl_slope, scl_inter, cal_min, cal_max, toffset;
  int qform_code, sform_code;
  double quatern[6];  /* b c d x y z */
  double srow[12];
  int xyzt_units, intent_code;
  char intent_name[17], descrip[81];
  int pair;           /* the header of a .hdr/.img pair (magic "ni1" / "ni2"): the voxels are in the .img */
} parsed_header;

static uint32_t bswap32(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}

static void copy_text(char *dst, const char *src, size_t n) {
  memcpy(dst, src, n);
  dst[n] = '\0';
  for (size_t i = 0; i < n; i++) {
    if (dst[i] == '\0') break;
    if ((unsigned char)dst[i] < 32 || (unsigned char)dst[i] > 126) dst[i] = '?';
  }
}

typedef struct reader {
  lumen_ctx *ctx;
  const char *fn;
  const char *path;
  gzFile gz;
  int fd;         /* gz's file (lumen_io_pread_parallel reads it directly) */
  int compressed;
  int64_t file_size;
  int64_t max_bytes;
  parsed_header h;
  int ndim;
  int64_t dims[4];
  int64_t count;
  lumen_dtype stored;
  int elem;
  int64_t data_bytes;
  char *own_path;  /* a pair's other file, named in the messages once read (owned) */
} reader;

#define RFAIL(r, st, ...) lumen_fail((r)->ctx, (st), __VA_ARGS__)

/* zlib's message without the "<fd:N>: " prefix gzdopen gives it. */
static const char *gz_message(gzFile gz, int *zerr) {
  const char *msg = gzerror(gz, zerr);
  if (!msg || !msg[0]) return "error";
  if (msg[0] == '<') {
    const char *c = strstr(msg, ">: ");
    if (c) return c + 3;
  }
  return msg;
}

/* Reads exactly n bytes (the part [base, base + n) of `total` bytes of the `what`);
   distinguishes a short file from a broken gzip stream. *short_read is set for a plain EOF. */
static lumen_status read_exact(reader *r, void *buf, size_t n, const char *what, int64_t base, int64_t total,
                               int64_t *got_out, int *short_read) {
  size_t got = 0;
  unsigned char *p = buf;
  if (short_read) *short_read = 0;
  while (got < n) {
    size_t want = n - got;
    if (want > ((size_t)1 << 30)) want = (size_t)1 << 30;
    int k = gzread(r->gz, p + got, (unsigned)want);
    if (k < 0) {
      int zerr = 0;
      const char *msg = gz_message(r->gz, &zerr);
      if (got_out) *got_out = (int64_t)got;
      if (zerr == Z_ERRNO)
        return RFAIL(r, LUMEN_ERR_IO, "%s: cannot read '%s' (%s): %s", r->fn, r->path, what, strerror(errno));
      if (zerr == Z_MEM_ERROR) /* zlib could not allocate its buffers: not the file's fault */
        return RFAIL(r, LUMEN_ERR_OUT_OF_MEMORY, "%s: cannot read '%s' (%s): out of host memory for gzip decompression",
                     r->fn, r->path, what);
      return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s' is corrupt: bad gzip data in the %s after %lld of %lld bytes (%s)",
                   r->fn, r->path, what, (long long)(base + (int64_t)got), (long long)total, msg);
    }
    if (k == 0) break;
    got += (size_t)k;
  }
  if (got_out) *got_out = (int64_t)got;
  if (got < n) {
    int zerr = 0;
    const char *msg = gz_message(r->gz, &zerr);
    if (zerr != Z_OK && zerr != Z_ERRNO)
      return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s' is truncated (gzip: %s): the %s ends after %lld of %lld bytes",
                   r->fn, r->path, msg, what, (long long)(base + (int64_t)got), (long long)total);
    if (short_read) *short_read = 1;
    return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s' is truncated: the %s ends after %lld of %lld bytes", r->fn, r->path,
                 what, (long long)(base + (int64_t)got), (long long)total);
  }
  return LUMEN_OK;
}

/* Copies the fields NIfTI-1 and NIfTI-2 headers share by name (their C types differ, hence a
   macro) from h into the parsed header p; vox_offset, checked per version, is not one of them. */
#define COPY_SHARED_FIELDS(p, h)                                                                       \
  do {                                                                                                 \
    for (int i = 0; i < 8; i++) {                                                                      \
      (p)->dim[i] = (h).dim[i];                                                                        \
      (p)->pixdim[i] = (h).pixdim[i];                                                                  \
    }                                                                                                  \
    (p)->datatype = (h).datatype;                                                                      \
    (p)->bitpix = (h).bitpix;                                                                          \
    (p)->scl_slope = (h).scl_slope;                                                                    \
    (p)->scl_inter = (h).scl_inter;                                                                    \
    (p)->cal_min = (h).cal_min;                                                                        \
    (p)->cal_max = (h).cal_max;                                                                        \
    (p)->toffset = (h).toffset;                                                                        \
    (p)->qform_code = (h).qform_code;                                                                  \
    (p)->sform_code = (h).sform_code;                                                                  \
    (p)->quatern[0] = (h).quatern_b; (p)->quatern[1] = (h).quatern_c; (p)->quatern[2] = (h).quatern_d; \
    (p)->quatern[3] = (h).qoffset_x; (p)->quatern[4] = (h).qoffset_y; (p)->quatern[5] = (h).qoffset_z; \
    for (int i = 0; i < 4; i++) {                                                                      \
      (p)->srow[i] = (h).srow_x[i];                                                                    \
      (p)->srow[4 + i] = (h).srow_y[i];                                                                \
      (p)->srow[8 + i] = (h).srow_z[i];                                                                \
    }                                                                                                  \
    (p)->xyzt_units = (unsigned char)(h).xyzt_units;                                                   \
    (p)->intent_code = (h).intent_code;                                                                \
    copy_text((p)->intent_name, (h).intent_name, 16);                                                  \
    copy_text((p)->descrip, (h).descrip, 80);                                                          \
  } while (0)


static lumen_status parse_n1(reader *r, const unsigned char *raw) {
  nifti_1_header h;
  memcpy(&h, raw, sizeof h);
  if (r->h.swapped) swap_nifti_header(&h, 1);
  if (!isfinite(h.vox_offset) || h.vox_offset < 0 || h.vox_offset > 4e18)
    return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s': header field vox_offset is %g, expected a byte offset >= 352",
                 r->fn, r->path, (double)h.vox_offset);
  r->h.version = 1;
  r->h.vox_offset = (int64_t)h.vox_offset;
  COPY_SHARED_FIELDS(&r->h, h);
  r->h.pair = memcmp(h.magic, "ni1", 4) == 0;
  if (!r->h.pair && memcmp(h.magic, "n+1", 4) != 0)
    return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s': header field magic is not \"n+1\" nor \"ni1\" (not a NIfTI-1 file; "
                 "ANALYZE 7.5 is not read)", r->fn, r->path);
  return LUMEN_OK;
}

static lumen_status parse_n2(reader *r, const unsigned char *raw) {
  static const char magic_single[8] = {'n', '+', '2', '\0', '\r', '\n', '\032', '\n'};
  static const char magic_pair[8] = {'n', 'i', '2', '\0', '\r', '\n', '\032', '\n'};
  nifti_2_header h;
  memcpy(&h, raw, sizeof h);
  if (r->h.swapped) swap_nifti_header(&h, 2);
  r->h.version = 2;
  r->h.vox_offset = h.vox_offset;
  COPY_SHARED_FIELDS(&r->h, h);
  r->h.pair = memcmp(h.magic, magic_pair, 8) == 0;
  if (!r->h.pair && memcmp(h.magic, magic_single, 8) != 0)
    return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s': header field magic is not \"n+2\\0\\r\\n\\032\\n\" nor "
                 "\"ni2...\" (not a NIfTI-2 file)", r->fn, r->path);
  return LUMEN_OK;
}

/* Checks every field that decides how much is allocated and read. */
static lumen_status validate(reader *r) {
  parsed_header *p = &r->h;
  int64_t nd = p->dim[0];
  if (nd < 1 || nd > 7)
    return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s': header field dim[0] is %lld, expected 1..7", r->fn, r->path,
                 (long long)nd);
  for (int i = 1; i <= nd; i++)
    if (p->dim[i] < 1)
      return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s': header field dim[%d] is %lld, expected >= 1", r->fn, r->path, i,
                   (long long)p->dim[i]);
  int usable = (int)nd;
  while (usable > LUMEN_IMAGE_MAX_DIMS && p->dim[usable] == 1) usable--;
  if (usable > LUMEN_IMAGE_MAX_DIMS)
    return RFAIL(r, LUMEN_ERR_UNSUPPORTED, "%s: '%s': header field dim[%d] is %lld; images of more than 4 "
                 "dimensions are not supported (dims 5..7 must be 1)", r->fn, r->path, usable,
                 (long long)p->dim[usable]);
  const char *bad = unsupported_type_name(p->datatype);
  if (!dtype_from_nifti(p->datatype, &r->stored, &r->elem)) {
    if (bad)
      return RFAIL(r, LUMEN_ERR_UNSUPPORTED, "%s: '%s': header field datatype is %d (%s), expected a real scalar "
                   "type (uint8..int64, float32, float64)", r->fn, r->path, p->datatype, bad);
    return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s': header field datatype is %d, which is not a NIfTI datatype",
                 r->fn, r->path, p->datatype);
  }
  if (p->bitpix != 8 * r->elem)
    return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s': header field bitpix is %d, expected %d for datatype %d (%s)",
                 r->fn, r->path, p->bitpix, 8 * r->elem, p->datatype, lumen_dtype_name(r->stored));
  r->ndim = usable;
  int64_t count = 1;
  for (int i = 1; i <= nd; i++) {
    if (lumen_mul_i64(count, p->dim[i], &count))
      return RFAIL(r, LUMEN_ERR_OVERFLOW, "%s: '%s': header dims %lld x %lld x %lld x %lld ...: the voxel count "
                   "overflows int64 at dim[%d]", r->fn, r->path, (long long)p->dim[1], (long long)p->dim[2],
                   (long long)p->dim[3], (long long)p->dim[4], i);
  }
  for (int i = 0; i < 4; i++) r->dims[i] = i < usable ? p->dim[i + 1] : 1;
  r->count = count;
  int64_t bytes, out_bytes, end;
  if (lumen_mul_i64(count, r->elem, &bytes) || lumen_mul_i64(count, 8, &out_bytes))
    return RFAIL(r, LUMEN_ERR_OVERFLOW, "%s: '%s': %lld voxels of %d bytes overflow int64", r->fn, r->path,
                 (long long)count, r->elem);
  (void)out_bytes;
  r->data_bytes = bytes;
  int64_t out4 = count * 4;  /* fits: count * 8 did */
  int64_t need = bytes > out4 ? bytes : out4;
  if (need > r->max_bytes)
    return RFAIL(r, LUMEN_ERR_OUT_OF_MEMORY, "%s: '%s': header dims %lldx%lldx%lldx%lld (%lld voxels of %s) need "
                 "%lld bytes, over the memory limit of %lld bytes (max_bytes / --memory-limit)", r->fn, r->path,
                 (long long)r->dims[0], (long long)r->dims[1], (long long)r->dims[2], (long long)r->dims[3],
                 (long long)count, lumen_dtype_name(r->stored), (long long)need, (long long)r->max_bytes);
  int64_t hdr_min = p->pair ? 0 : p->version == 1 ? 348 : 540; /* a pair's .img holds the voxels alone */
  if (p->vox_offset < hdr_min) {
    int64_t fixed = p->version == 1 ? 352 : 544;
    lumen_log(r->ctx, LUMEN_LOG_WARNING, "%s: '%s': header field vox_offset is %lld, below the header size; using %lld",
              r->fn, r->path, (long long)p->vox_offset, (long long)fixed);
    p->vox_offset = fixed;
  }
  if (lumen_add_i64(p->vox_offset, bytes, &end))
    return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s': header field vox_offset %lld plus %lld data bytes overflows",
                 r->fn, r->path, (long long)p->vox_offset, (long long)bytes);
  if (!r->compressed && end > r->file_size)
    return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s' is truncated: header (dims %lldx%lldx%lldx%lld, %s) needs %lld "
                 "bytes from vox_offset %lld, expected a file of %lld bytes, found %lld", r->fn, r->path,
                 (long long)r->dims[0], (long long)r->dims[1], (long long)r->dims[2], (long long)r->dims[3],
                 lumen_dtype_name(r->stored), (long long)bytes, (long long)p->vox_offset, (long long)end,
                 (long long)r->file_size);
  if (r->compressed && end / GZIP_MAX_RATIO > r->file_size + 1024)
    return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s' is truncated: header (vox_offset %lld, dims %lldx%lldx%lldx%lld, %s) "
                 "needs %lld bytes, more than %lld compressed bytes can hold", r->fn, r->path,
                 (long long)p->vox_offset, (long long)r->dims[0], (long long)r->dims[1], (long long)r->dims[2],
                 (long long)r->dims[3], lumen_dtype_name(r->stored), (long long)end, (long long)r->file_size);
  return LUMEN_OK;
}

static double det3(const double *m) { /* rows of 4 */
  return m[0] * (m[5] * m[10] - m[6] * m[9]) - m[1] * (m[4] * m[10] - m[6] * m[8]) +
         m[2] * (m[4] * m[9] - m[5] * m[8]);
}

static int affine_ok(const double *a) {
  for (int i = 0; i < 12; i++)
    if (!isfinite(a[i])) return 0;
  return det3(a) != 0.0;
}

static void fill_info(reader *r, lumen_nifti_info *info) {
  parsed_header *p = &r->h;
  memset(info, 0, sizeof *info);
  info->version = p->version;
  info->compressed = r->compressed;
  info->swapped = p->swapped;
  info->ndim = r->ndim;
  for (int i = 0; i < 4; i++) info->dims[i] = r->dims[i];
  info->datatype = p->datatype;
  info->stored_dtype = r->stored;
  info->scl_slope = p->scl_slope;
  info->scl_inter = p->scl_inter;
  info->qform_code = p->qform_code;
  info->sform_code = p->sform_code;
  for (int i = 0; i < 8; i++) info->pixdim[i] = p->pixdim[i];
  info->space_unit = p->xyzt_units & 7;
  info->time_unit = p->xyzt_units & 56;
  info->time_step = p->pixdim[4];
  double scale = 1.0;
  if (info->time_unit == LUMEN_NIFTI_UNITS_MSEC) scale = 1e-3;
  if (info->time_unit == LUMEN_NIFTI_UNITS_USEC) scale = 1e-6;
  info->time_step_s = p->pixdim[4] * scale;
  info->toffset = p->toffset;
  info->intent_code = p->intent_code;
  memcpy(info->intent_name, p->intent_name, sizeof info->intent_name);
  memcpy(info->descrip, p->descrip, sizeof info->descrip);
  info->cal_min = p->cal_min;
  info->cal_max = p->cal_max;
  info->vox_offset = p->vox_offset;
  /* affine: sform, else qform, else pixdim (NIfTI "method 1") */
  double a[16] = {0};
  a[15] = 1.0;
  const char *source = NULL;
  if (p->sform_code > 0) {
    memcpy(a, p->srow, 12 * sizeof(double));
    if (affine_ok(a))
      source = "sform";
    else
      lumen_log(r->ctx, LUMEN_LOG_WARNING, "%s: '%s': the sform is singular or not finite; using the qform",
                r->fn, r->path);
  }
  if (!source && p->qform_code > 0) {
    double qfac = p->pixdim[0] < 0 ? -1.0 : 1.0;
    nifti_dmat44 q = nifti_quatern_to_dmat44(p->quatern[0], p->quatern[1], p->quatern[2], p->quatern[3],
                                             p->quatern[4], p->quatern[5], p->pixdim[1], p->pixdim[2],
                                             p->pixdim[3], qfac);
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 4; j++) a[i * 4 + j] = q.m[i][j];
    if (affine_ok(a))
      source = "qform";
    else
      lumen_log(r->ctx, LUMEN_LOG_WARNING, "%s: '%s': the qform is singular or not finite; using pixdim",
                r->fn, r->path);
  }
  if (!source) {
    memset(a, 0, sizeof a);
    for (int i = 0; i < 3; i++) {
      double d = fabs(p->pixdim[i + 1]);
      a[i * 4 + i] = (isfinite(d) && d > 0 && d < 1e300) ? d : 1.0;
    }
    a[15] = 1.0;
    source = "pixdim";
  }
  info->affine_source = source;
  memcpy(info->affine, a, sizeof a);
}

/* Opens PATH for reading (plain or gzip): r->fd, r->gz, r->compressed, r->file_size. Never blocks: a
   FIFO or device as input is refused before anything is read. */
static lumen_status open_data(reader *r, const char *path) {
  int fd = -1;
  lumen_status os = lumen_io_open_regular(r->ctx, r->fn, path, &fd, &r->file_size);
  if (os != LUMEN_OK) return os;
  unsigned char magic[2] = {0, 0};
  ssize_t k = pread(fd, magic, 2, 0);
  r->compressed = k == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  r->fd = fd;
  r->gz = gzdopen(fd, "rb");
  if (!r->gz) {
    close(fd);
    return lumen_fail(r->ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: cannot start reading '%s'", r->fn, path);
  }
  gzbuffer(r->gz, 256 * 1024);
  return LUMEN_OK;
}

/* After a pair's header (read from the .hdr): the voxels from the .img, which the user named
   (member 2: PATH) or which lies beside the .hdr. A single-file header under a pair's name is
   refused when the user named the .img (its voxels would be the .hdr's). */
static lumen_status switch_to_pair_data(reader *r, const char *path, int member) {
  if (!r->h.pair)
    return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s' names the data file of a .hdr/.img pair, but '%s' is a single-file "
                 "NIfTI header (magic \"n+%d\"), not a pair's (\"ni%d\")", r->fn, path, r->path, r->h.version,
                 r->h.version);
  if (member == 0)
    return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s' holds the header of a NIfTI .hdr/.img pair (magic \"ni%d\") but is not "
                 "named .hdr: the voxels of a pair are in its .img (name the two X.hdr and X.img)", r->fn, path,
                 r->h.version);
  char *data = member == 2 ? NULL : lumen_nifti_pair_sibling(path);
  if (member != 2 && !data)
    return RFAIL(r, LUMEN_ERR_IO, "%s: '%s' is the header of a NIfTI .hdr/.img pair (magic \"ni%d\"), but its data "
                 "file (the same name with .img or .img.gz) is not there", r->fn, path, r->h.version);
  gzclose(r->gz);
  r->gz = NULL;
  free(r->own_path);
  r->own_path = data;
  r->path = member == 2 ? path : data;
  return open_data(r, r->path);
}

static lumen_status open_reader(lumen_ctx *ctx, const char *fn, const char *path, const lumen_nifti_read_opts *opts,
                                reader *r) {
  memset(r, 0, sizeof *r);
  r->ctx = ctx;
  r->fn = fn;
  r->path = path;
  r->max_bytes = lumen_io_resolve_max_bytes(opts ? opts->max_bytes : 0);
  LUMEN_REQUIRE(ctx, !opts || opts->keep_type == 0 || opts->keep_type == 1, "%s: opts->keep_type is %d, expected 0 or 1",
                fn, opts ? opts->keep_type : 0);
  /* a pair named by its .img: the header from its .hdr */
  int member = lumen_nifti_pair_member(path);
  if (member == 2) {
    r->own_path = lumen_nifti_pair_sibling(path);
    if (!r->own_path)
      return lumen_fail(ctx, LUMEN_ERR_IO, "%s: '%s' is the data file of a NIfTI .hdr/.img pair, but its header "
                        "(the same name with .hdr or .hdr.gz) is not there", fn, path);
    r->path = r->own_path;
  }
  lumen_status os = open_data(r, r->path);
  if (os != LUMEN_OK) return os;
  unsigned char raw[540];
  memset(raw, 0, sizeof raw);
  int64_t got = 0;
  int short_read = 0;
  lumen_status s = read_exact(r, raw, 348, "header", 0, 348, &got, &short_read);
  if (s != LUMEN_OK) {
    if (short_read)
      s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: '%s' has %lld bytes%s, too short for a NIfTI header (348 bytes)", fn,
                     path, (long long)got, r->compressed ? " after decompression" : "");
    return s;
  }
  int32_t sz;
  memcpy(&sz, raw, 4);
  if (sz == 348 || (int32_t)bswap32((uint32_t)sz) == 348) {
    r->h.swapped = sz != 348;
    s = parse_n1(r, raw);
  } else if (sz == 540 || (int32_t)bswap32((uint32_t)sz) == 540) {
    r->h.swapped = sz != 540;
    s = read_exact(r, raw + 348, 540 - 348, "NIfTI-2 header", 348, 540, NULL, NULL);
    if (s == LUMEN_OK) s = parse_n2(r, raw);
  } else {
    s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: '%s': header field sizeof_hdr is %d, expected 348 (NIfTI-1) or 540 "
                   "(NIfTI-2): not a NIfTI file", fn, path, (int)sz);
  }
  if (s == LUMEN_OK && (r->h.pair || member == 2)) s = switch_to_pair_data(r, path, member);
  if (s == LUMEN_OK) s = validate(r);
  return s;
}

static void close_reader(reader *r) {
  if (r->gz) gzclose(r->gz);
  r->gz = NULL;
  free(r->own_path);
  r->own_path = NULL;
}

lumen_status lumen_nifti_read_header(lumen_ctx *ctx, const char *path, const lumen_nifti_read_opts *opts,
                                     lumen_nifti_info *info) {
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  LUMEN_REQUIRE_NOT_NULL(ctx, info);
  memset(info, 0, sizeof *info);
  reader r;
  lumen_status s = open_reader(ctx, "lumen_nifti_read_header", path, opts, &r);
  if (s == LUMEN_OK) fill_info(&r, info);
  close_reader(&r);
  return s;
}

/* Converts n stored values (native byte order) to float32, applying y = slope * x + inter. */
static void to_float(const void *in, float *out, size_t n, lumen_dtype t, int scale, double slope, double inter) {
#define CONV(T)                                                                           \
  do {                                                                                    \
    const T *v = in;                                                                      \
    if (scale)                                                                            \
      for (size_t i = 0; i < n; i++) out[i] = (float)((double)v[i] * slope + inter);      \
    else                                                                                  \
      for (size_t i = 0; i < n; i++) out[i] = (float)v[i];                                \
  } while (0)
  switch (t) {
    case LUMEN_DTYPE_UINT8: CONV(uint8_t); break;
    case LUMEN_DTYPE_INT8: CONV(int8_t); break;
    case LUMEN_DTYPE_UINT16: CONV(uint16_t); break;
    case LUMEN_DTYPE_INT16: CONV(int16_t); break;
    case LUMEN_DTYPE_UINT32: CONV(uint32_t); break;
    case LUMEN_DTYPE_INT32: CONV(int32_t); break;
    case LUMEN_DTYPE_UINT64: CONV(uint64_t); break;
    case LUMEN_DTYPE_INT64: CONV(int64_t); break;
    case LUMEN_DTYPE_FLOAT32: CONV(float); break;
    case LUMEN_DTYPE_FLOAT64: CONV(double); break;
    default: break;
  }
#undef CONV
}

/* After the voxel data of a .nii.gz: reads on to the end of the gzip stream so that zlib checks its
   trailer (CRC and length), but at most TRAILING_MAX decompressed bytes. Data after the voxels are
   not part of the image: more than that is ignored with an INFO line (and that CRC stays
   unchecked) instead of decompressing gigabytes of it (issue 15). */
static lumen_status check_gzip_end(reader *r) {
  unsigned char tail[4096];
  int64_t extra = 0;
  for (;;) {
    int k = extra < TRAILING_MAX ? gzread(r->gz, tail, sizeof tail) : 0;
    if (k > 0) {
      extra += k;
      continue;
    }
    int zerr = 0;
    const char *msg = gz_message(r->gz, &zerr);
    if (k < 0 || (zerr != Z_OK && zerr != Z_ERRNO))
      return RFAIL(r, LUMEN_ERR_FORMAT, "%s: '%s' is truncated or corrupt after the voxel data (gzip: %s)", r->fn,
                   r->path, msg);
    break;
  }
  if (extra >= TRAILING_MAX)
    lumen_log(r->ctx, LUMEN_LOG_INFO, "%s: '%s': more than %lld bytes follow the voxel data (vox_offset %lld + %lld "
              "bytes); ignored, not decompressed", r->fn, r->path, (long long)TRAILING_MAX,
              (long long)r->h.vox_offset, (long long)r->data_bytes);
  else if (extra > 0)
    lumen_log(r->ctx, LUMEN_LOG_INFO, "%s: '%s': %lld bytes after the voxel data ignored", r->fn, r->path,
              (long long)extra);
  return LUMEN_OK;
}

/* A converting read's destination (lumen_io_pread_parallel's convert): float32 values of the
   stored type with the file's scaling. */
typedef struct float_target {
  float *out;
  lumen_dtype stored;
  int scale;
  double slope, inter;
} float_target;

static void slice_to_float(void *user, const unsigned char *src, int64_t first, int64_t n) {
  const float_target *t = user;
  to_float(src, t->out + first, (size_t)n, t->stored, t->scale, t->slope, t->inter);
}

/* The first touch of a large fresh buffer on the context's threads, before the read copies into
   it: the kernel zeroes each new page at its first touch (~0.23 s for 670 MB on one thread here),
   which the serial copy would otherwise pay alone. Small buffers are left to the copy. */
static void prefault(unsigned char *dst, int64_t bytes, int threads) {
  if (bytes < ((int64_t)64 << 20) || threads < 2) return;
  const int64_t page = 4096, pages = (bytes + page - 1) / page;
  (void)threads;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for schedule(static) num_threads(threads)
#endif
  for (int64_t k = 0; k < pages; ++k) dst[k * page] = 0;
}

lumen_status lumen_nifti_read(lumen_ctx *ctx, const char *path, const lumen_nifti_read_opts *opts, lumen_image **out,
                              lumen_nifti_info *info) {
  static const char fn[] = "lumen_nifti_read";
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  lumen_nifti_info local;
  if (!info) info = &local;
  memset(info, 0, sizeof *info);
  reader r;
  lumen_status s = open_reader(ctx, fn, path, opts, &r);
  if (s != LUMEN_OK) {
    close_reader(&r);
    return s;
  }
  fill_info(&r, info);
  parsed_header *p = &r.h;
  int keep = opts && opts->keep_type;
  double slope = p->scl_slope, inter = p->scl_inter;
  int scale = !keep && slope != 0.0 && isfinite(slope) && isfinite(inter) && !(slope == 1.0 && inter == 0.0);
  if (!keep && slope != 0.0 && (!isfinite(slope) || !isfinite(inter)))
    lumen_log(ctx, LUMEN_LOG_WARNING, "%s: '%s': scl_slope %g / scl_inter %g are not finite; not applied", fn, path,
              slope, inter);
  info->scaled = scale;
  lumen_dtype out_type = keep ? r.stored : LUMEN_DTYPE_FLOAT32;
  lumen_image *im = NULL;
  s = lumen_image_create(ctx, r.ndim, r.dims, out_type, lumen_device_cpu(), 0, &im);
  if (s != LUMEN_OK) {
    close_reader(&r);
    return lumen_fail(ctx, s, "%s: '%s': cannot allocate %lld voxels of %s: %s", fn, path, (long long)r.count,
                      lumen_dtype_name(out_type), lumen_status_string(s));
  }
  /* skip to the voxel data */
  z_off_t pos = gztell(r.gz);
  if (pos < 0 || (int64_t)pos > p->vox_offset) {
    s = lumen_fail(ctx, LUMEN_ERR_INTERNAL, "%s: '%s': unexpected read position", fn, path);
  } else if ((int64_t)pos < p->vox_offset) {
    z_off_t to = gzseek(r.gz, (z_off_t)p->vox_offset, SEEK_SET);
    if (to != (z_off_t)p->vox_offset) {
      int zerr = 0;
      const char *msg = gz_message(r.gz, &zerr);
      s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: '%s' is truncated or corrupt: cannot reach vox_offset %lld (%s)", fn,
                     path, (long long)p->vox_offset, zerr != Z_OK ? msg : "end of file");
    }
  }
  int need_swap = p->swapped && r.elem > 1;
  int direct = out_type == r.stored && !scale;
  unsigned char *scratch = NULL;
  if (s == LUMEN_OK && !direct) {
    scratch = malloc(READ_CHUNK);
    if (!scratch) s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory reading '%s'", fn, path);
  }
  unsigned char *dst = lumen_image_data(im);
  int64_t done = 0;
  const int threads = lumen_ctx_threads(ctx);
  /* large uncompressed voxel data: read (and converted to float32) by the threads (io_pread.c) */
  const int parallel = !r.compressed && threads > 1 && r.data_bytes >= PARALLEL_READ_MIN;
  if (s == LUMEN_OK && direct && !parallel) prefault(dst, r.data_bytes, threads);
  /* progress: 0 before the data, after every PROGRESS_BLOCK bytes read (decompressed), 1 once
     the data (and the gzip trailer) are read; the callback may cancel at any of these */
  int report = r.data_bytes > PROGRESS_BLOCK;
  int64_t next_report = PROGRESS_BLOCK;
  char stage[96];
  {
    const char *base = strrchr(path, '/');
    snprintf(stage, sizeof stage, "read %s", base && base[1] ? base + 1 : path);
  }
  if (s == LUMEN_OK && report) s = lumen_progress(ctx, 0.0, stage);
  if (s == LUMEN_OK && parallel) {
    float_target ft = {(float *)dst, r.stored, scale, slope, inter};
    lumen_io_pread_job job = {ctx,     r.fd,    p->vox_offset, r.data_bytes, dst,          r.elem,
                              need_swap ? nifti_swap_Nbytes : NULL,  direct ? NULL : slice_to_float,
                              &ft,     threads, fn,            path,         "voxel data", report ? stage : NULL};
    s = lumen_io_pread_parallel(&job);
    if (s == LUMEN_OK) done = r.data_bytes;
  }
  while (s == LUMEN_OK && done < r.data_bytes) {
    int64_t left = r.data_bytes - done;
    size_t chunk = left > (int64_t)READ_CHUNK ? READ_CHUNK : (size_t)left;
    chunk -= chunk % (size_t)r.elem;
    unsigned char *buf = direct ? dst + done : scratch;
    int64_t got = 0;
    s = read_exact(&r, buf, chunk, "voxel data", done, r.data_bytes, &got, NULL);
    if (s != LUMEN_OK) break;
    size_t n = chunk / (size_t)r.elem;
    if (need_swap) nifti_swap_Nbytes((int64_t)n, r.elem, buf);
    if (!direct) to_float(buf, (float *)dst + done / r.elem, n, r.stored, scale, slope, inter);
    done += (int64_t)chunk;
    if (report && done >= next_report && done < r.data_bytes) {
      s = lumen_progress(ctx, (double)done / (double)r.data_bytes, stage);
      next_report = (done / PROGRESS_BLOCK + 1) * PROGRESS_BLOCK;
    }
  }
  free(scratch);
  if (s == LUMEN_OK && r.compressed) s = check_gzip_end(&r);
  if (s == LUMEN_OK && !r.compressed && r.file_size > p->vox_offset + r.data_bytes)
    lumen_log(ctx, LUMEN_LOG_INFO, "%s: '%s': %lld bytes after the voxel data ignored", fn, path,
              (long long)(r.file_size - p->vox_offset - r.data_bytes));
  close_reader(&r);
  if (s == LUMEN_OK && report) s = lumen_progress(ctx, 1.0, stage);
  if (s == LUMEN_ERR_CANCELLED)
    s = lumen_fail(ctx, s, "%s: '%s': %s", fn, path, lumen_ctx_last_error(ctx));
  if (s == LUMEN_OK) {
    double sp[4];
    for (int i = 0; i < r.ndim; i++) {
      double d = fabs(p->pixdim[i + 1]);
      sp[i] = (isfinite(d) && d > 0 && d < 1e300) ? d : 1.0;
    }
    s = lumen_image_set_spacing(ctx, im, sp, r.ndim);
    if (s == LUMEN_OK) s = lumen_image_set_affine(ctx, im, info->affine);
  }
  if (s != LUMEN_OK) {
    lumen_image_free(im);
    return s;
  }
  *out = im;
  return LUMEN_OK;
}

/* ------------------------------------------------------------------------------ writing */

static int is_identity(const double *a) {
  for (int i = 0; i < 16; i++)
    if (a[i] != (i % 5 == 0 ? 1.0 : 0.0)) return 0;
  return 1;
}

static const char write_fn[] = "lumen_nifti_write";

/* What both header versions hold, worked out from the image and the options. */
typedef struct {
  int64_t dims[8];
  double pix[8], aff[16];
  double qb, qc, qd, qx, qy, qz;
  int ndtype, elem, sform, qform, xyzt_units, intent;
} header_fields;

static lumen_status check_write_opts(lumen_ctx *ctx, const lumen_nifti_write_opts *o) {
  const char *fn = write_fn;
  LUMEN_REQUIRE(ctx, o->version >= 0 && o->version <= 2, "%s: opts->version is %d, expected 0, 1 or 2", fn, o->version);
  LUMEN_REQUIRE(ctx, o->compress_level >= 0 && o->compress_level <= 9, "%s: opts->compress_level is %d, expected 0..9",
                fn, o->compress_level);
  LUMEN_REQUIRE(ctx, !o->intent_name || strlen(o->intent_name) <= 15,
                "%s: opts->intent_name '%s' has %zu characters, expected at most 15", fn,
                o->intent_name ? o->intent_name : "", o->intent_name ? strlen(o->intent_name) : (size_t)0);
  LUMEN_REQUIRE(ctx, o->sform_code >= -1 && o->sform_code <= 5 && o->qform_code >= -1 && o->qform_code <= 5,
                "%s: opts sform_code %d / qform_code %d, expected -1..5", fn, o->sform_code, o->qform_code);
  return LUMEN_OK;
}

/* dims (NIfTI-1 holds at most 32767 per axis), pixdim, the affine (the spacing when the image has
   none) and qform's quaternion, its closest rigid part. */
static lumen_status header_geometry(lumen_ctx *ctx, const char *path, const lumen_image *image, int v2,
                                    header_fields *hf) {
  int ndim = lumen_image_ndim(image);
  int64_t *dims = hf->dims;
  for (int i = 0; i < 8; i++) dims[i] = i == 0 ? ndim : 1;
  for (int i = 0; i < ndim; i++) dims[i + 1] = lumen_image_dim(image, i);
  if (!v2)
    for (int i = 1; i <= ndim; i++)
      if (dims[i] > 32767)
        return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "%s: '%s': dims[%d] is %lld, over NIfTI-1's limit of 32767; "
                          "write NIfTI-2 (opts->version = 2)", write_fn, path, i - 1, (long long)dims[i]);
  double sp[4] = {1, 1, 1, 1};
  double *aff = hf->aff;
  lumen_image_get_spacing(image, sp, ndim);
  lumen_image_get_affine(image, aff);
  if (is_identity(aff))
    for (int i = 0; i < 3; i++) aff[i * 4 + i] = i < ndim ? sp[i] : 1.0;
  nifti_dmat44 R;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) R.m[i][j] = aff[i * 4 + j];
  double dx, dy, dz, qfac;
  nifti_dmat44_to_quatern(R, &hf->qb, &hf->qc, &hf->qd, &hf->qx, &hf->qy, &hf->qz, &dx, &dy, &dz, &qfac);
  for (int i = 0; i < 8; i++) hf->pix[i] = i == 0 ? qfac : 1;
  for (int i = 0; i < ndim; i++) hf->pix[i + 1] = sp[i];
  return LUMEN_OK;
}

static lumen_status header_fields_of(lumen_ctx *ctx, const char *path, const lumen_image *image,
                                     const lumen_nifti_write_opts *o, header_fields *hf) {
  lumen_dtype stored;
  hf->ndtype = nifti_from_dtype(lumen_image_dtype(image));
  hf->elem = 0;
  dtype_from_nifti(hf->ndtype, &stored, &hf->elem);
  lumen_status s = header_geometry(ctx, path, image, o->version == 2, hf);
  if (s != LUMEN_OK) return s;
  hf->sform = o->sform_code < 0 ? NIFTI_XFORM_UNKNOWN : o->sform_code ? o->sform_code : NIFTI_XFORM_SCANNER_ANAT;
  hf->qform = o->qform_code < 0 ? NIFTI_XFORM_UNKNOWN : o->qform_code ? o->qform_code : NIFTI_XFORM_SCANNER_ANAT;
  int space_unit = o->space_unit ? o->space_unit : LUMEN_NIFTI_UNITS_MM;
  int time_unit = o->time_unit ? o->time_unit : LUMEN_NIFTI_UNITS_SEC;
  LUMEN_REQUIRE(ctx, (space_unit & ~7) == 0 && (time_unit & ~56) == 0,
                "%s: opts space_unit %d / time_unit %d are not NIfTI unit codes", write_fn, space_unit, time_unit);
  hf->xyzt_units = space_unit | time_unit;
  hf->intent = o->intent_code ? o->intent_code
                              : (o->intent_name && o->intent_name[0] ? LUMEN_NIFTI_INTENT_ESTIMATE : 0);
  return LUMEN_OK;
}

/* The fields of both versions, whose types differ (NIfTI-1 short and float, NIfTI-2 int and double). */
#define FILL_HEADER(h, hf, o, T_DIM, T_CODE, T_FLOAT)                                               \
  do {                                                                                              \
    for (int i = 0; i < 8; i++) {                                                                   \
      (h).dim[i] = (T_DIM)(hf)->dims[i];                                                            \
      (h).pixdim[i] = (T_FLOAT)(hf)->pix[i];                                                        \
    }                                                                                               \
    (h).datatype = (int16_t)(hf)->ndtype;                                                           \
    (h).bitpix = (int16_t)(8 * (hf)->elem);                                                         \
    if ((o)->intent_name) strncpy((h).intent_name, (o)->intent_name, 15);                           \
    if ((o)->description) strncpy((h).descrip, (o)->description, 79);                               \
    (h).cal_min = (T_FLOAT)(o)->cal_min;                                                            \
    (h).cal_max = (T_FLOAT)(o)->cal_max;                                                            \
    (h).toffset = (T_FLOAT)(o)->toffset;                                                            \
    (h).qform_code = (T_CODE)(hf)->qform;                                                           \
    (h).sform_code = (T_CODE)(hf)->sform;                                                           \
    (h).quatern_b = (T_FLOAT)(hf)->qb; (h).quatern_c = (T_FLOAT)(hf)->qc;                           \
    (h).quatern_d = (T_FLOAT)(hf)->qd;                                                              \
    (h).qoffset_x = (T_FLOAT)(hf)->qx; (h).qoffset_y = (T_FLOAT)(hf)->qy;                           \
    (h).qoffset_z = (T_FLOAT)(hf)->qz;                                                              \
    for (int j = 0; j < 4; j++) {                                                                   \
      (h).srow_x[j] = (T_FLOAT)(hf)->aff[j];                                                        \
      (h).srow_y[j] = (T_FLOAT)(hf)->aff[4 + j];                                                    \
      (h).srow_z[j] = (T_FLOAT)(hf)->aff[8 + j];                                                    \
    }                                                                                               \
  } while (0)

/* The header and the padding up to the voxels (352 bytes); returns its size. */
static size_t build_n1_header(const header_fields *hf, const lumen_nifti_write_opts *o, unsigned char *hdr) {
  nifti_1_header h;
  memset(&h, 0, sizeof h);  /* every byte of the header that is written, padding too */
  h.sizeof_hdr = 348;
  FILL_HEADER(h, hf, o, short, short, float);
  h.vox_offset = 352.0f;
  h.scl_slope = 0.0f;
  h.scl_inter = 0.0f;
  h.xyzt_units = (char)hf->xyzt_units;
  h.intent_code = (short)hf->intent;
  memcpy(h.magic, "n+1", 4);
  memcpy(hdr, &h, sizeof h);
  return 352;
}

static size_t build_n2_header(const header_fields *hf, const lumen_nifti_write_opts *o, unsigned char *hdr) {
  nifti_2_header h;
  memset(&h, 0, sizeof h);  /* every byte of the header that is written, padding too */
  h.sizeof_hdr = 540;
  static const char magic2[8] = {'n', '+', '2', '\0', '\r', '\n', '\032', '\n'};
  memcpy(h.magic, magic2, 8);
  FILL_HEADER(h, hf, o, int64_t, int, double);
  h.vox_offset = 544;
  h.xyzt_units = hf->xyzt_units;
  h.intent_code = hf->intent;
  memcpy(hdr, &h, sizeof h);
  return 544;
}

/* float16 / bfloat16 voxels are stored as float32, converted a chunk at a time. */
static lumen_status write_half_as_float(lumen_ctx *ctx, lumen_atomic_file *f, const lumen_image *image,
                                        const char *path) {
  lumen_dtype dt = lumen_image_dtype(image);
  const uint16_t *src = (const uint16_t *)lumen_image_const_data(image);
  int64_t count = lumen_image_count(image);
  const size_t n_chunk = 1 << 20;
  lumen_status s = LUMEN_OK;
  float *tmp = malloc(n_chunk * sizeof(float));
  if (!tmp) s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory writing '%s'", write_fn, path);
  for (int64_t i = 0; s == LUMEN_OK && i < count; i += (int64_t)n_chunk) {
    int64_t n = count - i < (int64_t)n_chunk ? count - i : (int64_t)n_chunk;
    if (dt == LUMEN_DTYPE_FLOAT16)
      lumen_convert_f16_to_f32(src + i, tmp, n);
    else
      lumen_convert_bf16_to_f32(src + i, tmp, n);
    s = lumen_atomic_write(f, tmp, (size_t)n * sizeof(float));
  }
  free(tmp);
  return s;
}

/* Voxels as they are in memory, in 16 MiB chunks (progress reported above 64 MiB). */
static lumen_status write_raw_voxels(lumen_ctx *ctx, lumen_atomic_file *f, const lumen_image *image) {
  const unsigned char *data = lumen_image_const_data(image);
  int64_t nbytes = lumen_image_nbytes(image);
  const int64_t chunk = (int64_t)16 << 20;
  lumen_status s = LUMEN_OK;
  for (int64_t i = 0; s == LUMEN_OK && i < nbytes; i += chunk) {
    int64_t n = nbytes - i < chunk ? nbytes - i : chunk;
    s = lumen_atomic_write(f, data + i, (size_t)n);
    if (s == LUMEN_OK && nbytes > ((int64_t)64 << 20))
      s = lumen_progress(ctx, (double)(i + n) / (double)nbytes, "write NIfTI");
  }
  return s;
}

/* Header then voxels into a temporary file, renamed over path only when all is written. */
static lumen_status write_file(lumen_ctx *ctx, const char *path, const lumen_image *image,
                               const lumen_nifti_write_opts *o, const unsigned char *hdr, size_t hdr_size) {
  int gz = lumen_ends_with(path, ".gz");
  lumen_atomic_file *f = NULL;
  lumen_status s = lumen_atomic_open(ctx, path, o->overwrite, gz ? (o->compress_level ? o->compress_level : 6) : 0, &f);
  if (s != LUMEN_OK) return lumen_fail(ctx, s, "%s: %s", write_fn, lumen_ctx_last_error(ctx));
  s = lumen_atomic_write(f, hdr, hdr_size);
  if (s == LUMEN_OK) {
    lumen_dtype dt = lumen_image_dtype(image);
    if (dt == LUMEN_DTYPE_FLOAT16 || dt == LUMEN_DTYPE_BFLOAT16)
      s = write_half_as_float(ctx, f, image, path);
    else
      s = write_raw_voxels(ctx, f, image);
  }
  if (s == LUMEN_OK) {
    s = lumen_atomic_commit(f);
  } else {
    lumen_atomic_abort(f);
  }
  if (s != LUMEN_OK) return lumen_fail(ctx, s, "%s: %s", write_fn, lumen_ctx_last_error(ctx));
  return LUMEN_OK;
}

lumen_status lumen_nifti_write(lumen_ctx *ctx, const char *path, const lumen_image *image,
                               const lumen_nifti_write_opts *opts) {
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  LUMEN_REQUIRE_NOT_NULL(ctx, image);
  lumen_nifti_write_opts o;
  memset(&o, 0, sizeof o);
  if (opts) o = *opts;
  lumen_status s = check_write_opts(ctx, &o);
  if (s != LUMEN_OK) return s;
  if (lumen_image_device(image).kind != LUMEN_DEVICE_CPU)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "%s: '%s': the image is on a device; copy it to the host first",
                      write_fn, path);
  header_fields hf;
  s = header_fields_of(ctx, path, image, &o, &hf);
  if (s != LUMEN_OK) return s;
  unsigned char hdr[544];
  memset(hdr, 0, sizeof hdr);
  size_t hdr_size = o.version == 2 ? build_n2_header(&hf, &o, hdr) : build_n1_header(&hf, &o, hdr);
  return write_file(ctx, path, image, &o, hdr, hdr_size);
}
