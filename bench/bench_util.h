/* Small helpers shared by the benchmark programs (bench/bench_*.c). */
#ifndef LUMEN_BENCH_UTIL_H
#define LUMEN_BENCH_UTIL_H
#include <time.h>

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

#endif
