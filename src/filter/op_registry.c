/* Looking up the registry of image operations (include/lumen/ops.h): ops and options by name or
   alias, defaults read from each op's opts_init, ranges in words and the range check. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "filter/op_registry.h"

int lumen_op_count(void) { return lumen_op_row_count(); }

const lumen_op_info *lumen_op_at(int index) {
  const lumen_op_row *r = lumen_op_row_at(index);
  return r ? &r->info : NULL;
}

/* a == b with '-' in a read as '_' */
static int same_name(const char *a, const char *b, size_t nb) {
  size_t k = 0;
  for (; k < nb && a[k]; k++)
    if ((a[k] == '-' ? '_' : a[k]) != b[k]) return 0;
  return k == nb && a[k] == '\0';
}

/* 1 when name is one of the space-separated words of list */
static int in_list(const char *name, const char *list) {
  while (list && *list) {
    while (*list == ' ') list++;
    size_t n = strcspn(list, " ");
    if (n && same_name(name, list, n)) return 1;
    list += n;
  }
  return 0;
}

static const lumen_op_info *find(int kind, const char *name) {
  if (!name) return NULL;
  for (int pass = 0; pass < 2; pass++) /* names first, then aliases */
    for (int k = 0; k < lumen_op_row_count(); k++) {
      const lumen_op_info *op = &lumen_op_row_at(k)->info;
      if (kind >= 0 && (int)op->kind != kind) continue;
      if (pass == 0 ? same_name(name, op->name, strlen(op->name)) : in_list(name, op->aliases)) return op;
    }
  return NULL;
}

const lumen_op_info *lumen_op_find(const char *name) { return find(-1, name); }

const lumen_op_info *lumen_op_find_kind(lumen_op_kind kind, const char *name) {
  return (int)kind >= 0 && kind < LUMEN_OP_KIND_COUNT ? find((int)kind, name) : NULL;
}

const lumen_op_option *lumen_op_option_find(const lumen_op_info *op, const char *name) {
  if (!op || !name) return NULL;
  for (int pass = 0; pass < 2; pass++)
    for (int j = 0; j < op->n_options; j++) {
      const lumen_op_option *o = &op->options[j];
      if (pass == 0 ? same_name(name, o->name, strlen(o->name)) : in_list(name, o->aliases)) return o;
    }
  return NULL;
}

int lumen_op_has_cuda(const lumen_op_info *op) {
  const lumen_op_row *r = lumen_op_row_of(op);
  if (!r) return 0;
  return r->dispatch ? lumen_filter_op_has_cuda(r->dispatch) : r->cuda_steps;
}

lumen_status lumen_op_opts_init(const lumen_op_info *op, void *opts, size_t size) {
  const lumen_op_row *r = lumen_op_row_of(op);
  if (!r || !opts || size < op->opts_size) return LUMEN_ERR_INVALID_ARGUMENT;
  memset(opts, 0, size);
  r->init(opts);
  return LUMEN_OK;
}

/* The defaults of a row in an aligned buffer (options structs are small). */
typedef union {
  max_align_t align;
  unsigned char bytes[1024];
} opts_buffer;

static const lumen_op_option *option_at(const lumen_op_info *op, int index) {
  return lumen_op_row_of(op) && index >= 0 && index < op->n_options ? &op->options[index] : NULL;
}

static double field_value(const lumen_op_option *o, const unsigned char *p) {
  switch (o->type) {
    case LUMEN_OPT_INT:
    case LUMEN_OPT_BOOL:
    case LUMEN_OPT_ENUM: {
      int v;
      memcpy(&v, p, sizeof v);
      return v;
    }
    case LUMEN_OPT_UINT64: {
      uint64_t v;
      memcpy(&v, p, sizeof v);
      return (double)v;
    }
    case LUMEN_OPT_DOUBLE:
    case LUMEN_OPT_DOUBLE3: {
      double v;
      memcpy(&v, p, sizeof v);
      return v;
    }
    default: return 0; /* lists: none by default */
  }
}

lumen_status lumen_op_option_default(const lumen_op_info *op, int index, double *value) {
  const lumen_op_option *o = option_at(op, index);
  if (!o || !value || op->opts_size > sizeof(opts_buffer)) return LUMEN_ERR_INVALID_ARGUMENT;
  opts_buffer b;
  lumen_op_opts_init(op, b.bytes, sizeof b.bytes);
  *value = field_value(o, b.bytes + o->offset);
  return LUMEN_OK;
}

lumen_status lumen_op_option_default_text(const lumen_op_info *op, int index, char *buf, size_t size) {
  const lumen_op_option *o = option_at(op, index);
  double v = 0;
  if (!o || !buf || size == 0 || lumen_op_option_default(op, index, &v) != LUMEN_OK) return LUMEN_ERR_INVALID_ARGUMENT;
  if (o->type == LUMEN_OPT_ENUM && v >= 0 && o->enum_names) {
    int n = 0;
    while (o->enum_names[n]) n++;
    snprintf(buf, size, "%s", v < n ? o->enum_names[(int)v] : "?");
  } else if (o->type == LUMEN_OPT_BOOL) {
    snprintf(buf, size, "%s", v ? "on" : "off");
  } else if (o->type == LUMEN_OPT_FLOATS || o->type == LUMEN_OPT_POINTS || o->type == LUMEN_OPT_INT64_3) {
    snprintf(buf, size, "none");
  } else if (isnan(v)) {
    snprintf(buf, size, "auto");
  } else if (o->type == LUMEN_OPT_DOUBLE3) {
    opts_buffer b;
    double d[3];
    lumen_op_opts_init(op, b.bytes, sizeof b.bytes);
    memcpy(d, b.bytes + o->offset, sizeof d);
    snprintf(buf, size, "%g,%g,%g", d[0], d[1], d[2]);
  } else {
    snprintf(buf, size, "%.10g", v);
  }
  return LUMEN_OK;
}

static int is_integer_type(lumen_opt_type t) {
  return t == LUMEN_OPT_INT || t == LUMEN_OPT_UINT64 || t == LUMEN_OPT_INT64_3 || t == LUMEN_OPT_ENUM ||
         t == LUMEN_OPT_BOOL;
}

/* a bound as text: integers without exponent ("16777216"), others as %g */
static void bound_text(const lumen_op_option *o, double v, char *buf, size_t size) {
  if (is_integer_type(o->type) && fabs(v) < 1e18) snprintf(buf, size, "%.0f", v);
  else snprintf(buf, size, "%g", v);
}

void lumen_op_option_range_text(const lumen_op_option *o, char *buf, size_t size) {
  if (!buf || size == 0) return;
  buf[0] = '\0';
  if (!o) return;
  if (o->type == LUMEN_OPT_BOOL) {
    snprintf(buf, size, "0 or 1");
    return;
  }
  if (o->type == LUMEN_OPT_ENUM && o->enum_names) {
    size_t len = 0;
    for (int k = 0; o->enum_names[k] && len < size; k++) {
      int n = snprintf(buf + len, size - len, "%s%s", k ? (o->enum_names[k + 1] ? ", " : " or ") : "",
                       o->enum_names[k]);
      if (n < 0) break;
      len += (size_t)n;
    }
    return;
  }
  if (o->type == LUMEN_OPT_FLOATS) {
    snprintf(buf, size, "finite numbers");
    return;
  }
  char lo[32], hi[32], range[96];
  bound_text(o, o->min, lo, sizeof lo);
  bound_text(o, o->max, hi, sizeof hi);
  int has_min = isfinite(o->min), has_max = isfinite(o->max);
  if (has_min && has_max) {
    if (o->flags & LUMEN_OPT_MIN_OPEN)
      snprintf(range, sizeof range, "in (%s, %s%s", lo, hi, o->flags & LUMEN_OPT_MAX_OPEN ? ")" : "]");
    else
      snprintf(range, sizeof range, "%s..%s", lo, hi);
  } else if (has_min) {
    snprintf(range, sizeof range, "%s %s", o->flags & LUMEN_OPT_MIN_OPEN ? ">" : ">=", lo);
  } else if (has_max) {
    snprintf(range, sizeof range, "%s %s", o->flags & LUMEN_OPT_MAX_OPEN ? "<" : "<=", hi);
  } else {
    snprintf(range, sizeof range, "a finite value");
  }
  snprintf(buf, size, "%s%s%s%s", o->flags & LUMEN_OPT_NAN_OK ? "auto (nan) or " : "",
           o->flags & LUMEN_OPT_ZERO_OK ? "0 or " : "", o->flags & LUMEN_OPT_ODD ? "an odd size " : "", range);
}

int lumen_op_option_value_ok(const lumen_op_option *o, double v) {
  if (!o) return 0;
  if (isnan(v)) return (o->flags & LUMEN_OPT_NAN_OK) != 0;
  if (!isfinite(v)) return 0;
  if (v == 0 && (o->flags & LUMEN_OPT_ZERO_OK)) return 1;
  switch (o->type) {
    case LUMEN_OPT_BOOL: return v == 0 || v == 1;
    case LUMEN_OPT_ENUM: {
      int n = 0;
      while (o->enum_names && o->enum_names[n]) n++;
      return v == floor(v) && v >= 0 && v < n;
    }
    case LUMEN_OPT_FLOATS: return 1;
    default: break;
  }
  if (is_integer_type(o->type) && v != floor(v)) return 0;
  if (o->flags & LUMEN_OPT_ODD && fmod(v, 2.0) != 1.0) return 0;
  if (o->flags & LUMEN_OPT_MIN_OPEN ? !(v > o->min) : !(v >= o->min)) return 0;
  if (o->flags & LUMEN_OPT_MAX_OPEN ? !(v < o->max) : !(v <= o->max)) return 0;
  return 1;
}
