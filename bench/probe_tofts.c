/* The scalar Tofts probe (probe_tofts.h). Bounds: Ktrans [1e-5, 5] /min, ve [1e-4, 1]; tolerance
   1e-6 on the relative change of chi-square and of the parameters, at most 200 iterations. */
#include "probe_tofts.h"
#include <math.h>
#include <stddef.h>
#ifdef _OPENMP
#include <omp.h>
#endif

enum { PROBE_MAX_N = 1024 };
static const double lo[2] = {1e-5, 1e-4}, hi[2] = {5.0, 1.0};

/* Model and its derivatives at (K, ve): C_i = K G_i(kep), kep = K / ve, with
   G_i = G_{i-1} d + dt/2 (cp_{i-1} d + cp_i), d = exp(-kep dt); H = dG/dkep by the same recursion.
   Returns chi-square against y; fills the residuals r and jk, jv (dC/dK, dC/dve) when jk is not NULL. */
static double tofts_eval(int n, double dt, const double *cp, const double *y, double k, double ve, double *r,
                         double *jk, double *jv) {
  const double kep = k / ve, d = exp(-kep * dt), dd = -dt * d, h2 = 0.5 * dt;
  double g = 0, h = 0, chi2 = y[0] * y[0];
  if (jk) { r[0] = y[0]; jk[0] = 0; jv[0] = 0; }
  for (int i = 1; i < n; ++i) {
    double hn = h * d + g * dd + h2 * cp[i - 1] * dd;
    g = g * d + h2 * (cp[i - 1] * d + cp[i]);
    h = hn;
    double ri = y[i] - k * g;
    chi2 += ri * ri;
    if (jk) {
      r[i] = ri;
      jk[i] = g + k * h / ve;            /* dC/dK = G + K H dkep/dK */
      jv[i] = -k * h * kep / ve;         /* dC/dve = K H dkep/dve, dkep/dve = -K / ve^2 */
    }
  }
  return chi2;
}

static double clampd(double v, int i) { return v < lo[i] ? lo[i] : v > hi[i] ? hi[i] : v; }

/* Murase: C_i = K int cp - kep int C, linear least squares in (K, kep). */
static void lls_start(int n, double dt, const double *cp, const double *y, double *k, double *ve) {
  double icp = 0, ic = 0, a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
  for (int i = 1; i < n; ++i) {
    icp += 0.5 * dt * (cp[i - 1] + cp[i]);
    ic += 0.5 * dt * (y[i - 1] + y[i]);
    double u = icp, v = -ic;
    a11 += u * u; a12 += u * v; a22 += v * v; b1 += u * y[i]; b2 += v * y[i];
  }
  double det = a11 * a22 - a12 * a12;
  double kk = det != 0 ? (b1 * a22 - b2 * a12) / det : NAN, kep = det != 0 ? (a11 * b2 - a12 * b1) / det : NAN;
  if (!(isfinite(kk) && isfinite(kep) && kk > 0 && kep > 0)) { kk = 0.1; kep = 0.3; }
  *k = clampd(kk, 0);
  *ve = clampd(kk / kep, 1);
}

static void fit_one(int n, double dt, const double *cp, const float *row, double *kout, double *vout) {
  double y[PROBE_MAX_N], buf[2][3][PROBE_MAX_N]; /* residuals and Jacobian: accepted point, trial */
  int cur = 0;
  for (int i = 0; i < n; ++i) y[i] = row[i];
  double k, ve;
  lls_start(n, dt, cp, y, &k, &ve);
  double chi2 = tofts_eval(n, dt, cp, y, k, ve, buf[0][0], buf[0][1], buf[0][2]), lambda = 1e-3;
  for (int it = 0; it < 200; ++it) {
    const double *r = buf[cur][0], *jk = buf[cur][1], *jv = buf[cur][2];
    double a11 = 0, a12 = 0, a22 = 0, g1 = 0, g2 = 0;
    for (int i = 0; i < n; ++i) {
      a11 += jk[i] * jk[i]; a12 += jk[i] * jv[i]; a22 += jv[i] * jv[i];
      g1 += jk[i] * r[i]; g2 += jv[i] * r[i];
    }
    int accepted = 0, done = 0;
    while (!accepted && lambda < 1e12) {
      double m11 = a11 * (1 + lambda), m22 = a22 * (1 + lambda), det = m11 * m22 - a12 * a12;
      if (!(det > 0)) { lambda *= 10; continue; }
      double nk = clampd(k + (g1 * m22 - g2 * a12) / det, 0), nv = clampd(ve + (m11 * g2 - a12 * g1) / det, 1);
      double *t = buf[1 - cur][0];
      double c2 = tofts_eval(n, dt, cp, y, nk, nv, t, buf[1 - cur][1], buf[1 - cur][2]);
      if (c2 < chi2) {
        done = chi2 - c2 <= 1e-6 * chi2 && fabs(nk - k) <= 1e-6 * k && fabs(nv - ve) <= 1e-6 * ve;
        k = nk; ve = nv; chi2 = c2;
        cur = 1 - cur;
        lambda *= 0.1;
        accepted = 1;
      } else {
        lambda *= 10;
      }
    }
    if (!accepted || done) break;
  }
  *kout = isfinite(chi2) ? k : NAN;
  *vout = isfinite(chi2) ? ve : NAN;
}

void probe_tofts_fit(int n, double dt, const double *cp, int64_t curves, const float *data, int threads,
                     double *ktrans, double *ve) {
  if (n < 3 || n > PROBE_MAX_N) {
    for (int64_t c = 0; c < curves; ++c) ktrans[c] = ve[c] = NAN;
    return;
  }
  (void)threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 64) num_threads(threads > 0 ? threads : 1)
#endif
  for (int64_t c = 0; c < curves; ++c) fit_one(n, dt, cp, data + c * (int64_t)n, &ktrans[c], &ve[c]);
}
