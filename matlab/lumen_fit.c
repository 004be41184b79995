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
                      bounds where constraints give NaN), tr (s), r1, threads, linear_start (0/1),
                      time_unit ('min' | 's': DCE times in seconds are converted), angle_unit ('rad' |
                      'deg'). Without a unit, DCE times spanning more than 60 (seconds, most likely)
                      and flip angles above pi/2 (degrees, most likely) are refused (as in Python).

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

static void ensure_context(void) {
  if (!g_ctx) {
    if (lumen_ctx_create(&g_ctx) != LUMEN_OK) mexErrMsgIdAndTxt("lumen:out_of_memory", "lumen_fit: no context");
    mexAtExit(at_exit);
  }
  lumen_ctx_clear_error(g_ctx);
}

/* The model argument: a lumen model name or one of the fork's Gpufit ModelIDs; returns 1 for
   Gpufit's 2CXM id (its first parameter is E, a derived value of lumen's 2cxm). */
static int parse_model(const mxArray *a, lumen_fit_options *o) {
  if (mxIsChar(a)) {
    char name[64];
    get_string(a, name, sizeof name, "model");
    lumen_status st = lumen_model_parse(name, &o->model);
    if (st != LUMEN_OK) fail_arg("model '%s' is unknown (tofts, etofts, patlak, 2cum, 2cxm, fxr, auc, vfa, "
                                 "vfa-linear, vfa-2pt, ir, sr)", name);
    return 0;
  }
  double id = scalar(a, "model");
  const char *name = id == 17 ? "patlak" : id == 18 ? "tofts" : id == 19 ? "etofts" : id == 21 ? "2cxm" : NULL;
  if (!name) fail_arg("%s: Gpufit ModelID served are 17 PATLAK, 18 TOFTS, 19 TOFTS_EXTENDED, 21 "
                      "TWO_COMPARTMENT_EXCHANGE; or pass a lumen model name", "model");
  lumen_model_parse(name, &o->model);
  return id == 21;
}

/* tolerance and max_n_iterations: [] keeps the library default */
static void parse_limits(const mxArray *tol, const mxArray *max_iter, lumen_fit_options *o) {
  if (!is_empty(tol)) o->tolerance = scalar(tol, "tolerance");
  if (!is_empty(max_iter)) {
    double m = scalar(max_iter, "max_n_iterations");
    if (!(m >= 0 && m <= 1e9) || m != floor(m)) fail_arg("%s must be a non-negative integer", "max_n_iterations");
    o->max_iterations = (int)m;
  }
}

/* user info: the sample grid x (and the AIF cp for DCE models, NULL otherwise) */
static void parse_user_info(const mxArray *a, size_t n, lumen_model model, const double **x, const double **cp) {
  if (is_empty(a)) fail_arg("%s is required: [times (min); AIF (mM)] for DCE models, flip angles "
                            "(rad) for vfa, times (s) for ir / sr", "user_info");
  double *ui = as_double(a, "user_info");
  size_t nui = mxGetNumberOfElements(a);
  int dce = (lumen_model_flags_of(model) & LUMEN_MF_AIF) != 0;  /* tofts .. auc take an AIF */
  *x = ui;
  *cp = NULL;
  if (nui == 2 * n) {
    *cp = ui + n;
  } else if (nui == n && dce) {
    char what[240];
    snprintf(what, sizeof what, "%%s has %zu values (one row) but model '%s' needs the AIF too: user_info = [times "
             "(min); AIF (mM)], 2 x n_points = %zu values", nui, lumen_model_name(model), 2 * n);
    fail_arg(what, "user_info");
  } else if (nui != n) {
    char what[200];
    snprintf(what, sizeof what, "%%s has %zu values, expected 2 x n_points = %zu ([times; AIF]) or n_points = %zu",
             nui, 2 * n, n);
    fail_arg(what, "user_info");
  }
}

/* A string option naming one of two values (options.conv, options.precision). */
static int one_of_two(const mxArray *v, const char *field, const char *name_a, int a, const char *name_b, int b) {
  char s[32], msg[160];
  get_string(v, s, sizeof s, field);
  if (!strcmp(s, name_a)) return a;
  if (!strcmp(s, name_b)) return b;
  snprintf(msg, sizeof msg, "%s '%s': expected '%s' or '%s'", field, s, name_a, name_b);
  fail_arg("%s", msg);
  return a;  /* not reached: fail_arg raises a MATLAB error */
}

/* options.time_unit / angle_unit: the factor to lumen's unit (minutes, radians); 0 = not given. */
typedef struct {
  double time, angle;
} grid_units;

/* The units below, and the unlabelled-grid rule, are the Python binding's (lumen/_fit.py). */
#define DCE_SPAN_UNLABELLED_MAX_MIN 60.0
#define PI_ 3.14159265358979323846

static double unit_factor(const mxArray *v, const char *field, int angle) {
  char s[16];
  get_string(v, s, sizeof s, field);
  if (!angle && (!strcmp(s, "min") || !strcmp(s, "minutes"))) return 1.0;
  if (!angle && (!strcmp(s, "s") || !strcmp(s, "seconds"))) return 1.0 / 60.0;
  if (angle && (!strcmp(s, "rad") || !strcmp(s, "radians"))) return 1.0;
  if (angle && (!strcmp(s, "deg") || !strcmp(s, "degrees"))) return PI_ / 180.0;
  fail_arg(angle ? "%s: expected 'rad' or 'deg'" : "%s: expected 'min' or 's'", field);
  return 1.0;  /* not reached */
}

/* The sample grid in lumen's units (x is this call's copy): DCE times to minutes, flip angles
   to radians; an unlabelled grid in a likely wrong unit is refused (issue 39 item 3). */
static void apply_units(double *x, size_t n, lumen_model model, const grid_units *u) {
  const char *name = lumen_model_name(model);
  const int flags = lumen_model_flags_of(model);
  int angles = (flags & LUMEN_MF_X_FLIP) != 0, dce = (flags & LUMEN_MF_AIF) != 0;
  char msg[400];
  if (u->angle && !angles) fail_arg("options.angle_unit: model '%s' takes times, not flip angles", name);
  if (u->time && !dce) fail_arg("options.time_unit: model '%s' takes no DCE times", name);
  double f = angles ? u->angle : u->time;
  if (f) {
    for (size_t i = 0; i < n; ++i) x[i] *= f;
    return;
  }
  double hi = x[0];
  for (size_t i = 1; i < n; ++i) hi = x[i] > hi ? x[i] : hi;
  if (angles && hi > PI_ / 2 + 1e-9) {
    snprintf(msg, sizeof msg, "user_info (flip angles of '%%s') go up to %g: radians above pi/2 (90 deg) are "
             "implausible for VFA; degrees? set options.angle_unit = 'deg'; radians indeed? options.angle_unit = 'rad'", hi);
    fail_arg(msg, name);
  }
  double span = n > 1 ? x[n - 1] - x[0] : 0;
  if (dce && span > DCE_SPAN_UNLABELLED_MAX_MIN) {
    snprintf(msg, sizeof msg, "user_info: the DCE times of '%%s' span %g; lumen's unit is minutes, which makes this "
             "a %.1f-h acquisition. In seconds? set options.time_unit = 's' (lumen converts: %g min); minutes "
             "indeed? options.time_unit = 'min'", span, span / 60.0, span / 60.0);
    fail_arg(msg, name);
  }
}

/* One field of the options struct; backend is written to the caller's buffer. */
static void parse_option(const char *fn, const mxArray *v, lumen_fit_options *o, char *backend, size_t backend_size,
                         grid_units *u) {
  if (!strcmp(fn, "time_unit")) {
    u->time = unit_factor(v, "options.time_unit", 0);
  } else if (!strcmp(fn, "angle_unit")) {
    u->angle = unit_factor(v, "options.angle_unit", 1);
  } else if (!strcmp(fn, "backend")) {
    get_string(v, backend, backend_size, "options.backend");
  } else if (!strcmp(fn, "conv")) {
    o->conv = one_of_two(v, "options.conv", lumen_fit_conv_name(LUMEN_FIT_CONV_EXACT), LUMEN_FIT_CONV_EXACT,
                         lumen_fit_conv_name(LUMEN_FIT_CONV_TRAPEZOID), LUMEN_FIT_CONV_TRAPEZOID);
  } else if (!strcmp(fn, "precision")) {
    o->precision = one_of_two(v, "options.precision", lumen_fit_precision_name(LUMEN_FIT_FLOAT32), LUMEN_FIT_FLOAT32,
                              lumen_fit_precision_name(LUMEN_FIT_FLOAT64), LUMEN_FIT_FLOAT64);
  } else if (!strcmp(fn, "bounds_preset")) {
    char s[32];
    get_string(v, s, sizeof s, "options.bounds_preset");
    if (lumen_fit_bounds_preset_parse(g_ctx, s, &o->bounds_preset) != LUMEN_OK)
      fail_arg("options.bounds_preset '%s': expected 'physical' or 'rocketship'", s);
  } else if (!strcmp(fn, "tr")) {
    o->tr = scalar(v, "options.tr");
  } else if (!strcmp(fn, "r1")) {
    o->r1 = scalar(v, "options.r1");
  } else if (!strcmp(fn, "linear_start")) {
    o->linear_start = scalar(v, "options.linear_start") != 0;
  } else if (!strcmp(fn, "threads")) {
    lumen_status st = lumen_ctx_set_threads(g_ctx, (int)scalar(v, "options.threads"));
    if (st != LUMEN_OK) fail_lumen(st);
  } else {
    fail_arg("options.%s is unknown (backend, conv, precision, bounds_preset, tr, r1, linear_start, threads, "
             "time_unit, angle_unit)", fn);
  }
}

static void parse_options(const mxArray *opt, lumen_fit_options *o, char *backend, size_t backend_size,
                          grid_units *u) {
  if (!mxIsStruct(opt) || mxGetNumberOfElements(opt) != 1) fail_arg("%s must be a scalar struct", "options");
  for (int f = 0; f < mxGetNumberOfFields(opt); ++f)
    parse_option(mxGetFieldNameByNumber(opt, f), mxGetFieldByNumber(opt, 0, f), o, backend, backend_size, u);
}

/* Everything the fits of one call share, and where their results go. */
typedef struct {
  const mxArray *data;
  size_t n, n_fits;
  int npf, npub, nd, gpufit_2cxm;
  const double *x, *cp;
  block w, ip, cons;
  double *P, *derived;
  int32_t *S, *I;
  double *C;
  double seconds;
} fit_call;

/* The run's starts and constraints (-Inf / Inf become lumen's unbounded value) */
static void run_options(const fit_call *c, size_t j0, lumen_fit_options *ro) {
  const double *ipc = col(&c->ip, j0), *cc = col(&c->cons, j0);
  for (int k = 0; k < c->npf; ++k) {
    if (ipc) ro->start[k] = ipc[k];
    if (cc) {
      double lo = cc[2 * k], hi = cc[2 * k + 1];
      ro->lo[k] = isinf(lo) ? (lo < 0 ? -UNBOUNDED : UNBOUNDED) : lo;
      ro->hi[k] = isinf(hi) ? (hi < 0 ? -UNBOUNDED : UNBOUNDED) : hi;
    }
  }
  ro->weights = col(&c->w, j0);
}

/* Fits the columns [j0, j1), which share every per-fit input, with one plan. */
static void fit_run(fit_call *c, const lumen_fit_options *o, size_t j0, size_t j1) {
  size_t n = c->n, npub = (size_t)c->npub, nd = (size_t)c->nd;
  lumen_fit_options ro = *o;
  run_options(c, j0, &ro);
  lumen_status st = lumen_fit_plan_create(g_ctx, &ro, (int)n, c->x, c->cp, &g_plan);
  if (st != LUMEN_OK) fail_lumen(st);
  lumen_fit_results r = {
      .params = mxMalloc(((j1 - j0) * npub + 1) * sizeof(double)), .state = c->S + j0, .chi2 = c->C + j0,
      .iterations = c->I + j0, .derived = c->derived ? c->derived + j0 * nd : NULL};
  if (mxIsSingle(c->data))
    st = lumen_fit_execute(g_ctx, g_plan, (int64_t)(j1 - j0), (const float *)mxGetData(c->data) + j0 * n, NULL, &r);
  else
    st = lumen_fit_execute_f64(g_ctx, g_plan, (int64_t)(j1 - j0), mxGetPr(c->data) + j0 * n, NULL, &r);
  if (st != LUMEN_OK) fail_lumen(st);
  c->seconds += r.seconds;
  /* results are row-major n_curves x npub: column j of P is row j of the results */
  memcpy(c->P + j0 * npub, r.params, (j1 - j0) * npub * sizeof(double));
  if (c->gpufit_2cxm) { /* the fork's (E, ve, vp, Fp): E is the derived value named "E" */
    int e = -1;
    for (int k = 0; k < c->nd; ++k)
      if (!strcmp(lumen_fit_derived_name(o->model, k), "E")) e = k;
    for (size_t j = j0; j < j1 && e >= 0; ++j) c->P[j * npub] = c->derived[j * nd + (size_t)e];
  }
  mxFree(r.params);
  cleanup();
}

void mexFunction(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]) {
  ensure_context();
  if (nrhs < 9 || nrhs > 10)
    fail_arg("%s", "usage: [p, states, chi2, iterations, time] = lumen_fit(data, weights, model, "
                   "initial_parameters, constraints, tolerance, max_n_iterations, parameters_to_fit, "
                   "user_info [, options])");
  if (nlhs > 5) fail_arg("%s", "at most 5 outputs");

  fit_call c = {.data = prhs[0]};
  require_real(c.data, "data");
  if (mxGetNumberOfDimensions(c.data) != 2) fail_arg("%s must be n_points x n_fits", "data");
  c.n = mxGetM(c.data);
  c.n_fits = mxGetN(c.data);
  if (c.n < 1) fail_arg("%s has no points", "data");

  lumen_fit_options o;
  lumen_fit_options_init(&o);
  c.gpufit_2cxm = parse_model(prhs[2], &o);
  c.npf = lumen_fit_param_count(o.model);     /* fit parameters */
  c.npub = lumen_model_param_count(o.model);  /* public parameters */
  c.nd = lumen_fit_derived_count(o.model);

  c.w = get_block(prhs[1], "weights", c.n, c.n_fits);
  c.ip = get_block(prhs[3], "initial_parameters", (size_t)c.npf, c.n_fits);
  c.cons = get_block(prhs[4], "constraints", (size_t)2 * c.npf, c.n_fits);
  parse_limits(prhs[5], prhs[6], &o);
  block ptf = get_block(prhs[7], "parameters_to_fit", (size_t)c.npf, 1);
  for (int k = 0; k < c.npf && ptf.v; ++k) o.fixed[k] = ptf.v[k] == 0;
  parse_user_info(prhs[8], c.n, o.model, &c.x, &c.cp);

  char backend[64] = "auto";
  grid_units units = {0, 0};
  if (nrhs == 10 && !is_empty(prhs[9])) parse_options(prhs[9], &o, backend, sizeof backend, &units);
  o.backend = backend;
  apply_units((double *)c.x, c.n, o.model, &units);  /* c.x is this call's copy (as_double) */

  plhs[0] = mxCreateDoubleMatrix((mwSize)c.npub, (mwSize)c.n_fits, mxREAL);
  mxArray *states = mxCreateNumericMatrix(1, (mwSize)c.n_fits, mxINT32_CLASS, mxREAL);
  mxArray *chi2 = mxCreateDoubleMatrix(1, (mwSize)c.n_fits, mxREAL);
  mxArray *iters = mxCreateNumericMatrix(1, (mwSize)c.n_fits, mxINT32_CLASS, mxREAL);
  c.P = mxGetPr(plhs[0]);
  c.S = (int32_t *)mxGetData(states);
  c.C = mxGetPr(chi2);
  c.I = (int32_t *)mxGetData(iters);
  c.derived = c.nd ? mxCalloc(c.n_fits * (size_t)c.nd + 1, sizeof(double)) : NULL;

  size_t j0 = 0;
  while (j0 < c.n_fits) {
    size_t j1 = j0 + 1;  /* the run [j0, j1) shares every per-fit input */
    while (j1 < c.n_fits && same_col(&c.ip, j0, j1) && same_col(&c.cons, j0, j1) && same_col(&c.w, j0, j1)) ++j1;
    fit_run(&c, &o, j0, j1);
    j0 = j1;
  }
  if (nlhs > 1) plhs[1] = states; else mxDestroyArray(states);
  if (nlhs > 2) plhs[2] = chi2; else mxDestroyArray(chi2);
  if (nlhs > 3) plhs[3] = iters; else mxDestroyArray(iters);
  if (nlhs > 4) plhs[4] = mxCreateDoubleScalar(c.seconds);
}
