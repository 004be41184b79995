/* lumen: what this build and machine can do, as PASS / FAIL / SKIP rows (`lumen backends`). */
#ifndef LUMEN_HEALTH_H
#define LUMEN_HEALTH_H
#include "lumen/export.h"

#include "lumen/context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lumen_check_status {
  LUMEN_CHECK_PASS = 0,  /* present and working */
  LUMEN_CHECK_FAIL,      /* expected to work here and does not: needs attention */
  LUMEN_CHECK_SKIP       /* not built, or not available on this machine: the detail says why */
} lumen_check_status;

#define LUMEN_CHECK_NAME_MAX 48
#define LUMEN_CHECK_DETAIL_MAX 400

typedef struct lumen_check {
  char name[LUMEN_CHECK_NAME_MAX];
  lumen_check_status status;
  char detail[LUMEN_CHECK_DETAIL_MAX];
} lumen_check;

/* "PASS", "FAIL", "SKIP". */
LUMEN_API const char *lumen_check_status_name(lumen_check_status status);

/* Runs the library's checks (CPU and threads, OpenMP, precision conversion, CUDA build, driver,
   each device, ...) and writes up to capacity rows; *count receives how many rows there are.
   Never fails because a GPU or driver is missing: that is a SKIP row with the reason. */
LUMEN_API lumen_status lumen_health_checks(lumen_ctx *ctx, lumen_check *rows, int capacity, int *count);

#ifdef __cplusplus
}
#endif
#endif
