/* The AIF used, written: DIR/{prefix}_aif.tsv (time_s, time_min, Cb_mM, Cp_mM), and with a
   report figures/{prefix}_aif.png, the report's SVG plot and caption, and the AIF's voxels over
   the baseline image (figures/{prefix}_aif_voxels.png). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/figure.h"
#include "pipeline/pipe_aif.h"
#include "pipeline/pipe_outputs.h"
#include "pipeline/pipe_report.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_strbuf.h"

/* A comment line of the table: a newline or tab in a path (--aif roi:PATH) would end the comment
   and break the table's columns, so control characters become spaces. */
static void comment_line(pipe_sb *b, const char *text) {
  pipe_sb_printf(b, "# ");
  for (const unsigned char *p = (const unsigned char *)text; *p; ++p)
    pipe_sb_printf(b, "%c", *p < 0x20 || *p == 0x7f ? ' ' : (char)*p);
  pipe_sb_printf(b, "\n");
}

lumen_status pipe_aif_write(pipe_run *run, const pipe_aif_in *in, const pipe_aif *aif) {
  pipe_sb b = {0};
  char head[128];
  snprintf(head, sizeof head, "lumen %s AIF: %s", lumen_version(), aif->method);
  comment_line(&b, head);
  comment_line(&b, aif->detail);
  pipe_sb_printf(&b, "time_s\ttime_min\tCb_mM\tCp_mM\n");
  for (int64_t i = 0; i < in->nt; ++i)
    pipe_sb_printf(&b, "%.9g\t%.9g\t%.9g\t%.9g\n", in->t_min[i] * 60, in->t_min[i], aif->cb[i], aif->cp[i]);
  if (b.oom) { pipe_sb_free(&b); return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "AIF: out of memory"); }
  char name[300];
  snprintf(name, sizeof name, "%s_aif.tsv", run->prefix);
  lumen_status st = pipe_write_text_file(run, name, b.s);
  pipe_sb_free(&b);
  if (st != LUMEN_OK) return st;
  if (run->cfg->report) {
    snprintf(name, sizeof name, "%s_aif.png", run->prefix);
    double *x = malloc(sizeof(double) * (size_t)in->nt);
    if (!x) return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "AIF: out of memory");
    for (int64_t i = 0; i < in->nt; ++i) x[i] = in->t_min[i];
    char title[160];
    snprintf(title, sizeof title, "AIF (%s) and mean tissue curve", aif->method);
    pipe_plot plot;
    memset(&plot, 0, sizeof plot);
    plot.title = title;
    plot.xlabel = "time from the first frame (min)";
    plot.ylabel = "concentration (mM)";
    plot.y_from_zero = 1;
    plot.series[plot.n_series++] = (pipe_series){x, aif->cp, (int)in->nt, "AIF: plasma Cp", (pipe_rgb){213, 94, 0}, PIPE_LINE};
    if (in->tissue_mean)
      plot.series[plot.n_series++] =
          (pipe_series){x, in->tissue_mean, (int)in->nt, "mean tissue C(t), fitted voxels", (pipe_rgb){0, 114, 178}, PIPE_DASHED};
    pipe_svg_plot(&run->aif_svg, &plot);
    st = pipe_render_plot_png(run, name, &plot);
    free(x);
    if (st == LUMEN_ERR_NOT_BUILT) { lumen_ctx_clear_error(run->ctx); st = LUMEN_OK; }
    else if (st == LUMEN_OK) snprintf(run->aif_png, sizeof run->aif_png, "figures/%s", name);
    if (st == LUMEN_OK) {
      double pk = -INFINITY, cmax = -INFINITY;
      for (int64_t i = 0; i < in->nt; ++i) { pk = fmax(pk, aif->cp[i]); if (in->tissue_mean) cmax = fmax(cmax, in->tissue_mean[i]); }
      snprintf(run->aif_caption, sizeof run->aif_caption,
               "AIF (%s): plasma concentration Cp (solid) and the mean tissue concentration of the fitted voxels "
               "(dashed) against time, 0 .. %.2f min; AIF peak %.3g mM, tissue peak %.3g mM.",
               aif->method, in->t_min[in->nt - 1], pk, cmax);
    }
    /* which voxels made it: the detected vessels or the ROI over the baseline image (not when auto
       fell back to a population AIF: its candidates made no AIF) */
    if (st == LUMEN_OK && aif->voxels && aif->background && !aif->fallback) {
      char t[200];
      snprintf(name, sizeof name, "%s_aif_voxels.png", run->prefix);
      snprintf(t, sizeof t, "AIF voxels (%s): %lld, red", aif->method, (long long)aif->n_list);
      st = pipe_render_voxel_overlay(run, name, t, aif->background, aif->voxels, aif->n_list);
      if (st == LUMEN_ERR_NOT_BUILT) { lumen_ctx_clear_error(run->ctx); st = LUMEN_OK; }
      else if (st == LUMEN_OK) snprintf(run->aif_voxels_png, sizeof run->aif_voxels_png, "figures/%s", name);
    }
  }
  return st;
}
