/* The outputs of a run: the overwrite rule, the list of files written, text files, warnings. */
#include <stdarg.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "io/io_internal.h"
#include "pipeline/pipe_outputs.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_strbuf.h"
#include "pipeline/pipe_util.h"

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
