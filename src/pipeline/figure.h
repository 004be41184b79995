/* Figures of the report: an RGB canvas with a bitmap font, colour maps and axis ticks for the
   standalone PNGs (canvas.c, font5x7.c), and inline SVG plots for report.html (svg_plot.c). */
#ifndef LUMEN_PIPE_FIGURE_H
#define LUMEN_PIPE_FIGURE_H

#include <stddef.h>
#include <stdint.h>

typedef struct pipe_rgb {
  uint8_t r, g, b;
} pipe_rgb;

/* ---- canvas.c */
typedef struct pipe_canvas {
  int w, h;
  uint8_t *px; /* w x h x 3 bytes, row-major, top row first */
} pipe_canvas;
/* A white canvas; returns 0, or -1 when out of memory (or a side is below 1). */
int pipe_canvas_init(pipe_canvas *c, int w, int h);
void pipe_canvas_free(pipe_canvas *c);
void pipe_canvas_fill(pipe_canvas *c, int x, int y, int w, int h, pipe_rgb col); /* clipped */
void pipe_canvas_frame(pipe_canvas *c, int x, int y, int w, int h, pipe_rgb col); /* 1-px outline */
void pipe_canvas_line(pipe_canvas *c, double x0, double y0, double x1, double y1, pipe_rgb col, int thick);
/* Text in the 5x7 font, each font pixel drawn as scale x scale, top-left corner at (x, y); bytes
   outside printable ASCII are drawn as '?'. Returns the width in pixels. */
#define PIPE_FONT_W 6 /* advance per character at scale 1 (5 + 1 space) */
#define PIPE_FONT_H 7
int pipe_canvas_text(pipe_canvas *c, int x, int y, int scale, const char *s, pipe_rgb col);
int pipe_text_width(const char *s, int scale);
/* The glyphs (font5x7.c): rows of printable ASCII 32..126, bit 4 = leftmost pixel. */
extern const uint8_t pipe_font5x7[95][7];

/* Perceptual colour map (viridis: dark blue-violet at 0, yellow at 1); f is clamped to [0, 1]. */
pipe_rgb pipe_viridis(double f);
/* "#rrggbb" of a colour into buf (8 bytes). */
void pipe_rgb_hex(pipe_rgb c, char *buf);
/* Categorical colours (Okabe-Ito, distinguishable with colour-vision deficiency) for the models
   and a fixed colour per fit state (converged green, at_bound yellow, failures warm or black,
   not_fitted light grey). */
pipe_rgb pipe_category_colour(int k);
pipe_rgb pipe_state_colour(int state);
#define PIPE_NAN_RGB ((pipe_rgb){228, 26, 28})      /* NaN inside the mask: red, not in viridis */
#define PIPE_OUTSIDE_RGB ((pipe_rgb){236, 236, 236}) /* outside the mask */
#define PIPE_INK_RGB ((pipe_rgb){0, 0, 0})
#define PIPE_GRID_RGB ((pipe_rgb){220, 220, 220})

/* Axis ticks at 1, 2 or 5 x 10^k covering [lo, hi]: at most max_n values into ticks (lo <= t <=
   hi); *step receives the spacing. Returns the count (0 when lo, hi are not finite or hi <= lo). */
int pipe_ticks(double lo, double hi, int max_n, double *ticks, double *step);
/* A tick value printed with as many decimals as the step needs ("0.05", "120", "1e-05"). */
void pipe_tick_label(double v, double step, char *buf, size_t size);

/* ---- svg_plot.c */
struct pipe_sb;
typedef struct pipe_series {
  const double *x, *y;  /* n points; non-finite y values break the line */
  int n;
  const char *label;    /* legend entry (NULL: none) */
  pipe_rgb colour;
  int style;            /* PIPE_LINE, PIPE_DASHED or PIPE_MARKERS */
} pipe_series;
enum { PIPE_LINE = 0, PIPE_DASHED = 1, PIPE_MARKERS = 2 };
#define PIPE_PLOT_MAX_SERIES 8
typedef struct pipe_plot {
  const char *title, *xlabel, *ylabel; /* axis labels carry the unit: "time (min)" */
  pipe_series series[PIPE_PLOT_MAX_SERIES];
  int n_series;
  int y_from_zero;      /* include 0 in the y range */
} pipe_plot;
/* The data range of a plot: x0, x1, y0, y1 (finite points; 5 % head room above; y from 0 when
   y_from_zero). */
void pipe_plot_range(const pipe_plot *p, double r[4]);
/* An inline <svg> line plot: numbered axes with titles, grid, legend. */
void pipe_svg_plot(struct pipe_sb *b, const pipe_plot *p);
/* An inline <svg> histogram of nb bins covering [lo, hi]. */
void pipe_svg_hist(struct pipe_sb *b, const char *title, const char *xlabel, double lo, double hi,
                   const int64_t *counts, int nb);

#endif
