/* The DICOM files under files and folders (folders searched recursively: lumen_dicom_collect, for
   every series read), and the series among them (lumen convert, docs/DICOM.md "Several series"),
   grouped by SeriesInstanceUID. Only headers are read (the same C pre-check as every DICOM read). */
#include <dirent.h>
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
    else if (!lumen_dicom_is_dicom_file(paths[i]))
      s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: '%s' is not a DICOM file (no \"DICM\" at byte 128)", who, paths[i]);
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
  return strcmp(x->series_uid, y->series_uid);
}

/* The entry of uid in e[0..*n), added when new. */
static lumen_dicom_series_entry *entry_of(lumen_dicom_series_entry **e, int64_t *n, int64_t *cap,
                                          const lumen_dicom_series_tags *t) {
  for (int64_t i = 0; i < *n; i++)
    if (!strcmp((*e)[i].series_uid, t->series_uid)) return &(*e)[i];
  if (*n == *cap) {
    int64_t c = *cap ? 2 * *cap : 8;
    lumen_dicom_series_entry *p = realloc(*e, sizeof *p * (size_t)c);
    if (!p) return NULL;
    *e = p, *cap = c;
  }
  lumen_dicom_series_entry *x = &(*e)[(*n)++];
  memset(x, 0, sizeof *x);
  snprintf(x->series_uid, sizeof x->series_uid, "%s", t->series_uid);
  snprintf(x->series_description, sizeof x->series_description, "%s", t->series_description);
  x->series_number = t->has_series_number ? (int64_t)t->series_number : -1;
  return x;
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
  int64_t n = 0, cap = 0;
  for (int64_t i = 0; s == LUMEN_OK && i < files.n; i++) {
    lumen_dicom_header h;
    lumen_status hs = lumen_dicom_read_series_header(ctx, files.v[i], max_bytes, &h);
    if (hs == LUMEN_ERR_FORMAT || hs == LUMEN_ERR_UNSUPPORTED) {  /* not an image lumen reads: said, skipped */
      lumen_log(ctx, LUMEN_LOG_WARNING, "skipped: %s", lumen_ctx_last_error(ctx));
      lumen_ctx_clear_error(ctx);
      lumen_dicom_header_free(&h);
      if (skipped) (*skipped)++;
      continue;
    }
    if (hs != LUMEN_OK) {
      s = hs;
      break;
    }
    lumen_dicom_series_entry *x = entry_of(&e, &n, &cap, &h.series);
    lumen_dicom_header_free(&h);
    if (!x || !entry_add(x, files.v[i])) s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_series_find: out of memory");
    else files.v[i] = NULL;  /* owned by the entry */
  }
  names_free(&files);
  if (s == LUMEN_OK && n == 0)
    s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_series_find: '%s': no DICOM image that lumen reads (every file "
                   "was skipped: see the warnings)", n_paths > 0 && paths[0] ? paths[0] : "");
  if (s != LUMEN_OK) {
    lumen_dicom_series_entries_free(e, n);
    return s;
  }
  qsort(e, (size_t)n, sizeof *e, cmp_entry);
  *out = e;
  *count = n;
  return LUMEN_OK;
}
