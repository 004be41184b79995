/* Stage B: the arterial input function. Population (with the bolus arrival from the data), the
   mean of a vascular ROI, a ROCKETSHIP-style fitted biexponential, automatic selection, or a
   file. The AIF used is written as DIR/{prefix}_aif.tsv and plotted (figures/{prefix}_aif.png). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pipeline/figure.h"
#include "pipeline/pipe_internal.h"
#include "pipeline/vessels.h"

void pipe_aif_free(pipe_aif *aif) {
  free(aif->cp);
  free(aif->cb);
  free(aif->voxels);
  free(aif->background);
  aif->cp = aif->cb = NULL;
  aif->voxels = NULL;
  aif->background = NULL;
}

/* ------------------------------------------------------------ biexponential AIF fit */
static void biexp_eval(const double *p, double t0, double ts, double peak, int64_t n, const double *t, double *y) {
  (void)peak;
  for (int64_t i = 0; i < n; ++i) {
    if (t[i] < ts) y[i] = 0;
    else if (t[i] < t0) y[i] = (p[0] + p[1]) * (t[i] - ts) / (t0 - ts);
    else y[i] = p[0] * exp(-p[2] * (t[i] - t0)) + p[1] * exp(-p[3] * (t[i] - t0));
  }
}

static double sse_of(const double *p, double t0, double ts, int64_t n, const double *t, const double *c, double *y) {
  biexp_eval(p, t0, ts, 0, n, t, y);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) if (isfinite(c[i])) s += (y[i] - c[i]) * (y[i] - c[i]);
  return s;
}

static int solve4(double A[4][4], double b[4], double x[4]) {
  for (int i = 0; i < 4; ++i) {
    int piv = i;
    for (int r = i + 1; r < 4; ++r) if (fabs(A[r][i]) > fabs(A[piv][i])) piv = r;
    if (fabs(A[piv][i]) < 1e-300) return 0;
    if (piv != i) {
      for (int k = 0; k < 4; ++k) { double tmp = A[i][k]; A[i][k] = A[piv][k]; A[piv][k] = tmp; }
      double tb = b[i]; b[i] = b[piv]; b[piv] = tb;
    }
    for (int r = i + 1; r < 4; ++r) {
      double f = A[r][i] / A[i][i];
      for (int k = i; k < 4; ++k) A[r][k] -= f * A[i][k];
      b[r] -= f * b[i];
    }
  }
  for (int i = 3; i >= 0; --i) {
    double s = b[i];
    for (int k = i + 1; k < 4; ++k) s -= A[i][k] * x[k];
    x[i] = s / A[i][i];
  }
  return 1;
}

lumen_status lumen_pipe_fit_biexp_aif(lumen_ctx *ctx, int64_t n, const double *t, const double *c, double *fitted,
                                      double params[6]) {
  LUMEN_REQUIRE_NOT_NULL(ctx, t);
  LUMEN_REQUIRE_NOT_NULL(ctx, c);
  LUMEN_REQUIRE_NOT_NULL(ctx, fitted);
  LUMEN_REQUIRE(ctx, n >= 6, "lumen_pipe_fit_biexp_aif: %lld samples, expected >= 6", (long long)n);
  int64_t ip = 0;
  for (int64_t i = 1; i < n; ++i) if (isfinite(c[i]) && (!isfinite(c[ip]) || c[i] > c[ip])) ip = i;
  if (!(c[ip] > 0)) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "fitted AIF: the curve has no positive peak");
  int64_t ia = lumen_pipe_detect_arrival(c, n, 1, ip > 3 ? (ip * 2) / 3 : 1);
  if (ia < 0 || ia >= ip) ia = ip > 0 ? ip - 1 : 0;
  double t0 = t[ip], ts = t[ia];
  if (!(t0 > ts)) ts = t0 - 1e-6;
  double p[4] = {0.7 * c[ip], 0.3 * c[ip], 3.0, 0.05};
  double *y = malloc(sizeof(double) * (size_t)n * 2);
  if (!y) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "fitted AIF: out of memory");
  double *y2 = y + n;
  double lambda = 1e-3, s = sse_of(p, t0, ts, n, t, c, y);
  for (int it = 0; it < 200; ++it) {
    double J[4][4] = {{0}}, g[4] = {0};
    double h[4];
    for (int k = 0; k < 4; ++k) h[k] = 1e-6 * fmax(fabs(p[k]), 1e-3);
    /* numerical Jacobian, accumulated into J^T J and J^T r */
    double *col[4];
    double *buf = malloc(sizeof(double) * (size_t)n * 4);
    if (!buf) { free(y); return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "fitted AIF: out of memory"); }
    for (int k = 0; k < 4; ++k) {
      col[k] = buf + k * n;
      double q[4] = {p[0], p[1], p[2], p[3]};
      q[k] += h[k];
      biexp_eval(q, t0, ts, 0, n, t, y2);
      for (int64_t i = 0; i < n; ++i) col[k][i] = (y2[i] - y[i]) / h[k];
    }
    for (int64_t i = 0; i < n; ++i) {
      if (!isfinite(c[i])) continue;
      double r = c[i] - y[i];
      for (int a = 0; a < 4; ++a) {
        g[a] += col[a][i] * r;
        for (int b = 0; b < 4; ++b) J[a][b] += col[a][i] * col[b][i];
      }
    }
    free(buf);
    int accepted = 0;
    for (int tries = 0; tries < 10 && !accepted; ++tries) {
      double A[4][4], b[4], dx[4];
      for (int a = 0; a < 4; ++a) {
        for (int bb = 0; bb < 4; ++bb) A[a][bb] = J[a][bb];
        A[a][a] *= 1 + lambda;
        A[a][a] += 1e-12;
        b[a] = g[a];
      }
      if (!solve4(A, b, dx)) { lambda *= 10; continue; }
      double q[4];
      for (int k = 0; k < 4; ++k) q[k] = fmax(0.0, p[k] + dx[k]);
      double s2 = sse_of(q, t0, ts, n, t, c, y2);
      if (s2 < s) {
        double rel = (s - s2) / fmax(s, 1e-300);
        memcpy(p, q, sizeof p);
        s = s2;
        memcpy(y, y2, sizeof(double) * (size_t)n);
        lambda *= 0.1;
        accepted = 1;
        if (rel < 1e-10) it = 1000;
      } else {
        lambda *= 10;
      }
    }
    if (!accepted) break;
  }
  biexp_eval(p, t0, ts, 0, n, t, fitted);
  if (params) { params[0] = p[0]; params[1] = p[1]; params[2] = p[2]; params[3] = p[3]; params[4] = t0; params[5] = ts; }
  free(y);
  return LUMEN_OK;
}

/* ------------------------------------------------------------ ROI mean (whole blood) */
static lumen_status roi_curve(pipe_run *run, const pipe_stage_b_in *in, const int64_t *list, int64_t nlist,
                              double *cb, int64_t *n_used) {
  float *conc = malloc(sizeof(float) * (size_t)(nlist * in->nt));
  int32_t *ninv = malloc(sizeof(int32_t) * (size_t)nlist);
  uint8_t *bad = malloc((size_t)nlist);
  if (!conc || !ninv || !bad) {
    free(conc); free(ninv); free(bad);
    return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "AIF: out of memory");
  }
  /* The vessel fills before the tissue: its baseline ends at its own arrival when that is earlier
     than the tissue's (else its upslope would raise S0 and lower the whole AIF). */
  pipe_spgr sp = *in->sp;
  if (!in->input_conc) {
    double *y = calloc((size_t)in->nt, sizeof(double));
    if (y) {
      for (int64_t i = 0; i < in->nt; ++i) {
        const float *f = in->sig + i * in->nvox;
        for (int64_t k = 0; k < nlist; ++k) y[i] += isfinite(f[list[k]]) ? f[list[k]] : 0;
      }
      int64_t nb0 = in->nt / 10 < 2 ? 2 : in->nt / 10 > 5 ? 5 : in->nt / 10;
      int64_t a = pipe_detect_arrival_frac(y, in->nt, 0, nb0, 0.02);
      if (a >= 1 && a + 1 < sp.b1 && a + 1 > sp.b0) sp.b1 = a + 1;
      free(y);
    }
  }
  pipe_convert(in->sig, in->nvox, in->nt, list, nlist, NULL, run->cfg->blood_t1_s, in->b1, &sp, in->input_conc,
               lumen_ctx_threads(run->ctx), lumen_ctx_cpu_simd(run->ctx), conc, ninv, bad, NULL, NULL, NULL);
  int64_t used = 0;
  for (int64_t i = 0; i < in->nt; ++i) cb[i] = 0;
  for (int64_t k = 0; k < nlist; ++k) {
    if (bad[k]) continue;
    ++used;
    for (int64_t i = 0; i < in->nt; ++i) cb[i] += conc[k * in->nt + i];
  }
  for (int64_t i = 0; i < in->nt; ++i) cb[i] = used ? cb[i] / (double)used : NAN;
  free(conc); free(ninv); free(bad);
  *n_used = used;
  if (!used)
    return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "AIF: none of the %lld ROI voxels gives a usable concentration curve "
                      "(baseline <= 0 or too many out-of-range samples with blood T1 %g s)",
                      (long long)nlist, run->cfg->blood_t1_s);
  return LUMEN_OK;
}

static lumen_status roi_list(pipe_run *run, const char *path, const char *ref_path, int64_t **list, int64_t *n) {
  lumen_image *m = NULL;
  lumen_nifti_info info;
  *list = NULL;
  lumen_status st = pipe_read_input(run, "AIF ROI", path, &m, &info);
  if (st != LUMEN_OK) return st;
  if (lumen_image_count(m) != run->nvox)
    st = lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "AIF ROI '%s' is on another grid: %lld voxels, the series '%s' has %lld per frame", path,
                    (long long)lumen_image_count(m), ref_path, (long long)run->nvox);
  if (st == LUMEN_OK) st = pipe_check_grid(run, "AIF ROI", path, m, ref_path);
  if (st == LUMEN_OK) {
    const float *v = lumen_image_const_data(m);
    int64_t k = 0;
    for (int64_t i = 0; i < run->nvox; ++i) k += v[i] > 0.5f;
    if (k == 0) st = lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT, "AIF ROI '%s' selects no voxel", path);
    else if (!(*list = malloc(sizeof(int64_t) * (size_t)k))) st = lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "AIF: out of memory");
    else {
      k = 0;
      for (int64_t i = 0; i < run->nvox; ++i) if (v[i] > 0.5f) (*list)[k++] = i;
      *n = k;
    }
  }
  lumen_image_free(m);
  return st;
}

static int64_t argmax(const double *y, int64_t n) {
  int64_t k = 0;
  for (int64_t i = 1; i < n; ++i) if (y[i] > y[k]) k = i;
  return k;
}

/* ------------------------------------------------------------ stage B */
/* A comment line of the table: a newline or tab in a path (--aif roi:PATH) would end the comment
   and break the table's columns, so control characters become spaces. */
static void comment_line(pipe_sb *b, const char *text) {
  pipe_sb_printf(b, "# ");
  for (const unsigned char *p = (const unsigned char *)text; *p; ++p)
    pipe_sb_printf(b, "%c", *p < 0x20 || *p == 0x7f ? ' ' : (char)*p);
  pipe_sb_printf(b, "\n");
}

static lumen_status write_aif(pipe_run *run, const pipe_stage_b_in *in, pipe_aif *aif) {
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

/* Why the mean curve of the detected vessels (in aif->cb, from used voxels) is no AIF, in
   fallback; left empty when it passes: plasma peak >= 3x the tissue peak, peak before the
   tissue's, washout. */
static void judge_vessels(const pipe_stage_b_in *in, const pipe_aif *aif, int64_t used, double hct, char *fallback,
                          size_t size) {
  const int64_t nt = in->nt;
  double tissue_peak = in->tissue_mean[argmax(in->tissue_mean, nt)];
  if (in->input_conc) {
    snprintf(fallback, size, "concentration input: no signal to find vessels in");
    return;
  }
  if (used < 3) {
    snprintf(fallback, size, "fewer than 3 usable vascular candidate voxels (%lld)", (long long)used);
    return;
  }
  int64_t ip = argmax(aif->cb, nt), it = argmax(in->tissue_mean, nt);
  double late = 0;
  int64_t nl = 0;
  for (int64_t i = nt - nt / 4; i < nt; ++i) { late += aif->cb[i]; ++nl; }
  late /= (double)(nl ? nl : 1);
  double cpk = aif->cb[ip] / (1 - hct);
  if (!(cpk >= 3 * tissue_peak)) snprintf(fallback, size, "candidate plasma peak %.3g mM is below 3x the tissue peak %.3g mM", cpk, tissue_peak);
  else if (ip > it) snprintf(fallback, size, "candidate peaks (frame %lld) after the tissue (frame %lld)", (long long)ip, (long long)it);
  else if (!(late <= 0.7 * aif->cb[ip])) snprintf(fallback, size, "candidate has no washout (late mean %.3g >= 70%% of peak %.3g mM)", late, aif->cb[ip]);
}

/* --aif auto: the mean of the detected vessels when it passes judge_vessels; otherwise fallback
   says why (and the caller uses the Parker population AIF). */
static void aif_auto(pipe_run *run, const pipe_stage_b_in *in, pipe_aif *aif, char *fallback, size_t size) {
  const lumen_pipe_config *cfg = run->cfg;
  const double hct = cfg->hematocrit;
  const int64_t nt = in->nt;
  const int64_t used = aif->n_voxels; /* the vessels' curve from the series (pipe_stage_b_signal) */
  judge_vessels(in, aif, used, hct, fallback, size);
  if (fallback[0]) {
    pipe_warn(run, "AIF auto: no usable vessel (%s); using the Parker population AIF instead: give --aif roi:FILE "
                   "with a vessel mask, or --aif parker to choose it", fallback);
    aif->fallback = 1;
    aif->n_voxels = 0;
    return;
  }
  for (int64_t i = 0; i < nt; ++i) aif->cp[i] = aif->cb[i] / (1 - hct);
  aif->n_voxels = used;
  snprintf(aif->method, sizeof aif->method, "auto:detected-vessels");
  snprintf(aif->detail, sizeof aif->detail,
           "mean of %lld automatically detected vascular voxels (enhancement >= half the 99th percentile, early peak), converted with "
           "blood T1 %g s, Cp = Cb/(1 - %g); passed: peak >= 3x tissue peak, peaks before tissue, washout",
           (long long)used, cfg->blood_t1_s, hct);
}

/* A population AIF (plasma and whole blood) starting at the bolus arrival. */
static lumen_status aif_population(pipe_run *run, const pipe_stage_b_in *in, pipe_aif *aif, lumen_aif_kind kind,
                                   const char *fallback) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  const double hct = cfg->hematocrit;
  const int64_t nt = in->nt;
  lumen_aif_options ao;
  lumen_aif_options_init(&ao);
  ao.kind = kind;
  ao.hct = hct;
  ao.delay = aif->delay_min;
  double *tt = malloc(sizeof(double) * (size_t)nt);
  if (!tt) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "AIF: out of memory");
  for (int64_t i = 0; i < nt; ++i) tt[i] = in->t_min[i] - in->t_min[0];
  ao.plasma = 1;
  lumen_status st = lumen_aif_population(ctx, &ao, nt, tt, aif->cp);
  if (st == LUMEN_OK) {
    ao.plasma = 0;
    st = lumen_aif_population(ctx, &ao, nt, tt, aif->cb);
  }
  free(tt);
  if (st != LUMEN_OK) return st;
  snprintf(aif->method, sizeof aif->method, "%spopulation:%s", fallback[0] ? "auto:" : "", lumen_aif_name(kind));
  snprintf(aif->detail, sizeof aif->detail,
           "%s population AIF, hematocrit %g, bolus arrival %.4g min (%s)%s%s", lumen_aif_name(kind), hct,
           aif->delay_min,
           isfinite(cfg->injection_time_s) ? "given" : aif->arrival >= 0 ? "detected: last frame before the mean tissue curve rises" : "not detected: 0",
           fallback[0] ? "; auto-selection fell back because " : "", fallback);
  return LUMEN_OK;
}

/* --aif roi:FILE (the mean of the ROI) or fitted:FILE (its biexponential fit) */
static lumen_status aif_roi(pipe_run *run, const pipe_stage_b_in *in, pipe_aif *aif, const char *spec) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  const double hct = cfg->hematocrit;
  const int64_t nt = in->nt;
  int fitted = spec[0] == 'f';
  const char *path = spec + (fitted ? 7 : 4);
  const int64_t used = aif->n_voxels; /* the ROI's curve from the series (pipe_stage_b_signal) */
  lumen_status st = LUMEN_OK;
  if (fitted) {
    double *raw = malloc(sizeof(double) * (size_t)nt);
    if (!raw) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "AIF: out of memory");
    memcpy(raw, aif->cb, sizeof(double) * (size_t)nt);
    st = lumen_pipe_fit_biexp_aif(ctx, nt, in->t_min, raw, aif->cb, aif->biexp);
    free(raw);
    if (st != LUMEN_OK) return st;
  }
  for (int64_t i = 0; i < nt; ++i) aif->cp[i] = aif->cb[i] / (1 - hct);
  snprintf(aif->method, sizeof aif->method, fitted ? "fitted" : "roi");
  if (fitted)
    snprintf(aif->detail, sizeof aif->detail,
             "biexponential fit (ROCKETSHIP style) of the mean of %lld ROI voxels of '%s' (blood T1 %g s): "
             "A %.4g, B %.4g mM, c %.4g, d %.4g /min, peak at %.4g min, ramp from %.4g min; Cp = Cb/(1 - %g)",
             (long long)used, path, cfg->blood_t1_s, aif->biexp[0], aif->biexp[1], aif->biexp[2], aif->biexp[3],
             aif->biexp[4], aif->biexp[5], hct);
  else
    snprintf(aif->detail, sizeof aif->detail, "mean of %lld ROI voxels of '%s' (blood T1 %g s); Cp = Cb/(1 - %g)",
             (long long)used, path, cfg->blood_t1_s, hct);
  return LUMEN_OK;
}

/* --aif file:FILE */
static lumen_status aif_file(pipe_run *run, const pipe_stage_b_in *in, pipe_aif *aif, const char *path) {
  char how[512];
  lumen_status st = pipe_aif_read_file(run->ctx, path, in->nt, in->t_min, run->cfg->hematocrit, aif->cp, aif->cb, how,
                                       sizeof how);
  if (st != LUMEN_OK) return st;
  pipe_record_input(run, "AIF file", path);
  snprintf(aif->method, sizeof aif->method, "file");
  snprintf(aif->detail, sizeof aif->detail, "%s", how);
  return LUMEN_OK;
}

lumen_status pipe_stage_b_signal(pipe_run *run, const pipe_stage_b_in *in, pipe_aif *aif) {
  lumen_ctx *ctx = run->ctx;
  const char *spec = run->cfg->aif ? run->cfg->aif : "auto";
  memset(aif, 0, sizeof *aif);
  aif->cp = malloc(sizeof(double) * (size_t)in->nt);
  aif->cb = malloc(sizeof(double) * (size_t)in->nt);
  if (!aif->cp || !aif->cb) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "AIF: out of memory");
  int64_t *list = NULL, n = 0, used = 0;
  lumen_status st = LUMEN_OK;
  if (!strcmp(spec, "auto")) {
    /* a failure to convert the candidates is no error: auto falls back to a population AIF */
    /* the vessels' baseline statistics from the first half of the baseline: the baseline ends
       where the mean of the fitted voxels rises, and vessels rise earlier; with a mask on the
       tissue alone its last frames already hold the arterial upslope, which made every vessel
       voxel "unstable" (QIBA v6: a tissue AIF of 0.57 mM instead of 9.6) */
    int64_t b0 = in->sp->b0, half = b0 + ((in->sp->b1 - b0) / 2 > 2 ? (in->sp->b1 - b0) / 2 : 2);
    n = in->input_conc ? 0 : pipe_detect_vessels(in->sig, in->nvox, in->nt, b0, half < in->sp->b1 ? half : in->sp->b1, &list);
    if (n >= 3 && roi_curve(run, in, list, n, aif->cb, &used) != LUMEN_OK) {
      lumen_ctx_clear_error(ctx);
      used = 0;
    }
  } else if (!strncmp(spec, "roi:", 4) || !strncmp(spec, "fitted:", 7)) {
    st = roi_list(run, spec + (spec[0] == 'f' ? 7 : 4), in->ref_path, &list, &n);
    if (st == LUMEN_OK) st = roi_curve(run, in, list, n, aif->cb, &used);
  }
  /* kept for the report: the voxels and the baseline image they are drawn over */
  if (st == LUMEN_OK && n > 0 && run->cfg->report) {
    aif->background = malloc(sizeof(float) * (size_t)in->nvox);
    if (aif->background) {
      const int64_t b0 = in->sp->b0, b1 = in->sp->b1 > b0 ? in->sp->b1 : b0 + 1;
      for (int64_t v = 0; v < in->nvox; ++v) {
        double s = 0;
        for (int64_t i = b0; i < b1; ++i) s += in->sig[i * in->nvox + v];
        aif->background[v] = (float)(s / (double)(b1 - b0));
      }
      aif->voxels = list;
      aif->n_list = n;
      list = NULL;
    }
  }
  free(list);
  aif->n_voxels = used;
  return st;
}

lumen_status pipe_stage_b(pipe_run *run, const pipe_stage_b_in *in, pipe_aif *aif) {
  lumen_ctx *ctx = run->ctx;
  const lumen_pipe_config *cfg = run->cfg;
  const int64_t nt = in->nt;
  const char *spec = cfg->aif ? cfg->aif : "auto";
  /* bolus arrival from the mean tissue curve */
  aif->arrival = lumen_pipe_detect_arrival(in->tissue_mean, nt, in->sp->b0, in->sp->b1);
  if (isfinite(cfg->injection_time_s)) {
    aif->delay_min = cfg->injection_time_s / 60.0;
  } else {
    aif->delay_min = aif->arrival >= 0 ? in->t_min[aif->arrival] - in->t_min[0] : 0;
  }
  lumen_status st = LUMEN_OK;
  lumen_aif_kind kind;
  char fallback[512] = "";
  if (!strcmp(spec, "auto")) {
    aif_auto(run, in, aif, fallback, sizeof fallback);
    if (fallback[0]) spec = "parker";
  }
  if (!strcmp(spec, "auto")) {
    /* detected vessels accepted above */
  } else if (lumen_aif_parse(spec, &kind) == LUMEN_OK) {
    st = aif_population(run, in, aif, kind, fallback);
  } else if (!strncmp(spec, "roi:", 4) || !strncmp(spec, "fitted:", 7)) {
    st = aif_roi(run, in, aif, spec);
  } else if (!strncmp(spec, "file:", 5)) {
    st = aif_file(run, in, aif, spec + 5);
  } else {
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "--aif '%s': expected auto, parker, georgiou, weinmann, fritz-hansen, roi:FILE, fitted:FILE or file:FILE",
                      spec);
  }
  if (st != LUMEN_OK) return st;
  for (int64_t i = 0; i < nt; ++i)
    if (!isfinite(aif->cp[i])) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "AIF (%s): value at frame %lld is not finite", aif->method, (long long)i);
  return write_aif(run, in, aif);
}
