/* The BIDS sidecar of a DICOM series (lumen convert, docs/DICOM.md "lumen convert"): the usual
   BIDS fields in their units (seconds, degrees, tesla) and what lumen's pipelines read back from
   a sidecar (FlipAngle, RepetitionTime, FrameTimesStart), plus how the frames were ordered. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lumen_build_config.h"
#include "io/io_internal.h"

static lumen_status set_text(lumen_ctx *ctx, lumen_json *j, const char *key, const char *v) {
  return v && v[0] ? lumen_json_set_string(ctx, j, key, v) : LUMEN_OK;
}

static lumen_status set_num(lumen_ctx *ctx, lumen_json *j, const char *key, double v) {
  return isfinite(v) ? lumen_json_set_number(ctx, j, key, v) : LUMEN_OK;
}

/* ImageType "ORIGINAL\PRIMARY\M" as an array of its values. */
static lumen_status set_image_type(lumen_ctx *ctx, lumen_json *j, const char *v) {
  if (!v[0]) return LUMEN_OK;
  char buf[128];
  const char *parts[16];
  int n = 0;
  snprintf(buf, sizeof buf, "%s", v);
  for (char *p = buf, *q; p && n < 16; p = q) {
    q = strchr(p, '\\');
    if (q) *q++ = 0;
    parts[n++] = p;
  }
  return lumen_json_set_strings(ctx, j, "ImageType", parts, n);
}

/* TM "HHMMSS.FFFFFF" as BIDS writes it, "HH:MM:SS.FFFFFF"; other forms as they are. */
static lumen_status set_time(lumen_ctx *ctx, lumen_json *j, const char *tm) {
  if (!tm[0]) return LUMEN_OK;
  size_t digits = strspn(tm, "0123456789");
  if (digits != 6 || (tm[6] && tm[6] != '.')) return lumen_json_set_string(ctx, j, "AcquisitionTime", tm);
  char buf[32];
  snprintf(buf, sizeof buf, "%.2s:%.2s:%s", tm, tm + 2, tm + 4);
  return lumen_json_set_string(ctx, j, "AcquisitionTime", buf);
}

lumen_status lumen_dicom_series_sidecar(lumen_ctx *ctx, const lumen_dicom_series_info *info, lumen_json **out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  LUMEN_REQUIRE_NOT_NULL(ctx, info);
  lumen_json *j = NULL;
  lumen_status s = lumen_json_create(ctx, &j);
  if (s == LUMEN_OK) s = set_text(ctx, j, "Modality", info->modality);
  if (s == LUMEN_OK) s = set_text(ctx, j, "Manufacturer", info->manufacturer);
  if (s == LUMEN_OK) s = set_text(ctx, j, "ManufacturersModelName", info->model_name);
  if (s == LUMEN_OK) s = set_num(ctx, j, "MagneticFieldStrength", info->field_strength_t);
  if (s == LUMEN_OK) s = set_text(ctx, j, "SeriesDescription", info->series_description);
  if (s == LUMEN_OK) s = set_text(ctx, j, "ProtocolName", info->protocol_name);
  if (s == LUMEN_OK) s = set_image_type(ctx, j, info->image_type);
  if (s == LUMEN_OK && info->series_number >= 0) s = lumen_json_set_int(ctx, j, "SeriesNumber", info->series_number);
  if (s == LUMEN_OK) s = set_text(ctx, j, "SeriesInstanceUID", info->series_uid);
  if (s == LUMEN_OK) s = set_time(ctx, j, info->acquisition_time);
  if (s == LUMEN_OK) s = set_num(ctx, j, "SliceThickness", info->slice_thickness_mm);
  if (s == LUMEN_OK && !(info->geometry_unknown && info->slices == 1))  /* no slice step is known there */
    s = set_num(ctx, j, "SpacingBetweenSlices", info->spacing[2]);
  if (s == LUMEN_OK) s = set_num(ctx, j, "EchoTime", info->echo_time_s);
  if (s == LUMEN_OK) s = set_num(ctx, j, "InversionTime", info->inversion_time_s);
  /* RepetitionTime as dcm2niix writes it: the DICOM TR, or the volume time when GE's group delay
     lengthens it (then RepetitionTimeExcitation holds the TR). For a 3-D spoiled gradient echo DCE
     series it is the excitation TR, not the frame interval: FrameTimesStart holds the frames' times. */
  int delayed = isfinite(info->volume_time_s) && info->volume_time_s != info->repetition_time_s;
  if (s == LUMEN_OK) s = set_num(ctx, j, "RepetitionTime", delayed ? info->volume_time_s : info->repetition_time_s);
  if (s == LUMEN_OK && delayed) s = set_num(ctx, j, "RepetitionTimeExcitation", info->repetition_time_s);
  if (s == LUMEN_OK) s = set_num(ctx, j, "FlipAngle", info->flip_angle_deg);
  if (s == LUMEN_OK && info->frame_times_s && info->frames > 1)
    s = lumen_json_set_numbers(ctx, j, "FrameTimesStart", info->frame_times_s, info->frames);
  if (s == LUMEN_OK && info->frames > 1) s = set_text(ctx, j, "FrameOrder", info->frame_order);
  if (s == LUMEN_OK && info->frames > 1) s = set_text(ctx, j, "FrameTimesSource", info->frame_time_source);
  if (s == LUMEN_OK && info->frames > 1) s = set_text(ctx, j, "FrameTimingNote", info->timing_note);
  if (s == LUMEN_OK && info->mosaic > 1) s = lumen_json_set_int(ctx, j, "NumberOfImagesInMosaic", info->mosaic);
  if (s == LUMEN_OK && info->philips_float_scaling) s = lumen_json_set_int(ctx, j, "UsePhilipsFloatNotDisplayScaling", 1);
  if (s == LUMEN_OK) s = lumen_json_set_string(ctx, j, "ConversionSoftware", "lumen");
  if (s == LUMEN_OK) s = lumen_json_set_string(ctx, j, "ConversionSoftwareVersion", LUMEN_VERSION_STRING);
  if (s != LUMEN_OK) {
    lumen_json_free(j);
    return s;
  }
  *out = j;
  return LUMEN_OK;
}
