/* The lane-batched solver (src/cpu/lm_simd.h) against the scalar one (lumen_lm_fit_f32): on
   random curves of every vector model, uniform and non-uniform grids, weights, a fixed parameter,
   few iterations (lanes ending in max_iterations), NaN curves (not_finite lanes) and curve counts
   that do not fill the last lane group, every lane must end in the same state after the same
   number of iterations with the same parameters and chi2 (to float rounding). Each width the CPU
   supports (8 lanes AVX2, 16 lanes AVX-512) is tested; the test skips on a CPU with neither. */
#include "test_support.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/lm_simd.h"
#include "fit/fit_internal.h"

#define NMAX 96
#define NCURVES 203

typedef struct setup {
  lumen_model model;
  int n, np;
  float t[NMAX], cp[NMAX], dt[NMAX], icp[NMAX], w[NMAX];
  lumen_grid_f32 g;
  double lo[4], hi[4];
  unsigned char fixed[4];
  int use_w, max_it;
  float y[NCURVES][NMAX], start[NCURVES][4], consts[NCURVES][LUMEN_FIT_NCONSTS];
} setup;

static unsigned long long rng_state = 88172645463325252ULL;
static double urand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}
static double nrand(void) {
  double u = urand() + 1e-12, v = urand();
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}
static double test_cp(double t) {
  double u = t - 0.5;
  if (u <= 0) return 0.0;
  return 6.0 * (u / 0.15) * exp(1.0 - u / 0.15) + 1.2 * (1.0 - exp(-u / 0.2)) * exp(-0.15 * u);
}

static void make(setup *s, lumen_model m, int nonuniform, int use_w, int fix1, int max_it) {
  memset(s, 0, sizeof *s);
  s->model = m;
  s->np = lumen_model_np(m);
  s->use_w = use_w;
  s->max_it = max_it;
  int dce = lumen_model_is_dce(m);
  int n = dce ? 80 : (m == LUMEN_MODEL_VFA ? 4 : 8);
  s->n = n;
  for (int i = 0; i < n; ++i) {
    /* nonuniform 2: frame times with jitter (+-0.024 s, lumen_grid.jit: weights interpolated) */
    if (dce && nonuniform == 2) s->t[i] = (float)(i * 5.0 / 60.0 + 0.0004 * sin(i));
    else if (dce) s->t[i] = nonuniform ? (float)(i * 5.0 / 60.0 + 0.02 * sin(i)) : (float)(i * 5.0 / 60.0);
    else if (m == LUMEN_MODEL_VFA) s->t[i] = (float)((2.0 + 4.5 * i) * 3.14159265358979 / 180.0);
    else s->t[i] = (float)(0.05 * pow(1.7, i));
    s->cp[i] = (float)test_cp(s->t[i]);
    s->w[i] = (float)(0.5 + urand());
  }
  assert_int_equal(lumen_grid_setup_f32(&s->g, n, s->t, dce ? s->cp : NULL, s->dt, s->icp), 0);
  if (dce) assert_int_equal(s->g.uniform, !nonuniform);
  if (dce) assert_int_equal(s->g.jit, nonuniform == 2);
  s->g.tr = m == LUMEN_MODEL_VFA ? 0.005f : m == LUMEN_MODEL_IR ? 6.0f : 0.0f;
  double st[4];
  lumen_model_defaults(m, st, s->lo, s->hi);
  if (fix1) s->fixed[1] = 1;
  float buf[NMAX];
  for (int c = 0; c < NCURVES; ++c) {
    float p[4] = {0, 0, 0, 0};
    switch (m) {
      case LUMEN_MODEL_TOFTS: case LUMEN_MODEL_ETOFTS:
        p[0] = (float)(0.01 + 0.49 * urand()); p[1] = (float)(0.05 + 0.55 * urand()); p[2] = (float)(0.01 + 0.09 * urand());
        break;
      case LUMEN_MODEL_PATLAK: p[0] = (float)(0.01 + 0.2 * urand()); p[1] = (float)(0.01 + 0.09 * urand()); break;
      case LUMEN_MODEL_2CUM:
        p[0] = (float)(0.01 + 0.3 * urand()); p[1] = (float)(0.6 + 0.9 * urand()); p[2] = (float)(0.05 + 0.25 * urand());
        break;
      default: p[0] = (float)(0.5 + 2.0 * urand()); p[1] = (float)(500 + 4500 * urand()); break;
    }
    s->consts[c][LUMEN_FIT_CONST_R10] = 1.0f;
    s->consts[c][LUMEN_FIT_CONST_B1] = m == LUMEN_MODEL_VFA ? (float)(0.8 + 0.4 * urand()) : 1.0f;
    lumen_model_eval_f32(m, &s->g, s->consts[c], p, buf, NULL, NULL);
    float mx = 0;
    for (int i = 0; i < n; ++i) mx = fmaxf(mx, fabsf(buf[i]));
    double sd = dce ? 0.005 * (1 + 4 * urand()) : 0.005 * mx;
    for (int i = 0; i < n; ++i) s->y[c][i] = buf[i] + (float)(sd * nrand());
    /* starts: the truth scaled by random factors, clipped into the box; some on a bound */
    for (int k = 0; k < s->np; ++k) {
      double v = p[k] * exp(0.7 * nrand());
      if (c % 17 == 3) v = s->lo[k];
      if (s->fixed[k]) v = p[k];
      if (v < s->lo[k]) v = s->lo[k];
      if (v > s->hi[k]) v = s->hi[k];
      s->start[c][k] = (float)v;
    }
    if (c % 29 == 5) s->y[c][n / 2] = NAN; /* not_finite lane */
    if (c % 31 == 7) s->consts[c][LUMEN_FIT_CONST_B1] = NAN;
  }
}

typedef struct io_state {
  const setup *s;
  int next_curve;
  int ticket_curve[2 * LUMEN_LMV_MAX_WIDTH];
  int ls_checked, ls_mismatch;
  lumen_fit_state state[NCURVES];
  float p[NCURVES][4];
  double chi2[NCURVES];
  int it[NCURVES], seen[NCURVES];
  int a_checked, a_mismatch;   /* done()'s J^T W J against one at p computed here */
  int a_before;                /* ... that matched at the point before an unevaluated last step */
  int sst_checked, sst_mismatch; /* done()'s R^2 denominator against a long double two-pass sum */
  int rejected[NCURVES];         /* test_check_samples: start() calls with ls_ret -2 */
} io_state;

/* The next of the NCURVES curves for ticket tk (noted in ticket_curve); -1 when all are taken. */
static int take_curve(int *next_curve, int *ticket_curve, int tk) {
  if (*next_curve >= NCURVES) return -1;
  ticket_curve[tk] = *next_curve;
  return (*next_curve)++;
}

static int io_next(void *user, int tk, float *y, float *consts) {
  io_state *u = user;
  const int c = take_curve(&u->next_curve, u->ticket_curve, tk);
  if (c < 0) return 0;
  memcpy(y, u->s->y[c], sizeof(float) * (size_t)u->s->n);
  memcpy(consts, u->s->consts[c], sizeof(float) * LUMEN_FIT_NCONSTS);
  return 1;
}

/* the vector linear start must equal lumen_linear_start_f32; the fit then starts from the test's start */
static int io_start(void *user, int tk, const float *y, const float *ls, int ls_ret, float *p) {
  io_state *u = user;
  int c = u->ticket_curve[tk];
  assert_memory_equal(y, u->s->y[c], sizeof(float) * (size_t)u->s->n);
  if (ls_ret >= 0) {
    float ref[4] = {0, 0, 0, 0};
    int r = lumen_linear_start_f32(u->s->model, &u->s->g, u->s->consts[c], u->s->y[c], ref);
    u->ls_checked++;
    int bad = r != ls_ret;
    for (int k = 0; k < u->s->np; ++k) bad |= memcmp(&ref[k], &ls[k], sizeof(float)) != 0 && !(isnan(ref[k]) && isnan(ls[k]));
    u->ls_mismatch += bad;
  }
  memcpy(p, u->s->start[c], sizeof(float) * (size_t)u->s->np);
  return 0;
}

/* J^T W J at p of curve c: the Jacobian of the scalar model at p, summed here in double; 1 when A
   matches it (to 1e-5 of the sum of the terms' magnitudes). */
static int jtwj_matches(const setup *s, int c, const float *p, const double *A) {
  static float f[NMAX], J[4 * NMAX], work[NMAX * 12 + 16];
  lumen_model_eval_f32(s->model, &s->g, s->consts[c], p, f, J, work);
  int bad = 0;
  for (int a = 0; a < s->np; ++a)
    for (int b = 0; b < s->np; ++b) {
      double want = 0, scale = 0;
      for (int i = 0; i < s->n; ++i) {
        double wi = s->use_w ? (double)s->w[i] : 1.0;
        want += wi * (double)J[a * s->n + i] * (double)J[b * s->n + i];
        scale += wi * fabs((double)J[a * s->n + i] * (double)J[b * s->n + i]);
      }
      bad |= !(fabs(A[a * LUMEN_FIT_MAX_PARAMS + b] - want) <= 1e-5 * scale + 1e-30);
    }
  return !bad;
}

/* done()'s A must be J^T W J at the last point the solver evaluated (the confidence intervals
   come from it): at the returned p, or, when the fit ended with a step it took without
   evaluating it (lm_impl.inc's predicted-decrease stop), at the point before that step, which
   the scalar solver returns when stopped one iteration earlier. */
static void check_jtwj(io_state *u, int c, const float *p, const double *A, int it) {
  const setup *s = u->s;
  u->a_checked++;
  if (jtwj_matches(s, c, p, A)) return;
  int bad = 1;
  if (it > 1) {
    static float work1[NMAX * 12 + 16];
    lumen_lm_problem_f32 sp = {s->model, &s->g, s->consts[c], s->y[c], s->use_w ? s->w : NULL,
                               s->lo, s->hi, s->fixed, 1e-6, it - 1, 0};
    float q[4];
    memcpy(q, s->start[c], sizeof q);
    double chi2;
    int it1;
    lumen_lm_fit_f32(&sp, q, work1, &chi2, &it1);
    bad = !jtwj_matches(s, c, q, A);
    u->a_before += !bad;
  }
  u->a_mismatch += bad;
}

/* done()'s sst: without weights sum (y - mean)^2 (here in long double, two passes), within
   rounding (NaN for a curve with a NaN sample); with weights NaN (the driver sums it). */
static void check_sst(io_state *u, const float *y, double sst) {
  const int n = u->s->n;
  u->sst_checked++;
  if (u->s->use_w) {
    u->sst_mismatch += !isnan(sst);
    return;
  }
  long double m = 0, ss = 0;
  for (int i = 0; i < n; ++i) m += y[i];
  m /= n;
  for (int i = 0; i < n; ++i) ss += ((long double)y[i] - m) * ((long double)y[i] - m);
  if (isnan(ss)) /* a hostile curve with a NaN sample: NaN too */
    u->sst_mismatch += !isnan(sst);
  else
    u->sst_mismatch += !(fabsl((long double)sst - ss) <= 1e-12L * ss + 1e-300L);
}

static void io_done(void *user, int tk, const float *y, lumen_fit_state st, const float *p, double chi2, int it,
                    const double *A, double sst) {
  io_state *u = user;
  int c = u->ticket_curve[tk];
  if (A && isfinite(chi2)) check_jtwj(u, c, p, A, it);
  check_sst(u, y, sst);
  assert_memory_equal(y, u->s->y[c], sizeof(float) * (size_t)u->s->n);
  u->seen[c]++;
  u->state[c] = st;
  memcpy(u->p[c], p, sizeof(float) * (size_t)u->s->np);
  u->chi2[c] = chi2;
  u->it[c] = it;
}

static int g_a_before; /* curves of compare() that ended with an unevaluated step, summed */

static int compare(const setup *s, int width) {
  size_t bytes = width == 16 ? lumen_lmv_work_bytes_v16(s->n, s->np) : lumen_lmv_work_bytes_v8(s->n, s->np);
  void *work = malloc(bytes);
  assert_non_null(work);
  static io_state u;
  memset(&u, 0, sizeof u);
  u.s = s;
  lumen_lmv_problem pr = {s->model, &s->g, s->use_w ? s->w : NULL, s->lo, s->hi, s->fixed, 1e-6, s->max_it, 1, 0, 1, 0};
  lumen_lmv_io io = {&u, io_next, io_start, io_done};
  if (width == 16) lumen_lmv_run_v16(&pr, &io, work);
  else lumen_lmv_run_v8(&pr, &io, work);
  free(work);
  float work1[NMAX * 12 + 16];
  int states[LUMEN_FIT_STATE_COUNT] = {0}, mismatch = 0;
  for (int c = 0; c < NCURVES; ++c) {
    assert_int_equal(u.seen[c], 1);
    lumen_lm_problem_f32 sp = {s->model, &s->g, s->consts[c], s->y[c], s->use_w ? s->w : NULL,
                               s->lo, s->hi, s->fixed, 1e-6, s->max_it, 0};
    float p[4];
    memcpy(p, s->start[c], sizeof p);
    double chi2;
    int it;
    lumen_fit_state st = lumen_lm_fit_f32(&sp, p, work1, &chi2, &it);
    states[st]++;
    int bad = st != u.state[c] || it != u.it[c];
    if (isfinite(chi2) || isfinite(u.chi2[c]))
      bad |= !(fabs(chi2 - u.chi2[c]) <= 1e-6 * fabs(chi2) + 1e-30);
    for (int k = 0; k < s->np; ++k)
      bad |= !(fabsf(p[k] - u.p[c][k]) <= 1e-5f * fabsf(p[k]) + 1e-30f);
    if (bad && mismatch++ < 5)
      printf("  model %d width %d curve %d: scalar state %d it %d chi2 %.9g p0 %.9g; lanes state %d it %d chi2 %.9g p0 %.9g\n",
             (int)s->model, width, c, (int)st, it, chi2, (double)p[0], (int)u.state[c], u.it[c], u.chi2[c],
             (double)u.p[c][0]);
  }
  printf("  model %d n %d uniform %d w %d fixed %d maxit %d width %d: converged %d max_it %d not_finite %d singular %d, "
         "mismatches %d; linear starts checked %d, differing %d\n",
         (int)s->model, s->n, s->g.uniform, s->use_w, (int)s->fixed[1], s->max_it, width, states[0], states[1],
         states[LUMEN_FIT_NOT_FINITE], states[LUMEN_FIT_SINGULAR], mismatch, u.ls_checked, u.ls_mismatch);
  printf("  J^T W J handed to done(): %d checked, %d differing, %d at the point before an unevaluated last step\n",
         u.a_checked, u.a_mismatch, u.a_before);
  g_a_before += u.a_before;
  assert_true(u.a_checked > NCURVES / 2); /* most curves iterate */
  printf("  R^2 denominator handed to done(): %d checked, %d differing\n", u.sst_checked, u.sst_mismatch);
  assert_int_equal(u.sst_checked, NCURVES);
  mismatch += u.ls_mismatch + u.a_mismatch + u.sst_mismatch;
  return mismatch;
}

static int widths(int *w) {
  int n = 0;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) w[n++] = 8;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) w[n++] = 16;
#endif
  return n;
}

/* The models each lane solver is tested on here. They are written out because each needs curves of
   its own (make, double_lanes); the table says which models the lanes implement, and
   test_every_lane_model_is_tested holds the lists to it. */
static const lumen_model float_lane_models[] = {LUMEN_MODEL_TOFTS, LUMEN_MODEL_ETOFTS, LUMEN_MODEL_PATLAK,
                                                LUMEN_MODEL_2CUM,  LUMEN_MODEL_VFA,    LUMEN_MODEL_IR,
                                                LUMEN_MODEL_SR};
static const lumen_model double_lane_models[] = {LUMEN_MODEL_2CXM, LUMEN_MODEL_FXR};

static int listed(const lumen_model *list, size_t n, lumen_model m) {
  for (size_t i = 0; i < n; ++i)
    if (list[i] == m) return 1;
  return 0;
}

/* A row of the model table with a lane flag and no test in this file (or a test of a model the
   lanes do not implement) fails here, naming the model: a new lane model brings its curves. */
static void test_every_lane_model_is_tested(void **state) {
  (void)state;
  const size_t nf = sizeof float_lane_models / sizeof float_lane_models[0];
  const size_t nd = sizeof double_lane_models / sizeof double_lane_models[0];
  int missing = 0;
  for (int k = 0; k < LUMEN_MODEL_COUNT; ++k) {
    const lumen_model m = (lumen_model)k;
    const int f32 = (lumen_model_flags(m) & LUMEN_MF_LANES_F32) != 0;
    const int f64 = (lumen_model_flags(m) & LUMEN_MF_LANES_F64) != 0;
    if (f32 != listed(float_lane_models, nf, m) || f64 != listed(double_lane_models, nd, m)) {
      fprintf(stderr, "model %s: float lanes %s/%s, double lanes %s/%s (table/tested here)\n", lumen_model_name(m),
              f32 ? "yes" : "no", listed(float_lane_models, nf, m) ? "yes" : "no", f64 ? "yes" : "no",
              listed(double_lane_models, nd, m) ? "yes" : "no");
      missing++;
    }
  }
  assert_int_equal(missing, 0);
}

static void test_lanes_match_scalar(void **state) {
  (void)state;
  int w[2], nw = widths(w);
  if (nw == 0) skip();
  static setup s;
  const lumen_model *models = float_lane_models;
  const size_t n_models = sizeof float_lane_models / sizeof float_lane_models[0];
  int total = 0;
  for (size_t mi = 0; mi < n_models; ++mi) {
    lumen_model m = models[mi];
    int dce = lumen_model_is_dce(m);
    for (int variant = 0; variant < 5; ++variant) {
      int nonuni = variant == 1 && dce, use_w = variant == 2, fix1 = variant == 3, maxit = variant == 4 ? 3 : 200;
      make(&s, m, nonuni, use_w, fix1, maxit);
      assert_true(lumen_lmv_supported(m, &s.g));
      g_a_before = 0;
      for (int j = 0; j < nw; ++j) total += compare(&s, w[j]);
      /* the predicted-decrease stop is exercised on the vector head (two free parameters) and the
         scalar one (ETM, three) */
      if ((m == LUMEN_MODEL_TOFTS || m == LUMEN_MODEL_ETOFTS) && variant == 0) assert_true(g_a_before > 0);
    }
  }
  assert_int_equal(total, 0);
}

/* The double-precision lanes (2CXM, with and without geodesic acceleration, weights, a fixed
   parameter, few iterations, NaN curves) against lumen_lm_fit_f64 with the same options: the same
   state and iterations per curve, chi2 and parameters equal to double rounding (relative 1e-9 and,
   for parameters along 2CXM's flat valleys, 1e-5). */
typedef struct dio_state {
  int n, next_curve, ticket_curve[2 * LUMEN_LMV_MAX_WIDTH];
  const double (*y)[NMAX], (*start)[4];
  lumen_model m;
  const lumen_grid_f64 *g;
  int ls_checked, ls_mismatch; /* 2CXM's vector linear starts against lumen_linear_start_f64 */
  lumen_fit_state state[NCURVES];
  double p[NCURVES][4], chi2[NCURVES];
  int it[NCURVES], seen[NCURVES];
} dio_state;

/* Curve c's constants: R10 varies from curve to curve (0.8-1.4 /s), so that the lanes' FXR starts
   and fits must read each curve's own. */
static void dio_consts(int c, double *consts) {
  for (int j = 0; j < LUMEN_FIT_NCONSTS; ++j) consts[j] = 1.0;
  consts[LUMEN_FIT_CONST_R10] = 0.8 + 0.1 * (c % 7);
}

static int dio_next(void *user, int tk, double *y, double *consts) {
  dio_state *u = user;
  const int c = take_curve(&u->next_curve, u->ticket_curve, tk);
  if (c < 0) return 0;
  memcpy(y, u->y[c], sizeof(double) * (size_t)u->n);
  dio_consts(c, consts);
  return 1;
}
/* The lanes' linear starts (2CXM's lumen_2cxm_start_, FXR's Murase sums and solve, on vectors)
   must be lumen_linear_start_f64's, bit for bit. The fit then starts from the test's start. */
static int dio_start(void *user, int tk, const double *y, const double *ls, int ls_ret, double *p) {
  dio_state *u = user;
  const int c = u->ticket_curve[tk];
  {
    assert_true(ls_ret >= 0);
    double ref[4] = {0, 0, 0, 0}, consts[LUMEN_FIT_NCONSTS];
    dio_consts(c, consts);
    const int r = lumen_linear_start_f64(u->m, u->g, consts, u->y[c], ref);
    int bad = r != ls_ret;
    for (int k = 0; k < 4; ++k) bad |= memcmp(&ref[k], &ls[k], sizeof(double)) != 0 && !(isnan(ref[k]) && isnan(ls[k]));
    u->ls_checked++;
    u->ls_mismatch += bad;
  }
  assert_memory_equal(y, u->y[c], sizeof(double) * (size_t)u->n);
  memcpy(p, u->start[c], sizeof(double) * 4);
  return 0;
}
static void dio_done(void *user, int tk, const double *y, lumen_fit_state st, const double *p, double chi2, int it,
                     const double *A, double sst) {
  (void)A;
  (void)sst;
  dio_state *u = user;
  int c = u->ticket_curve[tk];
  assert_memory_equal(y, u->y[c], sizeof(double) * (size_t)u->n);
  u->seen[c]++;
  u->state[c] = st;
  memcpy(u->p[c], p, sizeof(double) * 4);
  u->chi2[c] = chi2;
  u->it[c] = it;
}

/* Model m (2CXM or FXR, the double-lane models) on the double lanes against lumen_lm_fit_f64. */
static void double_lanes(lumen_model m, int jitter) {
  int w[2], nw = widths(w);
  if (nw == 0) skip();
  const int np = lumen_model_param_count(m);
  const int n = 80;
  static double t[NMAX], cp[NMAX], dt[NMAX], icp[NMAX], wts[NMAX], y[NCURVES][NMAX], start[NCURVES][4];
  lumen_grid_f64 g;
  for (int i = 0; i < n; ++i) {
    t[i] = i * 5.0 / 60.0 + (jitter ? 0.0004 * sin(i) : 0); /* jitter: +-0.024 s */
    cp[i] = test_cp(t[i]);
    wts[i] = 0.5 + urand();
  }
  assert_int_equal(lumen_grid_setup_f64(&g, n, t, cp, dt, icp), 0);
  assert_int_equal(g.jit, jitter);
  g.r1 = 4.5; /* FXR's relaxivity, 1/(mM s) */
  assert_true(lumen_lmvd_supported(m, &g));
  double lo[4] = {0}, hi[4] = {0}, st0[4];
  lumen_model_defaults(m, st0, lo, hi);
  int total = 0;
  for (int variant = 0; variant < 5; ++variant) {
    int geo = variant != 1 && m == LUMEN_MODEL_2CXM, use_w = variant == 2, maxit = variant == 4 ? 3 : 200;
    unsigned char fixed[4] = {0, 0, 0, 0};
    if (variant == 3) fixed[2] = 1;
    for (int c = 0; c < NCURVES; ++c) {
      double p[4] = {0, 0, 0, 0}, sd = 0.005;
      if (m == LUMEN_MODEL_2CXM) {
        p[0] = 0.05 + 0.45 * urand(); p[1] = 0.1 + 0.4 * urand(); p[2] = 0.02 + 0.08 * urand(); p[3] = 0.2 + 1.3 * urand();
      } else { /* FXR: Ktrans, ve, tau (min); R1 in 1/s with R10 = 1 /s, noise 0.005 mM times r1 */
        p[0] = 0.01 + 0.49 * urand(); p[1] = 0.05 + 0.55 * urand(); p[2] = 0.005 + 0.045 * urand(); sd = 0.0225;
      }
      double cg[LUMEN_FIT_NCONSTS];
      dio_consts(c, cg);
      lumen_model_eval_f64(m, &g, cg, p, y[c], NULL, NULL);
      for (int i = 0; i < n; ++i) y[c][i] += sd * nrand();
      for (int k = 0; k < np; ++k) {
        double v = fixed[k] ? p[k] : p[k] * exp(0.5 * nrand());
        if (c % 17 == 3 && !fixed[k]) v = lo[k];
        start[c][k] = fmin(fmax(v, lo[k]), hi[k]);
      }
      if (c % 29 == 5) y[c][n / 2] = NAN;
    }
    for (int j = 0; j < nw; ++j) {
      static dio_state u;
      memset(&u, 0, sizeof u);
      u.n = n;
      u.y = (const double (*)[NMAX])y;
      u.start = (const double (*)[4])start;
      u.m = m;
      u.g = &g;
      lumen_lmvd_problem pr = {m, &g, use_w ? wts : NULL, lo, hi, fixed, 1e-6, maxit, 1, geo, 0, 0};
      lumen_lmvd_io io = {&u, dio_next, dio_start, dio_done};
      size_t bytes = w[j] == 16 ? lumen_lmvd_work_bytes_d8(n, np) : lumen_lmvd_work_bytes_d4(n, np);
      void *work = malloc(bytes);
      assert_non_null(work);
      if (w[j] == 16) lumen_lmvd_run_d8(&pr, &io, work);
      else lumen_lmvd_run_d4(&pr, &io, work);
      free(work);
      static double work1[NMAX * 12 + 16];
      int mismatch = 0, conv = 0, paths = 0;
      for (int c = 0; c < NCURVES; ++c) {
        assert_int_equal(u.seen[c], 1);
        double cc[LUMEN_FIT_NCONSTS];
        dio_consts(c, cc);
        lumen_lm_problem_f64 sp = {m, &g, cc, y[c], use_w ? wts : NULL, lo, hi, fixed, 1e-6, maxit, geo};
        double p[4];
        memcpy(p, start[c], sizeof p);
        double chi2;
        int it;
        lumen_fit_state st = lumen_lm_fit_f64(&sp, p, work1, &chi2, &it);
        conv += st == LUMEN_FIT_CONVERGED;
        int bad = st != u.state[c], path = it != u.it[c];
        if (isfinite(chi2) || isfinite(u.chi2[c])) bad |= !(fabs(chi2 - u.chi2[c]) <= 1e-9 * fabs(chi2));
        for (int k = 0; k < np; ++k) path |= !(fabs(p[k] - u.p[c][k]) <= 1e-5 * fabs(p[k]) + 1e-300);
        /* FXR: the lanes' sums are FMA-contracted (1e-16 relative, lv_sums) and tau's valley is
           flat enough that this moves a few fits along it (other iterations and parameters at the
           same chi2); 2CXM must take the same path as the scalar solver */
        if (m == LUMEN_MODEL_FXR) paths += path;
        else bad |= path;
        /* jittered times (other curves, other valleys): the sums' FMA (above) also moved a 2CXM
           fit that crawls to the iteration limit and an FXR fit along tau (92 and 99 iterations,
           chi2 5e-9 apart): the same state and chi2 within the fit's tolerance (1e-6) count with
           the other paths */
        if (bad && jitter && st == u.state[c] && fabs(chi2 - u.chi2[c]) <= 1e-6 * fabs(chi2)) {
          bad = 0;
          paths++;
        }
        if (bad && mismatch++ < 5)
          printf("  %s variant %d width %d curve %d: scalar state %d it %d chi2 %.12g; lanes state %d it %d chi2 %.12g\n",
                 lumen_model_name(m), variant, w[j] / 2, c, (int)st, it, chi2, (int)u.state[c], u.it[c], u.chi2[c]);
      }
      printf("  %s double lanes variant %d (geodesic %d, weights %d, fixed p2 %d, maxit %d), %d lanes: %d of %d "
             "converged, mismatches %d, other paths at the same chi2 %d; linear starts checked %d, differing %d\n",
             lumen_model_name(m), variant, geo, use_w, (int)fixed[2], maxit, w[j] / 2, conv, NCURVES, mismatch, paths,
             u.ls_checked, u.ls_mismatch);
      assert_true(paths <= NCURVES * 3 / 100);
      assert_int_equal(u.ls_checked, NCURVES);
      total += mismatch + u.ls_mismatch;
    }
  }
  assert_int_equal(total, 0);
}

static void test_double_lanes_2cxm(void **state) {
  (void)state;
  double_lanes(double_lane_models[0], 0);
}

/* FXR, solved in double on the accelerated tiers (LUMEN_MF_ACC_F64); it runs last so that the
   other tests' curves stay those of the shared random stream they were written with. */
static void test_double_lanes_fxr(void **state) {
  (void)state;
  double_lanes(double_lane_models[1], 0);
}

/* Frame times with jitter (lumen_grid.jit, the convolution weights interpolated in the step, per
   lane where the rate allows): every lane model against the scalar solvers, as above. Last, so
   that the other tests keep their random curves. */
static void test_lanes_jitter(void **state) {
  (void)state;
  int w[2], nw = widths(w);
  if (nw == 0) skip();
  static setup s;
  int total = 0;
  for (size_t mi = 0; mi < sizeof float_lane_models / sizeof float_lane_models[0]; ++mi) {
    lumen_model m = float_lane_models[mi];
    if (!lumen_model_is_dce(m)) continue;
    for (int use_w = 0; use_w < 2; ++use_w) {
      make(&s, m, 2, use_w, 0, 200);
      for (int j = 0; j < nw; ++j) total += compare(&s, w[j]);
    }
  }
  assert_int_equal(total, 0);
  double_lanes(double_lane_models[0], 1);
  double_lanes(double_lane_models[1], 1);
}

/* Through the API: tier cpu on Tofts curves with NaN, all-zero and regular curves, with R^2 and
   confidence intervals (the lane path completes these per curve). */
static void test_api_states(void **state) {
  lumen_ctx *ctx = *state;
  const int n = 80, nc = 53;
  float t[80], cp[80];
  double td[80], cpd[80];
  for (int i = 0; i < n; ++i) {
    td[i] = i * 5.0 / 60.0; cpd[i] = test_cp(td[i]);
    t[i] = (float)td[i]; cp[i] = (float)cpd[i];
  }
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.model = LUMEN_MODEL_TOFTS;
  o.backend = "cpu";
  lumen_fit_plan *plan = NULL;
  assert_int_equal(lumen_fit_plan_create(ctx, &o, n, td, cpd, &plan), LUMEN_OK);
  static float data[53 * 80];
  static lumen_grid_f32 g;
  static float dtb[80], icpb[80];
  lumen_grid_setup_f32(&g, n, t, cp, dtb, icpb);
  for (int c = 0; c < nc; ++c) {
    float p[2] = {(float)(0.01 + 0.49 * urand()), (float)(0.05 + 0.55 * urand())};
    lumen_model_eval_f32(LUMEN_MODEL_TOFTS, &g, NULL, p, data + c * n, NULL, NULL);
    for (int i = 0; i < n; ++i) data[c * n + i] += (float)(0.005 * nrand());
    if (c % 7 == 2) data[c * n + 5] = NAN;
    if (c % 11 == 4) memset(data + c * n, 0, sizeof(float) * (size_t)n);
  }
  /* the input checks test bit patterns (DF(check_input)): infinities of either sign, at the first
     and the last sample and inside a vector of the scan; negative zeros only (a curve of zeros); a
     curve of zeros with one subnormal sample and one with a sample of the largest finite value are
     valid input (fitted, whatever the fit then gives) */
  data[10 * n + 0] = INFINITY;
  data[12 * n + 79] = -INFINITY;
  data[20 * n + 41] = INFINITY;
  for (int i = 0; i < n; ++i) data[22 * n + i] = -0.0f;
  for (int i = 0; i < n; ++i) data[24 * n + i] = i == 77 ? 1e-44f : 0.0f;
  data[28 * n + 3] = FLT_MAX;
  double params[53 * 2], chi2[53], r2[53], lo[53 * 2], hi[53 * 2];
  int32_t st[53], it[53];
  lumen_fit_results r;
  memset(&r, 0, sizeof r);
  r.params = params; r.state = st; r.chi2 = chi2; r.r2 = r2; r.ci_lo = lo; r.ci_hi = hi; r.iterations = it;
  assert_int_equal(lumen_fit_execute(ctx, plan, nc, data, NULL, &r), LUMEN_OK);
  for (int c = 0; c < nc; ++c) {
    if (c % 7 == 2 || c % 11 == 4 || c == 10 || c == 12 || c == 20 || c == 22) {
      assert_int_equal(st[c], LUMEN_FIT_INVALID_INPUT);
      assert_true(isnan(params[c * 2]));
      continue;
    }
    if (c == 24 || c == 28) { /* valid input: fitted */
      assert_int_not_equal(st[c], LUMEN_FIT_INVALID_INPUT);
      continue;
    }
    assert_int_equal(st[c], LUMEN_FIT_CONVERGED);
    assert_true(it[c] > 0);
    assert_true(r2[c] > 0.5 && r2[c] <= 1.0);
    assert_true(lo[c * 2] < params[c * 2] && params[c * 2] < hi[c * 2]);
  }
  lumen_fit_plan_destroy(plan);
}

/* problem.check_samples: the solver tests the loaded lanes' samples (bit patterns) and hands the
   curves with a NaN or infinite sample, or none but zeros, to start() with ls_ret -2 and drops
   them (never to done()); a subnormal or the largest finite sample is valid. A third of the curves
   are invalid, more than the solver's tickets, so a dropped curve that kept its ticket would stall
   the run. Both float widths. */
static int chk_start(void *user, int tk, const float *y, const float *ls, int ls_ret, float *p) {
  (void)y; (void)ls;
  io_state *u = user;
  int c = u->ticket_curve[tk];
  if (ls_ret == -2) u->rejected[c]++;
  memcpy(p, u->s->start[c], sizeof(float) * (size_t)u->s->np);
  return 0;
}
static void chk_done(void *user, int tk, const float *y, lumen_fit_state st, const float *p, double chi2, int it,
                     const double *A, double sst) {
  (void)y; (void)st; (void)p; (void)chi2; (void)it; (void)A; (void)sst;
  io_state *u = user;
  u->seen[u->ticket_curve[tk]]++;
}
static void test_check_samples(void **state) {
  (void)state;
  int w[2], nw = widths(w);
  if (nw == 0) skip();
  static setup s;
  make(&s, LUMEN_MODEL_TOFTS, 0, 0, 0, 200);
  int invalid[NCURVES];
  for (int c = 0; c < NCURVES; ++c) {
    float *y = s.y[c];
    for (int i = 0; i < s.n; ++i)
      if (isnan(y[i])) y[i] = 0.1f; /* make()'s NaN curves: valid here */
    invalid[c] = c % 3 == 0;
    if (c % 3 == 0) {
      const int i = (c * 7) % s.n;
      switch ((c / 3) % 5) {
        case 0: y[i] = NAN; break;
        case 1: y[i] = INFINITY; break;
        case 2: y[i] = -INFINITY; break;
        case 3: for (int k = 0; k < s.n; ++k) y[k] = -0.0f; break;
        default: for (int k = 0; k < s.n; ++k) y[k] = 0.0f; break;
      }
    } else if (c % 9 == 1) {
      for (int k = 0; k < s.n; ++k) y[k] = k == (c * 5) % s.n ? 1e-44f : 0.0f; /* one subnormal */
    } else if (c % 9 == 4) {
      y[(c * 11) % s.n] = FLT_MAX;
    }
  }
  for (int j = 0; j < nw; ++j) {
    size_t bytes = w[j] == 16 ? lumen_lmv_work_bytes_v16(s.n, s.np) : lumen_lmv_work_bytes_v8(s.n, s.np);
    void *work = malloc(bytes);
    assert_non_null(work);
    static io_state u;
    memset(&u, 0, sizeof u);
    u.s = &s;
    lumen_lmv_problem pr = {s.model, &s.g, NULL, s.lo, s.hi, s.fixed, 1e-6, 200, 1, 0, 0, 1};
    lumen_lmv_io io = {&u, io_next, chk_start, chk_done};
    if (w[j] == 16) lumen_lmv_run_v16(&pr, &io, work);
    else lumen_lmv_run_v8(&pr, &io, work);
    free(work);
    int nbad = 0;
    for (int c = 0; c < NCURVES; ++c) {
      assert_int_equal(u.rejected[c], invalid[c]);
      assert_int_equal(u.seen[c], !invalid[c]);
      nbad += invalid[c];
    }
    printf("  check_samples, %d lanes: %d of %d curves dropped as invalid, the others fitted\n", w[j], nbad, NCURVES);
  }
  /* the double lanes (2CXM) through the API: the invalid curves end invalid_input, the others are fitted */
  lumen_ctx *ctx = lumen_test_ctx();
  enum { NX = 40 };
  double x[80], cp[80];
  for (int i = 0; i < 80; ++i) {
    x[i] = i * 5.0 / 60.0;
    cp[i] = test_cp(x[i]);
  }
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.model = LUMEN_MODEL_2CXM;
  o.backend = "cpu";
  lumen_fit_plan *plan = NULL;
  assert_int_equal(lumen_fit_plan_create(ctx, &o, 80, x, cp, &plan), LUMEN_OK);
  static float data[NX * 80];
  for (int c = 0; c < NX; ++c) {
    double p[4] = {0.05 + 0.2 * urand(), 0.1 + 0.4 * urand(), 0.02 + 0.05 * urand(), 0.6 + 0.9 * urand()}, y[80];
    assert_int_equal(lumen_fit_plan_eval(plan, p, NULL, 0, y), LUMEN_OK);
    for (int i = 0; i < 80; ++i) data[c * 80 + i] = (float)(y[i] + 0.005 * nrand());
    if (c % 4 == 1) data[c * 80 + (c * 3) % 80] = c % 8 == 1 ? NAN : -INFINITY;
    if (c % 4 == 3) memset(data + c * 80, 0, sizeof(float) * 80);
  }
  double par[NX * 4];
  int32_t st[NX];
  lumen_fit_results res;
  memset(&res, 0, sizeof res);
  res.params = par;
  res.state = st;
  assert_int_equal(lumen_fit_execute(ctx, plan, NX, data, NULL, &res), LUMEN_OK);
  for (int c = 0; c < NX; ++c) {
    if (c % 2 == 1) assert_int_equal(st[c], LUMEN_FIT_INVALID_INPUT);
    else assert_int_not_equal(st[c], LUMEN_FIT_INVALID_INPUT);
  }
  assert_int_equal(res.curves_per_tier[LUMEN_FIT_TIER_STANDARD], 0); /* none fell through to the oracle */
  lumen_fit_plan_destroy(plan);
  lumen_ctx_destroy(ctx);
}

/* The lane path's completion of the common case (lane_done_fast: converged off the bounds, two
   parameters free) against the general one (DF(lane_done)), bit for bit, through the API with
   intervals and R^2: Tofts and ETM curves of which some end on a bound (ve near 1, Ktrans near 0)
   or are invalid, and VFA curves (a T1 model). */
static void test_fast_completion(void **state) {
  lumen_ctx *ctx = *state;
  enum { NC = 611 };
  static float data[NC * 80];
  static double par[2][NC * 3], lo[2][NC * 3], hi[2][NC * 3], r2[2][NC], chi2[2][NC], der[2][NC * LUMEN_FIT_MAX_DERIVED];
  static int32_t st[2][NC], it[2][NC], mask[2][NC];
  for (int model = 0; model < 3; ++model) { /* Tofts, VFA, ETM */
    const int n = model == 1 ? 4 : 80, np = model == 2 ? 3 : 2;
    double x[80], cp[80];
    lumen_fit_options o;
    lumen_fit_options_init(&o);
    o.backend = "cpu";
    if (model != 1) {
      for (int i = 0; i < n; ++i) {
        x[i] = i * 5.0 / 60.0;
        cp[i] = test_cp(x[i]);
      }
      o.model = model == 0 ? LUMEN_MODEL_TOFTS : LUMEN_MODEL_ETOFTS;
    } else {
      const double deg[4] = {2, 5, 10, 15};
      for (int i = 0; i < n; ++i) x[i] = deg[i] * 3.14159265358979 / 180.0;
      o.model = LUMEN_MODEL_VFA;
      o.tr = 0.005;
    }
    lumen_fit_plan *plan = NULL;
    assert_int_equal(lumen_fit_plan_create(ctx, &o, n, x, model != 1 ? cp : NULL, &plan), LUMEN_OK);
    int fast = 0, general = 0;
    for (int c = 0; c < NC; ++c) {
      double p[3], y[80];
      if (model != 1) {
        p[0] = c % 5 == 1 ? 1e-4 : 0.01 + 0.49 * urand();
        p[1] = c % 5 == 2 ? 0.998 : 0.05 + 0.55 * urand();
        p[2] = 0.01 + 0.09 * urand();
      } else {
        p[0] = 0.5 + 2.0 * urand();
        p[1] = 500 + 4500 * urand();
      }
      assert_int_equal(lumen_fit_plan_eval(plan, p, NULL, 0, y), LUMEN_OK);
      double sd = model != 1 ? 0.005 : 0.005 * y[n - 1];
      for (int i = 0; i < n; ++i) data[c * n + i] = (float)(y[i] + sd * nrand());
      if (c % 23 == 7) data[c * n + 1] = NAN;
    }
    for (int r = 0; r < 2; ++r) { /* r 0: the fast completion on, r 1: off */
      lumen_fit_lane_fast_set(r == 0);
      lumen_fit_results res;
      memset(&res, 0, sizeof res);
      res.params = par[r]; res.state = st[r]; res.ci_lo = lo[r]; res.ci_hi = hi[r]; res.r2 = r2[r];
      res.chi2 = chi2[r]; res.iterations = it[r]; res.bound_mask = mask[r]; res.derived = der[r];
      assert_int_equal(lumen_fit_execute(ctx, plan, NC, data, NULL, &res), LUMEN_OK);
    }
    lumen_fit_lane_fast_set(1);
    const int nd = lumen_fit_derived_count(o.model);
    for (int c = 0; c < NC; ++c) {
      assert_int_equal(st[0][c], st[1][c]);
      assert_int_equal(it[0][c], it[1][c]);
      assert_int_equal(mask[0][c], mask[1][c]);
      assert_memory_equal(&par[0][np * c], &par[1][np * c], (size_t)np * sizeof(double));
      assert_memory_equal(&lo[0][np * c], &lo[1][np * c], (size_t)np * sizeof(double));
      assert_memory_equal(&hi[0][np * c], &hi[1][np * c], (size_t)np * sizeof(double));
      assert_memory_equal(&r2[0][c], &r2[1][c], sizeof(double));
      assert_memory_equal(&chi2[0][c], &chi2[1][c], sizeof(double));
      assert_memory_equal(&der[0][nd * c], &der[1][nd * c], (size_t)nd * sizeof(double));
      if (st[0][c] == LUMEN_FIT_CONVERGED) fast++;
      else general++;
    }
    printf("  %s: %d curves converged off the bounds (fast completion), %d others\n", lumen_model_name(o.model),
           fast, general);
    assert_true(fast > NC / 2);
    assert_true(model == 1 || general > NC / 10); /* Tofts, ETM: bounds and invalid curves took the general path */
    lumen_fit_plan_destroy(plan);
  }
}

LUMEN_TEST_MAIN(cmocka_unit_test(test_every_lane_model_is_tested), cmocka_unit_test(test_lanes_match_scalar), cmocka_unit_test(test_double_lanes_2cxm),
                LUMEN_TEST_WITH_CTX(test_api_states), LUMEN_TEST_WITH_CTX(test_fast_completion),
                cmocka_unit_test(test_check_samples), cmocka_unit_test(test_double_lanes_fxr),
                cmocka_unit_test(test_lanes_jitter))
