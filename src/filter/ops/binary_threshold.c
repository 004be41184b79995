/* binary_threshold: the mask lower <= x <= upper as uint8 0/1 (ITK's BinaryThresholdImageFilter
 * with inside 1, outside 0); a bound left at auto is none, NaN is outside. A one-file op
 * (docs/ADDING_A_FILTER.md) with a mask output. */
#include <math.h>
#include "filter/op_native.h"

typedef struct binary_threshold_opts {
  lumen_filter_exec exec; /* first in every op's options: device, precision, report */
  double lower;           /* NaN = none */
  double upper;           /* NaN = none */
} binary_threshold_opts;

static void binary_threshold_init(binary_threshold_opts *o) {
  lumen_filter_exec_init(&o->exec);
  o->lower = o->upper = NAN;
}

static lumen_status binary_threshold_check(lumen_ctx *ctx, const binary_threshold_opts *o) {
  LUMEN_REQUIRE(ctx, !isinf(o->lower), "binary_threshold: lower is %g, expected a finite value or NaN (none)",
                o->lower);
  LUMEN_REQUIRE(ctx, !isinf(o->upper), "binary_threshold: upper is %g, expected a finite value or NaN (none)",
                o->upper);
  LUMEN_REQUIRE(ctx, !(o->lower > o->upper), "binary_threshold: lower is %g, expected <= upper (%g)", o->lower,
                o->upper);
  return LUMEN_OK;
}

/* the bounds compared in double: a float32 voxel converts exactly, so x >= lower is the exact
   comparison of the two numbers (no rounding of the bound) */
static lumen_status binary_threshold_cpu(lumen_ctx *ctx, lf_call *call) {
  (void)ctx;
  const binary_threshold_opts *o = call->opts;
  const double lo = isnan(o->lower) ? -INFINITY : o->lower;
  const double hi = isnan(o->upper) ? INFINITY : o->upper;
  const float *in = call->in_f32[0];
  uint8_t *out = lumen_image_data(call->out);
  const int64_t n = call->geom.total;
#pragma omp parallel for schedule(static) num_threads(call->threads) if (n >= 65536)
  for (int64_t i = 0; i < n; i++) {
    const double v = in[i];
    out[i] = (uint8_t)((v >= lo) & (v <= hi)); /* false for NaN */
  }
  return LUMEN_OK;
}

static const lumen_op_option binary_threshold_options[] = {
  LUMEN_NATIVE_OPTION_ALIAS(binary_threshold_opts, DOUBLE, lower, "lo min", LUMEN_OP_ANY_MIN, LUMEN_OP_ANY_MAX,
                            LUMEN_OPT_NAN_OK, NULL, "lowest value inside (auto = none)"),
  LUMEN_NATIVE_OPTION_ALIAS(binary_threshold_opts, DOUBLE, upper, "hi max", LUMEN_OP_ANY_MIN, LUMEN_OP_ANY_MAX,
                            LUMEN_OPT_NAN_OK, NULL, "highest value inside (auto = none)"),
};

LUMEN_NATIVE_FILTER(binary_threshold, "in_range", "mask of lower <= x <= upper (ITK BinaryThreshold); NaN outside",
                    MASK, binary_threshold_opts, binary_threshold_options, binary_threshold_init,
                    binary_threshold_check, binary_threshold_cpu);
