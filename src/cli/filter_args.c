/* The op options of lumen filter and lumen segment, read by the registry's descriptors
   (src/filter/op_table.c): --NAME for every option (dashes for underscores, the aliases too),
   --NAME alone and --no-NAME for bools, each value checked against the option's range before
   anything is read (a usage error naming the option, its value and the range); filter_cli.h. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/filter_cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO /* the image commands' options and runners: not in a build without NIfTI/JSON I/O */

int lumen_opcli_begin(const char *cmd, const lumen_op_info *op, fvals *f) {
  f->op = op;
  f->args = NULL;
  if (!f->ctx && lumen_ctx_create(&f->ctx) != LUMEN_OK) {
    lumen_cli_error(cmd, "out of memory");
    return 0;
  }
  if (lumen_op_args_create(f->ctx, op->name, &f->args) == LUMEN_OK) return 1;
  lumen_cli_error(cmd, "%s", lumen_ctx_last_error(f->ctx));
  return 0;
}

void lumen_opcli_free(fvals *f) {
  lumen_op_args_free(f->args);
  lumen_ctx_destroy(f->ctx);
  f->args = NULL;
  f->ctx = NULL;
}

/* "--OPT is V, expected R" or "--OPT: NAME is V, expected R" */
static int range_error(const char *cmd, lumen_opcli_style style, const char *opt, const lumen_op_option *o, double v) {
  char range[256];
  lumen_op_option_range_text(o, range, sizeof range);
  if (style == LUMEN_OPCLI_SEGMENT) lumen_cli_error(cmd, "%s: %s is %g, expected %s", opt, o->name, v, range);
  else lumen_cli_error(cmd, "%s is %g, expected %s", opt, v, range);
  return -1;
}

static int enum_error(const char *cmd, lumen_opcli_style style, const char *opt, const lumen_op_option *o,
                      const char *text) {
  char names[256] = "";
  size_t len = 0;
  for (int k = 0; o->enum_names[k] && len < sizeof names; k++) {
    int n = snprintf(names + len, sizeof names - len, "%s%s", k ? ", " : "", o->enum_names[k]);
    if (n < 0) break;
    len += (size_t)n;
  }
  if (style == LUMEN_OPCLI_SEGMENT) {
    lumen_cli_error(cmd, "%s is '%s', expected one of %s", opt, text, names);
  } else {
    lumen_op_option_range_text(o, names, sizeof names);
    lumen_cli_error(cmd, "%s is '%s', expected %s", opt, text, names);
  }
  return -1;
}

/* The value of a scalar option as the command line reads it (its messages), then its range. */
static int check_value(const char *cmd, lumen_opcli_style style, const char *opt, const lumen_op_option *o,
                       const char *text) {
  double v = 0;
  if (o->type == LUMEN_OPT_ENUM) {
    for (int k = 0; o->enum_names[k]; k++)
      if (strcmp(text, o->enum_names[k]) == 0) return 1;
    return enum_error(cmd, style, opt, o, text);
  }
  if (o->type == LUMEN_OPT_INT) {
    int n;
    if (!lumen_imgcli_int(cmd, opt, text, &n)) return -1;
    v = n;
  } else if (o->type == LUMEN_OPT_DOUBLE) {
    if ((o->flags & LUMEN_OPT_NAN_OK) && (strcmp(text, "auto") == 0 || strcmp(text, "nan") == 0)) return 1;
    if (!lumen_imgcli_number(cmd, opt, text, &v)) return -1;
  } else if (o->type == LUMEN_OPT_UINT64) {
    if (!lumen_imgcli_number(cmd, opt, text, &v)) return -1;
    if (!(v >= 0 && v < 18446744073709551616.0 && v == floor(v))) {
      lumen_cli_error(cmd, "%s is '%s', expected an integer from 0 to 2^64-1", opt, text);
      return -1;
    }
    return 1;
  } else {
    return 1; /* lists: the library's reading decides */
  }
  return lumen_op_option_value_ok(o, v) ? 1 : range_error(cmd, style, opt, o, v);
}

int lumen_opcli_opt(const char *cmd, lumen_opcli_style style, fvals *f, int argc, char **argv, int *i) {
  const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  if (strncmp(a, "--", 2) != 0 || !f->op) return 0;
  const lumen_op_option *o = lumen_op_option_find(f->op, a + 2);
  int negated = 0;
  if (!o && strncmp(a + 2, "no-", 3) == 0) {
    o = lumen_op_option_find(f->op, a + 5);
    negated = 1;
    if (o && o->type != LUMEN_OPT_BOOL) o = NULL;
  }
  if (!o) return 0;
  lumen_status s;
  if (o->type == LUMEN_OPT_BOOL) {
    char key[128];
    snprintf(key, sizeof key, "%s%s", negated ? "no_" : "", o->name);
    s = lumen_op_args_set(f->ctx, f->args, key, NULL);
  } else {
    LUMEN_IMGCLI_TAKE_VALUE(cmd, a, v, i);
    if (check_value(cmd, style, a, o, v) < 0) return -1;
    s = lumen_op_args_set(f->ctx, f->args, o->name, v);
  }
  if (s != LUMEN_OK) lumen_cli_error(cmd, "%s: %s", a, lumen_ctx_last_error(f->ctx));
  return s == LUMEN_OK ? 1 : -1;
}

/* ------------------------------------------------------------------ --help and messages */

static int kind_in(const lumen_op_info *op, int kind, int kind2) {
  return (int)op->kind == kind || (int)op->kind == kind2;
}

void lumen_opcli_op_names(char *buf, size_t size, int kind, int kind2) {
  size_t len = 0;
  buf[0] = '\0';
  for (int k = 0; k < lumen_op_count() && len < size; k++) {
    const lumen_op_info *op = lumen_op_at(k);
    if (!kind_in(op, kind, kind2)) continue;
    int n = snprintf(buf + len, size - len, "%s%s", len ? ", " : "", op->name);
    if (n < 0) break;
    len += (size_t)n;
  }
}

/* "--sigma S (1)", "--mode reflect|nearest|... (nearest)", "--binary", "--no-fill-holes" */
static void option_usage(const lumen_op_info *op, int j, char *buf, size_t size) {
  const lumen_op_option *o = &op->options[j];
  char name[64], def[64], meta[128];
  snprintf(name, sizeof name, "%s", o->name);
  for (char *p = name; *p; p++)
    if (*p == '_') *p = '-';
  lumen_op_option_default_text(op, j, def, sizeof def);
  switch (o->type) {
    case LUMEN_OPT_BOOL:
      snprintf(buf, size, strcmp(def, "on") == 0 ? "--no-%s" : "--%s", name);
      return;
    case LUMEN_OPT_ENUM: {
      size_t len = 0;
      meta[0] = '\0';
      for (int k = 0; o->enum_names[k] && len < sizeof meta; k++) {
        int n = snprintf(meta + len, sizeof meta - len, "%s%s", k ? "|" : "", o->enum_names[k]);
        if (n < 0) break;
        len += (size_t)n;
      }
      break;
    }
    case LUMEN_OPT_DOUBLE3:
    case LUMEN_OPT_INT64_3: snprintf(meta, sizeof meta, "X[,Y[,Z]]"); break;
    case LUMEN_OPT_FLOATS: snprintf(meta, sizeof meta, "V,V,..."); break;
    case LUMEN_OPT_POINTS: snprintf(meta, sizeof meta, "X,Y[,Z]"); break;
    default: snprintf(meta, sizeof meta, "%c", o->name[0] >= 'a' && o->name[0] <= 'z' ? o->name[0] - 32 : 'V');
  }
  if (o->type == LUMEN_OPT_FLOATS || o->type == LUMEN_OPT_POINTS || o->type == LUMEN_OPT_INT64_3)
    snprintf(buf, size, "--%s %s", name, meta);
  else
    snprintf(buf, size, "--%s %s (%s)", name, meta, def);
}

void lumen_opcli_help_ops(FILE *out, int kind, int kind2) {
  for (int k = 0; k < lumen_op_count(); k++) {
    const lumen_op_info *op = lumen_op_at(k);
    if (!kind_in(op, kind, kind2)) continue;
    char head[96];
    snprintf(head, sizeof head, "%s%s%s%s", op->name, op->aliases ? " (" : "", op->aliases ? op->aliases : "",
             op->aliases ? ")" : "");
    fprintf(out, "  %-18s %s%s\n", head, op->doc, lumen_op_has_cuda(op) ? "" : " [CPU]");
    int col = 0;
    for (int j = 0; j < op->n_options; j++) {
      char u[256];
      option_usage(op, j, u, sizeof u);
      int w = (int)strlen(u) + 1;
      if (col == 0 || col + w > 100) {
        fprintf(out, "%s                     ", col ? "\n" : "");
        col = 21;
      }
      fprintf(out, " %s", u);
      col += w;
    }
    if (col) fputc('\n', out);
  }
}

double lumen_opcli_value(const fvals *f, const char *option) {
  const lumen_op_option *o = lumen_op_option_find(f->op, option);
  const char *p = (const char *)lumen_op_args_opts(f->args);
  if (!o || !p) return NAN;
  if (o->type == LUMEN_OPT_DOUBLE) {
    double v;
    memcpy(&v, p + o->offset, sizeof v);
    return v;
  }
  int v;
  memcpy(&v, p + o->offset, sizeof v);
  return v;
}

int lumen_filtercli_check_values(const fvals *f) {
  if (strcmp(f->op->name, "dog") == 0) {
    double low = lumen_opcli_value(f, "low_sigma"), high = lumen_opcli_value(f, "high_sigma");
    if (high != 0.0 && !(high > low)) {
      lumen_cli_error("filter", "--high-sigma is %g, expected > --low-sigma (%g), or 0 (= 1.6 x --low-sigma)", high,
                      low);
      return 0;
    }
  }
  return 1;
}
#endif /* LUMEN_HAVE_IO */
