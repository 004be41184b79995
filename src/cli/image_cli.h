/* The image-command machinery shared by `lumen filter` and `lumen segment` (implemented in
   cmd_filter.c): input/output pairs and --batch lists, reading and writing by extension, the
   progress display and the summary line. */
#ifndef LUMEN_CLI_IMAGE_CLI_H
#define LUMEN_CLI_IMAGE_CLI_H

#include "cli/cli.h"
#include "lumen/io.h"

typedef struct lumen_imgcli {
  const char *cmd;          /* "filter" or "segment" */
  const char *op;           /* op / algorithm name */
  int quiet, verbose, overwrite;
  const char *device;       /* NULL = default */
  int precision;            /* LUMEN_FILTER_PRECISION_DEFAULT or a lumen_precision */
  int threads;
  const char *png_scale;    /* "clip" (default) or "minmax" for float outputs written as PNG */
  const char *batch;        /* --batch LIST */
  int npos;
  char **pos;               /* positional arguments after OP */
  int njobs;
  char **in, **out;         /* pairs */
  char *batch_text;         /* storage of the batch file */
  lumen_ctx *ctx;
  double t0;
  int tty;
} lumen_imgcli;

int lumen_imgcli_common(lumen_imgcli *c, int argc, char **argv, int *i);
int lumen_imgcli_jobs(lumen_imgcli *c, int need_out);
void lumen_imgcli_free(lumen_imgcli *c);
int lumen_imgcli_read(lumen_imgcli *c, const char *path, lumen_image **out);
int lumen_imgcli_check_out(lumen_imgcli *c, const char *path, int is3d);
int lumen_imgcli_write(lumen_imgcli *c, const char *path, const lumen_image *img, int is_mask, int png_bits);
void lumen_imgcli_progress(lumen_imgcli *c, int done, int total, const char *name);
void lumen_imgcli_summary(lumen_imgcli *c, const char *what, int nimages, const lumen_filter_report *rep);
int lumen_imgcli_number(const char *cmd, const char *opt, const char *text, double *out);
int lumen_imgcli_int(const char *cmd, const char *opt, const char *text, int *out);
int lumen_imgcli_same_shape(lumen_imgcli *c, lumen_image **imgs, int n);
lumen_ctx *lumen_imgcli_context(lumen_imgcli *c);

#endif
