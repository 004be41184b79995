/* The data of `lumen view` (view_data.h): a finished `lumen dce` output folder read as untrusted
   input, and the viewer's answers as JSON (or CSV) built here. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "lumen/io.h"
#include "pipeline/pipe_util.h"
#include "view/view_data.h"

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

static void join(char *out, size_t size, const char *dir, const char *name) { snprintf(out, size, "%s/%s", dir, name); }

/* ------------------------------------------------------------------ opening a folder */

/* The folder's run log (its only *_runlog.json): the prefix, the grid and the run's options. */
static lumen_status read_runlog(view_run *run, char *conv, size_t conv_size, int *fit_delay) {
  lumen_ctx *ctx = run->ctx;
  DIR *d = opendir(run->dir);
  if (!d) return lumen_fail(ctx, LUMEN_ERR_IO, "lumen view: cannot read the folder '%s': %s", run->dir, strerror(errno));
  char log[300] = "";
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.' && ends_with(e->d_name, "_runlog.json") && strlen(e->d_name) < sizeof log) {
      snprintf(log, sizeof log, "%s", e->d_name);
      n++;
    }
  closedir(d);
  if (n != 1)
    return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "lumen view: '%s' holds %d run logs (*_runlog.json), expected the one of a finished lumen dce "
                      "run", run->dir, n);
  snprintf(run->prefix, sizeof run->prefix, "%.*s", (int)(strlen(log) - strlen("_runlog.json")), log);
  char path[4400];
  join(path, sizeof path, run->dir, log);
  lumen_json *j = NULL, *cfg = NULL, *grid = NULL;
  char *text = NULL;
  lumen_status st = lumen_json_read(ctx, path, &j);
  int found = 0;
  if (st == LUMEN_OK) st = lumen_json_get_text(ctx, j, "grid", &text, &found);
  if (st == LUMEN_OK && !found)
    st = lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen view: '%s' has no \"grid\": not a lumen dce run log", path);
  if (st == LUMEN_OK) st = lumen_json_parse(ctx, text, strlen(text), path, &grid);
  free(text);
  text = NULL;
  double *dims = NULL;
  int64_t nd = 0;
  if (st == LUMEN_OK) st = lumen_json_get_numbers(ctx, grid, "dims", &dims, &nd, &found);
  if (st == LUMEN_OK && (nd != 3 || !(dims[0] >= 1 && dims[1] >= 1 && dims[2] >= 1 && dims[0] * dims[1] * dims[2] <= 1e9)))
    st = lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen view: '%s' grid.dims is not three sizes of an image", path);
  if (st == LUMEN_OK) {
    run->nx = (int64_t)dims[0], run->ny = (int64_t)dims[1], run->nz = (int64_t)dims[2];
    run->nvox = run->nx * run->ny * run->nz;
  }
  free(dims);
  if (st == LUMEN_OK) st = lumen_json_get_text(ctx, j, "config", &text, &found);
  if (st == LUMEN_OK && found) st = lumen_json_parse(ctx, text, strlen(text), path, &cfg);
  free(text);
  if (st == LUMEN_OK && cfg) {
    char *c = NULL;
    double fd = 0;
    lumen_json_get_string(ctx, cfg, "conv", &c, NULL);
    if (c) snprintf(conv, conv_size, "%s", c);
    free(c);
    lumen_json_get_number(ctx, cfg, "fit_delay", &fd, NULL);
    *fit_delay = fd != 0;
    lumen_ctx_clear_error(ctx);
  }
  lumen_json_free(cfg);
  lumen_json_free(grid);
  lumen_json_free(j);
  return st;
}

/* PREFIX_aif.tsv: the run's time grid (minutes) and plasma AIF, one frame a line. */
static lumen_status read_aif(view_run *run) {
  char name[300], path[4400], line[512];
  snprintf(name, sizeof name, "%s_aif.tsv", run->prefix);
  join(path, sizeof path, run->dir, name);
  FILE *f = fopen(path, "r");
  if (!f) return lumen_fail(run->ctx, LUMEN_ERR_IO, "lumen view: cannot read the AIF table '%s': %s", path, strerror(errno));
  int64_t cap = 256, n = 0;
  run->t_min = malloc(sizeof(double) * (size_t)cap);
  run->cp = malloc(sizeof(double) * (size_t)cap);
  lumen_status st = run->t_min && run->cp ? LUMEN_OK : lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen view: out of memory");
  while (st == LUMEN_OK && fgets(line, sizeof line, f)) {
    double ts, tm, cb, cp;
    if (line[0] == '#' || !strncmp(line, "time_s", 6)) continue;
    if (sscanf(line, "%lf %lf %lf %lf", &ts, &tm, &cb, &cp) != 4 || !isfinite(tm) || (n > 0 && !(tm > run->t_min[n - 1]))) {
      st = lumen_fail(run->ctx, LUMEN_ERR_FORMAT, "lumen view: '%s' line %lld is not 'time_s time_min Cb_mM Cp_mM' "
                      "with rising times", path, (long long)n + 1);
      break;
    }
    if (n == cap) {
      if (cap >= VIEW_MAX_FRAMES) { st = lumen_fail(run->ctx, LUMEN_ERR_FORMAT, "lumen view: '%s': too many frames", path); break; }
      cap *= 2;
      double *a = realloc(run->t_min, sizeof(double) * (size_t)cap), *b = a ? realloc(run->cp, sizeof(double) * (size_t)cap) : NULL;
      if (a) run->t_min = a;
      if (b) run->cp = b;
      if (!a || !b) { st = lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen view: out of memory"); break; }
    }
    run->t_min[n] = tm;
    run->cp[n++] = isfinite(cp) ? cp : 0;
  }
  fclose(f);
  if (st == LUMEN_OK && n < 2) st = lumen_fail(run->ctx, LUMEN_ERR_FORMAT, "lumen view: '%s' holds fewer than 2 frames", path);
  run->nt = n;
  return st;
}

/* The maps of the folder: PREFIX_model-M_param-P.nii.gz, and the saved concentration series. */
static lumen_status list_maps(view_run *run) {
  DIR *d = opendir(run->dir);
  if (!d) return lumen_fail(run->ctx, LUMEN_ERR_IO, "lumen view: cannot read the folder '%s'", run->dir);
  char head[300], conc[300];
  snprintf(head, sizeof head, "%s_model-", run->prefix);
  snprintf(conc, sizeof conc, "%s_desc-conc_dce.nii.gz", run->prefix);
  const size_t hn = strlen(head);
  for (struct dirent *e; (e = readdir(d)) && run->n_maps < VIEW_MAX_MAPS;) {
    const char *nm = e->d_name;
    if (!strcmp(nm, conc)) snprintf(run->conc_file, sizeof run->conc_file, "%s", conc);
    if (strncmp(nm, head, hn) || !ends_with(nm, ".nii.gz") || strlen(nm) >= sizeof run->maps[0].file) continue;
    const char *m = nm + hn, *p = strstr(m, "_param-");
    if (!p || p - m >= 32) continue;
    view_map *v = &run->maps[run->n_maps];
    memset(v, 0, sizeof *v);
    snprintf(v->file, sizeof v->file, "%s", nm);
    snprintf(v->model, sizeof v->model, "%.*s", (int)(p - m), m);
    snprintf(v->param, sizeof v->param, "%.*s", (int)(strlen(p + 7) - 7), p + 7);
    run->n_maps++;
  }
  closedir(d);
  if (run->n_maps == 0)
    return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT, "lumen view: '%s' holds no parameter map (%s*.nii.gz)",
                      run->dir, head);
  return LUMEN_OK;
}

static int find_map(const view_run *run, const char *model, const char *param) {
  for (int i = 0; i < run->n_maps; ++i)
    if (!strcmp(run->maps[i].model, model) && !strcmp(run->maps[i].param, param)) return i;
  return -1;
}

/* The fitted models (every model with a state map) and their curves' plans. */
static void find_models(view_run *run, const char *conv, int fit_delay) {
  for (int i = 0; i < run->n_maps && run->n_models < VIEW_MAX_MODELS; ++i) {
    const view_map *s = &run->maps[i];
    lumen_model id;
    if (strcmp(s->param, "state") || !strcmp(s->model, "best") || lumen_model_parse(s->model, &id) != LUMEN_OK) continue;
    view_model *m = &run->models[run->n_models++];
    memset(m, 0, sizeof *m);
    m->id = id;
    snprintf(m->name, sizeof m->name, "%s", s->model);
    char nm[64];
    for (int k = 0; k < lumen_model_param_count(id) && k < LUMEN_FIT_MAX_PARAMS; ++k) {
      const char *pn = lumen_model_param_name(id, k);
      m->param_map[k] = find_map(run, m->name, pn);
      snprintf(nm, sizeof nm, "%s_cilo", pn);
      m->lo_map[k] = find_map(run, m->name, nm);
      snprintf(nm, sizeof nm, "%s_cihi", pn);
      m->hi_map[k] = find_map(run, m->name, nm);
    }
    m->state_map = i;
    m->r2_map = find_map(run, m->name, "r2");
    m->aic_map = find_map(run, m->name, "aic");
    m->delay_map = fit_delay ? find_map(run, m->name, "delay") : -1;
    if (lumen_model_param_count(id) < 1) continue;
    lumen_fit_options o;
    lumen_fit_options_init(&o);
    o.model = id;
    o.conv = !strcmp(conv, "trapezoid") ? LUMEN_FIT_CONV_TRAPEZOID : LUMEN_FIT_CONV_EXACT;
    if (lumen_fit_plan_create(run->ctx, &o, (int)run->nt, run->t_min, run->cp, &m->plan) != LUMEN_OK) {
      m->plan = NULL; /* no curve for it; the parameters still show */
      lumen_ctx_clear_error(run->ctx);
    }
  }
}

/* The warm-up thread: every indexable volume opened, one at a time under the mutex (a request
   waits at most for one header walk). */
static void *warm_up(void *arg) {
  view_run *run = arg;
  int64_t d[4] = {run->nx, run->ny, run->nz, run->nt};
  for (int i = -1; i < run->n_maps && !run->closing; ++i) {
    view_volume *v = i < 0 ? (run->conc_file[0] ? &run->conc : NULL) : &run->maps[i].vol;
    if (!v) continue;
    pthread_mutex_lock(&run->mu);
    view_volume_open(run->ctx, v, d, 0); /* a file read whole, or one that fails, waits for its request */
    lumen_ctx_clear_error(run->ctx);
    pthread_mutex_unlock(&run->mu);
  }
  return NULL;
}

lumen_status view_open(lumen_ctx *ctx, const char *dir, view_run *run) {
  memset(run, 0, sizeof *run);
  run->ctx = ctx;
  pthread_mutex_init(&run->mu, NULL);
  snprintf(run->dir, sizeof run->dir, "%s", dir);
  char conv[32] = "exact";
  int fit_delay = 0;
  lumen_status st = read_runlog(run, conv, sizeof conv, &fit_delay);
  if (st == LUMEN_OK) st = read_aif(run);
  if (st == LUMEN_OK) st = list_maps(run);
  if (st == LUMEN_OK) find_models(run, conv, fit_delay);
  /* maps: one member holds a voxel's value and a slice; the series: a voxel's frames, each in its
     own member, and the next clicks' (neighbours share the members) */
  for (int i = 0; st == LUMEN_OK && i < run->n_maps; ++i)
    st = view_volume_init(&run->maps[i].vol, run->dir, run->maps[i].file, run->nvox, (size_t)4 << 20);
  if (st == LUMEN_OK && run->conc_file[0])
    st = view_volume_init(&run->conc, run->dir, run->conc_file, run->nvox * run->nt, (size_t)256 << 20);
  if (st == LUMEN_ERR_OUT_OF_MEMORY) lumen_fail(ctx, st, "lumen view: out of memory");
  if (st == LUMEN_OK) run->warm_started = pthread_create(&run->warm, NULL, warm_up, run) == 0;
  return st;
}

void view_close(view_run *run) {
  run->closing = 1;
  if (run->warm_started) pthread_join(run->warm, NULL);
  for (int i = 0; i < run->n_maps; ++i) view_volume_free(&run->maps[i].vol);
  for (int m = 0; m < run->n_models; ++m) lumen_fit_plan_destroy(run->models[m].plan);
  view_volume_free(&run->conc);
  free(run->t_min);
  free(run->cp);
  pthread_mutex_destroy(&run->mu);
}

/* ------------------------------------------------------------------ reading on first use */

static const int64_t *dims_of(const view_run *run, int64_t d[4]) {
  d[0] = run->nx, d[1] = run->ny, d[2] = run->nz, d[3] = run->nt;
  return d;
}

/* Values [first, first + n) of map i (under run->mu). */
static lumen_status map_values(view_run *run, int i, int64_t first, int64_t n, float *dst) {
  int64_t d[4];
  if (i < 0 || i >= run->n_maps) return LUMEN_ERR_INVALID_ARGUMENT;
  return view_volume_read(run->ctx, &run->maps[i].vol, dims_of(run, d), first, n, dst);
}

/* The measured concentration of voxel v, frame by frame (under run->mu). */
static lumen_status conc_of_voxel(view_run *run, int64_t v, double *out) {
  int64_t d[4];
  for (int64_t i = 0; i < run->nt; ++i) {
    float x;
    lumen_status st = view_volume_read(run->ctx, &run->conc, dims_of(run, d), i * run->nvox + v, 1, &x);
    if (st != LUMEN_OK) return st;
    out[i] = x;
  }
  return LUMEN_OK;
}

static int map_index(const view_run *run, const char *file) {
  for (int i = 0; i < run->n_maps; ++i)
    if (!strcmp(run->maps[i].file, file)) return i;
  return -1;
}

/* ------------------------------------------------------------------ answers */

static void rerun_hint(const view_run *run, pipe_sb *b) {
  pipe_sb_json_str(b, run->conc_file[0] ? "" : "the measured curves need the run's concentration series: rerun lumen dce "
                                               "with --save-conc (it writes PREFIX_desc-conc_dce.nii.gz)");
}

lumen_status view_info_json(view_run *run, pipe_sb *b) {
  pipe_sb_printf(b, "{\"prefix\": ");
  pipe_sb_json_str(b, run->prefix);
  pipe_sb_printf(b, ", \"dims\": [%lld, %lld, %lld, %lld], \"t_min\": [", (long long)run->nx, (long long)run->ny,
                 (long long)run->nz, (long long)run->nt);
  for (int64_t i = 0; i < run->nt; ++i) {
    pipe_sb_printf(b, "%s", i ? ", " : "");
    pipe_sb_json_num(b, run->t_min[i]);
  }
  pipe_sb_printf(b, "], \"aif\": [");
  for (int64_t i = 0; i < run->nt; ++i) {
    pipe_sb_printf(b, "%s", i ? ", " : "");
    pipe_sb_json_num(b, run->cp[i]);
  }
  pipe_sb_printf(b, "], \"at_bound\": %d, \"not_fitted\": %d, \"measured\": %s, \"hint\": ", (int)LUMEN_FIT_AT_BOUND,
                 (int)LUMEN_FIT_NOT_FITTED, run->conc_file[0] ? "true" : "false");
  rerun_hint(run, b);
  pipe_sb_printf(b, ", \"maps\": [");
  for (int i = 0; i < run->n_maps; ++i) {
    pipe_sb_printf(b, "%s{\"file\": ", i ? ", " : "");
    pipe_sb_json_str(b, run->maps[i].file);
    pipe_sb_printf(b, ", \"model\": ");
    pipe_sb_json_str(b, run->maps[i].model);
    pipe_sb_printf(b, ", \"param\": ");
    pipe_sb_json_str(b, run->maps[i].param);
    pipe_sb_printf(b, "}");
  }
  pipe_sb_printf(b, "], \"models\": [");
  for (int m = 0; m < run->n_models; ++m) {
    pipe_sb_printf(b, "%s", m ? ", " : "");
    pipe_sb_json_str(b, run->models[m].name);
  }
  pipe_sb_printf(b, "]}");
  return b->oom ? lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen view: out of memory") : LUMEN_OK;
}

/* 2nd and 98th percentiles of the map's finite values (the display window). */
static void window_of(const float *v, int64_t n, double *lo, double *hi) {
  double *t = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  int64_t k = 0;
  for (int64_t i = 0; t && i < n; ++i) if (isfinite(v[i])) t[k++] = v[i];
  *lo = k ? pipe_percentile(t, k, 2) : 0;
  *hi = k ? pipe_percentile(t, k, 98) : 1;
  if (!(*hi > *lo)) *hi = *lo + 1;
  free(t);
}

lumen_status view_slice_json(view_run *run, const char *map, int64_t z, pipe_sb *b) {
  const int i = map_index(run, map);
  if (i < 0) return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT, "no map '%s' in the run", map);
  if (z < 0 || z >= run->nz) return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT, "slice %lld outside 0..%lld", (long long)z, (long long)run->nz - 1);
  const int64_t plane = run->nx * run->ny;
  float *v = malloc(sizeof(float) * (size_t)plane);
  if (!v) return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen view: out of memory");
  pthread_mutex_lock(&run->mu);
  lumen_status st = map_values(run, i, z * plane, plane, v);
  pthread_mutex_unlock(&run->mu);
  if (st != LUMEN_OK) {
    free(v);
    return st;
  }
  double lo, hi;
  window_of(v, plane, &lo, &hi);
  pipe_sb_printf(b, "{\"map\": ");
  pipe_sb_json_str(b, map);
  pipe_sb_printf(b, ", \"z\": %lld, \"w\": %lld, \"h\": %lld, \"lo\": %.9g, \"hi\": %.9g, \"values\": [", (long long)z,
                 (long long)run->nx, (long long)run->ny, lo, hi);
  for (int64_t k = 0; k < plane; ++k) {
    const float x = v[k];
    if (isfinite(x)) pipe_sb_printf(b, "%s%.7g", k ? "," : "", (double)x);
    else pipe_sb_printf(b, "%snull", k ? "," : "");
  }
  pipe_sb_printf(b, "]}");
  free(v);
  return b->oom ? lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen view: out of memory") : LUMEN_OK;
}

/* map's value at voxel v; NaN when the run has no such map or it cannot be read */
static double value_at(view_run *run, int map, int64_t v) {
  float x;
  if (map < 0) return NAN;
  if (map_values(run, map, v, 1, &x) == LUMEN_OK) return x;
  lumen_ctx_clear_error(run->ctx);
  return NAN;
}

/* n values as a JSON array, or null without them (y NULL). */
static void curve_json(pipe_sb *b, const double *y, int64_t n) {
  if (!y) {
    pipe_sb_printf(b, "null");
    return;
  }
  pipe_sb_printf(b, "[");
  for (int64_t i = 0; i < n; ++i) {
    pipe_sb_printf(b, "%s", i ? ", " : "");
    pipe_sb_json_num(b, y[i]);
  }
  pipe_sb_printf(b, "]");
}

/* One model's answer at voxel v: parameters with their 95 % intervals, state, r2, AIC, the curve. */
static void model_at(view_run *run, const view_model *m, int64_t v, pipe_sb *b) {
  const int np = lumen_model_param_count(m->id);
  double p[LUMEN_FIT_MAX_PARAMS];
  int all = np > 0;
  pipe_sb_printf(b, "{\"params\": {");
  for (int k = 0; k < np && k < LUMEN_FIT_MAX_PARAMS; ++k) {
    p[k] = value_at(run, m->param_map[k], v);
    all &= isfinite(p[k]);
    pipe_sb_printf(b, "%s", k ? ", " : "");
    pipe_sb_json_str(b, lumen_model_param_name(m->id, k));
    pipe_sb_printf(b, ": {\"value\": ");
    pipe_sb_json_num(b, p[k]);
    pipe_sb_printf(b, ", \"unit\": ");
    pipe_sb_json_str(b, lumen_model_param_unit(m->id, k));
    pipe_sb_printf(b, ", \"ci\": [");
    pipe_sb_json_num(b, value_at(run, m->lo_map[k], v));
    pipe_sb_printf(b, ", ");
    pipe_sb_json_num(b, value_at(run, m->hi_map[k], v));
    pipe_sb_printf(b, "]}");
  }
  const double state = value_at(run, m->state_map, v);
  pipe_sb_printf(b, "}, \"state\": ");
  pipe_sb_json_str(b, isfinite(state) && state >= 0 && state < LUMEN_FIT_STATE_COUNT ? lumen_fit_state_name((lumen_fit_state)state)
                                                                                       : "not_fitted");
  pipe_sb_printf(b, ", \"r2\": ");
  pipe_sb_json_num(b, value_at(run, m->r2_map, v));
  pipe_sb_printf(b, ", \"aic\": ");
  pipe_sb_json_num(b, value_at(run, m->aic_map, v));
  pipe_sb_printf(b, ", \"curve\": ");
  double *y = all && m->plan ? malloc(sizeof(double) * (size_t)run->nt) : NULL;
  const double delay = m->delay_map >= 0 ? value_at(run, m->delay_map, v) / 60.0 : 0; /* the map is in s */
  const int ok = y && lumen_fit_plan_eval(m->plan, p, NULL, isfinite(delay) ? delay : 0, y) == LUMEN_OK;
  if (!ok) lumen_ctx_clear_error(run->ctx);
  curve_json(b, ok ? y : NULL, run->nt);
  pipe_sb_printf(b, "}");
  free(y);
}

lumen_status view_voxel_json(view_run *run, int64_t x, int64_t y, int64_t z, pipe_sb *b) {
  if (x < 0 || y < 0 || z < 0 || x >= run->nx || y >= run->ny || z >= run->nz)
    return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT, "voxel (%lld, %lld, %lld) outside the image", (long long)x,
                      (long long)y, (long long)z);
  const int64_t v = (z * run->ny + y) * run->nx + x;
  double *c = malloc(sizeof(double) * (size_t)run->nt);
  if (!c) return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen view: out of memory");
  pthread_mutex_lock(&run->mu);
  pipe_sb_printf(b, "{\"voxel\": [%lld, %lld, %lld], \"measured\": ", (long long)x, (long long)y, (long long)z);
  const int measured = run->conc_file[0] && conc_of_voxel(run, v, c) == LUMEN_OK;
  curve_json(b, measured ? c : NULL, run->nt);
  free(c);
  pipe_sb_printf(b, ", \"hint\": ");
  if (!measured && run->conc_file[0]) pipe_sb_json_str(b, lumen_ctx_last_error(run->ctx)); /* a damaged series says so */
  else rerun_hint(run, b);
  lumen_ctx_clear_error(run->ctx);
  pipe_sb_printf(b, ", \"models\": {");
  for (int m = 0; m < run->n_models; ++m) {
    pipe_sb_printf(b, "%s", m ? ", " : "");
    pipe_sb_json_str(b, run->models[m].name);
    pipe_sb_printf(b, ": ");
    model_at(run, &run->models[m], v, b);
  }
  pipe_sb_printf(b, "}}");
  pthread_mutex_unlock(&run->mu);
  lumen_ctx_clear_error(run->ctx);
  return b->oom ? lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen view: out of memory") : LUMEN_OK;
}

/* mean, median, first and third quartile of the finite values of map i in the rectangle */
static int64_t rect_stats(view_run *run, int i, int64_t x0, int64_t y0, int64_t x1, int64_t y1, int64_t z, float *rows,
                          double *t, double s[4]) {
  const int64_t first = (z * run->ny + y0) * run->nx;
  const int ok = map_values(run, i, first, (y1 - y0 + 1) * run->nx, rows) == LUMEN_OK;
  if (!ok) lumen_ctx_clear_error(run->ctx);
  int64_t k = 0;
  double sum = 0;
  for (int64_t y = y0; ok && y <= y1; ++y)
    for (int64_t x = x0; x <= x1; ++x) {
      const double v = rows[(y - y0) * run->nx + x];
      if (isfinite(v)) { t[k++] = v; sum += v; }
    }
  s[0] = k ? sum / (double)k : NAN;
  s[1] = k ? pipe_percentile(t, k, 50) : NAN;
  s[2] = k ? pipe_percentile(t, k, 25) : NAN;
  s[3] = k ? pipe_percentile(t, k, 75) : NAN;
  return k;
}

/* The mean measured curve of the rectangle (finite values; NaN where none), rows: (y1-y0+1) x nx floats. */
static lumen_status roi_curve(view_run *run, int64_t x0, int64_t y0, int64_t x1, int64_t y1, int64_t z, float *rows,
                              double *curve) {
  int64_t d[4];
  for (int64_t i = 0; i < run->nt; ++i) {
    lumen_status st = view_volume_read(run->ctx, &run->conc, dims_of(run, d), i * run->nvox + (z * run->ny + y0) * run->nx,
                                       (y1 - y0 + 1) * run->nx, rows);
    if (st != LUMEN_OK) return st;
    double sum = 0;
    int64_t k = 0;
    for (int64_t y = y0; y <= y1; ++y)
      for (int64_t x = x0; x <= x1; ++x) {
        const double v = rows[(y - y0) * run->nx + x];
        if (isfinite(v)) { sum += v; k++; }
      }
    curve[i] = k ? sum / (double)k : NAN;
  }
  return LUMEN_OK;
}

lumen_status view_roi(view_run *run, int64_t x0, int64_t y0, int64_t x1, int64_t y1, int64_t z, int csv, pipe_sb *b) {
  if (x0 > x1) { int64_t t = x0; x0 = x1; x1 = t; }
  if (y0 > y1) { int64_t t = y0; y0 = y1; y1 = t; }
  if (x0 < 0 || y0 < 0 || z < 0 || x1 >= run->nx || y1 >= run->ny || z >= run->nz)
    return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT, "rectangle outside the image");
  const int64_t n = (x1 - x0 + 1) * (y1 - y0 + 1);
  double *t = malloc(sizeof(double) * (size_t)n), *curve = malloc(sizeof(double) * (size_t)run->nt);
  float *rows = malloc(sizeof(float) * (size_t)((y1 - y0 + 1) * run->nx));
  if (!t || !curve || !rows) {
    free(t), free(curve), free(rows);
    return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen view: out of memory");
  }
  pthread_mutex_lock(&run->mu);
  if (csv) pipe_sb_printf(b, "# lumen view ROI of '%s': x %lld..%lld, y %lld..%lld, z %lld (%lld voxels)\nmap,finite,mean,median,q1,q3\n",
                          run->prefix, (long long)x0, (long long)x1, (long long)y0, (long long)y1, (long long)z, (long long)n);
  else pipe_sb_printf(b, "{\"voxels\": %lld, \"rect\": [%lld, %lld, %lld, %lld, %lld], \"stats\": {", (long long)n,
                      (long long)x0, (long long)y0, (long long)x1, (long long)y1, (long long)z);
  int first = 1;
  for (int i = 0; i < run->n_maps; ++i) {
    if (!strcmp(run->maps[i].param, "state") || !strcmp(run->maps[i].param, "model")) continue; /* categories */
    double s[4];
    const int64_t k = rect_stats(run, i, x0, y0, x1, y1, z, rows, t, s);
    if (csv) {
      pipe_sb_printf(b, "%s,%lld,%.9g,%.9g,%.9g,%.9g\n", run->maps[i].file, (long long)k, s[0], s[1], s[2], s[3]);
      continue;
    }
    pipe_sb_printf(b, "%s", first ? "" : ", ");
    first = 0;
    pipe_sb_json_str(b, run->maps[i].file);
    pipe_sb_printf(b, ": {\"finite\": %lld, \"mean\": ", (long long)k);
    pipe_sb_json_num(b, s[0]);
    pipe_sb_printf(b, ", \"median\": ");
    pipe_sb_json_num(b, s[1]);
    pipe_sb_printf(b, ", \"q1\": ");
    pipe_sb_json_num(b, s[2]);
    pipe_sb_printf(b, ", \"q3\": ");
    pipe_sb_json_num(b, s[3]);
    pipe_sb_printf(b, "}");
  }
  if (!csv) {
    pipe_sb_printf(b, "}, \"mean_curve\": ");
    const int ok = run->conc_file[0] && roi_curve(run, x0, y0, x1, y1, z, rows, curve) == LUMEN_OK;
    if (!ok) lumen_ctx_clear_error(run->ctx);
    curve_json(b, ok ? curve : NULL, run->nt);
    pipe_sb_printf(b, "}");
  }
  pthread_mutex_unlock(&run->mu);
  free(t), free(curve), free(rows);
  return b->oom ? lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen view: out of memory") : LUMEN_OK;
}
