/* Voxel ranges, shard part files and their merge (src/scale/dist_internal.h, docs/SCALE.md). */
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/internal.h"
#include "io/io_internal.h"
#include "scale/dist_internal.h"
#include "pipeline/fit_counts.h"

void lumen_dist_range(int64_t n, int k, int nparts, int64_t *lo, int64_t *hi) {
  if (nparts < 1) nparts = 1;
  /* n * k may overflow only beyond 2^63 / 2^31 items */
  *lo = (int64_t)((__int128)n * k / nparts);
  *hi = (int64_t)((__int128)n * (k + 1) / nparts);
}

lumen_status lumen_dist_shard_parse(lumen_ctx *ctx, const char *text, int *k, int *n) {
  char *end = NULL;
  long a = strtol(text ? text : "", &end, 10);
  if (!text || end == text || *end != '/')
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "--shard: '%s' is not K/N (e.g. 0/4)", text ? text : "");
  const char *s2 = end + 1;
  long b = strtol(s2, &end, 10);
  if (end == s2 || *end || b < 1 || b > 1000000 || a < 0 || a >= b)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "--shard: '%s' is not K/N with 0 <= K < N", text);
  *k = (int)a;
  *n = (int)b;
  return LUMEN_OK;
}

static void copy_meta(lumen_fit_results *dst, const lumen_fit_results *src) {
  memcpy(dst->backend_requested, src->backend_requested, sizeof dst->backend_requested);
  memcpy(dst->backend_selected, src->backend_selected, sizeof dst->backend_selected);
  memcpy(dst->backend_used, src->backend_used, sizeof dst->backend_used);
  memcpy(dst->reason, src->reason, sizeof dst->reason);
  memcpy(dst->curves_per_tier, src->curves_per_tier, sizeof dst->curves_per_tier);
  memcpy(dst->state_counts, src->state_counts, sizeof dst->state_counts);
  memcpy(dst->at_lower, src->at_lower, sizeof dst->at_lower);
  memcpy(dst->at_upper, src->at_upper, sizeof dst->at_upper);
  dst->seconds = src->seconds;
}

#define OFF(p, k) ((p) ? (p) + (k) : NULL)

lumen_status lumen_dist_fit_range(lumen_ctx *ctx, const lumen_fit_plan *plan, lumen_model model, int64_t n, int64_t nt,
                                  const float *data, const float *consts, lumen_fit_results *res, int64_t lo,
                                  int64_t hi) {
  const int np = lumen_model_param_count(model), nd = lumen_fit_derived_count(model);
  for (int64_t i = 0; i < n; ++i) {
    if (i == lo && hi > lo) { i = hi - 1; continue; }
    for (int p = 0; p < np; ++p) {
      res->params[i * np + p] = NAN;
      if (res->ci_lo) res->ci_lo[i * np + p] = NAN;
      if (res->ci_hi) res->ci_hi[i * np + p] = NAN;
    }
    for (int d = 0; d < nd; ++d) res->derived[i * nd + d] = NAN;
    if (res->state) res->state[i] = -1;
    if (res->chi2) res->chi2[i] = NAN;
    if (res->r2) res->r2[i] = NAN;
    if (res->iterations) res->iterations[i] = 0;
    if (res->delay) res->delay[i] = NAN;
  }
  if (hi <= lo) {
    snprintf(res->backend_requested, sizeof res->backend_requested, "none");
    snprintf(res->backend_selected, sizeof res->backend_selected, "none");
    snprintf(res->backend_used, sizeof res->backend_used, "none");
    snprintf(res->reason, sizeof res->reason, "empty shard");
    memset(res->curves_per_tier, 0, sizeof res->curves_per_tier);
    memset(res->state_counts, 0, sizeof res->state_counts);
    memset(res->at_lower, 0, sizeof res->at_lower);
    memset(res->at_upper, 0, sizeof res->at_upper);
    res->seconds = 0;
    return LUMEN_OK;
  }
  lumen_fit_results sub;
  memset(&sub, 0, sizeof sub);
  sub.params = OFF(res->params, lo * np);
  sub.state = OFF(res->state, lo);
  sub.derived = OFF(res->derived, lo * nd);
  sub.chi2 = OFF(res->chi2, lo);
  sub.r2 = OFF(res->r2, lo);
  sub.iterations = OFF(res->iterations, lo);
  sub.ci_lo = OFF(res->ci_lo, lo * np);
  sub.ci_hi = OFF(res->ci_hi, lo * np);
  sub.delay = OFF(res->delay, lo);
  lumen_status st = lumen_fit_execute(ctx, plan, hi - lo, data + lo * nt, consts ? consts + lo * LUMEN_FIT_NCONSTS : NULL, &sub);
  copy_meta(res, &sub);
  return st;
}

/* ------------------------------------------------------------------------------ parts */

typedef struct part_rec {
  int32_t model, np, nd, has_ci, has_delay, pad;
  int64_t n, lo, hi;
  char breq[LUMEN_FIT_NAME_MAX], bsel[LUMEN_FIT_NAME_MAX], bused[LUMEN_FIT_NAME_MAX];
  char reason[LUMEN_FIT_REASON_MAX];
  int64_t tiers[LUMEN_FIT_TIER_COUNT], states[LUMEN_FIT_STATE_COUNT];
  int64_t at_lower[LUMEN_FIT_MAX_PARAMS], at_upper[LUMEN_FIT_MAX_PARAMS];
  double seconds;
  double *params, *derived, *chi2, *r2, *ci_lo, *ci_hi, *delay;
  int32_t *state;
} part_rec;

struct lumen_dist_part {
  int k, n;
  char *cwd;
  int argc;
  char **argv;
  int nrec;
  part_rec rec[LUMEN_MODEL_COUNT];
};

lumen_status lumen_dist_part_create(lumen_ctx *ctx, int k, int n, lumen_dist_part **out) {
  *out = calloc(1, sizeof **out);
  if (!*out) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory");
  (*out)->k = k;
  (*out)->n = n;
  return LUMEN_OK;
}

static void rec_free(part_rec *r) {
  free(r->params); free(r->derived); free(r->chi2); free(r->r2); free(r->ci_lo); free(r->ci_hi); free(r->delay);
  free(r->state);
}

void lumen_dist_part_free(lumen_dist_part *p) {
  if (!p) return;
  for (int i = 0; i < p->nrec; ++i) rec_free(&p->rec[i]);
  for (int i = 0; i < p->argc; ++i) free(p->argv[i]);
  free(p->argv);
  free(p->cwd);
  free(p);
}

static void *dup_range(const void *src, size_t elem, int64_t lo, int64_t cnt) {
  if (!src) return NULL;
  void *d = malloc(elem * (size_t)(cnt > 0 ? cnt : 1));
  if (d && cnt > 0) memcpy(d, (const char *)src + elem * (size_t)lo, elem * (size_t)cnt);
  return d;
}

lumen_status lumen_dist_part_fit(void *user, lumen_ctx *ctx, const lumen_fit_plan *plan, lumen_model model, int64_t n,
                                 int64_t nt, const float *data, const float *consts, lumen_fit_results *res) {
  lumen_dist_part *p = user;
  if (p->nrec >= LUMEN_MODEL_COUNT) return lumen_fail(ctx, LUMEN_ERR_INTERNAL, "shard: too many models");
  int64_t lo, hi;
  lumen_dist_range(n, p->k, p->n, &lo, &hi);
  lumen_status st = lumen_dist_fit_range(ctx, plan, model, n, nt, data, consts, res, lo, hi);
  if (st != LUMEN_OK) return st;
  part_rec *r = &p->rec[p->nrec];
  memset(r, 0, sizeof *r);
  r->model = (int32_t)model;
  r->np = lumen_model_param_count(model);
  r->nd = lumen_fit_derived_count(model);
  r->has_ci = res->ci_lo != NULL;
  r->has_delay = res->delay != NULL;
  r->n = n; r->lo = lo; r->hi = hi;
  memcpy(r->breq, res->backend_requested, sizeof r->breq);
  memcpy(r->bsel, res->backend_selected, sizeof r->bsel);
  memcpy(r->bused, res->backend_used, sizeof r->bused);
  memcpy(r->reason, res->reason, sizeof r->reason);
  memcpy(r->tiers, res->curves_per_tier, sizeof r->tiers);
  memcpy(r->states, res->state_counts, sizeof r->states);
  memcpy(r->at_lower, res->at_lower, sizeof r->at_lower);
  memcpy(r->at_upper, res->at_upper, sizeof r->at_upper);
  r->seconds = res->seconds;
  int64_t c = hi - lo;
  r->params = dup_range(res->params, sizeof(double) * (size_t)r->np, lo, c);
  r->derived = dup_range(res->derived, sizeof(double) * (size_t)r->nd, lo, c);
  r->chi2 = dup_range(res->chi2, sizeof(double), lo, c);
  r->r2 = dup_range(res->r2, sizeof(double), lo, c);
  r->ci_lo = dup_range(res->ci_lo, sizeof(double) * (size_t)r->np, lo, c);
  r->ci_hi = dup_range(res->ci_hi, sizeof(double) * (size_t)r->np, lo, c);
  r->delay = dup_range(res->delay, sizeof(double), lo, c);
  r->state = dup_range(res->state, sizeof(int32_t), lo, c);
  p->nrec++;
  if ((res->params && !r->params) || (res->state && !r->state) || (res->chi2 && !r->chi2))
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "shard: out of memory");
  return LUMEN_OK;
}

/* file: "LUMENPART2\n", int32 k, n, str cwd, int32 argc, str argv..., int32 nrec, records
   (2: the at_bound state and the per-parameter bound counts) */
static const char MAGIC[12] = "LUMENPART2\n";

/* The part is written through the library's atomic writer (random temporary name created
   O_EXCL|O_NOFOLLOW, fsync, rename; only a regular file is replaced): a planted symlink at a
   predictable temporary name can not redirect it (issue 15). */
static int w_raw(lumen_atomic_file *f, const void *p, size_t n) { return n == 0 || lumen_atomic_write(f, p, n) == LUMEN_OK; }
static int w_str(lumen_atomic_file *f, const char *s) {
  int32_t len = (int32_t)strlen(s);
  return w_raw(f, &len, 4) && w_raw(f, s, (size_t)len);
}
static int w_arr(lumen_atomic_file *f, const void *p, size_t elem, int64_t cnt) {
  if (!p || cnt <= 0 || elem == 0) return 1;
  return w_raw(f, p, elem * (size_t)cnt);
}

lumen_status lumen_dist_part_write(lumen_ctx *ctx, const lumen_dist_part *p, const char *path, int argc,
                                   char *const *argv) {
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, ".");
  lumen_atomic_file *f = NULL;
  lumen_status st = lumen_atomic_open(ctx, path, 1, 0, &f);
  if (st != LUMEN_OK) return st;
  int ok = w_raw(f, MAGIC, sizeof MAGIC);
  int32_t hdr[2] = {p->k, p->n};
  ok = ok && w_raw(f, hdr, sizeof hdr) && w_str(f, cwd);
  int32_t ac = argc;
  ok = ok && w_raw(f, &ac, 4);
  for (int i = 0; ok && i < argc; ++i) ok = w_str(f, argv[i]);
  int32_t nr = p->nrec;
  ok = ok && w_raw(f, &nr, 4);
  for (int i = 0; ok && i < p->nrec; ++i) {
    const part_rec *r = &p->rec[i];
    int64_t c = r->hi - r->lo;
    ok = w_raw(f, r, offsetof(part_rec, params));
    ok = ok && w_arr(f, r->params, sizeof(double) * (size_t)r->np, c) && w_arr(f, r->derived, sizeof(double) * (size_t)r->nd, c);
    ok = ok && w_arr(f, r->chi2, sizeof(double), c) && w_arr(f, r->r2, sizeof(double), c);
    if (r->has_ci) ok = ok && w_arr(f, r->ci_lo, sizeof(double) * (size_t)r->np, c) && w_arr(f, r->ci_hi, sizeof(double) * (size_t)r->np, c);
    if (r->has_delay) ok = ok && w_arr(f, r->delay, sizeof(double), c);
    ok = ok && w_arr(f, r->state, sizeof(int32_t), c);
  }
  if (!ok) {  /* the writer has set the error (file, reason) */
    lumen_atomic_abort(f);
    return lumen_ctx_last_status(ctx) != LUMEN_OK ? lumen_ctx_last_status(ctx) : LUMEN_ERR_IO;
  }
  return lumen_atomic_commit(f);
}

static int r_str(FILE *f, char **s) {
  int32_t len;
  if (fread(&len, 4, 1, f) != 1 || len < 0 || len > 1 << 20) return 0;
  *s = malloc((size_t)len + 1);
  if (!*s) return 0;
  if (len && fread(*s, 1, (size_t)len, f) != (size_t)len) return 0;
  (*s)[len] = 0;
  return 1;
}
static int r_arr(FILE *f, void **p, size_t elem, int64_t cnt) {
  *p = malloc(elem * (size_t)(cnt > 0 ? cnt : 1) + 1);
  if (!*p) return 0;
  return cnt <= 0 || elem == 0 || fread(*p, elem, (size_t)cnt, f) == (size_t)cnt;
}

lumen_status lumen_dist_part_read(lumen_ctx *ctx, const char *path, lumen_dist_part **out) {
  *out = NULL;
  FILE *f = NULL;
  lumen_status os = lumen_io_fopen_regular(ctx, "the part", path, &f);  /* a FIFO would block */
  if (os != LUMEN_OK) return os;
  lumen_dist_part *p = calloc(1, sizeof *p);
  char m[sizeof MAGIC];
  int32_t hdr[2], ac = 0, nr = 0;
  int ok = p && fread(m, 1, sizeof m, f) == sizeof m && !memcmp(m, MAGIC, sizeof m);
  ok = ok && fread(hdr, 4, 2, f) == 2 && hdr[1] >= 1 && hdr[0] >= 0 && hdr[0] < hdr[1] && r_str(f, &p->cwd);
  ok = ok && fread(&ac, 4, 1, f) == 1 && ac >= 0 && ac < 4096;
  if (ok) {
    p->k = hdr[0]; p->n = hdr[1];
    p->argv = calloc((size_t)ac + 1, sizeof *p->argv);
    ok = p->argv != NULL;
    for (int i = 0; ok && i < ac; ++i) { ok = r_str(f, &p->argv[i]); if (ok) p->argc = i + 1; }
  }
  ok = ok && fread(&nr, 4, 1, f) == 1 && nr >= 0 && nr <= LUMEN_MODEL_COUNT;
  for (int i = 0; ok && i < nr; ++i) {
    part_rec *r = &p->rec[i];
    ok = fread(r, offsetof(part_rec, params), 1, f) == 1;
    memset(&r->params, 0, sizeof *r - offsetof(part_rec, params));
    p->nrec = i + 1;
    ok = ok && r->np >= 0 && r->np <= 16 && r->nd >= 0 && r->nd <= 16 && r->lo >= 0 && r->hi >= r->lo && r->hi <= r->n;
    int64_t c = r->hi - r->lo;
    ok = ok && r_arr(f, (void **)&r->params, sizeof(double) * (size_t)r->np, c) &&
         r_arr(f, (void **)&r->derived, sizeof(double) * (size_t)r->nd, c) && r_arr(f, (void **)&r->chi2, sizeof(double), c) &&
         r_arr(f, (void **)&r->r2, sizeof(double), c);
    if (ok && r->has_ci)
      ok = r_arr(f, (void **)&r->ci_lo, sizeof(double) * (size_t)r->np, c) && r_arr(f, (void **)&r->ci_hi, sizeof(double) * (size_t)r->np, c);
    if (ok && r->has_delay) ok = r_arr(f, (void **)&r->delay, sizeof(double), c);
    ok = ok && r_arr(f, (void **)&r->state, sizeof(int32_t), c);
  }
  if (ok && fgetc(f) != EOF) ok = 0;
  fclose(f);
  if (!ok) {
    lumen_dist_part_free(p);
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "'%s' is not a complete lumen shard part", path);
  }
  *out = p;
  return LUMEN_OK;
}

int lumen_dist_part_index(const lumen_dist_part *p) { return p->k; }
int lumen_dist_part_count(const lumen_dist_part *p) { return p->n; }
int lumen_dist_part_argc(const lumen_dist_part *p) { return p->argc; }
const char *lumen_dist_part_arg(const lumen_dist_part *p, int i) { return i >= 0 && i < p->argc ? p->argv[i] : NULL; }
const char *lumen_dist_part_cwd(const lumen_dist_part *p) { return p->cwd ? p->cwd : "."; }

/* ------------------------------------------------------------------------------ merge */

struct lumen_dist_merger {
  int n;
  lumen_dist_part **by_index;
};

lumen_status lumen_dist_merger_create(lumen_ctx *ctx, lumen_dist_part **parts, int nparts, lumen_dist_merger **out) {
  *out = NULL;
  if (nparts < 1) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "merge: no parts given");
  int n = parts[0]->n;
  if (nparts != n) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "merge: %d parts given, the shards say N = %d", nparts, n);
  lumen_dist_merger *m = calloc(1, sizeof *m);
  if (!m || !(m->by_index = calloc((size_t)n, sizeof *m->by_index))) { free(m); return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory"); }
  m->n = n;
  for (int i = 0; i < nparts; ++i) {
    const lumen_dist_part *p = parts[i];
    const char *why = NULL;
    if (p->n != n) why = "another shard count N";
    else if (m->by_index[p->k]) why = "a shard index given twice";
    else if (p->nrec != parts[0]->nrec) why = "another number of models";
    else if (p->argc != parts[0]->argc) why = "other options";
    for (int a = 0; !why && a < p->argc; ++a) {
      const char *x = p->argv[a], *y = parts[0]->argv[a];
      if (a > 0 && (!strcmp(p->argv[a - 1], "--shard") || !strcmp(p->argv[a - 1], "--out"))) continue;
      if (strcmp(x, y)) why = "other options";
    }
    if (why) {
      lumen_dist_merger_free(m);
      return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "merge: part %d/%d has %s than part %d/%d", p->k, p->n, why,
                        parts[0]->k, n);
    }
    m->by_index[p->k] = parts[i];
  }
  *out = m;
  return LUMEN_OK;
}

void lumen_dist_merger_free(lumen_dist_merger *m) {
  if (!m) return;
  free(m->by_index);
  free(m);
}

#define PUT(dst, src, elem)                                                               \
  do {                                                                                    \
    if ((dst) && (src) && c > 0) memcpy((char *)(dst) + (elem) * (size_t)r->lo, (src), (elem) * (size_t)c); \
  } while (0)

lumen_status lumen_dist_merge_fit(void *user, lumen_ctx *ctx, const lumen_fit_plan *plan, lumen_model model, int64_t n,
                                  int64_t nt, const float *data, const float *consts, lumen_fit_results *res) {
  (void)plan; (void)nt; (void)data; (void)consts;
  lumen_dist_merger *m = user;
  int have_meta = 0;
  int64_t next = 0;
  memset(res->curves_per_tier, 0, sizeof res->curves_per_tier);
  memset(res->state_counts, 0, sizeof res->state_counts);
  memset(res->at_lower, 0, sizeof res->at_lower);
  memset(res->at_upper, 0, sizeof res->at_upper);
  res->seconds = 0;
  for (int k = 0; k < m->n; ++k) {
    const lumen_dist_part *p = m->by_index[k];
    const part_rec *r = NULL;
    for (int i = 0; i < p->nrec; ++i)
      if (p->rec[i].model == (int32_t)model) r = &p->rec[i];
    if (!r) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "merge: part %d/%d has no results for %s", k, m->n, lumen_model_name(model));
    if (r->n != n || r->lo != next)
      return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                        "merge: part %d/%d of %s covers voxels [%lld, %lld) of %lld; this run has %lld (other inputs?)", k,
                        m->n, lumen_model_name(model), (long long)r->lo, (long long)r->hi, (long long)r->n, (long long)n);
    if ((res->ci_lo != NULL) != (r->has_ci != 0) || (res->delay != NULL) != (r->has_delay != 0))
      return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "merge: part %d/%d was run with other CI/delay options", k, m->n);
    int64_t c = r->hi - r->lo;
    next = r->hi;
    PUT(res->params, r->params, sizeof(double) * (size_t)r->np);
    PUT(res->derived, r->derived, sizeof(double) * (size_t)r->nd);
    PUT(res->chi2, r->chi2, sizeof(double));
    PUT(res->r2, r->r2, sizeof(double));
    PUT(res->ci_lo, r->ci_lo, sizeof(double) * (size_t)r->np);
    PUT(res->ci_hi, r->ci_hi, sizeof(double) * (size_t)r->np);
    PUT(res->delay, r->delay, sizeof(double));
    PUT(res->state, r->state, sizeof(int32_t));
    if (res->iterations) for (int64_t i = r->lo; i < r->hi; ++i) res->iterations[i] = 0;
    const pipe_fit_piece piece = {r->tiers, r->states, r->at_lower, r->at_upper, r->seconds,
                                  r->breq, r->bsel, r->bused, r->reason};
    pipe_add_fit_piece(res, &piece, !have_meta && c > 0);
    if (c > 0) have_meta = 1;
  }
  if (next != n) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "merge: the parts cover %lld of %lld voxels", (long long)next, (long long)n);
  return LUMEN_OK;
}
