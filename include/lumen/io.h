/* lumen: file input and output. NIfTI-1/2 (.nii, .nii.gz) through nifti_clib and zlib, JSON
   sidecars through cJSON, PNG through libpng, DICOM images through GDCM, and numeric text tables
   (curves, times, AIFs).
   Lives in the separate library lumen_io so the core builds without these packages.
   docs/FILES.md describes the formats, the limits and the atomic-write rule.

   Common rules:
   - Every file is untrusted: sizes are validated before anything is allocated, and a file that
     claims more than the memory limit (max_bytes) is refused. Errors name the file, the field and
     the expected value (in the context's last-error message).
   - Every writer is atomic: the data go to a hidden temporary file in the same folder
     (".NAME.tmp-PID-N"), which is fsynced and then renamed to NAME, and the folder is fsynced.
     An existing NAME is never replaced unless `overwrite` is set (LUMEN_ERR_IO "... exists"),
     and even then only a regular file: a symlink, FIFO, device node, socket or folder at NAME is
     refused (LUMEN_ERR_IO "... is a FIFO (named pipe), and only a regular file is replaced").
   - Every reader refuses an input that is not a regular file (a FIFO, a device, a folder) before
     reading from it, so that no read blocks (LUMEN_ERR_IO "... is a FIFO (named pipe), expected a
     regular file").
     On any failure the temporary file is removed and nothing appears under NAME.
   - Options structs: NULL or a zero-initialised struct means all defaults.
   - Output pointers are cleared on failure; objects are freed by the matching *_free / *_clear. */
#ifndef LUMEN_IO_H
#define LUMEN_IO_H
#include "lumen/export.h"

#include <stddef.h>
#include <stdint.h>
#include "lumen/context.h"
#include "lumen/image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes a small NIfTI-1 file (gzip-compressed) to a temporary folder with nifti_clib, reads
   it back and compares dimensions and voxels. LUMEN_OK when it all matches; detail describes
   what was done or what failed. */
LUMEN_API lumen_status lumen_io_selftest(lumen_ctx *ctx, char *detail, size_t detail_size);

/* The memory limit used when an options struct gives max_bytes = 0: min(16 GiB, physical
   memory). A max_bytes given by the caller is also capped at physical memory. */
LUMEN_API int64_t lumen_io_default_max_bytes(void);

/* ------------------------------------------------------------------------------------ NIfTI */

/* NIfTI unit codes (xyzt_units), as in nifti1.h. */
enum {
  LUMEN_NIFTI_UNITS_UNKNOWN = 0,
  LUMEN_NIFTI_UNITS_METER = 1,
  LUMEN_NIFTI_UNITS_MM = 2,
  LUMEN_NIFTI_UNITS_MICRON = 3,
  LUMEN_NIFTI_UNITS_SEC = 8,
  LUMEN_NIFTI_UNITS_MSEC = 16,
  LUMEN_NIFTI_UNITS_USEC = 24
};
/* NIfTI intent code for parameter maps ("estimate"), as in nifti1.h. */
#define LUMEN_NIFTI_INTENT_ESTIMATE 1001

typedef struct lumen_nifti_read_opts {
  /* 0: voxels become float32 with scl_slope/scl_inter applied (slope 0 = none).
     1: voxels keep the stored type (uint8 ... int64, float32, float64) and are NOT scaled;
        info->scl_slope / scl_inter tell the caller what the file asks for. */
  int keep_type;
  /* Largest voxel buffer (bytes, as stored and as returned) to allocate; 0 = default
     (lumen_io_default_max_bytes). Larger files are refused with LUMEN_ERR_OUT_OF_MEMORY. */
  int64_t max_bytes;
} lumen_nifti_read_opts;

typedef struct lumen_nifti_info {
  int version;              /* 1 or 2 */
  int compressed;           /* the file is gzip-compressed */
  int swapped;              /* stored in the other byte order (converted on reading) */
  int ndim;                 /* dims of the returned image (1..4; dim[0] of the header, with
                               trailing 1s beyond the 4th squeezed) */
  int64_t dims[4];          /* 1 beyond ndim */
  int datatype;             /* NIfTI datatype code as stored (2 = uint8, 4 = int16, 16 = float32...) */
  lumen_dtype stored_dtype; /* the same as a lumen type */
  double scl_slope, scl_inter; /* as stored; slope 0 means no scaling */
  int scaled;               /* scaling was applied to the returned voxels */
  int qform_code, sform_code;
  const char *affine_source;/* "sform" (sform_code > 0), "qform" (qform_code > 0) or "pixdim" */
  double affine[16];        /* voxel -> world, row-major, the one given to the image */
  double pixdim[8];         /* as stored (pixdim[0] = qfac) */
  int space_unit;           /* LUMEN_NIFTI_UNITS_* (xyzt_units & 7) */
  int time_unit;            /* LUMEN_NIFTI_UNITS_* (xyzt_units & 56) */
  double time_step;         /* pixdim[4] as stored, in time_unit */
  double time_step_s;       /* pixdim[4] in seconds (ms and us converted; unknown unit: as stored) */
  double toffset;
  int intent_code;
  char intent_name[17];
  char descrip[81];
  double cal_min, cal_max;
  int64_t vox_offset;
} lumen_nifti_info;

/* Reads a NIfTI-1 or NIfTI-2 single file (.nii or .nii.gz; .hdr/.img pairs are refused) into a
   new host image with the header's affine (sform, else qform, else pixdim) and spacing
   (|pixdim[1..ndim]|, 1 where 0 or not finite). opts and info may be NULL. Errors:
   LUMEN_ERR_IO (cannot open/read), LUMEN_ERR_FORMAT (bad header, truncated data or gzip),
   LUMEN_ERR_UNSUPPORTED (complex/RGB types, more than 4 non-trivial dims, .hdr/.img),
   LUMEN_ERR_OUT_OF_MEMORY (over max_bytes or allocation failed), LUMEN_ERR_OVERFLOW.
   Reading stops at the end of the voxel data (vox_offset + voxel bytes): data after it are not
   part of the image and are ignored (an INFO log line); of a .nii.gz at most 1 MiB more is
   decompressed, to check the gzip trailer (CRC, length) of files that end there. */
/* Progress: for data over 16 MiB, reports "read <file name>" to the context's progress callback
   (0, every 16 MiB, 1 when complete); a callback that cancels ends the read with
   LUMEN_ERR_CANCELLED and no image. */
LUMEN_API lumen_status lumen_nifti_read(lumen_ctx *ctx, const char *path, const lumen_nifti_read_opts *opts,
                              lumen_image **out, lumen_nifti_info *info);
/* Reads and validates only the header (same checks as lumen_nifti_read, data not read). */
LUMEN_API lumen_status lumen_nifti_read_header(lumen_ctx *ctx, const char *path, const lumen_nifti_read_opts *opts,
                                     lumen_nifti_info *info);

typedef struct lumen_nifti_write_opts {
  int overwrite;            /* replace an existing file */
  int version;              /* 0 or 1: NIfTI-1; 2: NIfTI-2 */
  int intent_code;          /* 0: LUMEN_NIFTI_INTENT_ESTIMATE when intent_name is set, else none */
  const char *intent_name;  /* parameter name, at most 15 characters (longer is an error) */
  const char *description;  /* descrip, at most 79 characters (longer is cut) */
  int sform_code, qform_code; /* 0: 1 (scanner anatomical); -1: 0 (unknown: the affine is not a
                               position in the patient); copy info's codes to keep them */
  int space_unit;           /* 0: LUMEN_NIFTI_UNITS_MM */
  int time_unit;            /* 0: LUMEN_NIFTI_UNITS_SEC */
  double toffset;
  double cal_min, cal_max;  /* display range; 0, 0 = unset */
  int compress_level;       /* gzip level 1..9 for .nii.gz; 0 = 6 */
} lumen_nifti_write_opts;

/* Writes a host image as NIfTI: .nii.gz (gzip) when path ends so, else .nii. The stored type is
   the image's (float32, float64, integers); float16/bfloat16 images are stored as float32.
   The affine goes to sform and qform (qform is its closest rigid part, as nifti_clib makes it),
   pixdim from the spacing. Atomic (see the top of this header). */
LUMEN_API lumen_status lumen_nifti_write(lumen_ctx *ctx, const char *path, const lumen_image *image,
                               const lumen_nifti_write_opts *opts);

/* ------------------------------------------------------------------------- JSON (sidecars) */

/* A JSON object (top level must be an object), read from a file or built for writing. */
typedef struct lumen_json lumen_json;

LUMEN_API lumen_status lumen_json_create(lumen_ctx *ctx, lumen_json **out);
/* Reads a JSON object file (at most 64 MiB). Bad JSON: LUMEN_ERR_FORMAT naming the file and the
   line:column where parsing stopped. */
LUMEN_API lumen_status lumen_json_read(lumen_ctx *ctx, const char *path, lumen_json **out);
/* Parses text; name is used in messages (NULL: "<text>"). */
LUMEN_API lumen_status lumen_json_parse(lumen_ctx *ctx, const char *text, size_t length, const char *name, lumen_json **out);
LUMEN_API void lumen_json_free(lumen_json *json);  /* NULL is allowed */

/* Top-level keys in file order. */
LUMEN_API int64_t     lumen_json_count(const lumen_json *json);
LUMEN_API const char *lumen_json_key(const lumen_json *json, int64_t index);  /* NULL when out of range */
LUMEN_API int         lumen_json_has(const lumen_json *json, const char *key);

/* Getters: a missing key gives LUMEN_OK with *found = 0 and the output untouched (found may be
   NULL); a present key of the wrong type gives LUMEN_ERR_FORMAT naming the file and the key. */
LUMEN_API lumen_status lumen_json_get_number(lumen_ctx *ctx, const lumen_json *json, const char *key, double *out, int *found);
/* Copy of a string value; free with free(). */
LUMEN_API lumen_status lumen_json_get_string(lumen_ctx *ctx, const lumen_json *json, const char *key, char **out, int *found);
/* A number or an array of numbers; *out (malloc'ed, free with free(); NULL when n is 0). */
LUMEN_API lumen_status lumen_json_get_numbers(lumen_ctx *ctx, const lumen_json *json, const char *key, double **out,
                                    int64_t *n, int *found);
/* Any value printed as compact JSON text; free with free(). */
LUMEN_API lumen_status lumen_json_get_text(lumen_ctx *ctx, const lumen_json *json, const char *key, char **out, int *found);

/* Setters replace an existing key (keeping its place) or append. */
LUMEN_API lumen_status lumen_json_set_number(lumen_ctx *ctx, lumen_json *json, const char *key, double value);
/* Exact even beyond 2^53 (written as digits; reading it back gives the nearest double). */
LUMEN_API lumen_status lumen_json_set_int(lumen_ctx *ctx, lumen_json *json, const char *key, int64_t value);
LUMEN_API lumen_status lumen_json_set_bool(lumen_ctx *ctx, lumen_json *json, const char *key, int value);
LUMEN_API lumen_status lumen_json_set_string(lumen_ctx *ctx, lumen_json *json, const char *key, const char *value);
LUMEN_API lumen_status lumen_json_set_numbers(lumen_ctx *ctx, lumen_json *json, const char *key, const double *values,
                                    int64_t n);
LUMEN_API lumen_status lumen_json_set_strings(lumen_ctx *ctx, lumen_json *json, const char *key,
                                    const char *const *values, int64_t n);
/* Any JSON value given as text (an object, an array, ...). Bad text: LUMEN_ERR_FORMAT. */
LUMEN_API lumen_status lumen_json_set_text(lumen_ctx *ctx, lumen_json *json, const char *key, const char *json_text);
LUMEN_API lumen_status lumen_json_remove(lumen_ctx *ctx, lumen_json *json, const char *key);
/* Pretty-printed text (cJSON layout, tab indent, final newline); free with free(). Non-finite numbers
   are written as null (JSON has no NaN). */
LUMEN_API lumen_status lumen_json_to_text(lumen_ctx *ctx, const lumen_json *json, char **out);
/* Atomic write (see the top of this header). */
LUMEN_API lumen_status lumen_json_write(lumen_ctx *ctx, const lumen_json *json, const char *path, int overwrite);

/* Acquisition values of a BIDS sidecar. Absent values are NaN / 0 frames. */
typedef struct lumen_acquisition {
  double flip_angle_deg;      /* FlipAngle (degrees) */
  double repetition_time_s;   /* TR (s): RepetitionTimeExcitation when present (dcm2niix writes the
                                 excitation TR there for 4-D series), else RepetitionTime */
  double volume_time_s;       /* RepetitionTime (s) when RepetitionTimeExcitation is also present:
                                 dcm2niix's time per volume of a 4-D series; else NaN */
  const char *repetition_time_key; /* "RepetitionTimeExcitation", "RepetitionTime" or NULL (static) */
  double echo_time_s;         /* EchoTime (s; the first one when an array) */
  double inversion_time_s;    /* InversionTime (s) */
  int64_t n_frame_times;      /* frame start times, seconds as stored (not shifted to 0): */
  double *frame_times_s;      /* from FrameTimesStart (numbers), else an AcquisitionTime array of
                                 numbers (s) or "HH:MM:SS.ffffff" strings (seconds of the day) */
  const char *frame_times_key;/* "FrameTimesStart", "AcquisitionTime" or NULL */
} lumen_acquisition;

/* The sidecar name of a NIfTI file: NAME.nii.gz / NAME.nii, and NAME.hdr / NAME.img(.gz) of a pair ->
   NAME.json (else PATH.json). */
LUMEN_API lumen_status lumen_sidecar_path(lumen_ctx *ctx, const char *nifti_path, char *buf, size_t size);
/* Reads a sidecar file into acq (overwritten: clear a used one first); json_out (may be NULL)
   receives the whole object for other keys.
   A value of the wrong type (e.g. "FlipAngle": "30") is LUMEN_ERR_FORMAT naming the key; so is a
   FlipAngle, RepetitionTime or RepetitionTimeExcitation that is not finite or not > 0 (1e999 reads
   as inf), and an EchoTime or InversionTime that is not finite. */
LUMEN_API lumen_status lumen_sidecar_read(lumen_ctx *ctx, const char *json_path, lumen_acquisition *acq,
                                lumen_json **json_out);
/* Reads the sidecar next to a NIfTI file when there is one: *found = 0 (acq all absent, LUMEN_OK)
   when the file does not exist. json_out may be NULL. */
LUMEN_API lumen_status lumen_sidecar_read_for(lumen_ctx *ctx, const char *nifti_path, lumen_acquisition *acq,
                                    lumen_json **json_out, int *found);
LUMEN_API void lumen_acquisition_clear(lumen_acquisition *acq);  /* frees frame_times_s, sets all absent */

/* ------------------------------------------------------------------------------------- PNG */

/* The most pixels per side a PNG may declare; the reader and every header probe refuse more. */
#define LUMEN_PNG_MAX_SIDE 1000000u

typedef struct lumen_png_read_opts {
  /* 0: uint8 for 8-bit files (and 1/2/4-bit grey, expanded), uint16 for 16-bit files;
     1: float32 holding the same integer values; 2: float32 scaled to [0, 1] (value / 255 or 65535). */
  int to_float;
  int64_t max_bytes;        /* 0 = default; also width and height are each at most LUMEN_PNG_MAX_SIDE */
} lumen_png_read_opts;

/* Reads a PNG into a 2-D host image, dims {width, height}, y = 0 the top row (file order).
   Colour (RGB, palette) becomes luminance with Rec. 709 weights (0.2126 R + 0.7152 G + 0.0722 B,
   libpng's rgb_to_gray on the stored values); alpha is dropped; 1/2/4-bit grey is expanded
   to 8 bits (0..255 scaled). bit_depth (may be NULL) receives 8 or 16. */
LUMEN_API lumen_status lumen_png_read(lumen_ctx *ctx, const char *path, const lumen_png_read_opts *opts,
                            lumen_image **out, int *bit_depth);

typedef enum lumen_png_scaling {
  LUMEN_PNG_SCALE_CLIP = 0, /* values rounded and clipped to [0, 2^bits - 1]; NaN -> 0 */
  LUMEN_PNG_SCALE_MINMAX,   /* [min, max] of the finite values -> [0, 2^bits - 1]; constant -> 0 */
  LUMEN_PNG_SCALE_RANGE,    /* [lo, hi] of the options -> [0, 2^bits - 1], clipped (windowing) */
  LUMEN_PNG_SCALING_COUNT
} lumen_png_scaling;

typedef struct lumen_png_write_opts {
  int bit_depth;            /* 8 or 16; 0 = 16 for uint16/int16/int32/uint32/... images, else 8 */
  lumen_png_scaling scaling;
  double lo, hi;            /* for LUMEN_PNG_SCALE_RANGE (hi > lo) */
  int overwrite;
} lumen_png_write_opts;

/* Writes a grey PNG from a host image with dims {width, height} (a 3-D/4-D image with trailing
   dims of 1 is accepted), any dtype. Atomic (see the top of this header). */
LUMEN_API lumen_status lumen_png_write(lumen_ctx *ctx, const char *path, const lumen_image *image,
                             const lumen_png_write_opts *opts);

/* Writes an 8-bit RGB PNG (figures): rgb holds width x height pixels, 3 bytes each (R, G, B),
   row-major, top row first. Atomic; overwrite as in lumen_png_write_opts. Errors:
   LUMEN_ERR_INVALID_ARGUMENT (a side below 1 or over LUMEN_PNG_MAX_SIDE), LUMEN_ERR_NOT_BUILT,
   and the atomic writer's. */
LUMEN_API lumen_status lumen_png_write_rgb8(lumen_ctx *ctx, const char *path, const uint8_t *rgb, int64_t width,
                                  int64_t height, int overwrite);

/* ----------------------------------------------------------------------------------- DICOM */

/* DICOM images through GDCM (docs/DICOM.md). Optional: a build without GDCM returns
   LUMEN_ERR_NOT_BUILT ("built without DICOM support"). */

typedef struct lumen_dicom_read_opts {
  int64_t max_bytes;        /* file and decoded pixel limit; 0 = default (lumen_io_default_max_bytes) */
} lumen_dicom_read_opts;

typedef struct lumen_dicom_info {
  int64_t rows, columns;    /* Rows (y), Columns (x) */
  int64_t frames;           /* NumberOfFrames (1 when absent) */
  int samples_per_pixel;    /* always 1 (colour is refused) */
  int bits_allocated, bits_stored, high_bit;
  int pixel_representation; /* 0 unsigned, 1 two's complement */
  char photometric[17];     /* "MONOCHROME1" or "MONOCHROME2" */
  int inverted;             /* MONOCHROME1: the values were inverted (see lumen_dicom_read) */
  double rescale_slope, rescale_intercept; /* as applied (1 and 0 when absent) */
  int has_rescale;          /* RescaleSlope or RescaleIntercept present */
  double spacing[2];        /* mm between columns (x) and between rows (y); 1 when absent */
  const char *spacing_source; /* "PixelSpacing", "ImagerPixelSpacing" or NULL (static) */
  int has_window;           /* WindowCenter and WindowWidth present (their first values) */
  double window_center, window_width;
  char modality[17];        /* Modality ("" when absent) */
  char transfer_syntax[65]; /* TransferSyntaxUID of the file meta group */
  int isolated;             /* GDCM decoded in a child process (1) or in this process (0) */
} lumen_dicom_info;

/* Reads one DICOM Part 10 image file (preamble + "DICM") into a new float32 host image with dims
   {Columns, Rows} or, for a multi-frame file, {Columns, Rows, NumberOfFrames}: y = 0 the first
   row, as in the file. Pixel data in explicit/implicit little endian, explicit big endian, RLE,
   JPEG (baseline, extended, lossless), JPEG-LS and JPEG 2000 are decoded with GDCM. The stored
   values are masked to BitsStored (sign-extended when PixelRepresentation is 1), then the
   modality LUT is applied: value * RescaleSlope + RescaleIntercept (an enhanced multi-frame file
   without top-level rescale tags: each frame's own, from its functional groups, docs/DICOM.md;
   info then reports frame 1's). MONOCHROME1 images are
   inverted so that larger means brighter, as in MONOCHROME2: v -> lo + hi - v, with [lo, hi] the
   modality LUT of the stored range (e.g. 0..2^BitsStored-1), and an INFO log line says so.
   The spacing is {column spacing, row spacing} from PixelSpacing, else ImagerPixelSpacing
   (1 mm where absent; a third axis of frames has spacing 1). info (may be NULL) receives the
   metadata. The file is walked and checked in C before GDCM sees it (sizes checked before
   allocation); when this process has one thread, GDCM decodes in a child process, so that a
   decoder that aborts on a malformed file becomes an error, not a crash.
   Errors: LUMEN_ERR_IO, LUMEN_ERR_FORMAT (not DICOM, truncated, inconsistent header, malformed
   pixel data), LUMEN_ERR_UNSUPPORTED (colour, 1-bit or float pixels, a transfer syntax without
   a codec here), LUMEN_ERR_OUT_OF_MEMORY (over max_bytes), LUMEN_ERR_NOT_BUILT. */
LUMEN_API lumen_status lumen_dicom_read(lumen_ctx *ctx, const char *path, const lumen_dicom_read_opts *opts,
                                        lumen_image **out, lumen_dicom_info *info);
/* Only the structural check and the metadata (no pixel decoding); info->isolated is 0. */
LUMEN_API lumen_status lumen_dicom_read_header(lumen_ctx *ctx, const char *path, const lumen_dicom_read_opts *opts,
                                               lumen_dicom_info *info);
/* Whether compressed DICOM can be decoded: loads GDCM's decoder module (liblumen_gdcm.so, loaded
   on the first compressed file otherwise; docs/DICOM.md "Library") and says where it came from in
   detail. LUMEN_ERR_NOT_BUILT when it is missing or lumen was built without GDCM (`lumen backends`'
   dicom row). */
LUMEN_API lumen_status lumen_dicom_selftest(lumen_ctx *ctx, char *detail, size_t detail_size);
/* 1 when path is a regular file with "DICM" at byte 128 (the DICOM Part 10 signature). */
LUMEN_API int lumen_dicom_is_dicom_file(const char *path);

/* A DICOM series (docs/DICOM.md, "Series"): single-frame images, one file per slice and time
   point, or enhanced multi-frame files whose frames are slices x time points, as one float32
   image {Columns, Rows, slices} or {Columns, Rows, slices, frames}. */
typedef struct lumen_dicom_series_opts {
  int64_t max_bytes;        /* per-file and whole-image limit; 0 = default (lumen_io_default_max_bytes) */
  const char *series_uid;   /* SeriesInstanceUID to take, or a SeriesNumber (digits only) when no
                               UID equals it; NULL: the input must hold exactly one series */
  int headers_only;         /* 1: every check of the headers (series, geometry, frames, the memory
                               limit against the whole image) and info, but no pixel is read and
                               *out stays NULL: front ends check --memory-limit this way */
} lumen_dicom_series_opts;

typedef struct lumen_dicom_series_info {
  char series_uid[65];
  char series_description[65];
  int64_t files, slices, frames;
  double affine[16];        /* voxel -> world (NIfTI RAS, row-major), the one given to the image */
  double spacing[3];        /* column, row spacing and slice step (mm) */
  double *frame_times_s;    /* frames start times in s from the first frame (may be non-uniform);
                               NULL when frames is 1 or the files carry only TemporalPositionIdentifier */
  const char *frame_order;  /* the tag the frames were ordered by: "TemporalPositionIdentifier",
                               "TriggerTime", "AcquisitionTime", "ContentTime" (enhanced files:
                               "TemporalPositionIndex", "NominalCardiacTriggerDelayTime",
                               "FrameAcquisitionDateTime", "FrameReferenceDateTime"); NULL for one frame */
  const char *frame_time_source; /* "TriggerTime", "AcquisitionTime", "ContentTime" (enhanced:
                               "NominalCardiacTriggerDelayTime", "FrameAcquisitionDateTime",
                               "FrameReferenceDateTime") or NULL */
  double flip_angle_deg;    /* FlipAngle of the first file; NaN when absent */
  double repetition_time_s; /* RepetitionTime of the first file, converted from ms; NaN when absent */
  double volume_time_s;     /* the time per volume as dcm2niix gives it (BIDS RepetitionTime): the
                               TR, plus GE's group delay (0043,107C) when there is one; NaN without TR */
  char timing_note[512];    /* how the frames were ordered and timed, and why other sources were
                               passed over ("frames ordered by InstanceNumber; not by TriggerTime:
                               absent; ..."); empty for one frame */
  int mosaic;               /* Siemens mosaic: slices per file (0: not a mosaic) */
  /* descriptive values of the first file (lumen convert's sidecar); NaN / -1 / "" when absent */
  int64_t series_number;    /* SeriesNumber (0020,0011) */
  double echo_time_s, inversion_time_s, field_strength_t, slice_thickness_mm;
  char modality[17], manufacturer[65], model_name[65], protocol_name[65], image_type[97];
  char acquisition_time[20];/* AcquisitionTime (0008,0032) as written */
  int64_t columns, rows;    /* the image's x and y size (a mosaic's: one tile's) */
  int timing_disagree;      /* 1 when another source orders or times the frames differently from
                               the one used (a warning was logged; timing_note names both) */
  int philips_float_scaling;/* 1 when Philips' MRScaleSlope (2005,100E) turned the values into the
                               precise floating point ones (docs/DICOM.md "Philips scaling") */
  int stored_integers;      /* 1 when every value is a stored integer of at most 16 bits (an identity
                               modality LUT in every file and frame): lumen convert stores int16/uint16 */
  int stored_signed;        /* PixelRepresentation 1 (with stored_integers) */
  int stored_bits;          /* the largest BitsStored */
  int geometry_unknown;     /* 1: one file without ImageOrientationPatient / ImagePositionPatient; the
                               affine is the spacing only, and lumen convert writes NIfTI qform/sform
                               code 0 (unknown), as dcm2niix does (docs/DICOM.md "No geometry") */
  int64_t lossy_files;      /* files lossy compressed (LossyImageCompression (0028,2110) "01", or a lossy
                               JPEG transfer syntax): their values are not the scanner's (a warning) */
} lumen_dicom_series_info;

/* Reads a series from paths[0..n_paths): folders (every regular file with the DICOM Part 10
   signature, subfolders searched; others are skipped, hidden entries too) or a list of files.
   Slices are sorted by ImagePositionPatient along the slice normal (the cross product of the row
   and column cosines of ImageOrientationPatient); the files at one position are frames, ordered
   by the first source that orders every slice, in this precedence: TriggerTime,
   TemporalPositionIdentifier, AcquisitionDateTime / AcquisitionDate+Time / AcquisitionTime,
   ContentTime, FrameReferenceTime, InstanceNumber (docs/DICOM.md "Frame order and times": a
   source absent or malformed in some files, or with one value for several frames of a slice, is
   passed over; a later source that disagrees is a warning). The frame times come from the first
   of TriggerTime (ms), the acquisition times, ContentTime, FrameReferenceTime that rises with
   that order in the first slice, relative to its first frame. Siemens mosaics are one file per
   volume. The layout and the affine are
   dcm2niix's, so that results overlay a dcm2niix conversion of the series: the rows are stored
   bottom-up (y = 0 the last DICOM row), x along the row cosines, slices ascending along the
   normal, LPS turned into RAS (x and y negated); the slice step is the distance between the
   first and the last position / (slices - 1), else SpacingBetweenSlices, else SliceThickness.
   Every file is pre-checked and decoded as lumen_dicom_read does.
   Errors (one message naming the file and the field): several series without series_uid
   (LUMEN_ERR_INVALID_ARGUMENT listing each SeriesInstanceUID, SeriesDescription and file count),
   a series_uid not present, a missing ImagePositionPatient / ImageOrientationPatient /
   PixelSpacing (one file without orientation or position is read with an unknown geometry
   instead: info->geometry_unknown, a warning), orientation, spacing or size that differ between files, unevenly spaced slices
   (LUMEN_ERR_FORMAT "inconsistent geometry"), slice positions with unequal numbers of files
   ("missing frame"), several frames and no tag to order them ("no timing", naming each tag and
   what it held), an identifier or trigger time that differs between the slices of one frame, a
   multi-frame file without functional groups (but an RT Dose whose GridFrameOffsetVector places its
   frames is read, one slice per frame), an enhanced file with fewer
   PerFrameFunctionalGroupsSequence items than NumberOfFrames, and those of lumen_dicom_read.
   An enhanced file (PerFrameFunctionalGroupsSequence) is one member per frame, with the frame's
   position, orientation, spacing and timing from its functional groups (per-frame, else shared,
   else top level) and the enhanced analogues of the ordering/time tags above.
   info (may be NULL) is cleared with lumen_dicom_series_info_clear. */
LUMEN_API lumen_status lumen_dicom_series_read(lumen_ctx *ctx, const char *const *paths, int n_paths,
                                               const lumen_dicom_series_opts *opts, lumen_image **out,
                                               lumen_dicom_series_info *info);
LUMEN_API void lumen_dicom_series_info_clear(lumen_dicom_series_info *info);

/* One series found by lumen_dicom_series_find. */
typedef struct lumen_dicom_series_entry {
  char series_uid[65];          /* SeriesInstanceUID ("" when absent) */
  char series_description[65];  /* SeriesDescription */
  int64_t series_number;        /* SeriesNumber; -1 when absent */
  int64_t files;
  char **paths;                 /* its files, in name order (owned by the entry) */
  /* one series may hold images that are not one 3-D/4-D image: several echoes (EchoNumbers),
     magnitude and phase (ImageType), several orientations or sizes (a 3-plane localizer). Each
     such part is an entry of its own, as dcm2niix writes one file each: */
  char suffix[32];              /* "" for a series of one part, else what tells this part apart,
                                   as dcm2niix names it: "_e1", "_e2" (echoes), "_ph" (phase), "_real",
                                   "_imaginary", "_i00001" (an orientation or size: its first
                                   InstanceNumber), joined */
  int64_t echo_number;          /* EchoNumbers (0018,0086); 0 when absent */
} lumen_dicom_series_entry;

/* The series under paths[0..n_paths): DICOM Part 10 files, and folders searched recursively
   (16 levels; hidden entries and symbolic links to folders skipped), grouped by SeriesInstanceUID
   and then by part (echo, image type, orientation and size; entry.suffix) and sorted by
   SeriesNumber, UID, echo, part. Only headers are read (the pre-check of lumen_dicom_read,
   max_bytes per file, 0 = default). A file that is DICOM but malformed or not an image lumen
   reads is skipped with a warning naming it and counted in *skipped (may be NULL); a named input
   that is missing or not DICOM, or no readable image at all, is an error. Free the entries with
   lumen_dicom_series_entries_free. */
LUMEN_API lumen_status lumen_dicom_series_find(lumen_ctx *ctx, const char *const *paths, int n_paths, int64_t max_bytes,
                                               lumen_dicom_series_entry **out, int64_t *count, int64_t *skipped);
LUMEN_API void lumen_dicom_series_entries_free(lumen_dicom_series_entry *entries, int64_t count);

/* The BIDS JSON sidecar of a series read by lumen_dicom_series_read (lumen convert): Modality,
   Manufacturer, ManufacturersModelName, MagneticFieldStrength, SeriesDescription, ProtocolName,
   ImageType, SeriesNumber, SeriesInstanceUID, AcquisitionTime, SliceThickness,
   SpacingBetweenSlices, EchoTime, InversionTime, RepetitionTime (s, the DICOM TR), FlipAngle,
   FrameTimesStart (s, when the headers time the frames), FrameOrder, FrameTimesSource,
   FrameTimingNote, ConversionSoftware(Version); absent values are left out. */
LUMEN_API lumen_status lumen_dicom_series_sidecar(lumen_ctx *ctx, const lumen_dicom_series_info *info,
                                                  lumen_json **out);
/* 1 when path is a folder holding (itself or in a subfolder, 4 levels down) at least one file with
   the DICOM Part 10 signature, or such a file. */
LUMEN_API int lumen_dicom_is_series_input(const char *path);

/* -------------------------------------------------------------------- atomic files (any text) */

/* A file being written atomically, for front ends that write their own formats (lumen fit's CSV):
   data go to ".NAME.tmp-PID-N" in NAME's folder (optionally through gzip, gzip_level 1..9; 0 =
   none); commit fsyncs it, renames it to NAME (refusing an existing NAME unless overwrite) and
   fsyncs the folder; abort removes it. Even with overwrite only a regular file is replaced: a
   symlink, FIFO, device node, socket or folder at NAME is refused, at open and again right before
   the rename. After a failed write/commit the temporary file is already gone and only
   lumen_atomic_abort (harmless) remains to be called (src/io/io_atomic.c). */
typedef struct lumen_atomic_file lumen_atomic_file;
LUMEN_API lumen_status lumen_atomic_open(lumen_ctx *ctx, const char *path, int overwrite, int gzip_level,
                                         lumen_atomic_file **out);
LUMEN_API lumen_status lumen_atomic_write(lumen_atomic_file *f, const void *data, size_t n);
LUMEN_API lumen_status lumen_atomic_commit(lumen_atomic_file *f); /* frees f */
LUMEN_API void lumen_atomic_abort(lumen_atomic_file *f);          /* frees f; NULL allowed */
/* Removes the atomic writer's temporaries (".NAME.tmp-PID-TAG", regular files only) in DIR whose
   process no longer runs (a killed run's leftovers); returns how many it removed. Commands call it
   once per output folder before writing (src/io/io_stale.c). */
LUMEN_API int lumen_io_remove_stale_temporaries(const char *dir);
/* "a FIFO (named pipe)", "a character device", "a symbolic link", "a folder", ... for a st_mode
   (the words of lumen's messages about a path that is not a regular file). */
LUMEN_API const char *lumen_io_kind_name(unsigned mode);

/* --------------------------------------------------------------------------- image formats */

/* The image formats, decided once (src/io/image_formats.c, one row per format: name, suffixes, a
   content test, reader, writer, what it holds). The command line, lumen batch's BIDS scan, the
   pipelines and the Python binding ask these functions what a path holds; no other place looks
   at a file name's suffix or at a file's first bytes (docs/FILES.md "Formats"). */
typedef enum lumen_image_format {
  LUMEN_IMAGE_FORMAT_UNKNOWN = 0,
  LUMEN_IMAGE_FORMAT_PNG = 1,          /* PNG, grey or colour (read as luminance) */
  LUMEN_IMAGE_FORMAT_NIFTI = 2,        /* NIfTI-1/2 single file, .nii or .nii.gz */
  LUMEN_IMAGE_FORMAT_DICOM = 3,        /* one DICOM Part 10 file (signature "DICM" at byte 128) */
  LUMEN_IMAGE_FORMAT_DICOM_FOLDER = 4, /* a folder holding DICOM files: one image, or one series */
  LUMEN_IMAGE_FORMAT_COUNT
} lumen_image_format;

/* What a format can hold (lumen_format_info.holds). */
#define LUMEN_FORMAT_HOLDS_2D 1u
#define LUMEN_FORMAT_HOLDS_3D 2u
#define LUMEN_FORMAT_HOLDS_4D 4u
#define LUMEN_FORMAT_HOLDS_SERIES 8u /* one image spread over several files */

typedef struct lumen_format_info {
  int format;              /* a lumen_image_format */
  const char *name;        /* "png", "nifti", "dicom", "dicom_folder" (static strings) */
  const char *description; /* one line, e.g. "NIfTI-1/2 single file (gzip or not)" */
  const char *suffixes;    /* the name endings it is known by, lower case, space-separated
                              (".nii .nii.gz"); "" for a folder */
  unsigned holds;          /* LUMEN_FORMAT_HOLDS_* bits */
  int can_write;           /* lumen_image_write_any writes it (PNG: 2-D only) */
  /* set by lumen_image_probe and lumen_image_format_of_name (0 in lumen_image_format_get's rows): */
  int by_content;          /* 1: decided by the content (signature, header magic, a DICOM file in
                              the folder); 0: by the name alone */
  int suffix_length;       /* bytes at the end of the path that are one of this format's suffixes
                              (0: the name has none of them), so that NAME = path minus them */
} lumen_format_info;

/* The rows of the table, for listings and bindings: index 0 .. lumen_image_format_count() - 1.
   LUMEN_ERR_INVALID_ARGUMENT for an index out of range (info cleared). */
LUMEN_API int lumen_image_format_count(void);
LUMEN_API lumen_status lumen_image_format_get(int index, lumen_format_info *info);

/* The format a name asks for, by its suffix alone (case-insensitive; nothing is opened): for
   outputs and for BIDS file names. Returns info->format (LUMEN_IMAGE_FORMAT_UNKNOWN with info
   cleared when no suffix of the table ends path). info may be NULL. */
LUMEN_API int lumen_image_format_of_name(const char *path, lumen_format_info *info);

/* What path holds, by its content first: the PNG signature, a NIfTI-1/2 header (its size field
   and magic, inside the gzip stream of a compressed file), the DICOM Part 10 signature; a folder
   is a DICOM folder when it (or a folder under it, 4 levels down) holds a DICOM file. Only when
   the content tells nothing (unreadable, empty, truncated, damaged, not a regular file) does the
   name's suffix decide (by_content 0), so that the format's reader gives its precise message. A
   file whose content and suffix disagree is read as its content says, with a warning naming both.
   Never blocks (a FIFO or device is not opened for reading) and reads at most 64 KiB.
   Errors (info cleared, the message naming the file and the likely mistake): LUMEN_ERR_IO (no
   such file or folder), LUMEN_ERR_FORMAT (neither content nor name known: "not a PNG, NIfTI or
   DICOM file ... expected .png, .nii, .nii.gz, .dcm or a folder of DICOM files"; an empty file;
   a folder without a DICOM file), LUMEN_ERR_INVALID_ARGUMENT (path or info NULL). */
LUMEN_API lumen_status lumen_image_probe(lumen_ctx *ctx, const char *path, lumen_format_info *info);

typedef struct lumen_image_read_opts {
  int format;              /* 0: lumen_image_probe decides; else read as this lumen_image_format */
  int64_t max_bytes;       /* the readers' memory limit; 0 = default (lumen_io_default_max_bytes) */
  int max_ndim;            /* 0: 4; 1 to 3: an image of more dimensions is refused
                              (LUMEN_ERR_UNSUPPORTED, naming its shape), after the read, so that a
                              damaged file's own error comes first; with headers_only, from the header */
  int nifti_keep_type;     /* lumen_nifti_read_opts.keep_type (0: float32, scaled) */
  int png_to_float;        /* lumen_png_read_opts.to_float (0: uint8 / uint16 as stored) */
  const char *series_uid;  /* a DICOM folder's series (lumen_dicom_series_opts.series_uid) */
  int headers_only;        /* 1: the format, the shape and the header info, no pixel; *out stays NULL */
} lumen_image_read_opts;

typedef struct lumen_image_read_info {
  lumen_format_info format;      /* the row read (by_content as the probe said) */
  int ndim;                      /* the image's (as it is or would be returned) */
  int64_t dims[4];               /* 1 beyond ndim */
  lumen_dtype dtype;             /* element type returned */
  int png_bit_depth;             /* PNG: 8 or 16 */
  lumen_nifti_info nifti;        /* NIfTI: the header */
  lumen_dicom_info dicom;        /* DICOM file, or the one file of a DICOM folder of one image */
  lumen_dicom_series_info series;/* DICOM folder of several files: the series (owns frame_times_s:
                                    free with lumen_image_read_info_clear) */
  int is_series;                 /* 1 when series is set */
} lumen_image_read_info;

/* Reads any image of the table: probes path (unless opts->format is given), then calls the
   format's reader (lumen_png_read, lumen_nifti_read, lumen_dicom_read, lumen_dicom_read of the
   only DICOM file of a folder or lumen_dicom_series_read of several) with the options above. The
   image equals what that reader returns. opts and info may be NULL; info is overwritten (clear a
   used one first). Errors: the probe's and the reader's (their messages name the file), and
   LUMEN_ERR_UNSUPPORTED for more dimensions than max_ndim. */
LUMEN_API lumen_status lumen_image_read_any(lumen_ctx *ctx, const char *path, const lumen_image_read_opts *opts,
                                            lumen_image **out, lumen_image_read_info *info);
LUMEN_API void lumen_image_read_info_clear(lumen_image_read_info *info); /* frees series.frame_times_s */

typedef struct lumen_image_write_opts {
  int overwrite;                     /* replace an existing file (overrides the per-format flag) */
  const lumen_png_write_opts *png;   /* NULL: defaults */
  const lumen_nifti_write_opts *nifti;
} lumen_image_write_opts;

/* Writes a host image in the format its name asks for (lumen_image_format_of_name): .png by
   lumen_png_write, .nii / .nii.gz by lumen_nifti_write. Errors: LUMEN_ERR_INVALID_ARGUMENT for a
   name of no writable format ("expected .png, .nii or .nii.gz") or an image of more dimensions
   than the format holds (a 3-D image to PNG), and the writer's. */
LUMEN_API lumen_status lumen_image_write_any(lumen_ctx *ctx, const char *path, const lumen_image *image,
                                             const lumen_image_write_opts *opts);

/* ------------------------------------------------------------------------------ text tables */

/* Numeric text tables for `lumen fit` (curves, frame times, AIFs). Format: one row per line;
   numbers separated by spaces, tabs, or a comma/semicolon (with optional spaces around it); '#'
   starts a comment to the end of the line; blank and comment-only lines are skipped; CRLF line
   ends and a UTF-8 BOM are accepted; numbers as strtod reads them ("nan" and "inf" included).
   Errors give "FILE:LINE:COLUMN: ..." with the offending token: a bad number, an empty field
   (",,"), rows of unequal length (unless allow_ragged), no rows at all. */
/* Reads a whole small text file (a list of inputs, a table) into a NUL-terminated buffer (free with
   free()). Refuses, without blocking, anything but a regular file (a FIFO, a device: "'PATH' is a
   FIFO (named pipe), expected a regular file") and a file over max_bytes (0 = 64 MiB). length may be NULL. */
LUMEN_API lumen_status lumen_text_file_read(lumen_ctx *ctx, const char *path, int64_t max_bytes, char **out,
                                            size_t *length);

typedef struct lumen_table_opts {
  int allow_ragged;         /* rows may differ in length; missing cells are NaN */
  int allow_header;         /* a first row with a non-numeric token is taken as column names */
  int64_t max_bytes;        /* file size limit; 0 = 256 MiB */
} lumen_table_opts;

typedef struct lumen_table {
  int64_t rows, cols;       /* cols = the longest row */
  double *values;           /* rows x cols, row-major: values[r * cols + c] */
  int64_t *row_cols;        /* the number of values on each row */
  int64_t *row_line;        /* the 1-based line number each row came from */
  char **names;             /* cols column names from a header row, or NULL */
} lumen_table;

LUMEN_API lumen_status lumen_read_table(lumen_ctx *ctx, const char *path, const lumen_table_opts *opts, lumen_table *out);
/* The same on text in memory; name is used in messages (NULL: "<text>"). */
LUMEN_API lumen_status lumen_parse_table(lumen_ctx *ctx, const char *text, size_t length, const char *name,
                               const lumen_table_opts *opts, lumen_table *out);
/* Column c as a new array of rows values (free with free()). */
LUMEN_API lumen_status lumen_table_column(lumen_ctx *ctx, const lumen_table *table, int64_t c, double **out);
LUMEN_API void lumen_table_clear(lumen_table *table);  /* frees everything, zeroes the struct */

#ifdef __cplusplus
}
#endif
#endif
