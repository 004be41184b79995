/* Population AIFs and SPGR signal <-> R1 <-> concentration (include/lumen/aif.h). */
#include <math.h>
#include <string.h>
#include "core/internal.h"
#include "lumen/aif.h"

static const char *const k_aif_names[LUMEN_AIF_COUNT] = {"parker", "georgiou", "weinmann",
                                                         "fritz-hansen"};

const char *lumen_aif_name(lumen_aif_kind kind) {
  if ((int)kind < 0 || (int)kind >= LUMEN_AIF_COUNT) return "unknown";
  return k_aif_names[kind];
}

lumen_status lumen_aif_parse(const char *name, lumen_aif_kind *out) {
  if (!name || !out) return LUMEN_ERR_INVALID_ARGUMENT;
  for (int k = 0; k < LUMEN_AIF_COUNT; ++k) {
    if (strcmp(name, k_aif_names[k]) == 0) {
      *out = (lumen_aif_kind)k;
      return LUMEN_OK;
    }
  }
  return LUMEN_ERR_INVALID_ARGUMENT;
}

int lumen_aif_is_plasma(lumen_aif_kind kind) {
  switch (kind) {
    case LUMEN_AIF_PARKER: case LUMEN_AIF_GEORGIOU: return 0;
    case LUMEN_AIF_WEINMANN: case LUMEN_AIF_FRITZ_HANSEN: return 1;
    default: return -1;
  }
}

void lumen_aif_options_init(lumen_aif_options *opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->kind = LUMEN_AIF_PARKER;
  opts->delay = 0.0;
  opts->hct = LUMEN_AIF_DEFAULT_HCT;
  opts->plasma = 1;
  opts->dose = LUMEN_AIF_DEFAULT_DOSE;
}

/* Parker et al. 2006, whole blood, t in minutes from arrival (t >= 0). */
static double parker_cb(double t) {
  static const double A1 = 0.809, T1 = 0.17046, s1 = 0.0563;
  static const double A2 = 0.330, T2 = 0.365, s2 = 0.132;
  static const double alpha = 1.050, beta = 0.1685, s = 38.078, tau = 0.483;
  const double r2pi = 2.5066282746310002;
  double g1 = A1 / (s1 * r2pi) * exp(-(t - T1) * (t - T1) / (2 * s1 * s1));
  double g2 = A2 / (s2 * r2pi) * exp(-(t - T2) * (t - T2) / (2 * s2 * s2));
  double sig = alpha * exp(-beta * t) / (1 + exp(-s * (t - tau)));
  return g1 + g2 + sig;
}

/* log Gamma(x) for x > 0 (Lanczos, g = 7, n = 9; relative error ~1e-15). Not lgamma(): that one
   writes the global signgam, a data race when several threads build AIFs. */
static double log_gamma(double x) {
  static const double c[9] = {0.99999999999980993,  676.5203681218851,    -1259.1392167224028,
                              771.32342877765313,   -176.61502916214059,  12.507343278686905,
                              -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7};
  if (x < 0.5) return log(3.14159265358979323846 / sin(3.14159265358979323846 * x)) - log_gamma(1 - x);
  x -= 1;
  double a = c[0];
  double t = x + 7.5;
  for (int i = 1; i < 9; ++i) a += c[i] / (x + i);
  return 0.91893853320467274178 + (x + 0.5) * log(t) - t + log(a);
}

/* Georgiou et al. 2018, whole blood, t in minutes from arrival (t >= 0):
   Cb = (sum_i A_i e^{-m_i t}) sum_{k=0}^{floor(t/tau)} g_{(k+1) alpha + k, beta}(t - k tau),
   g_{a,b}(u) = u^a e^{-u/b} / (b^{a+1} Gamma(a+1)). */
static double georgiou_cb(double t) {
  static const double A[3] = {0.37, 0.33, 10.06}, m[3] = {0.11, 1.17, 16.02};
  static const double alpha = 5.26, beta = 0.032, tau = 0.129;
  if (!(t > 0)) return 0.0;
  double e = 0;
  for (int i = 0; i < 3; ++i) e += A[i] * exp(-m[i] * t);
  double sum = 0;
  const double lb = log(beta);
  int64_t kmax = (int64_t)floor(t / tau);
  for (int64_t k = 0; k <= kmax; ++k) {
    double u = t - (double)k * tau;
    if (!(u > 0)) continue;
    double a = (double)(k + 1) * alpha + (double)k;
    sum += exp(a * log(u) - u / beta - (a + 1) * lb - log_gamma(a + 1));
  }
  return e * sum;
}

/* Linear interpolation in (tt, cc) at u <= tt[n-1] (held at cc[0] before tt[0]); binary search. */
static double table_interp(const double *tt, const double *cc, int64_t n, double u) {
  if (u <= tt[0]) return cc[0];
  int64_t lo = 0, hi = n - 1;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (tt[mid] <= u) lo = mid; else hi = mid;
  }
  double w = (u - tt[lo]) / (tt[hi] - tt[lo]);
  return cc[lo] + w * (cc[hi] - cc[lo]);
}

lumen_status lumen_aif_population(lumen_ctx *ctx, const lumen_aif_options *opts, int64_t n,
                                  const double *t, double *out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, opts);
  LUMEN_REQUIRE(ctx, n >= 0, "lumen_aif_population: n = %lld is negative", (long long)n);
  if (n == 0) return LUMEN_OK;
  LUMEN_REQUIRE_NOT_NULL(ctx, t);
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  int plasma_model = lumen_aif_is_plasma(opts->kind);
  LUMEN_REQUIRE(ctx, plasma_model >= 0, "lumen_aif_population: unknown AIF kind %d", (int)opts->kind);
  LUMEN_REQUIRE(ctx, isfinite(opts->delay) && opts->delay >= 0,
                "lumen_aif_population: delay %g min must be finite and >= 0", opts->delay);
  LUMEN_REQUIRE(ctx, isfinite(opts->hct) && opts->hct >= 0 && opts->hct < 1,
                "lumen_aif_population: hematocrit %g must be in [0, 1)", opts->hct);
  LUMEN_REQUIRE(ctx, opts->kind != LUMEN_AIF_WEINMANN || (isfinite(opts->dose) && opts->dose > 0),
                "lumen_aif_population: Weinmann dose %g mmol/kg must be > 0", opts->dose);
  const int use_table = opts->table_n > 0 || opts->table_t || opts->table_c;
  if (use_table) {
    LUMEN_REQUIRE(ctx, opts->kind == LUMEN_AIF_GEORGIOU,
                  "lumen_aif_population: a table is only accepted for the Georgiou AIF");
    LUMEN_REQUIRE(ctx, opts->table_t && opts->table_c && opts->table_n >= 2,
                  "lumen_aif_population: the Georgiou table needs table_t, table_c and table_n >= 2");
    for (int64_t j = 0; j < opts->table_n; ++j) {
      LUMEN_REQUIRE(ctx, isfinite(opts->table_t[j]) && isfinite(opts->table_c[j]),
                    "lumen_aif_population: table entry %lld is not finite", (long long)j);
      LUMEN_REQUIRE(ctx, j == 0 || opts->table_t[j] > opts->table_t[j - 1],
                    "lumen_aif_population: table times must increase (entry %lld)", (long long)j);
    }
  }
  /* factor from the model's own quantity to the requested one */
  double f = 1.0;
  if (opts->plasma && !plasma_model) f = 1.0 / (1.0 - opts->hct);
  if (!opts->plasma && plasma_model) f = 1.0 - opts->hct;
  for (int64_t i = 0; i < n; ++i) {
    LUMEN_REQUIRE(ctx, isfinite(t[i]), "lumen_aif_population: t[%lld] is not finite", (long long)i);
    double u = t[i] - opts->delay;
    double v = 0.0;
    if (u >= 0) {
      switch (opts->kind) {
        case LUMEN_AIF_PARKER: v = parker_cb(u); break;
        case LUMEN_AIF_GEORGIOU:
          v = (use_table && u <= opts->table_t[opts->table_n - 1])
                  ? table_interp(opts->table_t, opts->table_c, opts->table_n, u)
                  : georgiou_cb(u);
          break;
        case LUMEN_AIF_WEINMANN: v = opts->dose * (3.99 * exp(-0.144 * u) + 4.78 * exp(-0.0111 * u)); break;
        case LUMEN_AIF_FRITZ_HANSEN: v = 2.4 * exp(-3.0 * u) + 0.62 * exp(-0.016 * u); break;
        default: break;
      }
    }
    out[i] = f * v;
  }
  return LUMEN_OK;
}

/* ---------------------------------------------------------------- SPGR */

const char *lumen_conc_state_name(lumen_conc_state state) {
  switch (state) {
    case LUMEN_CONC_OK: return "ok";
    case LUMEN_CONC_OUT_OF_RANGE: return "out_of_range";
    case LUMEN_CONC_NOT_FINITE: return "not_finite";
    case LUMEN_CONC_BAD_BASELINE: return "bad_baseline";
    default: return "unknown";
  }
}

void lumen_spgr_options_init(lumen_spgr_options *opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->flip_angle = 0;
  opts->tr = 0;
  opts->r1 = LUMEN_DEFAULT_RELAXIVITY;
  opts->b1 = 1.0;
  opts->baseline_start = 1;
  opts->baseline_end = 2;
  opts->invalid_value = 0.0;
}

static lumen_status check_spgr(lumen_ctx *ctx, const char *fn, const lumen_spgr_options *o) {
  const double pi = 3.14159265358979323846;
  LUMEN_REQUIRE(ctx, isfinite(o->tr) && o->tr > 0, "%s: TR %g s must be > 0", fn, o->tr);
  LUMEN_REQUIRE(ctx, isfinite(o->b1) && o->b1 > 0, "%s: B1 scale %g must be > 0", fn, o->b1);
  double a = o->b1 * o->flip_angle;
  LUMEN_REQUIRE(ctx, isfinite(a) && a > 0 && a < pi,
                "%s: flip angle %g rad (x B1 %g) must be in (0, pi)", fn, o->flip_angle, o->b1);
  LUMEN_REQUIRE(ctx, isfinite(o->invalid_value), "%s: invalid_value must be finite", fn);
  return LUMEN_OK;
}

/* signal -> R1 (to_conc = 0) or -> concentration (to_conc = 1); see aif.h. */
static lumen_status spgr_convert(lumen_ctx *ctx, const char *fn, const lumen_spgr_options *opts,
                                 double t10, int64_t n, const double *signal, double *out,
                                 uint8_t *state, int64_t *n_invalid, int to_conc) {
  LUMEN_REQUIRE(ctx, opts != NULL, "%s: argument 'opts' is NULL", fn);
  LUMEN_REQUIRE(ctx, signal != NULL, "%s: argument 'signal' is NULL", fn);
  LUMEN_REQUIRE(ctx, out != NULL, "%s: output array is NULL", fn);
  LUMEN_REQUIRE(ctx, n >= 1, "%s: n = %lld must be >= 1", fn, (long long)n);
  lumen_status st = check_spgr(ctx, fn, opts);
  if (st != LUMEN_OK) return st;
  LUMEN_REQUIRE(ctx, !to_conc || (isfinite(opts->r1) && opts->r1 > 0),
                "%s: relaxivity %g /mM/s must be > 0", fn, opts->r1);
  LUMEN_REQUIRE(ctx, opts->baseline_start >= 0 && opts->baseline_start < opts->baseline_end &&
                         opts->baseline_end <= n,
                "%s: baseline samples [%lld, %lld) must be a non-empty range inside [0, %lld)", fn,
                (long long)opts->baseline_start, (long long)opts->baseline_end, (long long)n);
  const double a = opts->b1 * opts->flip_angle, ca = cos(a), tr = opts->tr;
  double s0 = 0;
  for (int64_t i = opts->baseline_start; i < opts->baseline_end; ++i) s0 += signal[i];
  s0 /= (double)(opts->baseline_end - opts->baseline_start);
  int baseline_ok = isfinite(s0) && s0 > 0 && isfinite(t10) && t10 > 0;
  double m0sa = 0;
  if (baseline_ok) {
    double e10 = exp(-tr / t10);
    m0sa = s0 * (1 - ca * e10) / (1 - e10);
    baseline_ok = isfinite(m0sa) && m0sa > 0;
  }
  /* one division per sample: x = s (1 / M0sa); C = log(E1) (-1 / (TR r1)) - (1 / T10) / r1, the
     operations of stage A (src/pipeline/conc.c), which gives the same bits */
  const double inv_m0sa = 1.0 / m0sa, k = to_conc ? -1.0 / (tr * opts->r1) : 0, c0 = to_conc ? -(1.0 / t10) / opts->r1 : 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint8_t s = LUMEN_CONC_OK;
    double v = opts->invalid_value;
    if (!baseline_ok) {
      s = LUMEN_CONC_BAD_BASELINE;
    } else if (!isfinite(signal[i])) {
      s = LUMEN_CONC_NOT_FINITE;
    } else {
      double x = signal[i] * inv_m0sa;
      double e1 = (1 - x) / (1 - x * ca);
      if (e1 > 0 && e1 < 1) {
        v = to_conc ? log(e1) * k + c0 : -log(e1) / tr;
      } else {
        s = LUMEN_CONC_OUT_OF_RANGE;
      }
    }
    if (s != LUMEN_CONC_OK) ++bad;
    out[i] = v;
    if (state) state[i] = s;
  }
  if (n_invalid) *n_invalid = bad;
  return LUMEN_OK;
}

lumen_status lumen_spgr_signal_to_r1(lumen_ctx *ctx, const lumen_spgr_options *opts, double t10,
                                     int64_t n, const double *signal, double *r1_out,
                                     uint8_t *state, int64_t *n_invalid) {
  return spgr_convert(ctx, "lumen_spgr_signal_to_r1", opts, t10, n, signal, r1_out, state,
                      n_invalid, 0);
}

lumen_status lumen_spgr_signal_to_conc(lumen_ctx *ctx, const lumen_spgr_options *opts, double t10,
                                       int64_t n, const double *signal, double *conc_out,
                                       uint8_t *state, int64_t *n_invalid) {
  return spgr_convert(ctx, "lumen_spgr_signal_to_conc", opts, t10, n, signal, conc_out, state,
                      n_invalid, 1);
}

lumen_status lumen_conc_to_r1(lumen_ctx *ctx, double r10, double r1, int64_t n, const double *conc,
                              double *r1_out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, conc);
  LUMEN_REQUIRE_NOT_NULL(ctx, r1_out);
  LUMEN_REQUIRE(ctx, n >= 0, "lumen_conc_to_r1: n = %lld is negative", (long long)n);
  LUMEN_REQUIRE(ctx, isfinite(r10) && r10 > 0, "lumen_conc_to_r1: R10 %g /s must be > 0", r10);
  LUMEN_REQUIRE(ctx, isfinite(r1) && r1 > 0, "lumen_conc_to_r1: relaxivity %g /mM/s must be > 0", r1);
  for (int64_t i = 0; i < n; ++i) r1_out[i] = r10 + r1 * conc[i];
  return LUMEN_OK;
}

lumen_status lumen_spgr_r1_to_signal(lumen_ctx *ctx, const lumen_spgr_options *opts, double m0,
                                     int64_t n, const double *r1, double *signal_out) {
  static const char *fn = "lumen_spgr_r1_to_signal";
  LUMEN_REQUIRE_NOT_NULL(ctx, opts);
  LUMEN_REQUIRE_NOT_NULL(ctx, r1);
  LUMEN_REQUIRE_NOT_NULL(ctx, signal_out);
  LUMEN_REQUIRE(ctx, n >= 0, "%s: n = %lld is negative", fn, (long long)n);
  LUMEN_REQUIRE(ctx, isfinite(m0), "%s: M0 must be finite", fn);
  lumen_status st = check_spgr(ctx, fn, opts);
  if (st != LUMEN_OK) return st;
  const double a = opts->b1 * opts->flip_angle, sa = sin(a), ca = cos(a);
  for (int64_t i = 0; i < n; ++i) {
    double e1 = exp(-opts->tr * r1[i]);
    signal_out[i] = m0 * sa * (1 - e1) / (1 - ca * e1);
  }
  return LUMEN_OK;
}
