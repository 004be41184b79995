/* A DICOM series (one single-frame file per slice and time point, or enhanced multi-frame files
   whose frames are slices x time points) as one 3-D/4-D float image with dcm2niix's layout and
   affine (include/lumen/io.h, docs/DICOM.md "Series"). The headers come from the C pre-check
   (dicom_parse.c + dicom_series_tags.c + dicom_frames.c); an enhanced file becomes one member
   per frame; the pixels come from lumen_dicom_read, once per file. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "io/dicom_series_internal.h"

#define ORIENT_TOL 1e-4   /* direction cosines */
#define SPACING_TOL 1e-4  /* relative, pixel spacing */

void lumen_dicom_series_info_clear(lumen_dicom_series_info *info) {
  if (!info) return;
  free(info->frame_times_s);
  memset(info, 0, sizeof *info);
}

/* 1 when dir or a folder under it (depth levels down) holds a DICOM file. */
static int holds_dicom(const char *dir, int depth) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int found = 0;
  struct dirent *e;
  char buf[4096];
  while (!found && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (snprintf(buf, sizeof buf, "%s/%s", dir, e->d_name) >= (int)sizeof buf) continue;
    struct stat st;
    if (lstat(buf, &st) != 0) continue;
    found = S_ISDIR(st.st_mode) ? depth > 0 && holds_dicom(buf, depth - 1) : lumen_dicom_is_dicom_file(buf);
  }
  closedir(d);
  return found;
}

int lumen_dicom_is_series_input(const char *path) {
  struct stat st;
  if (!path || stat(path, &st) != 0) return 0;
  if (!S_ISDIR(st.st_mode)) return lumen_dicom_is_dicom_file(path) || lumen_dicom_is_bare_file(path);  /* named */
  return holds_dicom(path, 4);
}

/* The input files (lumen_dicom_collect: folders searched recursively), owned. */
typedef struct file_list {
  char **names;
  int64_t n;
} file_list;

static void list_free(file_list *l) {
  lumen_dicom_names_free(l->names, l->n);
  memset(l, 0, sizeof *l);
}

static void members_free(member *m, int64_t n) {
  for (int64_t i = 0; m && i < n; i++) free(m[i].label);
  free(m);
}

/* Several series: refuse, listing each (UID, description, file count). */
static lumen_status refuse_several(lumen_ctx *ctx, const char *where, const lumen_dicom_header *m, int64_t n) {
  char msg[2048];
  int len = snprintf(msg, sizeof msg, "lumen_dicom_series_read: '%s' holds several series; choose one by its "
                                      "SeriesInstanceUID or SeriesNumber (--series UID|NUMBER):", where);
  for (int64_t i = 0; i < n && len < (int)sizeof msg; i++) {
    int seen = 0;
    for (int64_t k = 0; k < i && !seen; k++) seen = strcmp(m[k].series.series_uid, m[i].series.series_uid) == 0;
    if (seen) continue;
    int64_t count = 0;
    for (int64_t k = i; k < n; k++) count += strcmp(m[k].series.series_uid, m[i].series.series_uid) == 0;
    char number[24] = "-";
    if (m[i].series.has_series_number) snprintf(number, sizeof number, "%.0f", m[i].series.series_number);
    len += snprintf(msg + len, sizeof msg - (size_t)len, "\n  %s  %s  \"%s\"  %lld files", number,
                    m[i].series.series_uid[0] ? m[i].series.series_uid : "(no SeriesInstanceUID)",
                    m[i].series.series_description, (long long)count);
  }
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s", msg);
}

static lumen_status geometry_error(lumen_ctx *ctx, const char *path, const char *field, const char *detail) {
  return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_series_read: '%s': inconsistent geometry: %s %s", path, field,
                    detail);
}

/* One file without ImageOrientationPatient or ImagePositionPatient (a secondary capture, NM, an
   old CR; pydicom's JPEG2000.dcm): where it lies in the patient is unknown. As dcm2niix does, it
   is converted anyway: frames as slices SpacingBetweenSlices (else SliceThickness, else 1) apart,
   rows bottom-up as always, spacing from PixelSpacing (else ImagerPixelSpacing, else 1); the
   orientation is taken as the identity and the caller told (*unknown: the affine is the spacing
   only, lumen convert writes NIfTI qform/sform code 0 as dcm2niix does). A warning says so. */
static void unknown_geometry(lumen_ctx *ctx, member *m, int64_t n, int *unknown) {
  const lumen_dicom_series_tags *t = &m[0].h.series;
  *unknown = 0;
  if (m[n - 1].file_index != 0 || m[0].enhanced || m[0].mosaic || (t->has_orientation && t->has_position)) return;
  double step = t->has_between && t->spacing_between > 0 ? t->spacing_between
                : t->has_thickness && t->slice_thickness > 0 ? t->slice_thickness : 1;
  if (t->grid_frames > 1) step = t->grid_step;  /* an RT Dose without a position: its grid still spaces the frames */
  const char *missing = !t->has_orientation && !t->has_position
                            ? "ImageOrientationPatient (0020,0037) nor ImagePositionPatient (0020,0032)"
                        : !t->has_orientation ? "ImageOrientationPatient (0020,0037)" : "ImagePositionPatient (0020,0032)";
  for (int64_t i = 0; i < n; i++) {  /* (t is m[0]'s: set here too) */
    lumen_dicom_series_tags *u = &m[i].h.series;
    static const double identity[6] = {1, 0, 0, 0, 1, 0};
    memcpy(u->orientation, identity, sizeof identity);
    u->position[0] = u->position[1] = 0;
    u->position[2] = (double)m[i].frame * step;
    u->has_orientation = u->has_position = 1;
  }
  *unknown = 1;
  lumen_log(ctx, LUMEN_LOG_WARNING,
            "lumen_dicom_series_read: '%s': no %s: where the image lies in the patient is unknown; read with rows "
            "bottom-up (dcm2niix's layout), %lld frame(s) as slices %g mm apart, spacing %g x %g mm (%s), and no "
            "orientation (lumen convert writes NIfTI qform/sform code 0, as dcm2niix does)", m[0].file, missing,
            (long long)n, step, m[0].h.info.spacing[0], m[0].h.info.spacing[1],
            m[0].h.info.spacing_source ? m[0].h.info.spacing_source : "no PixelSpacing: 1 assumed");
}

/* Every file against the first: size, orientation, spacing present and equal. */
static lumen_status check_geometry(lumen_ctx *ctx, member *m, int64_t n, int unknown) {
  const member_header *f = &m[0].h;
  for (int64_t i = 0; i < n; i++) {
    const member_header *h = &m[i].h;
    char d[192];
    if (!h->series.has_orientation)
      return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                        "lumen_dicom_series_read: '%s': ImageOrientationPatient (0020,0037) missing, expected in every "
                        "file of a series", m[i].path);
    if (!h->series.has_position)
      return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                        "lumen_dicom_series_read: '%s': ImagePositionPatient (0020,0032) missing, expected in every "
                        "file of a series", m[i].path);
    if (!unknown && (!h->info.spacing_source || strcmp(h->info.spacing_source, "PixelSpacing") != 0))
      return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                        "lumen_dicom_series_read: '%s': PixelSpacing (0028,0030) missing, expected in every file of a "
                        "series", m[i].path);
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

/* A mosaic's slices follow one another along the CSA header's SliceNormalVector when it has one
   (else along the orientation's cross product nrm), SpacingBetweenSlices (else SliceThickness)
   apart. col_k: the step between lumen's slices, always ascending along nrm. */
static double mosaic_step(const member *x, const double nrm[3], double col_k[3]) {
  const lumen_dicom_series_tags *t = &x->h.series;
  double step = t->has_between && t->spacing_between > 0 ? t->spacing_between
                : t->has_thickness && t->slice_thickness > 0 ? t->slice_thickness : 1;
  for (int a = 0; a < 3; a++) col_k[a] = nrm[a] * step;
  return step;
}

/* 1 when the mosaic's tiles descend along the orientation's cross product. */
static int mosaic_reversed(const member *x) {
  const lumen_dicom_series_tags *t = &x->h.series;
  const double *o = t->orientation;
  double nrm[3] = {o[1] * o[5] - o[2] * o[4], o[2] * o[3] - o[0] * o[5], o[0] * o[4] - o[1] * o[3]};
  return t->has_csa_normal && nrm[0] * t->csa_normal[0] + nrm[1] * t->csa_normal[1] + nrm[2] * t->csa_normal[2] < 0;
}

/* The position of lumen's first slice of a mosaic: tile 1 (ImagePositionPatient, corrected to the
   tile's corner in expand), or the last tile when the tiles descend. */
static void mosaic_first(const member *x, const double col_k[3], double p0[3]) {
  double last = mosaic_reversed(x) ? (double)(x->mosaic - 1) : 0;
  for (int a = 0; a < 3; a++) p0[a] = x->h.series.position[a] - last * col_k[a];
}

/* dcm2niix's affine: LPS voxel->world from the tags, rows flipped (y = 0 the last DICOM row), then RAS. */
static void series_affine(const member *m, int64_t nz, int64_t per, lumen_dicom_series_info *info) {
  const member_header *f = &m[0].h;
  const double *o = f->series.orientation, *p0 = f->series.position;
  double dc = f->info.spacing[0], dr = f->info.spacing[1];  /* column spacing (x), row spacing (y) */
  double nrm[3] = {o[1] * o[5] - o[2] * o[4], o[2] * o[3] - o[0] * o[5], o[0] * o[4] - o[1] * o[3]};
  double col_k[3], step, p0m[3];
  if (m[0].mosaic) {  /* one file per volume: the tiles' step along the normal, the first slice */
    step = mosaic_step(&m[0], nrm, col_k);
    mosaic_first(&m[0], col_k, p0m);
    p0 = p0m;
  } else if (nz > 1) {
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

/* A Siemens mosaic (ImageType MOSAIC and NumberOfImagesInMosaic): one file holds a volume's
   slices as tiles of a square grid, ceil(sqrt(N)) a side; the member takes a tile's size, and its
   ImagePositionPatient (given for the whole mosaic as if it were one slice) moves to the first
   tile's corner, as dcm2niix does. */
static lumen_status mosaic_member(lumen_ctx *ctx, member *x) {
  lumen_dicom_series_tags *t = &x->h.series;
  lumen_dicom_info *in = &x->h.info;
  if (t->mosaic_images <= 1 || !t->image_type_mosaic) return LUMEN_OK;
  int64_t side = 1;
  while (side * side < t->mosaic_images) side++;
  if (in->rows % side || in->columns % side || !t->has_orientation || !t->has_position)
    return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                      "lumen_dicom_series_read: '%s': a mosaic of %d images (NumberOfImagesInMosaic, 0019,100A) "
                      "needs Rows and Columns divisible by %lld, ImagePositionPatient and ImageOrientationPatient; "
                      "it has %lld x %lld", x->path, t->mosaic_images, (long long)side, (long long)in->rows,
                      (long long)in->columns);
  x->mosaic = t->mosaic_images;
  x->mosaic_rows = in->rows;
  x->mosaic_columns = in->columns;
  in->rows /= side;
  in->columns /= side;
  double fx = (double)(x->mosaic_columns - in->columns) / 2, fy = (double)(x->mosaic_rows - in->rows) / 2;
  for (int a = 0; a < 3; a++)
    t->position[a] += in->spacing[0] * t->orientation[a] * fx + in->spacing[1] * t->orientation[3 + a] * fy;
  return LUMEN_OK;
}

/* A multi-frame file without functional groups: its frames are slices when GridFrameOffsetVector
   places them (RT Dose), or when the file is the whole input and has no orientation (the geometry
   is unknown anyway: frames stacked as lumen_dicom_read stacks them); else refused. */
static lumen_status plain_multiframe(lumen_ctx *ctx, const lumen_dicom_header *h, const char *path, int64_t nf) {
  const lumen_dicom_series_tags *t = &h->series;
  if (h->info.frames == 1 || h->enhanced) return LUMEN_OK;
  if (t->grid_frames && (t->grid_frames != h->info.frames || t->grid_uneven || t->grid_step == 0))
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED,
                      "lumen_dicom_series_read: '%s': GridFrameOffsetVector (3004,000C) has %lld values%s for "
                      "NumberOfFrames %lld, expected one per frame, evenly spaced and distinct", path,
                      (long long)t->grid_frames, t->grid_uneven ? " unevenly spaced" : "", (long long)h->info.frames);
  if (t->grid_frames && t->has_position && t->has_orientation) return LUMEN_OK;
  if (nf == 1 && !t->has_orientation) return LUMEN_OK;
  return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED,
                    "lumen_dicom_series_read: '%s': NumberOfFrames is %lld and there is no "
                    "PerFrameFunctionalGroupsSequence (5200,9230) nor GridFrameOffsetVector (3004,000C): a multi-frame "
                    "file without functional groups (e.g. a secondary capture) has no position or time per frame, "
                    "expected single-frame images or an enhanced multi-frame file", path, (long long)h->info.frames);
}

/* Members from the files' headers: a single-frame file is one, an enhanced file one per frame
   (its own position, orientation, timing: per-frame groups, else shared, else top level), a
   multi-frame file without functional groups one per frame where plain_multiframe allows it (an
   RT Dose's frames at ImagePositionPatient + (offset_k - offset_0) x normal). */
static lumen_status expand(lumen_ctx *ctx, const lumen_dicom_header *fh, char *const *fpath, int64_t nf,
                           int64_t max_bytes, member **out, int64_t *nout) {
  int64_t total = 0, bytes = 0;
  *out = NULL;
  *nout = 0;
  for (int64_t f = 0; f < nf; f++) {
    lumen_status s = plain_multiframe(ctx, &fh[f], fpath[f], nf);
    if (s != LUMEN_OK) return s;
    total += fh[f].enhanced ? fh[f].n_frames : fh[f].info.frames;
  }
  if (lumen_mul_i64(total, (int64_t)sizeof(member), &bytes) || bytes > max_bytes)
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY,
                      "lumen_dicom_series_read: '%s': %lld frames need more than the memory limit (%lld bytes)", fpath[0],
                      (long long)total, (long long)max_bytes);
  member *m = calloc((size_t)total, sizeof *m);
  if (!m) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_series_read: out of memory");
  int64_t n = 0;
  for (int64_t f = 0; f < nf; f++) {
    int64_t frames = fh[f].enhanced ? fh[f].n_frames : fh[f].info.frames;
    for (int64_t k = 0; k < frames; k++, n++) {
      member *x = &m[n];
      x->path = x->file = fpath[f];
      x->file_index = f;
      x->frame = k;
      x->file_frames = fh[f].info.frames;
      x->enhanced = fh[f].enhanced ? 1 + fh[f].legacy_timing : 0;
      x->h.modality_table = fh[f].mlut_entries > 0;
      if (!x->enhanced && frames == 1) {
        x->h.info = fh[f].info;
        x->h.series = fh[f].series;
        lumen_status s = mosaic_member(ctx, x);
        if (s != LUMEN_OK) {
          members_free(m, n + 1);
          return s;
        }
        continue;
      }
      if (x->enhanced) {
        lumen_dicom_frame_view(&fh[f], k, &x->h.info, &x->h.series);
      } else {  /* a plain multi-frame file: frame k of a grid (RT Dose), or of a stack without geometry */
        x->h.info = fh[f].info;
        x->h.series = fh[f].series;
        lumen_dicom_series_tags *t = &x->h.series;
        if (t->grid_frames) {
          const double *o = t->orientation;
          double nrm[3] = {o[1] * o[5] - o[2] * o[4], o[2] * o[3] - o[0] * o[5], o[0] * o[4] - o[1] * o[3]};
          for (int a = 0; a < 3; a++) t->position[a] += nrm[a] * (double)k * t->grid_step;
        }
      }
      size_t len = strlen(fpath[f]) + 32;
      x->label = malloc(len);
      if (!x->label) {
        members_free(m, n);
        return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_series_read: out of memory");
      }
      snprintf(x->label, len, "%s frame %lld", fpath[f], (long long)k + 1);
      x->path = x->label;
    }
  }
  *out = m;
  *nout = n;
  return LUMEN_OK;
}

/* The tiles of a mosaic into the volume vol (its slices in lumen's order, rows flipped). */
static void mosaic_tiles(const member *x, const float *src, float *vol) {
  int64_t nx = x->h.info.columns, ny = x->h.info.rows, side = x->mosaic_columns / nx;
  int rev = mosaic_reversed(x);
  for (int64_t j = 0; j < x->mosaic; j++) {
    int64_t z = rev ? x->mosaic - 1 - j : j;
    const float *tile = src + (j / side) * ny * x->mosaic_columns + (j % side) * nx;
    float *slice = vol + z * nx * ny;
    for (int64_t y = 0; y < ny; y++)
      memcpy(slice + (ny - 1 - y) * nx, tile + y * x->mosaic_columns, sizeof(float) * (size_t)nx);
  }
}

/* Where a member goes (its index after arrange: slice i / per, frame i % per), listed by file and
   frame so that each file is read once. */
typedef struct placed {
  int64_t file_index, frame, index;
} placed;

static int cmp_placed(const void *a, const void *b) {
  const placed *x = a, *y = b;
  if (x->file_index != y->file_index) return x->file_index < y->file_index ? -1 : 1;
  return x->frame < y->frame ? -1 : x->frame > y->frame;
}

/* The pixels of every member into the image, rows flipped; each file read once (lumen_dicom_read,
   which applies an enhanced file's per-frame modality LUT). */
static lumen_status read_pixels(lumen_ctx *ctx, const member *m, int64_t n, int64_t nz, int64_t per, int64_t max_bytes,
                                float *dst) {
  int64_t nx = m[0].h.info.columns, ny = m[0].h.info.rows;
  lumen_dicom_read_opts o = {.max_bytes = max_bytes};
  placed *p = malloc(sizeof *p * (size_t)n);
  if (!p) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_series_read: out of memory");
  for (int64_t i = 0; i < n; i++) p[i] = (placed){m[i].file_index, m[i].frame, i};
  qsort(p, (size_t)n, sizeof *p, cmp_placed);
  lumen_image *im = NULL;
  lumen_status s = LUMEN_OK;
  for (int64_t j = 0, file = -1; j < n && s == LUMEN_OK; j++) {
    const member *x = &m[p[j].index];
    if (x->file_index != file) {
      lumen_image_free(im);
      im = NULL;
      file = x->file_index;
      s = lumen_dicom_read_series_member(ctx, x->file, &o, &im);
      int64_t sx = x->mosaic ? x->mosaic_columns : nx, sy = x->mosaic ? x->mosaic_rows : ny;
      if (s == LUMEN_OK && (lumen_image_dim(im, 0) != sx || lumen_image_dim(im, 1) != sy ||
                            lumen_image_count(im) != sx * sy * x->file_frames))
        s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_series_read: '%s' changed while it was read", x->file);
      if (s != LUMEN_OK) break;
    }
    int64_t k = p[j].index / per, t = p[j].index % per;
    const float *src = (const float *)lumen_image_const_data(im) + x->frame * nx * ny;
    if (x->mosaic) {
      mosaic_tiles(x, src, dst + t * nz * nx * ny);
      continue;
    }
    float *slice = dst + (t * nz + k) * nx * ny;
    for (int64_t y = 0; y < ny; y++) memcpy(slice + (ny - 1 - y) * nx, src + y * nx, sizeof(float) * (size_t)nx);
  }
  lumen_image_free(im);
  free(p);
  return s;
}

/* want names this file's series: its SeriesInstanceUID, or its SeriesNumber (want all digits). */
static int series_matches(const lumen_dicom_series_tags *t, const char *want) {
  if (!strcmp(t->series_uid, want)) return 1;
  if (!want[0] || strspn(want, "0123456789") != strlen(want) || strlen(want) > 12) return 0;
  return t->has_series_number && t->series_number == (double)atoll(want);
}

/* Every file's header (those of series want, or all); *fh owned (lumen_dicom_header_free each),
   fpath[i] the file of fh[i]. Several series without want are refused. */
static lumen_status read_headers(lumen_ctx *ctx, const char *where, const file_list *l, const char *want,
                                 int64_t max_bytes, lumen_dicom_header **fh, char **fpath, int64_t *nf,
                                 int64_t *lossy) {
  int64_t n = 0;
  *lossy = 0;
  *fh = calloc((size_t)l->n, sizeof **fh);
  if (!*fh) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_series_read: out of memory");
  lumen_status s = LUMEN_OK;
  for (int64_t i = 0; s == LUMEN_OK && i < l->n; i++) {
    lumen_dicom_header *h = &(*fh)[n];
    s = lumen_dicom_read_series_header(ctx, l->names[i], max_bytes, h);
    if (s == LUMEN_OK && (!want || series_matches(&h->series, want))) *lossy += h->lossy, fpath[n++] = l->names[i];
    else lumen_dicom_header_free(h);
  }
  *nf = n;
  if (s == LUMEN_OK && !want) {
    for (int64_t i = 1; i < n && s == LUMEN_OK; i++)
      if (strcmp((*fh)[i].series.series_uid, (*fh)[0].series.series_uid) != 0) s = refuse_several(ctx, where, *fh, n);
  }
  if (s == LUMEN_OK && n == 0)
    s = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen_dicom_series_read: '%s': no file of series %s", where, want);
  return s;
}

/* One FlipAngle and one RepetitionTime for the series: a member that disagrees is refused, not
   averaged. One echo and one kind of image (magnitude, phase...): a series of several is split by
   lumen convert (lumen_dicom_series_find's parts), never stacked as frames. */
static lumen_status check_constants(lumen_ctx *ctx, const member *m, int64_t n) {
  const lumen_dicom_series_tags *t = &m[0].h.series;
  static const char *const kinds[] = {"magnitude", "phase", "real", "imaginary"};
  int kind0 = lumen_dicom_image_kind(t->image_type);
  for (int64_t i = 1; i < n; i++) {
    const lumen_dicom_series_tags *u = &m[i].h.series;
    if (u->has_echo_number != t->has_echo_number || (t->has_echo_number && u->echo_number != t->echo_number))
      return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_series_read: '%s': EchoNumbers (0018,0086) is %s%g, '%s' has "
                        "%s%g: the series holds several echoes; 'lumen convert' writes one image per echo (_e2, ...), or "
                        "give the files of one echo", m[i].path, u->has_echo_number ? "" : "absent/", u->echo_number,
                        m[0].path, t->has_echo_number ? "" : "absent/", t->echo_number);
    int kind = lumen_dicom_image_kind(u->image_type);
    if (kind != kind0)
      return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_series_read: '%s': ImageType (0008,0008) '%s' is a %s "
                        "image, '%s' a %s one: 'lumen convert' writes one image per kind (_ph, ...), or give the files "
                        "of one kind", m[i].path, u->image_type, kinds[kind], m[0].path, kinds[kind0]);
    if (u->has_flip != t->has_flip || (t->has_flip && fabs(u->flip_angle_deg - t->flip_angle_deg) > 1e-6 * fabs(t->flip_angle_deg)))
      return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_series_read: '%s': FlipAngle (0018,1314) is %s%g deg, '%s' has "
                        "%s%g deg: one series has one flip angle", m[i].path, u->has_flip ? "" : "absent/", u->flip_angle_deg,
                        m[0].path, t->has_flip ? "" : "absent/", t->flip_angle_deg);
    if (u->has_tr != t->has_tr ||
        (t->has_tr && fabs(u->repetition_time_ms - t->repetition_time_ms) > 1e-6 * fabs(t->repetition_time_ms)))
      return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_series_read: '%s': RepetitionTime (0018,0080) is %s%g ms, '%s' "
                        "has %s%g ms: one series has one TR", m[i].path, u->has_tr ? "" : "absent/", u->repetition_time_ms,
                        m[0].path, t->has_tr ? "" : "absent/", t->repetition_time_ms);
  }
  return LUMEN_OK;
}

/* Mosaic files: every member a mosaic of as many slices, and all at one position (one file per
   volume); the volume's slices are the tiles. */
static lumen_status mosaic_volume(lumen_ctx *ctx, const member *m, int64_t n, int64_t *nz) {
  int any = 0;
  for (int64_t i = 0; i < n; i++) any |= m[i].mosaic != 0;
  if (!any) return LUMEN_OK;
  for (int64_t i = 0; i < n; i++)
    if (m[i].mosaic != m[0].mosaic || *nz != 1)
      return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                        "lumen_dicom_series_read: '%s': %s mosaic of %d images where '%s' has %d at %s: expected one "
                        "mosaic per volume, all of one size and position", m[i].path, m[i].mosaic ? "a" : "not a",
                        m[i].mosaic, m[0].path, m[0].mosaic, *nz != 1 ? "another position" : "the same position");
  *nz = m[0].mosaic;
  return LUMEN_OK;
}

/* Whether every value is a stored integer of at most 16 bits (lumen convert's stored type). */
static void stored_values(const member *m, int64_t n, lumen_dicom_series_info *inf) {
  int ints = 1, any_signed = 0, unsigned16 = 0, bits = 0;
  for (int64_t i = 0; i < n && ints; i++) {
    const lumen_dicom_info *in = &m[i].h.info;
    ints = in->rescale_slope == 1 && in->rescale_intercept == 0 && in->bits_stored <= 16 && !m[i].h.series.philips_scaled &&
           !m[i].h.modality_table;  /* a ModalityLUTSequence's values are the table's: looked at */
    any_signed |= in->pixel_representation == 1;
    unsigned16 |= in->pixel_representation == 0 && in->bits_stored == 16;
    bits = in->bits_stored > bits ? in->bits_stored : bits;
  }
  ints &= !(any_signed && unsigned16);  /* -32768..65535 fits neither int16 nor uint16 */
  inf->stored_integers = ints;
  inf->stored_signed = ints && any_signed;
  inf->stored_bits = bits;
}

/* The descriptive values of the first member (lumen convert's sidecar). */
static void describe(const member *x, lumen_dicom_series_info *inf) {
  const lumen_dicom_series_tags *t = &x->h.series;
  inf->mosaic = x->mosaic;
  inf->series_number = t->has_series_number ? (int64_t)t->series_number : -1;
  inf->echo_time_s = t->has_echo_time ? t->echo_time_ms / 1000.0 : NAN;
  inf->inversion_time_s = t->has_inversion_time ? t->inversion_time_ms / 1000.0 : NAN;
  inf->field_strength_t = t->has_field_strength ? t->field_strength_t : NAN;
  inf->slice_thickness_mm = t->has_thickness ? t->slice_thickness : NAN;
  inf->philips_float_scaling = t->philips_scaled;
  inf->volume_time_s = t->has_tr ? (t->repetition_time_ms / 1000.0 + (t->has_group_delay ? t->group_delay_s : 0)) : NAN;
  snprintf(inf->modality, sizeof inf->modality, "%s", x->h.info.modality);
  snprintf(inf->manufacturer, sizeof inf->manufacturer, "%s", t->manufacturer);
  snprintf(inf->model_name, sizeof inf->model_name, "%s", t->model_name);
  snprintf(inf->protocol_name, sizeof inf->protocol_name, "%s", t->protocol_name);
  snprintf(inf->image_type, sizeof inf->image_type, "%s", t->image_type);
  snprintf(inf->acquisition_time, sizeof inf->acquisition_time, "%s", t->acquisition_time_text);
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
  const int probe = opts && opts->headers_only; /* everything but the pixels: *out stays NULL */
  file_list l = {0};
  lumen_dicom_header *fh = NULL;
  char **fpath = NULL;
  member *m = NULL;
  int64_t nf = 0, n = 0, nz = 0, nt = 0;
  lumen_image *im = NULL;
  lumen_status s = lumen_dicom_collect(ctx, "lumen_dicom_series_read", paths, n_paths, &l.names, &l.n);
  if (s == LUMEN_OK) {
    fpath = calloc((size_t)l.n, sizeof *fpath);
    if (!fpath) s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_series_read: out of memory");
  }
  if (s == LUMEN_OK) s = read_headers(ctx, paths[0], &l, want, max_bytes, &fh, fpath, &nf, &inf.lossy_files);
  if (s == LUMEN_OK && inf.lossy_files > 0 && !probe)
    lumen_log(ctx, LUMEN_LOG_WARNING, "lumen_dicom_series_read: '%s': %lld of the %lld files of its series are lossy compressed "
              "(LossyImageCompression (0028,2110) 01, or a lossy JPEG transfer syntax): their values differ from the "
              "scanner's by the compression error, which maps fitted from them inherit", paths[0],
              (long long)inf.lossy_files, (long long)nf);
  if (s == LUMEN_OK) s = expand(ctx, fh, fpath, nf, max_bytes, &m, &n);
  for (int64_t i = 0; i < nf; i++) lumen_dicom_header_free(&fh[i]);  /* the members hold what they need */
  free(fh);
  int unknown = 0;
  if (s == LUMEN_OK) unknown_geometry(ctx, m, n, &unknown);
  if (s == LUMEN_OK) s = check_geometry(ctx, m, n, unknown);
  if (s == LUMEN_OK) s = lumen_dicom_series_arrange(ctx, m, n, &nz, &nt, &inf);
  if (s == LUMEN_OK) s = mosaic_volume(ctx, m, n, &nz);
  if (s == LUMEN_OK) {
    int64_t dims[4] = {m[0].h.info.columns, m[0].h.info.rows, nz, nt}, bytes = 0;
    if (lumen_mul_i64(dims[0] * dims[1], nz * nt, &bytes) || lumen_mul_i64(bytes, 4, &bytes) || bytes > max_bytes)
      s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY,
                     "lumen_dicom_series_read: '%s': %lld images of %lld x %lld need more than the memory limit "
                     "(%lld bytes)", paths[0], (long long)n, (long long)dims[0], (long long)dims[1], (long long)max_bytes);
    if (s == LUMEN_OK && !probe)
      s = lumen_image_create(ctx, nt > 1 ? 4 : 3, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), 0, &im);
  }
  if (s == LUMEN_OK) s = check_constants(ctx, m, n);
  if (s == LUMEN_OK && !probe) s = read_pixels(ctx, m, n, nz, nt, max_bytes, lumen_image_data(im));
  if (s == LUMEN_OK) series_affine(m, nz, nt, &inf);
  if (s == LUMEN_OK && unknown) {  /* no orientation: the spacing only (NIfTI's method 1) */
    memset(inf.affine, 0, sizeof inf.affine);
    for (int a = 0; a < 3; a++) inf.affine[5 * a] = inf.spacing[a];
    inf.affine[15] = 1;
    inf.geometry_unknown = 1;
  }
  if (s == LUMEN_OK) describe(&m[0], &inf);
  if (s == LUMEN_OK) stored_values(m, n, &inf);
  if (s == LUMEN_OK && !probe) {
    double sp[4] = {inf.spacing[0], inf.spacing[1], inf.spacing[2], 1};
    if (inf.frame_times_s && nt > 1) sp[3] = inf.frame_times_s[nt - 1] / (double)(nt - 1);
    else if (nt > 1 && isfinite(inf.volume_time_s) && inf.volume_time_s > 0)
      sp[3] = inf.volume_time_s;  /* dcm2niix's volume time */
    s = lumen_image_set_affine(ctx, im, inf.affine);
    if (s == LUMEN_OK) s = lumen_image_set_spacing(ctx, im, sp, nt > 1 ? 4 : 3);
  }
  if (s == LUMEN_OK) {
    const lumen_dicom_series_tags *t = &m[0].h.series;
    snprintf(inf.series_uid, sizeof inf.series_uid, "%s", t->series_uid);
    snprintf(inf.series_description, sizeof inf.series_description, "%s", t->series_description);
    inf.files = nf;
    inf.slices = nz;
    inf.frames = nt;
    inf.columns = m[0].h.info.columns;
    inf.rows = m[0].h.info.rows;
    inf.flip_angle_deg = t->has_flip ? t->flip_angle_deg : NAN;
    inf.repetition_time_s = t->has_tr ? t->repetition_time_ms / 1000.0 : NAN;
    lumen_log(ctx, LUMEN_LOG_INFO, "lumen_dicom_series_read: '%s': series %s \"%s\": %lld files (%lld images), %lld x "
              "%lld x %lld x %lld%s%s", paths[0], inf.series_uid, inf.series_description, (long long)nf, (long long)n,
              (long long)m[0].h.info.columns, (long long)m[0].h.info.rows, (long long)nz, (long long)nt,
              inf.timing_note[0] ? ", " : "", inf.timing_note);
  }
  members_free(m, n);
  free(fpath);
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
