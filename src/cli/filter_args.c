/* lumen filter's op options: parsed into fvals and checked against the library's ranges before
   anything is read; filter_cli.h. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/filter_cli.h"

#define CMD "filter"

static int parse_list(const char *opt, const char *text, double *v, int max, int *n) {
  *n = 0;
  const char *p = text;
  while (*p) {
    char *end;
    errno = 0;
    double x = strtod(p, &end);
    if (end == p || errno == ERANGE || *n >= max) {
      lumen_cli_error(CMD, "%s expects up to %d numbers separated by commas, got '%s'", opt, max, text);
      return 0;
    }
    v[(*n)++] = x;
    p = end;
    if (*p == ',') p++;
    else if (*p) {
      lumen_cli_error(CMD, "%s expects numbers separated by commas, got '%s'", opt, text);
      return 0;
    }
  }
  if (*n == 0) {
    lumen_cli_error(CMD, "%s expects numbers, got '%s'", opt, text);
    return 0;
  }
  return 1;
}

/* The op options that take a number or are switches: where the value goes in fvals and which
   has_ flag says it was given (NO_FLAG: none; the field's zero is its default). */
typedef enum { FOPT_DOUBLE, FOPT_INT, FOPT_SWITCH } fopt_kind;
typedef struct {
  const char *name;
  fopt_kind kind;
  size_t field, flag;
} fopt;
#define NO_FLAG SIZE_MAX
#define F_DBL(name, field, flag) {name, FOPT_DOUBLE, offsetof(fvals, field), offsetof(fvals, flag)}
#define F_INT(name, field, flag) {name, FOPT_INT, offsetof(fvals, field), offsetof(fvals, flag)}
static const fopt filter_opts[] = {
  F_DBL("--sigma", sigma, has_sigma),
  F_DBL("--truncate", truncate, has_truncate),
  F_DBL("--cval", cval, has_cval),
  F_DBL("--low-sigma", low, has_low),
  F_DBL("--high-sigma", high, has_high),
  F_DBL("--gamma", gamma, has_gamma),
  F_DBL("--max-value", max_value, has_max),
  F_DBL("--d0", d0, has_d0),
  F_DBL("--width", width, has_width),
  F_DBL("--k", k, has_k),
  F_DBL("--r", r, has_r),
  F_DBL("--alpha", alpha, has_alpha),
  F_INT("--spatial-dims", spatial, has_spatial),
  F_INT("--size", size, has_size),
  F_INT("--bins", bins, has_bins),
  F_INT("--order", order, has_order),
  F_INT("--window", window, has_window),
  F_INT("--foreground", fg, has_fg),
  F_INT("--radius", radius, has_radius),
  F_INT("--connectivity", conn, has_conn),
  {"--contrast", FOPT_DOUBLE, offsetof(fvals, contrast), NO_FLAG},
  {"--brightness", FOPT_DOUBLE, offsetof(fvals, brightness), NO_FLAG},
  {"--ddof", FOPT_INT, offsetof(fvals, ddof), NO_FLAG},
  {"--discrete", FOPT_SWITCH, offsetof(fvals, discrete), NO_FLAG},
  {"--correlate", FOPT_SWITCH, offsetof(fvals, correlate), NO_FLAG},
  {"--binary", FOPT_SWITCH, offsetof(fvals, binary), NO_FLAG},
  {"--output-threshold", FOPT_SWITCH, offsetof(fvals, outthr), NO_FLAG},
};
#undef F_DBL
#undef F_INT

/* An option of filter_opts: 1 consumed, 0 not one of them, -1 bad value. */
static int filter_table_opt(fvals *f, const char *a, const char *v, int *i) {
  const fopt *o = NULL;
  for (size_t k = 0; k < sizeof filter_opts / sizeof filter_opts[0] && !o; k++)
    if (strcmp(a, filter_opts[k].name) == 0) o = &filter_opts[k];
  if (!o) return 0;
  void *field = (char *)f + o->field;
  if (o->kind == FOPT_SWITCH) return *(int *)field = 1;
  LUMEN_IMGCLI_TAKE_VALUE(CMD, a, v, i);
  int ok = o->kind == FOPT_DOUBLE ? lumen_imgcli_number(CMD, a, v, field) : lumen_imgcli_int(CMD, a, v, field);
  if (!ok) return -1;
  if (o->flag != NO_FLAG) *(int *)((char *)f + o->flag) = 1;
  return 1;
}

/* --mode, --units, --element: a name. 1 consumed, 0 not one of them, -1 bad value. */
static int filter_name_opt(fvals *f, const char *a, const char *v, int *i) {
  if (strcmp(a, "--mode") != 0 && strcmp(a, "--units") != 0 && strcmp(a, "--element") != 0) return 0;
  LUMEN_IMGCLI_TAKE_VALUE(CMD, a, v, i);
  if (strcmp(a, "--mode") == 0) {
    if (lumen_boundary_parse(v, &f->mode) != LUMEN_OK) {
      lumen_cli_error(CMD, "--mode is '%s', expected reflect, nearest, constant, wrap or mirror", v);
      return -1;
    }
    return f->has_mode = 1;
  }
  if (strcmp(a, "--units") == 0) {
    if (strcmp(v, "voxels") == 0) f->units = LUMEN_UNITS_VOXELS;
    else if (strcmp(v, "mm") == 0) f->units = LUMEN_UNITS_MM;
    else {
      lumen_cli_error(CMD, "--units is '%s', expected voxels or mm", v);
      return -1;
    }
    return f->has_units = 1;
  }
  static const char *const el[] = {"disk", "square", "ball", "cube"};
  for (int k = 0; k < 4; k++)
    if (strcmp(v, el[k]) == 0) {
      f->element = (lumen_element)k;
      return f->has_element = 1;
    }
  lumen_cli_error(CMD, "--element is '%s', expected disk, square, ball or cube", v);
  return -1;
}

/* --kernel V,V,...: the values as float. 1, or -1 (message printed, or out of memory). */
static int parse_kernel(fvals *f, const char *opt, const char *v) {
  int n = 0, cap = 1;
  for (const char *p = v; *p; p++) cap += *p == ',';
  double *tmp = malloc((size_t)cap * sizeof *tmp);
  free(f->kernel);
  f->kernel = malloc((size_t)cap * sizeof *f->kernel);
  if (!tmp || !f->kernel || !parse_list(opt, v, tmp, cap, &n)) {
    free(tmp);
    return -1;
  }
  for (int k = 0; k < n; k++) f->kernel[k] = (float)tmp[k];
  f->nkernel = n;
  free(tmp);
  return 1;
}

/* --sigma-axis, --kernel, --kernel-dims: a comma list. 1 consumed, 0 not one of them, -1 bad value. */
static int filter_list_opt(fvals *f, const char *a, const char *v, int *i) {
  if (strcmp(a, "--sigma-axis") != 0 && strcmp(a, "--kernel") != 0 && strcmp(a, "--kernel-dims") != 0) return 0;
  LUMEN_IMGCLI_TAKE_VALUE(CMD, a, v, i);
  if (strcmp(a, "--kernel") == 0) return parse_kernel(f, a, v);
  double d[3];
  int n;
  if (!parse_list(a, v, d, 3, &n)) return -1;
  if (strcmp(a, "--sigma-axis") == 0) {
    memcpy(f->sigma_axis, d, (size_t)n * sizeof d[0]);
    return f->has_sigma_axis = 1;
  }
  f->kndim = n;
  for (int k = 0; k < n; k++) f->kdims[k] = (int64_t)d[k];
  return 1;
}

/* Op-specific options. Returns 1 consumed, 0 unknown, -1 bad value. */
int lumen_filtercli_opt(fvals *f, int argc, char **argv, int *i) {
  const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  int r = filter_table_opt(f, a, v, i);
  if (r == 0) r = filter_name_opt(f, a, v, i);
  if (r == 0) r = filter_list_opt(f, a, v, i);
  return r;
}

/* ---- option values: checked against the library's rules before anything is read, so a bad value
   is a usage error (exit 2) that names the option, not a failure of the first image */

#define REQ(cond, opt, value, expected) \
  if (!lumen_imgcli_require(CMD, (cond), opt, (double)(value), expected)) return 0

static int odd_window(int w, int max) { return w >= 1 && (w & 1) && w <= max; }

static int check_smoothing(const char *op, const fvals *f) {
  if (f->has_truncate) REQ(isfinite(f->truncate) && f->truncate > 0, "--truncate", f->truncate, "> 0");
  if (strcmp(op, "dog") == 0) {
    lumen_dog_opts o;
    lumen_dog_opts_init(&o);
    if (f->has_low) o.low_sigma = f->low;
    if (f->has_sigma) o.low_sigma = f->sigma;
    if (f->has_high) o.high_sigma = f->high;
    REQ(isfinite(o.low_sigma) && o.low_sigma > 0, f->has_sigma ? "--sigma" : "--low-sigma", o.low_sigma, "> 0");
    if (f->has_high && o.high_sigma != 0.0 && !(isfinite(o.high_sigma) && o.high_sigma > o.low_sigma)) {
      lumen_cli_error(CMD, "--high-sigma is %g, expected > --low-sigma (%g), or 0 (= 1.6 x --low-sigma)", o.high_sigma,
                      o.low_sigma);
      return 0;
    }
    return 1;
  }
  if (f->has_sigma) REQ(isfinite(f->sigma) && f->sigma > 0, "--sigma", f->sigma, "> 0");
  for (int a = 0; a < 3 && f->has_sigma_axis && op[0] == 'g'; a++)
    REQ(isfinite(f->sigma_axis[a]) && f->sigma_axis[a] >= 0, "--sigma-axis value", f->sigma_axis[a],
        "> 0 (or 0 = --sigma)");
  return 1;
}

static int check_window_ops(const char *op, const fvals *f) {
  if (strcmp(op, "median") == 0 && f->has_size)
    REQ(odd_window(f->size, 255), "--size", f->size, "an odd size 1..255");
  if (strcmp(op, "sauvola") == 0) {
    if (f->has_window) REQ(odd_window(f->window, 200001), "--window", f->window, "an odd size >= 1");
    if (f->has_k) REQ(isfinite(f->k), "--k", f->k, "a finite value");
    if (f->has_r) REQ(isfinite(f->r) && f->r > 0, "--r", f->r, "> 0");
    if (f->has_fg) REQ(f->fg >= 1 && f->fg <= 255, "--foreground", f->fg, "1..255");
  }
  if (strcmp(op, "local_variance") == 0 || strcmp(op, "variance_binarize") == 0) {
    if (f->has_window) REQ(odd_window(f->window, 200001), "--window", f->window, "an odd size >= 1");
    if (f->has_alpha) REQ(isfinite(f->alpha) && f->alpha >= 0, "--alpha", f->alpha, ">= 0");
  }
  return 1;
}

static int check_morph(const char *op, const fvals *f) {
  if (lumen_filtercli_morph_op(op) < 0) return 1;
  lumen_element el = f->has_element ? f->element : LUMEN_ELEMENT_DISK;
  if (el == LUMEN_ELEMENT_DISK || el == LUMEN_ELEMENT_BALL) {
    if (f->has_radius) REQ(f->radius >= 0 && f->radius <= 1000, "--radius", f->radius, "0..1000");
  } else if (f->has_size) {
    REQ(odd_window(f->size, 200001), "--size", f->size, "an odd size >= 1");
  }
  return 1;
}

static int check_levels(const char *op, const fvals *f) {
  if (strcmp(op, "gamma") == 0) {
    if (f->has_gamma) REQ(isfinite(f->gamma) && f->gamma > 0, "--gamma", f->gamma, "> 0");
    if (f->has_max) REQ(isfinite(f->max_value) && f->max_value > 0, "--max-value", f->max_value, "> 0");
  }
  if (strcmp(op, "contrast") == 0) {
    REQ(isfinite(f->contrast), "--contrast", f->contrast, "a finite value");
    REQ(isfinite(f->brightness), "--brightness", f->brightness, "a finite value");
    if (f->has_bins) REQ(f->bins >= 0, "--bins", f->bins, "0 (auto) or > 0");
  }
  if (strcmp(op, "bandpass") == 0) {
    if (f->has_d0) REQ(isfinite(f->d0) && f->d0 >= 0, "--d0", f->d0, ">= 0");
    if (f->has_width) REQ(isfinite(f->width) && f->width > 0, "--width", f->width, "> 0");
    if (f->has_order) REQ(f->order >= 1 && f->order <= 64, "--order", f->order, "1..64");
  }
  if (strcmp(op, "otsu") == 0 && f->has_bins)
    REQ(f->bins >= 0 && f->bins <= (1 << 24), "--bins", f->bins, "0 (auto) or 1..2^24");
  if (strcmp(op, "entropy") == 0 && f->has_bins)
    REQ(f->bins >= 0 && f->bins <= 65536, "--bins", f->bins, "0..65536");
  if (strcmp(op, "mutual_information") == 0 && f->has_bins)
    REQ(f->bins >= 1 && f->bins <= 4096, "--bins", f->bins, "1..4096");
  if (strcmp(op, "variance") == 0) REQ(f->ddof == 0 || f->ddof == 1, "--ddof", f->ddof, "0 or 1");
  return 1;
}

/* 1 when the values of the op's options are within the library's ranges that do not depend on
   the image (the rest is checked when the op runs: exit 2 as well). */
int lumen_filtercli_check_values(const char *op, const fvals *f) {
  int region = strcmp(op, "fill_holes") == 0 || strcmp(op, "label") == 0 || strcmp(op, "largest_component") == 0;
  if (region && f->has_conn) REQ(f->conn >= 1, "--connectivity", f->conn, "1..the spatial dims");
  if (strcmp(op, "gaussian") == 0 || strcmp(op, "dog") == 0 || strcmp(op, "log") == 0)
    if (!check_smoothing(op, f)) return 0;
  return check_window_ops(op, f) && check_morph(op, f) && check_levels(op, f);
}
#undef REQ
