/* Pipeline utilities: paths, statistics, checksums, inputs, grids, masks, map output. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "io/io_internal.h"
#include "pipeline/pipe_internal.h"

/* ------------------------------------------------------------------ paths, time */
double pipe_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

lumen_status pipe_mkdir_p(lumen_ctx *ctx, const char *dir) {
  char buf[LUMEN_PIPE_PATH_MAX];
  if (strlen(dir) >= sizeof buf) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "output folder '%s': path too long", dir);
  snprintf(buf, sizeof buf, "%s", dir);
  for (char *p = buf + 1;; ++p) {
    if (*p == '/' || *p == '\0') {
      char c = *p;
      *p = '\0';
      struct stat st;
      if (stat(buf, &st) != 0) {
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
          return lumen_fail(ctx, LUMEN_ERR_IO, "output folder '%s': cannot create '%s': %s", dir, buf, strerror(errno));
      } else if (!S_ISDIR(st.st_mode)) {
        return lumen_fail(ctx, LUMEN_ERR_IO, "output folder '%s': '%s' exists and is not a folder", dir, buf);
      }
      *p = c;
      if (c == '\0') break;
    }
  }
  return LUMEN_OK;
}

void pipe_join(char *buf, size_t size, const char *dir, const char *name) {
  size_t n = strlen(dir);
  snprintf(buf, size, "%s%s%s", dir, (n && dir[n - 1] == '/') ? "" : "/", name);
}

const char *pipe_basename(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* BIDS entities sub-XX and ses-YY of the input's file name, else "lumen". */
void pipe_prefix_from(const char *path, char *out, size_t size) {
  char sub[128] = "", ses[128] = "";
  const char *b = path ? pipe_basename(path) : "";
  for (const char *p = b; *p; ++p) {
    if ((p == b || p[-1] == '_') && (strncmp(p, "sub-", 4) == 0 || strncmp(p, "ses-", 4) == 0)) {
      char *dst = p[1] == 'u' ? sub : ses;
      size_t k = 0;
      while (p[k] && p[k] != '_' && p[k] != '.' && k + 1 < 128) { dst[k] = p[k]; ++k; }
      dst[k] = '\0';
    }
  }
  if (sub[0] && ses[0]) snprintf(out, size, "%s_%s", sub, ses);
  else if (sub[0]) snprintf(out, size, "%s", sub);
  else if (ses[0]) snprintf(out, size, "%s", ses);
  else snprintf(out, size, "lumen");
}

int pipe_file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double pipe_median(double *v, int64_t n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double pipe_percentile(double *v, int64_t n, double p) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  double pos = p / 100.0 * (double)(n - 1);
  int64_t i = (int64_t)floor(pos);
  if (i >= n - 1) return v[n - 1];
  double f = pos - (double)i;
  return v[i] * (1 - f) + v[i + 1] * f;
}

double lumen_pipe_ccc(const double *a, const double *b, int64_t n) {
  if (!a || !b || n < 2) return NAN;
  double ma = 0, mb = 0;
  for (int64_t i = 0; i < n; ++i) { ma += a[i]; mb += b[i]; }
  ma /= (double)n;
  mb /= (double)n;
  double va = 0, vb = 0, cov = 0;
  for (int64_t i = 0; i < n; ++i) {
    va += (a[i] - ma) * (a[i] - ma);
    vb += (b[i] - mb) * (b[i] - mb);
    cov += (a[i] - ma) * (b[i] - mb);
  }
  va /= (double)n; vb /= (double)n; cov /= (double)n;
  double den = va + vb + (ma - mb) * (ma - mb);
  return den > 0 ? 2 * cov / den : NAN;
}

int64_t pipe_detect_arrival_frac(const double *y, int64_t n, int64_t b0, int64_t b1, double frac) {
  if (!y || n < 3) return -1;
  if (b0 < 0) b0 = 0;
  if (b1 <= b0 || b1 > n) b1 = b0 + 1;
  double m = 0, s = 0;
  for (int64_t i = b0; i < b1; ++i) m += y[i];
  m /= (double)(b1 - b0);
  for (int64_t i = b0; i < b1; ++i) s += (y[i] - m) * (y[i] - m);
  s = b1 - b0 > 1 ? sqrt(s / (double)(b1 - b0 - 1)) : 0;
  double peak = -INFINITY;
  for (int64_t i = 0; i < n; ++i) if (isfinite(y[i]) && y[i] > peak) peak = y[i];
  double thr = fmax(4 * s, frac * (peak - m));
  if (!(thr > 0)) return -1;
  for (int64_t i = b0; i < n; ++i)
    if (isfinite(y[i]) && y[i] - m > thr) return i > 0 ? i - 1 : 0;
  return -1;
}

int64_t lumen_pipe_detect_arrival(const double *y, int64_t n, int64_t b0, int64_t b1) {
  return pipe_detect_arrival_frac(y, n, b0, b1, 0.02);
}

lumen_status lumen_pipe_checksum_file(lumen_ctx *ctx, const char *path, char hex[17]) {
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  LUMEN_REQUIRE_NOT_NULL(ctx, hex);
  FILE *f = fopen(path, "rb");
  if (!f) return lumen_fail(ctx, LUMEN_ERR_IO, "checksum: cannot open '%s': %s", path, strerror(errno));
  uint64_t h = 14695981039346656037ULL; /* FNV-1a 64 offset basis */
  static const size_t BUF = 1 << 20;
  unsigned char *buf = malloc(BUF);
  if (!buf) { fclose(f); return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "checksum: out of memory"); }
  size_t k;
  while ((k = fread(buf, 1, BUF, f)) > 0)
    for (size_t i = 0; i < k; ++i) { h ^= buf[i]; h *= 1099511628211ULL; }
  int err = ferror(f);
  fclose(f);
  free(buf);
  if (err) return lumen_fail(ctx, LUMEN_ERR_IO, "checksum: read error on '%s'", path);
  snprintf(hex, 17, "%016llx", (unsigned long long)h);
  return LUMEN_OK;
}

/* ------------------------------------------------------------------ inputs */
lumen_status pipe_record_input(pipe_run *run, const char *role, const char *path) {
  if (run->n_inputs >= PIPE_MAX_INPUTS) return LUMEN_OK;
  pipe_input *in = &run->inputs[run->n_inputs];
  snprintf(in->role, sizeof in->role, "%s", role);
  snprintf(in->path, sizeof in->path, "%s", path);
  lumen_status st = lumen_pipe_checksum_file(run->ctx, path, in->checksum);
  if (st != LUMEN_OK) return st;
  run->n_inputs++;
  return LUMEN_OK;
}

lumen_status pipe_read_input(pipe_run *run, const char *role, const char *path, lumen_image **im,
                             lumen_nifti_info *info) {
  *im = NULL;
  if (!pipe_file_exists(path))
    return lumen_fail(run->ctx, LUMEN_ERR_IO, "%s '%s': file not found", role, path);
  lumen_status st = lumen_nifti_read(run->ctx, path, NULL, im, info);
  if (st != LUMEN_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", lumen_ctx_last_error(run->ctx));
    return lumen_fail(run->ctx, st, "%s: %s", role, msg);
  }
  return pipe_record_input(run, role, path);
}

lumen_status pipe_check_grid(pipe_run *run, const char *role, const char *path, const lumen_image *im,
                             const char *ref_path) {
  int64_t d[3] = {lumen_image_dim(im, 0), lumen_image_dim(im, 1), lumen_image_dim(im, 2)};
  if (d[0] != run->nx || d[1] != run->ny || d[2] != run->nz)
    return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "%s '%s' is on another grid: %lldx%lldx%lld voxels, the series '%s' has %lldx%lldx%lld",
                      role, path, (long long)d[0], (long long)d[1], (long long)d[2], ref_path, (long long)run->nx,
                      (long long)run->ny, (long long)run->nz);
  double a[16];
  lumen_image_get_affine(im, a);
  double scale = 0;
  for (int i = 0; i < 16; ++i) scale = fmax(scale, fabs(run->affine[i]));
  for (int i = 0; i < 12; ++i)
    if (fabs(a[i] - run->affine[i]) > 1e-3 * fmax(scale, 1.0))
      return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                        "%s '%s' is on another grid: its voxel-to-world affine differs from the series '%s' "
                        "(element %d: %g, expected %g)",
                        role, path, ref_path, i, a[i], run->affine[i]);
  return LUMEN_OK;
}

lumen_status pipe_load_mask(pipe_run *run, const char *ref_path) {
  run->mask = malloc((size_t)run->nvox);
  if (!run->mask) return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "mask: out of memory");
  if (!run->cfg->mask) {
    memset(run->mask, 1, (size_t)run->nvox);
    run->n_mask = run->nvox;
    return LUMEN_OK;
  }
  lumen_image *m = NULL;
  lumen_nifti_info info;
  lumen_status st = pipe_read_input(run, "mask", run->cfg->mask, &m, &info);
  if (st == LUMEN_OK && lumen_image_count(m) != run->nvox)
    st = lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "mask '%s' is on another grid: %lld voxels (%lldx%lldx%lldx%lld), the series '%s' has %lldx%lldx%lld",
                    run->cfg->mask, (long long)lumen_image_count(m), (long long)lumen_image_dim(m, 0),
                    (long long)lumen_image_dim(m, 1), (long long)lumen_image_dim(m, 2),
                    (long long)lumen_image_dim(m, 3), ref_path, (long long)run->nx, (long long)run->ny,
                    (long long)run->nz);
  if (st == LUMEN_OK) st = pipe_check_grid(run, "mask", run->cfg->mask, m, ref_path);
  if (st == LUMEN_OK) {
    const float *v = lumen_image_const_data(m);
    run->n_mask = 0;
    for (int64_t i = 0; i < run->nvox; ++i) {
      run->mask[i] = v[i] > 0.5f;
      run->n_mask += run->mask[i];
    }
    if (run->n_mask == 0)
      st = lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT, "mask '%s' selects no voxel (no value > 0.5)",
                      run->cfg->mask);
  }
  lumen_image_free(m);
  return st;
}

/* ------------------------------------------------------------------ outputs */
lumen_status pipe_check_overwrite(pipe_run *run, const char *name) {
  char p[LUMEN_PIPE_PATH_MAX];
  pipe_join(p, sizeof p, run->out, name);
  if (!run->cfg->overwrite && pipe_file_exists(p))
    return lumen_fail(run->ctx, LUMEN_ERR_IO, "'%s' exists and is not replaced without overwrite (--overwrite)", p);
  return LUMEN_OK;
}

void pipe_record_output(pipe_run *run, const char *name) {
  if (run->n_outputs >= PIPE_MAX_OUTPUTS) return;
  pipe_output *o = &run->outputs[run->n_outputs++];
  memset(o, 0, sizeof *o);
  snprintf(o->name, sizeof o->name, "%s", name);
  pipe_join(o->path, sizeof o->path, run->out, name);
  o->lo = o->hi = o->median = NAN;
}

lumen_status pipe_write_text_file(pipe_run *run, const char *name, const char *text) {
  char p[LUMEN_PIPE_PATH_MAX];
  pipe_join(p, sizeof p, run->out, name);
  lumen_atomic_file *f = NULL;
  lumen_status st = pipe_before_write(run);
  if (st == LUMEN_OK) st = lumen_atomic_open(run->ctx, p, run->cfg->overwrite, 0, &f);
  if (st != LUMEN_OK) return st;
  st = lumen_atomic_write(f, text, strlen(text));
  if (st != LUMEN_OK) { lumen_atomic_abort(f); return st; }
  st = lumen_atomic_commit(f);
  if (st == LUMEN_OK) pipe_record_output(run, name);
  return st;
}

lumen_status pipe_write_map(pipe_run *run, const char *name, const float *data, const char *param,
                            const char *unit, const char *model, const char *backend_used, const char *description,
                            int figure) {
  lumen_ctx *ctx = run->ctx;
  int64_t dims[3] = {run->nx, run->ny, run->nz};
  lumen_image *im = NULL;
  lumen_status st = pipe_before_write(run);
  if (st != LUMEN_OK) return st;
  st = lumen_image_wrap(ctx, (void *)data, 3, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), &im);
  if (st != LUMEN_OK) return st;
  lumen_image_set_affine(ctx, im, run->affine);
  lumen_image_set_spacing(ctx, im, run->spacing, 3);
  char path[LUMEN_PIPE_PATH_MAX];
  pipe_join(path, sizeof path, run->out, name);
  lumen_nifti_write_opts wo;
  memset(&wo, 0, sizeof wo);
  wo.overwrite = run->cfg->overwrite;
  wo.intent_name = param;
  wo.intent_code = LUMEN_NIFTI_INTENT_ESTIMATE;
  wo.description = description;
  wo.sform_code = run->sform_code > 0 ? run->sform_code : 1;
  wo.qform_code = run->qform_code > 0 ? run->qform_code : 1;
  wo.compress_level = run->cfg->compress_level;
  st = lumen_nifti_write(ctx, path, im, &wo);
  lumen_image_free(im);
  if (st != LUMEN_OK) return st;
  /* sidecar */
  char sname[300], spath[LUMEN_PIPE_PATH_MAX];
  lumen_sidecar_path(ctx, name, sname, sizeof sname);
  pipe_join(spath, sizeof spath, run->out, sname);
  lumen_json *j = NULL;
  st = lumen_json_create(ctx, &j);
  if (st != LUMEN_OK) return st;
  lumen_json_set_string(ctx, j, "Parameter", param);
  lumen_json_set_string(ctx, j, "Units", unit ? unit : "");
  lumen_json_set_string(ctx, j, "Model", model ? model : "");
  lumen_json_set_string(ctx, j, "Description", description ? description : "");
  lumen_json_set_string(ctx, j, "BackendUsed", backend_used ? backend_used : "");
  lumen_json_set_string(ctx, j, "SoftwareName", "lumen");
  lumen_json_set_string(ctx, j, "SoftwareVersion", lumen_version());
  lumen_json_set_string(ctx, j, "Command", run->command);
  const char *srcs[PIPE_MAX_INPUTS];
  for (int i = 0; i < run->n_inputs; ++i) srcs[i] = run->inputs[i].path;
  lumen_json_set_strings(ctx, j, "Sources", srcs, run->n_inputs);
  st = lumen_json_write(ctx, j, spath, run->cfg->overwrite);
  lumen_json_free(j);
  if (st != LUMEN_OK) return st;
  pipe_record_output(run, name);
  pipe_output *o = &run->outputs[run->n_outputs - 1];
  snprintf(o->param, sizeof o->param, "%s", param);
  snprintf(o->unit, sizeof o->unit, "%s", unit ? unit : "");
  snprintf(o->model, sizeof o->model, "%s", model ? model : "");
  o->is_map = 1;
  pipe_record_output(run, sname);
  if (run->cfg->report) pipe_map_stats(run, data, o);  /* every map's row in the report table */
  if (figure && run->cfg->report) {
    st = pipe_render_montage(run, data, o);
    if (st == LUMEN_ERR_NOT_BUILT) { lumen_ctx_clear_error(ctx); st = LUMEN_OK; }
  }
  return st;
}

void pipe_run_free(pipe_run *run) {
  pipe_unlock_out(run);
  free(run->mask);
  run->mask = NULL;
  pipe_sb_free(&run->stages);
  pipe_sb_free(&run->text);
  pipe_sb_free(&run->aif_json);
  pipe_sb_free(&run->warnings);
  pipe_sb_free(&run->aif_svg);
  pipe_sb_free(&run->curves_svg);
}

void pipe_warn(pipe_run *run, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (char *p = msg; *p; ++p)
    if (*p == '\n') *p = ' '; /* one line per warning */
  lumen_log(run->ctx, LUMEN_LOG_WARNING, "%s", msg);
  pipe_sb_printf(&run->warnings, "%s\n", msg);
  pipe_sb_printf(&run->text, "WARNING: %s\n", msg);
}

const char *pipe_next_warning(const char *w, char *line, size_t size) {
  if (!w || !*w) return NULL;
  const char *e = strchr(w, '\n'); /* pipe_warn ends every line with one */
  size_t n = e ? (size_t)(e - w) : strlen(w);
  snprintf(line, size, "%.*s", (int)n, w);
  return e ? e + 1 : w + n;
}

void pipe_state_legend(char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  for (int k = 0; k < LUMEN_FIT_STATE_COUNT && n < size; ++k) {
    int w = snprintf(buf + n, size - n, "%s%d %s", k ? " " : "", k, lumen_fit_state_name((lumen_fit_state)k));
    if (w < 0) break;
    n += (size_t)w;
  }
}

void pipe_at_bound_json(pipe_sb *b, char *text, size_t size, lumen_model model, const lumen_fit_results *res) {
  const int np = lumen_fit_param_count(model);
  size_t n = 0;
  text[0] = '\0';
  pipe_sb_printf(b, ", \"at_bound\": {");
  for (int k = 0; k < np && k < LUMEN_FIT_MAX_PARAMS; ++k) {
    const char *pn = lumen_fit_param_name(model, k);
    pipe_sb_printf(b, "%s", k ? ", " : "");
    pipe_sb_json_str(b, pn);
    pipe_sb_printf(b, ": {\"lower\": %lld, \"upper\": %lld}", (long long)res->at_lower[k], (long long)res->at_upper[k]);
    for (int side = 0; side < 2; ++side) {
      int64_t c = side ? res->at_upper[k] : res->at_lower[k];
      if (!c || n >= size) continue;
      int w = snprintf(text + n, size - n, "%s%s %s %lld", n ? "; " : " (", pn, side ? "upper" : "lower", (long long)c);
      if (w > 0) n += (size_t)w;
    }
  }
  pipe_sb_printf(b, "}");
  if (n && n + 1 < size) snprintf(text + n, size - n, ")");
}

void pipe_judge_model(pipe_run *run, const char *what, int64_t fitted, int64_t at_bound, int64_t failed,
                      const char *bound_text) {
  if (at_bound > 0)
    pipe_warn(run, "%s: %lld of %lld voxels rest on a bound of the fit%s: their values are the bound, not an estimate "
                   "(state at_bound); widen --bounds if the tissue allows",
              what, (long long)at_bound, (long long)fitted, bound_text);
  if (failed > 0 && 2 * failed <= fitted)
    pipe_warn(run, "%s: %lld of %lld fitted voxels failed (states other than converged and at_bound): NaN in the "
                   "maps, the state map says why", what, (long long)failed, (long long)fitted);
  if (fitted > 0 && 2 * failed > fitted) {
    char why[512];
    snprintf(why, sizeof why, "%s: %lld of %lld fitted voxels failed (states other than converged and at_bound)", what,
             (long long)failed, (long long)fitted);
    pipe_warn(run, "results unreliable: %s; check the acquisition values (TR, flip angle, frame interval, relaxivity, "
                   "T1) and the AIF", why);
    if (run->sum && !run->sum->unreliable) {
      run->sum->unreliable = 1;
      snprintf(run->sum->unreliable_why, sizeof run->sum->unreliable_why, "%s", why);
    }
  }
}

void pipe_bounds_json(pipe_sb *b, const lumen_fit_plan *plan, lumen_model model) {
  for (int k = 0; k < lumen_fit_param_count(model); ++k) {
    double s0, lo, hi;
    lumen_fit_plan_param_bounds(plan, k, &s0, &lo, &hi); /* the effective values, defaults included */
    pipe_sb_printf(b, "%s", k ? ", " : "");
    pipe_sb_json_str(b, lumen_fit_param_name(model, k));
    pipe_sb_printf(b, ": [");
    pipe_sb_json_num(b, lo);
    pipe_sb_printf(b, ", ");
    pipe_sb_json_num(b, hi);
    pipe_sb_printf(b, ", ");
    pipe_sb_json_num(b, s0);
    pipe_sb_printf(b, "]");
  }
}
