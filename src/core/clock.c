/* The one monotonic clock lumen times its stages, runs and benchmarks with. */
#include <time.h>
#include "core/internal.h"

double lumen_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
