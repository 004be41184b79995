/* FXR: LM iterations per fit from different starts (issue 43 item 2). Not a timing: it counts
 * the iterations of the scalar double solver (lumen_lm_fit_f64, which the double lanes follow step
 * by step) on the curves of bench_fit / test_fit_agreement's FXR set (Parker AIF, 5 s frames, 80
 * points; Ktrans 0.01-0.5 /min, ve 0.05-0.6, tau 0.005-0.05 min; R1 noise 0.0225 /s), from
 *   linear  lumen_linear_start_f64 (Tofts on the fast-exchange Ct, tau at its default): the fits'
 *   truth   the parameters the curve was made from (what no start can beat on average)
 *   grid    the best chi2 of the linear start and of 6 candidates tau = 0.0025 ... 0.08 min, each
 *           with Ktrans, ve from Tofts' Murase fit on the Ct that inverts the shutter-speed
 *           formula exactly for that tau: Ct = dR (1 - po x) / (r1 (1 - x)), x = dR tau(s),
 *           dR = R1 - R10, po from the linear start's ve
 * and prints iter/fit, a histogram and how often the fit from that start ends at a higher chi2;
 * then the CPU time of the linear and the grid start alone (compare with bench_fit's FXR fits per
 * CPU-second: a start that costs more than the iterations it saves does not pay).
 * Usage: bench_fxr_starts [curves (default 5000)] [tau list of the grid, min (default
 * 0.0025,0.005,0.01,0.02,0.04,0.08)] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "lumen/aif.h"
#include "lumen/lumen.h"
#include "solver/lm.h"
#include "bench_util.h"

enum { N = 80, NSTART = 3, NBIN = 7 };

static bench_rng rng = {0x1234567ULL};
static double urange(double a, double b) { return a + (b - a) * bench_uniform(&rng); }

static double chi2_of(const lumen_grid_f64 *g, const double *consts, const double *y, const double *p) {
  double f[N], s = 0;
  lumen_model_eval_f64(LUMEN_MODEL_FXR, g, consts, p, f, NULL, NULL);
  for (int i = 0; i < g->n; ++i) s += (y[i] - f[i]) * (y[i] - f[i]);
  return s;
}

static double taus[16] = {0.0025, 0.005, 0.01, 0.02, 0.04, 0.08};
static int ntau = 6;

/* the "grid" start above */
static void grid_start(const lumen_grid_f64 *g, const double *consts, const double *y, double *q) {
  lumen_linear_start_f64(LUMEN_MODEL_FXR, g, consts, y, q);
  double best = chi2_of(g, consts, y, q), po = fmin(q[1] / g->fw, 1.0);
  for (int k = 0; k < ntau; ++k) {
    double ts = 60 * taus[k], ct[N], c[3];
    for (int i = 0; i < g->n; ++i) {
      double d = y[i] - consts[LUMEN_FIT_CONST_R10], x = fmin(d * ts, 0.9); /* x < 1 without noise */
      ct[i] = d * (1 - po * x) / (g->r1 * (1 - x));
    }
    if (lumen_linear_start_f64(LUMEN_MODEL_TOFTS, g, NULL, ct, c)) continue;
    c[2] = taus[k];
    double c2 = chi2_of(g, consts, y, c);
    if (c2 < best) {
      best = c2;
      memcpy(q, c, sizeof c);
    }
  }
}

int main(int argc, char **argv) {
  const int count = argc > 1 ? atoi(argv[1]) : 5000;
  if (argc > 2) {
    char *s = argv[2];
    for (ntau = 0; ntau < 16 && *s;) {
      char *e;
      taus[ntau] = strtod(s, &e);
      if (e == s || !(taus[ntau] > 0)) return 1;
      ntau++;
      s = *e == ',' ? e + 1 : e;
    }
  }
  double x[N], cp[N], dt[N], icp[N];
  if (count < 1 || bench_parker_plasma(N, x, cp) != LUMEN_OK) return 1;
  lumen_grid_f64 g;
  lumen_grid_setup_f64(&g, N, x, cp, dt, icp);
  g.r1 = LUMEN_DEFAULT_RELAXIVITY;
  double lo[4], hi[4], st[4];
  lumen_model_defaults(LUMEN_MODEL_FXR, st, lo, hi);
  const double consts[LUMEN_FIT_NCONSTS] = {1.0, 1.0};
  double *work = malloc(sizeof(double) * (size_t)lumen_lm_work_size(N, 3));
  if (!work) return 1;
  static const char *names[NSTART] = {"linear", "truth", "tau grid"};
  long hist[NSTART][NBIN] = {{0}}, higher[NSTART] = {0};
  double iters[NSTART] = {0};
  double *ys = malloc(sizeof(double) * (size_t)count * N);
  if (!ys) return 1;
  for (int c = 0; c < count; ++c) {
    double p[4] = {urange(0.01, 0.5), urange(0.05, 0.6), urange(0.005, 0.05), 0}, y[N];
    lumen_model_eval_f64(LUMEN_MODEL_FXR, &g, consts, p, y, NULL, NULL);
    for (int i = 0; i < N; ++i) y[i] = (double)(float)(y[i] + 0.0225 * bench_normal(&rng)); /* float data, as fitted */
    memcpy(ys + (size_t)c * N, y, sizeof y);
    lumen_lm_problem_f64 pr = {.model = LUMEN_MODEL_FXR, .grid = &g, .consts = consts, .y = y, .lo = lo,
                               .hi = hi, .tol = 1e-6, .max_iterations = 200};
    double chi[NSTART];
    for (int s = 0; s < NSTART; ++s) {
      double q[4] = {0, 0, 0, 0};
      if (s == 0) lumen_linear_start_f64(LUMEN_MODEL_FXR, &g, consts, y, q);
      else if (s == 1) memcpy(q, p, sizeof q);
      else grid_start(&g, consts, y, q);
      for (int k = 0; k < 3; ++k) q[k] = fmin(fmax(q[k], lo[k]), hi[k]);
      int it = 0;
      lumen_lm_fit_f64(&pr, q, work, &chi[s], &it);
      iters[s] += it;
      hist[s][it < 4 ? 0 : it < 6 ? 1 : it < 8 ? 2 : it < 12 ? 3 : it < 20 ? 4 : it < 40 ? 5 : 6]++;
    }
    for (int s = 1; s < NSTART; ++s) higher[s] += chi[s] > chi[0] * (1 + 1e-5);
  }
  printf("FXR, %d curves: LM iterations per fit by start (scalar double solver, tol 1e-6)\n\n", count);
  printf("| start | iter/fit | <4 | 4-5 | 6-7 | 8-11 | 12-19 | 20-39 | >=40 | chi2 above linear's |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int s = 0; s < NSTART; ++s) {
    printf("| %s | %.2f |", names[s], iters[s] / count);
    for (int b = 0; b < NBIN; ++b) printf(" %ld |", hist[s][b]);
    if (s) printf(" %ld |\n", higher[s]);
    else printf(" - |\n");
  }
  double t[2], sink = 0;
  for (int s = 0; s < 2; ++s) {
    double t0 = bench_seconds(CLOCK_PROCESS_CPUTIME_ID);
    for (int c = 0; c < count; ++c) {
      double q[4];
      if (s == 0) lumen_linear_start_f64(LUMEN_MODEL_FXR, &g, consts, ys + (size_t)c * N, q);
      else grid_start(&g, consts, ys + (size_t)c * N, q);
      sink += q[0];
    }
    t[s] = (bench_seconds(CLOCK_PROCESS_CPUTIME_ID) - t0) / count;
  }
  printf("\nCPU time per curve of the start alone (scalar): linear %.2f us, grid %.2f us (checksum %.6g)\n",
         1e6 * t[0], 1e6 * t[1], sink);
  free(ys);
  free(work);
  return 0;
}
