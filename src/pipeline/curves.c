/* The fitted-curve figure of a model for report.html: measured samples and the fitted model
   curve at three representative voxels (the 10th, 50th and 90th percentile of the model's
   headline parameter among the converged voxels), drawn through lumen_fit_plan_eval. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/figure.h"
#include "pipeline/pipe_conc.h"
#include "pipeline/pipe_report.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_strbuf.h"

typedef struct ranked {
  double v;
  int64_t k;
} ranked;

static int by_value(const void *a, const void *b) {
  double x = ((const ranked *)a)->v, y = ((const ranked *)b)->v;
  return x < y ? -1 : x > y;
}

/* Index of the headline parameter: Ktrans where the model has it, else the first (T1). */
static int headline_param(lumen_model model) {
  for (int p = 0; p < lumen_model_param_count(model); ++p)
    if (!strcmp(lumen_model_param_name(model, p), "Ktrans")) return p;
  return 0;
}

void pipe_curve_figure(pipe_run *run, const pipe_curve_in *in) {
  const lumen_model model = in->model;
  const int np = lumen_model_param_count(model), hp = headline_param(model);
  const lumen_fit_results *res = in->res;
  if (!run->cfg->report || np < 1 || in->nlist < 1 || in->nt < 2) return;
  ranked *r = malloc(sizeof(ranked) * (size_t)in->nlist);
  double *buf = malloc(sizeof(double) * (size_t)in->nt * 7);
  if (!r || !buf) {
    free(r);
    free(buf);
    return; /* the figure is optional; the maps and the run log carry the results */
  }
  int64_t n = 0;
  for (int64_t k = 0; k < in->nlist; ++k)
    if (res->state[k] == LUMEN_FIT_CONVERGED && isfinite(res->params[k * np + hp])) {
      r[n].v = res->params[k * np + hp];
      r[n++].k = k;
    }
  const char *mname = lumen_model_name(model), *pn = lumen_model_param_name(model, hp);
  const char *unit = lumen_model_param_unit(model, hp);
  char title[160], labels[3][160];
  snprintf(title, sizeof title, "%s: measured (dots) and fitted (line) at three voxels", mname);
  if (n == 0) {
    pipe_sb_printf(&run->curves_svg, "<p>%s: no converged voxel to show.</p>\n", mname);
    free(r);
    free(buf);
    return;
  }
  qsort(r, (size_t)n, sizeof *r, by_value);
  double *x = buf;
  for (int64_t i = 0; i < in->nt; ++i) x[i] = in->x[i] * in->x_scale;
  /* the model on a fine grid when the samples are few (T1: 2..10 flip angles or times) */
  lumen_fit_plan *dense = NULL;
  double xd[PIPE_CURVE_DENSE], xds[PIPE_CURVE_DENSE], yd[3][PIPE_CURVE_DENSE];
  if (in->dense && in->x[in->nt - 1] > in->x[0]) {
    for (int i = 0; i < PIPE_CURVE_DENSE; ++i) {
      xd[i] = in->x[0] + (in->x[in->nt - 1] - in->x[0]) * i / (PIPE_CURVE_DENSE - 1);
      xds[i] = xd[i] * in->x_scale;
    }
    if (lumen_fit_plan_create(run->ctx, in->dense, PIPE_CURVE_DENSE, xd, NULL, &dense) != LUMEN_OK) {
      lumen_ctx_clear_error(run->ctx);
      dense = NULL;
    }
  }
  pipe_plot plot;
  memset(&plot, 0, sizeof plot);
  plot.title = title;
  plot.xlabel = in->xlabel;
  plot.ylabel = in->ylabel;
  plot.y_from_zero = 1;
  static const int pct[3] = {10, 50, 90};
  /* three distinct curves: where ranks tie (a parameter that many voxels share, a T1 at one value)
     the 50th and 90th move up to the next distinct value (issue 39 item 9) */
  int64_t pick[3];
  for (int j = 0; j < 3; ++j) {
    pick[j] = (int64_t)floor((double)(n - 1) * pct[j] / 100.0 + 0.5);
    if (j > 0 && pick[j] <= pick[j - 1]) pick[j] = pick[j - 1] + 1 < n ? pick[j - 1] + 1 : n - 1;
    while (j > 0 && pick[j] < n - 1 && r[pick[j]].v == r[pick[j - 1]].v) ++pick[j];
  }
  for (int j = 0; j < 3; ++j) {
    int64_t k = r[pick[j]].k, v = in->list[k];
    double *meas = buf + in->nt * (1 + 2 * j), *fit = meas + in->nt, consts[LUMEN_FIT_NCONSTS];
    for (int c = 0; c < LUMEN_FIT_NCONSTS; ++c) consts[c] = in->consts ? in->consts[k * LUMEN_FIT_NCONSTS + c] : NAN;
    for (int64_t i = 0; i < in->nt; ++i)
      meas[i] = in->data ? in->data[k * in->nt + i] : in->src->base[i * in->src->nvox + v];
    double delay = res->delay ? res->delay[k] : 0;
    if (lumen_fit_plan_eval(in->plan, res->params + k * np, in->consts ? consts : NULL, delay, fit) != LUMEN_OK)
      for (int64_t i = 0; i < in->nt; ++i) fit[i] = NAN;
    if (dense && lumen_fit_plan_eval(dense, res->params + k * np, in->consts ? consts : NULL, delay, yd[j]) != LUMEN_OK)
      for (int i = 0; i < PIPE_CURVE_DENSE; ++i) yd[j][i] = NAN;
    int64_t xi = v % run->nx, yi = (v / run->nx) % run->ny, zi = v / (run->nx * run->ny);
    snprintf(labels[j], sizeof labels[j], "p%d (%lld,%lld,%lld): %s %.3g%s%s", pct[j], (long long)xi,
             (long long)yi, (long long)zi, pn, res->params[k * np + hp], unit[0] ? " " : "", unit);
    pipe_rgb col = pipe_category_colour(j);
    plot.series[plot.n_series++] = (pipe_series){x, meas, (int)in->nt, NULL, col, PIPE_MARKERS};
    if (dense)
      plot.series[plot.n_series++] = (pipe_series){xds, yd[j], PIPE_CURVE_DENSE, labels[j], col, PIPE_LINE};
    else
      plot.series[plot.n_series++] = (pipe_series){x, fit, (int)in->nt, labels[j], col, PIPE_LINE};
  }
  lumen_fit_plan_destroy(dense);
  pipe_sb_printf(&run->curves_svg, "<div class=\"fig\">");
  pipe_svg_plot(&run->curves_svg, &plot);
  pipe_sb_printf(&run->curves_svg, "<br>voxels (x,y,z) at the 10th, 50th and 90th percentile of ");
  pipe_sb_html(&run->curves_svg, pn);
  pipe_sb_printf(&run->curves_svg, " among the %lld converged voxels</div>\n", (long long)n);
  free(r);
  free(buf);
}
