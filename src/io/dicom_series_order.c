/* The slices and frames of a DICOM series (docs/DICOM.md "Frame order and times"): slices by
   ImagePositionPatient along the normal; the frames at one position by the first source, in a
   fixed precedence, that orders every slice; frame times from the first time source that rises
   with that order. A source absent or malformed in some files, or with one value for several
   frames of a slice (GE writes one AcquisitionTime for a whole series), is passed over, and the
   run log says why; one that orders the frames differently from the one used is a warning. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/dicom_series_internal.h"

#define POSITION_TOL 1e-3 /* mm along the normal: members at one slice position */
#define GAP_TOL 0.01      /* relative difference of slice gaps */
#define HALF_DAY 43200.0

/* The sources of the frame order, in precedence. */
enum { SRC_TRIGGER, SRC_TEMPORAL, SRC_ACQUISITION, SRC_CONTENT, SRC_FRAME_REF, SRC_INSTANCE, SRC_COUNT };

/* How a source's values of one time point must agree across slices. */
enum { LINE_EXACT, LINE_TIMES, LINE_RANK };

typedef struct source_desc {
  const char *name, *tag;
  unsigned bad_bit;  /* its bit in lumen_dicom_series_tags.malformed */
  int line;          /* LINE_* */
  double to_s;       /* value x to_s = seconds (0: not a time) */
} source_desc;

static const source_desc classic_sources[SRC_COUNT] = {
  {"TriggerTime", "0018,1060", LUMEN_DICOM_TAG_TRIGGER, LINE_EXACT, 1e-3},
  {"TemporalPositionIdentifier", "0020,0100", LUMEN_DICOM_TAG_TEMPORAL, LINE_EXACT, 0},
  {"AcquisitionTime", "0008,0032", LUMEN_DICOM_TAG_ACQ_TIME, LINE_TIMES, 1},
  {"ContentTime", "0008,0033", LUMEN_DICOM_TAG_CONTENT_TIME, LINE_TIMES, 1},
  {"FrameReferenceTime", "0054,1300", LUMEN_DICOM_TAG_FRAME_REF, LINE_TIMES, 1e-3},
  {"InstanceNumber", "0020,0013", LUMEN_DICOM_TAG_INSTANCE, LINE_RANK, 0},
};
/* an enhanced file's analogues (from its functional groups); the last resort is the frame's
   place in its file */
static const source_desc enhanced_sources[SRC_COUNT] = {
  {"NominalCardiacTriggerDelayTime", "0020,9153", 0, LINE_EXACT, 1e-3},
  {"TemporalPositionIndex", "0020,9128", 0, LINE_EXACT, 0},
  {"FrameAcquisitionDateTime", "0018,9074", 0, LINE_TIMES, 1},
  {"FrameReferenceDateTime", "0018,9151", 0, LINE_TIMES, 1},
  {NULL, NULL, 0, LINE_TIMES, 0},
  {"the frame's place in its file", "frame number", 0, LINE_RANK, 0},
};

/* a Legacy Converted Enhanced file's (PS3.3 C.7.6.16.2.25): the classic tags, kept in its
   Unassigned Per-Frame / Shared Converted Attributes, read from there as the enhanced analogues */
static const source_desc legacy_sources[SRC_COUNT] = {
  {"TriggerTime", "0018,1060", LUMEN_DICOM_TAG_TRIGGER, LINE_EXACT, 1e-3},
  {"TemporalPositionIdentifier", "0020,0100", LUMEN_DICOM_TAG_TEMPORAL, LINE_EXACT, 0},
  {"AcquisitionTime", "0008,0032", LUMEN_DICOM_TAG_ACQ_TIME, LINE_TIMES, 1},
  {"ContentTime", "0008,0033", LUMEN_DICOM_TAG_CONTENT_TIME, LINE_TIMES, 1},
  {NULL, NULL, 0, LINE_TIMES, 0},
  {"the frame's place in its file", "frame number", 0, LINE_RANK, 0},
};

/* How AcquisitionTime is read for the whole series: AcquisitionDateTime when every file has it,
   else AcquisitionDate + AcquisitionTime, else AcquisitionTime alone, continued past midnight. */
enum { ACQ_TIME_ONLY, ACQ_DATE_TIME, ACQ_DATETIME };

typedef struct order_ctx {
  member *m;
  int64_t n, nz, per;
  const source_desc *src;
  int acq_mode;
  int wrap, wrap_content; /* AcquisitionTime / ContentTime span midnight: times before noon + 24 h */
  double *key;          /* n values of the source under test */
  int64_t *idx;         /* n member indices sorted by (slice, key) */
  char why[SRC_COUNT][256];
  int usable[SRC_COUNT];
} order_ctx;

/* The file name without its folders (the notes name many files; errors name the whole path). */
static const char *base(const char *path) {
  const char *b = strrchr(path, '/');
  return b ? b + 1 : path;
}

/* The value of source s for member x; 0 when absent or malformed. */
static int raw_value(const order_ctx *o, const member *x, int s, double *v) {
  const lumen_dicom_series_tags *t = &x->h.series;
  switch (s) {
  case SRC_TRIGGER: *v = t->trigger_time_ms; return t->has_trigger;
  case SRC_TEMPORAL: *v = t->temporal_position; return t->has_temporal;
  case SRC_ACQUISITION:
    if (x->enhanced || o->acq_mode == ACQ_TIME_ONLY) {
      *v = t->acquisition_time_s + (o->wrap && t->acquisition_time_s < HALF_DAY ? 86400.0 : 0);
      return t->has_acquisition_time;
    }
    if (o->acq_mode == ACQ_DATETIME) { *v = t->acquisition_datetime_s; return 1; }
    *v = t->acquisition_date_s + t->acquisition_time_s;
    return t->has_acquisition_time;
  case SRC_CONTENT:
    *v = t->content_time_s + (!x->enhanced && o->wrap_content && t->content_time_s < HALF_DAY ? 86400.0 : 0);
    return t->has_content_time;
  case SRC_FRAME_REF: *v = t->frame_reference_ms; return !x->enhanced && t->has_frame_reference;
  default:
    if (x->enhanced) { *v = (double)x->file_index * 1e7 + (double)x->frame; return 1; }
    *v = t->instance_number;
    return t->has_instance;
  }
}

static void acquisition_mode(order_ctx *o) {
  int all_dt = 1, all_date = 1;
  double lo = INFINITY, hi = -INFINITY, clo = INFINITY, chi = -INFINITY;
  for (int64_t i = 0; i < o->n; i++) {
    const lumen_dicom_series_tags *t = &o->m[i].h.series;
    all_dt &= t->has_acquisition_datetime;
    all_date &= t->has_acquisition_date;
    if (t->has_acquisition_time) lo = fmin(lo, t->acquisition_time_s), hi = fmax(hi, t->acquisition_time_s);
    if (t->has_content_time) clo = fmin(clo, t->content_time_s), chi = fmax(chi, t->content_time_s);
  }
  o->acq_mode = all_dt ? ACQ_DATETIME : all_date ? ACQ_DATE_TIME : ACQ_TIME_ONLY;
  /* an acquisition lasts less than 12 h: the early times are the next day */
  o->wrap = hi - lo > HALF_DAY;
  o->wrap_content = chi - clo > HALF_DAY;
}

static _Thread_local const order_ctx *sort_ctx; /* qsort has no user pointer in C11 */
static int cmp_slice_key(const void *a, const void *b) {
  int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
  int64_t si = i / sort_ctx->per, sj = j / sort_ctx->per;
  if (si != sj) return si < sj ? -1 : 1;
  double x = sort_ctx->key[i], y = sort_ctx->key[j];
  if (x != y) return x < y ? -1 : 1;
  return i < j ? -1 : i > j;
}

/* Fills o->key for source s; 0 (and the reason) when a member has no value. TriggerTime may be
   absent in one member per slice when every other member of the slice has one above 0: that
   member is the first frame (GE and QIBA DROs leave it out of the first volume) and gets 0. */
static int keys_of(order_ctx *o, int s) {
  const source_desc *d = &o->src[s];
  int64_t absent = 0, bad = 0, first = -1, first_bad = -1;
  for (int64_t i = 0; i < o->n; i++) {
    if (raw_value(o, &o->m[i], s, &o->key[i])) continue;
    o->key[i] = NAN;
    absent++;
    if (first < 0) first = i;
    if (d->bad_bit && (o->m[i].h.series.malformed & d->bad_bit) && (bad++, first_bad < 0)) first_bad = i;
  }
  if (!absent) return 1;
  if (s == SRC_TRIGGER && !bad) {
    int ok = 1;
    for (int64_t k = 0; k < o->nz && ok; k++) {
      int64_t miss = 0;
      for (int64_t t = 0; t < o->per; t++) {
        double v = o->key[k * o->per + t];
        if (isnan(v)) miss++;
        else if (!(v > 0)) ok = 0;
      }
      ok &= miss <= 1;
    }
    if (ok) {
      for (int64_t i = 0; i < o->n; i++)
        if (isnan(o->key[i])) o->key[i] = 0;
      return 1;
    }
  }
  if (bad)
    snprintf(o->why[s], sizeof o->why[s], "malformed in %lld file%s (e.g. '%s')%s", (long long)bad, bad > 1 ? "s" : "",
             base(o->m[first_bad].path), absent > bad ? ", absent in others" : "");
  else if (absent == o->n)
    snprintf(o->why[s], sizeof o->why[s], "absent");
  else
    snprintf(o->why[s], sizeof o->why[s], "absent in %lld of %lld %s (e.g. '%s')", (long long)absent, (long long)o->n,
             o->m[0].enhanced ? "frames" : "files", base(o->m[first].path));
  return 0;
}

/* Whether source s orders every slice: values for all, distinct within a slice, and each time
   point's values agreeing across slices (identifiers and trigger delays: equal; acquisition
   times: the slices of one time point before every slice of the next). Leaves o->idx sorted. A
   contradiction (an identifier that does not line up) is an error: the files disagree. */
static lumen_status try_source(lumen_ctx *ctx, order_ctx *o, int s) {
  const source_desc *d = &o->src[s];
  o->usable[s] = 0;
  if (!d->name || !keys_of(o, s)) {
    if (!d->name) snprintf(o->why[s], sizeof o->why[s], "not used for enhanced files");
    return LUMEN_OK;
  }
  for (int64_t i = 0; i < o->n; i++) o->idx[i] = i;
  sort_ctx = o;
  qsort(o->idx, (size_t)o->n, sizeof *o->idx, cmp_slice_key);
  sort_ctx = NULL;
  int64_t per = o->per;
  for (int64_t k = 0; k < o->nz; k++)
    for (int64_t t = 1; t < per; t++) {
      int64_t a = o->idx[k * per + t - 1], b = o->idx[k * per + t];
      if (o->key[a] == o->key[b]) {
        snprintf(o->why[s], sizeof o->why[s], "one value in '%s' and '%s' at one slice position",
                 base(o->m[a].path), base(o->m[b].path));
        return LUMEN_OK;
      }
    }
  for (int64_t t = 0; t < per && d->line != LINE_RANK; t++) {
    double lo = INFINITY, hi = -INFINITY, next_lo = INFINITY;
    for (int64_t k = 0; k < o->nz; k++) {
      int64_t a = o->idx[k * per + t], f = o->idx[t];
      lo = fmin(lo, o->key[a]), hi = fmax(hi, o->key[a]);
      if (t + 1 < per) next_lo = fmin(next_lo, o->key[o->idx[k * per + t + 1]]);
      if (d->line == LINE_EXACT && fabs(o->key[a] - o->key[f]) > 1e-6 * (fabs(o->key[f]) + 1))
        return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                          "lumen_dicom_series_read: '%s': frame %lld of its slice has %s (%s) %g, but frame %lld of "
                          "the first slice ('%s') has %g: the slices' frames do not line up (expected the same value)",
                          o->m[a].path, (long long)t, d->name, d->tag, o->key[a], (long long)t, o->m[f].path, o->key[f]);
    }
    if (d->line == LINE_TIMES && !(hi < next_lo)) {
      snprintf(o->why[s], sizeof o->why[s], "the slices of time point %lld and the next overlap in time", (long long)t);
      return LUMEN_OK;
    }
  }
  o->usable[s] = 1;
  return LUMEN_OK;
}

static void note_add(lumen_dicom_series_info *info, const char *fmt, const char *a, const char *b, const char *c) {
  size_t len = strlen(info->timing_note);
  if (len + 1 >= sizeof info->timing_note) return;
  snprintf(info->timing_note + len, sizeof info->timing_note - len, fmt, a, b, c);
}

/* No source orders the frames: which tags were looked at and what each held. */
static lumen_status no_order(lumen_ctx *ctx, const order_ctx *o) {
  char msg[2048];
  int len = snprintf(msg, sizeof msg, "lumen_dicom_series_read: '%s': no timing: %lld %s at one slice position and "
                     "no tag orders them:", o->m[0].path, (long long)o->per, o->m[0].enhanced ? "frames" : "files");
  for (int s = 0; s < SRC_COUNT && len < (int)sizeof msg; s++)
    if (o->src[s].name)
      len += snprintf(msg + len, sizeof msg - (size_t)len, " %s (%s): %s;", o->src[s].name, o->src[s].tag, o->why[s]);
  return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s", msg);
}

/* A later source that orders every slice too, but differently: a warning naming both. */
static void cross_check(lumen_ctx *ctx, order_ctx *o, int used, lumen_dicom_series_info *info) {
  for (int s = used + 1; s < SRC_COUNT; s++) {
    if (!o->src[s].name || !keys_of(o, s)) continue;
    for (int64_t i = 1; i < o->n; i++) {
      if (i % o->per == 0 || o->key[i] > o->key[i - 1]) continue;
      char buf[200];
      snprintf(buf, sizeof buf, "%.10g", o->key[i]);
      lumen_log(ctx, LUMEN_LOG_WARNING, "lumen_dicom_series_read: frames ordered by %s (first in the precedence); %s "
                "orders them differently ('%s' has %s, after '%s')", o->src[used].name, o->src[s].name, o->m[i].path, buf,
                o->m[i - 1].path);
      note_add(info, "; %s orders the frames differently ('%s' after '%s')", o->src[s].name, base(o->m[i].path),
               base(o->m[i - 1].path));
      info->timing_disagree = 1;
      break;
    }
  }
}

/* Frame times from the first time source that rises with the frame order in the first slice. */
static lumen_status frame_times(lumen_ctx *ctx, order_ctx *o, int used, lumen_dicom_series_info *info) {
  static const int time_sources[] = {SRC_TRIGGER, SRC_ACQUISITION, SRC_CONTENT, SRC_FRAME_REF};
  for (size_t j = 0; j < sizeof time_sources / sizeof *time_sources; j++) {
    int s = time_sources[j];
    if (!o->src[s].name) continue;
    if (!keys_of(o, s)) {
      if (s != used && strcmp(o->why[s], "absent")) note_add(info, "; no times from %s: %s%s", o->src[s].name, o->why[s], "");
      continue;
    }
    int rises = 1, flat = 1;
    for (int64_t t = 1; t < o->per; t++) {
      rises &= o->key[t] > o->key[t - 1];
      flat &= o->key[t] == o->key[0];
    }
    if (!rises) {
      if (flat) note_add(info, "; no times from %s: %s%s", o->src[s].name, "the same value in every frame", "");
      else {
        lumen_log(ctx, LUMEN_LOG_WARNING, "lumen_dicom_series_read: '%s': %s does not rise with the frame order (%s): "
                  "not used for the frame times", o->m[0].path, o->src[s].name, o->src[used].name);
        note_add(info, "; no times from %s: it does not rise with the frame order (%s)%s", o->src[s].name,
                 o->src[used].name, "");
        info->timing_disagree = 1;
      }
      continue;
    }
    info->frame_times_s = malloc(sizeof(double) * (size_t)o->per);
    if (!info->frame_times_s) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_series_read: out of memory");
    for (int64_t t = 0; t < o->per; t++) info->frame_times_s[t] = (o->key[t] - o->key[0]) * o->src[s].to_s;
    info->frame_time_source = o->src[s].name;
    if (s == SRC_ACQUISITION && !o->m[0].enhanced && o->acq_mode != ACQ_TIME_ONLY)
      info->frame_time_source = o->acq_mode == ACQ_DATETIME ? "AcquisitionDateTime" : "AcquisitionDate+AcquisitionTime";
    return LUMEN_OK;
  }
  return LUMEN_OK;
}

static int cmp_along(const void *a, const void *b) {
  const member *x = a, *y = b;
  if (fabs(x->along - y->along) > POSITION_TOL) return x->along < y->along ? -1 : 1;
  return strcmp(x->path, y->path);
}

/* Slices: runs of equal position, each with as many members as the fullest. */
static lumen_status slices_of(lumen_ctx *ctx, const member *m, int64_t n, int64_t *nz, int64_t *per) {
  int64_t slices = 1, run = 1, most = 0;
  for (int64_t i = 1; i <= n; i++) {
    if (i < n && fabs(m[i].along - m[i - 1].along) <= POSITION_TOL) run++;
    else {
      if (run > most) most = run;
      if (i < n) slices++;
      run = 1;
    }
  }
  run = 1;
  for (int64_t i = 1; i <= n; i++) {
    if (i < n && fabs(m[i].along - m[i - 1].along) <= POSITION_TOL) {
      run++;
      continue;
    }
    if (run != most)
      return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                        "lumen_dicom_series_read: '%s': missing frame: its slice (ImagePositionPatient %.4g mm along "
                        "the normal) has %lld %s, other slices %lld",
                        m[i - 1].path, m[i - 1].along, (long long)run, m[0].enhanced ? "frames" : "files", (long long)most);
    run = 1;
  }
  *nz = slices;
  *per = most;
  return LUMEN_OK;
}

static lumen_status even_slices(lumen_ctx *ctx, const member *m, int64_t nz, int64_t per) {
  if (nz <= 2) return LUMEN_OK;
  double step = (m[(nz - 1) * per].along - m[0].along) / (double)(nz - 1);
  for (int64_t k = 1; k < nz; k++) {
    double gap = m[k * per].along - m[(k - 1) * per].along;
    if (fabs(gap - step) > GAP_TOL * fabs(step))
      return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                        "lumen_dicom_series_read: '%s': inconsistent geometry: ImagePositionPatient (0020,0032) is "
                        "%.4g mm from the previous slice, expected %.4g mm (evenly spaced slices)",
                        m[k * per].path, gap, step);
  }
  return LUMEN_OK;
}

/* The frames of every slice in the order of source used (o->idx), as m itself. */
static lumen_status apply_order(lumen_ctx *ctx, order_ctx *o) {
  member *sorted = malloc(sizeof *sorted * (size_t)o->n);
  if (!sorted) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_series_read: out of memory");
  for (int64_t i = 0; i < o->n; i++) {
    sorted[i] = o->m[o->idx[i]];
    sorted[i].key = o->key[o->idx[i]];
  }
  memcpy(o->m, sorted, sizeof *sorted * (size_t)o->n);
  free(sorted);
  return LUMEN_OK;
}

lumen_status lumen_dicom_series_arrange(lumen_ctx *ctx, member *m, int64_t n, int64_t *nz, int64_t *nt,
                                        lumen_dicom_series_info *info) {
  const double *o6 = m[0].h.series.orientation;
  double nrm[3] = {o6[1] * o6[5] - o6[2] * o6[4], o6[2] * o6[3] - o6[0] * o6[5], o6[0] * o6[4] - o6[1] * o6[3]};
  for (int64_t i = 0; i < n; i++) {
    const double *p = m[i].h.series.position;
    m[i].along = p[0] * nrm[0] + p[1] * nrm[1] + p[2] * nrm[2];
    m[i].key = 0;
  }
  qsort(m, (size_t)n, sizeof *m, cmp_along);
  lumen_status s = slices_of(ctx, m, n, nz, nt);
  if (s != LUMEN_OK || *nt == 1) return s == LUMEN_OK ? even_slices(ctx, m, *nz, *nt) : s;
  order_ctx o;
  memset(&o, 0, sizeof o);
  o.m = m, o.n = n, o.nz = *nz, o.per = *nt;
  o.src = m[0].enhanced == 2 ? legacy_sources : m[0].enhanced ? enhanced_sources : classic_sources;
  acquisition_mode(&o);
  o.key = malloc(sizeof(double) * (size_t)n);
  o.idx = malloc(sizeof(int64_t) * (size_t)n);
  if (!o.key || !o.idx) s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_series_read: out of memory");
  int used = -1;
  for (int src = 0; s == LUMEN_OK && src < SRC_COUNT && used < 0; src++) {
    s = try_source(ctx, &o, src);
    if (s == LUMEN_OK && o.usable[src]) used = src;
  }
  if (s == LUMEN_OK && used < 0) s = no_order(ctx, &o);
  if (s == LUMEN_OK) s = apply_order(ctx, &o);
  if (s == LUMEN_OK) {
    info->frame_order = o.src[used].name;
    snprintf(info->timing_note, sizeof info->timing_note, "frames ordered by %s", o.src[used].name);
    for (int src = 0; src < used; src++)  /* the sources passed over that the files have */
      if (o.src[src].name && strcmp(o.why[src], "absent")) note_add(info, "; not by %s: %s%s", o.src[src].name, o.why[src], "");
    cross_check(ctx, &o, used, info);
    s = frame_times(ctx, &o, used, info);
  }
  free(o.key);
  free(o.idx);
  if (s == LUMEN_OK) s = even_slices(ctx, m, *nz, *nt);
  return s;
}
