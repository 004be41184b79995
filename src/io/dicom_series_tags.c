/* The tags a DICOM series needs (position, orientation, timing, series identity), taken from the
   top-level elements the pre-check walks (dicom_parse.c calls lumen_dicom_series_tag for every
   element it does not read itself). Values are text (DS, IS, TM, UI, LO); each is bounds-given
   by the walker. A malformed geometry or acquisition number is an error naming the file and the
   field; a malformed timing tag only marks itself (one of several sources of the frame order). */
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

/* Days from 1970-01-01 of a proleptic Gregorian date (the usual era / day-of-era arithmetic). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/* A DT value YYYYMMDD[HH[MM[SS[.FFFFFF]]]][&ZZXX] as seconds from 2000-01-01 UTC (small numbers keep
   microseconds exact in a double); 0 when malformed. The offset &ZZXX, when given, is removed. */
int lumen_dicom_dt_seconds(const uint8_t *v, uint32_t len, double *out) {
  char buf[40];
  uint32_t m = 0;
  while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == 0)) len--;
  if (len >= sizeof buf || len < 8) return 0;
  memcpy(buf, v, len);
  buf[len] = 0;
  double offset = 0;
  char *sign = strpbrk(buf + 8, "+-");
  if (sign) {
    if (strlen(sign) != 5 || strspn(sign + 1, "0123456789") != 4) return 0;
    int zz = (sign[1] - '0') * 10 + (sign[2] - '0'), xx = (sign[3] - '0') * 10 + (sign[4] - '0');
    if (zz > 14 || xx > 59) return 0;
    offset = (sign[0] == '-' ? -1 : 1) * (zz * 3600.0 + xx * 60.0);
    *sign = 0;
  }
  m = (uint32_t)strlen(buf);
  if (strspn(buf, "0123456789") < 8) return 0;
  int64_t y = (buf[0] - '0') * 1000 + (buf[1] - '0') * 100 + (buf[2] - '0') * 10 + (buf[3] - '0');
  int64_t mo = (buf[4] - '0') * 10 + (buf[5] - '0'), d = (buf[6] - '0') * 10 + (buf[7] - '0');
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > 31) return 0;
  double tod = 0;
  if (m > 8) {
    tod = lumen_dicom_tm_seconds((const uint8_t *)buf + 8, m - 8);
    if (tod < 0) return 0;
  }
  *out = (double)(days_from_civil(y, mo, d) - days_from_civil(2000, 1, 1)) * 86400.0 + tod - offset;
  return 1;
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

/* A timing tag (the sources of the frame order): a malformed value is not an error here. It
   leaves the tag absent and sets its bit in t->malformed, so that one bad file does not sink a
   series that other sources order (dicom_series_order.c names it when none can). */
static void timing_number(const uint8_t *v, uint32_t len, unsigned bit, int *has, double *out, unsigned *malformed) {
  double x[1];
  if (lumen_dicom_numbers(v, len, x, 1) == 1) *out = x[0], *has = 1;
  else *malformed |= bit;
}

static void timing_tag(uint32_t tag, const uint8_t *value, uint32_t length, lumen_dicom_series_tags *t) {
  double x;
  switch (tag) {
  case 0x00200100u: timing_number(value, length, LUMEN_DICOM_TAG_TEMPORAL, &t->has_temporal, &t->temporal_position, &t->malformed); break;
  case 0x00181060u: timing_number(value, length, LUMEN_DICOM_TAG_TRIGGER, &t->has_trigger, &t->trigger_time_ms, &t->malformed); break;
  case 0x00200013u: timing_number(value, length, LUMEN_DICOM_TAG_INSTANCE, &t->has_instance, &t->instance_number, &t->malformed); break;
  case 0x00541300u:
    timing_number(value, length, LUMEN_DICOM_TAG_FRAME_REF, &t->has_frame_reference, &t->frame_reference_ms, &t->malformed);
    break;
  case 0x00080032u:
    text(value, length, t->acquisition_time_text, sizeof t->acquisition_time_text);
    x = lumen_dicom_tm_seconds(value, length);
    if (x >= 0) t->acquisition_time_s = x, t->has_acquisition_time = 1;
    else t->malformed |= LUMEN_DICOM_TAG_ACQ_TIME;
    break;
  case 0x00080033u:
    x = lumen_dicom_tm_seconds(value, length);
    if (x >= 0) t->content_time_s = x, t->has_content_time = 1;
    else t->malformed |= LUMEN_DICOM_TAG_CONTENT_TIME;
    break;
  case 0x00080022u:
    if (length >= 8 && lumen_dicom_dt_seconds(value, 8, &x)) t->acquisition_date_s = x, t->has_acquisition_date = 1;
    else t->malformed |= LUMEN_DICOM_TAG_ACQ_DATE;
    break;
  case 0x0008002Au:
    if (lumen_dicom_dt_seconds(value, length, &x)) t->acquisition_datetime_s = x, t->has_acquisition_datetime = 1;
    else t->malformed |= LUMEN_DICOM_TAG_ACQ_DATETIME;
    break;
  default: break;
  }
}

int lumen_dicom_image_kind(const char *image_type) {
  const char *v = image_type;
  for (int skip = 0; skip < 2 && v; skip++) {  /* to the third value */
    v = strchr(v, '\\');
    if (v) v++;
  }
  if (!v) return 0;
  size_t len = strcspn(v, "\\");
  static const char *const names[][2] = {{"P", "PHASE"}, {"R", "REAL"}, {"I", "IMAGINARY"}};
  for (int k = 0; k < 3; k++)
    for (int a = 0; a < 2; a++)
      if (len == strlen(names[k][a]) && !strncmp(v, names[k][a], len)) return k + 1;
  return 0;
}

/* A little-endian FL value (the private FL tags read here come from little-endian files). */
static float le_float(const uint8_t *v) {
  uint32_t u = (uint32_t)v[0] | (uint32_t)v[1] << 8 | (uint32_t)v[2] << 16 | (uint32_t)v[3] << 24;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Descriptive values for a converted series' sidecar and the Siemens mosaic: never an error (a
   malformed one is left out). */
static void descriptive_tag(uint32_t tag, const uint8_t *value, uint32_t length, lumen_dicom_series_tags *t) {
  double x[1];
  switch (tag) {
  case 0x00080070u: text(value, length, t->manufacturer, sizeof t->manufacturer); break;
  case 0x00081090u: text(value, length, t->model_name, sizeof t->model_name); break;
  case 0x00181030u: text(value, length, t->protocol_name, sizeof t->protocol_name); break;
  case 0x00080008u:
    text(value, length, t->image_type, sizeof t->image_type);
    t->image_type_mosaic = strstr(t->image_type, "MOSAIC") != NULL;
    break;
  case 0x00200011u: if (lumen_dicom_numbers(value, length, x, 1) == 1) t->series_number = x[0], t->has_series_number = 1; break;
  case 0x00180081u: if (lumen_dicom_numbers(value, length, x, 1) == 1) t->echo_time_ms = x[0], t->has_echo_time = 1; break;
  case 0x00180086u: if (lumen_dicom_numbers(value, length, x, 1) == 1) t->echo_number = x[0], t->has_echo_number = 1; break;
  case 0x00180082u: if (lumen_dicom_numbers(value, length, x, 1) == 1) t->inversion_time_ms = x[0], t->has_inversion_time = 1; break;
  case 0x00180087u: if (lumen_dicom_numbers(value, length, x, 1) == 1) t->field_strength_t = x[0], t->has_field_strength = 1; break;
  case 0x00190010u: text(value, length, t->creator_0019, sizeof t->creator_0019); break;
  case 0x00290010u: text(value, length, t->creator_0029, sizeof t->creator_0029); break;
  case 0x00430010u: text(value, length, t->creator_0043, sizeof t->creator_0043); break;
  case 0x20050010u: text(value, length, t->creator_2005, sizeof t->creator_2005); break;
  case 0x2005100Eu:  /* Philips MRScaleSlope, FL (private: only under Philips' creator) */
    if (!strcmp(t->creator_2005, "Philips MR Imaging DD 001") && length == 4) {
      float f = le_float(value);
      if (isfinite(f) && f != 0) t->philips_scale_slope = f, t->has_philips_scale = 1;
    }
    break;
  case 0x0043107Cu:  /* GE group delay, FL seconds (private: only under GE's creator) */
    if (!strcmp(t->creator_0043, "GEMS_PARM_01") && length == 4) {
      float f = le_float(value);
      if (isfinite(f) && f >= 0 && f < 3600) t->group_delay_s = f, t->has_group_delay = 1;
    }
    break;
  case 0x0019100Au:  /* NumberOfImagesInMosaic, US (private: only under Siemens' creator) */
    if (!strcmp(t->creator_0019, "SIEMENS MR HEADER") && length == 2) t->mosaic_images = value[0] | value[1] << 8;
    break;
  case 0x00291010u:  /* CSA image header: SliceNormalVector, NumberOfImagesInMosaic */
    if (!strncmp(t->creator_0029, "SIEMENS CSA HEADER", 18)) lumen_dicom_csa_image(value, length, t);
    break;
  default: break;
  }
}

/* GridFrameOffsetVector (3004,000C): DS values v0\\v1\\...; relative offsets (v0 = 0) or z coordinates
   (v0 = the position's z, axial only): either way frame k lies v_k - v0 along the normal from
   ImagePositionPatient. Kept as count, first and step; uneven steps are flagged. */
static lumen_status grid_offsets(lumen_ctx *ctx, const char *path, const uint8_t *value, uint32_t length,
                                 lumen_dicom_series_tags *t) {
  int64_t count = 0;
  double first = 0, step = 0;
  int uneven = 0;
  for (size_t at = 0; at <= length;) {
    size_t end = at;
    while (end < length && value[end] != '\\') end++;
    double x;
    if (lumen_dicom_numbers(value + at, (uint32_t)(end - at), &x, 1) != 1)
      return bad_value(ctx, path, "GridFrameOffsetVector", "3004,000C", "numbers (mm)");
    if (count == 0) first = x;
    else if (count == 1) step = x - first;
    else if (fabs(x - (first + (double)count * step)) > 1e-3 * fabs(step) + 1e-4) uneven = 1;
    count++;
    at = end + 1;
  }
  t->grid_frames = count;
  t->grid_first = first;
  t->grid_step = step;
  t->grid_uneven = uneven;
  return LUMEN_OK;
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
  case 0x3004000Cu: return grid_offsets(ctx, path, value, length, t);
  default:
    timing_tag(tag, value, length, t);
    descriptive_tag(tag, value, length, t);
    break;
  }
  return LUMEN_OK;
}
