/* OSIPI DCE validation: every Tofts, extended Tofts, Patlak, 2CXM and 2CUM case of the OSIPI
   code collection's test data (../shared/data/osipi/dce_models) must pass the OSIPI tolerances
   on the accelerated `cpu` tier (float32) and on the `standard` tier. The `_delay_5` files are
   fitted with delay fitting on. The maximum absolute errors per model, parameter and tier are
   printed so that they can be reported, and the two tiers must agree (largest relative
   difference <= 1e-2, denominators floored at 1e-3). Skips (77) when the reference data is absent.
   LUMEN_TEST_TIER=cuda checks tier cuda instead of cpu (skips without a GPU; LUMEN_TEST_FAKE_GPU=1
   runs it on the fake device); delay fitting is not on the GPU, so there the `_delay_5` files must
   be selected onto tier cpu with the reason given.
   LUMEN_TEST_VERBOSE=1 prints the parameters of failing cases, =2 of every case. */
#include "test_support.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dbg_params[256];

/* ---------------------------------------------------------------- error bookkeeping */
typedef struct {
  const char *label; /* "Ktrans" ... */
  double atol, rtol, scale; /* scale: lumen value -> reference unit */
  double max_err;
  int fails;
} param_check;

static void check(param_check *pc, double got, double ref, const char *case_label, const char *tier) {
  double g = got * pc->scale;
  double err = fabs(g - ref);
  if (!(err <= pc->max_err) || isnan(err)) pc->max_err = isnan(err) ? INFINITY : fmax(pc->max_err, err);
  if (!(err <= pc->atol + pc->rtol * fabs(ref))) {
    pc->fails++;
    print_message("  FAIL %s [%s] %s: got %.6g, reference %.6g\n", case_label, tier, pc->label, g, ref);
    if (getenv("LUMEN_TEST_VERBOSE")) print_message("    params %s\n", dbg_params);
  }
}

/* ---------------------------------------------------------------- one file on one tier */
typedef enum { F_TOFTS, F_ETOFTS, F_PATLAK, F_2CUM, F_2CXM } file_kind;

static const char *tiers[2] = {"cpu", "standard"};

static void run_file(const char *rel, file_kind kind, int delay) {
  char *path = lumen_test_refdata_path(rel);
  if (!path) {
    print_message("skipping %s: not found\n", rel);
    skip();
  }
  lumen_test_csv *tab = lumen_test_csv_load(path);
  assert_non_null(tab);
  assert_true(tab->nrows > 0);
  lumen_ctx *ctx = lumen_test_ctx();
  lumen_model model = kind == F_TOFTS ? LUMEN_MODEL_TOFTS
                      : kind == F_ETOFTS ? LUMEN_MODEL_ETOFTS
                      : kind == F_PATLAK ? LUMEN_MODEL_PATLAK
                      : kind == F_2CUM ? LUMEN_MODEL_2CUM
                                       : LUMEN_MODEL_2CXM;
  const int np = lumen_model_param_count(model), nd = lumen_fit_derived_count(model);
  int all_fails = 0;
  /* agreement of the accelerated tier with the standard tier on the same curves */
  double *cpu_vals = calloc((size_t)tab->nrows * 4, sizeof(double));
  double max_rel = 0;
  for (int ti = 0; ti < 2; ++ti) {
    /* checks: Ktrans/PS 0.005 + 10 %, ve 0.05, vp 0.025, Fp 5 + 10 % (ml/100ml/min) */
    param_check ck[4];
    int nck = 0;
    memset(ck, 0, sizeof ck);
    if (kind == F_TOFTS || kind == F_ETOFTS) {
      ck[nck++] = (param_check){"Ktrans", 0.005, 0.1, 1, 0, 0};
      ck[nck++] = (param_check){"ve", 0.05, 0, 1, 0, 0};
      if (kind == F_ETOFTS) ck[nck++] = (param_check){"vp", 0.025, 0, 1, 0, 0};
    } else if (kind == F_PATLAK) {
      ck[nck++] = (param_check){"PS", 0.005, 0.1, 1, 0, 0};
      ck[nck++] = (param_check){"vp", 0.025, 0, 1, 0, 0};
    } else {
      ck[nck++] = (param_check){"Fp", 5, 0.1, 100, 0, 0};
      ck[nck++] = (param_check){"PS", 0.005, 0.1, 1, 0, 0};
      ck[nck++] = (param_check){"vp", 0.025, 0, 1, 0, 0};
      if (kind == F_2CXM) ck[nck++] = (param_check){"ve", 0.05, 0, 1, 0, 0};
    }
    int not_converged = 0, fell_through = 0, at_bound = 0;
    for (int r = 0; r < tab->nrows; ++r) {
      double *t = NULL, *c = NULL, *cp = NULL, *ta = NULL;
      int n = lumen_test_csv_arr(tab, r, "t", &t);
      int nc = lumen_test_csv_arr(tab, r, (kind == F_TOFTS || kind == F_ETOFTS) ? "C" : "C_t", &c);
      int na = lumen_test_csv_arr(tab, r, (kind == F_TOFTS || kind == F_ETOFTS) ? "ca" : "cp_aif", &cp);
      assert_int_equal(n, nc);
      assert_int_equal(n, na);
      if (lumen_test_csv_col(tab, "ta") >= 0) {
        int nt = lumen_test_csv_arr(tab, r, "ta", &ta);
        assert_int_equal(nt, n);
        for (int i = 0; i < n; ++i) assert_true(fabs(ta[i] - t[i]) < 1e-9); /* same grid */
        free(ta);
      }
      for (int i = 0; i < n; ++i) t[i] /= 60.0; /* s -> min */
      double row_delay = lumen_test_csv_col(tab, "arterialdelay") >= 0 ? lumen_test_csv_num(tab, r, "arterialdelay") : 0;
      lumen_fit_options o;
      lumen_fit_options_init(&o);
      o.model = model;
      o.backend = tiers[ti];
      o.fit_delay = delay || row_delay != 0;
      lumen_fit_plan *plan = NULL;
      lumen_status st = lumen_fit_plan_create(ctx, &o, n, t, cp, &plan);
      if (st != LUMEN_OK) print_error("plan: %s\n", lumen_ctx_last_error(ctx));
      assert_int_equal(st, LUMEN_OK);
      double p[4], der[6], chi2, delay_out = NAN;
      int32_t state;
      lumen_fit_results res = {.params = p, .state = &state, .derived = der, .chi2 = &chi2, .delay = &delay_out};
      st = lumen_fit_execute_f64(ctx, plan, 1, c, NULL, &res);
      assert_int_equal(st, LUMEN_OK);
      /* the tier that must have run it: the GPU has no delay fitting (the plan says why) */
      const char *expect = tiers[ti];
      if (!strncmp(tiers[ti], "cuda", 4) && o.fit_delay) {
        expect = "cpu";
        if (!strstr(res.reason, "delay")) print_error("no delay reason for tier cpu: %s\n", res.reason);
        assert_non_null(strstr(res.reason, "delay"));
      } else if (!strncmp(tiers[ti], "cuda", 4)) {
        expect = "cuda";
      }
      if (strcmp(res.backend_used, expect) != 0) {
        print_message("  %s [%s]: ran on %s (%s)\n", tab->cells[r][0], tiers[ti], res.backend_used, res.reason);
        fell_through++;
      }
      const int converged = state == LUMEN_FIT_CONVERGED || state == LUMEN_FIT_AT_BOUND; /* at_bound: values kept */
      if (!converged) not_converged++;
      at_bound += state == LUMEN_FIT_AT_BOUND;
      const char *label = tab->cells[r][0];
      double got[4] = {NAN, NAN, NAN, NAN}, ref[4] = {0};
      (void)np;
      (void)nd;
      switch (kind) {
        case F_TOFTS:
          got[0] = p[0]; got[1] = p[1];
          ref[0] = lumen_test_csv_num(tab, r, "Ktrans"); ref[1] = lumen_test_csv_num(tab, r, "ve");
          break;
        case F_ETOFTS:
          got[0] = p[0]; got[1] = p[1]; got[2] = p[2];
          ref[0] = lumen_test_csv_num(tab, r, "Ktrans"); ref[1] = lumen_test_csv_num(tab, r, "ve"); ref[2] = lumen_test_csv_num(tab, r, "vp");
          break;
        case F_PATLAK:
          got[0] = p[0]; got[1] = p[1];
          ref[0] = lumen_test_csv_num(tab, r, "ps"); ref[1] = lumen_test_csv_num(tab, r, "vp");
          break;
        case F_2CUM: /* params Ktrans Fp Tp; derived E PS vp */
          got[0] = p[1]; got[1] = der[1]; got[2] = der[2];
          ref[0] = lumen_test_csv_num(tab, r, "fp"); ref[1] = lumen_test_csv_num(tab, r, "ps"); ref[2] = lumen_test_csv_num(tab, r, "vp");
          break;
        case F_2CXM: /* params Ktrans ve vp Fp; derived E PS kep */
          got[0] = p[3]; got[1] = der[1]; got[2] = p[2]; got[3] = p[1];
          ref[0] = lumen_test_csv_num(tab, r, "fp"); ref[1] = lumen_test_csv_num(tab, r, "ps"); ref[2] = lumen_test_csv_num(tab, r, "vp");
          ref[3] = lumen_test_csv_num(tab, r, "ve");
          break;
      }
      snprintf(dbg_params, sizeof dbg_params, "p %.5g %.5g %.5g %.5g der %.5g %.5g %.5g state %d chi2 %.4g delay %.4g",
               p[0], p[1], np > 2 ? p[2] : 0, np > 3 ? p[3] : 0, der[0], nd > 1 ? der[1] : 0, nd > 2 ? der[2] : 0,
               (int)state, chi2, delay_out);
      if (getenv("LUMEN_TEST_VERBOSE") && atoi(getenv("LUMEN_TEST_VERBOSE")) >= 2)
        print_message("  %s [%s] %s\n", label, tiers[ti], dbg_params);
      for (int k = 0; k < nck; ++k) check(&ck[k], got[k], ref[k], label, tiers[ti]);
      for (int k = 0; k < nck; ++k) {
        if (ti == 0) cpu_vals[r * 4 + k] = got[k];
        else if (converged)
          max_rel = fmax(max_rel, fabs(cpu_vals[r * 4 + k] - got[k]) / fmax(fabs(got[k]), 1e-3));
      }
      lumen_fit_plan_destroy(plan);
      free(t);
      free(c);
      free(cp);
    }
    int total_fails = 0;
    char line[512];
    int len = snprintf(line, sizeof line, "OSIPI %-38s %-8s %2d cases, max |error|:", rel + 17, tiers[ti], tab->nrows);
    for (int k = 0; k < nck; ++k) {
      len += snprintf(line + len, sizeof line - (size_t)len, " %s %.4g", ck[k].label, ck[k].max_err);
      total_fails += ck[k].fails;
    }
    print_message("%s%s%s\n", line, not_converged ? " (some not converged)" : "",
                  fell_through ? " (some fell through)" : "");
    if (at_bound) print_message("  %d case(s) at a bound (converged, values kept)\n", at_bound);
    if (not_converged) print_message("  %d case(s) not converged\n", not_converged);
    all_fails += total_fails + fell_through;
  }
  print_message("OSIPI %-38s %s vs standard: max relative difference %.3g (denominator >= 1e-3)\n", rel + 17,
                tiers[0], max_rel);
  free(cpu_vals);
  assert_int_equal(all_fails, 0);
  /* issue 3 agreement (p99 <= 1e-2; with a few dozen curves per file, the maximum) */
  assert_true(max_rel <= 1e-2);
  lumen_ctx_destroy(ctx);
  lumen_test_csv_free(tab);
  free(path);
}

static void test_tofts(void **s) { (void)s; run_file("osipi/dce_models/dce_DRO_data_tofts.csv", F_TOFTS, 0); }
static void test_etofts(void **s) { (void)s; run_file("osipi/dce_models/dce_DRO_data_extended_tofts.csv", F_ETOFTS, 0); }
static void test_patlak_0(void **s) { (void)s; run_file("osipi/dce_models/patlak_sd_0.02_delay_0.csv", F_PATLAK, 0); }
static void test_patlak_5(void **s) { (void)s; run_file("osipi/dce_models/patlak_sd_0.02_delay_5.csv", F_PATLAK, 1); }
static void test_2cum_0(void **s) { (void)s; run_file("osipi/dce_models/2cum_sd_0.0025_delay_0.csv", F_2CUM, 0); }
static void test_2cum_5(void **s) { (void)s; run_file("osipi/dce_models/2cum_sd_0.0025_delay_5.csv", F_2CUM, 1); }
static void test_2cxm_0(void **s) { (void)s; run_file("osipi/dce_models/2cxm_sd_0.001_delay_0.csv", F_2CXM, 0); }
static void test_2cxm_5(void **s) { (void)s; run_file("osipi/dce_models/2cxm_sd_0.001_delay_5.csv", F_2CXM, 1); }

int main(void) {
  if (!lumen_test_refdata_has("osipi/dce_models", "OSIPI")) return LUMEN_TEST_SKIP;
  tiers[0] = lumen_test_accel_tier();
  if (!lumen_test_tier_usable(tiers[0])) return LUMEN_TEST_SKIP;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tofts),   cmocka_unit_test(test_etofts), cmocka_unit_test(test_patlak_0),
      cmocka_unit_test(test_patlak_5), cmocka_unit_test(test_2cum_0), cmocka_unit_test(test_2cum_5),
      cmocka_unit_test(test_2cxm_0),  cmocka_unit_test(test_2cxm_5),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
