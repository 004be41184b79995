/* lumen_fit: MATLAB / Octave MEX interface to lumen's batched fitting (include/lumen/fit.h),
   shaped like Gpufit's MATLAB binding.

   [parameters, states, chi_squares, n_iterations, time] = lumen_fit(data, weights, model, ...
       initial_parameters, constraints, tolerance, max_n_iterations, parameters_to_fit, ...
       user_info [, options])

   data               n_points x n_fits, single or double (one fit per column). Single data is
                      fitted by lumen_fit_execute, double by lumen_fit_execute_f64.
   weights            [] or n_points x 1 or n_points x n_fits (1/sigma^2).
   model              a lumen model name ('tofts', 'etofts', 'patlak', '2cum', '2cxm', 'fxr', 'auc',
                      'vfa', 'vfa-linear', 'vfa-2pt', 'ir', 'sr') or a Gpufit ModelID of
                      ROCKETSHIP's fork: 17 PATLAK, 18 TOFTS, 19 TOFTS_EXTENDED, 21 2CXM as (E, ve, vp, Fp).
   initial_parameters [] or n_par x 1 or n_par x n_fits, FIT parameter order (2cxm: E, ve, vp, Fp);
                      NaN = the model's default / closed-form linear start.
   constraints        [] or 2 n_par x 1 or 2 n_par x n_fits: (lo, hi) per parameter; NaN = the
                      model's default bound, -Inf / Inf = unbounded.
   tolerance          [] (1e-6) or a positive scalar.  max_n_iterations: [] (200) or a scalar.
   parameters_to_fit  [] or n_par x 1: 0 holds the parameter at its initial value.
   user_info          DCE models: [times in minutes; plasma AIF in mM] (2 n_points values, as
                      ROCKETSHIP's Gpufit call); vfa*: flip angles in radians; ir / sr: times in s.
   options            optional struct: backend ('auto', 'cuda', 'cpu', 'cpu_single', 'standard',
                      ROCKETSHIP aliases), conv ('exact' | 'trapezoid'), precision ('float32' |
                      'float64'), bounds_preset ('physical' (default) | 'rocketship': the default
                      bounds where constraints give NaN), tr (s), r1, threads, linear_start (0/1).

   parameters         n_params x n_fits double (public order: lumen_model_param_name; numeric
                      2CXM id: E, ve, vp, Fp); states 1 x n_fits int32 (0 converged, 1 max
                      iterations, 2 singular, 3 invalid input, 4 start out of bounds, 5 not finite,
                      6 not fitted, 7 at bound: converged with a free parameter on one of its bounds,
                      values kept); chi_squares 1 x n_fits double; n_iterations 1 x n_fits int32;
                      time: seconds spent in lumen_fit_execute.

   Errors are raised with identifiers: lumen:invalidArgument for arguments the MEX rejects,
   lumen:<status name> (lumen:invalid_argument, lumen:no_device, ...) with the C library's
   message for calls that fail in lumen. Fits sharing initial parameters, constraints and weights
   (consecutive columns) share one lumen plan. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mex.h"
#include "lumen/context.h"
#include "lumen/fit.h"
#include "lumen/models.h"

#define ID_ARG "lumen:invalidArgument"
#define UNBOUNDED 1e30

static lumen_ctx *g_ctx = NULL;
static lumen_fit_plan *g_plan = NULL;  /* the plan in flight, destroyed before any error */

static void cleanup(void) {
  if (g_plan) lumen_fit_plan_destroy(g_plan);
  g_plan = NULL;
}

static void at_exit(void) {
  cleanup();
  if (g_ctx) lumen_ctx_destroy(g_ctx);
  g_ctx = NULL;
}

static void fail_arg(const char *fmt, const char *a) {
  char msg[512];
  snprintf(msg, sizeof msg, fmt, a);
  cleanup();
  mexErrMsgIdAndTxt(ID_ARG, "%s", msg);
}

static void fail_lumen(lumen_status st) {
  char id[96], msg[1024];
  snprintf(id, sizeof id, "lumen:%s", lumen_status_name(st));
  snprintf(msg, sizeof msg, "%s", lumen_ctx_last_error(g_ctx));
  if (!msg[0]) snprintf(msg, sizeof msg, "%s", lumen_status_string(st));
  lumen_ctx_clear_error(g_ctx);
  cleanup();
  mexErrMsgIdAndTxt(id, "%s", msg);
}

static int is_empty(const mxArray *a) { return a == NULL || mxIsEmpty(a); }

static void require_real(const mxArray *a, const char *name) {
  if (!(mxIsDouble(a) || mxIsSingle(a)) || mxIsComplex(a) || mxIsSparse(a))
    fail_arg("%s must be a real, full single or double array", name);
}

/* A copy of a numeric array as doubles (mxMalloc'd, freed by MATLAB at the end of the call). */
static double *as_double(const mxArray *a, const char *name) {
  require_real(a, name);
  size_t n = mxGetNumberOfElements(a);
  double *out = mxMalloc((n ? n : 1) * sizeof(double));
  if (mxIsDouble(a)) {
    memcpy(out, mxGetData(a), n * sizeof(double));
  } else {
    const float *f = (const float *)mxGetData(a);
    for (size_t i = 0; i < n; ++i) out[i] = f[i];
  }
  return out;
}

static double scalar(const mxArray *a, const char *name) {
  if (mxGetNumberOfElements(a) != 1) fail_arg("%s must be a scalar", name);
  double *v = as_double(a, name);
  return v[0];
}

/* A per-fit block: NULL (not given), shared (one column) or per fit (n_fits columns). */
typedef struct {
  const double *v;
  size_t rows;
  int per_fit;
} block;

static block get_block(const mxArray *a, const char *name, size_t rows, size_t n_fits) {
  block b = {NULL, rows, 0};
  if (is_empty(a)) return b;
  require_real(a, name);
  size_t r = mxGetM(a), c = mxGetN(a);
  if (r == rows && c == 1) {
    b.v = as_double(a, name);
  } else if (r == rows && c == n_fits) {
    b.v = as_double(a, name);
    b.per_fit = n_fits > 1;
  } else if (r == 1 && c == rows && rows > 1) { /* a row vector for a shared block */
    b.v = as_double(a, name);
  } else {
    char what[160];
    snprintf(what, sizeof what, "%%s must be [] or %zu x 1 or %zu x %zu (got %zu x %zu)", rows, rows, n_fits, r, c);
    fail_arg(what, name);
  }
  return b;
}

static const double *col(const block *b, size_t j) {
  return b->v ? b->v + (b->per_fit ? j * b->rows : 0) : NULL;
}

static int same_col(const block *b, size_t i, size_t j) {
  if (!b->v || !b->per_fit) return 1;
  return memcmp(col(b, i), col(b, j), b->rows * sizeof(double)) == 0;
}

static void get_string(const mxArray *a, char *buf, size_t size, const char *name) {
  if (!mxIsChar(a) || mxGetString(a, buf, (mwSize)size) != 0) fail_arg("%s must be a character string", name);
}

void mexFunction(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]) {
  if (!g_ctx) {
    if (lumen_ctx_create(&g_ctx) != LUMEN_OK) mexErrMsgIdAndTxt("lumen:out_of_memory", "lumen_fit: no context");
    mexAtExit(at_exit);
  }
  lumen_ctx_clear_error(g_ctx);
  if (nrhs < 9 || nrhs > 10)
    fail_arg("%s", "usage: [p, states, chi2, iterations, time] = lumen_fit(data, weights, model, "
                   "initial_parameters, constraints, tolerance, max_n_iterations, parameters_to_fit, "
                   "user_info [, options])");
  if (nlhs > 5) fail_arg("%s", "at most 5 outputs");

  const mxArray *data = prhs[0];
  require_real(data, "data");
  if (mxGetNumberOfDimensions(data) != 2) fail_arg("%s must be n_points x n_fits", "data");
  size_t n = mxGetM(data), n_fits = mxGetN(data);
  if (n < 1) fail_arg("%s has no points", "data");
  int single = mxIsSingle(data);

  lumen_fit_options o;
  lumen_fit_options_init(&o);
  int gpufit_2cxm = 0;
  if (mxIsChar(prhs[2])) {
    char name[64];
    get_string(prhs[2], name, sizeof name, "model");
    lumen_status st = lumen_model_parse(name, &o.model);
    if (st != LUMEN_OK) fail_arg("model '%s' is unknown (tofts, etofts, patlak, 2cum, 2cxm, fxr, auc, vfa, "
                                 "vfa-linear, vfa-2pt, ir, sr)", name);
  } else {
    double id = scalar(prhs[2], "model");
    const char *name = id == 17 ? "patlak" : id == 18 ? "tofts" : id == 19 ? "etofts" : id == 21 ? "2cxm" : NULL;
    if (!name) fail_arg("%s: Gpufit ModelID served are 17 PATLAK, 18 TOFTS, 19 TOFTS_EXTENDED, 21 "
                        "TWO_COMPARTMENT_EXCHANGE; or pass a lumen model name", "model");
    lumen_model_parse(name, &o.model);
    gpufit_2cxm = id == 21;
  }
  int npf = lumen_fit_param_count(o.model);     /* fit parameters */
  int npub = lumen_model_param_count(o.model);  /* public parameters */
  int nd = lumen_fit_derived_count(o.model);

  block w = get_block(prhs[1], "weights", n, n_fits);
  block ip = get_block(prhs[3], "initial_parameters", (size_t)npf, n_fits);
  block cons = get_block(prhs[4], "constraints", (size_t)2 * npf, n_fits);
  if (!is_empty(prhs[5])) o.tolerance = scalar(prhs[5], "tolerance");
  if (!is_empty(prhs[6])) {
    double m = scalar(prhs[6], "max_n_iterations");
    if (!(m >= 0 && m <= 1e9) || m != floor(m)) fail_arg("%s must be a non-negative integer", "max_n_iterations");
    o.max_iterations = (int)m;
  }
  block ptf = get_block(prhs[7], "parameters_to_fit", (size_t)npf, 1);
  for (int k = 0; k < npf && ptf.v; ++k) o.fixed[k] = ptf.v[k] == 0;

  /* user info: the sample grid (and the AIF for DCE models) */
  if (is_empty(prhs[8])) fail_arg("%s is required: [times (min); AIF (mM)] for DCE models, flip angles "
                                  "(rad) for vfa, times (s) for ir / sr", "user_info");
  double *ui = as_double(prhs[8], "user_info");
  size_t nui = mxGetNumberOfElements(prhs[8]);
  const double *x = ui, *cp = NULL;
  int dce = o.model < LUMEN_MODEL_VFA;  /* tofts .. auc take an AIF */
  if (nui == 2 * n) {
    cp = ui + n;
  } else if (nui == n && dce) {
    char what[240];
    snprintf(what, sizeof what, "%%s has %zu values (one row) but model '%s' needs the AIF too: user_info = [times "
             "(min); AIF (mM)], 2 x n_points = %zu values", nui, lumen_model_name(o.model), 2 * n);
    fail_arg(what, "user_info");
  } else if (nui != n) {
    char what[200];
    snprintf(what, sizeof what, "%%s has %zu values, expected 2 x n_points = %zu ([times; AIF]) or n_points = %zu",
             nui, 2 * n, n);
    fail_arg(what, "user_info");
  }

  /* options struct */
  char backend[64] = "auto";
  if (nrhs == 10 && !is_empty(prhs[9])) {
    const mxArray *opt = prhs[9];
    if (!mxIsStruct(opt) || mxGetNumberOfElements(opt) != 1) fail_arg("%s must be a scalar struct", "options");
    for (int f = 0; f < mxGetNumberOfFields(opt); ++f) {
      const char *fn = mxGetFieldNameByNumber(opt, f);
      const mxArray *v = mxGetFieldByNumber(opt, 0, f);
      if (!strcmp(fn, "backend")) {
        get_string(v, backend, sizeof backend, "options.backend");
      } else if (!strcmp(fn, "conv")) {
        char s[32];
        get_string(v, s, sizeof s, "options.conv");
        if (!strcmp(s, lumen_fit_conv_name(LUMEN_FIT_CONV_EXACT))) o.conv = LUMEN_FIT_CONV_EXACT;
        else if (!strcmp(s, lumen_fit_conv_name(LUMEN_FIT_CONV_TRAPEZOID))) o.conv = LUMEN_FIT_CONV_TRAPEZOID;
        else fail_arg("options.conv '%s': expected 'exact' or 'trapezoid'", s);
      } else if (!strcmp(fn, "precision")) {
        char s[32];
        get_string(v, s, sizeof s, "options.precision");
        if (!strcmp(s, lumen_fit_precision_name(LUMEN_FIT_FLOAT32))) o.precision = LUMEN_FIT_FLOAT32;
        else if (!strcmp(s, lumen_fit_precision_name(LUMEN_FIT_FLOAT64))) o.precision = LUMEN_FIT_FLOAT64;
        else fail_arg("options.precision '%s': expected 'float32' or 'float64'", s);
      } else if (!strcmp(fn, "bounds_preset")) {
        char s[32];
        get_string(v, s, sizeof s, "options.bounds_preset");
        if (lumen_fit_bounds_preset_parse(g_ctx, s, &o.bounds_preset) != LUMEN_OK)
          fail_arg("options.bounds_preset '%s': expected 'physical' or 'rocketship'", s);
      } else if (!strcmp(fn, "tr")) {
        o.tr = scalar(v, "options.tr");
      } else if (!strcmp(fn, "r1")) {
        o.r1 = scalar(v, "options.r1");
      } else if (!strcmp(fn, "linear_start")) {
        o.linear_start = scalar(v, "options.linear_start") != 0;
      } else if (!strcmp(fn, "threads")) {
        lumen_status st = lumen_ctx_set_threads(g_ctx, (int)scalar(v, "options.threads"));
        if (st != LUMEN_OK) fail_lumen(st);
      } else {
        fail_arg("options.%s is unknown (backend, conv, precision, bounds_preset, tr, r1, linear_start, threads)", fn);
      }
    }
  }
  o.backend = backend;

  int np_out = npub;
  plhs[0] = mxCreateDoubleMatrix((mwSize)np_out, (mwSize)n_fits, mxREAL);
  mxArray *states = mxCreateNumericMatrix(1, (mwSize)n_fits, mxINT32_CLASS, mxREAL);
  mxArray *chi2 = mxCreateDoubleMatrix(1, (mwSize)n_fits, mxREAL);
  mxArray *iters = mxCreateNumericMatrix(1, (mwSize)n_fits, mxINT32_CLASS, mxREAL);
  double *P = mxGetPr(plhs[0]);
  int32_t *S = (int32_t *)mxGetData(states);
  double *C = mxGetPr(chi2);
  int32_t *I = (int32_t *)mxGetData(iters);
  double *derived = nd ? mxCalloc(n_fits * (size_t)nd + 1, sizeof(double)) : NULL;
  double seconds = 0;

  size_t j0 = 0;
  while (j0 < n_fits) {
    size_t j1 = j0 + 1;  /* the run [j0, j1) shares every per-fit input */
    while (j1 < n_fits && same_col(&ip, j0, j1) && same_col(&cons, j0, j1) && same_col(&w, j0, j1)) ++j1;
    lumen_fit_options ro = o;
    const double *ipc = col(&ip, j0), *cc = col(&cons, j0);
    for (int k = 0; k < npf; ++k) {
      if (ipc) ro.start[k] = ipc[k];
      if (cc) {
        double lo = cc[2 * k], hi = cc[2 * k + 1];
        ro.lo[k] = isinf(lo) ? (lo < 0 ? -UNBOUNDED : UNBOUNDED) : lo;
        ro.hi[k] = isinf(hi) ? (hi < 0 ? -UNBOUNDED : UNBOUNDED) : hi;
      }
    }
    ro.weights = col(&w, j0);
    lumen_status st = lumen_fit_plan_create(g_ctx, &ro, (int)n, x, cp, &g_plan);
    if (st != LUMEN_OK) fail_lumen(st);
    lumen_fit_results r = {
        .params = mxMalloc(((j1 - j0) * (size_t)npub + 1) * sizeof(double)), .state = S + j0, .chi2 = C + j0,
        .iterations = I + j0, .derived = derived ? derived + j0 * (size_t)nd : NULL};
    if (single)
      st = lumen_fit_execute(g_ctx, g_plan, (int64_t)(j1 - j0), (const float *)mxGetData(data) + j0 * n, NULL, &r);
    else
      st = lumen_fit_execute_f64(g_ctx, g_plan, (int64_t)(j1 - j0), mxGetPr(data) + j0 * n, NULL, &r);
    if (st != LUMEN_OK) fail_lumen(st);
    seconds += r.seconds;
    /* results are row-major n_curves x npub: column j of P is row j of the results */
    memcpy(P + j0 * (size_t)np_out, r.params, (j1 - j0) * (size_t)npub * sizeof(double));
    if (gpufit_2cxm) { /* the fork's (E, ve, vp, Fp): E is the derived value named "E" */
      int e = -1;
      for (int k = 0; k < nd; ++k)
        if (!strcmp(lumen_fit_derived_name(o.model, k), "E")) e = k;
      for (size_t j = j0; j < j1 && e >= 0; ++j) P[j * (size_t)np_out] = derived[j * (size_t)nd + (size_t)e];
    }
    mxFree(r.params);
    cleanup();
    j0 = j1;
  }
  if (nlhs > 1) plhs[1] = states; else mxDestroyArray(states);
  if (nlhs > 2) plhs[2] = chi2; else mxDestroyArray(chi2);
  if (nlhs > 3) plhs[3] = iters; else mxDestroyArray(iters);
  if (nlhs > 4) plhs[4] = mxCreateDoubleScalar(seconds);
}
