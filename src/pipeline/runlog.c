/* The run log: DIR/{prefix}_runlog.json (configuration, inputs with checksums, stage summaries
   with timings, outputs with checksums) and DIR/{prefix}_runlog.txt (the same, readable).
   Checksums: XXH3 64-bit over the file bytes, 16 hex digits (checksum.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "pipeline/pipe_checksum.h"
#include "pipeline/pipe_outputs.h"
#include "pipeline/pipe_report.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_strbuf.h"
#include "pipeline/pipe_util.h"

static void kv_str(pipe_sb *b, const char *k, const char *v, int *first) {
  pipe_sb_printf(b, "%s\n\t\t", *first ? "" : ",");
  pipe_sb_json_str(b, k);
  pipe_sb_printf(b, ": ");
  if (v) pipe_sb_json_str(b, v);
  else pipe_sb_printf(b, "null");
  *first = 0;
}
static void kv_num(pipe_sb *b, const char *k, double v, int *first) {
  pipe_sb_printf(b, "%s\n\t\t", *first ? "" : ",");
  pipe_sb_json_str(b, k);
  pipe_sb_printf(b, ": ");
  pipe_sb_json_num(b, v);
  *first = 0;
}

static void config_json(pipe_sb *b, const lumen_pipe_config *c) {
  int f = 1;
  pipe_sb_printf(b, "{");
  kv_str(b, "dce", c->dce, &f);
  kv_str(b, "out", c->out, &f);
  kv_str(b, "t1map", c->t1map, &f);
  pipe_sb_printf(b, ",\n\t\t\"vfa\": [");
  for (int i = 0; i < c->n_vfa; ++i) { if (i) pipe_sb_printf(b, ", "); pipe_sb_json_str(b, c->vfa[i]); }
  pipe_sb_printf(b, "]");
  kv_str(b, "mask", c->mask, &f);
  kv_str(b, "b1", c->b1, &f);
  kv_str(b, "aif", c->aif ? c->aif : "auto", &f);
  kv_str(b, "prefix", c->prefix, &f);
  kv_str(b, "models", c->models ? c->models : "tofts", &f);
  kv_str(b, "backend", c->backend ? c->backend : "auto", &f);
  kv_str(b, "select", c->select ? c->select : "none", &f);
  kv_str(b, "method", c->method, &f);
  kv_str(b, "config", c->config_path, &f);
  kv_str(b, "input_type", c->input_type == LUMEN_PIPE_INPUT_CONCENTRATION ? "concentration" : "signal", &f);
  kv_num(b, "flip_angle", c->flip_angle_deg, &f);
  kv_num(b, "tr", c->tr_s, &f);
  kv_num(b, "dt", c->dt_s, &f);
  kv_num(b, "relaxivity", c->relaxivity, &f);
  kv_num(b, "hematocrit", c->hematocrit, &f);
  kv_num(b, "blood_t1", c->blood_t1_s, &f);
  kv_num(b, "t1", c->t1_default_s, &f);
  kv_num(b, "baseline", c->baseline, &f);
  kv_num(b, "baseline_start", c->baseline_start, &f);
  kv_num(b, "max_invalid_fraction", c->max_invalid_fraction, &f);
  kv_num(b, "injection_time", c->injection_time_s, &f);
  kv_num(b, "tolerance", c->tolerance, &f);
  kv_num(b, "max_iterations", c->max_iterations, &f);
  kv_num(b, "force_cpu", c->force_cpu, &f);
  kv_num(b, "fit_delay", c->fit_delay, &f);
  kv_str(b, "conv", lumen_fit_conv_name(c->conv), &f);
  kv_str(b, "precision", lumen_fit_precision_name(c->precision), &f);
  kv_str(b, "bounds_preset", lumen_fit_bounds_preset_name(c->bounds_preset), &f);
  kv_num(b, "allow_failures", c->allow_failures, &f);
  kv_num(b, "fxr_fw", c->fxr_fw, &f);
  kv_num(b, "ci", c->write_ci, &f);
  kv_num(b, "overwrite", c->overwrite, &f);
  kv_num(b, "threads", c->threads, &f);
  kv_num(b, "compress_level", c->compress_level, &f);
  kv_num(b, "chunk", c->chunk_voxels > 0 ? c->chunk_voxels : 65536, &f); /* stage D checkpoint chunk (checkpoint.h) */
  pipe_sb_printf(b, ",\n\t\t\"parameter_overrides\": {");
  int first = 1;
  for (int m = 0; m < LUMEN_MODEL_COUNT; ++m)
    for (int k = 0; k < lumen_fit_param_count((lumen_model)m) && k < LUMEN_FIT_MAX_PARAMS; ++k) {
      if (isnan(c->start[m][k]) && isnan(c->lo[m][k]) && isnan(c->hi[m][k])) continue;
      char key[96];
      snprintf(key, sizeof key, "%s.%s", lumen_model_name((lumen_model)m), lumen_fit_param_name((lumen_model)m, k));
      pipe_sb_printf(b, "%s", first ? "" : ", ");
      pipe_sb_json_str(b, key);
      pipe_sb_printf(b, ": {\"start\": ");
      pipe_sb_json_num(b, c->start[m][k]);
      pipe_sb_printf(b, ", \"lo\": ");
      pipe_sb_json_num(b, c->lo[m][k]);
      pipe_sb_printf(b, ", \"hi\": ");
      pipe_sb_json_num(b, c->hi[m][k]);
      pipe_sb_printf(b, "}");
      first = 0;
    }
  pipe_sb_printf(b, "}\n\t}");
}

/* Entry i of the inputs / outputs lists: {"KEY": value, ["path": path, ]"xxh3_64": checksum}. */
static void file_json(pipe_sb *b, int i, const char *key, const char *value, const char *path, const char *checksum) {
  pipe_sb_printf(b, "%s\n\t\t{\"%s\": ", i ? "," : "", key);
  pipe_sb_json_str(b, value);
  if (path) {
    pipe_sb_printf(b, ", \"path\": ");
    pipe_sb_json_str(b, path);
  }
  pipe_sb_printf(b, ", \"" PIPE_CHECKSUM_KEY "\": ");
  pipe_sb_json_str(b, checksum);
  pipe_sb_printf(b, "}");
}

lumen_status pipe_write_runlog(pipe_run *run) {
  lumen_ctx *ctx = run->ctx;
  /* checksums of what was written */
  for (int i = 0; i < run->n_outputs; ++i)
    if (lumen_pipe_checksum_file(ctx, run->outputs[i].path, run->outputs[i].checksum) != LUMEN_OK)
      snprintf(run->outputs[i].checksum, sizeof run->outputs[i].checksum, "unreadable");
  double total = pipe_now() - run->t_start;
  time_t now = time(NULL);
  struct tm tmv;
  char stamp[64];
  gmtime_r(&now, &tmv);
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tmv);
  pipe_sb b = {0};
  pipe_sb_printf(&b, "{\n\t\"software\": {\"name\": \"lumen\", \"version\": ");
  pipe_sb_json_str(&b, lumen_version());
  pipe_sb_printf(&b, ", \"build\": ");
  pipe_sb_json_str(&b, lumen_build_info());
  pipe_sb_printf(&b, "},\n\t\"command\": ");
  pipe_sb_json_str(&b, run->command);
  pipe_sb_printf(&b, ",\n\t\"command_line\": ");
  if (run->cfg->command_line) pipe_sb_json_str(&b, run->cfg->command_line);
  else pipe_sb_printf(&b, "null");
  pipe_sb_printf(&b, ",\n\t\"finished\": ");
  pipe_sb_json_str(&b, stamp);
  pipe_sb_printf(&b, ",\n\t\"results\": ");
  pipe_sb_json_str(&b, run->sum && run->sum->unreliable ? "unreliable" : "ok");
  pipe_sb_printf(&b, ",\n\t\"warnings\": [");
  int nw = 0;
  char line[1024];
  for (const char *w = pipe_next_warning(run->warnings.s, line, sizeof line); w;
       w = pipe_next_warning(w, line, sizeof line), ++nw) {
    pipe_sb_printf(&b, "%s\n\t\t", nw ? "," : "");
    pipe_sb_json_str(&b, line);
  }
  pipe_sb_printf(&b, "%s],\n\t\"prefix\": ", nw ? "\n\t" : "");
  pipe_sb_json_str(&b, run->prefix);
  pipe_sb_printf(&b, ",\n\t\"checksum_algorithm\": \"" PIPE_CHECKSUM_NAME "\",\n\t\"config\": ");
  config_json(&b, run->cfg);
  pipe_sb_printf(&b, ",\n\t\"inputs\": [");
  for (int i = 0; i < run->n_inputs; ++i)
    file_json(&b, i, "role", run->inputs[i].role, run->inputs[i].path, run->inputs[i].checksum);
  pipe_sb_printf(&b, "\n\t],\n\t\"grid\": {\"dims\": [%lld, %lld, %lld], \"voxels\": %lld, \"masked\": %lld},\n",
                 (long long)run->nx, (long long)run->ny, (long long)run->nz, (long long)run->nvox, (long long)run->n_mask);
  pipe_sb_printf(&b, "\t\"stages\": {%s\n\t},\n\t\"outputs\": [", run->stages.s ? run->stages.s : "");
  for (int i = 0; i < run->n_outputs; ++i)
    file_json(&b, i, "file", run->outputs[i].name, NULL, run->outputs[i].checksum);
  pipe_sb_printf(&b, "\n\t],\n\t\"total_seconds\": %.4f\n}\n", total);
  if (b.oom) { pipe_sb_free(&b); return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "run log: out of memory"); }
  /* validated through the JSON parser, then written atomically after the readable form: the JSON
     run log is the last file of a run, so that a kill between the two never leaves it beside a
     temporary file or without its readable form (--resume and tests/cli/test_resume.sh take its
     presence for a finished run) */
  lumen_json *j = NULL;
  lumen_status st = lumen_json_parse(ctx, b.s, b.n, "run log", &j);
  char name[300], path[LUMEN_PIPE_PATH_MAX];
  /* readable form */
  pipe_sb t = {0};
  pipe_sb_printf(&t, "lumen %s run log (lumen %s), finished %s\nprefix %s, output folder %s\n", run->command,
                 lumen_version(), stamp, run->prefix, run->out);
  if (run->cfg->command_line) pipe_sb_printf(&t, "command line: %s\n", run->cfg->command_line);
  if (run->sum && run->sum->unreliable) pipe_sb_printf(&t, "RESULTS UNRELIABLE: %s\n", run->sum->unreliable_why);
  pipe_sb_printf(&t, "\n");
  pipe_sb_printf(&t, "inputs (XXH3 64-bit checksums):\n");
  for (int i = 0; i < run->n_inputs; ++i)
    pipe_sb_printf(&t, "  %-10s %s  %s\n", run->inputs[i].role, run->inputs[i].checksum, run->inputs[i].path);
  if (run->cfg->config_path) pipe_sb_printf(&t, "config file: %s\n", run->cfg->config_path);
  pipe_sb_printf(&t, "grid %lldx%lldx%lld, %lld voxels, %lld in the mask\n\n%s\noutputs:\n", (long long)run->nx,
                 (long long)run->ny, (long long)run->nz, (long long)run->nvox, (long long)run->n_mask,
                 run->text.s ? run->text.s : "");
  for (int i = 0; i < run->n_outputs; ++i)
    pipe_sb_printf(&t, "  %s  %s\n", run->outputs[i].checksum, run->outputs[i].name);
  pipe_sb_printf(&t, "total %.3f s\n", total);
  snprintf(name, sizeof name, "%s_runlog.txt", run->prefix);
  if (st == LUMEN_OK)
    st = t.oom ? lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "run log: out of memory") : pipe_write_text_file(run, name, t.s);
  pipe_sb_free(&t);
  snprintf(name, sizeof name, "%s_runlog.json", run->prefix);
  pipe_join(path, sizeof path, run->out, name);
  if (st == LUMEN_OK) st = pipe_before_write(run);
  if (st == LUMEN_OK) st = lumen_json_write(ctx, j, path, run->cfg->overwrite);
  lumen_json_free(j);
  pipe_sb_free(&b);
  if (st != LUMEN_OK) return st;
  if (run->sum) snprintf(run->sum->runlog, sizeof run->sum->runlog, "%s", path);
  if (run->sum) run->sum->seconds_total = total;
  return LUMEN_OK;
}
