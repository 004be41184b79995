/* Running an image operation by name (include/lumen/ops.h): lumen_op_args holds the op's options
   struct and the lists it points to, filled from "key=value" text checked against the option
   descriptors of src/filter/op_table.c. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "filter/op_registry.h"

#define ARGS_DEVICE_MAX 64

struct lumen_op_args {
  const lumen_op_row *row;
  void *opts;              /* row->info.opts_size bytes */
  float *floats;           /* the FLOATS option's values */
  int64_t n_floats;
  int64_t *points;         /* the POINTS option's coordinates, point_dims per point */
  int64_t n_points;
  int point_dims;
  char device[ARGS_DEVICE_MAX];
};

lumen_status lumen_op_args_create(lumen_ctx *ctx, const char *op, lumen_op_args **out) {
  static const char fn[] = "lumen_op_args_create";
  if (out) *out = NULL;
  LUMEN_REQUIRE(ctx, out != NULL, "%s: argument 'out' is NULL", fn);
  const lumen_op_info *info = lumen_op_find(op);
  if (!info) {
    char names[1024] = "";
    size_t len = 0;
    for (int k = 0; k < lumen_op_count() && len < sizeof names; k++) {
      int n = snprintf(names + len, sizeof names - len, "%s%s", k ? ", " : "", lumen_op_at(k)->name);
      if (n < 0) break;
      len += (size_t)n;
    }
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: op '%s' is unknown, expected one of %s", fn,
                      op ? op : "(null)", names);
  }
  lumen_op_args *a = calloc(1, sizeof *a);
  void *o = a ? calloc(1, info->opts_size) : NULL;
  if (!o) {
    free(a);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  }
  a->row = lumen_op_row_of(info);
  a->opts = o;
  a->row->init(o);
  *out = a;
  return LUMEN_OK;
}

void lumen_op_args_free(lumen_op_args *a) {
  if (!a) return;
  free(a->opts);
  free(a->floats);
  free(a->points);
  free(a);
}

const lumen_op_info *lumen_op_args_op(const lumen_op_args *a) { return a ? &a->row->info : NULL; }

void *lumen_op_args_opts(lumen_op_args *a) { return a ? a->opts : NULL; }

/* ------------------------------------------------------------------ values from text */

static lumen_status bad_value(lumen_ctx *ctx, const lumen_op_args *a, const lumen_op_option *o, const char *text,
                              const char *what) {
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: %s is '%s', expected %s", a->row->info.name, o->name,
                    text ? text : "(no value)", what);
}

static lumen_status out_of_range(lumen_ctx *ctx, const lumen_op_args *a, const lumen_op_option *o, double v) {
  char range[256];
  lumen_op_option_range_text(o, range, sizeof range);
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: %s is %.10g, expected %s", a->row->info.name, o->name, v,
                    range);
}

/* a whole number or a float ("auto" and "nan" = NaN); 0 when text is not one */
static int read_number(const char *text, double *v) {
  if (!text || !*text) return 0;
  if (strcmp(text, "auto") == 0 || strcmp(text, "nan") == 0 || strcmp(text, "NaN") == 0) {
    *v = NAN;
    return 1;
  }
  char *end;
  errno = 0;
  *v = strtod(text, &end);
  return end != text && *end == '\0' && errno != ERANGE;
}

static int read_bool(const char *text, int *v) {
  static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no", "off"};
  for (int k = 0; k < 4; k++) {
    if (strcmp(text, yes[k]) == 0) return *v = 1, 1;
    if (strcmp(text, no[k]) == 0) return *v = 0, 1;
  }
  return 0;
}

/* up to max numbers separated by commas; the count, or -1 */
static int read_list(const char *text, double *v, int max) {
  int n = 0;
  const char *p = text;
  while (p && *p) {
    char *end;
    errno = 0;
    double x = strtod(p, &end);
    if (end == p || errno == ERANGE || n >= max) return -1;
    v[n++] = x;
    p = end;
    if (*p == ',') p++;
    else if (*p) return -1;
  }
  return n ? n : -1;
}

static lumen_status set_enum(lumen_ctx *ctx, lumen_op_args *a, const lumen_op_option *o, const char *text, void *f) {
  for (int k = 0; o->enum_names && o->enum_names[k]; k++)
    if (strcmp(text, o->enum_names[k]) == 0) {
      memcpy(f, &k, sizeof k);
      return LUMEN_OK;
    }
  double v;
  char range[256];
  lumen_op_option_range_text(o, range, sizeof range);
  if (!read_number(text, &v) || !lumen_op_option_value_ok(o, v)) return bad_value(ctx, a, o, text, range);
  int k = (int)v;
  memcpy(f, &k, sizeof k);
  return LUMEN_OK;
}

static lumen_status set_scalar(lumen_ctx *ctx, lumen_op_args *a, const lumen_op_option *o, const char *text, void *f) {
  double v;
  if (o->type == LUMEN_OPT_UINT64) {
    const char *p = text;
    while (*p >= '0' && *p <= '9') p++;
    char *end;
    errno = 0;
    unsigned long long u = strtoull(text, &end, 10);
    if (!*text || *p || end != p || errno == ERANGE)
      return bad_value(ctx, a, o, text, "an integer from 0 to 2^64-1");
    uint64_t x = u;
    memcpy(f, &x, sizeof x);
    return LUMEN_OK;
  }
  if (!read_number(text, &v))
    return bad_value(ctx, a, o, text, o->type == LUMEN_OPT_INT ? "an integer" : "a number");
  if (!lumen_op_option_value_ok(o, v)) return out_of_range(ctx, a, o, v);
  if (o->type == LUMEN_OPT_INT) {
    int i = (int)v;
    memcpy(f, &i, sizeof i);
  } else {
    memcpy(f, &v, sizeof v);
  }
  return LUMEN_OK;
}

static lumen_status set_triple(lumen_ctx *ctx, lumen_op_args *a, const lumen_op_option *o, const char *text, void *f) {
  double v[3] = {0, 0, 0};
  int n = read_list(text, v, 3);
  if (n < 0) return bad_value(ctx, a, o, text, "1 to 3 numbers separated by commas");
  for (int k = 0; k < n; k++) {
    if (o->type == LUMEN_OPT_INT64_3 && v[k] != floor(v[k])) return bad_value(ctx, a, o, text, "integers");
    if (!lumen_op_option_value_ok(o, v[k])) return out_of_range(ctx, a, o, v[k]);
  }
  if (o->type == LUMEN_OPT_DOUBLE3) {
    memcpy(f, v, sizeof v);
    return LUMEN_OK;
  }
  int64_t d[3] = {1, 1, 1};
  for (int k = 0; k < n; k++) d[k] = (int64_t)v[k];
  memcpy(f, d, sizeof d);
  memcpy((char *)a->opts + o->count_offset, &n, sizeof n);
  return LUMEN_OK;
}

static lumen_status set_floats(lumen_ctx *ctx, lumen_op_args *a, const lumen_op_option *o, const char *text, void *f) {
  int cap = 1;
  for (const char *p = text; *p; p++) cap += *p == ',';
  double *tmp = malloc((size_t)cap * sizeof *tmp);
  float *vals = malloc((size_t)cap * sizeof *vals);
  int n = tmp && vals ? read_list(text, tmp, cap) : -2;
  for (int k = 0; k < n; k++) {
    if (!isfinite(tmp[k]) || fabs(tmp[k]) > 3.4e38) n = -1;
    else vals[k] = (float)tmp[k];
  }
  free(tmp);
  if (n < 0) {
    free(vals);
    return n == -2 ? lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory for %s", a->row->info.name, o->name)
                   : bad_value(ctx, a, o, text, "finite numbers separated by commas");
  }
  free(a->floats);
  a->floats = vals;
  a->n_floats = n;
  const float *p = vals;
  memcpy(f, &p, sizeof p);
  return LUMEN_OK;
}

static lumen_status add_point(lumen_ctx *ctx, lumen_op_args *a, const lumen_op_option *o, const char *text, void *f) {
  double v[3];
  int n = read_list(text, v, 3);
  for (int k = 0; k < n; k++)
    if (v[k] != floor(v[k]) || !(v[k] >= 0 && v[k] < 9.2e18)) n = -1;
  if (n < 1) return bad_value(ctx, a, o, text, "a voxel x,y or x,y,z (indices >= 0)");
  if (a->n_points && n != a->point_dims) {
    char what[64];
    snprintf(what, sizeof what, "%d coordinates as the first point", a->point_dims);
    return bad_value(ctx, a, o, text, what);
  }
  int64_t *p = realloc(a->points, (size_t)(a->n_points + 1) * 3 * sizeof *p);
  if (!p) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory for %s", a->row->info.name, o->name);
  a->points = p;
  for (int k = 0; k < n; k++) p[a->n_points * n + k] = (int64_t)v[k];
  a->n_points++;
  a->point_dims = n;
  const int64_t *cp = p;
  memcpy(f, &cp, sizeof cp);
  memcpy((char *)a->opts + o->count_offset, &a->n_points, sizeof a->n_points);
  return LUMEN_OK;
}

/* "device" and "precision": the lumen_filter_exec every options struct starts with */
static int set_exec(lumen_ctx *ctx, lumen_op_args *a, const char *key, const char *value, lumen_status *s) {
  lumen_filter_exec *ex = a->opts;
  if (strcmp(key, "device") == 0) {
    if (!value || strlen(value) >= sizeof a->device)
      *s = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: device is '%s', expected cpu, cuda or cuda:N",
                      a->row->info.name, value ? value : "(no value)");
    else {
      snprintf(a->device, sizeof a->device, "%s", value);
      ex->device = a->device;
      *s = LUMEN_OK;
    }
    return 1;
  }
  if (strcmp(key, "precision") == 0) {
    lumen_precision p;
    if (!value || lumen_precision_parse(value, &p) != LUMEN_OK)
      *s = lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: precision is '%s', expected full, half or bfloat16",
                      a->row->info.name, value ? value : "(no value)");
    else {
      ex->precision = (int)p;
      *s = LUMEN_OK;
    }
    return 1;
  }
  return 0;
}

static lumen_status unknown_option(lumen_ctx *ctx, const lumen_op_args *a, const char *key) {
  const lumen_op_info *op = &a->row->info;
  char names[1024] = "";
  size_t len = 0;
  for (int j = 0; j < op->n_options && len < sizeof names; j++) {
    int n = snprintf(names + len, sizeof names - len, "%s, ", op->options[j].name);
    if (n < 0) break;
    len += (size_t)n;
  }
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s: unknown option '%s', expected one of %sdevice, precision",
                    op->name, key, names);
}

lumen_status lumen_op_args_set(lumen_ctx *ctx, lumen_op_args *a, const char *key, const char *value) {
  LUMEN_REQUIRE(ctx, a != NULL && key != NULL, "lumen_op_args_set: args and key must not be NULL");
  lumen_status s;
  if (set_exec(ctx, a, key, value, &s)) return s;
  const lumen_op_option *o = lumen_op_option_find(&a->row->info, key);
  if (!o && (strncmp(key, "no_", 3) == 0 || strncmp(key, "no-", 3) == 0) && !value) {
    o = lumen_op_option_find(&a->row->info, key + 3);
    if (!o || o->type != LUMEN_OPT_BOOL) return unknown_option(ctx, a, key);
    int zero = 0;
    memcpy((char *)a->opts + o->offset, &zero, sizeof zero);
    return LUMEN_OK;
  }
  if (!o) return unknown_option(ctx, a, key);
  void *f = (char *)a->opts + o->offset;
  if (o->type == LUMEN_OPT_BOOL) {
    int v = 1;
    if (value && !read_bool(value, &v)) return bad_value(ctx, a, o, value, "0 or 1 (true, false, yes, no, on, off)");
    memcpy(f, &v, sizeof v);
    return LUMEN_OK;
  }
  if (!value || !*value) return bad_value(ctx, a, o, value, "a value");
  switch (o->type) {
    case LUMEN_OPT_ENUM: return set_enum(ctx, a, o, value, f);
    case LUMEN_OPT_DOUBLE3:
    case LUMEN_OPT_INT64_3: return set_triple(ctx, a, o, value, f);
    case LUMEN_OPT_FLOATS: return set_floats(ctx, a, o, value, f);
    case LUMEN_OPT_POINTS: return add_point(ctx, a, o, value, f);
    default: return set_scalar(ctx, a, o, value, f);
  }
}

lumen_status lumen_op_args_parse(lumen_ctx *ctx, lumen_op_args *a, const char *text) {
  LUMEN_REQUIRE(ctx, a != NULL, "lumen_op_args_parse: args is NULL");
  if (!text) return LUMEN_OK;
  size_t len = strlen(text);
  char *buf = malloc(len + 1);
  if (!buf) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_op_args_parse: out of memory");
  memcpy(buf, text, len + 1);
  lumen_status s = LUMEN_OK;
  char *save = NULL;
  for (char *item = strtok_r(buf, " \t\n;", &save); item && s == LUMEN_OK; item = strtok_r(NULL, " \t\n;", &save)) {
    char *eq = strchr(item, '=');
    if (eq) *eq = '\0';
    s = lumen_op_args_set(ctx, a, item, eq ? eq + 1 : NULL);
  }
  free(buf);
  return s;
}

/* ------------------------------------------------------------------ running */

lumen_status lumen_op_run_opts(lumen_ctx *ctx, const lumen_op_info *op, const lumen_image *in, const void *opts,
                               lumen_image **out, double *scalar) {
  static const char fn[] = "lumen_op_run_opts";
  if (out) *out = NULL;
  if (scalar) *scalar = NAN;
  if (!ctx) return LUMEN_ERR_INVALID_ARGUMENT;
  const lumen_op_row *r = lumen_op_row_of(op);
  LUMEN_REQUIRE(ctx, r != NULL, "%s: op is not one of the registry's (lumen_op_find)", fn);
  LUMEN_REQUIRE(ctx, r->run != NULL, "%s: %s takes two images: call %s", fn, op->name, op->entry);
  LUMEN_REQUIRE(ctx, out != NULL || op->output == LUMEN_OP_OUTPUT_NONE, "%s: argument 'out' is NULL", fn);
  void *defaults = NULL;
  if (!opts) {
    defaults = calloc(1, op->opts_size);
    if (!defaults) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    r->init(defaults);
    opts = defaults;
  }
  double v = NAN;
  lumen_image *img = NULL;
  lumen_status s = r->run(ctx, in, opts, &img, &v);
  free(defaults);
  if (out) *out = img;
  else lumen_image_free(img);
  if (s == LUMEN_OK && scalar) *scalar = v;
  return s;
}

lumen_status lumen_op_args_run_with(lumen_ctx *ctx, const lumen_op_args *a, const lumen_filter_exec *ex,
                                    void (*edit)(void *opts, void *user), void *user, const lumen_image *in,
                                    lumen_image **out, double *scalar) {
  if (out) *out = NULL;
  if (scalar) *scalar = NAN;
  if (!ctx) return LUMEN_ERR_INVALID_ARGUMENT;
  LUMEN_REQUIRE(ctx, a != NULL, "lumen_op_args_run: args is NULL");
  LUMEN_REQUIRE(ctx, in != NULL, "lumen_op_args_run: argument 'in' is NULL, expected an image");
  void *o = malloc(a->row->info.opts_size);
  if (!o) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_op_args_run: out of memory");
  memcpy(o, a->opts, a->row->info.opts_size);
  if (ex) memcpy(o, ex, sizeof *ex); /* every options struct starts with its lumen_filter_exec */
  if (edit) edit(o, user);
  lumen_status s = LUMEN_OK;
  if (a->row->prepare) {
    lumen_op_lists l = {a->n_floats, a->point_dims};
    s = a->row->prepare(ctx, o, in, &l);
  }
  if (s == LUMEN_OK) s = lumen_op_run_opts(ctx, &a->row->info, in, o, out, scalar);
  free(o);
  return s;
}

lumen_status lumen_op_args_run(lumen_ctx *ctx, lumen_op_args *a, const lumen_image *in, lumen_image **out,
                               double *scalar) {
  return lumen_op_args_run_with(ctx, a, NULL, NULL, NULL, in, out, scalar);
}

int lumen_op_args_point_dims(const lumen_op_args *a) { return a ? a->point_dims : 0; }

lumen_status lumen_op_run(lumen_ctx *ctx, const char *op, const lumen_image *in, const char *options,
                          lumen_image **out, double *scalar) {
  if (out) *out = NULL;
  if (scalar) *scalar = NAN;
  lumen_op_args *a = NULL;
  lumen_status s = lumen_op_args_create(ctx, op, &a);
  if (s == LUMEN_OK) s = lumen_op_args_parse(ctx, a, options);
  if (s == LUMEN_OK) s = lumen_op_args_run(ctx, a, in, out, scalar);
  lumen_op_args_free(a);
  return s;
}

lumen_status lumen_op_run_kv(lumen_ctx *ctx, const char *op, const lumen_image *in, int n, const char *const *keys,
                             const char *const *values, lumen_image **out, double *scalar) {
  if (out) *out = NULL;
  if (scalar) *scalar = NAN;
  LUMEN_REQUIRE(ctx, n >= 0 && (n == 0 || keys != NULL), "lumen_op_run_kv: n is %d with keys %s", n,
                keys ? "given" : "NULL");
  lumen_op_args *a = NULL;
  lumen_status s = lumen_op_args_create(ctx, op, &a);
  for (int i = 0; i < n && s == LUMEN_OK; i++) s = lumen_op_args_set(ctx, a, keys[i], values ? values[i] : NULL);
  if (s == LUMEN_OK) s = lumen_op_args_run(ctx, a, in, out, scalar);
  lumen_op_args_free(a);
  return s;
}
