/* The RGB canvas of the figure PNGs: rectangles, lines, 5x7 text, colour maps, axis ticks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/figure.h"

int pipe_canvas_init(pipe_canvas *c, int w, int h) {
  c->w = c->h = 0;
  c->px = NULL;
  if (w < 1 || h < 1) return -1;
  c->px = malloc((size_t)w * (size_t)h * 3);
  if (!c->px) return -1;
  memset(c->px, 255, (size_t)w * (size_t)h * 3);
  c->w = w;
  c->h = h;
  return 0;
}

void pipe_canvas_free(pipe_canvas *c) {
  free(c->px);
  c->px = NULL;
  c->w = c->h = 0;
}

static void put(pipe_canvas *c, int x, int y, pipe_rgb col) {
  if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
  uint8_t *p = c->px + ((size_t)y * (size_t)c->w + (size_t)x) * 3;
  p[0] = col.r;
  p[1] = col.g;
  p[2] = col.b;
}

void pipe_canvas_fill(pipe_canvas *c, int x, int y, int w, int h, pipe_rgb col) {
  int x0 = x < 0 ? 0 : x, y0 = y < 0 ? 0 : y;
  int x1 = x + w > c->w ? c->w : x + w, y1 = y + h > c->h ? c->h : y + h;
  for (int r = y0; r < y1; ++r)
    for (int q = x0; q < x1; ++q) put(c, q, r, col);
}

void pipe_canvas_frame(pipe_canvas *c, int x, int y, int w, int h, pipe_rgb col) {
  pipe_canvas_fill(c, x, y, w, 1, col);
  pipe_canvas_fill(c, x, y + h - 1, w, 1, col);
  pipe_canvas_fill(c, x, y, 1, h, col);
  pipe_canvas_fill(c, x + w - 1, y, 1, h, col);
}

void pipe_canvas_line(pipe_canvas *c, double x0, double y0, double x1, double y1, pipe_rgb col, int thick) {
  if (!(fabs(x0) < 1e6 && fabs(y0) < 1e6 && fabs(x1) < 1e6 && fabs(y1) < 1e6)) return; /* NaN too */
  double len = fmax(fabs(x1 - x0), fabs(y1 - y0));
  if (len > 1e5) return; /* far outside any figure */
  int n = (int)(len * 2) + 1;
  for (int i = 0; i <= n; ++i) {
    double x = x0 + (x1 - x0) * i / n, y = y0 + (y1 - y0) * i / n;
    pipe_canvas_fill(c, (int)floor(x) - thick / 2, (int)floor(y) - thick / 2, thick, thick, col);
  }
}

int pipe_text_width(const char *s, int scale) { return (int)strlen(s) * PIPE_FONT_W * scale; }

int pipe_canvas_text(pipe_canvas *c, int x, int y, int scale, const char *s, pipe_rgb col) {
  int x0 = x;
  for (const unsigned char *p = (const unsigned char *)s; *p; ++p, x += PIPE_FONT_W * scale) {
    int g = (*p >= 32 && *p <= 126) ? *p - 32 : '?' - 32;
    for (int r = 0; r < PIPE_FONT_H; ++r)
      for (int q = 0; q < 5; ++q)
        if (pipe_font5x7[g][r] & (0x10 >> q)) pipe_canvas_fill(c, x + q * scale, y + r * scale, scale, scale, col);
  }
  return x - x0;
}

/* viridis sampled at 10 equally spaced points (the published colour map), interpolated linearly */
static const pipe_rgb viridis_stops[10] = {
    {68, 1, 84},   {72, 40, 120},  {62, 74, 137},  {49, 104, 142}, {38, 130, 142},
    {31, 158, 137}, {53, 183, 121}, {109, 205, 89}, {180, 222, 44}, {253, 231, 37},
};

pipe_rgb pipe_viridis(double f) {
  if (!(f > 0)) f = 0; /* NaN too */
  if (f > 1) f = 1;
  double u = f * 9;
  int k = (int)u;
  if (k > 8) k = 8;
  double t = u - k;
  const pipe_rgb a = viridis_stops[k], b = viridis_stops[k + 1];
  pipe_rgb o = {(uint8_t)lrint(a.r + (b.r - a.r) * t), (uint8_t)lrint(a.g + (b.g - a.g) * t),
                (uint8_t)lrint(a.b + (b.b - a.b) * t)};
  return o;
}

void pipe_rgb_hex(pipe_rgb c, char *buf) { snprintf(buf, 8, "#%02x%02x%02x", c.r, c.g, c.b); }

static const pipe_rgb okabe_ito[8] = {
    {0, 114, 178}, {230, 159, 0}, {0, 158, 115}, {213, 94, 0},
    {86, 180, 233}, {204, 121, 167}, {240, 228, 66}, {0, 0, 0},
};

pipe_rgb pipe_category_colour(int k) { return okabe_ito[(k < 0 ? -k : k) % 8]; }

pipe_rgb pipe_state_colour(int state) {
  /* indexed by lumen_fit_state: converged, max_iterations, singular, invalid_input,
     start_out_of_bounds, not_finite, not_fitted, at_bound */
  static const pipe_rgb c[8] = {
      {0, 158, 115}, {230, 159, 0}, {204, 121, 167}, {213, 94, 0},
      {0, 114, 178}, {0, 0, 0},     {236, 236, 236}, {240, 228, 66},
  };
  return state >= 0 && state < 8 ? c[state] : (pipe_rgb){128, 128, 128};
}

int pipe_ticks(double lo, double hi, int max_n, double *ticks, double *step) {
  *step = NAN;
  if (!isfinite(lo) || !isfinite(hi) || !(hi > lo) || max_n < 2) return 0;
  double raw = (hi - lo) / (max_n - 1), mag = pow(10, floor(log10(raw))), s = mag;
  static const double mult[] = {1, 2, 5, 10};
  for (int i = 0; i < 4; ++i) {
    s = mult[i] * mag;
    if (s >= raw) break;
  }
  int n = 0;
  for (double t = ceil(lo / s - 1e-9) * s; t <= hi + s * 1e-9 && n < max_n; t += s) {
    ticks[n++] = fabs(t) < s * 1e-9 ? 0.0 : t;
  }
  *step = s;
  return n;
}

void pipe_tick_label(double v, double step, char *buf, size_t size) {
  if (!isfinite(v)) {
    snprintf(buf, size, "nan");
  } else if (!(step > 0) || !isfinite(step)) {
    snprintf(buf, size, "%.3g", v);
  } else if (step >= 1e5 || fabs(v) >= 1e6 || (step < 1e-3 && fabs(v) < 1e-3)) {
    /* as many significant digits as tell neighbouring ticks apart (r2 ticks 0.9995, 0.9996, ...
       read "1 1 1" with a fixed three: issue 39 item 9) */
    int digits = fabs(v) > step ? (int)ceil(log10(fabs(v) / step) + 1e-9) + 1 : 1;
    snprintf(buf, size, "%.*g", digits < 3 ? 3 : digits > 15 ? 15 : digits, v);
  } else {
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    snprintf(buf, size, "%.*f", dec, v);
  }
}
