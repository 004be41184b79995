/* Subjects of a batch: a list file or a BIDS dataset (src/scale/dist_internal.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "core/internal.h"
#include "io/io_internal.h"
#include "scale/dist_internal.h"

void lumen_dist_subjects_clear(lumen_dist_subjects *s) {
  if (!s) return;
  for (int i = 0; i < s->n; ++i)
    for (int a = 0; a < s->items[i].argc; ++a) free(s->items[i].argv[a]);
  free(s->items);
  s->items = NULL;
  s->n = 0;
}

static lumen_dist_subject *add_subject(lumen_dist_subjects *s, int *cap) {
  if (s->n == *cap) {
    int nc = *cap ? *cap * 2 : 16;
    lumen_dist_subject *p = realloc(s->items, sizeof *p * (size_t)nc);
    if (!p) return NULL;
    s->items = p;
    *cap = nc;
  }
  lumen_dist_subject *x = &s->items[s->n++];
  memset(x, 0, sizeof *x);
  return x;
}

static int add_arg(lumen_dist_subject *x, const char *a) {
  if (x->argc >= LUMEN_DIST_MAX_ARGS) return 0;
  x->argv[x->argc] = strdup(a);
  if (!x->argv[x->argc]) return 0;
  x->argc++;
  return 1;
}

/* A list item's ID in one spelling: "./s1", "s1/" and "s1//" are "s1" (they named one output and
   overwrote each other). 0 with *why when it cannot name a folder inside the derivatives folder:
   empty, absolute, a "." or ".." component, a control character. */
static int normalise_id(char *id, const char **why) {
  for (const unsigned char *c = (const unsigned char *)id; *c; c++)
    if (*c < 0x20 || *c == 0x7f) return *why = "holds a control character", 0;
  if (id[0] == '/') return *why = "is an absolute path", 0;
  char out[sizeof((lumen_dist_subject *)0)->id];
  size_t n = 0;
  for (const char *p = id; *p;) {
    size_t len = strcspn(p, "/");
    if (len == 1 && p[0] == '.') {  /* "./" */
    } else if (len == 2 && p[0] == '.' && p[1] == '.') {
      return *why = "has a '..' component (it would leave the derivatives folder)", 0;
    } else if (len > 0) {
      if (n + len + 2 > sizeof out) return *why = "is too long", 0;
      if (n) out[n++] = '/';
      memcpy(out + n, p, len);
      n += len;
    }
    p += len;
    while (*p == '/') p++;
  }
  if (n == 0) return *why = "is empty", 0;
  out[n] = 0;
  memcpy(id, out, n + 1);
  return 1;
}

lumen_status lumen_dist_list_read(lumen_ctx *ctx, const char *path, lumen_dist_subjects *out) {
  memset(out, 0, sizeof *out);
  FILE *f = NULL;
  lumen_status os = lumen_io_fopen_regular(ctx, "the list", path, &f);  /* a FIFO would block */
  if (os != LUMEN_OK) return os;
  char line[16384];
  int cap = 0, lineno = 0;
  lumen_status st = LUMEN_OK;
  while (st == LUMEN_OK && fgets(line, sizeof line, f)) {
    ++lineno;
    char *h = strchr(line, '#');
    if (h) *h = 0;
    char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
    if (!tok) continue;
    lumen_dist_subject *x = add_subject(out, &cap);
    if (!x) { st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory"); break; }
    snprintf(x->id, sizeof x->id, "%s", tok);
    const char *why = NULL;
    if (!normalise_id(x->id, &why))
      st = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s:%d: subject ID '%s' %s: an ID names a folder inside the derivatives "
                      "folder", path, lineno, tok, why);
    for (int i = 0; st == LUMEN_OK && i < out->n - 1; ++i)
      if (!strcmp(out->items[i].id, x->id))
        st = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s:%d: subject '%s' is listed twice (as '%s' before)", path, lineno, tok,
                        out->items[i].id);
    while (st == LUMEN_OK && (tok = strtok_r(NULL, " \t\r\n", &save)))
      if (!add_arg(x, tok)) st = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s:%d: more than %d arguments", path, lineno, LUMEN_DIST_MAX_ARGS);
  }
  fclose(f);
  if (st == LUMEN_OK && out->n == 0) st = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: no subjects", path);
  if (st != LUMEN_OK) lumen_dist_subjects_clear(out);
  return st;
}

/* ---- BIDS */

typedef struct names {
  int n, cap;
  char **v;
} names;

static int names_add(names *s, const char *x) {
  if (s->n == s->cap) {
    int nc = s->cap ? s->cap * 2 : 32;
    char **p = realloc(s->v, sizeof *p * (size_t)nc);
    if (!p) return 0;
    s->v = p; s->cap = nc;
  }
  if (!(s->v[s->n] = strdup(x))) return 0;
  s->n++;
  return 1;
}
static void names_free(names *s) {
  for (int i = 0; i < s->n; ++i) free(s->v[i]);
  free(s->v);
  memset(s, 0, sizeof *s);
}
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* entries of dir whose names start with prefix ("" = all), sorted; dirs_only / files_only */
static int list_dir(const char *dir, const char *prefix, int want_dir, names *out) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  char p[4200];
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (strncmp(e->d_name, prefix, strlen(prefix))) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (stat(p, &sb) != 0) continue;
    if (want_dir != !!S_ISDIR(sb.st_mode)) continue;
    if (!names_add(out, e->d_name)) { closedir(d); return 0; }
  }
  closedir(d);
  if (out->n > 1) qsort(out->v, (size_t)out->n, sizeof *out->v, cmp_str);
  return 1;
}

static const char *pipe_basename_c(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}
/* BIDS decides by names: the io table's suffixes (lumen_image_format_of_name), no file opened */
static int is_nifti(const char *s) { return lumen_image_format_of_name(s, NULL) == LUMEN_IMAGE_FORMAT_NIFTI; }
static int is_image(const char *s) {
  int f = lumen_image_format_of_name(s, NULL);
  return f == LUMEN_IMAGE_FORMAT_NIFTI || f == LUMEN_IMAGE_FORMAT_PNG || f == LUMEN_IMAGE_FORMAT_DICOM;
}
/* NAME_SUFFIX.nii[.gz]: a NIfTI file whose name, less the format's suffix, ends with suffix */
static int has_suffix(const char *s, const char *suffix) {
  lumen_format_info f;
  if (lumen_image_format_of_name(s, &f) != LUMEN_IMAGE_FORMAT_NIFTI) return 0;
  size_t stem = strlen(s) - (size_t)f.suffix_length, n = strlen(suffix);
  return stem >= n && strncmp(s + stem - n, suffix, n) == 0;
}

/* all image files under a session folder (its subfolders one level down, and itself) */
static int session_files(const char *sdir, names *files) {
  names sub = {0};
  int ok = list_dir(sdir, "", 1, &sub);
  char p[4200];
  for (int i = 0; ok && i < sub.n; ++i) {
    names fs = {0};
    snprintf(p, sizeof p, "%s/%s", sdir, sub.v[i]);
    ok = list_dir(p, "", 0, &fs);
    for (int k = 0; ok && k < fs.n; ++k) {
      char q[8400];
      snprintf(q, sizeof q, "%s/%s", p, fs.v[k]);
      if (is_image(fs.v[k])) ok = names_add(files, q);
    }
    names_free(&fs);
  }
  names_free(&sub);
  names top = {0};
  if (ok) ok = list_dir(sdir, "", 0, &top);
  for (int k = 0; ok && k < top.n; ++k) {
    char q[8400];
    snprintf(q, sizeof q, "%s/%s", sdir, top.v[k]);
    if (is_image(top.v[k])) ok = names_add(files, q);
  }
  names_free(&top);
  return ok;
}

static lumen_status scan_session(lumen_ctx *ctx, const char *sdir, const char *sub, const char *ses, const char *command,
                                 lumen_dist_subjects *out, int *cap) {
  names files = {0};
  if (!session_files(sdir, &files)) { names_free(&files); return lumen_fail(ctx, LUMEN_ERR_IO, "cannot read '%s'", sdir); }
  lumen_status st = LUMEN_OK;
  const char *t1map = NULL, *t1alias = NULL, *mask = NULL;
  for (int i = 0; i < files.n; ++i) {
    if (has_suffix(files.v[i], "_T1map")) t1map = files.v[i];
    /* "_T1w-map": the name older lumen demos wrote (now BIDS "_T1map"); still read, as an alias */
    if (has_suffix(files.v[i], "_T1w-map")) t1alias = files.v[i];
    if (has_suffix(files.v[i], "_mask")) mask = files.v[i];
  }
  if (!t1map) t1map = t1alias;
  if (!strcmp(command, "dce")) {
    for (int i = 0; i < files.n && st == LUMEN_OK; ++i) {
      if (!has_suffix(files.v[i], "_dce") && !has_suffix(files.v[i], "_DCE")) continue;
      lumen_dist_subject *x = add_subject(out, cap);
      if (!x) { st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory"); break; }
      snprintf(x->id, sizeof x->id, "%s", sub);
      snprintf(x->session, sizeof x->session, "%s", ses);
      int ok = add_arg(x, "--dce") && add_arg(x, files.v[i]);
      if (t1map) ok = ok && add_arg(x, "--t1map") && add_arg(x, t1map);
      if (mask) ok = ok && add_arg(x, "--mask") && add_arg(x, mask);
      if (!ok) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory");
    }
  } else if (!strcmp(command, "t1")) {
    lumen_dist_subject *x = NULL;
    for (int i = 0; i < files.n && st == LUMEN_OK; ++i) {
      if (!is_nifti(files.v[i]) || (!has_suffix(files.v[i], "_VFA") && !strstr(pipe_basename_c(files.v[i]), "_flip-"))) continue;
      if (!x) {
        if (!(x = add_subject(out, cap))) { st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory"); break; }
        snprintf(x->id, sizeof x->id, "%s", sub);
        snprintf(x->session, sizeof x->session, "%s", ses);
        add_arg(x, "--in");
      }
      if (!add_arg(x, files.v[i])) st = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: too many T1 inputs", sdir);
    }
  } else {
    for (int i = 0; i < files.n && st == LUMEN_OK; ++i) {
      if (has_suffix(files.v[i], "_mask")) continue;
      lumen_dist_subject *x = add_subject(out, cap);
      if (!x) { st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory"); break; }
      snprintf(x->id, sizeof x->id, "%s", sub);
      snprintf(x->session, sizeof x->session, "%s", ses);
      if (!add_arg(x, files.v[i])) st = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory");
    }
  }
  names_free(&files);
  return st;
}

lumen_status lumen_dist_bids_scan(lumen_ctx *ctx, const char *root, const char *command, lumen_dist_subjects *out) {
  memset(out, 0, sizeof *out);
  names subs = {0};
  if (!list_dir(root, "sub-", 1, &subs)) return lumen_fail(ctx, LUMEN_ERR_IO, "cannot read the BIDS folder '%s'", root);
  int cap = 0;
  lumen_status st = LUMEN_OK;
  char p[4200], q[8400];
  for (int i = 0; i < subs.n && st == LUMEN_OK; ++i) {
    snprintf(p, sizeof p, "%s/%s", root, subs.v[i]);
    names ses = {0};
    list_dir(p, "ses-", 1, &ses);
    if (ses.n == 0) st = scan_session(ctx, p, subs.v[i], "", command, out, &cap);
    for (int k = 0; k < ses.n && st == LUMEN_OK; ++k) {
      snprintf(q, sizeof q, "%s/%s", p, ses.v[k]);
      st = scan_session(ctx, q, subs.v[i], ses.v[k], command, out, &cap);
    }
    names_free(&ses);
  }
  names_free(&subs);
  if (st == LUMEN_OK && out->n == 0)
    st = lumen_fail(ctx, LUMEN_ERR_FORMAT, "no %s inputs found under '%s' (sub-*/[ses-*/]*/...)", command, root);
  if (st != LUMEN_OK) lumen_dist_subjects_clear(out);
  return st;
}
