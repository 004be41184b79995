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
  /* more sources of the frame order (dicom_series_order.c) */
  int has_instance, has_acquisition_date, has_acquisition_datetime, has_frame_reference;
  double instance_number;     /* InstanceNumber (0020,0013) */
  double acquisition_date_s;  /* AcquisitionDate (0008,0022), seconds from 2000-01-01 */
  double acquisition_datetime_s; /* AcquisitionDateTime (0008,002A), seconds from 2000-01-01 */
  double frame_reference_ms;  /* FrameReferenceTime (0054,1300), ms */
  unsigned malformed;         /* timing tags present but malformed (LUMEN_DICOM_TAG_* bits): absent for
                                 the order, named when no source can order the series */
  /* Siemens mosaic: NumberOfImagesInMosaic (0019,100A, creator "SIEMENS MR HEADER") and whether
     ImageType (0008,0008) holds MOSAIC; the slice normal of the CSA image header (0029,1010) */
  int mosaic_images, image_type_mosaic, has_csa_normal;
  double csa_normal[3];
  char creator_0019[24], creator_0029[24], creator_0043[24];
  /* GE: (0043,107C) "delay after slice group" (FL, s, creator GEMS_PARM_01): the volume time is
     RepetitionTime plus this delay (dcm2niix's GE notes) */
  int has_group_delay;
  double group_delay_s;
  /* Philips: (2005,100E) MRScaleSlope (FL, creator "Philips MR Imaging DD 001"): the precise
     (floating point) value is (stored x RescaleSlope + RescaleIntercept) / (RescaleSlope x
     MRScaleSlope), dcm2niix's default; philips_scaled: applied to the modality LUT */
  char creator_2005[32];
  int has_philips_scale, philips_scaled;
  double philips_scale_slope;
  /* descriptive, for a converted series' sidecar (lumen convert) */
  int has_series_number, has_echo_time, has_inversion_time, has_field_strength;
  double series_number;       /* SeriesNumber (0020,0011) */
  double echo_time_ms;        /* EchoTime (0018,0081) */
  double inversion_time_ms;   /* InversionTime (0018,0082) */
  double field_strength_t;    /* MagneticFieldStrength (0018,0087) */
  int has_echo_number;
  double echo_number;         /* EchoNumbers (0018,0086), the first */
  char manufacturer[65], model_name[65], protocol_name[65], image_type[97], acquisition_time_text[20];
  /* RT Dose: GridFrameOffsetVector (3004,000C), the frames' offsets (mm) along the normal from
     ImagePositionPatient: grid_frames values, the first and the (even) step; grid_uneven when the
     steps differ (lumen stacks evenly spaced slices only) */
  int64_t grid_frames;
  int grid_uneven;
  double grid_first, grid_step;
} lumen_dicom_series_tags;

/* The DICOM Part 10 files among paths (files as given; folders searched recursively, 16 levels,
   hidden entries and symbolic links to folders skipped), sorted by name: *out an owned array of
   owned strings (lumen_dicom_names_free). A named file that is missing or not DICOM, or no file at
   all, is an error starting with who (dicom_series_list.c). */
lumen_status lumen_dicom_collect(lumen_ctx *ctx, const char *who, const char *const *paths, int n_paths, char ***out,
                                 int64_t *count);
void lumen_dicom_names_free(char **names, int64_t n);

/* Reads NumberOfImagesInMosaic and SliceNormalVector of a Siemens CSA image header (0029,1010)
   value into t (dicom_csa.c); a malformed header sets nothing. */
void lumen_dicom_csa_image(const uint8_t *v, uint32_t len, lumen_dicom_series_tags *t);

/* The kind of image ImageType (0008,0008) names in its third value: 0 magnitude or anything else,
   1 phase (P, PHASE), 2 real (R, REAL), 3 imaginary (I, IMAGINARY) (dicom_series_tags.c). */
int lumen_dicom_image_kind(const char *image_type);

/* Timing tags in lumen_dicom_series_tags.malformed */
#define LUMEN_DICOM_TAG_TRIGGER 1u
#define LUMEN_DICOM_TAG_TEMPORAL 2u
#define LUMEN_DICOM_TAG_ACQ_TIME 4u
#define LUMEN_DICOM_TAG_CONTENT_TIME 8u
#define LUMEN_DICOM_TAG_INSTANCE 16u
#define LUMEN_DICOM_TAG_ACQ_DATE 32u
#define LUMEN_DICOM_TAG_ACQ_DATETIME 64u
#define LUMEN_DICOM_TAG_FRAME_REF 128u

/* Remembers tag (a top-level element whose value is length bytes at value) when it is one of
   lumen_dicom_series_tags; a malformed number is LUMEN_ERR_FORMAT naming path and the field. */
lumen_status lumen_dicom_series_tag(lumen_ctx *ctx, const char *path, uint32_t tag, const uint8_t *value,
                                    uint32_t length, lumen_dicom_series_tags *t);

/* The values of one frame of an enhanced (multi-frame) file, from the functional group
   sequences of its item of PerFrameFunctionalGroupsSequence (5200,9230) or of the one item of
   SharedFunctionalGroupsSequence (5200,9229) (dicom_frames.c). The series-like fields go into
   t (TemporalPositionIndex -> temporal_position, NominalCardiacTriggerDelayTime -> trigger_time_ms,
   FrameAcquisitionDateTime -> acquisition_time_s, FrameReferenceDateTime -> content_time_s, the
   date-times as seconds from 2000-01-01); series_uid/description stay empty. */
typedef struct lumen_dicom_frame {
  lumen_dicom_series_tags t;
  int has_spacing, has_slope, has_intercept;
  double spacing[2];         /* PixelMeasuresSequence > PixelSpacing: {column (x), row (y)} spacing, mm */
  double slope, intercept;   /* PixelValueTransformationSequence > RescaleSlope, RescaleIntercept */
  int legacy_timing;         /* a frame-order tag came from a Legacy Converted image's unassigned
                                attributes under its classic name (TriggerTime, ...) */
} lumen_dicom_frame;

/* Up to want backslash-separated numbers of a DS/IS value; the count read, -1 when one is not a
   finite number. A TM value as seconds of the day, -1 when malformed (dicom_series_tags.c). */
int lumen_dicom_numbers(const uint8_t *v, uint32_t len, double *out, int want);
double lumen_dicom_tm_seconds(const uint8_t *v, uint32_t len);
/* A DT value YYYYMMDD[HH[MM[SS[.FFFFFF]]]][&ZZXX] (a DA value is its first 8 characters) as
   seconds from 2000-01-01 UTC in *out; 0 when malformed. */
int lumen_dicom_dt_seconds(const uint8_t *v, uint32_t len, double *out);

/* What the pre-check learnt from a whole file in memory. */
typedef struct lumen_dicom_header {
  lumen_dicom_info info;     /* the public metadata (rows, columns, spacing, window, ...) */
  lumen_dicom_series_tags series; /* position, orientation, timing, series identity */
  int big_endian;            /* the data set is explicit VR big endian */
  int encapsulated;          /* pixel data are compressed fragments */
  int64_t pixel_offset;      /* the pixel data element's value in the file */
  int64_t pixel_length;      /* its length (native), or the bytes of its fragments (encapsulated) */
  int64_t decoded_bytes;     /* rows x columns x frames x bytes a sample (lumen_dicom_sample_bytes): what the
                                decoder returns (1-bit data: unpacked, one byte a pixel) */
  int pixel_words;           /* native PixelData of VR OW in big endian: 1-bit data are packed in 16-bit words */
  int bare;                  /* no preamble and "DICM": the data set (or a meta group) from byte 0 */
  int syntax_guessed;        /* no TransferSyntaxUID: info.transfer_syntax guessed from the first element */
  int zero_spacing;          /* PixelSpacing 0\0: read as absent (a warning) */
  int lossy;                 /* LossyImageCompression (0028,2110) "01", or a transfer syntax that is lossy
                                only (JPEG baseline, extended): the values are not the scanner's (a warning) */
  int64_t rle_fragments;     /* RLE, one frame: its fragments; over 1, a writer split the frame (PS3.5 A.4.2
                                wants one): read as one, as DCMTK and pydicom do (a warning) */
  /* ModalityLUTSequence's table (0 entries: none): LUTData's 16-bit values at mlut_offset in the file
     (mlut_big: big endian); stored value v maps to entry clamp(v - mlut_first, 0, mlut_entries - 1) */
  int64_t mlut_entries, mlut_first, mlut_offset;
  int mlut_big;
  /* enhanced multi-frame: one entry per item of PerFrameFunctionalGroupsSequence (as many as
     NumberOfFrames), shared values filled in where a frame has none (owned: lumen_dicom_header_free) */
  int enhanced;              /* PerFrameFunctionalGroupsSequence present */
  lumen_dicom_frame *frames;
  int64_t n_frames, cap_frames;
  int64_t extra_items;       /* per-frame items past NumberOfFrames: ignored (a warning) */
  int has_shared;
  int legacy_timing;         /* a frame or the shared item has legacy_timing: the frame order names the
                                classic tags (dicom_series_order.c) */
  int top_rescale;           /* top-level RescaleSlope/Intercept present: they win over the groups */
  lumen_dicom_frame shared;  /* SharedFunctionalGroupsSequence's values */
} lumen_dicom_header;

/* The bytes of one decoded sample: BitsAllocated / 8, and 1 for packed 1-bit data (unpacked). */
static inline int lumen_dicom_sample_bytes(int bits_allocated) {
  return bits_allocated == 1 ? 1 : bits_allocated / 8;
}

/* A Deflated Explicit VR Little Endian file (1.2.840.10008.1.2.1.99) in *data: replaced by the same
   file with its data set inflated and its TransferSyntaxUID rewritten to explicit VR little endian
   (*inflated 1), within max_bytes; any other file is left as it is (dicom_deflate.c). */
lumen_status lumen_dicom_inflate(lumen_ctx *ctx, const char *path, int64_t max_bytes, uint8_t **data, size_t *size,
                                 int *inflated);

/* 1 when d (n bytes from the start of a file) begins like a DICOM data set without the Part 10
   header (no preamble, no "DICM"): a (0002,xxxx) or (0008,xxxx) element in either byte order.
   The pre-check reads such a file from byte 0; lumen_dicom_collect takes one named explicitly,
   never one found in a folder (dicom.c). */
int lumen_dicom_bare_dataset(const uint8_t *d, size_t n);
int lumen_dicom_is_bare_file(const char *path);

/* Frees what lumen_dicom_precheck allocated in hdr (the frame table); hdr stays valid, empty. */
void lumen_dicom_header_free(lumen_dicom_header *hdr);

/* Functional groups (dicom_frames.c). Which top-level sequence an item belongs to: */
#define LUMEN_DICOM_SHARED_GROUPS 0x52009229u    /* SharedFunctionalGroupsSequence */
#define LUMEN_DICOM_PER_FRAME_GROUPS 0x52009230u /* PerFrameFunctionalGroupsSequence */

/* A new item of the sequence top (one of the two above) starts: the frame its values go to, the
   per-frame table grown by one (never beyond NumberOfFrames, known before by tag order). */
lumen_status lumen_dicom_frame_item(lumen_ctx *ctx, const char *path, lumen_dicom_header *hdr, uint32_t top,
                                    int64_t item, lumen_dicom_frame **frame);

/* 1 when seq is a functional group sequence whose values are read (PlanePosition, ...). */
int lumen_dicom_is_frame_group(uint32_t seq);

/* Remembers tag (an element of an item of functional group sequence group, value of length bytes,
   binary values in big-endian order when big) in f; a malformed value is LUMEN_ERR_FORMAT naming
   path and the field. */
lumen_status lumen_dicom_frame_tag(lumen_ctx *ctx, const char *path, uint32_t group, uint32_t tag,
                                   const uint8_t *value, uint32_t length, int big, lumen_dicom_frame *f);

/* After the walk: the per-frame item count against NumberOfFrames, the shared values filled in,
   every frame's rescale slope non-zero. */
lumen_status lumen_dicom_frames_finish(lumen_ctx *ctx, const char *path, lumen_dicom_header *hdr);

/* Frame k (0-based) of an enhanced file as a single-frame header: its position, orientation,
   timing, spacing (per-frame groups, else shared, else the file's top level), modality LUT;
   info->frames 1, series identity of the file. */
void lumen_dicom_frame_view(const lumen_dicom_header *file, int64_t k, lumen_dicom_info *info,
                            lumen_dicom_series_tags *series);

/* The modality LUT of frame k (0-based): top-level RescaleSlope/Intercept when present, else the
   frame's PixelValueTransformation (per-frame, else shared), else 1 and 0. */
void lumen_dicom_frame_rescale(const lumen_dicom_header *hdr, int64_t k, double *slope, double *intercept);

/* Walks the element stream of a DICOM Part 10 file held in data (preamble and "DICM", file meta
   group, explicit or implicit VR, byte order, lengths within the file, nested sequences and
   undefined lengths, tags in ascending order, encapsulated fragments and RLE segment tables) and
   checks the image description (Rows, Columns, BitsAllocated/Stored, HighBit,
   PixelRepresentation, SamplesPerPixel, PhotometricInterpretation, NumberOfFrames) against the
   pixel data, before any pixel buffer is allocated. Errors (LUMEN_ERR_FORMAT for a malformed
   file, LUMEN_ERR_UNSUPPORTED for a valid one lumen cannot read) name path, the field and the
   expected value. An enhanced file's functional groups are read into hdr->frames (owned: free with
   lumen_dicom_header_free; freed by the pre-check itself when it fails). */
lumen_status lumen_dicom_precheck(lumen_ctx *ctx, const char *path, const uint8_t *data, size_t size,
                                  lumen_dicom_header *hdr);

/* lumen_dicom_precheck on the first size bytes of a file of file_size bytes, for its headers: the
   walk stops at a native top-level PixelData (its length checked against file_size), whatever
   follows it unread. Anything else (the headers longer than size, encapsulated pixel data, a
   malformed file) is an error: read the whole file then (lumen_dicom_read_series_header does). */
lumen_status lumen_dicom_precheck_headers(lumen_ctx *ctx, const char *path, const uint8_t *data, size_t size,
                                          size_t file_size, lumen_dicom_header *hdr);

/* Decodes the encapsulated (compressed) pixel data of the pre-checked file in data with GDCM's
   codec for its transfer syntax into dst (exactly hdr->decoded_bytes: little-endian samples of
   bits_allocated bits as stored, before the modality LUT). 0 on success; otherwise a message in
   msg. Never throws. GDCM lives in its own module, liblumen_gdcm.so (dicom_gdcm.cpp), loaded on
   the first compressed file (dicom_gdcm_load.c): GDCM's libraries build their dictionaries when
   loaded (~20 ms), which every lumen process paid at start when they were linked in. */
int lumen_dicom_gdcm_decode(const uint8_t *data, size_t size, const lumen_dicom_header *hdr, void *dst,
                            size_t dst_bytes, char *msg, size_t msg_size);

/* Loads liblumen_gdcm.so once per process (beside the library or program holding this code, then
   the dynamic linker's search path, then the build tree's): 1 when GDCM's decoder is ready, else
   0 with the reason in msg. Called before a fork, so that the child inherits the module. */
int lumen_dicom_gdcm_load(char *msg, size_t msg_size);

/* How the decode runs (dicom_isolate.c). No decode runs in the calling process unless asked:
   Debian's GDCM asserts (abort) on some malformed codestreams. */
typedef enum lumen_dicom_isolation {
  LUMEN_DICOM_ISOLATE_AUTO = 0,   /* a forked child when this process has one thread, else the helper program */
  LUMEN_DICOM_ISOLATE_NEVER,      /* in-process (after the pre-check: the fuzz targets) */
  LUMEN_DICOM_ISOLATE_ALWAYS,     /* a forked child even with several threads (tests) */
  LUMEN_DICOM_ISOLATE_HELPER      /* the helper program even with one thread (tests) */
} lumen_dicom_isolation;

/* The helper program (src/io/decoder/dicom_decoder_main.c, installed beside liblumen.so or in
   PREFIX/libexec): a process started with posix_spawn, which unlike fork is safe in a process with
   several threads (Python after any lumen call, MATLAB, lumen's own thread pools). The request is a
   shared memory file on the helper's descriptor LUMEN_DECODER_FD: this header, then the file's
   bytes at data_offset, then room for the pixels at pixels_offset; the helper writes the pixels
   and, on failure, msg, and exits 0 (decoded) or 3 (refused, msg says why). */
#define LUMEN_DECODER_PROGRAM "lumen-dicom-decoder"
/* The decoder process's CPU time is bounded by the image it decodes (RLIMIT_CPU: at least 2 s, and
   1 s per 2 MB of decoded pixels): a mutated 5.5 KB JPEG-LS file kept CharLS busy for 6 s before it
   failed (issue 40 item 13). Past it the process gets SIGXCPU, reported as a malformed file. */
#define LUMEN_DECODER_CPU_S(decoded_bytes) (2 + (long)((decoded_bytes) / 2000000))
#define LUMEN_DECODER_FD 3
#define LUMEN_DECODER_MAGIC 0x4c4d4443u /* "LMDC" */
typedef struct lumen_dicom_decode_request {
  uint32_t magic, header_bytes;      /* LUMEN_DECODER_MAGIC, sizeof this struct (same build) */
  int64_t data_offset, data_size;    /* the whole file's bytes */
  int64_t pixels_offset, pixels_size; /* exactly hdr->decoded_bytes */
  int64_t pixel_offset;              /* the pixel data element's value in the file */
  lumen_dicom_info info;             /* spacing_source NULL: no pointer crosses */
  char msg[256];
} lumen_dicom_decode_request;

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

/* In a decoder process (the forked child, the helper): RLIMIT_CPU to LUMEN_DECODER_CPU_S. */
void lumen_dicom_limit_cpu(int64_t decoded_bytes);
/* Test builds: a decoder that never ends (LUMEN_TEST_DICOM_CHILD_SPIN), for the CPU budget's test. */
void lumen_dicom_test_spin(void);
/* 1 when /proc/self/status says this process has exactly one thread. */
int lumen_dicom_single_threaded(void);

/* The whole file read and pre-checked (no pixel decoding): the header of one series file (its
   frame table owned by the caller: lumen_dicom_header_free). */
lumen_status lumen_dicom_read_series_header(lumen_ctx *ctx, const char *path, int64_t max_bytes,
                                            lumen_dicom_header *hdr);

/* lumen_dicom_read with a chosen isolation (the fuzz target forces each path). */
lumen_status lumen_dicom_read_isolated(lumen_ctx *ctx, const char *path, const lumen_dicom_read_opts *opts,
                                       lumen_dicom_isolation isolation, lumen_image **out, lumen_dicom_info *info);

/* lumen_dicom_read of one file of a series: the same, except that lossy compression is not
   warned per file (lumen_dicom_series_read reports it once, with the count of such files). */
lumen_status lumen_dicom_read_series_member(lumen_ctx *ctx, const char *path, const lumen_dicom_read_opts *opts,
                                            lumen_image **out);

#ifdef __cplusplus
}
#endif
#endif
