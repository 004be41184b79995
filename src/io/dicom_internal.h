/* Internal pieces of the DICOM reader (docs/DICOM.md): the structural pre-check in C
   (dicom_parse.c), the GDCM decode behind a C boundary (dicom_gdcm.cpp), the child-process
   isolation of that decode (dicom_isolate.c) and the public reader (dicom.c). */
#ifndef LUMEN_IO_DICOM_INTERNAL_H
#define LUMEN_IO_DICOM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "io/io_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The top-level tags a series needs (dicom_series_tags.c); has_* say which were present. */
typedef struct lumen_dicom_series_tags {
  char series_uid[65];        /* SeriesInstanceUID (0020,000E) */
  char series_description[65];/* SeriesDescription (0008,103E), cut at 64 characters */
  int has_position, has_orientation, has_thickness, has_between;
  double position[3];         /* ImagePositionPatient (0020,0032), mm, LPS */
  double orientation[6];      /* ImageOrientationPatient (0020,0037): row then column direction cosines */
  double slice_thickness;     /* SliceThickness (0018,0050), mm */
  double spacing_between;     /* SpacingBetweenSlices (0018,0088), mm */
  int has_temporal, has_trigger, has_acquisition_time, has_content_time;
  double temporal_position;   /* TemporalPositionIdentifier (0020,0100) */
  double trigger_time_ms;     /* TriggerTime (0018,1060), ms */
  double acquisition_time_s;  /* AcquisitionTime (0008,0032), seconds of the day */
  double content_time_s;      /* ContentTime (0008,0033), seconds of the day */
  int has_flip, has_tr;
  double flip_angle_deg;      /* FlipAngle (0018,1314) */
  double repetition_time_ms;  /* RepetitionTime (0018,0080), ms */
} lumen_dicom_series_tags;

/* Remembers tag (a top-level element whose value is length bytes at value) when it is one of
   lumen_dicom_series_tags; a malformed number is LUMEN_ERR_FORMAT naming path and the field. */
lumen_status lumen_dicom_series_tag(lumen_ctx *ctx, const char *path, uint32_t tag, const uint8_t *value,
                                    uint32_t length, lumen_dicom_series_tags *t);

/* What the pre-check learnt from a whole file in memory. */
typedef struct lumen_dicom_header {
  lumen_dicom_info info;     /* the public metadata (rows, columns, spacing, window, ...) */
  lumen_dicom_series_tags series; /* position, orientation, timing, series identity */
  int big_endian;            /* the data set is explicit VR big endian */
  int encapsulated;          /* pixel data are compressed fragments */
  int64_t pixel_offset;      /* the pixel data element's value in the file */
  int64_t pixel_length;      /* its length (native), or the bytes of its fragments (encapsulated) */
  int64_t decoded_bytes;     /* rows x columns x frames x bits_allocated / 8: what the decoder returns */
} lumen_dicom_header;

/* Walks the element stream of a DICOM Part 10 file held in data (preamble and "DICM", file meta
   group, explicit or implicit VR, byte order, lengths within the file, nested sequences and
   undefined lengths, tags in ascending order, encapsulated fragments and RLE segment tables) and
   checks the image description (Rows, Columns, BitsAllocated/Stored, HighBit,
   PixelRepresentation, SamplesPerPixel, PhotometricInterpretation, NumberOfFrames) against the
   pixel data, before any pixel buffer is allocated. Errors (LUMEN_ERR_FORMAT for a malformed
   file, LUMEN_ERR_UNSUPPORTED for a valid one lumen cannot read) name path, the field and the
   expected value. */
lumen_status lumen_dicom_precheck(lumen_ctx *ctx, const char *path, const uint8_t *data, size_t size,
                                  lumen_dicom_header *hdr);

/* Decodes the encapsulated (compressed) pixel data of the pre-checked file in data with GDCM's
   codec for its transfer syntax into dst (exactly hdr->decoded_bytes: little-endian samples of
   bits_allocated bits as stored, before the modality LUT). 0 on success; otherwise a message in
   msg. Never throws (dicom_gdcm.cpp). */
int lumen_dicom_gdcm_decode(const uint8_t *data, size_t size, const lumen_dicom_header *hdr, void *dst,
                            size_t dst_bytes, char *msg, size_t msg_size);

/* How the decode runs (dicom_isolate.c). */
typedef enum lumen_dicom_isolation {
  LUMEN_DICOM_ISOLATE_AUTO = 0,   /* a child process when this process has one thread, else in-process */
  LUMEN_DICOM_ISOLATE_NEVER,      /* in-process (after the pre-check) */
  LUMEN_DICOM_ISOLATE_ALWAYS      /* a child process even with several threads (tests, fuzzing) */
} lumen_dicom_isolation;

/* The frame header inside one compressed frame (JPEG 2000 SIZ, JPEG-LS / JPEG SOF) against the
   image description: size, one component, precision (dicom_codestream.c). frame is 0-based. */
lumen_status lumen_dicom_check_codestream(lumen_ctx *ctx, const char *path, const lumen_dicom_header *hdr,
                                          const uint8_t *fragment, size_t length, int64_t frame);

/* Native pixel data are copied (byte-swapped from big endian) in C; compressed ones go to
   lumen_dicom_gdcm_decode, in a forked child writing into a shared mapping when isolation
   asks for it; a child killed by a signal or failing becomes LUMEN_ERR_FORMAT naming path.
   *isolated tells whether a child process decoded. */
lumen_status lumen_dicom_decode_isolated(lumen_ctx *ctx, const char *path, const uint8_t *data, size_t size,
                                         const lumen_dicom_header *hdr, lumen_dicom_isolation isolation, void *dst,
                                         int *isolated);

/* 1 when /proc/self/status says this process has exactly one thread. */
int lumen_dicom_single_threaded(void);

/* The whole file read and pre-checked (no pixel decoding): the header of one series member. */
lumen_status lumen_dicom_read_series_header(lumen_ctx *ctx, const char *path, int64_t max_bytes,
                                            lumen_dicom_header *hdr);

/* lumen_dicom_read with a chosen isolation (the fuzz target forces each path). */
lumen_status lumen_dicom_read_isolated(lumen_ctx *ctx, const char *path, const lumen_dicom_read_opts *opts,
                                       lumen_dicom_isolation isolation, lumen_image **out, lumen_dicom_info *info);

#ifdef __cplusplus
}
#endif
#endif
