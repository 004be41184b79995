/* Report figures (issue 17): the viridis colour map, categorical colours, axis ticks and their
   labels, the bitmap font, the RGB PNG writer (read back through libpng), the SVG plots, and
   lumen_fit_plan_eval (the fitted-curve plots) against analytic Patlak curves. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test_support.h"
#include "lumen/fit.h"
#include "lumen/io.h"
#include "pipeline/figure.h"
#include "pipeline/pipe_strbuf.h"

static double luminance(pipe_rgb c) { return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b; }

static void viridis_and_categories(void **state) {
  (void)state;
  pipe_rgb lo = pipe_viridis(0), hi = pipe_viridis(1), mid = pipe_viridis(0.5);
  /* the published end points and middle of viridis: #440154, #fde725, about #21918c */
  assert_true(lo.r == 68 && lo.g == 1 && lo.b == 84);
  assert_true(hi.r == 253 && hi.g == 231 && hi.b == 37);
  assert_true(abs(mid.r - 33) <= 4 && abs(mid.g - 145) <= 4 && abs(mid.b - 140) <= 4);
  /* perceptual order: luminance rises monotonically over the whole map */
  double prev = -1;
  for (int i = 0; i <= 200; ++i) {
    double l = luminance(pipe_viridis(i / 200.0));
    assert_true(l > prev);
    prev = l;
  }
  pipe_rgb n = pipe_viridis(NAN), below = pipe_viridis(-3), above = pipe_viridis(7);
  assert_true(n.r == lo.r && below.g == lo.g && above.b == hi.b);
  /* NaN and outside-mask colours are not on the map */
  for (int i = 0; i <= 100; ++i) {
    pipe_rgb v = pipe_viridis(i / 100.0);
    assert_false(v.r == PIPE_NAN_RGB.r && v.g == PIPE_NAN_RGB.g && v.b == PIPE_NAN_RGB.b);
    assert_false(v.r == PIPE_OUTSIDE_RGB.r && v.g == PIPE_OUTSIDE_RGB.g);
  }
  /* every fit state has its own colour */
  for (int a = 0; a < LUMEN_FIT_STATE_COUNT; ++a)
    for (int b = a + 1; b < LUMEN_FIT_STATE_COUNT; ++b) {
      pipe_rgb x = pipe_state_colour(a), y = pipe_state_colour(b);
      assert_false(x.r == y.r && x.g == y.g && x.b == y.b);
    }
  char hex[8];
  pipe_rgb_hex(pipe_state_colour(LUMEN_FIT_CONVERGED), hex);
  assert_string_equal(hex, "#009e73");
}

static void ticks_and_labels(void **state) {
  (void)state;
  double t[16], step;
  int n = pipe_ticks(0.04571, 0.4113, 6, t, &step);
  assert_int_equal(n, 4);
  assert_true(fabs(step - 0.1) < 1e-12);
  lumen_test_assert_close(t[0], 0.1, 1e-12, 0, "first tick");
  lumen_test_assert_close(t[3], 0.4, 1e-12, 0, "last tick");
  char lab[32];
  pipe_tick_label(t[1], step, lab, sizeof lab);
  assert_string_equal(lab, "0.2");
  n = pipe_ticks(0, 6.58, 9, t, &step);
  assert_true(step == 1 && n == 7 && t[0] == 0 && t[6] == 6);
  pipe_tick_label(t[6], step, lab, sizeof lab);
  assert_string_equal(lab, "6");
  n = pipe_ticks(-622.6, -353.5, 6, t, &step);
  assert_true(step == 100 && n == 3 && t[0] == -600 && t[2] == -400); /* 50 would give 6 > 5 gaps */
  n = pipe_ticks(0, 0.002, 5, t, &step);
  assert_true(fabs(step - 0.0005) < 1e-15 && n == 5);
  pipe_tick_label(t[1], step, lab, sizeof lab);
  assert_string_equal(lab, "0.0005");
  pipe_tick_label(1.5e6, 5e5, lab, sizeof lab);
  assert_string_equal(lab, "1.5e+06");
  /* r2 near 1: neighbouring ticks read differently (they read "1 1 1 1 1": issue 39 item 9) */
  n = pipe_ticks(0.99942, 0.99991, 6, t, &step);
  assert_true(fabs(step - 1e-4) < 1e-15 && n == 5);
  char prev[32] = "";
  for (int i = 0; i < n; ++i) {
    pipe_tick_label(t[i], step, lab, sizeof lab);
    assert_true(strcmp(lab, prev) != 0);
    snprintf(prev, sizeof prev, "%s", lab);
  }
  pipe_tick_label(t[0], step, lab, sizeof lab);
  assert_string_equal(lab, "0.9995");
  pipe_tick_label(2.5e-7, 1e-7, lab, sizeof lab);
  assert_string_equal(lab, "2.5e-07");
  assert_int_equal(pipe_ticks(1, 1, 5, t, &step), 0);
  assert_int_equal(pipe_ticks(NAN, 1, 5, t, &step), 0);
}

static int count_ink(const pipe_canvas *c) {
  int n = 0;
  for (int i = 0; i < c->w * c->h; ++i) n += c->px[3 * i] == 0 && c->px[3 * i + 1] == 0 && c->px[3 * i + 2] == 0;
  return n;
}

static void font_and_png(void **state) {
  (void)state;
  pipe_canvas c;
  assert_int_equal(pipe_canvas_init(&c, 64, 20), 0);
  /* '1' of the font: 1 + 2 + 1 + 1 + 1 + 1 + 3 = 10 pixels; at scale 2, 40 */
  assert_int_equal(pipe_canvas_text(&c, 0, 0, 1, "1", PIPE_INK_RGB), PIPE_FONT_W);
  assert_int_equal(count_ink(&c), 10);
  pipe_canvas_fill(&c, 0, 0, 64, 20, (pipe_rgb){255, 255, 255});
  assert_int_equal(pipe_canvas_text(&c, 2, 2, 2, "1", PIPE_INK_RGB), 2 * PIPE_FONT_W);
  assert_int_equal(count_ink(&c), 40);
  /* a byte outside ASCII is drawn as '?', and text is clipped at the edge without harm */
  assert_int_equal(pipe_text_width("a\xc3\xa9", 1), 3 * PIPE_FONT_W);
  pipe_canvas_text(&c, 60, 15, 3, "\xff\x01~", PIPE_INK_RGB);
  pipe_canvas_line(&c, -1e9, 0, 1e9, 5, PIPE_INK_RGB, 1); /* far outside: ignored */
  pipe_canvas_fill(&c, 10, 5, 4, 3, (pipe_rgb){0, 158, 115});
  lumen_ctx *ctx = lumen_test_ctx();
  char path[] = "/tmp/lumen_figXXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(lumen_png_write_rgb8(ctx, path, c.px, c.w, c.h, 0), LUMEN_ERR_IO); /* exists, no overwrite */
  assert_int_equal(lumen_png_write_rgb8(ctx, path, c.px, c.w, c.h, 1), LUMEN_OK);
  assert_int_equal(lumen_png_write_rgb8(ctx, path, c.px, 0, c.h, 1), LUMEN_ERR_INVALID_ARGUMENT);
  lumen_image *im = NULL;
  int depth = 0;
  assert_int_equal(lumen_png_read(ctx, path, NULL, &im, &depth), LUMEN_OK);
  assert_int_equal(depth, 8);
  assert_int_equal(lumen_image_dim(im, 0), 64);
  assert_int_equal(lumen_image_dim(im, 1), 20);
  /* read back as luminance (Rec. 709) of the RGB written: the green fill and white */
  const uint8_t *g = lumen_image_const_data(im);
  lumen_test_assert_close(g[6 * 64 + 11], luminance((pipe_rgb){0, 158, 115}), 1.0, 0, "green pixel luminance");
  assert_int_equal(g[19 * 64 + 0], 255);
  lumen_image_free(im);
  unlink(path);
  pipe_canvas_free(&c);
  lumen_ctx_destroy(ctx);
}

static void svg_plots(void **state) {
  (void)state;
  double x[5] = {0, 1, 2, 3, 4}, y[5] = {0, 1, NAN, 3, 4};
  pipe_plot p = {.title = "a <b> & c", .xlabel = "time (min)", .ylabel = "concentration (mM)"};
  p.series[p.n_series++] = (pipe_series){x, y, 5, "Cp", {213, 94, 0}, PIPE_LINE};
  pipe_sb b = {0};
  pipe_svg_plot(&b, &p);
  assert_false(b.oom);
  assert_non_null(strstr(b.s, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
  assert_non_null(strstr(b.s, "a &lt;b&gt; &amp; c")); /* escaped */
  assert_null(strstr(b.s, "<b>"));
  assert_non_null(strstr(b.s, ">time (min)</text>"));
  assert_non_null(strstr(b.s, ">concentration (mM)</text>"));
  /* the NaN splits the line in two polylines; ticks numbered 0..4 on x */
  const char *q = b.s;
  int lines = 0;
  while ((q = strstr(q, "<polyline"))) ++lines, ++q;
  assert_int_equal(lines, 2);
  assert_non_null(strstr(b.s, ">4</text>"));
  assert_non_null(strstr(b.s, ">Cp</text>"));
  pipe_sb_free(&b);
  int64_t counts[4] = {1, 0, 5, 2};
  pipe_sb h = {0};
  pipe_svg_hist(&h, "T1 (s)", "T1 (s)", 0.5, 2.5, counts, 4);
  q = h.s;
  int bars = 0;
  while ((q = strstr(q, "<rect x="))) ++bars, ++q;
  assert_int_equal(bars, 3 + 1); /* the plot frame and one bar per non-empty bin */
  assert_non_null(strstr(h.s, ">voxels</text>"));
  pipe_sb_free(&h);
}

/* Patlak with a ramp AIF cp(t) = t: C(t) = K t^2 / 2 + vp t exactly (the trapezoid integral of a
   linear cp is exact); with a delay of two samples, cp(t - d) = max(t - d, 0). */
static void plan_eval_patlak(void **state) {
  (void)state;
  lumen_ctx *ctx = lumen_test_ctx();
  enum { N = 30 };
  double t[N], cp[N], y[N];
  for (int i = 0; i < N; ++i) t[i] = 0.1 * i, cp[i] = t[i];
  lumen_fit_options o;
  lumen_fit_options_init(&o);
  o.model = LUMEN_MODEL_PATLAK;
  lumen_fit_plan *plan = NULL;
  assert_int_equal(lumen_fit_plan_create(ctx, &o, N, t, cp, &plan), LUMEN_OK);
  const double p[2] = {0.3, 0.05};
  assert_int_equal(lumen_fit_plan_eval(plan, p, NULL, 0, y), LUMEN_OK);
  for (int i = 0; i < N; ++i) lumen_test_assert_close(y[i], 0.3 * t[i] * t[i] / 2 + 0.05 * t[i], 1e-12, 1e-12, "patlak");
  assert_int_equal(lumen_fit_plan_eval(plan, p, NULL, NAN, y), LUMEN_OK); /* NaN delay: none */
  lumen_test_assert_close(y[N - 1], 0.3 * t[N - 1] * t[N - 1] / 2 + 0.05 * t[N - 1], 1e-12, 1e-12, "NaN delay");
  const double d = 0.2;
  assert_int_equal(lumen_fit_plan_eval(plan, p, NULL, d, y), LUMEN_OK);
  for (int i = 0; i < N; ++i) {
    double s = fmax(t[i] - d, 0);
    lumen_test_assert_close(y[i], 0.3 * s * s / 2 + 0.05 * s, 1e-12, 1e-12, "delayed patlak");
  }
  assert_int_equal(lumen_fit_plan_eval(plan, NULL, NULL, 0, y), LUMEN_ERR_INVALID_ARGUMENT);
  lumen_fit_plan_destroy(plan);
  lumen_ctx_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(viridis_and_categories), cmocka_unit_test(ticks_and_labels),
                                     cmocka_unit_test(font_and_png), cmocka_unit_test(svg_plots),
                                     cmocka_unit_test(plan_eval_patlak)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
