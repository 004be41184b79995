/* Plausibility of acquisition values where a unit is easily confused (issue 14): a TR in ms
   given as seconds, a flip angle in radians given as degrees, a frame interval in ms, a
   relaxivity per ms, a T1 in ms. Each check refuses with a message that names the source (an
   option, a sidecar field or a header field), the value, the expected range and the likely
   mistake, before anything is written (docs/PIPELINES.md, "Plausibility checks"). */
#include <math.h>
#include <string.h>
#include "pipeline/pipe_internal.h"

/* Ranges a value of each kind must lie in (SI units: s, degrees, 1/(mM s)); the SPGR TR and the
   relaxivity ranges are the fit API's (LUMEN_SPGR_TR_*, LUMEN_RELAXIVITY_*, include/lumen/fit.h). */
#define TR_IR_MAX 30.0       /* inversion recovery repeats within seconds */
#define DT_MIN 0.01          /* 10 ms per frame */
#define DT_MAX 600.0         /* 10 min per frame */
#define FLIP_MIN_DEG 1.0     /* below: radians given as degrees */
#define FLIP_MAX_DEG 90.0    /* SPGR flip angles; above: a typo or another sequence */
#define T1_MIN 0.05          /* tissue and blood T1 in s */
#define T1_MAX 10.0
#define HCT_MAX 0.7          /* blood hematocrit as a fraction */

lumen_status pipe_check_tr(lumen_ctx *ctx, const char *source, double tr, int spgr) {
  if (!isfinite(tr)) return LUMEN_OK;
  const double lo = LUMEN_SPGR_TR_MIN_S, hi = spgr ? LUMEN_SPGR_TR_MAX_S : TR_IR_MAX;
  if (tr >= lo && tr <= hi) return LUMEN_OK;
  if (tr > hi)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "%s = %g: %g s is not %s TR (expected %g..%g s); in ms? give %g (seconds)", source, tr, tr,
                      spgr ? "an SPGR" : "a plausible", lo, hi, tr / 1000.0);
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "%s = %g: %g s is not %s TR (expected %g..%g s)%s", source, tr, tr, spgr ? "an SPGR" : "a plausible",
                    lo, hi, tr > 0 ? "; in minutes or a typo?" : "");
}

lumen_status pipe_check_tr_any(lumen_ctx *ctx, const char *source, double tr) { return pipe_check_tr(ctx, source, tr, 0); }

lumen_status pipe_check_flip(lumen_ctx *ctx, const char *source, double deg) {
  if (!isfinite(deg)) return LUMEN_OK;
  if (deg >= FLIP_MIN_DEG && deg <= FLIP_MAX_DEG) return LUMEN_OK;
  if (deg > 0 && deg < FLIP_MIN_DEG)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "%s = %g: %g deg is not a plausible SPGR flip angle (expected %g..%g deg); in radians? %g rad = "
                      "%.4g deg: give %.4g (degrees)",
                      source, deg, deg, FLIP_MIN_DEG, FLIP_MAX_DEG, deg, deg * 180.0 / 3.14159265358979323846,
                      deg * 180.0 / 3.14159265358979323846);
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "%s = %g: %g deg is not a plausible SPGR flip angle (expected %g..%g deg)", source, deg, deg,
                    FLIP_MIN_DEG, FLIP_MAX_DEG);
}

lumen_status pipe_check_dt(lumen_ctx *ctx, const char *source, double dt) {
  if (!isfinite(dt)) return LUMEN_OK;
  if (dt >= DT_MIN && dt <= DT_MAX) return LUMEN_OK;
  if (dt > DT_MAX)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "%s = %g: a frame interval of %g s is implausible (expected %g..%g s); in ms? give %g (seconds)",
                      source, dt, dt, DT_MIN, DT_MAX, dt / 1000.0);
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "%s = %g: a frame interval of %g s is implausible (expected %g..%g s)%s", source, dt, dt, DT_MIN,
                    DT_MAX, dt > 0 ? "; in minutes? give the interval in seconds" : "");
}

lumen_status pipe_check_relaxivity(lumen_ctx *ctx, const char *source, double r1) {
  if (!isfinite(r1)) return LUMEN_OK;
  if (r1 >= LUMEN_RELAXIVITY_MIN && r1 <= LUMEN_RELAXIVITY_MAX) return LUMEN_OK;
  if (r1 > 0 && r1 < LUMEN_RELAXIVITY_MIN)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "%s = %g: relaxivity %g /mM/s is implausible (expected %g..%g, e.g. 4.5 for gadoterate at 1.5 T); "
                      "in 1/(mM ms)? give %g (1/(mM s))",
                      source, r1, r1, LUMEN_RELAXIVITY_MIN, LUMEN_RELAXIVITY_MAX, r1 * 1000.0);
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "%s = %g: relaxivity %g /mM/s is implausible (expected %g..%g 1/(mM s), e.g. 4.5 for gadoterate "
                    "at 1.5 T)%s",
                    source, r1, r1, LUMEN_RELAXIVITY_MIN, LUMEN_RELAXIVITY_MAX, r1 > LUMEN_RELAXIVITY_MAX ? "; in 1/(M s)? give it per mM" : "");
}

lumen_status pipe_check_t1(lumen_ctx *ctx, const char *source, double t1) {
  if (!isfinite(t1)) return LUMEN_OK;
  if (t1 >= T1_MIN && t1 <= T1_MAX) return LUMEN_OK;
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "%s = %g: a T1 of %g s is implausible (expected %g..%g s)%s%.4g%s",
                    source, t1, t1, T1_MIN, T1_MAX, t1 > T1_MAX ? "; in ms? give " : "",
                    t1 > T1_MAX ? t1 / 1000.0 : 0.0, t1 > T1_MAX ? " (seconds)" : "");
}

lumen_status pipe_check_hematocrit(lumen_ctx *ctx, const char *source, double hct) {
  if (!isfinite(hct) || (hct >= 0 && hct <= HCT_MAX)) return LUMEN_OK;
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "%s = %g: expected a fraction 0..%g (0.45 for adults)%s%g", source, hct, HCT_MAX,
                    hct > 1 ? "; in percent? give " : "", hct > 1 ? hct / 100.0 : 0.0);
}

lumen_status pipe_check_time(lumen_ctx *ctx, const char *source, double t) {
  if (!isfinite(t) || t <= TR_IR_MAX) return LUMEN_OK;
  return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "%s = %g: an inversion / recovery time of %g s is implausible (expected <= %g s); in ms? give %g "
                    "(seconds)",
                    source, t, t, TR_IR_MAX, t / 1000.0);
}

/* Options the user typed (or a config file set), checked before anything is read or written. */
lumen_status lumen_pipe_config_check(lumen_ctx *ctx, const lumen_pipe_config *cfg, const char *command) {
  LUMEN_REQUIRE_NOT_NULL(ctx, cfg);
  const int t1cmd = command && !strcmp(command, "t1");
  const char *method = cfg->method ? cfg->method : "vfa";
  const int spgr = !t1cmd || !strncmp(method, "vfa", 3);
  lumen_status st = pipe_check_tr(ctx, "--tr", cfg->tr_s, spgr);
  if (st == LUMEN_OK) st = pipe_check_flip(ctx, "--flip-angle", cfg->flip_angle_deg);
  for (int i = 0; st == LUMEN_OK && i < cfg->n_flip_angles; ++i) {
    char src[48];
    snprintf(src, sizeof src, "--flip-angles value %d", i + 1);
    st = pipe_check_flip(ctx, src, cfg->flip_angles_deg[i]);
  }
  if (st == LUMEN_OK) st = pipe_check_dt(ctx, "--dt", cfg->dt_s);
  if (st == LUMEN_OK && !t1cmd) st = pipe_check_relaxivity(ctx, "--relaxivity", cfg->relaxivity);
  if (st == LUMEN_OK) st = pipe_check_t1(ctx, "--t1", cfg->t1_default_s);
  if (st == LUMEN_OK) st = pipe_check_t1(ctx, "--blood-t1", cfg->blood_t1_s);
  if (st == LUMEN_OK) st = pipe_check_hematocrit(ctx, "--hematocrit", cfg->hematocrit);
  for (int i = 0; st == LUMEN_OK && i < cfg->n_times; ++i) {
    char src[48];
    snprintf(src, sizeof src, "--times value %d", i + 1);
    st = pipe_check_time(ctx, src, cfg->times_s[i]);
  }
  return st;
}
