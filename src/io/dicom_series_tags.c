/* The tags a DICOM series needs (position, orientation, timing, series identity), taken from the
   top-level elements the pre-check walks (dicom_parse.c calls lumen_dicom_series_tag for every
   element it does not read itself). Values are text (DS, IS, TM, UI, LO); each is bounds-given
   by the walker, and a malformed number is an error naming the file and the field. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "io/dicom_internal.h"

/* Up to want backslash-separated numbers of a DS/IS value into out; the count read, or -1 when a
   value is not a finite number. */
int lumen_dicom_numbers(const uint8_t *v, uint32_t len, double *out, int want) {
  int k = 0;
  uint32_t start = 0;
  for (uint32_t i = 0; i <= len && k < want; i++) {
    if (i < len && v[i] != '\\') continue;
    char buf[72];
    uint32_t m = i - start;
    while (m > 0 && (v[start] == ' ')) start++, m--;
    while (m > 0 && (v[start + m - 1] == ' ' || v[start + m - 1] == 0)) m--;
    if (m == 0 || m >= sizeof buf) return -1;
    memcpy(buf, v + start, m);
    buf[m] = 0;
    char *end;
    double x = strtod(buf, &end);
    if (*end || !isfinite(x)) return -1;
    out[k++] = x;
    start = i + 1;
  }
  return k;
}

/* A TM value HHMMSS.FFFFFF (or the old HH:MM:SS.FFFFFF) as seconds of the day; -1 when malformed. */
double lumen_dicom_tm_seconds(const uint8_t *v, uint32_t len) {
  char buf[32];
  uint32_t m = 0;
  for (uint32_t i = 0; i < len && m + 1 < sizeof buf; i++)
    if (v[i] != ':' && v[i] != ' ' && v[i] != 0) buf[m++] = (char)v[i];
  buf[m] = 0;
  if (m < 2) return -1;
  for (uint32_t i = 0; i < m && buf[i] != '.'; i++)
    if (buf[i] < '0' || buf[i] > '9') return -1;
  double hh = 0, mm = 0, ss = 0;
  char part[3] = {buf[0], buf[1], 0};
  hh = atof(part);
  if (m >= 4 && buf[2] != '.') {
    part[0] = buf[2], part[1] = buf[3];
    mm = atof(part);
    if (m > 4) {
      char *end;
      ss = strtod(buf + 4, &end);
      if (*end) return -1;
    }
  }
  if (hh > 23 || mm > 59 || ss < 0 || ss >= 61) return -1;
  return hh * 3600 + mm * 60 + ss;
}

static void text(const uint8_t *v, uint32_t len, char *out, size_t size) {
  size_t m = len < size - 1 ? len : size - 1;
  memcpy(out, v, m);
  out[m] = 0;
  while (m > 0 && (out[m - 1] == ' ' || out[m - 1] == 0)) out[--m] = 0;
}

static lumen_status bad_value(lumen_ctx *ctx, const char *path, const char *field, const char *tag, const char *want) {
  return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_read: '%s': %s (%s) is malformed, expected %s", path, field,
                    tag, want);
}

lumen_status lumen_dicom_series_tag(lumen_ctx *ctx, const char *path, uint32_t tag, const uint8_t *value,
                                    uint32_t length, lumen_dicom_series_tags *t) {
  double x[6];
  if (length == 0) return LUMEN_OK;  /* an empty value is an absent one */
  switch (tag) {
  case 0x0020000Eu: text(value, length, t->series_uid, sizeof t->series_uid); break;
  case 0x0008103Eu: text(value, length, t->series_description, sizeof t->series_description); break;
  case 0x00200032u:
    if (lumen_dicom_numbers(value, length, t->position, 3) != 3)
      return bad_value(ctx, path, "ImagePositionPatient", "0020,0032", "3 numbers (mm)");
    t->has_position = 1;
    break;
  case 0x00200037u:
    if (lumen_dicom_numbers(value, length, t->orientation, 6) != 6)
      return bad_value(ctx, path, "ImageOrientationPatient", "0020,0037", "6 numbers (direction cosines)");
    t->has_orientation = 1;
    break;
  case 0x00180050u:
    if (lumen_dicom_numbers(value, length, x, 1) != 1) return bad_value(ctx, path, "SliceThickness", "0018,0050", "a number (mm)");
    t->slice_thickness = x[0];
    t->has_thickness = 1;
    break;
  case 0x00180088u:
    if (lumen_dicom_numbers(value, length, x, 1) != 1)
      return bad_value(ctx, path, "SpacingBetweenSlices", "0018,0088", "a number (mm)");
    t->spacing_between = x[0];
    t->has_between = 1;
    break;
  case 0x00200100u:
    if (lumen_dicom_numbers(value, length, x, 1) != 1)
      return bad_value(ctx, path, "TemporalPositionIdentifier", "0020,0100", "an integer");
    t->temporal_position = x[0];
    t->has_temporal = 1;
    break;
  case 0x00181060u:
    if (lumen_dicom_numbers(value, length, x, 1) != 1) return bad_value(ctx, path, "TriggerTime", "0018,1060", "a number (ms)");
    t->trigger_time_ms = x[0];
    t->has_trigger = 1;
    break;
  case 0x00080032u:
  case 0x00080033u: {
    double s = lumen_dicom_tm_seconds(value, length);
    int acq = tag == 0x00080032u;
    if (s < 0)
      return bad_value(ctx, path, acq ? "AcquisitionTime" : "ContentTime", acq ? "0008,0032" : "0008,0033",
                       "a time HHMMSS.FFFFFF");
    if (acq) t->acquisition_time_s = s, t->has_acquisition_time = 1;
    else t->content_time_s = s, t->has_content_time = 1;
    break;
  }
  case 0x00181314u:
    if (lumen_dicom_numbers(value, length, x, 1) != 1) return bad_value(ctx, path, "FlipAngle", "0018,1314", "a number (degrees)");
    t->flip_angle_deg = x[0];
    t->has_flip = 1;
    break;
  case 0x00180080u:
    if (lumen_dicom_numbers(value, length, x, 1) != 1)
      return bad_value(ctx, path, "RepetitionTime", "0018,0080", "a number (ms)");
    t->repetition_time_ms = x[0];
    t->has_tr = 1;
    break;
  default: break;
  }
  return LUMEN_OK;
}
