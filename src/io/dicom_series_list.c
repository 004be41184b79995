/* The DICOM files under files and folders (folders searched recursively: lumen_dicom_collect, for
   every series read), and the series among them (lumen convert, docs/DICOM.md "Several series"),
   grouped by SeriesInstanceUID. Only headers are read (the same C pre-check as every DICOM read). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "io/dicom_internal.h"

#define MAX_DEPTH 16
#define MAX_FILES 1000000

typedef struct names {
  char **v;
  int64_t n, cap;
} names;

static int names_add(names *l, const char *s) {
  if (l->n == l->cap) {
    int64_t cap = l->cap ? 2 * l->cap : 256;
    char **p = realloc(l->v, sizeof *p * (size_t)cap);
    if (!p) return 0;
    l->v = p, l->cap = cap;
  }
  return (l->v[l->n] = strdup(s)) ? (l->n++, 1) : 0;
}

static void names_free(names *l) {
  for (int64_t i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* DICOM files under dir (symbolic links to folders and hidden entries skipped). */
static lumen_status walk(lumen_ctx *ctx, const char *who, const char *dir, int depth, names *out) {
  if (depth > MAX_DEPTH) return LUMEN_OK;
  DIR *d = opendir(dir);
  if (!d) return lumen_fail(ctx, LUMEN_ERR_IO, "%s: '%s': cannot open the folder", who, dir);
  lumen_status s = LUMEN_OK;
  struct dirent *e;
  char buf[4096];
  while (s == LUMEN_OK && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (snprintf(buf, sizeof buf, "%s/%s", dir, e->d_name) >= (int)sizeof buf) continue;
    struct stat st;
    if (lstat(buf, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) s = walk(ctx, who, buf, depth + 1, out);
    else if (lumen_dicom_is_dicom_file(buf)) {
      if (out->n >= MAX_FILES)
        s = lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "%s: '%s': more than %d DICOM files", who, dir, MAX_FILES);
      else if (!names_add(out, buf)) s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
    }
  }
  closedir(d);
  return s;
}

void lumen_dicom_names_free(char **v, int64_t n) {
  names l = {v, n, n};
  names_free(&l);
}

lumen_status lumen_dicom_collect(lumen_ctx *ctx, const char *who, const char *const *paths, int n_paths, char ***out,
                                 int64_t *count) {
  names files = {0};
  lumen_status s = LUMEN_OK;
  *out = NULL;
  *count = 0;
  for (int i = 0; s == LUMEN_OK && i < n_paths; i++) {
    struct stat st;
    if (!paths[i] || stat(paths[i], &st) != 0)
      s = lumen_fail(ctx, LUMEN_ERR_IO, "%s: '%s': not found", who, paths[i] ? paths[i] : "");
    else if (S_ISDIR(st.st_mode)) s = walk(ctx, who, paths[i], 0, &files);
    else if (!lumen_dicom_is_dicom_file(paths[i]) && !lumen_dicom_is_bare_file(paths[i]))  /* named: bare too */
      s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: '%s' is not a DICOM file (no \"DICM\" at byte 128, nor a data set "
                     "from byte 0)", who, paths[i]);
    else if (!names_add(&files, paths[i])) s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", who);
  }
  if (s == LUMEN_OK && files.n == 0)
    s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: '%s': a folder without a DICOM file (none with \"DICM\" at byte 128%s)",
                   who, n_paths > 0 && paths[0] ? paths[0] : "", n_paths > 1 ? ", nor in the other inputs" : "");
  if (s != LUMEN_OK) {
    names_free(&files);
    return s;
  }
  qsort(files.v, (size_t)files.n, sizeof *files.v, cmp_name);
  *out = files.v;
  *count = files.n;
  return LUMEN_OK;
}

void lumen_dicom_series_entries_free(lumen_dicom_series_entry *e, int64_t count) {
  for (int64_t i = 0; e && i < count; i++) {
    for (int64_t k = 0; k < e[i].files; k++) free(e[i].paths[k]);
    free(e[i].paths);
  }
  free(e);
}

static int cmp_entry(const void *a, const void *b) {
  const lumen_dicom_series_entry *x = a, *y = b;
  if (x->series_number != y->series_number) return x->series_number < y->series_number ? -1 : 1;
  int c = strcmp(x->series_uid, y->series_uid);
  if (c) return c;
  if (x->echo_number != y->echo_number) return x->echo_number < y->echo_number ? -1 : 1;
  return strcmp(x->suffix, y->suffix);
}

/* What tells the parts of one series apart (dcm2niix writes one file each). */
typedef struct part_key {
  int64_t echo, rows, columns;
  int64_t first_instance;     /* the smallest InstanceNumber of the part (-1: none), its name */
  int kind;                   /* lumen_dicom_image_kind */
  int has_orientation;
  double orientation[6];
} part_key;

static part_key key_of(const lumen_dicom_header *h) {
  part_key k;
  memset(&k, 0, sizeof k);
  k.echo = h->series.has_echo_number ? (int64_t)h->series.echo_number : 0;
  k.rows = h->info.rows, k.columns = h->info.columns;
  k.first_instance = h->series.has_instance && h->series.instance_number >= 0 ? (int64_t)h->series.instance_number : -1;
  k.kind = lumen_dicom_image_kind(h->series.image_type);
  k.has_orientation = h->series.has_orientation && !h->enhanced;
  if (k.has_orientation) memcpy(k.orientation, h->series.orientation, sizeof k.orientation);
  return k;
}

static int same_geometry(const part_key *a, const part_key *b) {
  if (a->rows != b->rows || a->columns != b->columns || a->has_orientation != b->has_orientation) return 0;
  for (int i = 0; i < 6 && a->has_orientation; i++)
    if (fabs(a->orientation[i] - b->orientation[i]) > 1e-4) return 0;
  return 1;
}

/* The entry of the series and part of header h in e[0..*n) (keys: their parts), added when new. */
static lumen_dicom_series_entry *entry_of(lumen_dicom_series_entry **e, part_key **keys, int64_t *n, int64_t *cap,
                                          const lumen_dicom_header *h) {
  const lumen_dicom_series_tags *t = &h->series;
  part_key k = key_of(h);
  for (int64_t i = 0; i < *n; i++)
    if (!strcmp((*e)[i].series_uid, t->series_uid) && (*keys)[i].echo == k.echo && (*keys)[i].kind == k.kind &&
        same_geometry(&(*keys)[i], &k)) {
      part_key *f = &(*keys)[i];
      if (k.first_instance >= 0 && (f->first_instance < 0 || k.first_instance < f->first_instance))
        f->first_instance = k.first_instance;
      return &(*e)[i];
    }
  if (*n == *cap) {
    int64_t c = *cap ? 2 * *cap : 8;
    lumen_dicom_series_entry *p = realloc(*e, sizeof *p * (size_t)c);
    if (!p) return NULL;
    *e = p;
    part_key *q = realloc(*keys, sizeof *q * (size_t)c);
    if (!q) return NULL;
    *keys = q, *cap = c;
  }
  (*keys)[*n] = k;
  lumen_dicom_series_entry *x = &(*e)[(*n)++];
  memset(x, 0, sizeof *x);
  snprintf(x->series_uid, sizeof x->series_uid, "%s", t->series_uid);
  snprintf(x->series_description, sizeof x->series_description, "%s", t->series_description);
  x->series_number = t->has_series_number ? (int64_t)t->series_number : -1;
  x->echo_number = k.echo;
  return x;
}

/* The suffixes of the parts of each series, as dcm2niix names them: "_e1", "_e2"... for each echo
   when the series has several, "_ph", "_real", "_imaginary" for those images, "_i00001"... (the
   part's first InstanceNumber, else its place) for each orientation or size of one echo and kind
   when there are several (a localizer). */
static void name_parts(lumen_dicom_series_entry *e, const part_key *keys, int64_t n) {
  static const char *const kinds[] = {"", "_ph", "_real", "_imaginary"};
  for (int64_t i = 0; i < n; i++) {
    int several_echoes = 0, geometries = 1, place = 1;
    for (int64_t j = 0; j < n; j++) {
      if (j == i || strcmp(e[i].series_uid, e[j].series_uid)) continue;
      several_echoes |= keys[j].echo != keys[i].echo;
      if (keys[j].echo == keys[i].echo && keys[j].kind == keys[i].kind) geometries++, place += j < i;
    }
    char *sfx = e[i].suffix;
    size_t size = sizeof e[i].suffix;
    int len = 0;
    if (several_echoes && keys[i].echo > 0) len += snprintf(sfx + len, size - (size_t)len, "_e%lld", (long long)keys[i].echo);
    len += snprintf(sfx + len, size - (size_t)len, "%s", kinds[keys[i].kind]);
    if (geometries > 1)
      snprintf(sfx + len, size - (size_t)len, "_i%05lld",
               (long long)(keys[i].first_instance >= 0 ? keys[i].first_instance : place));
  }
}

static int entry_add(lumen_dicom_series_entry *x, char *path) {
  if ((x->files & (x->files - 1)) == 0) {  /* grow at powers of two */
    char **p = realloc(x->paths, sizeof *p * (size_t)(x->files ? 2 * x->files : 1));
    if (!p) return 0;
    x->paths = p;
  }
  x->paths[x->files++] = path;
  return 1;
}

lumen_status lumen_dicom_series_find(lumen_ctx *ctx, const char *const *paths, int n_paths, int64_t max_bytes,
                                     lumen_dicom_series_entry **out, int64_t *count, int64_t *skipped) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  LUMEN_REQUIRE_NOT_NULL(ctx, count);
  *out = NULL;
  *count = 0;
  if (skipped) *skipped = 0;
  LUMEN_REQUIRE_NOT_NULL(ctx, paths);
  names files = {0};
  lumen_status s = lumen_dicom_collect(ctx, "lumen_dicom_series_find", paths, n_paths, &files.v, &files.n);
  lumen_dicom_series_entry *e = NULL;
  part_key *keys = NULL;
  int64_t n = 0, cap = 0;
  /* the headers are read through a context without a log: a file that is skipped is one warning on
     ctx, not an error line and then a warning */
  lumen_ctx *quiet = NULL;
  if (s == LUMEN_OK && lumen_ctx_create(&quiet) != LUMEN_OK)
    s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_series_find: out of memory");
  for (int64_t i = 0; s == LUMEN_OK && i < files.n; i++) {
    lumen_dicom_header h;
    lumen_status hs = lumen_dicom_read_series_header(quiet, files.v[i], max_bytes, &h);
    if (hs == LUMEN_ERR_FORMAT || hs == LUMEN_ERR_UNSUPPORTED) {  /* not an image lumen reads: said, skipped */
      lumen_log(ctx, LUMEN_LOG_WARNING, "skipped: %s", lumen_ctx_last_error(quiet));
      lumen_ctx_clear_error(quiet);
      lumen_dicom_header_free(&h);
      if (skipped) (*skipped)++;
      continue;
    }
    if (hs != LUMEN_OK) {
      s = lumen_fail(ctx, hs, "%s", lumen_ctx_last_error(quiet));
      break;
    }
    lumen_dicom_series_entry *x = entry_of(&e, &keys, &n, &cap, &h);
    lumen_dicom_header_free(&h);
    if (!x || !entry_add(x, files.v[i])) s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_series_find: out of memory");
    else files.v[i] = NULL;  /* owned by the entry */
  }
  lumen_ctx_destroy(quiet);
  names_free(&files);
  if (s == LUMEN_OK && n == 0)
    s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_series_find: '%s': no DICOM image that lumen reads (every file "
                   "was skipped: see the warnings)", n_paths > 0 && paths[0] ? paths[0] : "");
  if (s != LUMEN_OK) {
    free(keys);
    lumen_dicom_series_entries_free(e, n);
    return s;
  }
  name_parts(e, keys, n);
  free(keys);
  keys = NULL;
  qsort(e, (size_t)n, sizeof *e, cmp_entry);
  *out = e;
  *count = n;
  return LUMEN_OK;
}
