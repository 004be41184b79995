/* Where 2CXM's iterations go (issue 43): bench_fit's synthetic 2CXM curves (Parker AIF, 5 s
   frames, 80 points, Ktrans U[0.01,0.5], Fp U[0.6,1.5], ve U[0.05,0.6], vp U[0.01,0.1], noise SD
   0.005 mM, float32 data; a generator of its own) fitted on a tier: mean iterations per fit, their
   histogram, the share of all iterations in the fits of 20 or more, the fits on a bound, and
   the chi2 against the standard tier's, and the iterations by the curves' plasma transit time
   vp/(Fp+PS) (below the 5 s frame, the fits crawl). Deterministic counts (no timing).
     bench_cxm_starts [--curves N] [--tier NAME] [--dump FILE]
   LUMEN_TEST_CXM_GRID_START=1 (a build with test hooks) starts from src/fit/cxm_grid.h's grid.
   --dump writes the binary input of bench/cxm_vp_probe.py: int32 n, int32 curves, n times
   (double, min), n AIF values (double), curves x n samples (float), then per curve int32
   iterations and double chi2 of the tier, double chi2 of the standard tier. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lumen/lumen.h"
#include "lumen/aif.h"
#include "lumen/fit.h"
#include "models/models_f64.h"
#include "bench_util.h"

#define NPT 80

static uint64_t rng_next(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s >> 11;
}
static double uni(uint64_t *s) { return (double)rng_next(s) * (1.0 / 9007199254740992.0); }
static double normal(uint64_t *s) {
  double u = uni(s), v = uni(s);
  return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

typedef struct fitted {
  int32_t *it, *state, *bound;
  double *chi2, *p;
} fitted;

static int fit_all(lumen_ctx *ctx, const char *tier, int64_t nc, const double *x, const double *cp, const float *y,
                   fitted *f) {
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.model = LUMEN_MODEL_2CXM;
  o.backend = tier;
  lumen_fit_plan *pl = NULL;
  if (lumen_fit_plan_create(ctx, &o, NPT, x, cp, &pl) != LUMEN_OK) return -1;
  f->it = malloc(sizeof *f->it * (size_t)nc);
  f->state = malloc(sizeof *f->state * (size_t)nc);
  f->bound = malloc(sizeof *f->bound * (size_t)nc);
  f->chi2 = malloc(sizeof *f->chi2 * (size_t)nc);
  f->p = malloc(sizeof *f->p * 4 * (size_t)nc);
  lumen_fit_results r = {
      .params = f->p, .state = f->state, .chi2 = f->chi2, .iterations = f->it, .bound_mask = f->bound};
  int bad = !f->it || !f->state || !f->bound || !f->chi2 || !f->p || lumen_fit_execute(ctx, pl, nc, y, NULL, &r) != LUMEN_OK;
  lumen_fit_plan_destroy(pl);
  return bad ? -1 : 0;
}

int main(int argc, char **argv) {
  int64_t nc = 4000;
  const char *tier = "cpu_single", *dump = NULL;
  for (int a = 1; a < argc; ++a) {
    if (!strcmp(argv[a], "--curves") && a + 1 < argc) nc = atoll(argv[++a]);
    else if (!strcmp(argv[a], "--tier") && a + 1 < argc) tier = argv[++a];
    else if (!strcmp(argv[a], "--dump") && a + 1 < argc) dump = argv[++a];
    else {
      fprintf(stderr, "usage: bench_cxm_starts [--curves N] [--tier NAME] [--dump FILE]\n");
      return 2;
    }
  }
  if (nc < 1) return 2;
  double x[NPT], cp[NPT], dt[NPT], icp[NPT], yc[NPT];
  if (bench_parker_plasma(NPT, x, cp) != LUMEN_OK) return 1;
  lumen_grid_f64 g;
  lumen_grid_setup_f64(&g, NPT, x, cp, dt, icp);
  float *y = malloc(sizeof *y * (size_t)nc * NPT);
  double *tp_s = malloc(sizeof *tp_s * (size_t)nc); /* each curve's plasma mean transit time vp/(Fp+PS), s */
  if (!y || !tp_s) return 1;
  uint64_t s = 12345;
  for (int64_t c = 0; c < nc; ++c) {
    double p[4], kt = 0.01 + 0.49 * uni(&s);
    p[3] = 0.6 + 0.9 * uni(&s);
    p[0] = kt / p[3];
    p[1] = 0.05 + 0.55 * uni(&s);
    p[2] = 0.01 + 0.09 * uni(&s);
    tp_s[c] = 60.0 * p[2] / (p[3] + p[3] * p[0] / (1.0 - p[0]));
    lumen_eval_2cxm_f64(&g, NULL, p, yc, NULL, NULL);
    for (int i = 0; i < NPT; ++i) y[c * NPT + i] = (float)(yc[i] + 0.005 * normal(&s));
  }
  lumen_ctx *ctx = NULL;
  if (lumen_ctx_create(&ctx) != LUMEN_OK) return 1;
  fitted f, fs;
  if (fit_all(ctx, tier, nc, x, cp, y, &f) || fit_all(ctx, "standard", nc, x, cp, y, &fs)) {
    fprintf(stderr, "bench_cxm_starts: %s\n", lumen_ctx_last_error(ctx));
    return 1;
  }
  const int edges[] = {2, 3, 4, 6, 9, 19, 40, 1 << 30};
  const char *names[] = {"<=2", "3", "4", "5-6", "7-9", "10-19", "20-40", ">40"};
  int64_t hist[8] = {0}, tot = 0, long_it = 0, n_long = 0, on_bound = 0, worse = 0, better = 0;
  for (int64_t c = 0; c < nc; ++c) {
    int k = 0;
    while (f.it[c] > edges[k]) ++k;
    hist[k]++;
    tot += f.it[c];
    if (f.it[c] >= 20) { long_it += f.it[c]; n_long++; }
    on_bound += f.bound[c] != 0;
    const double d = (f.chi2[c] - fs.chi2[c]) / fs.chi2[c];
    worse += d > 1e-6;
    better += d < -1e-6;
  }
  printf("2cxm, %lld curves, tier %s%s: %.2f iterations per fit\n", (long long)nc, tier,
         getenv("LUMEN_TEST_CXM_GRID_START") ? " (LUMEN_TEST_CXM_GRID_START set)" : "", (double)tot / (double)nc);
  printf("iterations:");
  for (int k = 0; k < 8; ++k) printf(" %s: %lld", names[k], (long long)hist[k]);
  printf("\nfits of 20+ iterations: %lld (%.1f %%) with %.1f %% of all iterations; on a bound: %lld\n",
         (long long)n_long, 100.0 * (double)n_long / (double)nc, 100.0 * (double)long_it / (double)tot,
         (long long)on_bound);
  printf("chi2 against the standard tier (relative 1e-6): higher on %lld, lower on %lld\n", (long long)worse,
         (long long)better);
  /* iterations by the plasma transit time against the 5 s frames: below a frame, Fp is barely
     determined and the fits crawl along the valley (docs/BENCHMARKS.md) */
  const double tp_edges[] = {0, 1, 2, 5, 1e9};
  printf("\n| plasma transit time vp/(Fp+PS) | curves | iter/fit %s | iter/fit standard |\n|---|---:|---:|---:|\n", tier);
  for (int b = 0; b < 4; ++b) {
    int64_t k = 0, it = 0, its = 0;
    for (int64_t c = 0; c < nc; ++c)
      if (tp_s[c] >= tp_edges[b] && tp_s[c] < tp_edges[b + 1]) k++, it += f.it[c], its += fs.it[c];
    if (b < 3) printf("| %g-%g s | %lld | %.2f | %.2f |\n", tp_edges[b], tp_edges[b + 1], (long long)k,
                      k ? (double)it / (double)k : 0.0, k ? (double)its / (double)k : 0.0);
    else printf("| >= %g s | %lld | %.2f | %.2f |\n", tp_edges[b], (long long)k, k ? (double)it / (double)k : 0.0,
                k ? (double)its / (double)k : 0.0);
  }
  free(tp_s);
  if (dump) {
    FILE *fd = fopen(dump, "wb");
    int32_t hdr[2] = {NPT, (int32_t)nc};
    int ok = fd && fwrite(hdr, sizeof hdr, 1, fd) == 1 && fwrite(x, sizeof x, 1, fd) == 1 &&
             fwrite(cp, sizeof cp, 1, fd) == 1 && fwrite(y, sizeof *y * NPT, (size_t)nc, fd) == (size_t)nc;
    for (int64_t c = 0; ok && c < nc; ++c)
      ok = fwrite(&f.it[c], sizeof f.it[c], 1, fd) == 1 && fwrite(&f.chi2[c], sizeof f.chi2[c], 1, fd) == 1 &&
           fwrite(&fs.chi2[c], sizeof fs.chi2[c], 1, fd) == 1;
    if (fd) ok &= fclose(fd) == 0;
    if (!ok) {
      fprintf(stderr, "bench_cxm_starts: cannot write %s\n", dump);
      return 1;
    }
  }
  lumen_ctx_destroy(ctx);
  return 0;
}
