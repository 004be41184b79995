/* The biexponential AIF of --aif fitted:FILE (lumen_pipe_fit_biexp_aif, public in
   lumen/pipeline.h): 0 before the arrival, a linear ramp to A + B at the peak, then
   A e^{-c(t-t0)} + B e^{-d(t-t0)}, fitted ROCKETSHIP style by damped Gauss-Newton steps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "lumen/pipeline.h"

static void biexp_eval(const double *p, double t0, double ts, double peak, int64_t n, const double *t, double *y) {
  (void)peak;
  for (int64_t i = 0; i < n; ++i) {
    if (t[i] < ts) y[i] = 0;
    else if (t[i] < t0) y[i] = (p[0] + p[1]) * (t[i] - ts) / (t0 - ts);
    else y[i] = p[0] * exp(-p[2] * (t[i] - t0)) + p[1] * exp(-p[3] * (t[i] - t0));
  }
}

static double sse_of(const double *p, double t0, double ts, int64_t n, const double *t, const double *c, double *y) {
  biexp_eval(p, t0, ts, 0, n, t, y);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) if (isfinite(c[i])) s += (y[i] - c[i]) * (y[i] - c[i]);
  return s;
}

static int solve4(double A[4][4], double b[4], double x[4]) {
  for (int i = 0; i < 4; ++i) {
    int piv = i;
    for (int r = i + 1; r < 4; ++r) if (fabs(A[r][i]) > fabs(A[piv][i])) piv = r;
    if (fabs(A[piv][i]) < 1e-300) return 0;
    if (piv != i) {
      for (int k = 0; k < 4; ++k) { double tmp = A[i][k]; A[i][k] = A[piv][k]; A[piv][k] = tmp; }
      double tb = b[i]; b[i] = b[piv]; b[piv] = tb;
    }
    for (int r = i + 1; r < 4; ++r) {
      double f = A[r][i] / A[i][i];
      for (int k = i; k < 4; ++k) A[r][k] -= f * A[i][k];
      b[r] -= f * b[i];
    }
  }
  for (int i = 3; i >= 0; --i) {
    double s = b[i];
    for (int k = i + 1; k < 4; ++k) s -= A[i][k] * x[k];
    x[i] = s / A[i][i];
  }
  return 1;
}

lumen_status lumen_pipe_fit_biexp_aif(lumen_ctx *ctx, int64_t n, const double *t, const double *c, double *fitted,
                                      double params[6]) {
  LUMEN_REQUIRE_NOT_NULL(ctx, t);
  LUMEN_REQUIRE_NOT_NULL(ctx, c);
  LUMEN_REQUIRE_NOT_NULL(ctx, fitted);
  LUMEN_REQUIRE(ctx, n >= 6, "lumen_pipe_fit_biexp_aif: %lld samples, expected >= 6", (long long)n);
  int64_t ip = 0;
  for (int64_t i = 1; i < n; ++i) if (isfinite(c[i]) && (!isfinite(c[ip]) || c[i] > c[ip])) ip = i;
  if (!(c[ip] > 0)) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "fitted AIF: the curve has no positive peak");
  int64_t ia = lumen_pipe_detect_arrival(c, n, 1, ip > 3 ? (ip * 2) / 3 : 1);
  if (ia < 0 || ia >= ip) ia = ip > 0 ? ip - 1 : 0;
  double t0 = t[ip], ts = t[ia];
  if (!(t0 > ts)) ts = t0 - 1e-6;
  double p[4] = {0.7 * c[ip], 0.3 * c[ip], 3.0, 0.05};
  double *y = malloc(sizeof(double) * (size_t)n * 2);
  if (!y) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "fitted AIF: out of memory");
  double *y2 = y + n;
  double lambda = 1e-3, s = sse_of(p, t0, ts, n, t, c, y);
  for (int it = 0; it < 200; ++it) {
    double J[4][4] = {{0}}, g[4] = {0};
    double h[4];
    for (int k = 0; k < 4; ++k) h[k] = 1e-6 * fmax(fabs(p[k]), 1e-3);
    /* numerical Jacobian, accumulated into J^T J and J^T r */
    double *col[4];
    double *buf = malloc(sizeof(double) * (size_t)n * 4);
    if (!buf) { free(y); return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "fitted AIF: out of memory"); }
    for (int k = 0; k < 4; ++k) {
      col[k] = buf + k * n;
      double q[4] = {p[0], p[1], p[2], p[3]};
      q[k] += h[k];
      biexp_eval(q, t0, ts, 0, n, t, y2);
      for (int64_t i = 0; i < n; ++i) col[k][i] = (y2[i] - y[i]) / h[k];
    }
    for (int64_t i = 0; i < n; ++i) {
      if (!isfinite(c[i])) continue;
      double r = c[i] - y[i];
      for (int a = 0; a < 4; ++a) {
        g[a] += col[a][i] * r;
        for (int b = 0; b < 4; ++b) J[a][b] += col[a][i] * col[b][i];
      }
    }
    free(buf);
    int accepted = 0;
    for (int tries = 0; tries < 10 && !accepted; ++tries) {
      double A[4][4], b[4], dx[4];
      for (int a = 0; a < 4; ++a) {
        for (int bb = 0; bb < 4; ++bb) A[a][bb] = J[a][bb];
        A[a][a] *= 1 + lambda;
        A[a][a] += 1e-12;
        b[a] = g[a];
      }
      if (!solve4(A, b, dx)) { lambda *= 10; continue; }
      double q[4];
      for (int k = 0; k < 4; ++k) q[k] = fmax(0.0, p[k] + dx[k]);
      double s2 = sse_of(q, t0, ts, n, t, c, y2);
      if (s2 < s) {
        double rel = (s - s2) / fmax(s, 1e-300);
        memcpy(p, q, sizeof p);
        s = s2;
        memcpy(y, y2, sizeof(double) * (size_t)n);
        lambda *= 0.1;
        accepted = 1;
        if (rel < 1e-10) it = 1000;
      } else {
        lambda *= 10;
      }
    }
    if (!accepted) break;
  }
  biexp_eval(p, t0, ts, 0, n, t, fitted);
  if (params) { params[0] = p[0]; params[1] = p[1]; params[2] = p[2]; params[3] = p[3]; params[4] = t0; params[5] = ts; }
  free(y);
  return LUMEN_OK;
}
