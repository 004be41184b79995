/* clip: out = min(max(x, lo), hi), numpy.clip's values on float32 (a bound left at auto is none;
 * where x is NaN the output is NaN, or nan_value when one is given). The worked example of a
 * one-file op (docs/ADDING_A_FILTER.md): options, defaults, checks, CPU kernel and registry row
 * are all here; `lumen filter clip`, lumen_op_run(ctx, "clip", ...), lumen.run_op("clip", ...)
 * and the batch engine find it by name. */
#include <math.h>
#include "filter/op_native.h"

typedef struct clip_opts {
  lumen_filter_exec exec; /* first in every op's options: device, precision, report */
  double lo;              /* lower bound; NaN = none */
  double hi;              /* upper bound; NaN = none */
  double nan_value;       /* written where the input is NaN; NaN = keep NaN */
} clip_opts;

static void clip_init(clip_opts *o) {
  lumen_filter_exec_init(&o->exec);
  o->lo = o->hi = o->nan_value = NAN;
}

static lumen_status clip_check(lumen_ctx *ctx, const clip_opts *o) {
  LUMEN_REQUIRE(ctx, !isinf(o->lo), "clip: lo is %g, expected a finite value or NaN (none)", o->lo);
  LUMEN_REQUIRE(ctx, !isinf(o->hi), "clip: hi is %g, expected a finite value or NaN (none)", o->hi);
  LUMEN_REQUIRE(ctx, !isinf(o->nan_value), "clip: nan_value is %g, expected a finite value or NaN (keep NaN)",
                o->nan_value);
  LUMEN_REQUIRE(ctx, !(o->lo > o->hi), "clip: lo is %g, expected <= hi (%g)", o->lo, o->hi);
  return LUMEN_OK;
}

/* d rounded to float32 as IEEE does (ties to even), without the undefined conversion of a value
   beyond the float range: from half an ulp above FLT_MAX on it rounds to infinity */
static float to_float(double d) {
  if (d >= 0x1.ffffffp127) return INFINITY;
  if (d <= -0x1.ffffffp127) return -INFINITY;
  return (float)d;
}

/* max then min in numpy's order (x > lo ? x : lo, then t < hi ? t : hi), so that -0 against a
   bound of 0 gives the bound, as numpy does */
static lumen_status clip_cpu(lumen_ctx *ctx, lf_call *call) {
  (void)ctx;
  const clip_opts *o = call->opts;
  const float lo = isnan(o->lo) ? -INFINITY : to_float(o->lo);
  const float hi = isnan(o->hi) ? INFINITY : to_float(o->hi);
  const int replace = !isnan(o->nan_value);
  const float nan_out = replace ? to_float(o->nan_value) : 0.0f;
  const float *in = call->in_f32[0];
  float *out = lumen_image_data(call->out);
  const int64_t n = call->geom.total;
  /* selects without branches (v == v is false for NaN only), so that the loop vectorises */
#pragma omp parallel for schedule(static) num_threads(call->threads) if (n >= 65536)
  for (int64_t i = 0; i < n; i++) {
    const float v = in[i];
    const float t = v > lo ? v : lo;
    const float u = t < hi ? t : hi;
    const float w = replace ? nan_out : v;
    out[i] = v == v ? u : w;
  }
  return LUMEN_OK;
}

static const lumen_op_option clip_options[] = {
  LUMEN_NATIVE_OPTION_ALIAS(clip_opts, DOUBLE, lo, "min a_min", LUMEN_OP_ANY_MIN, LUMEN_OP_ANY_MAX, LUMEN_OPT_NAN_OK,
                            NULL, "lower bound (auto = none)"),
  LUMEN_NATIVE_OPTION_ALIAS(clip_opts, DOUBLE, hi, "max a_max", LUMEN_OP_ANY_MIN, LUMEN_OP_ANY_MAX, LUMEN_OPT_NAN_OK,
                            NULL, "upper bound (auto = none)"),
  LUMEN_NATIVE_OPTION_ALIAS(clip_opts, DOUBLE, nan_value, "nan", LUMEN_OP_ANY_MIN, LUMEN_OP_ANY_MAX, LUMEN_OPT_NAN_OK,
                            NULL, "the output where the input is NaN (auto = NaN)"),
};

LUMEN_NATIVE_FILTER(clip, "clamp", "clamp to [lo, hi] (numpy.clip); NaN kept or set to nan_value", IMAGE, clip_opts,
                    clip_options, clip_init, clip_check, clip_cpu);
