/* Deflated Explicit VR Little Endian (1.2.840.10008.1.2.1.99, PS3.5 A.5): the data set after the
   file meta group is one raw deflate stream (RFC 1951, no zlib or gzip wrapper). The file is
   inflated in memory, within the memory limit, into a buffer holding the same preamble and meta
   group followed by the inflated data set, whose TransferSyntaxUID is rewritten to explicit VR
   little endian (the same length, NUL-padded) so that the pre-check walks it as any native file;
   the caller reports the original UID (docs/DICOM.md). */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "io/dicom_internal.h"

#define DEFLATED_UID "1.2.840.10008.1.2.1.99"
#define EXPLICIT_LE_UID "1.2.840.10008.1.2.1"

/* The end of the file meta group (group 0002, explicit VR little endian from byte 132) and where
   the TransferSyntaxUID value lies; 0 when the file is not Part 10 or the group is malformed (the
   pre-check then says why). */
static size_t meta_end(const uint8_t *d, size_t n, size_t *ts_at, uint32_t *ts_len) {
  size_t p = 132;
  *ts_at = 0;
  *ts_len = 0;
  if (n < 132 || memcmp(d + 128, "DICM", 4) != 0) return 0;
  while (p + 8 <= n && (d[p] | d[p + 1] << 8) == 0x0002) {
    uint16_t elem = (uint16_t)(d[p + 2] | d[p + 3] << 8);
    int long_form = (d[p + 4] == 'O' || d[p + 4] == 'S' || d[p + 4] == 'U') &&
                    (d[p + 5] == 'B' || d[p + 5] == 'W' || d[p + 5] == 'Q' || d[p + 5] == 'N' || d[p + 5] == 'T' ||
                     d[p + 5] == 'C' || d[p + 5] == 'R');
    uint32_t len;
    size_t value;
    if (long_form) {
      if (p + 12 > n) return 0;
      len = (uint32_t)d[p + 8] | (uint32_t)d[p + 9] << 8 | (uint32_t)d[p + 10] << 16 | (uint32_t)d[p + 11] << 24;
      value = p + 12;
    } else {
      len = (uint32_t)(d[p + 6] | d[p + 7] << 8);
      value = p + 8;
    }
    if (len > n - value) return 0;
    if (elem == 0x0010) *ts_at = value, *ts_len = len;
    p = value + len;
  }
  return p;
}

lumen_status lumen_dicom_inflate(lumen_ctx *ctx, const char *path, int64_t max_bytes, uint8_t **data, size_t *size,
                                 int *inflated) {
  *inflated = 0;
  size_t ts_at;
  uint32_t ts_len;
  size_t end = meta_end(*data, *size, &ts_at, &ts_len);
  size_t uid_len = strlen(DEFLATED_UID);
  if (!end || !ts_at || ts_len < uid_len || ts_len > uid_len + 1 || memcmp(*data + ts_at, DEFLATED_UID, uid_len) != 0 ||
      (ts_len == uid_len + 1 && (*data)[ts_at + uid_len] != 0 && (*data)[ts_at + uid_len] != ' '))
    return LUMEN_OK;  /* not deflated: read as it is */
  size_t cap = (*size - end) * 4 + 4096, max = max_bytes > 0 ? (size_t)max_bytes : SIZE_MAX;
  if (cap > max) cap = max;
  if (cap < end + 1) cap = end + 1;
  uint8_t *out = malloc(cap);
  if (!out) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_read: '%s': out of memory inflating", path);
  memcpy(out, *data, end);
  memcpy(out + ts_at, EXPLICIT_LE_UID, strlen(EXPLICIT_LE_UID));
  memset(out + ts_at + strlen(EXPLICIT_LE_UID), 0, ts_len - strlen(EXPLICIT_LE_UID));
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) {
    free(out);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_read: '%s': inflate could not start", path);
  }
  size_t used = end, in_at = end;
  int zs = Z_OK;
  lumen_status s = LUMEN_OK;
  while (zs == Z_OK) {
    if (used == cap) {  /* grow, within the memory limit */
      if (cap >= max) {
        s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY,
                       "lumen_dicom_read: '%s': the deflated data set inflates past the memory limit (%lld bytes)", path,
                       (long long)max_bytes);
        break;
      }
      size_t grown = cap > max / 2 ? max : cap * 2;
      uint8_t *p = realloc(out, grown);
      if (!p) {
        s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_read: '%s': out of memory inflating", path);
        break;
      }
      out = p;
      cap = grown;
    }
    size_t in_left = *size - in_at, out_left = cap - used;
    z.next_in = *data + in_at;
    z.avail_in = in_left > UINT32_MAX ? UINT32_MAX : (uInt)in_left;
    z.next_out = out + used;
    z.avail_out = out_left > UINT32_MAX ? UINT32_MAX : (uInt)out_left;
    uInt had_in = z.avail_in, had_out = z.avail_out;
    zs = inflate(&z, Z_NO_FLUSH);
    in_at += had_in - z.avail_in;
    used += had_out - z.avail_out;
    if (zs == Z_BUF_ERROR && z.avail_out) zs = Z_DATA_ERROR;  /* input ended before the stream did */
    if (zs == Z_BUF_ERROR) zs = Z_OK;                         /* output full: grow and go on */
  }
  inflateEnd(&z);
  if (s == LUMEN_OK && zs != Z_STREAM_END)
    s = lumen_fail(ctx, LUMEN_ERR_FORMAT,
                   "lumen_dicom_read: '%s': TransferSyntaxUID %s (deflated), but the data set after the file meta group "
                   "is no complete deflate stream (zlib: %s)", path, DEFLATED_UID, z.msg ? z.msg : "truncated");
  if (s != LUMEN_OK) {
    free(out);
    return s;
  }
  free(*data);
  *data = out;
  *size = used;
  *inflated = 1;
  return LUMEN_OK;
}
