/* The C API's own results, for the binding tests (Python and MEX): fits raw float64 curves with
   lumen_fit_plan_create + lumen_fit_execute[_f64] and writes every output array raw, so the
   tests can compare bit for bit.

   usage: fit_reference MODEL N_POINTS N_CURVES X.bin CP.bin|- DATA.bin f32|f64 BACKEND CONV OUT
          [TR [START0,START1,...|- [LO0:HI0,...|- [FIX0,FIX1,...]]]]
   X.bin, CP.bin, DATA.bin: float64, native byte order. DATA is n_curves x n_points, row-major;
   with f32 it is converted to float32 first and fitted with lumen_fit_execute.
   Writes OUT.params OUT.derived OUT.chi2 OUT.r2 OUT.cilo OUT.cihi (float64), OUT.state
   OUT.iter (int32), and prints "backend_used reason" on stdout. Exit 0, or 1 with the message. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lumen/context.h"
#include "lumen/fit.h"
#include "lumen/models.h"

static void *read_all(const char *path, size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  FILE *f = fopen(path, "rb");
  if (!p || !f || fread(p, 1, bytes, f) != bytes) {
    fprintf(stderr, "fit_reference: cannot read %zu bytes from %s\n", bytes, path);
    exit(1);
  }
  fclose(f);
  return p;
}

static void write_all(const char *prefix, const char *ext, const void *p, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s.%s", prefix, ext);
  FILE *f = fopen(path, "wb");
  if (!f || (bytes && fwrite(p, 1, bytes, f) != bytes)) {
    fprintf(stderr, "fit_reference: cannot write %s\n", path);
    exit(1);
  }
  fclose(f);
}

int main(int argc, char **argv) {
  if (argc < 11) {
    fprintf(stderr, "usage: fit_reference MODEL N_POINTS N_CURVES X.bin CP.bin|- DATA.bin f32|f64 BACKEND CONV OUT "
                    "[TR [STARTS|- [BOUNDS|- [FIXED]]]]\n");
    return 2;
  }
  lumen_ctx *ctx = NULL;
  if (lumen_ctx_create(&ctx) != LUMEN_OK) return 1;
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  if (lumen_model_parse(argv[1], &o.model) != LUMEN_OK) {
    fprintf(stderr, "fit_reference: unknown model %s\n", argv[1]);
    return 1;
  }
  int n = atoi(argv[2]);
  long long nc = atoll(argv[3]);
  double *x = read_all(argv[4], (size_t)n * sizeof(double));
  double *cp = strcmp(argv[5], "-") ? read_all(argv[5], (size_t)n * sizeof(double)) : NULL;
  double *data = read_all(argv[6], (size_t)(n * nc) * sizeof(double));
  int f32 = !strcmp(argv[7], "f32");
  o.backend = argv[8];
  o.conv = !strcmp(argv[9], "trapezoid") ? LUMEN_FIT_CONV_TRAPEZOID : LUMEN_FIT_CONV_EXACT;
  const char *out = argv[10];
  if (argc > 11) o.tr = atof(argv[11]);
  if (argc > 12 && strcmp(argv[12], "-")) {
    char *s = argv[12];
    for (int k = 0; k < LUMEN_FIT_MAX_PARAMS && s && *s; ++k) {
      o.start[k] = strtod(s, &s);
      if (*s == ',') ++s;
    }
  }
  if (argc > 13 && strcmp(argv[13], "-")) {
    char *s = argv[13];
    for (int k = 0; k < LUMEN_FIT_MAX_PARAMS && s && *s; ++k) {
      o.lo[k] = strtod(s, &s);
      if (*s == ':') ++s;
      o.hi[k] = strtod(s, &s);
      if (*s == ',') ++s;
    }
  }
  if (argc > 14) {
    char *s = argv[14];
    for (int k = 0; k < LUMEN_FIT_MAX_PARAMS && s && *s; ++k) {
      o.fixed[k] = (unsigned char)strtol(s, &s, 10);
      if (*s == ',') ++s;
    }
  }
  lumen_fit_plan *plan = NULL;
  if (lumen_fit_plan_create(ctx, &o, n, x, cp, &plan) != LUMEN_OK) {
    fprintf(stderr, "fit_reference: %s\n", lumen_ctx_last_error(ctx));
    return 1;
  }
  int np = lumen_model_param_count(o.model), nd = lumen_fit_derived_count(o.model);
  size_t c = (size_t)nc;
  double *params = calloc(c * np + 1, sizeof(double)), *derived = calloc(c * nd + 1, sizeof(double));
  double *chi2 = calloc(c + 1, sizeof(double)), *r2 = calloc(c + 1, sizeof(double));
  double *cilo = calloc(c * np + 1, sizeof(double)), *cihi = calloc(c * np + 1, sizeof(double));
  int32_t *state = calloc(c + 1, sizeof(int32_t)), *iters = calloc(c + 1, sizeof(int32_t));
  lumen_fit_results r = {
      .params = params, .derived = nd ? derived : NULL, .chi2 = chi2, .r2 = r2, .ci_lo = cilo, .ci_hi = cihi,
      .state = state, .iterations = iters};
  lumen_status st;
  if (f32) {
    float *d32 = malloc(c * n * sizeof(float) + 1);
    for (size_t i = 0; i < c * n; ++i) d32[i] = (float)data[i];
    st = lumen_fit_execute(ctx, plan, nc, d32, NULL, &r);
    free(d32);
  } else {
    st = lumen_fit_execute_f64(ctx, plan, nc, data, NULL, &r);
  }
  if (st != LUMEN_OK) {
    fprintf(stderr, "fit_reference: %s\n", lumen_ctx_last_error(ctx));
    return 1;
  }
  write_all(out, "params", params, c * np * sizeof(double));
  write_all(out, "derived", derived, c * nd * sizeof(double));
  write_all(out, "chi2", chi2, c * sizeof(double));
  write_all(out, "r2", r2, c * sizeof(double));
  write_all(out, "cilo", cilo, c * np * sizeof(double));
  write_all(out, "cihi", cihi, c * np * sizeof(double));
  write_all(out, "state", state, c * sizeof(int32_t));
  write_all(out, "iter", iters, c * sizeof(int32_t));
  printf("%s %s\n", r.backend_used, r.reason);
  lumen_fit_plan_destroy(plan);
  lumen_ctx_destroy(ctx);
  free(params); free(derived); free(chi2); free(r2); free(cilo); free(cihi); free(state); free(iters);
  free(x); free(cp); free(data);
  return 0;
}
