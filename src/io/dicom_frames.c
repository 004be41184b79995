/* Enhanced (multi-frame) DICOM: the values of each frame from the functional group sequences
   (PS3.3 C.7.6.16) of its item of PerFrameFunctionalGroupsSequence, with those of
   SharedFunctionalGroupsSequence where a frame has none (docs/DICOM.md "Enhanced multi-frame").
   The walker (dicom_parse.c) calls lumen_dicom_frame_item when an item of either sequence starts
   and lumen_dicom_frame_tag for each element of an item of a functional group sequence in it. The
   frame table grows only as items appear in the file, never beyond NumberOfFrames. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/dicom_internal.h"

#define PLANE_POSITION 0x00209113u      /* PlanePositionSequence */
#define PLANE_ORIENTATION 0x00209116u   /* PlaneOrientationSequence */
#define PIXEL_MEASURES 0x00289110u      /* PixelMeasuresSequence */
#define FRAME_CONTENT 0x00209111u       /* FrameContentSequence */
#define CARDIAC_SYNC 0x00189118u        /* CardiacSynchronizationSequence */
#define MR_TIMING 0x00189112u           /* MRTimingAndRelatedParametersSequence */
#define PIXEL_VALUE_TRANSFORM 0x00289145u /* PixelValueTransformationSequence */
#define MR_ECHO 0x00189114u             /* MREchoSequence */
/* Legacy Converted Enhanced images (PS3.3 C.7.6.16.2.25, written by PACS and converters such as
   PixelMed's MultiFrameImageFactory from classic series): the classic tags a converter could not
   put into a functional group, per frame (TriggerTime, InstanceNumber, ...) and shared
   (RepetitionTime, FlipAngle, ...) */
#define UNASSIGNED_SHARED 0x00209170u    /* UnassignedSharedConvertedAttributesSequence */
#define UNASSIGNED_PER_FRAME 0x00209171u /* UnassignedPerFrameConvertedAttributesSequence */

void lumen_dicom_header_free(lumen_dicom_header *hdr) {
  if (!hdr) return;
  free(hdr->frames);
  hdr->frames = NULL;
  hdr->n_frames = hdr->cap_frames = 0;
}

int lumen_dicom_is_frame_group(uint32_t seq) {
  return seq == PLANE_POSITION || seq == PLANE_ORIENTATION || seq == PIXEL_MEASURES || seq == FRAME_CONTENT ||
         seq == CARDIAC_SYNC || seq == MR_TIMING || seq == PIXEL_VALUE_TRANSFORM || seq == UNASSIGNED_SHARED ||
         seq == UNASSIGNED_PER_FRAME || seq == MR_ECHO;
}

/* The classic tags read from a Legacy Converted Enhanced image's unassigned attributes, with the
   rules of a classic file (lumen_dicom_series_tag): the frame-order sources (dicom_series_order.c)
   and the acquisition values a fit needs. */
static int legacy_converted_tag(uint32_t tag) {
  switch (tag) {
  case 0x00181060u: /* TriggerTime */
  case 0x00200100u: /* TemporalPositionIdentifier */
  case 0x00200013u: /* InstanceNumber */
  case 0x00541300u: /* FrameReferenceTime */
  case 0x00080022u: /* AcquisitionDate */
  case 0x00080032u: /* AcquisitionTime */
  case 0x0008002Au: /* AcquisitionDateTime */
  case 0x00080033u: /* ContentTime */
  case 0x00180080u: /* RepetitionTime */
  case 0x00181314u: /* FlipAngle */
  case 0x00180050u: /* SliceThickness */
  case 0x00180088u: /* SpacingBetweenSlices */
  case 0x00180081u: /* EchoTime, and the other descriptive values of the sidecar */
  case 0x00180082u: /* InversionTime */
  case 0x00180086u: /* EchoNumbers */
  case 0x00180087u: /* MagneticFieldStrength */
    return 1;
  default:
    return 0;
  }
}

lumen_status lumen_dicom_frame_item(lumen_ctx *ctx, const char *path, lumen_dicom_header *hdr, uint32_t top,
                                    int64_t item, lumen_dicom_frame **frame) {
  *frame = NULL;
  if (top == LUMEN_DICOM_SHARED_GROUPS) {
    if (item > 0)
      return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                        "lumen_dicom_read: '%s': SharedFunctionalGroupsSequence (5200,9229) has more than one item, "
                        "expected one", path);
    hdr->has_shared = 1;
    *frame = &hdr->shared;
    return LUMEN_OK;
  }
  /* NumberOfFrames (0028,0008) precedes (5200,9230) in the ascending top-level order */
  int64_t want = hdr->info.frames > 0 ? hdr->info.frames : 1;
  if (hdr->n_frames >= want) {  /* item k is frame k: items past the last frame describe no pixels (a file cut
                                   to fewer frames, e.g. pydicom's liver_1frame.dcm); skipped (dicom.c warns) */
    hdr->extra_items++;
    return LUMEN_OK;
  }
  if (hdr->n_frames == hdr->cap_frames) {  /* grows with the items present, not from NumberOfFrames */
    int64_t cap = hdr->cap_frames ? 2 * hdr->cap_frames : 16;
    if (cap > want) cap = want;
    lumen_dicom_frame *p = realloc(hdr->frames, sizeof *p * (size_t)cap);
    if (!p) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_read: '%s': out of memory (frame table)", path);
    hdr->frames = p;
    hdr->cap_frames = cap;
  }
  memset(&hdr->frames[hdr->n_frames], 0, sizeof *hdr->frames);
  *frame = &hdr->frames[hdr->n_frames++];
  (void)item;
  return LUMEN_OK;
}

/* A binary UL or FD value (the first of VM) in the data set's byte order; 0 when too short. */
static int binary_value(const uint8_t *v, uint32_t len, int bytes, int big, int is_float, double *out) {
  if (len < (uint32_t)bytes || len % (uint32_t)bytes) return 0;
  uint64_t u = 0;
  for (int k = 0; k < bytes; k++) u |= (uint64_t)v[big ? bytes - 1 - k : k] << (8 * k);
  if (is_float) {
    double x;
    memcpy(&x, &u, sizeof x);
    if (!isfinite(x)) return 0;
    *out = x;
  } else {
    *out = (double)(uint32_t)u;
  }
  return 1;
}

static lumen_status bad_frame_value(lumen_ctx *ctx, const char *path, const char *seq, const char *field,
                                    const char *want) {
  return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_read: '%s': %s > %s is malformed, expected %s", path, seq, field,
                    want);
}

/* The values of FrameContentSequence, CardiacSynchronizationSequence, PixelMeasures' PixelSpacing
   and PixelValueTransformation: the ones lumen_dicom_series_tag does not read. */
static lumen_status frame_only_tag(lumen_ctx *ctx, const char *path, uint32_t group, uint32_t tag, const uint8_t *value,
                                   uint32_t length, int big, lumen_dicom_frame *f) {
  double x[2];
  lumen_dicom_series_tags *t = &f->t;
  if (group == FRAME_CONTENT && tag == 0x00209128u) {
    if (!binary_value(value, length, 4, big, 0, x) || x[0] < 1)
      return bad_frame_value(ctx, path, "FrameContentSequence (0020,9111)", "TemporalPositionIndex (0020,9128)",
                             "an unsigned integer >= 1 (UL)");
    t->temporal_position = x[0], t->has_temporal = 1;
  } else if (group == FRAME_CONTENT && (tag == 0x00189074u || tag == 0x00189151u)) {
    int acq = tag == 0x00189074u;
    if (!lumen_dicom_dt_seconds(value, length, x))
      return bad_frame_value(ctx, path, "FrameContentSequence (0020,9111)",
                             acq ? "FrameAcquisitionDateTime (0018,9074)" : "FrameReferenceDateTime (0018,9151)",
                             "a date-time YYYYMMDDHHMMSS.FFFFFF");
    if (acq) t->acquisition_time_s = x[0], t->has_acquisition_time = 1;
    else t->content_time_s = x[0], t->has_content_time = 1;
  } else if (group == CARDIAC_SYNC && tag == 0x00209153u) {
    if (!binary_value(value, length, 8, big, 1, x))
      return bad_frame_value(ctx, path, "CardiacSynchronizationSequence (0018,9118)",
                             "NominalCardiacTriggerDelayTime (0020,9153)", "a finite number (FD, ms)");
    t->trigger_time_ms = x[0], t->has_trigger = 1;
  } else if (group == MR_ECHO && tag == 0x00189082u) {
    if (!binary_value(value, length, 8, big, 1, x) || x[0] < 0)
      return bad_frame_value(ctx, path, "MREchoSequence (0018,9114)", "EffectiveEchoTime (0018,9082)",
                             "a finite number >= 0 (FD, ms)");
    t->echo_time_ms = x[0], t->has_echo_time = 1;
  } else if (group == PIXEL_MEASURES && tag == 0x00280030u) {
    if (lumen_dicom_numbers(value, length, x, 2) != 2 || !(x[0] > 0 && x[1] > 0))
      return bad_frame_value(ctx, path, "PixelMeasuresSequence (0028,9110)", "PixelSpacing (0028,0030)",
                             "2 positive numbers (mm)");
    f->spacing[0] = x[1], f->spacing[1] = x[0], f->has_spacing = 1;  /* row spacing \ column spacing */
  } else if (group == PIXEL_VALUE_TRANSFORM && (tag == 0x00281053u || tag == 0x00281052u)) {
    int slope = tag == 0x00281053u;
    if (lumen_dicom_numbers(value, length, x, 1) != 1 || (slope && x[0] == 0))
      return bad_frame_value(ctx, path, "PixelValueTransformationSequence (0028,9145)",
                             slope ? "RescaleSlope (0028,1053)" : "RescaleIntercept (0028,1052)",
                             slope ? "a non-zero number" : "a number");
    if (slope) f->slope = x[0], f->has_slope = 1;
    else f->intercept = x[0], f->has_intercept = 1;
  }
  return LUMEN_OK;
}

lumen_status lumen_dicom_frame_tag(lumen_ctx *ctx, const char *path, uint32_t group, uint32_t tag,
                                   const uint8_t *value, uint32_t length, int big, lumen_dicom_frame *f) {
  if (length == 0) return LUMEN_OK;  /* an empty value is an absent one */
  int shared_tag = (group == PLANE_POSITION && tag == 0x00200032u) || (group == PLANE_ORIENTATION && tag == 0x00200037u) ||
                   (group == PIXEL_MEASURES && (tag == 0x00180050u || tag == 0x00180088u)) ||
                   (group == MR_TIMING && (tag == 0x00180080u || tag == 0x00181314u));
  if ((group == UNASSIGNED_SHARED || group == UNASSIGNED_PER_FRAME) && legacy_converted_tag(tag)) {
    f->legacy_timing |= tag == 0x00181060u || tag == 0x00200100u || tag == 0x00080032u || tag == 0x00080033u;
    shared_tag = 1;
  }
  if (shared_tag) return lumen_dicom_series_tag(ctx, path, tag, value, length, &f->t);  /* the same tags and rules */
  return frame_only_tag(ctx, path, group, tag, value, length, big, f);
}

/* The descriptive values of a converted series' sidecar a frame lacks, from u (the shared groups
   or the top level): an enhanced file keeps Manufacturer, SeriesNumber, ... at the top level and
   EchoTime in its groups. */
static void fill_descriptive(lumen_dicom_series_tags *t, const lumen_dicom_series_tags *u) {
  if (!t->has_series_number && u->has_series_number) t->series_number = u->series_number, t->has_series_number = 1;
  if (!t->has_echo_time && u->has_echo_time) t->echo_time_ms = u->echo_time_ms, t->has_echo_time = 1;
  if (!t->has_inversion_time && u->has_inversion_time)
    t->inversion_time_ms = u->inversion_time_ms, t->has_inversion_time = 1;
  if (!t->has_field_strength && u->has_field_strength)
    t->field_strength_t = u->field_strength_t, t->has_field_strength = 1;
  if (!t->has_echo_number && u->has_echo_number) t->echo_number = u->echo_number, t->has_echo_number = 1;
  if (!t->manufacturer[0]) memcpy(t->manufacturer, u->manufacturer, sizeof t->manufacturer);
  if (!t->model_name[0]) memcpy(t->model_name, u->model_name, sizeof t->model_name);
  if (!t->protocol_name[0]) memcpy(t->protocol_name, u->protocol_name, sizeof t->protocol_name);
  if (!t->image_type[0]) memcpy(t->image_type, u->image_type, sizeof t->image_type);
  if (!t->acquisition_time_text[0])
    memcpy(t->acquisition_time_text, u->acquisition_time_text, sizeof t->acquisition_time_text);
}

/* Fields a frame lacks, from the shared groups. */
static void fill_from_shared(lumen_dicom_frame *f, const lumen_dicom_frame *s) {
  lumen_dicom_series_tags *t = &f->t;
  const lumen_dicom_series_tags *u = &s->t;
  fill_descriptive(t, u);
  if (!t->has_position && u->has_position) memcpy(t->position, u->position, sizeof t->position), t->has_position = 1;
  if (!t->has_orientation && u->has_orientation)
    memcpy(t->orientation, u->orientation, sizeof t->orientation), t->has_orientation = 1;
  if (!t->has_thickness && u->has_thickness) t->slice_thickness = u->slice_thickness, t->has_thickness = 1;
  if (!t->has_between && u->has_between) t->spacing_between = u->spacing_between, t->has_between = 1;
  if (!t->has_temporal && u->has_temporal) t->temporal_position = u->temporal_position, t->has_temporal = 1;
  if (!t->has_trigger && u->has_trigger) t->trigger_time_ms = u->trigger_time_ms, t->has_trigger = 1;
  if (!t->has_acquisition_time && u->has_acquisition_time)
    t->acquisition_time_s = u->acquisition_time_s, t->has_acquisition_time = 1;
  if (!t->has_content_time && u->has_content_time) t->content_time_s = u->content_time_s, t->has_content_time = 1;
  if (!t->has_flip && u->has_flip) t->flip_angle_deg = u->flip_angle_deg, t->has_flip = 1;
  if (!t->has_tr && u->has_tr) t->repetition_time_ms = u->repetition_time_ms, t->has_tr = 1;
  if (!f->has_spacing && s->has_spacing) memcpy(f->spacing, s->spacing, sizeof f->spacing), f->has_spacing = 1;
  /* the slope and intercept of one PixelValueTransformation item belong together */
  if (!f->has_slope && !f->has_intercept) {
    f->has_slope = s->has_slope, f->slope = s->slope;
    f->has_intercept = s->has_intercept, f->intercept = s->intercept;
  }
}

lumen_status lumen_dicom_frames_finish(lumen_ctx *ctx, const char *path, lumen_dicom_header *hdr) {
  if (!hdr->enhanced) return LUMEN_OK;
  hdr->top_rescale = hdr->info.has_rescale;
  if (hdr->n_frames != hdr->info.frames)
    return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                      "lumen_dicom_read: '%s': PerFrameFunctionalGroupsSequence (5200,9230) has %lld items, expected "
                      "NumberOfFrames (0028,0008) = %lld (one item per frame)",
                      path, (long long)hdr->n_frames, (long long)hdr->info.frames);
  hdr->legacy_timing = hdr->has_shared && hdr->shared.legacy_timing;
  for (int64_t k = 0; k < hdr->n_frames; k++) {
    hdr->legacy_timing |= hdr->frames[k].legacy_timing;
    if (hdr->has_shared) fill_from_shared(&hdr->frames[k], &hdr->shared);
    if (!hdr->frames[k].has_slope) hdr->frames[k].slope = 1;
  }
  if (!hdr->info.has_rescale) {  /* info reports frame 1's modality LUT, as applied to it */
    lumen_dicom_frame_rescale(hdr, 0, &hdr->info.rescale_slope, &hdr->info.rescale_intercept);
    hdr->info.has_rescale = hdr->frames[0].has_slope || hdr->frames[0].has_intercept;
  }
  return LUMEN_OK;
}

void lumen_dicom_frame_rescale(const lumen_dicom_header *hdr, int64_t k, double *slope, double *intercept) {
  if (!hdr->enhanced || hdr->top_rescale || k < 0 || k >= hdr->n_frames) {
    *slope = hdr->info.rescale_slope;
    *intercept = hdr->info.rescale_intercept;
    return;
  }
  const lumen_dicom_frame *f = &hdr->frames[k];
  *slope = f->has_slope ? f->slope : 1;
  *intercept = f->has_intercept ? f->intercept : 0;
}

void lumen_dicom_frame_view(const lumen_dicom_header *file, int64_t k, lumen_dicom_info *info,
                            lumen_dicom_series_tags *series) {
  lumen_dicom_frame f = file->frames[k], top;  /* already filled from the shared groups */
  memset(&top, 0, sizeof top);
  top.t = file->series;
  if (file->info.spacing_source && strcmp(file->info.spacing_source, "PixelSpacing") == 0) {
    memcpy(top.spacing, file->info.spacing, sizeof top.spacing);
    top.has_spacing = 1;
  }
  f.has_slope = f.has_intercept = 1;  /* the modality LUT is not taken from the top level here */
  fill_from_shared(&f, &top);
  *series = f.t;
  memcpy(series->series_uid, file->series.series_uid, sizeof series->series_uid);
  memcpy(series->series_description, file->series.series_description, sizeof series->series_description);
  *info = file->info;
  info->frames = 1;
  if (f.has_spacing) {
    memcpy(info->spacing, f.spacing, sizeof info->spacing);
    info->spacing_source = "PixelSpacing";
  }
  lumen_dicom_frame_rescale(file, k, &info->rescale_slope, &info->rescale_intercept);
}
