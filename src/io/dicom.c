/* DICOM image reading (docs/DICOM.md): the file is read into memory, walked by the C pre-check
   (dicom_parse.c); native pixel data are copied here, compressed ones decoded by GDCM's codecs
   (dicom_gdcm.cpp, isolated in a child process by dicom_isolate.c); then the samples are masked
   to BitsStored, passed through the modality LUT and, for MONOCHROME1, inverted, into a float32
   image. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/dicom_internal.h"

/* The first n bytes of the regular file path in buf: 1 when all n were read. */
static int read_head(const char *path, unsigned char *buf, size_t n) {
  if (!path || !lumen_io_is_regular_file(path)) return 0;
  int fd = open(path, O_RDONLY | O_NONBLOCK);
  if (fd < 0) return 0;
  ssize_t got = pread(fd, buf, n, 0);
  close(fd);
  return got == (ssize_t)n;
}

int lumen_dicom_is_dicom_file(const char *path) {
  unsigned char buf[132];
  return read_head(path, buf, sizeof buf) && memcmp(buf + 128, "DICM", 4) == 0;
}

int lumen_dicom_bare_dataset(const uint8_t *d, size_t n) {
  if (n < 8) return 0;
  unsigned gl = (unsigned)(d[0] | d[1] << 8), gb = (unsigned)(d[0] << 8 | d[1]);
  unsigned el = (unsigned)(d[2] | d[3] << 8), eb = (unsigned)(d[2] << 8 | d[3]);
  int vr = d[4] >= 'A' && d[4] <= 'Z' && d[5] >= 'A' && d[5] <= 'Z';
  if ((gl == 0x0002 || gl == 0x0008) && el < 0x0100) return 1;  /* explicit or implicit little endian */
  return gb == 0x0008 && eb < 0x0100 && vr;                      /* explicit big endian */
}

int lumen_dicom_is_bare_file(const char *path) {
  unsigned char buf[8];
  return read_head(path, buf, sizeof buf) && lumen_dicom_bare_dataset(buf, sizeof buf);
}

#ifndef LUMEN_HAVE_DICOM

static lumen_status not_built(lumen_ctx *ctx, const char *path) {
  return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT,
                    "lumen_dicom_read: '%s': lumen was built without DICOM support (GDCM, Debian libgdcm-dev, was "
                    "not found at build time; see docs/DICOM.md)",
                    path ? path : "");
}
lumen_status lumen_dicom_read_isolated(lumen_ctx *ctx, const char *path, const lumen_dicom_read_opts *opts,
                                       lumen_dicom_isolation isolation, lumen_image **out, lumen_dicom_info *info) {
  (void)opts;
  (void)isolation;
  if (out) *out = NULL;
  if (info) memset(info, 0, sizeof *info);
  return not_built(ctx, path);
}
lumen_status lumen_dicom_read_series_header(lumen_ctx *ctx, const char *path, int64_t max_bytes,
                                            lumen_dicom_header *hdr) {
  (void)max_bytes;
  memset(hdr, 0, sizeof *hdr);
  return not_built(ctx, path);
}
lumen_status lumen_dicom_read_header(lumen_ctx *ctx, const char *path, const lumen_dicom_read_opts *opts,
                                     lumen_dicom_info *info) {
  (void)opts;
  if (info) memset(info, 0, sizeof *info);
  return not_built(ctx, path);
}

#else

/* The whole file, refused over max_bytes (lumen_io_slurp: a regular file only). notes: log the
   warnings about what was read leniently (once per file: the pixel read, not the header passes);
   2: a series member's read, whose lossy compression the series reports once for all its files. */
static lumen_status load(lumen_ctx *ctx, const char *path, int64_t max_bytes, lumen_dicom_header *hdr,
                         uint8_t **data, size_t *size, int notes) {
  char *buf = NULL;
  memset(hdr, 0, sizeof *hdr);  /* freed with lumen_dicom_header_free on every path */
  struct stat st;
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (int64_t)st.st_size > max_bytes)  /* the memory limit */
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_read: '%s' has %lld bytes, over the memory limit (%lld bytes)",
                      path, (long long)st.st_size, (long long)max_bytes);
  lumen_status s = lumen_io_slurp(ctx, "lumen_dicom_read", path, max_bytes, &buf, size);
  if (s != LUMEN_OK) return s;
  *data = (uint8_t *)buf;
  int inflated = 0;
  s = lumen_dicom_inflate(ctx, path, max_bytes, data, size, &inflated);
  buf = (char *)*data;
  if (s == LUMEN_OK) s = lumen_dicom_precheck(ctx, path, *data, *size, hdr);
  if (s == LUMEN_OK && inflated)  /* what the file says, not the rewritten UID the walk used */
    snprintf(hdr->info.transfer_syntax, sizeof hdr->info.transfer_syntax, "%s", "1.2.840.10008.1.2.1.99");
  if (s == LUMEN_OK && notes && hdr->extra_items)
    lumen_log(ctx, LUMEN_LOG_WARNING,
              "lumen_dicom_read: '%s': PerFrameFunctionalGroupsSequence (5200,9230) has %lld items for NumberOfFrames "
              "(0028,0008) = %lld; the first %lld describe the frames, the others are ignored",
              path, (long long)(hdr->n_frames + hdr->extra_items), (long long)hdr->info.frames,
              (long long)hdr->n_frames);
  if (s == LUMEN_OK && notes && hdr->zero_spacing)
    lumen_log(ctx, LUMEN_LOG_WARNING, "lumen_dicom_read: '%s': PixelSpacing (0028,0030) is 0\\0 (unknown): read as absent (%s)",
              path, hdr->info.spacing_source ? hdr->info.spacing_source : "spacing 1 x 1 mm");
  /* JPEG baseline and extended are lossy whatever LossyImageCompression says */
  const int lossy_syntax = strcmp(hdr->info.transfer_syntax, "1.2.840.10008.1.2.4.50") == 0 ||
                           strcmp(hdr->info.transfer_syntax, "1.2.840.10008.1.2.4.51") == 0;
  if (s == LUMEN_OK) hdr->lossy |= lossy_syntax;
  if (s == LUMEN_OK && notes == 1 && hdr->lossy)
    lumen_log(ctx, LUMEN_LOG_WARNING,
              "lumen_dicom_read: '%s': lossy compressed (%s): its values differ from the scanner's by the "
              "compression error (and some tools rescale them to fit 12 bits), which maps fitted from them inherit",
              path, lossy_syntax ? "a lossy JPEG transfer syntax" : "LossyImageCompression (0028,2110) is 01");
  if (s == LUMEN_OK && notes && hdr->rle_fragments > 1)
    lumen_log(ctx, LUMEN_LOG_WARNING,
              "lumen_dicom_read: '%s': its RLE frame is split over %lld fragments (DICOM PS3.5 A.4.2 wants one; "
              "dcmcrle --fragment-size and gdcmconv --split write such files): read as one frame",
              path, (long long)hdr->rle_fragments);
  if (s == LUMEN_OK && notes && (hdr->bare || hdr->syntax_guessed))
    lumen_log(ctx, LUMEN_LOG_WARNING, "lumen_dicom_read: '%s': %s%s%s", path,
              hdr->bare ? "no Part 10 header (no 128-byte preamble and \"DICM\"): read from byte 0" : "",
              hdr->bare && hdr->syntax_guessed ? "; " : "",
              hdr->syntax_guessed ? "no TransferSyntaxUID (0002,0010): read as the first element's syntax" : "");
  if (s == LUMEN_OK && hdr->decoded_bytes > max_bytes / 2)  /* decoded samples + the float32 image */
    s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY,
                   "lumen_dicom_read: '%s': %lld x %lld x %lld pixels need more than the memory limit (%lld bytes)",
                   path, (long long)hdr->info.columns, (long long)hdr->info.rows, (long long)hdr->info.frames,
                   (long long)max_bytes);
  if (s != LUMEN_OK) {
    lumen_dicom_header_free(hdr);
    free(buf);
    *data = NULL;
  }
  return s;
}

/* The headers from the first HEADER_PREFIX bytes when they hold them (a native file whose
   PixelData starts there): a series' header pass then reads a few kilobytes per file, not its
   pixels. 0 when the whole file must be read (a smaller or compressed file, longer headers, any
   problem: the full read reports it). Silent: no context, no log. */
#define HEADER_PREFIX (64 * 1024)
static int headers_from_prefix(const char *path, int64_t max_bytes, lumen_dicom_header *hdr) {
  int fd = -1;
  int64_t file_size = 0;
  if (lumen_io_open_regular(NULL, "lumen_dicom_read", path, &fd, &file_size) != LUMEN_OK) return 0;
  int ok = 0;
  uint8_t *buf = file_size > HEADER_PREFIX && file_size <= max_bytes ? malloc(HEADER_PREFIX) : NULL;
  size_t got = 0;
  while (buf && got < HEADER_PREFIX) {
    ssize_t k = pread(fd, buf + got, HEADER_PREFIX - got, (off_t)got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
  }
  if (buf && got == HEADER_PREFIX &&
      lumen_dicom_precheck_headers(NULL, path, buf, got, (size_t)file_size, hdr) == LUMEN_OK) {
    ok = hdr->decoded_bytes <= max_bytes / 2;  /* else the full read refuses it, with its message */
    if (!ok) lumen_dicom_header_free(hdr);
  }
  free(buf);
  close(fd);
  return ok;
}

lumen_status lumen_dicom_read_series_header(lumen_ctx *ctx, const char *path, int64_t max_bytes,
                                            lumen_dicom_header *hdr) {
  uint8_t *data = NULL;
  size_t size = 0;
  int64_t max = lumen_io_resolve_max_bytes(max_bytes);
  if (headers_from_prefix(path, max, hdr)) return LUMEN_OK;
  lumen_status s = load(ctx, path, max, hdr, &data, &size, 0);
  free(data);
  return s;
}

lumen_status lumen_dicom_read_header(lumen_ctx *ctx, const char *path, const lumen_dicom_read_opts *opts,
                                     lumen_dicom_info *info) {
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  if (info) memset(info, 0, sizeof *info);
  lumen_dicom_header hdr;
  uint8_t *data = NULL;
  size_t size = 0;
  lumen_status s = load(ctx, path, lumen_io_resolve_max_bytes(opts ? opts->max_bytes : 0), &hdr, &data, &size, 0);
  free(data);
  if (s == LUMEN_OK && info) *info = hdr.info;
  lumen_dicom_header_free(&hdr);
  return s;
}

/* Native pixel data (checked to be within the file) as little-endian samples. */
static void native_copy(const lumen_dicom_header *hdr, const uint8_t *data, uint8_t *raw) {
  const uint8_t *src = data + hdr->pixel_offset;
  size_t n = (size_t)hdr->decoded_bytes, b = (size_t)lumen_dicom_sample_bytes(hdr->info.bits_allocated);
  if (hdr->info.bits_allocated == 1) {  /* pixel i is bit i % 8 of byte i / 8 (PS3.5 8.1.1), frames not byte-aligned;
                                           an OW value in big endian swaps the bytes of each 16-bit word */
    size_t swap = hdr->pixel_words ? 1 : 0;
    for (size_t i = 0; i < n; i++) raw[i] = (uint8_t)((src[(i >> 3) ^ swap] >> (i & 7)) & 1);
    return;
  }
  if (!hdr->big_endian || b == 1) {
    memcpy(raw, src, n);
    return;
  }
  for (size_t i = 0; i < n; i += b)
    for (size_t k = 0; k < b; k++) raw[i + k] = src[i + b - 1 - k];
}

/* One stored sample as a signed or unsigned integer of bits_stored bits. */
static double sample(const uint8_t *raw, int64_t i, int bytes, int bits_stored, int is_signed) {
  uint32_t v;
  const uint8_t *p = raw + i * bytes;
  if (bytes == 1) v = p[0];
  else if (bytes == 2) v = (uint32_t)p[0] | (uint32_t)p[1] << 8;
  else v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  if (bits_stored < 32) v &= (UINT32_C(1) << bits_stored) - 1;
  if (!is_signed) return (double)v;
  if (bits_stored < 32 && (v >> (bits_stored - 1)) & 1) return (double)v - (double)(UINT64_C(1) << bits_stored);
  if (bits_stored == 32) return (double)(int32_t)v;
  return (double)v;
}

/* The modality LUT's entry for stored value v (hdr->mlut_entries > 0). */
static double lut_value(const lumen_dicom_header *hdr, const uint16_t *lut, double v) {
  double k = v - (double)hdr->mlut_first;
  if (!(k > 0)) return lut[0];
  if (k >= (double)(hdr->mlut_entries - 1)) return lut[hdr->mlut_entries - 1];
  return lut[(int64_t)k];
}

/* Stored samples to float32 through the modality LUT: lut (ModalityLUTSequence's table) when given,
   else slope and intercept; MONOCHROME1 inverted over the LUT's values of the stored range. */
static void to_float(const lumen_dicom_header *hdr, const uint16_t *lut, double slope, double inter,
                     const uint8_t *raw, float *out, int64_t count, int invert) {
  const lumen_dicom_info *in = &hdr->info;
  int bytes = lumen_dicom_sample_bytes(in->bits_allocated), sgn = in->pixel_representation == 1;
  double lo = sgn ? -(double)(UINT64_C(1) << (in->bits_stored - 1)) : 0;
  double hi = sgn ? (double)(UINT64_C(1) << (in->bits_stored - 1)) - 1 : (double)(UINT64_C(1) << in->bits_stored) - 1;
  double flip = lut ? lut_value(hdr, lut, lo) + lut_value(hdr, lut, hi)
                    : (lo + hi) * slope + 2 * inter;  /* modality(lo) + modality(hi) */
  for (int64_t i = 0; i < count; i++) {
    double x = sample(raw, i, bytes, in->bits_stored, sgn);
    double v = lut ? lut_value(hdr, lut, x) : x * slope + inter;
    out[i] = (float)(invert ? flip - v : v);
  }
}

/* ModalityLUTSequence's LUTData (checked by the pre-check to lie in the file) as host uint16; NULL
   and LUMEN_OK when the file has none. */
static lumen_status modality_lut(lumen_ctx *ctx, const lumen_dicom_header *hdr, const uint8_t *data, uint16_t **lut) {
  *lut = NULL;
  if (hdr->mlut_entries <= 0) return LUMEN_OK;
  uint16_t *t = malloc(sizeof *t * (size_t)hdr->mlut_entries);
  if (!t) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_read: out of host memory (modality LUT)");
  const uint8_t *p = data + hdr->mlut_offset;
  for (int64_t i = 0; i < hdr->mlut_entries; i++)
    t[i] = hdr->mlut_big ? (uint16_t)(p[2 * i] << 8 | p[2 * i + 1]) : (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
  *lut = t;
  return LUMEN_OK;
}

static lumen_status read_noted(lumen_ctx *ctx, const char *path, const lumen_dicom_read_opts *opts,
                               lumen_dicom_isolation isolation, int notes, lumen_image **out, lumen_dicom_info *info);

lumen_status lumen_dicom_read_isolated(lumen_ctx *ctx, const char *path, const lumen_dicom_read_opts *opts,
                                       lumen_dicom_isolation isolation, lumen_image **out, lumen_dicom_info *info) {
  return read_noted(ctx, path, opts, isolation, 1, out, info);
}

lumen_status lumen_dicom_read_series_member(lumen_ctx *ctx, const char *path, const lumen_dicom_read_opts *opts,
                                            lumen_image **out) {
  return read_noted(ctx, path, opts, LUMEN_DICOM_ISOLATE_AUTO, 2, out, NULL);
}

static lumen_status read_noted(lumen_ctx *ctx, const char *path, const lumen_dicom_read_opts *opts,
                               lumen_dicom_isolation isolation, int notes, lumen_image **out, lumen_dicom_info *info) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  if (info) memset(info, 0, sizeof *info);
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  int64_t max_bytes = lumen_io_resolve_max_bytes(opts ? opts->max_bytes : 0);
  lumen_dicom_header hdr;
  uint8_t *data = NULL;
  size_t size = 0;
  lumen_status s = load(ctx, path, max_bytes, &hdr, &data, &size, notes);
  if (s != LUMEN_OK) return s;
  lumen_dicom_info *in = &hdr.info;
  uint8_t *raw = malloc((size_t)hdr.decoded_bytes);
  if (!raw) {
    free(data);
    lumen_dicom_header_free(&hdr);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_read: out of host memory decoding '%s'", path);
  }
  uint16_t *lut = NULL;
  s = modality_lut(ctx, &hdr, data, &lut);
  if (s == LUMEN_OK && hdr.encapsulated)
    s = lumen_dicom_decode_isolated(ctx, path, data, size, &hdr, isolation, raw, &in->isolated);
  else if (s == LUMEN_OK)
    native_copy(&hdr, data, raw);
  free(data);
  if (s != LUMEN_OK) {
    free(lut);
    free(raw);
    lumen_dicom_header_free(&hdr);
    return s;
  }
  int64_t dims[3] = {in->columns, in->rows, in->frames};
  int ndim = in->frames > 1 ? 3 : 2;
  lumen_image *im = NULL;
  s = lumen_image_create(ctx, ndim, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im);
  if (s != LUMEN_OK) {
    free(lut);
    free(raw);
    lumen_dicom_header_free(&hdr);
    return s;
  }
  in->inverted = strcmp(in->photometric, "MONOCHROME1") == 0;
  /* frame by frame: an enhanced file's modality LUT may differ between frames (functional groups) */
  int64_t per = in->rows * in->columns, step = per * lumen_dicom_sample_bytes(in->bits_allocated);
  for (int64_t k = 0; k < in->frames; k++) {
    double slope, inter;
    lumen_dicom_frame_rescale(&hdr, k, &slope, &inter);
    to_float(&hdr, lut, slope, inter, raw + k * step, (float *)lumen_image_data(im) + k * per, per, in->inverted);
  }
  free(lut);
  free(raw);
  lumen_dicom_header_free(&hdr);
  double spacing[3] = {in->spacing[0], in->spacing[1], 1};
  (void)lumen_image_set_spacing(ctx, im, spacing, ndim);
  if (in->inverted)
    lumen_log(ctx, LUMEN_LOG_INFO, "lumen_dicom_read: '%s' is MONOCHROME1: values inverted so that larger is brighter",
              path);
  lumen_log(ctx, LUMEN_LOG_DEBUG, "lumen_dicom_read: '%s': %lld x %lld x %lld, %s, decoded %s", path,
            (long long)in->columns, (long long)in->rows, (long long)in->frames, in->transfer_syntax,
            in->isolated ? "in a child process" : "in-process (after the pre-check)");
  *out = im;
  if (info) *info = *in;
  return LUMEN_OK;
}

#endif

lumen_status lumen_dicom_read(lumen_ctx *ctx, const char *path, const lumen_dicom_read_opts *opts, lumen_image **out,
                              lumen_dicom_info *info) {
  return lumen_dicom_read_isolated(ctx, path, opts, LUMEN_DICOM_ISOLATE_AUTO, out, info);
}
