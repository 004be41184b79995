/* Fitting benchmark: fits per second per model and tier on synthetic curves, with the accuracy
 * of each tier beside its speed and the accelerated/standard speed ratio from the same run.
 * Never run by the tests (timings are not asserted anywhere); `make bench` runs it.
 *
 * Data (issue 3, item 7): Parker population AIF (lumen_aif_population) with hematocrit 0.42 and
 * a 1 min arrival delay, 5 s frames (80 samples unless --points says otherwise), Ktrans uniform
 * in [0.01, 0.5] /min, ve uniform in [0.05, 0.6], Gaussian noise SD 0.005 mM on the tissue
 * concentration, tolerance 1e-6, max 200 iterations; other models' parameters are drawn as
 * listed in draw_truth(). T1 models: flip angles 2, 5, 10, 15 deg (VFA, TR 5 ms), 8 inversion
 * times (IR, TR 6 s), 8 recovery times (SR), T1 uniform in [0.5, 2.5] s, M0 in [500, 5000],
 * noise SD 0.5 % of the curve's largest noise-free sample. Accuracy: median relative error of Ktrans (T1 for the T1 models) over
 * the curves with a finite result, against the truth the curve was made from.
 *
 * Everything goes through the public API (include/lumen/fit.h): one plan per (model, points,
 * tier) with the tier pinned by opts.backend, and lumen_fit_execute on float32 data. The
 * standard tier (one GSL fit per curve, the oracle) is timed on the first --standard-max curves
 * of the same data set; its rate is fits per second on those. Every measurement runs in chunks
 * and stops after the chunk that passes --budget seconds: the curves column says how many
 * curves were actually fitted. Each row is measured --repeat times (default 3), the tiers and the
 * probe taking turns, and the fastest measurement is reported: on a shared (virtual) machine a
 * single run of one row varied by up to 1.5x with what else ran, and taking turns gives every row
 * the same chances.
 *
 *   bench_fit [--quick] [--models LIST] [--tiers LIST] [--curves LIST] [--points LIST]
 *             [--scaling-model NAME] [--standard-max N] [--budget S] [--seed N] [--repeat N]
 *   LIST is comma-separated; tiers: cpu, cpu_single, standard, cuda. See --help.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lumen/lumen.h"
#include "lumen/aif.h"
#include "lumen/fit.h"
#include "models/models_f64.h"
#include "lumen_build_config.h"
#include "core/internal.h"  /* lumen_now_seconds */
#include "probe_tofts.h"
#include "bench_util.h"

#define MAX_LIST 16
#define FRAME_S 5.0
/* --uneven: the first half of the samples 2 s apart (the bolus), the rest 8 s (5 s on average) */
static int g_uneven;
/* --jitter MS: each frame time moved by up to +-MS/2 milliseconds (as DICOM trigger or acquisition
   times carry), from a fixed sequence */
static double g_jitter_ms;
#define HCT 0.42
#define AIF_DELAY_MIN 1.0
#define NOISE_MM 0.005
#define R1_RELAXIVITY 4.5
#define BENCH_PI 3.14159265358979323846

/* ------------------------------------------------------------------ options */

typedef struct bench_opts {
  lumen_model models[MAX_LIST];
  int n_models;
  char tiers[MAX_LIST][16];
  int n_tiers;
  int64_t curves[MAX_LIST];  /* curve-count sweep (80 points) */
  int n_curves;
  int points[MAX_LIST];      /* time-point sweep */
  int n_points;
  int64_t model_curves;      /* curves for the per-model table */
  int64_t points_curves;     /* curves for the time-point sweep */
  int64_t standard_max;      /* standard tier: at most this many curves per measurement */
  lumen_model scaling_model;
  uint64_t seed;
  double budget;             /* seconds per measurement (a tier stops after the chunk that passes it) */
  int64_t volume[4];         /* --volume NXxNYxNZxNT (0: none; default 256x256x32x80 when a tier is cuda) */
  int volume_set;            /* --volume given */
  int probe;                 /* the scalar probe's row beside every Tofts row (default on; --no-probe) */
  int simd;                  /* lumen_cpu_simd limit of the context (--simd; default auto) */
  int ci;                    /* ask for the 95 % confidence intervals and R^2, as lumen dce does (default on; --no-ci) */
  int repeat;                /* measurements per row, the fastest reported (default 3; --quick: 1) */
} bench_opts;

static void usage(FILE *f) {
  fprintf(f,
          "bench_fit: fits per second per model and tier on synthetic curves (see docs/BENCHMARKS.md)\n"
          "  --quick               a few-second run (small sizes)\n"
          "  --no-ci               do not ask for confidence intervals and R^2 (lumen dce asks for both)\n"
          "  --no-probe            leave out the scalar probe row (bench/probe_tofts.c) beside Tofts rows\n"
          "  --uneven              uneven frames: the first half 2 s apart, the rest 8 s (5 s on average)\n"
          "  --jitter MS           frame times moved by up to +-MS/2 ms each (DICOM times with jitter)\n"
          "  --simd off|avx2|avx512  cap the vector instructions of the fit lanes (lumen_ctx_set_cpu_simd)\n"
          "  --models LIST         models of the per-model table (default: all fitted models)\n"
          "  --tiers LIST          tiers to time (default: cpu,cpu_single,standard)\n"
          "  --model-curves N      curves per model in the per-model table (default 100000)\n"
          "  --curves LIST         curve counts of the curve sweep at 80 points (default 1000,...,1000000)\n"
          "  --points LIST         time points of the point sweep (default 40,80,160,320,640)\n"
          "  --points-curves N     curves per point count (default 100000)\n"
          "  --scaling-model NAME  model of both sweeps (default tofts)\n"
          "  --standard-max N      standard tier: time at most N curves per row (default 20000)\n"
          "  --budget S            seconds per measurement: a slow tier stops after the chunk of curves\n"
          "                        that passes S and reports the curves it fitted (default 10)\n"
          "  --seed N              random seed (default 1)\n"
          "  --repeat N            measurements of every row, taken in turns, the fastest reported (default 3;\n"
          "                        --quick: 1)\n"
          "  --volume DIMS|none    one Tofts volume NXxNYxNZxNT fitted in one call per tier (not standard),\n"
          "                        host memory to host results (default 256x256x32x80 when a tier is cuda)\n");
}

static int parse_i64_list(const char *s, int64_t *out, int max) {
  int n = 0;
  while (s && *s && n < max) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 1) return -1;
    out[n++] = (int64_t)v;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return -1;
  }
  return n;
}

static int parse_models(const char *s, lumen_model *out, int max) {
  int n = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *tok = strtok(buf, ","); tok && n < max; tok = strtok(NULL, ",")) {
    if (lumen_model_parse(tok, &out[n]) != LUMEN_OK) {
      fprintf(stderr, "bench_fit: unknown model '%s'\n", tok);
      return -1;
    }
    ++n;
  }
  return n;
}

static int parse_args(int argc, char **argv, bench_opts *o) {
  const lumen_model all[] = {LUMEN_MODEL_TOFTS, LUMEN_MODEL_ETOFTS, LUMEN_MODEL_PATLAK,
                             LUMEN_MODEL_2CUM,  LUMEN_MODEL_2CXM,   LUMEN_MODEL_FXR,
                             LUMEN_MODEL_VFA,   LUMEN_MODEL_IR,     LUMEN_MODEL_SR};
  *o = (bench_opts){.model_curves = 100000, .points_curves = 100000, .standard_max = 20000,
                    .scaling_model = LUMEN_MODEL_TOFTS, .seed = 1, .budget = 10.0, .probe = 1, .ci = 1, .repeat = 3};
  o->n_models = (int)(sizeof all / sizeof all[0]);
  memcpy(o->models, all, sizeof all);
  const char *tiers[] = {"cpu", "cpu_single", "standard"};
  o->n_tiers = 3;
  for (int i = 0; i < 3; ++i) snprintf(o->tiers[i], sizeof o->tiers[i], "%s", tiers[i]);
  const int64_t curves[] = {1000, 10000, 100000, 1000000};
  o->n_curves = 4;
  memcpy(o->curves, curves, sizeof curves);
  const int points[] = {40, 80, 160, 320, 640};
  o->n_points = 5;
  memcpy(o->points, points, sizeof points);
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    int64_t list[MAX_LIST];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    } else if (!strcmp(a, "--no-ci")) {
      o->ci = 0;
    } else if (!strcmp(a, "--no-probe")) {
      o->probe = 0;
    } else if (!strcmp(a, "--uneven")) {
      g_uneven = 1;
    } else if (v && !strcmp(a, "--jitter")) {
      char *end;
      g_jitter_ms = strtod(v, &end);
      if (*end || !(g_jitter_ms >= 0) || g_jitter_ms > 1000) return -1;
      ++i;
    } else if (v && !strcmp(a, "--simd")) {
      if (!strcmp(v, "off")) o->simd = LUMEN_CPU_SIMD_OFF;
      else if (!strcmp(v, "avx2")) o->simd = LUMEN_CPU_SIMD_AVX2;
      else if (!strcmp(v, "avx512")) o->simd = LUMEN_CPU_SIMD_AVX512;
      else return -1;
      ++i;
    } else if (!strcmp(a, "--quick")) {
      const int64_t quick_curves[] = {1000, 10000};
      const int quick_points[] = {40, 80, 160};
      o->budget = 0.5;
      o->repeat = 1;
      o->model_curves = o->points_curves = 2000;
      o->standard_max = 300;
      o->n_curves = 2;
      memcpy(o->curves, quick_curves, sizeof quick_curves);
      o->n_points = 3;
      memcpy(o->points, quick_points, sizeof quick_points);
    } else if (v && !strcmp(a, "--models")) {
      if ((o->n_models = parse_models(v, o->models, MAX_LIST)) < 1) return -1;
      ++i;
    } else if (v && !strcmp(a, "--tiers")) {
      char buf[256];
      snprintf(buf, sizeof buf, "%s", v);
      o->n_tiers = 0;
      for (char *tok = strtok(buf, ","); tok && o->n_tiers < MAX_LIST; tok = strtok(NULL, ","))
        snprintf(o->tiers[o->n_tiers++], sizeof o->tiers[0], "%s", tok);
      ++i;
    } else if (v && !strcmp(a, "--curves")) {
      if ((o->n_curves = parse_i64_list(v, o->curves, MAX_LIST)) < 0) return -1;
      ++i;
    } else if (v && !strcmp(a, "--points")) {
      int n = parse_i64_list(v, list, MAX_LIST);
      if (n < 0) return -1;
      for (int k = 0; k < n; ++k) o->points[k] = (int)list[k];
      o->n_points = n;
      ++i;
    } else if (v && (!strcmp(a, "--model-curves") || !strcmp(a, "--points-curves") || !strcmp(a, "--standard-max") ||
                     !strcmp(a, "--seed"))) {
      if (parse_i64_list(v, list, 1) != 1) return -1;
      if (!strcmp(a, "--model-curves")) o->model_curves = list[0];
      else if (!strcmp(a, "--points-curves")) o->points_curves = list[0];
      else if (!strcmp(a, "--standard-max")) o->standard_max = list[0];
      else o->seed = (uint64_t)list[0];
      ++i;
    } else if (v && !strcmp(a, "--repeat")) {
      o->repeat = atoi(v);
      if (o->repeat < 1) return -1;
      ++i;
    } else if (v && !strcmp(a, "--budget")) {
      o->budget = atof(v);
      if (!(o->budget > 0)) return -1;
      ++i;
    } else if (v && !strcmp(a, "--volume")) {
      o->volume_set = 1;
      memset(o->volume, 0, sizeof o->volume);
      if (strcmp(v, "none") != 0) {
        long long d0, d1, d2, d3;
        char extra;
        if (sscanf(v, "%lldx%lldx%lldx%lld%c", &d0, &d1, &d2, &d3, &extra) != 4 || d0 < 1 || d1 < 1 || d2 < 1 ||
            d3 < 2 || d3 > 4096 || d0 * d1 * d2 > ((int64_t)1 << 28)) {
          fprintf(stderr, "bench_fit: --volume %s: expected NXxNYxNZxNT (e.g. 256x256x32x80) or none\n", v);
          return -1;
        }
        o->volume[0] = d0;
        o->volume[1] = d1;
        o->volume[2] = d2;
        o->volume[3] = d3;
      }
      ++i;
    } else if (v && !strcmp(a, "--scaling-model")) {
      if (lumen_model_parse(v, &o->scaling_model) != LUMEN_OK) return -1;
      ++i;
    } else {
      fprintf(stderr, "bench_fit: unknown or incomplete option '%s'\n", a);
      return -1;
    }
  }
  return 0;
}

/* ------------------------------------------------------------------ random numbers */

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
typedef struct rng { uint64_t s; } rng;
static double rng_u(rng *r) {
  r->s += 0x9E3779B97F4A7C15ull;
  return ((double)(mix64(r->s) >> 11) + 0.5) / 9007199254740992.0;
}
static double rng_range(rng *r, double a, double b) { return a + (b - a) * rng_u(r); }
static double rng_normal(rng *r) {
  double u1 = rng_u(r), u2 = rng_u(r);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * BENCH_PI * u2);
}

/* ------------------------------------------------------------------ synthetic data */

typedef struct dataset {
  lumen_model model;
  int n;                  /* samples */
  int64_t curves;
  double *x;              /* n: times (min) / flip angles (rad) / TI or recovery times (s) */
  double *cp;             /* n: plasma AIF (DCE) */
  double tr;              /* vfa, ir */
  float *data;            /* curves x n */
  float *consts;          /* curves x LUMEN_FIT_NCONSTS (fxr: R10) or NULL */
  double *truth;          /* curves: Ktrans (DCE) or T1 (T1 models), public units */
} dataset;

static void dataset_free(dataset *d) {
  free(d->x);
  free(d->cp);
  free(d->data);
  free(d->consts);
  free(d->truth);
  memset(d, 0, sizeof *d);
}

/* Truth of one curve, FIT parameters (2cxm: E, ve, vp, Fp). Returns the reported truth. */
static double draw_truth(lumen_model m, rng *r, double *p) {
  switch (m) {
    case LUMEN_MODEL_TOFTS:
    case LUMEN_MODEL_ETOFTS:
    case LUMEN_MODEL_FXR:
      p[0] = rng_range(r, 0.01, 0.5);                   /* Ktrans /min */
      p[1] = rng_range(r, 0.05, 0.6);                   /* ve */
      p[2] = m == LUMEN_MODEL_FXR ? rng_range(r, 0.005, 0.05) /* tau, min */
                                  : rng_range(r, 0.01, 0.1);  /* vp */
      return p[0];
    case LUMEN_MODEL_PATLAK:
      p[0] = rng_range(r, 0.01, 0.5);                   /* Ktrans */
      p[1] = rng_range(r, 0.01, 0.1);                   /* vp */
      return p[0];
    case LUMEN_MODEL_2CUM:
      p[0] = rng_range(r, 0.01, 0.5);                   /* Ktrans */
      p[1] = rng_range(r, 0.6, 1.5);                    /* Fp /min */
      p[2] = rng_range(r, 0.05, 0.3);                   /* Tp min */
      return p[0];
    case LUMEN_MODEL_2CXM: {
      double kt = rng_range(r, 0.01, 0.5);
      p[3] = rng_range(r, 0.6, 1.5);                    /* Fp */
      p[0] = kt / p[3];                                 /* E */
      p[1] = rng_range(r, 0.05, 0.6);                   /* ve */
      p[2] = rng_range(r, 0.01, 0.1);                   /* vp */
      return kt;
    }
    default:                                            /* T1 models */
      p[0] = rng_range(r, 0.5, 2.5);                    /* T1 s */
      p[1] = rng_range(r, 500.0, 5000.0);               /* M0 */
      return p[0];
  }
}

static int dataset_make(dataset *d, lumen_model m, int n, int64_t curves, uint64_t seed) {
  memset(d, 0, sizeof *d);
  d->model = m;
  d->curves = curves;
  int dce = lumen_model_is_dce(m);
  if (m == LUMEN_MODEL_VFA) n = 4;
  if (m == LUMEN_MODEL_IR || m == LUMEN_MODEL_SR) n = 8;
  d->n = n;
  d->x = calloc((size_t)n, sizeof *d->x);
  d->cp = calloc((size_t)n, sizeof *d->cp);
  d->data = malloc((size_t)curves * (size_t)n * sizeof *d->data);
  d->truth = malloc((size_t)curves * sizeof *d->truth);
  if (m == LUMEN_MODEL_FXR) d->consts = malloc((size_t)curves * LUMEN_FIT_NCONSTS * sizeof *d->consts);
  double *dt = calloc((size_t)n, sizeof *dt), *icp = calloc((size_t)n, sizeof *icp);
  double *y = calloc((size_t)n, sizeof *y);
  if (!d->x || !d->cp || !d->data || !d->truth || (m == LUMEN_MODEL_FXR && !d->consts) || !dt || !icp || !y) {
    free(dt);
    free(icp);
    free(y);
    dataset_free(d);
    return -1;
  }
  lumen_grid_f64 g;
  if (dce) {
    for (int i = 0; i < n; ++i)
      d->x[i] = !g_uneven ? i * FRAME_S / 60.0 : (i <= n / 2 ? 2.0 * i : 2.0 * (n / 2) + 8.0 * (i - n / 2)) / 60.0;
    for (int i = 1; i < n && g_jitter_ms > 0; ++i) {
      rng r = {mix64(0x6A177E5ull + (uint64_t)i)};
      d->x[i] += (rng_u(&r) - 0.5) * g_jitter_ms * 1e-3 / 60.0;
    }
    lumen_aif_options ao;
    lumen_aif_options_init(&ao);
    ao.kind = LUMEN_AIF_PARKER;
    ao.delay = AIF_DELAY_MIN;
    ao.hct = HCT;
    ao.plasma = 1;
    if (lumen_aif_population(NULL, &ao, n, d->x, d->cp) != LUMEN_OK) {
      free(dt);
      free(icp);
      free(y);
      dataset_free(d);
      return -1;
    }
    lumen_grid_setup_f64(&g, n, d->x, d->cp, dt, icp);
    g.r1 = R1_RELAXIVITY;
  } else {
    if (m == LUMEN_MODEL_VFA) {
      const double deg[4] = {2, 5, 10, 15};
      for (int i = 0; i < n; ++i) d->x[i] = deg[i] * BENCH_PI / 180.0;
      d->tr = 0.005;
    } else if (m == LUMEN_MODEL_IR) {
      const double ti[8] = {0.05, 0.15, 0.3, 0.6, 1.0, 1.6, 2.5, 4.0};
      memcpy(d->x, ti, sizeof ti);
      d->tr = 6.0;
    } else {
      const double tsr[8] = {0.1, 0.25, 0.5, 0.8, 1.2, 2.0, 3.5, 6.0};
      memcpy(d->x, tsr, sizeof tsr);
    }
    lumen_grid_setup_f64(&g, n, d->x, NULL, dt, NULL);
    g.n = n;
    g.tr = d->tr;
  }
  for (int64_t c = 0; c < curves; ++c) {
    rng r = {mix64(seed * 0x100000001B3ull + (uint64_t)c)};
    double p[4] = {0, 0, 0, 0}, consts[LUMEN_FIT_NCONSTS] = {1.0 / 1.4, 1.0};
    d->truth[c] = draw_truth(m, &r, p);
    lumen_model_eval_f64(m, &g, consts, p, y, NULL, NULL);
    double ymax = 0;
    for (int i = 0; i < n; ++i) ymax = fmax(ymax, fabs(y[i]));
    double sd = dce ? NOISE_MM : 0.005 * ymax;
    if (m == LUMEN_MODEL_FXR) sd = NOISE_MM * R1_RELAXIVITY; /* the same noise as R1 (1/s) */
    float *row = d->data + c * n;
    for (int i = 0; i < n; ++i) row[i] = (float)(y[i] + sd * rng_normal(&r));
    if (d->consts) {
      d->consts[c * LUMEN_FIT_NCONSTS + LUMEN_FIT_CONST_R10] = (float)consts[LUMEN_FIT_CONST_R10];
      d->consts[c * LUMEN_FIT_NCONSTS + LUMEN_FIT_CONST_B1] = 1.0f;
    }
  }
  free(dt);
  free(icp);
  free(y);
  return 0;
}

/* ------------------------------------------------------------------ one measurement */

typedef struct measure {
  int ok;                 /* 0: the tier could not run (reason in why) */
  double fits_per_s;
  double fits_per_cpu_s;  /* curves / process CPU seconds of the execute calls (all threads) */
  double median_rel_err;  /* over curves with a finite result */
  double finite_frac;     /* curves with a finite result */
  double converged_frac;
  double iters_per_fit;   /* mean lumen_fit_results.iterations (every start and restart) */
  int64_t curves;
  double kernel_s;        /* tier cuda: time the GPU ran the fitting kernels (lumen_fit_results.kernel_seconds) */
  double *param0;         /* curves: the reported Ktrans / T1 (for agreement), caller frees */
  char used[LUMEN_FIT_NAME_MAX];
  char why[160];
} measure;

/* CPU time of the process (every thread): on a machine shared with other work, curves per CPU
   second shows what the fitting costs, independently of how much of the machine it got. */
static double cpu_s(void) { return bench_seconds(CLOCK_PROCESS_CPUTIME_ID); }

static double median_inplace(double *v, int64_t n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Maps an output array's pages before a timing: a fill that is not zero, since GCC turns malloc
   followed by memset(p, 0, n) into calloc, whose fresh pages then fault inside the timed call
   (bench_fit did so until session 13: the fit rows paid ~60 B per curve of page faults, the probe
   ~16 B). The fitting overwrites every value. */
static void touch_pages(void *p, size_t bytes) {
  memset(p, 0xff, bytes);
}

static measure run_tier(lumen_ctx *ctx, const dataset *d, const char *tier, int64_t curves, double budget, int ci) {
  measure me = {.curves = curves};
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.model = d->model;
  o.tolerance = 1e-6;
  o.max_iterations = 200;
  o.backend = tier;
  o.tr = d->tr;
  o.r1 = R1_RELAXIVITY;
  lumen_fit_plan *plan = NULL;
  lumen_status s = lumen_fit_plan_create(ctx, &o, d->n, d->x, lumen_model_is_dce(d->model) ? d->cp : NULL, &plan);
  if (s != LUMEN_OK) {
    snprintf(me.why, sizeof me.why, "plan: %s", lumen_ctx_last_error(ctx));
    return me;
  }
  const char *sel = lumen_fit_plan_backend_selected(plan);
  if (!sel || strcmp(sel, tier) != 0) {
    snprintf(me.why, sizeof me.why, "selected %s: %s", sel ? sel : "?", lumen_fit_plan_backend_reason(plan));
    lumen_fit_plan_destroy(plan);
    return me;
  }
  const int np = lumen_model_param_count(d->model);
  double *params = malloc((size_t)curves * (size_t)np * sizeof *params);
  int32_t *state = malloc((size_t)curves * sizeof *state);
  int32_t *iters = malloc((size_t)curves * sizeof *iters);
  double *err = malloc((size_t)curves * sizeof *err);
  double *ci_lo = ci ? malloc((size_t)curves * (size_t)np * sizeof *ci_lo) : NULL;
  double *ci_hi = ci ? malloc((size_t)curves * (size_t)np * sizeof *ci_hi) : NULL;
  double *r2 = ci ? malloc((size_t)curves * sizeof *r2) : NULL;
  me.param0 = malloc((size_t)curves * sizeof *me.param0);
  if (!params || !state || !iters || !err || !me.param0 || (ci && (!ci_lo || !ci_hi || !r2))) {
    snprintf(me.why, sizeof me.why, "out of memory");
    free(iters);
    free(ci_lo);
    free(ci_hi);
    free(r2);
    free(params);
    free(state);
    free(err);
    free(me.param0);
    me.param0 = NULL;
    lumen_fit_plan_destroy(plan);
    return me;
  }
  /* the result arrays are touched before the clock starts: their first-touch page faults (the
     kernel zeroing ~50 MB per million curves, slow when two threads fault at once) are the same
     for every tier and are not fitting */
  touch_pages(params, (size_t)curves * (size_t)np * sizeof *params);
  touch_pages(state, (size_t)curves * sizeof *state);
  touch_pages(iters, (size_t)curves * sizeof *iters);
  if (ci) {
    touch_pages(ci_lo, (size_t)curves * (size_t)np * sizeof *ci_lo);
    touch_pages(r2, (size_t)curves * sizeof *r2);
    touch_pages(ci_hi, (size_t)curves * (size_t)np * sizeof *ci_hi);
  }
  /* in chunks, so that a slow tier stops after about `budget` seconds; tier cuda in one call after
     an untimed warm-up call (CUDA context, module load), since every call opens the device */
  int64_t chunk = curves / 20;
  if (chunk < 1000) chunk = 1000;
  if (!strncmp(tier, "cuda", 4)) {
    chunk = curves;
    lumen_fit_results warm = {.params = params, .state = state};
    s = lumen_fit_execute(ctx, plan, curves < 1024 ? curves : 1024, d->data, d->consts, &warm);
    if (s != LUMEN_OK) snprintf(me.why, sizeof me.why, "warm-up: %s", lumen_ctx_last_error(ctx));
  }
  int64_t done = 0;
  double secs = 0, cpu_secs = 0;
  while (done < curves && s == LUMEN_OK && (done == 0 || secs < budget)) {
    int64_t nc = curves - done < chunk ? curves - done : chunk;
    lumen_fit_results res = {.params = params + done * np, .state = state + done, .iterations = iters + done,
                             .ci_lo = ci_lo ? ci_lo + done * np : NULL, .ci_hi = ci_hi ? ci_hi + done * np : NULL,
                             .r2 = r2 ? r2 + done : NULL};
    double t0 = lumen_now_seconds(), u0 = cpu_s();
    s = lumen_fit_execute(ctx, plan, nc, d->data + done * d->n, d->consts ? d->consts + done * LUMEN_FIT_NCONSTS : NULL,
                          &res);
    secs += lumen_now_seconds() - t0;
    cpu_secs += cpu_s() - u0;
    me.kernel_s += res.kernel_seconds;
    if (s == LUMEN_OK) snprintf(me.used, sizeof me.used, "%s", res.backend_used);
    done += nc;
  }
  curves = me.curves = done;
  if (s != LUMEN_OK) {
    if (!me.why[0]) snprintf(me.why, sizeof me.why, "execute: %s", lumen_ctx_last_error(ctx));
  } else {
    me.ok = 1;
    me.fits_per_s = (double)curves / secs;
    me.fits_per_cpu_s = cpu_secs > 0 ? (double)curves / cpu_secs : NAN;
    int64_t nf = 0, nc = 0;
    double it_sum = 0;
    for (int64_t c = 0; c < curves; ++c) {
      double v = params[c * np];  /* public parameter 0: Ktrans, or T1 */
      it_sum += iters[c];
      me.param0[c] = v;
      if (state[c] == LUMEN_FIT_CONVERGED || state[c] == LUMEN_FIT_AT_BOUND) ++nc; /* at_bound: converged, on a bound */
      if (isfinite(v)) err[nf++] = fabs(v - d->truth[c]) / d->truth[c];
    }
    me.median_rel_err = median_inplace(err, nf);
    me.finite_frac = (double)nf / (double)curves;
    me.converged_frac = (double)nc / (double)curves;
    me.iters_per_fit = it_sum / (double)curves;
  }
  free(params);
  free(state);
  free(iters);
  free(err);
  free(r2);
  free(ci_lo);
  free(ci_hi);
  lumen_fit_plan_destroy(plan);
  return me;
}

/* The scalar probe (probe_tofts.c) on the same Tofts data, with the context's threads: the
   reference the issue-20 targets are stated against. Needs a uniform grid. */
static measure run_probe(lumen_ctx *ctx, const dataset *d, int64_t curves) {
  measure me = {.curves = curves};
  snprintf(me.used, sizeof me.used, "bench/probe_tofts.c, %d thread(s)", lumen_ctx_threads(ctx));
  double *kt = malloc((size_t)curves * sizeof *kt), *ve = malloc((size_t)curves * sizeof *ve);
  double *err = malloc((size_t)curves * sizeof *err);
  me.param0 = malloc((size_t)curves * sizeof *me.param0);
  if (!kt || !ve || !err || !me.param0) {
    snprintf(me.why, sizeof me.why, "out of memory");
    free(kt); free(ve); free(err); free(me.param0);
    me.param0 = NULL;
    return me;
  }
  const double dt = d->x[1] - d->x[0];
  touch_pages(kt, (size_t)curves * sizeof *kt); /* as the tiers' result arrays */
  touch_pages(ve, (size_t)curves * sizeof *ve);
  double t0 = lumen_now_seconds(), u0 = cpu_s();
  probe_tofts_fit(d->n, dt, d->cp, curves, d->data, lumen_ctx_threads(ctx), kt, ve);
  double secs = lumen_now_seconds() - t0, cpu_secs = cpu_s() - u0;
  int64_t nf = 0;
  for (int64_t c = 0; c < curves; ++c) {
    me.param0[c] = kt[c];
    if (isfinite(kt[c])) err[nf++] = fabs(kt[c] - d->truth[c]) / d->truth[c];
  }
  me.ok = 1;
  me.fits_per_s = (double)curves / secs;
  me.fits_per_cpu_s = cpu_secs > 0 ? (double)curves / cpu_secs : NAN;
  me.median_rel_err = median_inplace(err, nf);
  me.finite_frac = (double)nf / (double)curves;
  me.converged_frac = NAN;
  me.iters_per_fit = NAN;
  free(kt); free(ve); free(err);
  return me;
}

/* ------------------------------------------------------------------ tables */

static void print_header(void) {
  printf("| model | points | curves | tier (used) | fits/s | fits/CPU-s | median rel. err | converged | iter/fit | vs standard: speed, median rel. diff |\n");
  printf("|---|---:|---:|---|---:|---:|---:|---:|---:|---|\n");
}

static void fmt_rate(char *buf, size_t size, double r) {
  if (r >= 1e6) snprintf(buf, size, "%.2f M", r / 1e6);
  else if (r >= 1e3) snprintf(buf, size, "%.1f k", r / 1e3);
  else snprintf(buf, size, "%.0f", r);
}

static int is_standard(const char *tier) { return strcmp(tier, "standard") == 0; }

/* Times every tier on one data set and prints one row per tier. */
static void bench_rows(lumen_ctx *ctx, const bench_opts *bo, lumen_model m, int points, int64_t curves) {
  dataset d;
  if (dataset_make(&d, m, points, curves, bo->seed) != 0) {
    printf("| %s | %d | %lld | - | data generation failed | | | | | |\n", lumen_model_name(m), points, (long long)curves);
    return;
  }
  measure ms[MAX_LIST + 1];
  const char *names[MAX_LIST + 1];
  int std_idx = -1, nt = bo->n_tiers;
  if (m == LUMEN_MODEL_TOFTS && bo->probe) names[nt++] = "probe"; /* the scalar probe: a row of its own */
  for (int r = 0; r < bo->repeat; ++r) /* rounds: every row once per round, the fastest kept */
    for (int t = 0; t < nt; ++t) {
      measure me;
      if (t < bo->n_tiers) {
        names[t] = bo->tiers[t];
        int64_t nc = curves;
        if (is_standard(bo->tiers[t])) {
          std_idx = t;
          if (nc > bo->standard_max) nc = bo->standard_max;
        }
        me = run_tier(ctx, &d, bo->tiers[t], nc, bo->budget, bo->ci);
      } else {
        me = run_probe(ctx, &d, curves);
      }
      if (r == 0 || (me.ok && (!ms[t].ok || me.fits_per_s > ms[t].fits_per_s))) {
        if (r > 0) free(ms[t].param0);
        ms[t] = me;
      } else {
        free(me.param0);
      }
    }
  for (int t = 0; t < nt; ++t) {
    const measure *me = &ms[t];
    char rate[32], crate[32], cmp[96] = "";
    if (!me->ok) {
      printf("| %s | %d | %lld | %s | n/a (%s) | | | | | |\n", lumen_model_name(m), d.n, (long long)me->curves, names[t],
             me->why);
      continue;
    }
    fmt_rate(rate, sizeof rate, me->fits_per_s);
    fmt_rate(crate, sizeof crate, me->fits_per_cpu_s);
    if (std_idx >= 0 && std_idx != t && ms[std_idx].ok) {
      /* speed ratio, and agreement with the standard tier on the curves both fitted */
      const measure *sd = &ms[std_idx];
      int64_t nb = sd->curves < me->curves ? sd->curves : me->curves, k = 0;
      double *diff = malloc((size_t)nb * sizeof *diff);
      for (int64_t c = 0; diff && c < nb; ++c)
        if (isfinite(me->param0[c]) && isfinite(sd->param0[c]) && sd->param0[c] != 0)
          diff[k++] = fabs(me->param0[c] - sd->param0[c]) / fabs(sd->param0[c]);
      snprintf(cmp, sizeof cmp, "%.1fx, %.1e", me->fits_per_s / sd->fits_per_s, diff ? median_inplace(diff, k) : NAN);
      free(diff);
    } else if (std_idx == t) {
      snprintf(cmp, sizeof cmp, "1x (oracle)");
    }
    char used[96];
    snprintf(used, sizeof used, "%s", me->used);
    if (me->kernel_s > 0) { /* the GPU's own rate beside the host-to-host rate */
      char krate[32];
      fmt_rate(krate, sizeof krate, (double)me->curves / me->kernel_s);
      snprintf(used, sizeof used, "%s; kernel %s/s", me->used, krate);
    }
    if (t < bo->n_tiers && ms[nt - 1].ok && !strcmp(names[nt - 1], "probe")) { /* this tier vs the probe */
      size_t len = strlen(cmp);
      snprintf(cmp + len, sizeof cmp - len, "%s%.2fx the probe", len ? "; " : "", me->fits_per_s / ms[nt - 1].fits_per_s);
    }
    char conv[16] = "-"; /* the probe reports no state */
    if (!isnan(me->converged_frac)) snprintf(conv, sizeof conv, "%.1f %%", 100.0 * me->converged_frac);
    char its[16] = "-"; /* iterations per fit, every start and restart counted */
    if (!isnan(me->iters_per_fit)) snprintf(its, sizeof its, "%.2f", me->iters_per_fit);
    printf("| %s | %d | %lld | %s (%s) | %s | %s | %.2e | %s | %s | %s |\n", lumen_model_name(m), d.n,
           (long long)me->curves, names[t], used, rate, crate, me->median_rel_err, conv, its, cmp);
  }
  fflush(stdout);
  for (int t = 0; t < nt; ++t) free(ms[t].param0);
  dataset_free(&d);
}

/* One DCE volume as `lumen dce` hands it to the engine: every voxel's curve in one execute call,
   from host memory to host results (issue 5: 256x256x32x80 in <= 0.1 s on tier cuda). */
static void bench_volume(lumen_ctx *ctx, const bench_opts *bo) {
  const int64_t curves = bo->volume[0] * bo->volume[1] * bo->volume[2];
  const int n = (int)bo->volume[3];
  printf("\n## One volume, %lldx%lldx%lldx%d (%lld curves), tofts, one call from host memory to host results\n\n",
         (long long)bo->volume[0], (long long)bo->volume[1], (long long)bo->volume[2], n, (long long)curves);
  dataset d;
  if (dataset_make(&d, LUMEN_MODEL_TOFTS, n, curves, bo->seed) != 0) {
    printf("data generation failed (out of memory?)\n");
    return;
  }
  printf("| tier (used) | wall s | kernel s | fits/s (host to host) | kernel fits/s | converged |\n");
  printf("|---|---:|---:|---:|---:|---:|\n");
  for (int t = 0; t < bo->n_tiers; ++t) {
    if (is_standard(bo->tiers[t])) continue;
    /* a budget larger than any run: one measurement of the whole volume */
    measure me = run_tier(ctx, &d, bo->tiers[t], curves, 1e9, bo->ci);
    if (!me.ok) {
      printf("| %s | n/a (%s) | | | | |\n", bo->tiers[t], me.why);
      free(me.param0);
      continue;
    }
    char rate[32], krate[32] = "-";
    fmt_rate(rate, sizeof rate, me.fits_per_s);
    if (me.kernel_s > 0) fmt_rate(krate, sizeof krate, (double)curves / me.kernel_s);
    printf("| %s (%s) | %.4f | %.4f | %s | %s | %.1f %% |\n", bo->tiers[t], me.used, (double)curves / me.fits_per_s,
           me.kernel_s, rate, krate, 100.0 * me.converged_frac);
    fflush(stdout);
    free(me.param0);
  }
  dataset_free(&d);
}

int main(int argc, char **argv) {
  bench_opts bo;
  if (parse_args(argc, argv, &bo) != 0) {
    usage(stderr);
    return 2;
  }
  lumen_ctx *ctx = NULL;
  if (lumen_ctx_create(&ctx) != LUMEN_OK) {
    fprintf(stderr, "bench_fit: cannot create a context\n");
    return 1;
  }
  if (bo.simd != LUMEN_CPU_SIMD_AUTO && lumen_ctx_set_cpu_simd(ctx, (lumen_cpu_simd)bo.simd) != LUMEN_OK) {
    fprintf(stderr, "bench_fit: --simd: %s\n", lumen_ctx_last_error(ctx));
    lumen_ctx_destroy(ctx);
    return 1;
  }
  time_t now = time(NULL);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M", localtime(&now));
  printf("# lumen %s fitting benchmark, %s, %ld online CPU cores, %s, OpenMP=%d GSL=%d\n", LUMEN_VERSION_STRING, date,
         sysconf(_SC_NPROCESSORS_ONLN), LUMEN_C_COMPILER, LUMEN_HAVE_OPENMP, LUMEN_HAVE_GSL);
  FILE *la = fopen("/proc/loadavg", "r");
  double load1 = -1;
  if (la) {
    if (fscanf(la, "%lf", &load1) != 1) load1 = -1;
    fclose(la);
  }
  if (load1 >= 0) printf("# load average at start: %.2f (other work on the machine slows every tier)\n", load1);
  if (g_uneven) printf("# uneven frames (--uneven): the first half of the samples 2 s apart, the rest 8 s\n");
  if (g_jitter_ms > 0) printf("# frame times with jitter (--jitter): each moved by up to +-%g ms\n", g_jitter_ms / 2);
  printf("# Parker AIF (Hct %.2f, delay %.0f min), %.0f s frames, Ktrans U[0.01,0.5]/min, ve U[0.05,0.6], noise SD %.3f mM,"
         " tol 1e-6, float32 data, %s;\n# standard tier timed on at most %lld curves per row; every row stops after about %.3g s;\n"
         "# every row the fastest of %d measurements taken in turns\n",
         HCT, AIF_DELAY_MIN, FRAME_S, NOISE_MM, bo.ci ? "with 95 % confidence intervals and R^2" : "no confidence intervals or R^2 (--no-ci)",
         (long long)bo.standard_max, bo.budget, bo.repeat);
  printf("# median rel. err: |Ktrans - truth| / truth (T1 for vfa/ir/sr) over curves with a finite result;\n"
         "# vs standard: speed ratio to the standard tier and median relative difference of that parameter\n\n");

  printf("## Every model, %d time points (T1 models: their own sampling), %lld curves\n\n", 80, (long long)bo.model_curves);
  print_header();
  for (int k = 0; k < bo.n_models; ++k) bench_rows(ctx, &bo, bo.models[k], 80, bo.model_curves);

  printf("\n## Scaling with the number of curves: %s, 80 time points\n\n", lumen_model_name(bo.scaling_model));
  print_header();
  for (int k = 0; k < bo.n_curves; ++k) bench_rows(ctx, &bo, bo.scaling_model, 80, bo.curves[k]);

  if (lumen_model_is_dce(bo.scaling_model)) {
    printf("\n## Scaling with the number of time points: %s, %lld curves\n\n", lumen_model_name(bo.scaling_model),
           (long long)bo.points_curves);
    print_header();
    for (int k = 0; k < bo.n_points; ++k) bench_rows(ctx, &bo, bo.scaling_model, bo.points[k], bo.points_curves);
  }
  int any_cuda = 0;
  for (int t = 0; t < bo.n_tiers; ++t) any_cuda |= !strncmp(bo.tiers[t], "cuda", 4);
  if (!bo.volume_set && any_cuda) {
    const int64_t v[4] = {256, 256, 32, 80};
    memcpy(bo.volume, v, sizeof v);
  }
  if (bo.volume[0] > 0) bench_volume(ctx, &bo);
  lumen_ctx_destroy(ctx);
  return 0;
}
