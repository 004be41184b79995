/* The members of a DICOM series (one single-frame file, one frame of an enhanced file, or one
   Siemens mosaic holding a whole volume) as the series reader (dicom_series.c) and its frame
   ordering (dicom_series_order.c) share them. */
#ifndef LUMEN_IO_DICOM_SERIES_INTERNAL_H
#define LUMEN_IO_DICOM_SERIES_INTERNAL_H

#include "io/dicom_internal.h"

/* What a member needs of a header: the image description and the series tags (of its frame). */
typedef struct member_header {
  lumen_dicom_info info;
  lumen_dicom_series_tags series;
  int modality_table;  /* a ModalityLUTSequence maps the stored values (not a rescale) */
} member_header;

/* One member of the series: its file, its header, and its sort keys. */
typedef struct member {
  const char *path;   /* the file, or "FILE frame N" (label) for a frame of an enhanced file */
  const char *file;
  char *label;        /* owned */
  int64_t file_index, frame, file_frames; /* which file, which frame in it (0-based), its frame count */
  int enhanced;       /* 1: a frame of an enhanced file; 2: of a Legacy Converted one whose frame order
                         tags carry their classic names (lumen_dicom_header.legacy_timing) */
  int mosaic;         /* Siemens mosaic: tiles (slices) in the file; info.rows/columns are a tile's */
  int64_t mosaic_rows, mosaic_columns; /* the stored image's size */
  member_header h;
  double along;  /* ImagePositionPatient . normal */
  double key;    /* the frame order key */
} member;

/* Sorts the members into slices x frames: slices by position along the normal, the frames of a
   slice by the first usable source of docs/DICOM.md's precedence; *nz, *nt; frame times, the
   sources used and the notes about the others into info (dicom_series_order.c). */
lumen_status lumen_dicom_series_arrange(lumen_ctx *ctx, member *m, int64_t n, int64_t *nz, int64_t *nt,
                                        lumen_dicom_series_info *info);

#endif
