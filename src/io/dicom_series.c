/* A classic DICOM series (one single-frame file per slice and time point) as one 3-D/4-D float
   image with dcm2niix's layout and affine (include/lumen/io.h, docs/DICOM.md "Series"). The
   headers come from the C pre-check (dicom_parse.c + dicom_series_tags.c); the pixels from
   lumen_dicom_read. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "io/dicom_internal.h"

#define MAX_SERIES_FILES 1000000
#define ORIENT_TOL 1e-4   /* direction cosines */
#define SPACING_TOL 1e-4  /* relative, pixel spacing */
#define POSITION_TOL 1e-3 /* mm along the normal: files at one slice position */
#define GAP_TOL 0.01      /* relative difference of slice gaps */

void lumen_dicom_series_info_clear(lumen_dicom_series_info *info) {
  if (!info) return;
  free(info->frame_times_s);
  memset(info, 0, sizeof *info);
}

int lumen_dicom_is_series_input(const char *path) {
  struct stat st;
  if (!path || stat(path, &st) != 0) return 0;
  if (!S_ISDIR(st.st_mode)) return lumen_dicom_is_dicom_file(path);
  DIR *d = opendir(path);
  if (!d) return 0;
  int found = 0;
  struct dirent *e;
  char buf[4096];
  while (!found && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (snprintf(buf, sizeof buf, "%s/%s", path, e->d_name) >= (int)sizeof buf) continue;
    found = lumen_dicom_is_dicom_file(buf);
  }
  closedir(d);
  return found;
}

/* The file list: growable array of owned strings. */
typedef struct file_list {
  char **names;
  int64_t n, cap;
} file_list;

static void list_free(file_list *l) {
  for (int64_t i = 0; i < l->n; i++) free(l->names[i]);
  free(l->names);
  memset(l, 0, sizeof *l);
}

static int list_add(file_list *l, const char *name) {
  if (l->n == l->cap) {
    int64_t cap = l->cap ? 2 * l->cap : 64;
    char **p = realloc(l->names, sizeof(char *) * (size_t)cap);
    if (!p) return 0;
    l->names = p;
    l->cap = cap;
  }
  l->names[l->n] = strdup(name);
  return l->names[l->n] ? (l->n++, 1) : 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static lumen_status list_inputs(lumen_ctx *ctx, const char *const *paths, int n_paths, file_list *l) {
  for (int i = 0; i < n_paths; i++) {
    struct stat st;
    if (!paths[i] || stat(paths[i], &st) != 0)
      return lumen_fail(ctx, LUMEN_ERR_IO, "lumen_dicom_series_read: '%s': not found", paths[i] ? paths[i] : "");
    if (!S_ISDIR(st.st_mode)) {
      if (!list_add(l, paths[i])) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_series_read: out of memory");
      continue;
    }
    DIR *d = opendir(paths[i]);
    if (!d) return lumen_fail(ctx, LUMEN_ERR_IO, "lumen_dicom_series_read: '%s': cannot open the folder", paths[i]);
    struct dirent *e;
    char buf[4096];
    int ok = 1;
    while (ok && (e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      if (snprintf(buf, sizeof buf, "%s/%s", paths[i], e->d_name) >= (int)sizeof buf) continue;
      if (!lumen_dicom_is_dicom_file(buf)) continue;
      if (l->n >= MAX_SERIES_FILES) ok = -1;
      else ok = list_add(l, buf);
    }
    closedir(d);
    if (ok == 0) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_series_read: out of memory");
    if (ok < 0)
      return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "lumen_dicom_series_read: '%s' holds more than %d DICOM files",
                        paths[i], MAX_SERIES_FILES);
  }
  if (l->n == 0)
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_series_read: '%s': no DICOM file (none with \"DICM\" at byte 128)",
                      n_paths > 0 && paths[0] ? paths[0] : "");
  qsort(l->names, (size_t)l->n, sizeof(char *), cmp_str);
  return LUMEN_OK;
}

/* One member of the series: its file, its header, and its sort keys. */
typedef struct member {
  const char *path;
  lumen_dicom_header h;
  double along;  /* ImagePositionPatient . normal */
  double key;    /* the frame order key */
} member;

static int cmp_member(const void *a, const void *b) {
  const member *x = a, *y = b;
  if (fabs(x->along - y->along) > POSITION_TOL) return x->along < y->along ? -1 : 1;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return strcmp(x->path, y->path);
}

/* Several series: refuse, listing each (UID, description, file count). */
static lumen_status refuse_several(lumen_ctx *ctx, const char *where, const member *m, int64_t n) {
  char msg[2048];
  int len = snprintf(msg, sizeof msg, "lumen_dicom_series_read: '%s' holds several series; choose one by its "
                                      "SeriesInstanceUID (--series UID):", where);
  for (int64_t i = 0; i < n && len < (int)sizeof msg; i++) {
    int seen = 0;
    for (int64_t k = 0; k < i && !seen; k++) seen = strcmp(m[k].h.series.series_uid, m[i].h.series.series_uid) == 0;
    if (seen) continue;
    int64_t count = 0;
    for (int64_t k = i; k < n; k++) count += strcmp(m[k].h.series.series_uid, m[i].h.series.series_uid) == 0;
    len += snprintf(msg + len, sizeof msg - (size_t)len, "\n  %s  \"%s\"  %lld files",
                    m[i].h.series.series_uid[0] ? m[i].h.series.series_uid : "(no SeriesInstanceUID)",
                    m[i].h.series.series_description, (long long)count);
  }
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s", msg);
}

static lumen_status geometry_error(lumen_ctx *ctx, const char *path, const char *field, const char *detail) {
  return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_series_read: '%s': inconsistent geometry: %s %s", path, field,
                    detail);
}

/* Every file against the first: size, orientation, spacing present and equal. */
static lumen_status check_geometry(lumen_ctx *ctx, member *m, int64_t n) {
  const lumen_dicom_header *f = &m[0].h;
  for (int64_t i = 0; i < n; i++) {
    const lumen_dicom_header *h = &m[i].h;
    char d[192];
    if (!h->series.has_orientation)
      return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                        "lumen_dicom_series_read: '%s': ImageOrientationPatient (0020,0037) missing, expected in every "
                        "file of a series", m[i].path);
    if (!h->series.has_position)
      return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                        "lumen_dicom_series_read: '%s': ImagePositionPatient (0020,0032) missing, expected in every "
                        "file of a series", m[i].path);
    if (!h->info.spacing_source || strcmp(h->info.spacing_source, "PixelSpacing") != 0)
      return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                        "lumen_dicom_series_read: '%s': PixelSpacing (0028,0030) missing, expected in every file of a "
                        "series", m[i].path);
    if (h->info.frames != 1)
      return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED,
                        "lumen_dicom_series_read: '%s': NumberOfFrames is %lld: multi-frame (enhanced) files in a series "
                        "are not supported yet, expected single-frame images", m[i].path, (long long)h->info.frames);
    if (h->info.rows != f->info.rows || h->info.columns != f->info.columns) {
      snprintf(d, sizeof d, "is %lld x %lld, expected %lld x %lld as in '%s'", (long long)h->info.rows,
               (long long)h->info.columns, (long long)f->info.rows, (long long)f->info.columns, m[0].path);
      return geometry_error(ctx, m[i].path, "Rows x Columns", d);
    }
    for (int k = 0; k < 6; k++)
      if (fabs(h->series.orientation[k] - f->series.orientation[k]) > ORIENT_TOL) {
        const double *a = h->series.orientation, *b = f->series.orientation;
        snprintf(d, sizeof d, "is %g\\%g\\%g\\%g\\%g\\%g, expected %g\\%g\\%g\\%g\\%g\\%g as in '%s'", a[0], a[1], a[2],
                 a[3], a[4], a[5], b[0], b[1], b[2], b[3], b[4], b[5], m[0].path);
        return geometry_error(ctx, m[i].path, "ImageOrientationPatient (0020,0037)", d);
      }
    for (int k = 0; k < 2; k++)
      if (fabs(h->info.spacing[k] - f->info.spacing[k]) > SPACING_TOL * f->info.spacing[k]) {
        snprintf(d, sizeof d, "is %g\\%g, expected %g\\%g as in '%s'", h->info.spacing[1], h->info.spacing[0],
                 f->info.spacing[1], f->info.spacing[0], m[0].path);
        return geometry_error(ctx, m[i].path, "PixelSpacing (0028,0030)", d);
      }
  }
  const double *o = f->series.orientation;
  double nr = sqrt(o[0] * o[0] + o[1] * o[1] + o[2] * o[2]), nc = sqrt(o[3] * o[3] + o[4] * o[4] + o[5] * o[5]);
  double dot = o[0] * o[3] + o[1] * o[4] + o[2] * o[5];
  if (fabs(nr - 1) > 1e-3 || fabs(nc - 1) > 1e-3 || fabs(dot) > 1e-3)
    return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                      "lumen_dicom_series_read: '%s': ImageOrientationPatient (0020,0037) is not two orthogonal unit "
                      "vectors", m[0].path);
  return LUMEN_OK;
}

/* The frame order tag every file has: 1 TemporalPositionIdentifier, 2 TriggerTime, 3 AcquisitionTime,
   4 ContentTime; 0 none. Time source likewise (2..4). */
static double tag_value(const lumen_dicom_series_tags *t, int which) {
  switch (which) {
  case 1: return t->temporal_position;
  case 2: return t->trigger_time_ms / 1000.0;
  case 3: return t->acquisition_time_s;
  default: return t->content_time_s;
  }
}
static int tag_present(const lumen_dicom_series_tags *t, int which) {
  switch (which) {
  case 1: return t->has_temporal;
  case 2: return t->has_trigger;
  case 3: return t->has_acquisition_time;
  default: return t->has_content_time;
  }
}
static const char *const tag_names[] = {NULL, "TemporalPositionIdentifier", "TriggerTime", "AcquisitionTime",
                                        "ContentTime"};

static int first_common_tag(const member *m, int64_t n, int from) {
  for (int which = from; which <= 4; which++) {
    int all = 1;
    for (int64_t i = 0; i < n && all; i++) all = tag_present(&m[i].h.series, which);
    if (all) return which;
  }
  return 0;
}

/* Sorts the members into slices x frames; *nz, *nt; frame times into info. */
static lumen_status arrange(lumen_ctx *ctx, member *m, int64_t n, int64_t *nz, int64_t *nt,
                            lumen_dicom_series_info *info) {
  const double *o = m[0].h.series.orientation;
  double nrm[3] = {o[1] * o[5] - o[2] * o[4], o[2] * o[3] - o[0] * o[5], o[0] * o[4] - o[1] * o[3]};
  int order = first_common_tag(m, n, 1), timing = first_common_tag(m, n, 2);
  for (int64_t i = 0; i < n; i++) {
    const double *p = m[i].h.series.position;
    m[i].along = p[0] * nrm[0] + p[1] * nrm[1] + p[2] * nrm[2];
    m[i].key = order ? tag_value(&m[i].h.series, order) : 0;
  }
  qsort(m, (size_t)n, sizeof *m, cmp_member);
  /* the slices: runs of equal position; every slice must have as many files as the fullest */
  int64_t slices = 1, run = 1, per = 0;
  for (int64_t i = 1; i <= n; i++) {
    if (i < n && fabs(m[i].along - m[i - 1].along) <= POSITION_TOL) run++;
    else {
      if (run > per) per = run;
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
    if (run != per)
      return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                        "lumen_dicom_series_read: '%s': missing frame: its slice (ImagePositionPatient %.4g mm along "
                        "the normal) has %lld files, other slices %lld",
                        m[i - 1].path, m[i - 1].along, (long long)run, (long long)per);
    run = 1;
  }
  *nz = slices;
  *nt = per;
  if (per > 1 && !order)
    return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                      "lumen_dicom_series_read: '%s': no timing: %lld files at one slice position and none of "
                      "TemporalPositionIdentifier (0020,0100), TriggerTime (0018,1060), AcquisitionTime (0008,0032), "
                      "ContentTime (0008,0033) in every file to order them",
                      m[0].path, (long long)per);
  for (int64_t i = 1; i < n; i++)
    if ((i % per) != 0 && m[i].key == m[i - 1].key)
      return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                        "lumen_dicom_series_read: '%s' and '%s': the same slice position and the same %s (%g): "
                        "a duplicate frame",
                        m[i - 1].path, m[i].path, tag_names[order], m[i].key);
  /* frame t of every slice is the same time point: TemporalPositionIdentifier and TriggerTime
     must agree exactly; acquisition/content times (slices are acquired one after another) within
     half the shortest frame interval of the first slice */
  if (per > 1) {
    double half = INFINITY;
    for (int64_t t = 1; t < per; t++)
      if (m[t].key - m[t - 1].key < 2 * half) half = (m[t].key - m[t - 1].key) / 2;
    double tol = order <= 2 ? 1e-6 * (fabs(m[per - 1].key) + 1) : half;
    for (int64_t k = 1; k < slices; k++)
      for (int64_t t = 0; t < per; t++)
        if (!(fabs(m[k * per + t].key - m[t].key) < tol || (order <= 2 && m[k * per + t].key == m[t].key)))
          return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                            "lumen_dicom_series_read: '%s': frame %lld of its slice has %s %g, but frame %lld of the "
                            "first slice ('%s') has %g: the slices' frames do not line up (expected %s)",
                            m[k * per + t].path, (long long)t, tag_names[order], m[k * per + t].key, (long long)t,
                            m[t].path, m[t].key, order <= 2 ? "the same value" : "within half a frame interval");
  }
  /* the slices: uniformly spaced */
  if (slices > 2) {
    double step = (m[(slices - 1) * per].along - m[0].along) / (double)(slices - 1);
    for (int64_t k = 1; k < slices; k++) {
      double gap = m[k * per].along - m[(k - 1) * per].along;
      if (fabs(gap - step) > GAP_TOL * fabs(step))
        return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                          "lumen_dicom_series_read: '%s': inconsistent geometry: ImagePositionPatient (0020,0032) is "
                          "%.4g mm from the previous slice, expected %.4g mm (evenly spaced slices)",
                          m[k * per].path, gap, step);
    }
  }
  info->frame_order = per > 1 ? tag_names[order] : NULL;
  if (per > 1 && timing) {
    info->frame_times_s = malloc(sizeof(double) * (size_t)per);
    if (!info->frame_times_s) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_series_read: out of memory");
    double t0 = tag_value(&m[0].h.series, timing);
    for (int64_t t = 0; t < per; t++) {
      info->frame_times_s[t] = tag_value(&m[t].h.series, timing) - t0;
      if (t > 0 && !(info->frame_times_s[t] > info->frame_times_s[t - 1]))
        return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                          "lumen_dicom_series_read: '%s': %s (%s) does not increase with the frame order (%s) at "
                          "frame %lld",
                          m[t].path, tag_names[timing], timing == 2 ? "0018,1060" : timing == 3 ? "0008,0032" : "0008,0033",
                          tag_names[order], (long long)t);
    }
    info->frame_time_source = tag_names[timing];
  }
  return LUMEN_OK;
}

/* dcm2niix's affine: LPS voxel->world from the tags, rows flipped (y = 0 the last DICOM row), then RAS. */
static void series_affine(const member *m, int64_t nz, int64_t per, lumen_dicom_series_info *info) {
  const lumen_dicom_header *f = &m[0].h;
  const double *o = f->series.orientation, *p0 = f->series.position;
  double dc = f->info.spacing[0], dr = f->info.spacing[1];  /* column spacing (x), row spacing (y) */
  double nrm[3] = {o[1] * o[5] - o[2] * o[4], o[2] * o[3] - o[0] * o[5], o[0] * o[4] - o[1] * o[3]};
  double col_k[3], step;
  if (nz > 1) {
    const double *pl = m[(nz - 1) * per].h.series.position;
    for (int a = 0; a < 3; a++) col_k[a] = (pl[a] - p0[a]) / (double)(nz - 1);
    step = sqrt(col_k[0] * col_k[0] + col_k[1] * col_k[1] + col_k[2] * col_k[2]);
  } else {
    step = f->series.has_between && f->series.spacing_between > 0 ? f->series.spacing_between
           : f->series.has_thickness && f->series.slice_thickness > 0 ? f->series.slice_thickness
                                                                      : 1;
    for (int a = 0; a < 3; a++) col_k[a] = nrm[a] * step;
  }
  double *A = info->affine;
  memset(A, 0, 16 * sizeof(double));
  double rows = (double)f->info.rows;
  for (int a = 0; a < 3; a++) {
    double sign = a < 2 ? -1 : 1;  /* LPS -> RAS */
    A[4 * a + 0] = sign * o[a] * dc;
    A[4 * a + 1] = sign * -o[3 + a] * dr;  /* rows flipped */
    A[4 * a + 2] = sign * col_k[a];
    A[4 * a + 3] = sign * (p0[a] + (rows - 1) * o[3 + a] * dr);
  }
  A[15] = 1;
  info->spacing[0] = dc;
  info->spacing[1] = dr;
  info->spacing[2] = step;
}

/* The pixels of every member into the image, rows flipped. */
static lumen_status read_pixels(lumen_ctx *ctx, const member *m, int64_t n, int64_t nz, int64_t per, int64_t max_bytes,
                                float *dst) {
  int64_t nx = m[0].h.info.columns, ny = m[0].h.info.rows;
  lumen_dicom_read_opts o = {.max_bytes = max_bytes};
  for (int64_t i = 0; i < n; i++) {
    int64_t k = i / per, t = i % per;
    lumen_image *im = NULL;
    lumen_status s = lumen_dicom_read(ctx, m[i].path, &o, &im, NULL);
    if (s != LUMEN_OK) return s;
    if (lumen_image_dim(im, 0) != nx || lumen_image_dim(im, 1) != ny || lumen_image_ndim(im) != 2) {
      lumen_image_free(im);
      return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_series_read: '%s' changed while it was read", m[i].path);
    }
    const float *src = lumen_image_const_data(im);
    float *slice = dst + (t * nz + k) * nx * ny;
    for (int64_t y = 0; y < ny; y++) memcpy(slice + (ny - 1 - y) * nx, src + y * nx, sizeof(float) * (size_t)nx);
    lumen_image_free(im);
  }
  return LUMEN_OK;
}

lumen_status lumen_dicom_series_read(lumen_ctx *ctx, const char *const *paths, int n_paths,
                                     const lumen_dicom_series_opts *opts, lumen_image **out,
                                     lumen_dicom_series_info *info) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  LUMEN_REQUIRE_NOT_NULL(ctx, paths);
  if (n_paths < 1) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_dicom_series_read: no input given");
  lumen_dicom_series_info inf;
  memset(&inf, 0, sizeof inf);
  if (info) memset(info, 0, sizeof *info);
  int64_t max_bytes = lumen_io_resolve_max_bytes(opts ? opts->max_bytes : 0);
  const char *want = opts && opts->series_uid && opts->series_uid[0] ? opts->series_uid : NULL;
  file_list l = {0};
  member *m = NULL;
  int64_t n = 0, nz = 0, nt = 0;
  lumen_image *im = NULL;
  lumen_status s = list_inputs(ctx, paths, n_paths, &l);
  if (s == LUMEN_OK) {
    m = calloc((size_t)l.n, sizeof *m);
    if (!m) s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_series_read: out of memory");
  }
  for (int64_t i = 0; s == LUMEN_OK && i < l.n; i++) {
    s = lumen_dicom_read_series_header(ctx, l.names[i], max_bytes, &m[n].h);
    m[n].path = l.names[i];
    if (s == LUMEN_OK && (!want || strcmp(m[n].h.series.series_uid, want) == 0)) n++;
  }
  if (s == LUMEN_OK && !want) {
    for (int64_t i = 1; i < n && s == LUMEN_OK; i++)
      if (strcmp(m[i].h.series.series_uid, m[0].h.series.series_uid) != 0) s = refuse_several(ctx, paths[0], m, n);
  }
  if (s == LUMEN_OK && n == 0)
    s = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_dicom_series_read: '%s': no file of series %s", paths[0],
                   want);
  if (s == LUMEN_OK) s = check_geometry(ctx, m, n);
  if (s == LUMEN_OK) s = arrange(ctx, m, n, &nz, &nt, &inf);
  if (s == LUMEN_OK) {
    int64_t dims[4] = {m[0].h.info.columns, m[0].h.info.rows, nz, nt}, bytes = 0;
    if (lumen_mul_i64(dims[0] * dims[1], n, &bytes) || lumen_mul_i64(bytes, 4, &bytes) || bytes > max_bytes)
      s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY,
                     "lumen_dicom_series_read: '%s': %lld images of %lld x %lld need more than the memory limit "
                     "(%lld bytes)", paths[0], (long long)n, (long long)dims[0], (long long)dims[1], (long long)max_bytes);
    if (s == LUMEN_OK) s = lumen_image_create(ctx, nt > 1 ? 4 : 3, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im);
  }
  if (s == LUMEN_OK) s = read_pixels(ctx, m, n, nz, nt, max_bytes, lumen_image_data(im));
  if (s == LUMEN_OK) {
    series_affine(m, nz, nt, &inf);
    double sp[4] = {inf.spacing[0], inf.spacing[1], inf.spacing[2], 1};
    if (inf.frame_times_s && nt > 1) sp[3] = inf.frame_times_s[nt - 1] / (double)(nt - 1);
    s = lumen_image_set_affine(ctx, im, inf.affine);
    if (s == LUMEN_OK) s = lumen_image_set_spacing(ctx, im, sp, nt > 1 ? 4 : 3);
  }
  if (s == LUMEN_OK) {
    const lumen_dicom_series_tags *t = &m[0].h.series;
    snprintf(inf.series_uid, sizeof inf.series_uid, "%s", t->series_uid);
    snprintf(inf.series_description, sizeof inf.series_description, "%s", t->series_description);
    inf.files = n;
    inf.slices = nz;
    inf.frames = nt;
    inf.flip_angle_deg = t->has_flip ? t->flip_angle_deg : NAN;
    inf.repetition_time_s = t->has_tr ? t->repetition_time_ms / 1000.0 : NAN;
    /* one FlipAngle and one RepetitionTime for the series: a file that disagrees is refused, not averaged */
    for (int64_t i = 1; i < n && s == LUMEN_OK; i++) {
      const lumen_dicom_series_tags *u = &m[i].h.series;
      if (u->has_flip != t->has_flip || (t->has_flip && fabs(u->flip_angle_deg - t->flip_angle_deg) > 1e-6 * fabs(t->flip_angle_deg)))
        s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_series_read: '%s': FlipAngle (0018,1314) is %s%g deg, '%s' has "
                       "%s%g deg: one series has one flip angle", m[i].path, u->has_flip ? "" : "absent/", u->flip_angle_deg,
                       m[0].path, t->has_flip ? "" : "absent/", t->flip_angle_deg);
      else if (u->has_tr != t->has_tr ||
               (t->has_tr && fabs(u->repetition_time_ms - t->repetition_time_ms) > 1e-6 * fabs(t->repetition_time_ms)))
        s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_series_read: '%s': RepetitionTime (0018,0080) is %s%g ms, '%s' "
                       "has %s%g ms: one series has one TR", m[i].path, u->has_tr ? "" : "absent/", u->repetition_time_ms,
                       m[0].path, t->has_tr ? "" : "absent/", t->repetition_time_ms);
    }
  }
  if (s == LUMEN_OK) {
    lumen_log(ctx, LUMEN_LOG_INFO, "lumen_dicom_series_read: '%s': series %s \"%s\": %lld files, %lld x %lld x %lld x %lld%s%s",
              paths[0], inf.series_uid, inf.series_description, (long long)n, (long long)m[0].h.info.columns,
              (long long)m[0].h.info.rows, (long long)nz, (long long)nt, inf.frame_order ? ", frames by " : "",
              inf.frame_order ? inf.frame_order : "");
  }
  free(m);
  list_free(&l);
  if (s != LUMEN_OK) {
    lumen_image_free(im);
    free(inf.frame_times_s);
    return s;
  }
  *out = im;
  if (info) *info = inf;
  else free(inf.frame_times_s);
  return LUMEN_OK;
}
