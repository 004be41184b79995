/* Small helpers shared by the benchmark programs (bench/bench_*.c). */
#ifndef LUMEN_BENCH_UTIL_H
#define LUMEN_BENCH_UTIL_H
#include <math.h>
#include <stdint.h>
#include <time.h>
#include "lumen/aif.h"

/* The time of clock (CLOCK_MONOTONIC: wall; CLOCK_PROCESS_CPUTIME_ID: the CPU of every thread)
   in seconds. */
static inline double bench_seconds(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* qsort's comparison of doubles, ascending. */
static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The acquisition of bench_fit's model curves: n frames of 5 s (x in minutes) and Parker's
   population AIF as plasma concentration (Hct 0.42, 1 min delay). LUMEN_OK or the AIF's error. */
static inline lumen_status bench_parker_plasma(int n, double *x, double *cp) {
  for (int i = 0; i < n; ++i) x[i] = i * 5.0 / 60.0;
  lumen_aif_options ao;
  lumen_aif_options_init(&ao);
  ao.kind = LUMEN_AIF_PARKER;
  ao.delay = 1.0;
  ao.hct = 0.42;
  ao.plasma = 1;
  return lumen_aif_population(NULL, &ao, n, x, cp);
}

/* The synthetic curves' random numbers: a 64-bit linear congruential generator (Knuth's MMIX
   constants), uniform in (0, 1) from its top 53 bits, and a Box-Muller normal. The same sequence
   for the same seed on every machine. */
typedef struct bench_rng {
  uint64_t state;
} bench_rng;

static inline double bench_uniform(bench_rng *r) {
  r->state = r->state * 6364136223846793005ULL + 1442695040888963407ULL;
  return ((double)(r->state >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static inline double bench_normal(bench_rng *r) {
  const double u = bench_uniform(r); /* the radius's draw first, then the angle's */
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * bench_uniform(r));
}

#endif
