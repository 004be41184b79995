/* Where lumen fit writes its CSV: standard output or an atomic file under --out; fit_cli.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO
#include "cli/fit_cli.h"
#include "lumen/io.h"

#define CMD "fit"

/* Refuses --out before any input is read: an existing name without --overwrite, and anything but
   a regular file even with it (a symlink, FIFO, device node or folder is never replaced). The
   atomic writer checks again when it opens and right before its rename. */
int lumen_fitcli_out_allowed(const char *path, int overwrite) {
  struct stat st;
  if (lstat(path, &st) != 0) return 0;
  if (!S_ISREG(st.st_mode)) {
    lumen_cli_error(CMD, "--out '%s' is %s: only a regular file is ever replaced (choose another name)", path,
                    lumen_io_kind_name((unsigned)st.st_mode));
    return -1;
  }
  if (!overwrite) {
    lumen_cli_error(CMD, "--out '%s' exists: not replaced without --overwrite (add --overwrite to replace it, or "
                         "choose another name)", path);
    return -1;
  }
  return 0;
}

int lumen_fitcli_csv_open(lumen_fitcli_csv *k, lumen_ctx *ctx, const char *path, int overwrite) {
  k->ctx = ctx;
  if (!path) return 0;
  char *dir = strdup(path);
  if (dir) {
    char *slash = strrchr(dir, '/');
    if (slash) slash[slash == dir] = '\0'; /* "/x.csv" -> "/" */
    (void)lumen_io_remove_stale_temporaries(slash ? dir : "."); /* a killed run's leftovers */
    free(dir);
  }
  if (lumen_atomic_open(ctx, path, overwrite, 0, &k->file) != LUMEN_OK) {
    lumen_cli_error(CMD, "--out: %s", lumen_ctx_last_error(ctx));
    return -1;
  }
  return 0;
}

void lumen_fitcli_csv_printf(lumen_fitcli_csv *k, const char *fmt, ...) {
  if (k->failed) return;
  char buf[256]; /* one value or one column name */
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof buf) {
    lumen_cli_error(CMD, "internal error: a CSV field of %d characters", n);
    k->failed = 1;
    return;
  }
  if (!k->file) {
    if (fputs(buf, stdout) == EOF) k->failed = 1; /* reported by lumen_cli_finish_stdout */
    return;
  }
  if (lumen_atomic_write(k->file, buf, (size_t)n) != LUMEN_OK) {
    lumen_cli_error(CMD, "--out: %s", lumen_ctx_last_error(k->ctx));
    k->failed = 1;
  }
}

/* Renames the file into place, or checks every write to standard output; 0 when all is written. */
int lumen_fitcli_csv_close(lumen_fitcli_csv *k) {
  if (!k->file) {
    if (lumen_cli_finish_stdout(CMD) != LUMEN_EXIT_OK) return -1; /* it printed why */
    if (k->failed) lumen_cli_error(CMD, "writing standard output failed (the output is incomplete)");
    return k->failed ? -1 : 0;
  }
  if (k->failed) return -1; /* the writer already removed its temporary file */
  lumen_atomic_file *f = k->file;
  k->file = NULL;
  if (lumen_atomic_commit(f) != LUMEN_OK) {
    lumen_cli_error(CMD, "--out: %s", lumen_ctx_last_error(k->ctx));
    return -1;
  }
  return 0;
}
#endif
