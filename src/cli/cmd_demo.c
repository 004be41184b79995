/* lumen demo curves: fits a built-in synthetic DCE set with tofts, etofts and patlak on the auto
   backend and prints the recovered parameters beside the truth, the backend line and fits/s.
   The curves are synthesised through the public API (lumen_fit_plan_eval: the plan's model curve,
   the formulas the solvers use); the fit then runs through the public API exactly as a user's would. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "lumen/aif.h"

#define CMD "demo"
#define NT 80
#define DEMO_WARMUP_CURVES 64 /* untimed fit before each model's timed one */

static void help(FILE *out) {
  fprintf(out,
          "usage: lumen demo curves [--replicates N] [--backend NAME] [-v]\n\n"
          "Fits a built-in synthetic data set and compares the result with the truth: a grid of\n"
          "Ktrans / ve (/ vp) values, Parker population AIF (hematocrit 0.42, bolus at 0.5 min),\n"
          "5 s frames, 80 time points, small deterministic Gaussian noise (SD 0.002 mM), N noisy\n"
          "copies of every truth (default 200). Models: tofts, etofts, patlak.\n\n"
          "Prints one row per truth (true values, median fitted values, converged count, fits at a\n"
          "bound included), then per\n"
          "model the backend requested / selected / used with the reason, and fits per second.\n\n"
          "options:\n"
          "  --replicates N  noisy curves per truth (default 200)\n"
          "  --backend NAME  backend request (default auto; see 'lumen fit --help')\n"
          "  -v              debug messages\n"
          "  -h, --help      this text\n");
  lumen_cli_help_exit_status(out);
}

static uint64_t rng_state = 0x5EED1234ULL;
static double uniform01(void) {
  rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return ((double)(rng_state >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double gauss(void) { return sqrt(-2.0 * log(uniform01())) * cos(6.283185307179586 * uniform01()); }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  int m = 0;
  for (int i = 0; i < n; ++i)
    if (!isnan(v[i])) v[m++] = v[i];
  if (m == 0) return NAN;
  qsort(v, (size_t)m, sizeof(double), cmp_double);
  return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

/* a converged fit (at_bound included: its values are the fit inside the box) */
static int fit_converged(int32_t state) { return state == LUMEN_FIT_CONVERGED || state == LUMEN_FIT_AT_BOUND; }

static int run_model(lumen_ctx *ctx, lumen_model model, const char *backend, int reps, const double *t,
                     const double *cp) {
  static const double ktrans[] = {0.05, 0.1, 0.2, 0.4};
  static const double ve[] = {0.1, 0.25, 0.5};
  static const double pk[] = {0.005, 0.02, 0.05};
  static const double vp[] = {0.02, 0.08};
  int ntruth;
  double truth[16][3];
  if (model == LUMEN_MODEL_PATLAK) {
    ntruth = 0;
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 2; ++b) {
        truth[ntruth][0] = pk[a];
        truth[ntruth][1] = vp[b];
        ntruth++;
      }
  } else {
    ntruth = 0;
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 3; ++b) {
        truth[ntruth][0] = ktrans[a];
        truth[ntruth][1] = ve[b];
        truth[ntruth][2] = 0.05;
        ntruth++;
      }
  }
  const int np = lumen_model_param_count(model);
  const int64_t nc = (int64_t)ntruth * reps;
  double *data = malloc(sizeof(double) * (size_t)nc * NT);
  double *params = malloc(sizeof(double) * (size_t)nc * (size_t)np);
  int32_t *state = malloc(sizeof(int32_t) * (size_t)nc);
  double *col = malloc(sizeof(double) * (size_t)reps);
  if (!data || !params || !state || !col) {
    free(data);
    free(params);
    free(state);
    free(col);
    lumen_cli_error(CMD, "out of memory");
    return -1;
  }
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.model = model;
  o.backend = backend;
  lumen_fit_plan *plan = NULL;
  /* the curves come from the plan's own model curve (lumen_fit_plan_eval): the CLI computes nothing */
  double y[NT];
  lumen_status made = lumen_fit_plan_create(ctx, &o, NT, t, cp, &plan);
  for (int k = 0; made == LUMEN_OK && k < ntruth; ++k) {
    made = lumen_fit_plan_eval(plan, truth[k], NULL, 0, y);
    for (int r = 0; r < reps; ++r)
      for (int i = 0; i < NT; ++i) data[((size_t)k * reps + r) * NT + i] = y[i] + 0.002 * gauss();
  }
  lumen_fit_results res = {.params = params, .state = state};
  int rc = 0;
  /* an untimed warm-up fit first: the backend's one-off setup (threads, CUDA context) would
     otherwise be counted in the first model's fits/s only */
  int64_t nwarm = nc < DEMO_WARMUP_CURVES ? nc : DEMO_WARMUP_CURVES;
  if (made != LUMEN_OK ||
      lumen_fit_execute_f64(ctx, plan, nwarm, data, NULL, &res) != LUMEN_OK ||
      lumen_fit_execute_f64(ctx, plan, nc, data, NULL, &res) != LUMEN_OK) {
    lumen_cli_error(CMD, "%s: %s", lumen_model_name(model), lumen_ctx_last_error(ctx));
    rc = -1;
  } else {
    for (int k = 0; k < ntruth; ++k) {
      printf("%-7s", lumen_model_name(model));
      for (int j = 0; j < 3; ++j) {
        if (j < np) printf(" %9.4f", truth[k][j]);
        else printf(" %9s", "-");
      }
      int conv = 0;
      for (int r = 0; r < reps; ++r) conv += fit_converged(state[(size_t)k * reps + r]);
      for (int j = 0; j < 3; ++j) {
        if (j < np) {
          for (int r = 0; r < reps; ++r) {
            size_t c = (size_t)k * reps + r;
            col[r] = fit_converged(state[c]) ? params[c * (size_t)np + j] : NAN;
          }
          printf(" %9.4f", median(col, reps));
        } else {
          printf(" %9s", "-");
        }
      }
      printf(" %5d/%d\n", conv, reps);
    }
    printf("# %s: %lld curves, backend requested %s, selected %s, used %s (%s); %.3f s, %.0f fits/s\n",
           lumen_model_name(model), (long long)nc, res.backend_requested, res.backend_selected, res.backend_used,
           res.reason, res.seconds, res.seconds > 0 ? (double)nc / res.seconds : 0.0);
  }
  lumen_fit_plan_destroy(plan);
  free(data);
  free(params);
  free(state);
  free(col);
  return rc;
}

/* `lumen demo curves`: the curve-fitting demo (no files). */
static int curves_demo(int argc, char **argv) {
  int reps = 200, verbose = 0;
  const char *backend = "auto";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      help(stdout);
      return LUMEN_EXIT_OK;
    } else if (strcmp(argv[i], "-v") == 0) {
      verbose = 1;
    } else if (strcmp(argv[i], "--replicates") == 0 && i + 1 < argc) {
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (*end || v < 1 || v > 100000) {
        lumen_cli_error(CMD, "--replicates '%s': expected an integer in 1..100000", argv[i]);
        return LUMEN_EXIT_USAGE;
      }
      reps = (int)v;
    } else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      backend = argv[++i];
    } else {
      lumen_cli_error(CMD, "unknown option '%s' (see 'lumen demo curves --help')", argv[i]);
      return LUMEN_EXIT_USAGE;
    }
  }
  lumen_ctx *ctx = lumen_cli_context(CMD, verbose);
  if (!ctx) return LUMEN_EXIT_FAILURE;
  double t[NT], cp[NT];
  for (int i = 0; i < NT; ++i) t[i] = i * 5.0 / 60.0;
  lumen_aif_options ao;
  lumen_aif_options_init(&ao);
  ao.hct = 0.42;
  ao.delay = 0.5;
  if (lumen_aif_population(ctx, &ao, NT, t, cp) != LUMEN_OK) {
    lumen_cli_error(CMD, "AIF: %s", lumen_ctx_last_error(ctx));
    lumen_ctx_destroy(ctx);
    return LUMEN_EXIT_FAILURE;
  }
  printf("lumen demo: synthetic DCE curves, Parker AIF (Hct 0.42), 5 s frames, %d points, noise SD 0.002 mM, "
         "%d curves per truth\n",
         NT, reps);
  printf("%-7s %9s %9s %9s %9s %9s %9s %s\n", "model", "p1_true", "p2_true", "p3_true", "p1_fit", "p2_fit", "p3_fit",
         "converged");
  printf("# parameters: tofts Ktrans ve; etofts Ktrans ve vp; patlak Ktrans vp (Ktrans 1/min); fit = median\n");
  printf("# fits/s: the timed fit of all curves, after an untimed warm-up fit of %d curves per model (so the\n"
         "# backend's one-off setup is not counted in the first model)\n", DEMO_WARMUP_CURVES);
  int rc = LUMEN_EXIT_OK;
  static const lumen_model models[3] = {LUMEN_MODEL_TOFTS, LUMEN_MODEL_ETOFTS, LUMEN_MODEL_PATLAK};
  for (int m = 0; m < 3 && rc == LUMEN_EXIT_OK; ++m)
    if (run_model(ctx, models[m], backend, reps, t, cp) != 0) rc = LUMEN_EXIT_FAILURE;
  lumen_ctx_destroy(ctx);
  return rc;
}

/* `lumen demo [--out DIR]` runs the full DCE pipeline on the built-in phantom (issue 4);
   `lumen demo curves` runs the curve-fitting demo above. */
int lumen_cmd_demo(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "curves") == 0) return curves_demo(argc - 1, argv + 1);
  return lumen_cmd_dce_demo(argc, argv);
}
