/* Which fragment of encapsulated pixel data starts a frame: PS3.5 A.4 lets a frame of a
   multi-frame image span several fragments (DCMTK's dcmcjpls/dcmcjpeg +fs, and PACS that cap the
   fragment size, write them), and a frame's first fragment begins with its codestream's start
   marker, which the rest of a valid codestream cannot hold at a fragment's start: JPEG and JPEG-LS
   SOI (FF D8: inside a JPEG scan FF is followed by 00 or a restart marker D0-D7, inside a JPEG-LS
   scan by a byte below 0x80), JPEG 2000 SOC then SIZ (FF 4F FF 51). The pre-check
   (dicom_parse.c) and the GDCM module (dicom_gdcm.cpp, which hands the codec one fragment per
   frame) group the fragments with this one rule. Valid C and C++. */
#ifndef LUMEN_IO_DICOM_FRAME_START_H
#define LUMEN_IO_DICOM_FRAME_START_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* 1: the fragment (p, n bytes) starts a frame; 0: it continues one; -1: the transfer syntax has no
   start marker lumen knows (RLE, ...: one fragment per frame). */
static inline int lumen_dicom_starts_frame(const char *ts, const uint8_t *p, size_t n) {
  if (strcmp(ts, "1.2.840.10008.1.2.4.90") == 0 || strcmp(ts, "1.2.840.10008.1.2.4.91") == 0)
    return n >= 4 && p[0] == 0xFF && p[1] == 0x4F && p[2] == 0xFF && p[3] == 0x51;
  if (strncmp(ts, "1.2.840.10008.1.2.4.", 20) == 0) return n >= 2 && p[0] == 0xFF && p[1] == 0xD8;
  return -1;
}

#endif
