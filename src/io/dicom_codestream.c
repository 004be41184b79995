/* The header of each compressed frame checked against the DICOM image description before a
   GDCM codec sees it (docs/DICOM.md): GDCM sizes its output from the DICOM header but copies what
   the codestream describes, so a codestream of other dimensions, components or precision
   overflows its buffers (found by fuzz/fuzz_dicom.c). JPEG 2000: the SIZ marker of a raw
   codestream; JPEG-LS and JPEG: the SOF marker. */
#include <stdio.h>
#include <string.h>
#include "io/dicom_internal.h"

static uint32_t be16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static lumen_status refuse(lumen_ctx *ctx, const char *path, int64_t frame, const char *what, const char *detail) {
  return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_read: '%s': frame %lld: %s%s%s", path, (long long)frame + 1,
                    what, detail ? ": " : "", detail ? detail : "");
}

/* The frame's size and precision against Rows, Columns, BitsStored/BitsAllocated. */
static lumen_status compare(lumen_ctx *ctx, const char *path, int64_t frame, const lumen_dicom_info *in,
                            const char *codec, int64_t width, int64_t height, int64_t components, int precision,
                            int exact_precision) {
  char detail[200];
  if (width != in->columns || height != in->rows || components != 1) {
    snprintf(detail, sizeof detail, "%lld x %lld pixels of %lld component(s), expected Columns %lld x Rows %lld, 1",
             (long long)width, (long long)height, (long long)components, (long long)in->columns, (long long)in->rows);
    return refuse(ctx, path, frame, codec, detail);
  }
  if (precision < 1 || (exact_precision ? precision != in->bits_stored : precision > in->bits_allocated)) {
    snprintf(detail, sizeof detail, "precision %d bits, expected %s%d (%s)", precision,
             exact_precision ? "" : "at most ", exact_precision ? in->bits_stored : in->bits_allocated,
             exact_precision ? "BitsStored" : "BitsAllocated");
    return refuse(ctx, path, frame, codec, detail);
  }
  return LUMEN_OK;
}

static lumen_status j2k(lumen_ctx *ctx, const char *path, const lumen_dicom_info *in, const uint8_t *p, size_t n,
                        int64_t frame) {
  static const char codec[] = "JPEG 2000 codestream";
  if (n < 4 || be16(p) != 0xFF4F || be16(p + 2) != 0xFF51)
    return refuse(ctx, path, frame, codec, "no SOC and SIZ markers at the start (a JP2 file or other data)");
  if (n < 4 + 38 + 3) return refuse(ctx, path, frame, codec, "truncated SIZ marker");
  const uint8_t *s = p + 4;
  uint32_t lsiz = be16(s), xsiz = be32(s + 4), ysiz = be32(s + 8), xo = be32(s + 12), yo = be32(s + 16);
  uint32_t csiz = be16(s + 36);
  if (lsiz != 38 + 3 * csiz || (size_t)lsiz + 4 > n) return refuse(ctx, path, frame, codec, "SIZ length inconsistent");
  if (xo >= xsiz || yo >= ysiz) return refuse(ctx, path, frame, codec, "image offset beyond its size");
  for (uint32_t c = 0; c < csiz; c++)
    if (s[38 + 3 * c + 1] != 1 || s[38 + 3 * c + 2] != 1)
      return refuse(ctx, path, frame, codec, "subsampled component");
  return compare(ctx, path, frame, in, codec, (int64_t)xsiz - xo, (int64_t)ysiz - yo, csiz, (s[38] & 0x7F) + 1, 0);
}

/* The sample precisions ITU-T T.81 (B.2.2, Table B.2) allows a DCT frame: baseline (SOF0) 8 bits,
   the other DCT processes (extended, progressive; Huffman or arithmetic, also hierarchical) 8 or 12;
   NULL when the precision is allowed or the frame is lossless (SOF3/7/11/15: 2 to 16 bits, compare()
   then holds it to BitsStored). A 16-bit lossy frame decodes to garbage in every codec (GDCM's
   libjpeg gives -32768 or 32767 in almost every pixel): refused, not converted. */
static const char *dct_precision(uint32_t marker, int precision) {
  uint32_t process = marker & 0x03; /* SOFn, n = 0..15 without 4, 8, 12: n mod 4 = 3 is lossless */
  if (process == 3) return NULL;
  if (marker == 0xC0) return precision == 8 ? NULL : "8 bits";
  return precision == 8 || precision == 12 ? NULL : "8 or 12 bits";
}

/* JPEG and JPEG-LS: the segments after SOI up to the first SOF (the frame header). */
static lumen_status jpeg(lumen_ctx *ctx, const char *path, const lumen_dicom_info *in, const uint8_t *p, size_t n,
                         int64_t frame, int ls) {
  const char *codec = ls ? "JPEG-LS stream" : "JPEG stream";
  if (n < 4 || be16(p) != 0xFFD8) return refuse(ctx, path, frame, codec, "no SOI marker at the start");
  size_t pos = 2;
  while (pos + 4 <= n) {
    if (p[pos] != 0xFF) return refuse(ctx, path, frame, codec, "a marker expected before the frame header");
    uint32_t marker = p[pos + 1];
    if (marker == 0xFF) {  /* fill byte */
      pos++;
      continue;
    }
    uint32_t len = be16(p + pos + 2);
    if (len < 2 || pos + 2 + len > n) return refuse(ctx, path, frame, codec, "segment length beyond the fragment");
    int sof = ls ? marker == 0xF7
                 : (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC);
    if (ls && marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xCC)
      return refuse(ctx, path, frame, codec, "a JPEG frame header in a JPEG-LS transfer syntax");
    if (!ls && marker == 0xF7)
      return refuse(ctx, path, frame, codec, "a JPEG-LS frame header in a JPEG transfer syntax");
    if (sof) {
      if (len < 8) return refuse(ctx, path, frame, codec, "truncated frame header");
      const uint8_t *f = p + pos + 4;
      const char *why = ls ? NULL : dct_precision(marker, f[0]);
      if (why) {
        char detail[200];
        snprintf(detail, sizeof detail, "precision %d bits in a %s frame (SOF%u), where ITU-T T.81 allows %s: no "
                 "decoder returns this frame's values (gdcmconv --jpeg --lossy writes such frames from 16-bit images)",
                 f[0], marker == 0xC0 ? "baseline" : "lossy DCT", marker - 0xC0, why);
        return refuse(ctx, path, frame, codec, detail);
      }
      return compare(ctx, path, frame, in, codec, be16(f + 3), be16(f + 1), f[5], f[0], 1);
    }
    if (marker == 0xDA || marker == 0xD9) break;  /* a scan or the end before any frame header */
    pos += 2 + len;
  }
  return refuse(ctx, path, frame, codec, "no frame header (SOF) before the scan");
}

lumen_status lumen_dicom_check_codestream(lumen_ctx *ctx, const char *path, const lumen_dicom_header *hdr,
                                          const uint8_t *fragment, size_t length, int64_t frame) {
  const char *ts = hdr->info.transfer_syntax;
  if (strcmp(ts, "1.2.840.10008.1.2.4.90") == 0 || strcmp(ts, "1.2.840.10008.1.2.4.91") == 0)
    return j2k(ctx, path, &hdr->info, fragment, length, frame);
  if (strcmp(ts, "1.2.840.10008.1.2.4.80") == 0 || strcmp(ts, "1.2.840.10008.1.2.4.81") == 0)
    return jpeg(ctx, path, &hdr->info, fragment, length, frame, 1);
  if (strncmp(ts, "1.2.840.10008.1.2.4.", 20) == 0) return jpeg(ctx, path, &hdr->info, fragment, length, frame, 0);
  return LUMEN_OK;  /* RLE: its segment table is checked with the fragments */
}
