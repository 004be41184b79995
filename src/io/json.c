/* JSON objects (cJSON) and BIDS sidecars. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cJSON.h>
#include "io/io_internal.h"

#define JSON_MAX_BYTES ((int64_t)64 << 20)

struct lumen_json {
  cJSON *root;
  char *name;  /* file name or "<text>" for messages */
};

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static lumen_status make_json(lumen_ctx *ctx, cJSON *root, const char *name, lumen_json **out) {
  lumen_json *j = calloc(1, sizeof *j);
  char *nm = dup_str(name);
  if (!j || !nm) {
    free(j);
    free(nm);
    cJSON_Delete(root);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of host memory for JSON '%s'", name);
  }
  j->root = root;
  j->name = nm;
  *out = j;
  return LUMEN_OK;
}

lumen_status lumen_json_create(lumen_ctx *ctx, lumen_json **out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  cJSON *root = cJSON_CreateObject();
  if (!root) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_json_create: out of host memory");
  return make_json(ctx, root, "<new JSON>", out);
}

lumen_status lumen_json_parse(lumen_ctx *ctx, const char *text, size_t length, const char *name, lumen_json **out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  LUMEN_REQUIRE_NOT_NULL(ctx, text);
  if (!name) name = "<text>";
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, length, &end, 0);
  if (!root) {
    size_t off = end && end >= text && end <= text + length ? (size_t)(end - text) : 0;
    int line = 1, col = 1;
    for (size_t i = 0; i < off; i++) {
      if (text[i] == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    char near[24];
    size_t k = 0;
    for (size_t i = off; i < length && k < 16 && text[i] != '\n'; i++)
      near[k++] = (unsigned char)text[i] >= 32 && (unsigned char)text[i] < 127 ? text[i] : '?';
    near[k] = '\0';
    if (off >= length)
      return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s:%d:%d: bad JSON: the text ends early", name, line, col);
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s:%d:%d: bad JSON near '%s'", name, line, col, near);
  }
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: expected a JSON object ({...}) at the top level", name);
  }
  return make_json(ctx, root, name, out);
}

lumen_status lumen_json_read(lumen_ctx *ctx, const char *path, lumen_json **out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  char *text = NULL;
  size_t len = 0;
  lumen_status s = lumen_io_slurp(ctx, "lumen_json_read", path, JSON_MAX_BYTES, &text, &len);
  if (s != LUMEN_OK) return s;
  s = lumen_json_parse(ctx, text, len, path, out);
  free(text);
  return s;
}

void lumen_json_free(lumen_json *json) {
  if (!json) return;
  cJSON_Delete(json->root);
  free(json->name);
  free(json);
}

int64_t lumen_json_count(const lumen_json *json) {
  return json ? (int64_t)cJSON_GetArraySize(json->root) : 0;
}

const char *lumen_json_key(const lumen_json *json, int64_t index) {
  if (!json || index < 0 || index >= lumen_json_count(json)) return NULL;
  cJSON *item = cJSON_GetArrayItem(json->root, (int)index);
  return item ? item->string : NULL;
}

int lumen_json_has(const lumen_json *json, const char *key) {
  return json && key && cJSON_GetObjectItemCaseSensitive(json->root, key) != NULL;
}

static const cJSON *lookup(const lumen_json *json, const char *key, int *found) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(json->root, key);
  if (found) *found = item != NULL;
  return item;
}

#define GET_PROLOGUE()                          \
  LUMEN_REQUIRE_NOT_NULL(ctx, json);            \
  LUMEN_REQUIRE_NOT_NULL(ctx, key);             \
  LUMEN_REQUIRE_NOT_NULL(ctx, out);             \
  if (found) *found = 0;                        \
  const cJSON *item = lookup(json, key, found); \
  if (!item) return LUMEN_OK

lumen_status lumen_json_get_number(lumen_ctx *ctx, const lumen_json *json, const char *key, double *out, int *found) {
  GET_PROLOGUE();
  if (!cJSON_IsNumber(item))
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: key \"%s\" is not a number", json->name, key);
  *out = item->valuedouble;
  return LUMEN_OK;
}

lumen_status lumen_json_get_string(lumen_ctx *ctx, const lumen_json *json, const char *key, char **out, int *found) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  GET_PROLOGUE();
  if (!cJSON_IsString(item) || !item->valuestring)
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: key \"%s\" is not a string", json->name, key);
  *out = dup_str(item->valuestring);
  if (!*out) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_json_get_string: out of host memory");
  return LUMEN_OK;
}

lumen_status lumen_json_get_numbers(lumen_ctx *ctx, const lumen_json *json, const char *key, double **out,
                                    int64_t *n, int *found) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  LUMEN_REQUIRE_NOT_NULL(ctx, n);
  *out = NULL;
  *n = 0;
  GET_PROLOGUE();
  if (cJSON_IsNumber(item)) {
    *out = malloc(sizeof(double));
    if (!*out) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_json_get_numbers: out of host memory");
    (*out)[0] = item->valuedouble;
    *n = 1;
    return LUMEN_OK;
  }
  if (!cJSON_IsArray(item))
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: key \"%s\" is not a number or an array of numbers", json->name, key);
  int count = cJSON_GetArraySize(item);
  if (count == 0) return LUMEN_OK;
  double *v = malloc((size_t)count * sizeof *v);
  if (!v) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_json_get_numbers: out of host memory");
  int i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, item) {
    if (!cJSON_IsNumber(e)) {
      free(v);
      return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: key \"%s\": element %d is not a number", json->name, key, i);
    }
    v[i++] = e->valuedouble;
  }
  *out = v;
  *n = i;
  return LUMEN_OK;
}

lumen_status lumen_json_get_text(lumen_ctx *ctx, const lumen_json *json, const char *key, char **out, int *found) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  GET_PROLOGUE();
  *out = cJSON_PrintUnformatted(item);
  if (!*out) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_json_get_text: out of host memory");
  return LUMEN_OK;
}

static lumen_status put(lumen_ctx *ctx, lumen_json *json, const char *key, cJSON *item, const char *fn) {
  if (!item) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  cJSON_bool ok;
  if (cJSON_GetObjectItemCaseSensitive(json->root, key))
    ok = cJSON_ReplaceItemInObjectCaseSensitive(json->root, key, item);
  else
    ok = cJSON_AddItemToObject(json->root, key, item);
  if (!ok) {
    cJSON_Delete(item);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  }
  return LUMEN_OK;
}

#define SET_PROLOGUE()               \
  LUMEN_REQUIRE_NOT_NULL(ctx, json); \
  LUMEN_REQUIRE_NOT_NULL(ctx, key)

lumen_status lumen_json_set_number(lumen_ctx *ctx, lumen_json *json, const char *key, double value) {
  SET_PROLOGUE();
  return put(ctx, json, key, cJSON_CreateNumber(value), __func__);
}

lumen_status lumen_json_set_int(lumen_ctx *ctx, lumen_json *json, const char *key, int64_t value) {
  SET_PROLOGUE();
  /* beyond 2^53 a double is not exact: write the digits as a raw number */
  if (value > (INT64_C(1) << 53) || value < -(INT64_C(1) << 53)) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)value);
    return put(ctx, json, key, cJSON_CreateRaw(buf), __func__);
  }
  return put(ctx, json, key, cJSON_CreateNumber((double)value), __func__);
}

lumen_status lumen_json_set_bool(lumen_ctx *ctx, lumen_json *json, const char *key, int value) {
  SET_PROLOGUE();
  return put(ctx, json, key, cJSON_CreateBool(value != 0), __func__);
}

lumen_status lumen_json_set_string(lumen_ctx *ctx, lumen_json *json, const char *key, const char *value) {
  SET_PROLOGUE();
  LUMEN_REQUIRE_NOT_NULL(ctx, value);
  return put(ctx, json, key, cJSON_CreateString(value), __func__);
}

lumen_status lumen_json_set_numbers(lumen_ctx *ctx, lumen_json *json, const char *key, const double *values,
                                    int64_t n) {
  SET_PROLOGUE();
  LUMEN_REQUIRE(ctx, n >= 0 && n <= INT32_MAX, "lumen_json_set_numbers: n is %lld, expected 0..%d", (long long)n,
                INT32_MAX);
  LUMEN_REQUIRE(ctx, n == 0 || values, "lumen_json_set_numbers: argument 'values' is NULL");
  cJSON *arr = cJSON_CreateArray();
  for (int64_t i = 0; arr && i < n; i++) {
    cJSON *e = cJSON_CreateNumber(values[i]);
    if (!e || !cJSON_AddItemToArray(arr, e)) {
      cJSON_Delete(e);
      cJSON_Delete(arr);
      arr = NULL;
    }
  }
  return put(ctx, json, key, arr, __func__);
}

lumen_status lumen_json_set_strings(lumen_ctx *ctx, lumen_json *json, const char *key,
                                    const char *const *values, int64_t n) {
  SET_PROLOGUE();
  LUMEN_REQUIRE(ctx, n >= 0 && n <= INT32_MAX, "lumen_json_set_strings: n is %lld, expected 0..%d", (long long)n,
                INT32_MAX);
  LUMEN_REQUIRE(ctx, n == 0 || values, "lumen_json_set_strings: argument 'values' is NULL");
  for (int64_t i = 0; i < n; i++)
    LUMEN_REQUIRE(ctx, values[i], "lumen_json_set_strings: values[%lld] is NULL", (long long)i);
  return put(ctx, json, key, cJSON_CreateStringArray(values, (int)n), __func__);
}

lumen_status lumen_json_set_text(lumen_ctx *ctx, lumen_json *json, const char *key, const char *json_text) {
  SET_PROLOGUE();
  LUMEN_REQUIRE_NOT_NULL(ctx, json_text);
  const char *end = NULL;
  cJSON *item = cJSON_ParseWithOpts(json_text, &end, 1);
  if (!item)
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_json_set_text: value of \"%s\" is not JSON (stops at offset %lld)",
                      key, end ? (long long)(end - json_text) : 0LL);
  return put(ctx, json, key, item, __func__);
}

lumen_status lumen_json_remove(lumen_ctx *ctx, lumen_json *json, const char *key) {
  SET_PROLOGUE();
  cJSON_DeleteItemFromObjectCaseSensitive(json->root, key);
  return LUMEN_OK;
}

lumen_status lumen_json_to_text(lumen_ctx *ctx, const lumen_json *json, char **out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  LUMEN_REQUIRE_NOT_NULL(ctx, json);
  char *text = cJSON_Print(json->root);
  if (!text) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_json_to_text: out of host memory");
  size_t n = strlen(text);
  char *with_nl = malloc(n + 2);
  if (!with_nl) {
    cJSON_free(text);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_json_to_text: out of host memory");
  }
  memcpy(with_nl, text, n);
  with_nl[n] = '\n';
  with_nl[n + 1] = '\0';
  cJSON_free(text);
  *out = with_nl;
  return LUMEN_OK;
}

lumen_status lumen_json_write(lumen_ctx *ctx, const lumen_json *json, const char *path, int overwrite) {
  LUMEN_REQUIRE_NOT_NULL(ctx, json);
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  char *text = NULL;
  lumen_status s = lumen_json_to_text(ctx, json, &text);
  if (s != LUMEN_OK) return s;
  lumen_atomic_file *f = NULL;
  s = lumen_atomic_open(ctx, path, overwrite, 0, &f);
  if (s == LUMEN_OK) s = lumen_atomic_write(f, text, strlen(text));
  if (s == LUMEN_OK)
    s = lumen_atomic_commit(f);
  else
    lumen_atomic_abort(f);
  free(text);
  if (s != LUMEN_OK) return lumen_fail(ctx, s, "lumen_json_write: %s", lumen_ctx_last_error(ctx));
  return LUMEN_OK;
}

/* ------------------------------------------------------------------------------ sidecars */

lumen_status lumen_sidecar_path(lumen_ctx *ctx, const char *nifti_path, char *buf, size_t size) {
  LUMEN_REQUIRE_NOT_NULL(ctx, nifti_path);
  LUMEN_REQUIRE_NOT_NULL(ctx, buf);
  size_t n = strlen(nifti_path);
  if (lumen_ends_with(nifti_path, ".nii.gz"))
    n -= 7;
  else if (lumen_ends_with(nifti_path, ".nii"))
    n -= 4;
  else if (lumen_nifti_pair_member(nifti_path))  /* X.hdr, X.img(.gz) of a pair: X.json, as for X.nii */
    n -= lumen_ends_with_nocase(nifti_path, ".gz") ? 7 : 4;
  int w = snprintf(buf, size, "%.*s.json", (int)n, nifti_path);
  if (w < 0 || (size_t)w >= size) {
    if (size) buf[0] = '\0';
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_sidecar_path: buffer of %zu bytes is too small for %d",
                      size, w + 1);
  }
  return LUMEN_OK;
}

void lumen_acquisition_clear(lumen_acquisition *acq) {
  if (!acq) return;
  free(acq->frame_times_s);
  acq->frame_times_s = NULL;
  acq->n_frame_times = 0;
  acq->frame_times_key = NULL;
  acq->flip_angle_deg = NAN;
  acq->repetition_time_s = NAN;
  acq->volume_time_s = NAN;
  acq->repetition_time_key = NULL;
  acq->echo_time_s = NAN;
  acq->inversion_time_s = NAN;
}

/* "HH:MM:SS(.fff)" -> seconds of the day; -1 when the text is not such a time. */
static double parse_clock(const char *s) {
  int part[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    int digits = 0, v = 0;
    while (*s >= '0' && *s <= '9' && digits < 3) v = v * 10 + (*s++ - '0'), digits++;
    if (digits == 0 || *s != ':') return -1;
    s++;
    part[k] = v;
  }
  char *end = NULL;
  errno = 0;
  double sec = strtod(s, &end);
  if (end == s || *end != '\0' || errno || !(sec >= 0 && sec < 61) || part[0] > 47 || part[1] > 59) return -1;
  return part[0] * 3600.0 + part[1] * 60.0 + sec;
}

/* A number (or the first of an array of numbers) into *out; *out untouched when the key is absent.
   expected: what a valid value is ("a positive angle in degrees"); with positive, values <= 0 are
   refused too. Non-finite values (1e999 parses as inf) are always refused. */
static lumen_status sidecar_number(lumen_ctx *ctx, const lumen_json *j, const char *key, int positive,
                                   const char *expected, double *out) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(j->root, key);
  if (!item) return LUMEN_OK;
  if (cJSON_IsArray(item) && cJSON_GetArraySize(item) > 0 && cJSON_IsNumber(cJSON_GetArrayItem(item, 0)))
    item = cJSON_GetArrayItem(item, 0);
  if (!cJSON_IsNumber(item))
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: key \"%s\" is not a number (expected %s)", j->name, key, expected);
  double v = item->valuedouble;
  if (!isfinite(v) || (positive && !(v > 0)))
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: %s is %g: expected %s", j->name, key, v, expected);
  *out = v;
  return LUMEN_OK;
}

static lumen_status read_frame_times(lumen_ctx *ctx, const lumen_json *j, lumen_acquisition *acq) {
  static const char *const keys[2] = {"FrameTimesStart", "AcquisitionTime"};
  for (int k = 0; k < 2; k++) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(j->root, keys[k]);
    if (!item || !cJSON_IsArray(item)) {
      if (item && k == 0)
        return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: key \"FrameTimesStart\" is not an array of numbers", j->name);
      continue;  /* a single AcquisitionTime string is the series' start, not frame times */
    }
    int n = cJSON_GetArraySize(item);
    if (n == 0) continue;
    double *v = malloc((size_t)n * sizeof *v);
    if (!v) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_sidecar_read: out of host memory");
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, item) {
      double t = -1;
      if (cJSON_IsNumber(e))
        t = e->valuedouble;
      else if (k == 1 && cJSON_IsString(e) && e->valuestring)
        t = parse_clock(e->valuestring);
      if (!(cJSON_IsNumber(e) && isfinite(t)) && !(t >= 0)) {
        free(v);
        return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: key \"%s\": element %d is not %s", j->name, keys[k], i,
                          k == 0 ? "a number" : "a number of seconds or an \"HH:MM:SS.fff\" time");
      }
      v[i++] = t;
    }
    acq->frame_times_s = v;
    acq->n_frame_times = i;
    acq->frame_times_key = keys[k];
    return LUMEN_OK;
  }
  return LUMEN_OK;
}

/* dcm2niix stores a 4-D series' time per volume in RepetitionTime and the excitation TR in
   RepetitionTimeExcitation: the latter is the TR of the signal equation when present. */
static lumen_status read_tr(lumen_ctx *ctx, const lumen_json *j, lumen_acquisition *acq) {
  static const char *const rte = "RepetitionTimeExcitation", *const rt = "RepetitionTime";
  double excitation = NAN, plain = NAN;
  lumen_status s = sidecar_number(ctx, j, rte, 1, "a positive excitation TR in seconds", &excitation);
  if (s == LUMEN_OK) s = sidecar_number(ctx, j, rt, 1, "a positive TR in seconds", &plain);
  if (s != LUMEN_OK) return s;
  if (!isnan(excitation)) {
    acq->repetition_time_s = excitation;
    acq->volume_time_s = plain;
    acq->repetition_time_key = rte;
  } else if (!isnan(plain)) {
    acq->repetition_time_s = plain;
    acq->repetition_time_key = rt;
  }
  return LUMEN_OK;
}

static lumen_status acq_from_json(lumen_ctx *ctx, const lumen_json *j, lumen_acquisition *acq) {
  lumen_status s = sidecar_number(ctx, j, "FlipAngle", 1, "a positive angle in degrees", &acq->flip_angle_deg);
  if (s == LUMEN_OK) s = read_tr(ctx, j, acq);
  if (s == LUMEN_OK) s = sidecar_number(ctx, j, "EchoTime", 0, "a finite time in seconds", &acq->echo_time_s);
  if (s == LUMEN_OK)
    s = sidecar_number(ctx, j, "InversionTime", 0, "a finite time in seconds", &acq->inversion_time_s);
  if (s == LUMEN_OK) s = read_frame_times(ctx, j, acq);
  return s;
}

lumen_status lumen_sidecar_read(lumen_ctx *ctx, const char *json_path, lumen_acquisition *acq,
                                lumen_json **json_out) {
  if (json_out) *json_out = NULL;
  LUMEN_REQUIRE_NOT_NULL(ctx, acq);
  acq->frame_times_s = NULL;
  lumen_acquisition_clear(acq);
  LUMEN_REQUIRE_NOT_NULL(ctx, json_path);
  lumen_json *j = NULL;
  lumen_status s = lumen_json_read(ctx, json_path, &j);
  if (s != LUMEN_OK) return s;
  s = acq_from_json(ctx, j, acq);
  if (s != LUMEN_OK) {
    lumen_acquisition_clear(acq);
    lumen_json_free(j);
    return s;
  }
  if (json_out)
    *json_out = j;
  else
    lumen_json_free(j);
  return LUMEN_OK;
}

lumen_status lumen_sidecar_read_for(lumen_ctx *ctx, const char *nifti_path, lumen_acquisition *acq,
                                    lumen_json **json_out, int *found) {
  if (json_out) *json_out = NULL;
  if (found) *found = 0;
  LUMEN_REQUIRE_NOT_NULL(ctx, acq);
  acq->frame_times_s = NULL;
  lumen_acquisition_clear(acq);
  LUMEN_REQUIRE_NOT_NULL(ctx, nifti_path);
  size_t n = strlen(nifti_path) + 8;
  char *path = malloc(n);
  if (!path) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_sidecar_read_for: out of host memory");
  lumen_status s = lumen_sidecar_path(ctx, nifti_path, path, n);
  struct stat st;
  if (s == LUMEN_OK && stat(path, &st) == 0) {
    s = lumen_sidecar_read(ctx, path, acq, json_out);
    if (s == LUMEN_OK && found) *found = 1;
  }
  free(path);
  return s;
}
