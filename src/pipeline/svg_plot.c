/* Inline SVG plots of report.html: line plots (AIF, measured and fitted curves) and histograms,
   with numbered axes, axis titles carrying the unit, a grid and a legend. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "pipeline/figure.h"
#include "pipeline/pipe_strbuf.h"

enum { ML = 66, MR = 14, MT = 30, MB = 46 };

typedef struct frame {
  double x0, x1, y0, y1; /* data range */
  int w, h;              /* svg size in pixels */
} frame;

static double px_x(const frame *f, double x) { return ML + (x - f->x0) / (f->x1 - f->x0) * (f->w - ML - MR); }
static double px_y(const frame *f, double y) { return f->h - MB - (y - f->y0) / (f->y1 - f->y0) * (f->h - MT - MB); }

static void text(pipe_sb *b, double x, double y, const char *anchor, const char *extra, const char *s) {
  pipe_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s>", x, y, anchor, extra);
  pipe_sb_html(b, s);
  pipe_sb_printf(b, "</text>");
}

/* The svg element, title, grid, numbered axes and axis titles. */
static void axes(pipe_sb *b, const frame *f, const char *title, const char *xlabel, const char *ylabel) {
  pipe_sb_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"%d\" height=\"%d\" "
                    "viewBox=\"0 0 %d %d\" role=\"img\" font-family=\"sans-serif\" font-size=\"12\"><title>",
                 f->w, f->h, f->w, f->h);
  pipe_sb_html(b, title);
  pipe_sb_printf(b, "</title><rect width=\"%d\" height=\"%d\" fill=\"white\"/>", f->w, f->h);
  text(b, f->w / 2.0, 18, "middle", " font-weight=\"bold\"", title);
  double t[16], step;
  int n = pipe_ticks(f->x0, f->x1, 9, t, &step);
  char lab[64];
  for (int i = 0; i < n; ++i) {
    double x = px_x(f, t[i]);
    pipe_sb_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>", x, MT, x, f->h - MB + 5);
    pipe_tick_label(t[i], step, lab, sizeof lab);
    text(b, x, f->h - MB + 18, "middle", "", lab);
  }
  n = pipe_ticks(f->y0, f->y1, 7, t, &step);
  for (int i = 0; i < n; ++i) {
    double y = px_y(f, t[i]);
    pipe_sb_printf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>", ML - 5, y, f->w - MR, y);
    pipe_tick_label(t[i], step, lab, sizeof lab);
    text(b, ML - 8, y + 4, "end", "", lab);
  }
  pipe_sb_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"black\"/>", ML, MT,
                 f->w - ML - MR, f->h - MT - MB);
  text(b, (ML + f->w - MR) / 2.0, f->h - 8, "middle", "", xlabel);
  char rot[96];
  snprintf(rot, sizeof rot, " transform=\"rotate(-90 16 %.1f)\"", (MT + f->h - MB) / 2.0);
  text(b, 16, (MT + f->h - MB) / 2.0, "middle", rot, ylabel);
}

void pipe_plot_range(const pipe_plot *p, double r[4]) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (int s = 0; s < p->n_series; ++s)
    for (int i = 0; i < p->series[s].n; ++i) {
      double x = p->series[s].x[i], y = p->series[s].y[i];
      if (!isfinite(x) || !isfinite(y)) continue;
      x0 = fmin(x0, x);
      x1 = fmax(x1, x);
      y0 = fmin(y0, y);
      y1 = fmax(y1, y);
    }
  if (!(x1 >= x0)) x0 = 0, x1 = 1;
  if (!(y1 >= y0)) y0 = 0, y1 = 1;
  if (p->y_from_zero) y0 = fmin(y0, 0), y1 = fmax(y1, 0);
  double pad = 0.05 * (y1 - y0);
  y1 += pad;
  if (y0 < 0) y0 -= pad;
  if (!(x1 > x0)) x1 = x0 + 1;
  if (!(y1 > y0)) y1 = y0 + 1;
  r[0] = x0, r[1] = x1, r[2] = y0, r[3] = y1;
}

static void series(pipe_sb *b, const frame *f, const pipe_series *s) {
  char hex[8];
  pipe_rgb_hex(s->colour, hex);
  if (s->style == PIPE_MARKERS) {
    pipe_sb_printf(b, "<g fill=\"%s\">", hex);
    for (int i = 0; i < s->n; ++i)
      if (isfinite(s->x[i]) && isfinite(s->y[i]))
        pipe_sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\"/>", px_x(f, s->x[i]), px_y(f, s->y[i]));
    pipe_sb_printf(b, "</g>");
    return;
  }
  int open = 0;
  for (int i = 0; i < s->n; ++i) {
    int ok = isfinite(s->x[i]) && isfinite(s->y[i]);
    if (ok && !open) {
      pipe_sb_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", hex,
                     s->style == PIPE_DASHED ? " stroke-dasharray=\"6 4\"" : "");
      open = 1;
    }
    if (ok) pipe_sb_printf(b, "%.1f,%.1f ", px_x(f, s->x[i]), px_y(f, s->y[i]));
    if (open && (!ok || i == s->n - 1)) {
      pipe_sb_printf(b, "\"/>");
      open = 0;
    }
  }
}

static void legend(pipe_sb *b, const frame *f, const pipe_plot *p) {
  int row = 0;
  size_t longest = 0;
  for (int s = 0; s < p->n_series; ++s)
    if (p->series[s].label && strlen(p->series[s].label) > longest) longest = strlen(p->series[s].label);
  double x = f->w - MR - 8 - 26 - 6.2 * (double)longest; /* 11 px sans-serif: about 6.2 px a character */
  if (x < ML + 8) x = ML + 8;
  for (int s = 0; s < p->n_series; ++s) {
    const pipe_series *se = &p->series[s];
    if (!se->label) continue;
    char hex[8];
    pipe_rgb_hex(se->colour, hex);
    double y = MT + 14 + 15 * row++;
    if (se->style == PIPE_MARKERS)
      pipe_sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>", x + 10, y - 4, hex);
    else
      pipe_sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>", x,
                     y - 4, x + 20, y - 4, hex, se->style == PIPE_DASHED ? " stroke-dasharray=\"6 4\"" : "");
    text(b, x + 26, y, "start", " font-size=\"11\"", se->label);
  }
}

void pipe_svg_plot(pipe_sb *b, const pipe_plot *p) {
  double r[4];
  pipe_plot_range(p, r);
  frame f = {r[0], r[1], r[2], r[3], 640, 340};
  axes(b, &f, p->title, p->xlabel, p->ylabel);
  for (int s = 0; s < p->n_series; ++s) series(b, &f, &p->series[s]);
  legend(b, &f, p);
  pipe_sb_printf(b, "</svg>");
}

void pipe_svg_hist(pipe_sb *b, const char *title, const char *xlabel, double lo, double hi, const int64_t *counts,
                   int nb) {
  int64_t mx = 0;
  for (int k = 0; k < nb; ++k) mx = counts[k] > mx ? counts[k] : mx;
  frame f = {lo, hi, 0, mx > 0 ? (double)mx * 1.05 : 1, 420, 260};
  if (!(f.x1 > f.x0)) f.x1 = f.x0 + 1;
  axes(b, &f, title, xlabel, "voxels");
  pipe_sb_printf(b, "<g fill=\"#3e4a89\">");
  for (int k = 0; k < nb; ++k) {
    if (!counts[k]) continue;
    double x0 = px_x(&f, lo + (hi - lo) * k / nb), x1 = px_x(&f, lo + (hi - lo) * (k + 1) / nb);
    double y = px_y(&f, (double)counts[k]);
    pipe_sb_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>", x0, y, fmax(x1 - x0 - 0.5, 0.5),
                   f.h - MB - y);
  }
  pipe_sb_printf(b, "</g></svg>");
}
