/* Figures and report.html: standalone figure PNGs (colour montages of the maps with a colour bar
   or a legend, the AIF plot), each with its title and unit, and the page that shows them with
   inline SVG plots (svg_plot.c, curves.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/figure.h"
#include "pipeline/pipe_outputs.h"
#include "pipeline/pipe_report.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_strbuf.h"
#include "pipeline/pipe_util.h"

static lumen_status write_canvas(pipe_run *run, const char *name, const pipe_canvas *c) {
  char dir[LUMEN_PIPE_PATH_MAX], path[LUMEN_PIPE_PATH_MAX];
  pipe_join(dir, sizeof dir, run->out, "figures");
  lumen_status st = pipe_before_write(run);
  if (st == LUMEN_OK) st = pipe_mkdir_p(run->ctx, dir);
  if (st != LUMEN_OK) return st;
  pipe_join(path, sizeof path, dir, name);
  st = lumen_png_write_rgb8(run->ctx, path, c->px, c->w, c->h, run->cfg->overwrite);
  if (st == LUMEN_OK) {
    char rel[300];
    snprintf(rel, sizeof rel, "figures/%s", name);
    pipe_record_output(run, rel);
  }
  return st;
}

/* ---- categorical maps: fit states and the best model by AIC */
static int is_categorical(const pipe_output *o) {
  return !strcmp(o->param, "state") || (!strcmp(o->model, "best") && !strcmp(o->param, "model"));
}
static int category_count(const pipe_output *o) {
  return !strcmp(o->param, "state") ? LUMEN_FIT_STATE_COUNT : LUMEN_MODEL_COUNT;
}
static const char *category_name(const pipe_output *o, int k) {
  return !strcmp(o->param, "state") ? lumen_fit_state_name((lumen_fit_state)k) : lumen_model_name((lumen_model)k);
}
static pipe_rgb category_rgb(const pipe_output *o, int k) {
  return !strcmp(o->param, "state") ? pipe_state_colour(k) : pipe_category_colour(k);
}

/* Display window: 2nd..98th percentile of the finite values inside the mask, of the converged
   voxels only when the fit states are known (12.5 % of voxels at the Ktrans bound of 5 squeezed
   every tissue patch into one dark colour: issue 39 item 9; categories: all); the histogram over
   the window (categories: the count of each). */
void pipe_map_stats(pipe_run *run, const float *data, const uint8_t *state, pipe_output *o) {
  double *v = malloc(sizeof(double) * (size_t)run->nvox);
  o->lo = o->hi = o->median = NAN;
  o->n_finite = o->n_below = o->n_above = 0;
  o->window_converged = 0;
  o->n_at_bound = 0;
  o->categorical = is_categorical(o);
  o->has_hist = 0;
  memset(o->hist, 0, sizeof o->hist);
  if (!v) return;
  int64_t n = 0;
  for (int64_t i = 0; i < run->nvox; ++i)
    if (run->mask[i] && isfinite(data[i])) v[n++] = data[i];
  o->n_finite = n;
  if (n > 0) {
    o->median = pipe_median(v, n);
    o->lo = pipe_percentile(v, n, 2);
    o->hi = pipe_percentile(v, n, 98);
    if (state && !is_categorical(o)) { /* the window of the converged voxels, when there are some */
      double *c = malloc(sizeof(double) * (size_t)n);
      int64_t nc = 0;
      for (int64_t i = 0; c && i < run->nvox; ++i) {
        if (!run->mask[i]) continue;
        if (state[i] == LUMEN_FIT_AT_BOUND) ++o->n_at_bound;
        if (state[i] == LUMEN_FIT_CONVERGED && isfinite(data[i])) c[nc++] = data[i];
      }
      if (nc > 0) {
        double lo = pipe_percentile(c, nc, 2), hi = pipe_percentile(c, nc, 98);
        if (hi > lo) {
          o->lo = lo;
          o->hi = hi;
          o->window_converged = 1;
        }
      }
      free(c);
    }
    if (o->categorical) { o->lo = 0; o->hi = category_count(o) - 1; }
    if (!(o->hi > o->lo)) { o->lo = v[0]; o->hi = v[n - 1]; }
    if (!(o->hi > o->lo)) o->hi = o->lo + 1;
    for (int64_t i = 0; i < n; ++i) {
      if (o->categorical) { /* range checked before the conversion: (int) of a huge float is undefined */
        if (v[i] >= 0 && v[i] < PIPE_HIST_BINS && v[i] == floor(v[i])) ++o->hist[(int)v[i]];
        continue;
      }
      if (v[i] < o->lo) {
        ++o->n_below;
      } else if (v[i] > o->hi) {
        ++o->n_above;
      } else {
        int k = (int)floor((v[i] - o->lo) / (o->hi - o->lo) * PIPE_HIST_BINS);
        ++o->hist[k < PIPE_HIST_BINS ? k : PIPE_HIST_BINS - 1];
      }
    }
    o->has_hist = 1;
  }
  free(v);
}

static void base_name(const char *name, char *out, size_t size) {
  snprintf(out, size, "%s", name);
  char *d = strstr(out, ".nii");
  if (d) *d = '\0';
}

/* "etofts Ktrans (1/min)", "best model (AIC)", "T1map T1 (s)" */
static void map_title(const pipe_output *o, char *buf, size_t size) {
  if (!strcmp(o->model, "best") && !strcmp(o->param, "model"))
    snprintf(buf, size, "best model (lowest AIC)");
  else
    snprintf(buf, size, "%s%s%s%s%s%s", o->model, o->model[0] ? " " : "", o->param, o->unit[0] ? " (" : "", o->unit,
             o->unit[0] ? ")" : "");
}

typedef struct montage {
  int ns, cols, rows, sc, tw, th;  /* slices shown, grid, scale, tile size */
  int left, top, cell_w, cell_h;   /* tile area origin and pitch */
} montage;

enum { TILE_LABEL = 12, TILE_GAP = 8, BAR_W = 18 };

#define PIPE_FIGURE_MAX_SIDE 8192

static void montage_layout(const pipe_run *run, montage *m) {
  int64_t big = run->nx > run->ny ? run->nx : run->ny;
  m->ns = run->nz < 12 ? (int)run->nz : 12;
  m->sc = big >= 256 ? 1 : (int)((256 + big - 1) / big); /* nearest-neighbour up to ~256 px per tile */
  if (m->sc > 8) m->sc = 8;
  m->cols = (int)ceil(sqrt((double)m->ns));
  m->rows = (m->ns + m->cols - 1) / m->cols;
  int64_t tw = run->nx * m->sc, th = run->ny * m->sc; /* checked against PIPE_FIGURE_MAX_SIDE by the caller */
  m->tw = tw > PIPE_FIGURE_MAX_SIDE ? PIPE_FIGURE_MAX_SIDE + 1 : (int)tw;
  m->th = th > PIPE_FIGURE_MAX_SIDE ? PIPE_FIGURE_MAX_SIDE + 1 : (int)th;
  m->left = 10;
  m->top = 46;
  m->cell_w = m->tw + TILE_GAP;
  m->cell_h = m->th + TILE_LABEL + TILE_GAP;
}

static pipe_rgb voxel_rgb(const pipe_run *run, const pipe_output *o, int64_t i, float v) {
  if (!run->mask[i]) return PIPE_OUTSIDE_RGB;
  if (!isfinite(v)) return PIPE_NAN_RGB;
  if (o->categorical) return v >= 0 && v < PIPE_HIST_BINS ? category_rgb(o, (int)v) : PIPE_NAN_RGB;
  return pipe_viridis((v - o->lo) / (o->hi - o->lo));
}

/* A voxel at a bound of the fit: a dark diagonal across its square (tiles of 3 px or more), so
   that its colour (the bound) is not read as an estimate. */
static void hatch(pipe_canvas *c, int x, int y, int sc) {
  if (sc < 3) return;
  pipe_canvas_line(c, x, y + sc - 1, x + sc - 1, y, (pipe_rgb){20, 20, 20}, 1);
}

static void draw_tiles(pipe_canvas *c, const pipe_run *run, const float *data, const uint8_t *state,
                       const pipe_output *o, const montage *m) {
  for (int s = 0; s < m->ns; ++s) {
    int64_t z = m->ns > 1 ? (int64_t)((double)s * (double)(run->nz - 1) / (double)(m->ns - 1) + 0.5) : 0;
    int ox = m->left + (s % m->cols) * m->cell_w, oy = m->top + (s / m->cols) * m->cell_h;
    char lab[32];
    snprintf(lab, sizeof lab, "z=%lld", (long long)z);
    pipe_canvas_text(c, ox, oy, 1, lab, PIPE_INK_RGB);
    oy += TILE_LABEL;
    for (int64_t y = 0; y < run->ny; ++y)
      for (int64_t x = 0; x < run->nx; ++x) {
        int64_t i = (z * run->ny + y) * run->nx + x;
        pipe_rgb col = voxel_rgb(run, o, i, data[i]);
        /* y up, as radiological viewers show the first voxel row at the bottom */
        pipe_canvas_fill(c, ox + (int)x * m->sc, oy + (int)(run->ny - 1 - y) * m->sc, m->sc, m->sc, col);
        if (state && run->mask[i] && state[i] == LUMEN_FIT_AT_BOUND)
          hatch(c, ox + (int)x * m->sc, oy + (int)(run->ny - 1 - y) * m->sc, m->sc);
      }
  }
}

static void swatch(pipe_canvas *c, int x, int y, pipe_rgb col, const char *text) {
  pipe_canvas_fill(c, x, y, 12, 10, col);
  pipe_canvas_frame(c, x, y, 12, 10, (pipe_rgb){120, 120, 120});
  pipe_canvas_text(c, x + 18, y + 2, 1, text, PIPE_INK_RGB);
}

/* Colour bar with numbered ticks and the unit (continuous maps); returns its width. */
static int colour_bar(pipe_canvas *c, const pipe_output *o, int x, int y, int h, int dry) {
  double t[16], step;
  int n = pipe_ticks(o->lo, o->hi, 6, t, &step), w = 0;
  char lab[64];
  for (int i = 0; i < n; ++i) {
    pipe_tick_label(t[i], step, lab, sizeof lab);
    int tw = pipe_text_width(lab, 1);
    w = tw > w ? tw : w;
  }
  const char *unit = o->unit[0] ? o->unit : "no unit";
  int uw = pipe_text_width(unit, 1);
  int width = BAR_W + 10 + w;
  width = width > uw ? width : uw;
  width = width > 100 ? width : 100;
  if (dry) return width;
  pipe_canvas_text(c, x, y, 1, unit, PIPE_INK_RGB);
  int by = y + 14;
  for (int r = 0; r < h; ++r)
    pipe_canvas_fill(c, x, by + r, BAR_W, 1, pipe_viridis((double)(h - 1 - r) / (double)(h > 1 ? h - 1 : 1)));
  pipe_canvas_frame(c, x - 1, by - 1, BAR_W + 2, h + 2, PIPE_INK_RGB);
  for (int i = 0; i < n; ++i) {
    int ty = by + (int)lrint((o->hi - t[i]) / (o->hi - o->lo) * (h - 1));
    pipe_canvas_fill(c, x + BAR_W, ty, 4, 1, PIPE_INK_RGB);
    pipe_tick_label(t[i], step, lab, sizeof lab);
    pipe_canvas_text(c, x + BAR_W + 7, ty - 3, 1, lab, PIPE_INK_RGB);
  }
  swatch(c, x, by + h + 10, PIPE_NAN_RGB, "NaN in mask");
  swatch(c, x, by + h + 26, PIPE_OUTSIDE_RGB, "outside mask");
  int ty = by + h + 42;
  if (o->n_at_bound > 0) {
    swatch(c, x, ty, (pipe_rgb){255, 255, 255}, "at a bound");
    hatch(c, x + 1, ty, 10);
    ty += 16;
  }
  pipe_canvas_text(c, x, ty + 2, 1, o->window_converged ? "2nd-98th pct," : "2nd-98th pct", (pipe_rgb){90, 90, 90});
  if (o->window_converged) pipe_canvas_text(c, x, ty + 12, 1, "converged", (pipe_rgb){90, 90, 90});
  return width;
}

/* Legend of the categories present in the mask, with their voxel counts; returns its width. */
static int category_legend(pipe_canvas *c, const pipe_output *o, int x, int y, int dry) {
  int w = 0, row = 0;
  char lab[96];
  for (int k = 0; k < category_count(o) && k < PIPE_HIST_BINS; ++k) {
    if (!o->hist[k]) continue;
    snprintf(lab, sizeof lab, "%s: %lld", category_name(o, k), (long long)o->hist[k]);
    int tw = 18 + pipe_text_width(lab, 1);
    w = tw > w ? tw : w;
    if (!dry) swatch(c, x, y + 16 * row, category_rgb(o, k), lab);
    ++row;
  }
  if (!dry) {
    swatch(c, x, y + 16 * row++, PIPE_OUTSIDE_RGB, "outside mask");
    if (o->n_finite < 1) swatch(c, x, y + 16 * row, PIPE_NAN_RGB, "NaN in mask");
  }
  return w > 100 ? w : 100;
}

lumen_status pipe_render_montage(pipe_run *run, const float *data, const uint8_t *state, pipe_output *o) {
  montage m;
  montage_layout(run, &m);
  if ((int64_t)m.cols * m.cell_w > PIPE_FIGURE_MAX_SIDE || (int64_t)m.rows * m.cell_h > PIPE_FIGURE_MAX_SIDE) {
    static const char why[] = "slices too large for a figure";
    if (!run->warnings.s || !strstr(run->warnings.s, why))
      pipe_warn(run, "map figures skipped: %s (%lld x %lld voxels per slice)", why, (long long)run->nx,
                (long long)run->ny);
    return LUMEN_OK;
  }
  char title[160], sub[400];
  map_title(o, title, sizeof title);
  snprintf(sub, sizeof sub, "%s: %d of %lld slices (z), y up; voxels scaled x%d", run->prefix, m.ns,
           (long long)run->nz, m.sc);
  int tiles_w = m.cols * m.cell_w, tiles_h = m.rows * m.cell_h;
  int bar_h = tiles_h - 70 < 120 ? 120 : tiles_h - 70 > 360 ? 360 : tiles_h - 70;
  int panel_w = o->categorical ? category_legend(NULL, o, 0, 0, 1) : colour_bar(NULL, o, 0, 0, bar_h, 1);
  int panel_h = o->categorical ? 16 * (category_count(o) + 2) : bar_h + 90;
  int W = m.left + tiles_w + 10 + panel_w + 10, H = m.top + (tiles_h > panel_h ? tiles_h : panel_h) + 6;
  int tw = 20 + pipe_text_width(title, 2), sw = 20 + pipe_text_width(sub, 1);
  W = W > tw ? W : tw;
  W = W > sw ? W : sw;
  pipe_canvas c;
  if (pipe_canvas_init(&c, W, H) != 0) return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "report: out of memory");
  pipe_canvas_text(&c, 10, 8, 2, title, PIPE_INK_RGB);
  pipe_canvas_text(&c, 10, 30, 1, sub, (pipe_rgb){70, 70, 70});
  draw_tiles(&c, run, data, state, o, &m);
  int px = m.left + tiles_w + 10;
  if (o->categorical)
    category_legend(&c, o, px, m.top, 0);
  else
    colour_bar(&c, o, px, m.top, bar_h, 0);
  char b[256], name[300];
  base_name(o->name, b, sizeof b);
  snprintf(name, sizeof name, "%s.png", b);
  lumen_status st = write_canvas(run, name, &c);
  pipe_canvas_free(&c);
  if (st == LUMEN_OK) snprintf(o->png, sizeof o->png, "figures/%s", name);
  return st;
}

/* ---- a standalone line plot (the AIF figure) */
enum { PW = 720, PH = 420, PL = 70, PR = 20, PT = 56, PB = 50 };

static double plot_x(const double r[4], double x) { return PL + (x - r[0]) / (r[1] - r[0]) * (PW - PL - PR); }
static double plot_y(const double r[4], double y) { return PH - PB - (y - r[2]) / (r[3] - r[2]) * (PH - PT - PB); }

static void plot_axes(pipe_canvas *c, const pipe_plot *p, const double r[4]) {
  double t[16], step;
  char lab[64];
  int n = pipe_ticks(r[0], r[1], 9, t, &step);
  for (int i = 0; i < n; ++i) {
    double x = plot_x(r, t[i]);
    pipe_canvas_line(c, x, PT, x, PH - PB + 4, PIPE_GRID_RGB, 1);
    pipe_tick_label(t[i], step, lab, sizeof lab);
    pipe_canvas_text(c, (int)x - pipe_text_width(lab, 1) / 2, PH - PB + 8, 1, lab, PIPE_INK_RGB);
  }
  n = pipe_ticks(r[2], r[3], 7, t, &step);
  for (int i = 0; i < n; ++i) {
    double y = plot_y(r, t[i]);
    pipe_canvas_line(c, PL - 4, y, PW - PR, y, PIPE_GRID_RGB, 1);
    pipe_tick_label(t[i], step, lab, sizeof lab);
    pipe_canvas_text(c, PL - 8 - pipe_text_width(lab, 1), (int)y - 3, 1, lab, PIPE_INK_RGB);
  }
  pipe_canvas_frame(c, PL, PT, PW - PL - PR, PH - PT - PB, PIPE_INK_RGB);
  pipe_canvas_text(c, (PL + PW - PR - pipe_text_width(p->xlabel, 1)) / 2, PH - 18, 1, p->xlabel, PIPE_INK_RGB);
  pipe_canvas_text(c, 8, PT - 16, 1, p->ylabel, PIPE_INK_RGB);
  pipe_canvas_text(c, 10, 10, 2, p->title, PIPE_INK_RGB);
}

lumen_status pipe_render_plot_png(pipe_run *run, const char *name, const pipe_plot *p) {
  double r[4];
  pipe_plot_range(p, r);
  int tw = 20 + pipe_text_width(p->title, 2);
  pipe_canvas c;
  if (pipe_canvas_init(&c, PW > tw ? PW : tw, PH) != 0)
    return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "report: out of memory");
  plot_axes(&c, p, r);
  int row = 0;
  for (int s = 0; s < p->n_series; ++s) {
    const pipe_series *se = &p->series[s];
    for (int i = 0; i < se->n; ++i) {
      double x = plot_x(r, se->x[i]), y = plot_y(r, se->y[i]);
      if (se->style == PIPE_MARKERS && fabs(x) < 1e6 && fabs(y) < 1e6) pipe_canvas_fill(&c, (int)x - 2, (int)y - 2, 4, 4, se->colour);
      if (se->style != PIPE_MARKERS && i > 0 && isfinite(se->y[i - 1]) && isfinite(se->y[i]) &&
          (se->style == PIPE_LINE || i % 2))
        pipe_canvas_line(&c, plot_x(r, se->x[i - 1]), plot_y(r, se->y[i - 1]), x, y, se->colour, 2);
    }
    if (se->label) {
      int ly = PT + 10 + 16 * row++, lx = PW - PR - 230;
      pipe_canvas_fill(&c, lx, ly + 2, 22, 3, se->colour);
      pipe_canvas_text(&c, lx + 28, ly, 1, se->label, PIPE_INK_RGB);
    }
  }
  lumen_status st = write_canvas(run, name, &c);
  pipe_canvas_free(&c);
  return st;
}

/* ---- the voxels of the AIF over the baseline image */
static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

lumen_status pipe_render_voxel_overlay(pipe_run *run, const char *name, const char *title, const float *background,
                                       const int64_t *voxels, int64_t n) {
  montage m;
  montage_layout(run, &m);
  if (n < 1 || (int64_t)m.tw > PIPE_FIGURE_MAX_SIDE || (int64_t)m.th > PIPE_FIGURE_MAX_SIDE) return LUMEN_OK;
  /* the slices that hold voxels of the list (up to 12), in z order */
  int64_t *z = malloc(sizeof(int64_t) * (size_t)n);
  double *v = malloc(sizeof(double) * (size_t)run->nvox);
  uint8_t *mark = calloc((size_t)run->nvox, 1);
  if (!z || !v || !mark) {
    free(z); free(v); free(mark);
    return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "report: out of memory");
  }
  const int64_t plane = run->nx * run->ny;
  for (int64_t k = 0; k < n; ++k) {
    z[k] = voxels[k] / plane;
    if (voxels[k] >= 0 && voxels[k] < run->nvox) mark[voxels[k]] = 1;
  }
  qsort(z, (size_t)n, sizeof *z, cmp_i64);
  int ns = 0;
  for (int64_t k = 0; k < n && ns < 12; ++k)
    if (k == 0 || z[k] != z[k - 1]) z[ns++] = z[k];
  int64_t nv = 0;
  for (int64_t i = 0; i < run->nvox; ++i) if (isfinite(background[i])) v[nv++] = background[i];
  double lo = nv ? pipe_percentile(v, nv, 2) : 0, hi = nv ? pipe_percentile(v, nv, 98) : 1;
  if (!(hi > lo)) hi = lo + 1;
  m.ns = ns;
  m.cols = (int)ceil(sqrt((double)ns));
  m.rows = (ns + m.cols - 1) / m.cols;
  char sub[400];
  snprintf(sub, sizeof sub, "%s: the mean baseline signal in grey; %d slice%s (z), y up", run->prefix, ns,
           ns == 1 ? "" : "s");
  int W = m.left + m.cols * m.cell_w + 10, H = m.top + m.rows * m.cell_h + 6;
  int tw = 20 + pipe_text_width(title, 2), sw = 20 + pipe_text_width(sub, 1);
  W = W > tw ? W : tw;
  W = W > sw ? W : sw;
  pipe_canvas c;
  lumen_status st = LUMEN_OK;
  if (pipe_canvas_init(&c, W, H) != 0) {
    st = lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "report: out of memory");
  } else {
    pipe_canvas_text(&c, 10, 8, 2, title, PIPE_INK_RGB);
    pipe_canvas_text(&c, 10, 30, 1, sub, (pipe_rgb){70, 70, 70});
    for (int s = 0; s < ns; ++s) {
      int ox = m.left + (s % m.cols) * m.cell_w, oy = m.top + (s / m.cols) * m.cell_h;
      char lab[32];
      snprintf(lab, sizeof lab, "z=%lld", (long long)z[s]);
      pipe_canvas_text(&c, ox, oy, 1, lab, PIPE_INK_RGB);
      oy += TILE_LABEL;
      for (int64_t y = 0; y < run->ny; ++y)
        for (int64_t x = 0; x < run->nx; ++x) {
          int64_t i = z[s] * plane + y * run->nx + x;
          double f = isfinite(background[i]) ? (background[i] - lo) / (hi - lo) : 0;
          uint8_t g = (uint8_t)lrint(255 * (f < 0 ? 0 : f > 1 ? 1 : f));
          pipe_rgb col = mark[i] ? (pipe_rgb){228, 26, 28} : (pipe_rgb){g, g, g};
          pipe_canvas_fill(&c, ox + (int)x * m.sc, oy + (int)(run->ny - 1 - y) * m.sc, m.sc, m.sc, col);
        }
    }
    st = write_canvas(run, name, &c);
    pipe_canvas_free(&c);
  }
  free(z); free(v); free(mark);
  return st;
}

/* ------------------------------------------------------------ report.html */
/* Every string that can come from the user (prefix, paths, file names, warnings that quote
   them) goes through pipe_sb_html; link targets through pipe_sb_href (strbuf.c). */
static void html_link(pipe_sb *b, const char *target, const char *text) {
  pipe_sb_printf(b, "<a href=\"");
  pipe_sb_href(b, target);
  pipe_sb_printf(b, "\">");
  pipe_sb_html(b, text);
  pipe_sb_printf(b, "</a>");
}

static void html_image(pipe_sb *b, const char *src, const char *alt) {
  pipe_sb_printf(b, "<img src=\"");
  pipe_sb_href(b, src);
  pipe_sb_printf(b, "\" alt=\"");
  pipe_sb_html(b, alt);
  pipe_sb_printf(b, "\">");
}

/* How much a warning matters to the reader of the maps (issue 39 item 9): 0 critical (the results
   are unreliable, the AIF is a fallback), 1 check (values corrected or not estimated: a unit read
   otherwise, voxels at a bound or failed), 2 note (how the work ran: the backend used). */
static int warning_severity(const char *w) {
  if (strstr(w, "results unreliable") || (strstr(w, "AIF") && (strstr(w, "instead") || strstr(w, "fallback") ||
                                                               strstr(w, "FALLBACK"))))
    return 0;
  if (strstr(w, "backend selected") || strstr(w, "backend used") || strstr(w, "skipped")) return 2;
  return 1;
}

static void report_warnings(pipe_run *run, pipe_sb *b) {
  if (run->sum && run->sum->unreliable) {
    pipe_sb_printf(b, "<p class=\"unreliable\"><b>Results unreliable:</b> ");
    pipe_sb_html(b, run->sum->unreliable_why);
    pipe_sb_printf(b, "</p>\n");
  }
  pipe_sb_printf(b, "<h2 id=\"warnings\">Warnings</h2>\n");
  if (!run->warnings.s || !run->warnings.s[0]) {
    pipe_sb_printf(b, "<p>None: no fallback (AIF, backend), no voxel failed or at a bound, no unit corrected.</p>\n");
    return;
  }
  /* pipe_warn's lines, at the top where a reader starts, the most severe first */
  static const char *const label[3] = {"critical", "check", "note"};
  char line[1024];
  for (int sev = 0; sev < 3; ++sev) {
    int any = 0;
    for (const char *w = pipe_next_warning(run->warnings.s, line, sizeof line); w;
         w = pipe_next_warning(w, line, sizeof line)) {
      if (warning_severity(line) != sev) continue;
      if (!any++) pipe_sb_printf(b, "<ul class=\"warnings sev%d\">\n", sev);
      pipe_sb_printf(b, "<li><b class=\"sev%d\">%s</b> ", sev, label[sev]);
      pipe_sb_html(b, line);
      pipe_sb_printf(b, "</li>\n");
    }
    if (any) pipe_sb_printf(b, "</ul>\n");
  }
}

static void report_head(pipe_run *run, pipe_sb *b) {
  char json[300], txt[300];
  snprintf(json, sizeof json, "%s_runlog.json", run->prefix);
  snprintf(txt, sizeof txt, "%s_runlog.txt", run->prefix);
  pipe_sb_printf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>lumen ");
  pipe_sb_html(b, run->command);
  pipe_sb_printf(b, " report: ");
  pipe_sb_html(b, run->prefix);
  pipe_sb_printf(b,
                 "</title>\n<style>body{font-family:sans-serif;margin:1.5em;max-width:1250px}"
                 "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:2px 6px;font-size:90%%}"
                 ".fig{display:inline-block;vertical-align:top;margin:0 1em 1.2em 0;max-width:100%%}"
                 ".fig img{image-rendering:pixelated;max-width:100%%;border:1px solid #ccc;vertical-align:top}"
                 "svg.plot{max-width:100%%;height:auto;border:1px solid #ccc;vertical-align:top}"
                 "pre{background:#f4f4f4;padding:.5em;white-space:pre-wrap;overflow-wrap:anywhere}"
                 ".warnings{background:#fff4d6;padding:.5em 2em}.warnings.sev0{background:#fdd;border:2px solid #c00}"
                 ".warnings.sev2{background:#f2f2f2;color:#444}b.sev0{color:#c00}b.sev1{color:#a60}b.sev2{color:#666}"
                 ".unreliable{background:#fdd;border:2px solid #c00;padding:.5em}"
                 "</style></head><body>\n<h1>lumen ");
  pipe_sb_html(b, run->command);
  pipe_sb_printf(b, ": ");
  pipe_sb_html(b, run->prefix);
  pipe_sb_printf(b, "</h1>\n<p>lumen ");
  pipe_sb_html(b, lumen_version());
  pipe_sb_printf(b, ". Output folder <code>");
  pipe_sb_html(b, run->out);
  pipe_sb_printf(b, "</code>. Run log: ");
  html_link(b, json, json);
  pipe_sb_printf(b, ", ");
  html_link(b, txt, txt);
  pipe_sb_printf(b, ".</p>\n");
  if (!strcmp(run->command, "dce"))
    pipe_sb_printf(b, "<p>Any voxel's measured curve, every model's fit and ROI statistics in the browser: "
                      "<code>lumen view %s</code> (docs/VIEW.md; the measured curves need <code>--save-conc</code>)."
                      "</p>\n", "&lt;this folder&gt;");
  report_warnings(run, b);
  pipe_sb_printf(b, "<h2>Stage summaries</h2>\n<pre>");
  pipe_sb_html(b, run->text.s);
  pipe_sb_printf(b, "</pre>\n");
  if (run->aif_svg.s) {
    pipe_sb_printf(b, "<h2>Arterial input function</h2>\n<div class=\"fig\">%s<br>", run->aif_svg.s);
    pipe_sb_html(b, run->aif_caption);
    if (run->aif_png[0]) {
      pipe_sb_printf(b, " Figure: ");
      html_link(b, run->aif_png, run->aif_png);
      pipe_sb_printf(b, ".");
    }
    pipe_sb_printf(b, "</div>\n");
    if (run->aif_voxels_png[0]) {
      pipe_sb_printf(b, "<div class=\"fig\"><b>The voxels that made the AIF</b> (red, over the mean baseline "
                        "signal; the slices that hold them):<br>");
      html_image(b, run->aif_voxels_png, "AIF voxels");
      pipe_sb_printf(b, "</div>\n");
    }
  }
  if (run->curves_svg.s) {
    pipe_sb_printf(b, "<h2>Measured and fitted curves</h2>\n<p>Per model, the voxels at the 10th, 50th and 90th "
                      "percentile of its headline parameter among the converged voxels: the data fitted (dots) "
                      "and the model curve of the fitted parameters (line).</p>\n%s",
                   run->curves_svg.s);
  }
}

static void report_histogram(pipe_sb *b, const pipe_output *o) {
  if (!o->has_hist) return;
  char title[160], xlabel[160];
  map_title(o, title, sizeof title);
  snprintf(xlabel, sizeof xlabel, "%s%s%s%s", o->param, o->unit[0] ? " (" : "", o->unit, o->unit[0] ? ")" : "");
  if (o->categorical) { /* a table of the counts: the legend of the figure says the same */
    pipe_sb_printf(b, " <table style=\"display:inline-table;vertical-align:top\"><tr><th>category</th>"
                      "<th>voxels in mask</th></tr>");
    for (int k = 0; k < category_count(o) && k < PIPE_HIST_BINS; ++k) {
      if (!o->hist[k]) continue;
      char hex[8];
      pipe_rgb_hex(category_rgb(o, k), hex);
      pipe_sb_printf(b, "<tr><td><span style=\"background:%s\">&nbsp;&nbsp;&nbsp;</span> %d ", hex, k);
      pipe_sb_html(b, category_name(o, k));
      pipe_sb_printf(b, "</td><td>%lld</td></tr>", (long long)o->hist[k]);
    }
    pipe_sb_printf(b, "</table>");
    return;
  }
  pipe_sb_printf(b, " "); /* beside the map where the page is wide enough */
  pipe_svg_hist(b, title, xlabel, o->lo, o->hi, o->hist, PIPE_HIST_BINS);
  pipe_sb_printf(b, "<br>histogram of the finite values in the mask, %.4g .. %.4g", o->lo, o->hi);
  if (o->n_below || o->n_above)
    pipe_sb_printf(b, " (%lld below, %lld above)", (long long)o->n_below, (long long)o->n_above);
}

static void report_maps(pipe_run *run, pipe_sb *b) {
  pipe_sb_printf(b, "<h2>Maps</h2>\n<p>Each figure shows up to 12 slices (z increasing left to right, top to "
                    "bottom; y up), scaled up with nearest-neighbour; continuous maps in the viridis colour map "
                    "from the 2nd to the 98th percentile of the values inside the mask (of the converged voxels "
                    "for a model's maps: voxels at a bound do not stretch the scale; the colour bar gives the "
                    "numbers and the unit), voxels at a bound of the fit hatched (their value is the bound, not "
                    "an estimate), red where a voxel in the mask is NaN (not fitted or failed), light grey "
                    "outside the mask; state and best-model maps in categorical colours with their legend. The "
                    "figure PNGs in figures/ stand alone.</p>\n<table><tr><th>map</th><th>unit</th><th>window</th>"
                    "<th>median</th><th>finite voxels in mask</th></tr>\n");
  for (int i = 0; i < run->n_outputs; ++i) {
    pipe_output *o = &run->outputs[i];
    if (!o->is_map) continue;
    pipe_sb_printf(b, "<tr><td>");
    html_link(b, o->name, o->name);
    pipe_sb_printf(b, "</td><td>");
    pipe_sb_html(b, o->unit[0] ? o->unit : "-");
    if (o->categorical)
      pipe_sb_printf(b, "</td><td>categories</td><td>-</td><td>%lld</td></tr>\n", (long long)o->n_finite);
    else
    {
      pipe_sb_printf(b, "</td><td>%.4g .. %.4g%s</td><td>%.4g</td><td>%lld", o->lo, o->hi,
                     o->window_converged ? " (converged)" : "", o->median, (long long)o->n_finite);
      if (o->n_at_bound) pipe_sb_printf(b, " (%lld at a bound)", (long long)o->n_at_bound);
      pipe_sb_printf(b, "</td></tr>\n");
    }
  }
  pipe_sb_printf(b, "</table>\n");
  for (int i = 0; i < run->n_outputs; ++i) {
    pipe_output *o = &run->outputs[i];
    if (!o->is_map || !o->png[0]) continue;
    char title[160];
    map_title(o, title, sizeof title);
    pipe_sb_printf(b, "<div class=\"fig\"><b>");
    pipe_sb_html(b, title);
    pipe_sb_printf(b, "</b><br>");
    html_image(b, o->png, title);
    report_histogram(b, o);
    pipe_sb_printf(b, "</div>\n");
  }
  pipe_sb_printf(b, "<h2>Files</h2>\n<ul>\n");
  for (int i = 0; i < run->n_outputs; ++i) {
    pipe_sb_printf(b, "<li>");
    html_link(b, run->outputs[i].name, run->outputs[i].name);
    pipe_sb_printf(b, "</li>\n");
  }
}

lumen_status pipe_write_report(pipe_run *run) {
  if (!run->cfg->report) return LUMEN_OK;
  pipe_sb b = {0};
  report_head(run, &b);
  report_maps(run, &b);
  pipe_sb_printf(&b, "</ul>\n</body></html>\n");
  if (b.oom || run->aif_svg.oom || run->curves_svg.oom) {
    pipe_sb_free(&b);
    return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "report: out of memory");
  }
  lumen_status st = pipe_write_text_file(run, "report.html", b.s);
  pipe_sb_free(&b);
  if (st == LUMEN_OK && run->sum) pipe_join(run->sum->report, sizeof run->sum->report, run->out, "report.html");
  return st;
}
