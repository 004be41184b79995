/* lumen fit: fits a model to curves given as text and writes one CSV row per curve. The command
   line, the text tables and the CSV writer are in fit_args.c, fit_tables.c and fit_csv.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"
#include "lumen_build_config.h"

#define CMD "fit"

#if LUMEN_HAVE_IO
#include "cli/fit_cli.h"
#include "lumen/aif.h"
#include "lumen/io.h"

static void help(FILE *out) {
  fprintf(out,
          "usage: lumen fit --model NAME --curves FILE [inputs] [options] [--out FILE.csv]\n"
          "\n"
          "Fits a DCE pharmacokinetic or T1 model to every curve of a text file and writes one CSV row\n"
          "per curve (parameters, goodness of fit, state, confidence intervals). For users who have\n"
          "curves rather than images, and for validation.\n"
          "\n"
          "models: tofts, etofts, patlak, 2cum, 2cxm, fxr, auc (DCE; need --times and --aif)\n"
          "        vfa, vfa-linear, vfa-2pt (need --flip-angles and --tr), ir (--inversion-times, optional\n"
          "        --tr), sr (--times: recovery times)\n"
          "\n"
          "inputs (FILE: a text table, numbers separated by newlines, commas, semicolons or spaces; '#'\n"
          "starts a comment; values must be finite, except nan in --curves for a missing sample):\n"
          "  --curves FILE        one curve per line, as many values as there are times / angles\n"
          "  --times FILE         sample times, one per line (DCE, sr; ir: the inversion times)\n"
          "  --time-unit s|min    unit of --times, --aif-delay, --auc-start, --auc-window (default s)\n"
          "  --aif FILE|NAME      plasma concentration (mM) at the times, one per line, or a population\n"
          "                       AIF: parker, georgiou, weinmann, fritz-hansen\n"
          "  --r1 R               relaxivity for fxr, 1/(mM s) (default 4.5)\n"
          "  --r10 R              pre-contrast R1 of every curve for fxr, 1/s (default 1)\n"
          "  --auc-start T        auc: injection time (in --time-unit; default the first sample)\n"
          "  --auc-window W       auc: window length (in --time-unit; default 90 s)\n"
          "\n"
          "output:\n"
          "  --out FILE.csv       write the CSV there (written to a hidden temporary file in the same\n"
          "                       folder, then renamed); default: standard output. --overwrite replaces\n"
          "                       an existing one (only a regular file is ever replaced)\n"
          "\n"
          "CSV columns: the parameters (Ktrans, ve, vp, Fp, Tp, tau, T1, M0 as the model has them),\n"
          "the derived values (kep, E, PS, vp of 2cum, R1, AUC...), delay (with --fit-delay), sse, r2,\n"
          "state (0 = converged, 1 max_iterations, 2 singular, 3 invalid_input, 5 not_finite,\n"
          "7 at_bound: converged with a parameter on a bound, values kept; the summary line counts\n"
          "the curves per parameter and bound), iterations, then NAME_cilo, NAME_cihi (95 %%\n"
          "confidence interval) per parameter.\n"
          "Units: rates (Ktrans, kep, Fp, PS) in 1/min, Tp, tau and delay in min, T1 in s, R1 in 1/s.\n"
          "A summary line with the backend requested / selected / used and fits per second goes to\n"
          "stderr. Every option (also --bounds against --start, --backend) is checked before a file is\n"
          "read; an existing --out without --overwrite, a full disk are input or data errors (exit 1).\n"
          "\n"
          "example:\n"
          "  lumen fit --model tofts --times t.txt --aif parker --hematocrit 0.42 --curves c.txt --out fit.csv\n"
          "\n");
  lumen_cli_help_shared(out, LUMEN_CLI_FIT);
}

/* Warnings (and debug messages with -v) to stderr; errors are printed once, by the command. */
static void fit_log(void *user, lumen_log_level level, const char *message) {
  static const char *const names[] = {"error", "warning", "info", "debug"};
  (void)user;
  if (level != LUMEN_LOG_ERROR) fprintf(stderr, "lumen %s: %s: %s\n", CMD, names[level], message);
}

/* The sample grid into x: flip angles (radians), inversion times or times (DCE: in minutes),
   strictly increasing where they are times. 0, or -1 after the message. */
static int fit_read_grid(const lumen_fitcli_request *r, lumen_ctx *ctx, lumen_fitcli_list *x) {
  if (r->is_vfa) {
    if (lumen_fitcli_read_list(ctx, r->fa_arg, r->fa_opt, r->mem_limit, x)) return -1;
    for (int i = 0; i < x->n; ++i) x->v[i] *= 3.14159265358979323846 / 180.0;
  } else if (r->x_ti) {
    if (lumen_fitcli_read_list(ctx, r->ti_arg, r->ti_opt, r->mem_limit, x)) return -1;
  } else {
    if (lumen_fitcli_read_file(ctx, r->times_arg, "--times", r->mem_limit, x)) return -1;
    if (r->is_dce)
      for (int i = 0; i < x->n; ++i) x->v[i] *= r->tscale;
  }
  if (r->is_dce && x->n > 1 && x->v[x->n - 1] - x->v[0] > 240.0) {  /* minutes: one acquisition lasts < 4 h */
    double span = x->v[x->n - 1] - x->v[0];
    const int in_s = r->tscale != 1.0;  /* --time-unit s (the default) */
    lumen_cli_error(CMD, "--times span %g min (%.1f h), implausible for one DCE acquisition (at most 4 h)%s", span,
                    span / 60.0,
                    in_s ? (span / 1000.0 <= 240.0 ? "; in ms? give the times in seconds (divided by 1000)" : "")
                         : (span / 60.0 <= 240.0 ? "; in seconds? give --time-unit s" : ""));
    return -1;
  }
  if (!r->x_times) return 0;
  for (int i = 1; i < x->n; ++i)
    if (!(x->v[i] > x->v[i - 1])) {
      lumen_cli_error(CMD, "%s: values must increase strictly, but value %d (%g) follows value %d (%g)",
                      r->x_ti ? r->ti_opt : "--times", i + 1, x->v[i], i, x->v[i - 1]);
      return -1;
    }
  return 0;
}

/* The AIF at the n times x (minutes): a population AIF by name or a file. 0, or -1 after the message. */
static int fit_read_aif(const lumen_fitcli_request *r, lumen_ctx *ctx, const lumen_fitcli_list *x, lumen_fitcli_list *aif) {
  const int n = x->n;
  lumen_aif_kind kind;
  if (lumen_aif_parse(r->aif_arg, &kind) == LUMEN_OK) {
    lumen_aif_options ao;
    lumen_aif_options_init(&ao);
    ao.kind = kind;
    ao.hct = r->hct;
    ao.delay = r->aif_delay * r->tscale;
    ao.plasma = 1;
    if (n > 0 && lumen_fitcli_list_reserve(aif, n) == 0) aif->n = n;
    if (aif->n != n || lumen_aif_population(ctx, &ao, n, x->v, aif->v) != LUMEN_OK) {
      lumen_cli_error(CMD, "--aif %s: %s", r->aif_arg, lumen_ctx_last_error(ctx));
      return -1;
    }
    return 0;
  }
  struct stat st;
  if (stat(r->aif_arg, &st) != 0) {
    lumen_cli_error(CMD, "--aif '%s' is neither a file nor a population AIF (parker, georgiou, weinmann, "
                         "fritz-hansen)", r->aif_arg);
    return -1;
  }
  if (lumen_fitcli_read_file(ctx, r->aif_arg, "--aif", r->mem_limit, aif)) return -1;
  if (aif->n != n) {
    lumen_cli_error(CMD, "--aif file '%s' holds %d values but --times has %d: expected one AIF value per time",
                    r->aif_arg, aif->n, n);
    return -1;
  }
  return 0;
}

/* The fit's per-curve outputs (lumen_fit_results points into them) and constants: parts of
   one block of doubles and one of int32. */
typedef struct {
  double *params, *derived, *cilo, *cihi, *chi2, *r2, *delay, *consts; /* params: the double block */
  int32_t *state, *iters;                                              /* state: the int32 block */
  int np, nd; /* parameters and derived values per curve */
} fit_outputs;

static void fit_outputs_free(fit_outputs *f) {
  free(f->params);
  free(f->state);
}

/* Room for nc curves of the model, every curve's constants set (R10 = --r10, B1 = 1); 0, or -1
   after the message. */
static int fit_outputs_alloc(fit_outputs *f, const lumen_fitcli_request *r, int64_t nc) {
  const int np = lumen_model_param_count(r->o.model), nd = lumen_fit_derived_count(r->o.model);
  const size_t n = (size_t)nc, per_np = (size_t)(np > 0 ? np : 1), per_nd = (size_t)(nd > 0 ? nd : 1);
  f->np = np;
  f->nd = nd;
  f->params = calloc(n * (3 * per_np + per_nd + 3 + LUMEN_FIT_NCONSTS), sizeof(double));
  f->state = calloc(2 * n, sizeof(int32_t));
  if (!f->params || !f->state) {
    lumen_cli_error(CMD, "out of memory for %lld curves", (long long)nc);
    return -1;
  }
  f->cilo = f->params + n * per_np;
  f->cihi = f->cilo + n * per_np;
  f->derived = f->cihi + n * per_np;
  f->chi2 = f->derived + n * per_nd;
  f->r2 = f->chi2 + n;
  f->delay = f->r2 + n;
  f->consts = f->delay + n;
  f->iters = f->state + n;
  for (int64_t c = 0; c < nc; ++c) {
    f->consts[c * LUMEN_FIT_NCONSTS + LUMEN_FIT_CONST_R10] = r->r10;
    f->consts[c * LUMEN_FIT_NCONSTS + LUMEN_FIT_CONST_B1] = 1.0;
  }
  return 0;
}

/* The CSV: a header line, then one row per curve (see help). */
static void fit_write_csv(lumen_fitcli_csv *out, const lumen_fitcli_request *r, const fit_outputs *f, int64_t nc) {
  const lumen_model model = r->o.model;
  const int np = f->np, nd = f->nd, fit_delay = r->o.fit_delay;
  int col = 0;
  for (int k = 0; k < np; ++k) lumen_fitcli_csv_printf(out, "%s%s", col++ ? "," : "", lumen_model_param_name(model, k));
  for (int k = 0; k < nd; ++k) lumen_fitcli_csv_printf(out, "%s%s", col++ ? "," : "", lumen_fit_derived_name(model, k));
  if (fit_delay) lumen_fitcli_csv_printf(out, "%sdelay", col++ ? "," : "");
  lumen_fitcli_csv_printf(out, "%ssse,r2,state,iterations", col ? "," : "");
  for (int k = 0; k < np; ++k) {
    const char *pn = lumen_model_param_name(model, k);
    lumen_fitcli_csv_printf(out, ",%s_cilo,%s_cihi", pn, pn);
  }
  lumen_fitcli_csv_printf(out, "\n");
  for (int64_t c = 0; c < nc && !out->failed; ++c) {
    col = 0;
    for (int k = 0; k < np; ++k) lumen_fitcli_csv_printf(out, "%s%.9g", col++ ? "," : "", f->params[c * np + k]);
    for (int k = 0; k < nd; ++k) lumen_fitcli_csv_printf(out, "%s%.9g", col++ ? "," : "", f->derived[c * nd + k]);
    if (fit_delay) lumen_fitcli_csv_printf(out, "%s%.9g", col++ ? "," : "", f->delay[c]);
    lumen_fitcli_csv_printf(out, "%s%.9g,%.9g,%d,%d", col ? "," : "", f->chi2[c], f->r2[c], (int)f->state[c], (int)f->iters[c]);
    for (int k = 0; k < np; ++k) lumen_fitcli_csv_printf(out, ",%.9g,%.9g", f->cilo[c * np + k], f->cihi[c * np + k]);
    lumen_fitcli_csv_printf(out, "\n");
  }
}

/* The summary line on stderr: backends, states, the curves per parameter and bound, speed. */
static void fit_print_summary(const lumen_fitcli_request *r, const lumen_fit_results *res, int np, int64_t nc, int n) {
  const lumen_model model = r->o.model;
  const int64_t conv_n = res->state_counts[LUMEN_FIT_CONVERGED], at_n = res->state_counts[LUMEN_FIT_AT_BOUND];
  char bounds_note[256] = "";
  for (int k = 0; k < np; ++k)
    for (int side = 0; side < 2; ++side) {
      int64_t cnt = side ? res->at_upper[k] : res->at_lower[k];
      size_t len = strlen(bounds_note);
      if (cnt > 0 && len + 1 < sizeof bounds_note)
        snprintf(bounds_note + len, sizeof bounds_note - len, "%s%s %s %lld", len ? ", " : ": ",
                 lumen_fit_param_name(model, k), side ? "upper" : "lower", (long long)cnt);
    }
  fprintf(stderr,
          "lumen fit: %s, %lld curves x %d samples: backend requested %s, selected %s, used %s (%s); "
          "%lld converged, %lld at a bound (%s preset%s), %lld not; %.3f s, %.0f fits/s\n",
          lumen_model_name(model), (long long)nc, n, res->backend_requested, res->backend_selected,
          res->backend_used, res->reason, (long long)conv_n, (long long)at_n,
          lumen_fit_bounds_preset_name(r->o.bounds_preset), bounds_note, (long long)(nc - conv_n - at_n),
          res->seconds, res->seconds > 0 ? (double)nc / res->seconds : 0.0);
}

/* Reads the grid, AIF and curves, fits, writes the CSV and the summary: the exit status. */
static int fit_run(const lumen_fitcli_request *r, lumen_ctx *ctx) {
  int rc = LUMEN_EXIT_FAILURE;
  lumen_fitcli_list x = {0}, aif = {0};
  double *curves = NULL;
  int64_t nc = 0;
  lumen_fit_plan *plan = NULL;
  fit_outputs f = {0};
  lumen_fitcli_csv out = {0};
  if (fit_read_grid(r, ctx, &x) || (r->is_dce && fit_read_aif(r, ctx, &x, &aif))) goto done;
  if (lumen_fit_plan_create(ctx, &r->o, x.n, x.v, r->is_dce ? aif.v : NULL, &plan) != LUMEN_OK) {
    lumen_cli_error(CMD, "%s", lumen_ctx_last_error(ctx));
    goto done;
  }
  const char *per = r->is_vfa ? "flip angle" : r->x_ti ? "inversion time" : "time";
  if (lumen_fitcli_read_curves(ctx, r->curves_path, x.n, per, r->mem_limit, &curves, &nc) || fit_outputs_alloc(&f, r, nc))
    goto done;
  lumen_fit_results res = {.params = f.params, .derived = f.derived, .state = f.state, .chi2 = f.chi2, .r2 = f.r2,
                           .iterations = f.iters, .ci_lo = f.cilo, .ci_hi = f.cihi, .delay = f.delay};
  if (lumen_fit_execute_f64(ctx, plan, nc, curves, f.consts, &res) != LUMEN_OK) {
    lumen_cli_error(CMD, "fitting failed: %s", lumen_ctx_last_error(ctx));
    goto done;
  }
  if (lumen_fitcli_csv_open(&out, ctx, r->to_file ? r->out_path : NULL, r->overwrite)) goto done;
  fit_write_csv(&out, r, &f, nc);
  if (lumen_fitcli_csv_close(&out)) goto done;
  if (!r->quiet) fit_print_summary(r, &res, f.np, nc, x.n);
  rc = LUMEN_EXIT_OK;
done:
  lumen_atomic_abort(out.file); /* a failed run leaves nothing under --out */
  free(x.v);
  free(aif.v);
  free(curves);
  fit_outputs_free(&f);
  lumen_fit_plan_destroy(plan);
  return rc;
}

int lumen_cmd_fit(int argc, char **argv) {
  lumen_fitcli_request r;
  lumen_fitcli_request_init(&r);
  int rc = lumen_fitcli_parse_args(&r, argc, argv);
  if (rc < 0 && r.help) {
    help(stdout);
    return lumen_cli_finish_stdout(CMD);
  }
  if (rc < 0) rc = lumen_fitcli_check_request(&r);
  if (rc >= 0) return rc;
  lumen_ctx *ctx = lumen_cli_context(CMD, r.verbose);
  if (!ctx) return LUMEN_EXIT_FAILURE;
  lumen_ctx_set_log(ctx, fit_log, NULL, r.verbose ? LUMEN_LOG_DEBUG : LUMEN_LOG_WARNING);
  if (r.threads < 0 || lumen_ctx_set_threads(ctx, r.threads) != LUMEN_OK) {
    lumen_cli_error(CMD, "--threads %d: expected 0 (all cores) to %d", r.threads, LUMEN_MAX_THREADS);
    rc = LUMEN_EXIT_USAGE;
  } else {
    rc = lumen_fitcli_finish_options(&r, ctx);
    if (rc < 0) rc = fit_run(&r, ctx);
  }
  lumen_ctx_destroy(ctx);
  return rc;
}
#else
int lumen_cmd_fit(int argc, char **argv) {
  (void)argc; (void)argv;
  lumen_cli_error(CMD, "this build has no I/O module (nifti_clib, cJSON), whose text table reader lumen fit uses: "
                       "rebuild with them");
  return LUMEN_EXIT_FAILURE;
}
#endif
