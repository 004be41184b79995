/* `lumen dce --aif file:PATH`: an AIF from a text table, lumen's own {prefix}_aif.tsv included.
   Accepted layouts (docs/PIPELINES.md):
     one column, no header        one plasma value (mM) per frame
     two columns, no header       time (s from the first frame), plasma (mM)
     a header naming the columns  time_s | time | t | t_s (s) or time_min | t_min (min), and
                                  Cp | plasma (plasma, preferred) or Cb | blood | Ca (whole blood),
                                  case-insensitive, unit suffix optional (_mM, (s), [min] ...)
   Frames are linearly interpolated between samples; a frame at most one frame interval before the
   first or after the last sample takes that sample's value, a frame further out is refused. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/pipe_aif.h"

typedef enum col_kind {
  COL_OTHER = 0,  /* not a name we know: ignored */
  COL_TIME_S,
  COL_TIME_MIN,
  COL_PLASMA,
  COL_BLOOD,
  COL_BAD_UNIT,   /* a known name with a unit we do not understand (Cp_uM, time_ms) */
  COL_KINDS
} col_kind;

static const char *const kind_text[COL_KINDS] = {"other", "time (s)", "time (min)", "plasma", "whole blood",
                                                 "bad unit"};

#define NAMES_EXPECTED                                                                        \
  "a time column (time_s, time, t or t_s in seconds; time_min or t_min in minutes) and a " \
  "concentration column (Cp, Cp_mM or plasma; else Cb, Cb_mM, blood or Ca for whole "     \
  "blood), names case-insensitive, each kind once"

/* Appends to a fixed buffer, truncating quietly (detail lines and messages). */
static void append(char *buf, size_t size, const char *fmt, ...) LUMEN_PRINTF(3, 4);
static void append(char *buf, size_t size, const char *fmt, ...) {
  if (!buf || size == 0) return;
  size_t n = strlen(buf);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, size - n, fmt, ap);
  va_end(ap);
}

static int one_of(const char *s, const char *const *list) {
  for (; *list; list++)
    if (!strcmp(s, *list)) return 1;
  return 0;
}

/* Splits a lower-cased column name into its base and unit: "cp_mm" -> cp + mm, "time(s)" and
   "time[s]" -> time + s, "plasma" -> plasma + "". */
static col_kind classify(const char *name) {
  char base[128], unit[128] = "";
  size_t n = 0;
  for (; name && name[n] && n + 1 < sizeof base; n++) base[n] = (char)tolower((unsigned char)name[n]);
  base[n] = '\0';
  char close = n ? base[n - 1] : '\0';
  char *cut = NULL;
  if (close == ')' || close == ']') {
    cut = strrchr(base, close == ')' ? '(' : '[');
    if (cut) {
      base[n - 1] = '\0';
      snprintf(unit, sizeof unit, "%s", cut + 1);
      *cut = '\0';
      if (cut > base && cut[-1] == '_') cut[-1] = '\0';
    }
  } else if ((cut = strrchr(base, '_')) != NULL) {
    snprintf(unit, sizeof unit, "%s", cut + 1);
    *cut = '\0';
  }
  static const char *const time_names[] = {"time", "t", NULL};
  static const char *const plasma_names[] = {"cp", "plasma", NULL};
  static const char *const blood_names[] = {"cb", "blood", "ca", NULL};
  static const char *const seconds[] = {"", "s", "sec", NULL};
  static const char *const conc_units[] = {"", "mm", "mmol/l", NULL};
  if (one_of(base, time_names)) {
    if (one_of(unit, seconds)) return COL_TIME_S;
    return strcmp(unit, "min") ? COL_BAD_UNIT : COL_TIME_MIN;
  }
  if (one_of(base, plasma_names)) return one_of(unit, conc_units) ? COL_PLASMA : COL_BAD_UNIT;
  if (one_of(base, blood_names)) return one_of(unit, conc_units) ? COL_BLOOD : COL_BAD_UNIT;
  return COL_OTHER;
}

static void list_columns(const lumen_table *tab, char *buf, size_t size) {
  buf[0] = '\0';
  for (int64_t c = 0; c < tab->cols; c++)
    append(buf, size, "%s%s", c ? ", " : "", tab->names[c] ? tab->names[c] : "(unnamed)");
}

/* The columns to use from a header: time (-1 for a one-column per-frame table) and concentration. */
static lumen_status pick_columns(lumen_ctx *ctx, const char *path, const lumen_table *tab, int64_t *time_col,
                                 int64_t *time_min_col, int64_t *conc_col, int *blood) {
  int64_t first[COL_KINDS], count[COL_KINDS] = {0};
  for (int k = 0; k < COL_KINDS; k++) first[k] = -1;
  char found[512];
  list_columns(tab, found, sizeof found);
  for (int64_t c = 0; c < tab->cols; c++) {
    col_kind k = classify(tab->names[c]);
    if (k == COL_BAD_UNIT)
      return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                        "AIF file '%s': column '%s' has a unit lumen does not know: expected s or min for a time, "
                        "mM for a concentration (columns found: %s)", path, tab->names[c], found);
    if (count[k]++ == 0) first[k] = c;
  }
  char problem[64] = "";
  for (int k = COL_TIME_S; k <= COL_BLOOD; k++)
    if (count[k] > 1) snprintf(problem, sizeof problem, "more than one %s column", kind_text[k]);
  *blood = first[COL_PLASMA] < 0;
  *conc_col = *blood ? first[COL_BLOOD] : first[COL_PLASMA];
  *time_col = first[COL_TIME_S] >= 0 ? first[COL_TIME_S] : first[COL_TIME_MIN];
  *time_min_col = first[COL_TIME_S] >= 0 ? first[COL_TIME_MIN] : -1;  /* a second time column to check */
  if (!problem[0] && *conc_col < 0) snprintf(problem, sizeof problem, "no concentration column");
  if (!problem[0] && *time_col < 0 && tab->cols > 1) snprintf(problem, sizeof problem, "no time column");
  if (!problem[0]) return LUMEN_OK;
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "AIF file '%s': columns found: %s; %s; expected " NAMES_EXPECTED,
                    path, found, problem);
}

/* Column c of row r, refused when not finite. */
static lumen_status cell(lumen_ctx *ctx, const char *path, const lumen_table *tab, int64_t r, int64_t c,
                         const char *what, double *out) {
  double v = tab->values[r * tab->cols + c];
  if (!isfinite(v))
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "AIF file '%s': line %lld: the %s is %g: expected a finite number", path,
                      (long long)tab->row_line[r], what, v);
  *out = v;
  return LUMEN_OK;
}

/* Linear interpolation of the samples (ts seconds, c) at the frame times. */
static lumen_status interpolate(lumen_ctx *ctx, const char *path, const lumen_table *tab, const double *ts,
                                const double *c, int64_t nt, const double *t_min, double *out) {
  const int64_t last = tab->rows - 1;
  const double gap_first = nt > 1 ? fabs(t_min[1] - t_min[0]) * 60 : 0;
  const double gap_last = nt > 1 ? fabs(t_min[nt - 1] - t_min[nt - 2]) * 60 : 0;
  int64_t r = 0;
  for (int64_t i = 0; i < nt; i++) {
    double t = (t_min[i] - t_min[0]) * 60, slack = 1e-6 * fmax(1, fabs(t));  /* for times printed with %g */
    if (!isfinite(t))
      return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "pipe_aif_read_file: frame %lld: time %g min is not finite",
                        (long long)i, t_min[i]);
    if (t < ts[0] || t > ts[last]) {
      int before = t < ts[0];
      double gap = before ? gap_first : gap_last, miss = before ? ts[0] - t : t - ts[last];
      if (!(miss <= gap + slack))
        return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                          "AIF file '%s': its samples cover %g .. %g s from the first frame, frame %lld is at %g s: "
                          "more than one frame interval (%g s) %s; extend the table (are the times in seconds?)",
                          path, ts[0], ts[last], (long long)i, t, gap,
                          before ? "before the first sample" : "after the last sample");
      out[i] = before ? c[0] : c[last];
      continue;
    }
    while (r < last && ts[r + 1] <= t) r++;
    while (r > 0 && ts[r] > t) r--;
    if (r == last || t == ts[r])
      out[i] = c[r];  /* on a sample: its value exactly */
    else
      out[i] = c[r] + (c[r + 1] - c[r]) * (t - ts[r]) / (ts[r + 1] - ts[r]);
  }
  return LUMEN_OK;
}

static lumen_status read_samples(lumen_ctx *ctx, const char *path, const lumen_table *tab, int64_t nt,
                                 const double *t_min, int64_t time_col, int minutes, int64_t check_min_col,
                                 int64_t conc_col, const char *conc_what, double *out) {
  double *ts = malloc(sizeof(double) * (size_t)tab->rows), *c = malloc(sizeof(double) * (size_t)tab->rows);
  lumen_status st = ts && c ? LUMEN_OK : lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "AIF file '%s': out of memory", path);
  for (int64_t r = 0; r < tab->rows && st == LUMEN_OK; r++) {
    st = cell(ctx, path, tab, r, time_col, "time", &ts[r]);
    if (st == LUMEN_OK) st = cell(ctx, path, tab, r, conc_col, conc_what, &c[r]);
    if (st != LUMEN_OK) break;
    if (minutes) ts[r] *= 60;
    if (check_min_col >= 0) {
      double m = 0;
      st = cell(ctx, path, tab, r, check_min_col, "time in minutes", &m);
      if (st == LUMEN_OK && !(fabs(ts[r] - 60 * m) <= 1e-4 * fmax(1, fabs(ts[r]))))
        st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                        "AIF file '%s': line %lld: time %g s and %g min disagree (%s and %s): expected min = s / 60",
                        path, (long long)tab->row_line[r], ts[r], m, tab->names[time_col], tab->names[check_min_col]);
    }
    if (st == LUMEN_OK && r > 0 && !(ts[r] > ts[r - 1]))
      st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "AIF file '%s': line %lld: time %g s is not after %g s on line %lld: times must increase", path,
                      (long long)tab->row_line[r], ts[r], ts[r - 1], (long long)tab->row_line[r - 1]);
  }
  if (st == LUMEN_OK) st = interpolate(ctx, path, tab, ts, c, nt, t_min, out);
  free(ts);
  free(c);
  return st;
}

lumen_status pipe_aif_read_file(lumen_ctx *ctx, const char *path, int64_t nt, const double *t_min, double hct,
                                double *cp, double *cb, char *detail, size_t detail_size) {
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  LUMEN_REQUIRE_NOT_NULL(ctx, t_min);
  LUMEN_REQUIRE_NOT_NULL(ctx, cp);
  LUMEN_REQUIRE_NOT_NULL(ctx, cb);
  LUMEN_REQUIRE(ctx, nt >= 1, "pipe_aif_read_file: nt is %lld, expected >= 1 frame", (long long)nt);
  LUMEN_REQUIRE(ctx, hct >= 0 && hct < 1, "pipe_aif_read_file: hematocrit is %g, expected 0 <= hct < 1", hct);
  if (detail && detail_size) detail[0] = '\0';
  lumen_table tab;
  lumen_table_opts to = {0};
  to.allow_header = 1;
  lumen_status st = lumen_read_table(ctx, path, &to, &tab);
  if (st != LUMEN_OK) return st;
  int64_t time_col = -1, check_min_col = -1, conc_col = -1;
  int blood = 0, minutes = 0;
  if (tab.names) {
    st = pick_columns(ctx, path, &tab, &time_col, &check_min_col, &conc_col, &blood);
    minutes = time_col >= 0 && classify(tab.names[time_col]) == COL_TIME_MIN;
  } else if (tab.cols <= 2) {
    conc_col = tab.cols - 1;
    time_col = tab.cols == 2 ? 0 : -1;
  } else {
    st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "AIF file '%s': %lld columns without a header: expected one column (plasma mM per frame), two "
                    "(time s from the first frame, plasma mM), or a header line naming " NAMES_EXPECTED,
                    path, (long long)tab.cols);
  }
  const char *conc_name = tab.names ? tab.names[conc_col >= 0 ? conc_col : 0] : blood ? "blood" : "plasma";
  const char *conc_what = blood ? "whole-blood concentration" : "plasma concentration";
  double *conc = blood ? cb : cp;
  if (st == LUMEN_OK && time_col < 0) {
    /* one value per frame */
    if (tab.rows != nt)
      st = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "AIF file '%s': %lld values in one column, the series has %lld frames (one column: one "
                      "concentration per frame; two columns: time s, plasma mM)", path, (long long)tab.rows,
                      (long long)nt);
    for (int64_t i = 0; i < nt && st == LUMEN_OK; i++) st = cell(ctx, path, &tab, i, conc_col, conc_what, &conc[i]);
    if (st == LUMEN_OK && detail)
      append(detail, detail_size, "%s concentration (mM) from '%s'%s%s%s, one value per frame (%lld)",
             blood ? "whole-blood" : "plasma", path, tab.names ? ", column " : "", tab.names ? conc_name : "",
             tab.names ? "" : " (one column)", (long long)nt);
  } else if (st == LUMEN_OK) {
    st = read_samples(ctx, path, &tab, nt, t_min, time_col, minutes, check_min_col, conc_col, conc_what, conc);
    if (st == LUMEN_OK && detail) {
      const int64_t last = tab.rows - 1;
      double k = minutes ? 60 : 1;
      append(detail, detail_size, "%s concentration (mM) from '%s', ", blood ? "whole-blood" : "plasma", path);
      if (tab.names)
        append(detail, detail_size, "column %s against %s (%s from the first frame%s%s%s)", conc_name,
               tab.names[time_col], minutes ? "min, converted to s" : "s", check_min_col >= 0 ? "; " : "",
               check_min_col >= 0 ? tab.names[check_min_col] : "", check_min_col >= 0 ? " agrees" : "");
      else
        append(detail, detail_size, "column 2 against column 1 (time in s from the first frame, no header)");
      append(detail, detail_size, ", %lld samples %g .. %g s, linear interpolation at the %lld frame times (a frame "
             "up to one frame interval outside the samples takes the nearest sample)", (long long)tab.rows,
             tab.values[time_col] * k, tab.values[last * tab.cols + time_col] * k, (long long)nt);
    }
  }
  if (st == LUMEN_OK && detail && tab.names) {
    int first = 1;
    for (int64_t c = 0; c < tab.cols; c++) {
      if (c == conc_col || c == time_col || c == check_min_col) continue;
      append(detail, detail_size, "%s%s", first ? "; not used: " : ", ", tab.names[c] ? tab.names[c] : "(unnamed)");
      first = 0;
    }
  }
  lumen_table_clear(&tab);
  if (st != LUMEN_OK) return st;
  for (int64_t i = 0; i < nt; i++) {
    if (blood)
      cp[i] = cb[i] / (1 - hct);
    else
      cb[i] = cp[i] * (1 - hct);
  }
  if (detail)
    append(detail, detail_size, blood ? "; Cp = Cb/(1 - %g)" : "; Cb = Cp (1 - %g)", hct);
  return LUMEN_OK;
}
