/* Figures (rasterised here, written as grey PNGs through lumen_png_write) and report.html. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/pipe_internal.h"

static lumen_status write_png(pipe_run *run, const char *name, uint8_t *px, int64_t w, int64_t h) {
  char dir[LUMEN_PIPE_PATH_MAX], path[LUMEN_PIPE_PATH_MAX];
  pipe_join(dir, sizeof dir, run->out, "figures");
  lumen_status st = pipe_before_write(run);
  if (st == LUMEN_OK) st = pipe_mkdir_p(run->ctx, dir);
  if (st != LUMEN_OK) return st;
  pipe_join(path, sizeof path, dir, name);
  int64_t dims[2] = {w, h};
  lumen_image *im = NULL;
  st = lumen_image_wrap(run->ctx, px, 2, dims, LUMEN_DTYPE_UINT8, lumen_device_cpu(), &im);
  if (st != LUMEN_OK) return st;
  lumen_png_write_opts po;
  memset(&po, 0, sizeof po);
  po.bit_depth = 8;
  po.overwrite = run->cfg->overwrite;
  st = lumen_png_write(run->ctx, path, im, &po);
  lumen_image_free(im);
  if (st == LUMEN_OK) {
    char rel[300];
    snprintf(rel, sizeof rel, "figures/%s", name);
    pipe_record_output(run, rel);
  }
  return st;
}

/* Display window: 2nd..98th percentile of the finite values inside the mask (state: 0..6). */
void pipe_map_stats(pipe_run *run, const float *data, pipe_output *o) {
  double *v = malloc(sizeof(double) * (size_t)run->nvox);
  o->lo = o->hi = o->median = NAN;
  o->n_finite = 0;
  if (!v) return;
  int64_t n = 0;
  for (int64_t i = 0; i < run->nvox; ++i)
    if (run->mask[i] && isfinite(data[i])) v[n++] = data[i];
  o->n_finite = n;
  if (n > 0) {
    o->median = pipe_median(v, n);
    o->lo = pipe_percentile(v, n, 2);
    o->hi = pipe_percentile(v, n, 98);
    if (!strcmp(o->param, "state")) { o->lo = 0; o->hi = LUMEN_FIT_STATE_COUNT - 1; }
    if (!(o->hi > o->lo)) { o->lo = v[0]; o->hi = v[n - 1]; }
    if (!(o->hi > o->lo)) o->hi = o->lo + 1;
  }
  free(v);
}

static void base_name(const char *name, char *out, size_t size) {
  snprintf(out, size, "%s", name);
  char *d = strstr(out, ".nii");
  if (d) *d = '\0';
}

lumen_status pipe_render_montage(pipe_run *run, const float *data, pipe_output *o) {
  pipe_map_stats(run, data, o);
  int64_t nx = run->nx, ny = run->ny, nz = run->nz;
  int ns = nz < 12 ? (int)nz : 12;
  int64_t big = nx > ny ? nx : ny;
  int sc = big >= 128 ? 1 : (int)(128 / big);
  if (sc > 8) sc = 8;
  int cols = (int)ceil(sqrt((double)ns)), rows = (ns + cols - 1) / cols;
  int64_t tw = nx * sc, th = ny * sc, gap = 2;
  int64_t W = cols * (tw + gap) + 6 + 16, H = rows * (th + gap);
  uint8_t *px = calloc((size_t)(W * H), 1);
  if (!px) return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "report: out of memory");
  double lo = o->lo, hi = o->hi;
  for (int s = 0; s < ns; ++s) {
    int64_t z = ns > 1 ? (int64_t)((double)s * (double)(nz - 1) / (double)(ns - 1) + 0.5) : 0;
    int64_t ox = (s % cols) * (tw + gap), oy = (s / cols) * (th + gap);
    for (int64_t r = 0; r < th; ++r) {
      int64_t y = ny - 1 - r / sc;
      for (int64_t c = 0; c < tw; ++c) {
        int64_t x = c / sc;
        float v = data[(z * ny + y) * nx + x];
        uint8_t g = 0;
        if (isfinite(v) && isfinite(lo)) {
          double f = (v - lo) / (hi - lo);
          f = f < 0 ? 0 : f > 1 ? 1 : f;
          g = (uint8_t)(1 + 254 * f + 0.5);
        }
        px[(oy + r) * W + ox + c] = g;
      }
    }
  }
  /* grey bar: top = hi, bottom = lo */
  for (int64_t r = 0; r < H; ++r)
    for (int64_t c = W - 16; c < W; ++c) px[r * W + c] = (uint8_t)(1 + 254.0 * (double)(H - 1 - r) / (double)(H > 1 ? H - 1 : 1));
  char b[256], name[300];
  base_name(o->name, b, sizeof b);
  snprintf(name, sizeof name, "%s.png", b);
  lumen_status st = write_png(run, name, px, W, H);
  free(px);
  if (st == LUMEN_OK) snprintf(o->png, sizeof o->png, "figures/%s", name);
  return st;
}

lumen_status pipe_render_hist(pipe_run *run, const float *data, pipe_output *o) {
  if (!isfinite(o->lo)) return LUMEN_OK;
  enum { NB = 64, W = 320, H = 120 };
  int64_t cnt[NB] = {0}, mx = 0;
  for (int64_t i = 0; i < run->nvox; ++i) {
    if (!run->mask[i] || !isfinite(data[i])) continue;
    int k = (int)floor((data[i] - o->lo) / (o->hi - o->lo) * NB);
    if (k < 0 || k >= NB) continue;
    ++cnt[k];
  }
  for (int k = 0; k < NB; ++k) if (cnt[k] > mx) mx = cnt[k];
  uint8_t *px = malloc(W * H);
  if (!px) return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "report: out of memory");
  memset(px, 255, W * H);
  for (int k = 0; k < NB; ++k) {
    int h = mx ? (int)((double)cnt[k] / (double)mx * (H - 4)) : 0;
    for (int c = k * (W / NB); c < (k + 1) * (W / NB) - 1; ++c)
      for (int r = H - 1 - h; r < H; ++r) px[r * W + c] = 60;
  }
  for (int c = 0; c < W; ++c) px[(H - 1) * W + c] = 0;
  char b[256], name[300];
  base_name(o->name, b, sizeof b);
  snprintf(name, sizeof name, "%s_hist.png", b);
  lumen_status st = write_png(run, name, px, W, H);
  free(px);
  if (st == LUMEN_OK) snprintf(o->hist, sizeof o->hist, "figures/%s", name);
  return st;
}

static void line(uint8_t *px, int W, int H, double x0, double y0, double x1, double y1, uint8_t g, int thick) {
  int n = (int)(fmax(fabs(x1 - x0), fabs(y1 - y0)) * 2) + 1;
  for (int i = 0; i <= n; ++i) {
    double x = x0 + (x1 - x0) * i / n, y = y0 + (y1 - y0) * i / n;
    for (int dy = 0; dy < thick; ++dy)
      for (int dx = 0; dx < thick; ++dx) {
        int xi = (int)x + dx, yi = (int)y + dy;
        if (xi >= 0 && xi < W && yi >= 0 && yi < H) px[yi * W + xi] = g;
      }
  }
}

lumen_status pipe_render_plot(pipe_run *run, const char *name, int n, const double *x, const double *y1,
                              const double *y2) {
  enum { W = 640, H = 360, L = 40, R = 10, T = 10, B = 30 };
  uint8_t *px = malloc(W * H);
  if (!px) return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "report: out of memory");
  memset(px, 255, W * H);
  double ymax = 0, ymin = 0;
  for (int i = 0; i < n; ++i) {
    if (isfinite(y1[i])) { ymax = fmax(ymax, y1[i]); ymin = fmin(ymin, y1[i]); }
    if (y2 && isfinite(y2[i])) { ymax = fmax(ymax, y2[i]); ymin = fmin(ymin, y2[i]); }
  }
  ymax *= 1.05;
  if (!(ymax > ymin)) ymax = ymin + 1;
  double xmin = x[0], xmax = x[n - 1] > x[0] ? x[n - 1] : x[0] + 1;
#define PX(v) (L + ((v) - xmin) / (xmax - xmin) * (W - L - R))
#define PY(v) (H - B - ((v) - ymin) / (ymax - ymin) * (H - T - B))
  for (int k = 0; k <= 10; ++k) { /* grid */
    double gx = L + k * (W - L - R) / 10.0, gy = T + k * (H - T - B) / 10.0;
    line(px, W, H, gx, T, gx, H - B, 225, 1);
    line(px, W, H, L, gy, W - R, gy, 225, 1);
    line(px, W, H, gx, H - B, gx, H - B + 5, 0, 1);
    line(px, W, H, L - 5, gy, L, gy, 0, 1);
  }
  line(px, W, H, L, H - B, W - R, H - B, 0, 2);
  line(px, W, H, L, T, L, H - B, 0, 2);
  if (y2)
    for (int i = 1; i < n; ++i)
      if (isfinite(y2[i - 1]) && isfinite(y2[i])) line(px, W, H, PX(x[i - 1]), PY(y2[i - 1]), PX(x[i]), PY(y2[i]), 130, 1);
  for (int i = 1; i < n; ++i)
    if (isfinite(y1[i - 1]) && isfinite(y1[i])) line(px, W, H, PX(x[i - 1]), PY(y1[i - 1]), PX(x[i]), PY(y1[i]), 0, 2);
#undef PX
#undef PY
  lumen_status st = write_png(run, name, px, W, H);
  free(px);
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

static void report_head(pipe_run *run, pipe_sb *b) {
  char json[300], txt[300];
  snprintf(json, sizeof json, "%s_runlog.json", run->prefix);
  snprintf(txt, sizeof txt, "%s_runlog.txt", run->prefix);
  pipe_sb_printf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>lumen ");
  pipe_sb_html(b, run->command);
  pipe_sb_printf(b, " report: ");
  pipe_sb_html(b, run->prefix);
  pipe_sb_printf(b,
                 "</title>\n<style>body{font-family:sans-serif;margin:1.5em;max-width:1200px}"
                 "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:2px 6px;font-size:90%%}"
                 ".fig{display:inline-block;vertical-align:top;margin:0 1em 1.2em 0}"
                 ".fig img{image-rendering:pixelated;border:1px solid #888}pre{background:#f4f4f4;padding:.5em}"
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
  if (run->sum && run->sum->unreliable) {
    pipe_sb_printf(b, "<p style=\"background:#fdd;border:2px solid #c00;padding:.5em\"><b>Results unreliable:</b> ");
    pipe_sb_html(b, run->sum->unreliable_why);
    pipe_sb_printf(b, "</p>\n");
  }
  if (run->warnings.s && run->warnings.s[0]) { /* pipe_warn's lines, at the top where a reader starts */
    pipe_sb_printf(b, "<h2>Warnings</h2>\n<ul style=\"background:#fff4d6;padding:.5em 2em\">\n");
    char line[1024];
    for (const char *w = pipe_next_warning(run->warnings.s, line, sizeof line); w;
         w = pipe_next_warning(w, line, sizeof line)) {
      pipe_sb_printf(b, "<li>");
      pipe_sb_html(b, line);
      pipe_sb_printf(b, "</li>\n");
    }
    pipe_sb_printf(b, "</ul>\n");
  }
  pipe_sb_printf(b, "<h2>Stage summaries</h2>\n<pre style=\"white-space:pre-wrap\">");
  pipe_sb_html(b, run->text.s);
  pipe_sb_printf(b, "</pre>\n");
  if (run->aif_png[0]) {
    pipe_sb_printf(b, "<h2>Arterial input function</h2>\n<div class=\"fig\">");
    html_image(b, run->aif_png, "AIF plot");
    pipe_sb_printf(b, "<br>");
    pipe_sb_html(b, run->aif_caption);
    pipe_sb_printf(b, "</div>\n");
  }
}

static void report_maps(pipe_run *run, pipe_sb *b) {
  pipe_sb_printf(b, "<h2>Maps</h2>\n<p>Each montage shows up to 12 slices (z increasing left to right, top to "
                    "bottom; y up), grey from the 2nd (dark) to the 98th percentile (white) of the values inside "
                    "the mask, the bar at the right is the scale; black is NaN (not fitted or failed). "
                    "Histograms cover the same range.</p>\n<table><tr><th>map</th><th>unit</th><th>window</th>"
                    "<th>median</th><th>finite voxels in mask</th></tr>\n");
  for (int i = 0; i < run->n_outputs; ++i) {
    pipe_output *o = &run->outputs[i];
    if (!o->is_map) continue;
    pipe_sb_printf(b, "<tr><td>");
    html_link(b, o->name, o->name);
    pipe_sb_printf(b, "</td><td>");
    pipe_sb_html(b, o->unit[0] ? o->unit : "-");
    pipe_sb_printf(b, "</td><td>%.4g .. %.4g</td><td>%.4g</td><td>%lld</td></tr>\n", o->lo, o->hi, o->median,
                   (long long)o->n_finite);
  }
  pipe_sb_printf(b, "</table>\n");
  for (int i = 0; i < run->n_outputs; ++i) {
    pipe_output *o = &run->outputs[i];
    if (!o->is_map || !o->png[0]) continue;
    pipe_sb_printf(b, "<div class=\"fig\"><b>");
    pipe_sb_html(b, o->model);
    pipe_sb_printf(b, "%s", o->model[0] ? " " : "");
    pipe_sb_html(b, o->param);
    pipe_sb_printf(b, "</b> (");
    pipe_sb_html(b, o->unit[0] ? o->unit : "no unit");
    pipe_sb_printf(b, ")<br>");
    html_image(b, o->png, o->param);
    pipe_sb_printf(b, "<br>%.4g (dark) .. %.4g (white) ", o->lo, o->hi);
    pipe_sb_html(b, o->unit);
    if (o->hist[0]) {
      pipe_sb_printf(b, "<br>");
      html_image(b, o->hist, "histogram");
      pipe_sb_printf(b, "<br>histogram in the mask, %.4g .. %.4g", o->lo, o->hi);
    }
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
  if (b.oom) { pipe_sb_free(&b); return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "report: out of memory"); }
  lumen_status st = pipe_write_text_file(run, "report.html", b.s);
  pipe_sb_free(&b);
  if (st == LUMEN_OK && run->sum) pipe_join(run->sum->report, sizeof run->sum->report, run->out, "report.html");
  return st;
}
