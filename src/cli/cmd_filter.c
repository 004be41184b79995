/* lumen filter: one filter op on PNG / NIfTI images, one or many at once. The image-command
 * machinery it shares with lumen segment is in image_cli.c; the op options and the op runners
 * are in filter_args.c and filter_run.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/filter_cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO /* reads and writes images: not in a build without NIfTI/JSON I/O */

/* ------------------------------------------------------------------ lumen filter */

#define CMD "filter"

static void filter_help(FILE *out) {
  fprintf(out,
          "usage: lumen filter OP IN OUT [IN OUT ...] [options]\n"
          "       lumen filter OP --batch LIST [options]      (LIST: one 'IN OUT' pair per line, '#' comments)\n"
          "       lumen filter entropy|variance IN [IN ...]   and   lumen filter mutual_information A B\n"
          "\n"
          "Applies one image operation (docs/FILTERS.md) to 2-D or 3-D images. Inputs: PNG (8/16-bit grey),\n"
          "NIfTI (.nii, .nii.gz) or DICOM (.dcm, or a folder of one image or one 3-D series; docs/DICOM.md: modality\n"
          "LUT applied, MONOCHROME1 inverted, PixelSpacing kept, multi-frame = 3-D); the output format\n"
          "follows the extension (PNG or NIfTI). Masks are written as 8-bit\n"
          "PNG (0/255) or uint8 NIfTI (0/1); float results as float32 NIfTI or PNG (--png-scale).\n"
          "\n"
          "ops and their options (default), from the op registry (docs/FILTERS.md; [CPU]: no CUDA kernel):\n");
  lumen_opcli_help_ops(out, LUMEN_OP_KIND_FILTER, LUMEN_OP_KIND_STATISTIC);
  fprintf(out,
          "  modes: reflect, nearest, constant, wrap, mirror; '-' and '_' are one in names\n"
          "\n"
          "common options:\n"
          "  --device D        cpu, cuda or cuda:N (default: the context default, cpu); ops without a CUDA\n"
          "                    kernel, or a failed device, rerun on the CPU and the summary says why\n"
          LUMEN_IMAGE_CLI_BATCH_HELP
          "  --precision P     full (default), half or bfloat16: storage of float results (NIfTI files keep\n"
          "                    float32)\n"
          "  --threads N       CPU threads (0 = all cores)\n"
          "  --batch LIST      more 'IN OUT' pairs from a file (all inputs must have one shape)\n"
          "  --png-scale clip|minmax   float results written as PNG: rounded and clipped (default) or\n"
          "                    stretched to the full range\n"
          LUMEN_IMAGE_CLI_REPORT_HELP
          "  lumen filter gaussian in.nii.gz out.nii.gz --sigma 2 --mode reflect\n"
          "  lumen filter median mammo.png med.png --size 5\n"
          "  lumen filter otsu in.png mask.png\n\n");
  lumen_cli_help_exit_status(out);
}

/* one image of a batch (lumen_imgbatch_fn): the op on the worker's device */
typedef struct filter_job {
  const fvals *f;
  int precision;
} filter_job;

static lumen_status filter_one(void *user, lumen_ctx *ctx, int64_t item, const char *device, lumen_filter_report *rep,
                               const lumen_image *in, lumen_image **out, int *is_mask, int *png_bits, double *scalar) {
  (void)item;
  const filter_job *fj = user;
  lumen_filter_exec ex;
  lumen_filter_exec_init(&ex);
  ex.device = device;
  ex.precision = fj->precision;
  ex.report = rep;
  lumen_status s = lumen_filtercli_run(ctx, fj->f, ex, in, out, is_mask, scalar);
  *png_bits = lumen_image_dtype(in) == LUMEN_DTYPE_UINT16 ? 16 : 8;
  if (s == LUMEN_OK && lumen_image_dtype(*out) == LUMEN_DTYPE_INT32) *png_bits = 16;
  return s;
}

/* --memory-limit holds for the statistics too: the header decides before the voxels are read
   (and a FIFO is refused, not waited on). */
static int stats_input_fits(lumen_imgcli *c, const char *path) {
  int nd = 0, elem = 4;
  int64_t d[4] = {1, 1, 1, 1};
  if (c->memory_limit <= 0) return 1;
  if (!lumen_imgbatch_shape(c, path, &nd, d, &elem)) return 0;
  lumen_imgbatch_set_shape(c, nd, d, elem);
  return lumen_imgbatch_fits(c, path, c->threads > 0 ? c->threads : lumen_ctx_threads(c->ctx));
}

/* One result line on stdout; 0 (message printed) when it cannot be written (/dev/full, a
   closed pipe): the run stops there instead of computing results nobody receives. */
static int stats_line(lumen_imgcli *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int stats_line(lumen_imgcli *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vprintf(fmt, ap);
  va_end(ap);
  if (n >= 0 && !ferror(stdout)) return 1;
  (void)lumen_cli_finish_stdout(c->cmd); /* prints the reason */
  return 0;
}

static int stats_ops(lumen_imgcli *c, const fvals *f, lumen_filter_exec ex) {
  lumen_stats_opts o = *(const lumen_stats_opts *)lumen_op_args_opts(f->args);
  o.exec = ex;
  lumen_filter_report rep;
  o.exec.report = &rep;
  memset(&rep, 0, sizeof rep);
  int mi = strcmp(c->op, "mutual_information") == 0;
  if (mi && c->njobs != 2) {
    lumen_cli_error(CMD, "mutual_information needs two inputs A B, got %d", c->njobs);
    return LUMEN_EXIT_USAGE;
  }
  lumen_image *imgs[2] = {NULL, NULL};
  int rc = LUMEN_EXIT_OK;
  for (int k = 0; k < c->njobs && rc == LUMEN_EXIT_OK; k++) {
    lumen_image *im = NULL;
    if (!stats_input_fits(c, c->in[k]) || !lumen_imgcli_read(c, c->in[k], &im)) {
      rc = LUMEN_EXIT_FAILURE;
      break;
    }
    lumen_status s = LUMEN_OK;
    if (mi) {
      imgs[k] = im;
      im = NULL;
      if (k == 1) {
        lumen_mi_result r;
        s = lumen_filter_mutual_information(c->ctx, imgs[0], imgs[1], &o, &r);
        if (s == LUMEN_OK &&
            !stats_line(c, "%s %s: mutual information %.10g bits (H(A) %.10g, H(B) %.10g, H(A,B) %.10g)\n", c->in[0],
                        c->in[1], r.mutual_information, r.entropy_a, r.entropy_b, r.joint_entropy))
          rc = LUMEN_EXIT_FAILURE;
      }
    } else if (strcmp(c->op, "entropy") == 0) {
      double e = 0;
      s = lumen_filter_entropy(c->ctx, im, &o, &e);
      if (s == LUMEN_OK && !stats_line(c, "%s: entropy %.10g bits\n", c->in[k], e)) rc = LUMEN_EXIT_FAILURE;
    } else {
      double mean = 0, var = 0;
      s = lumen_filter_variance(c->ctx, im, &o, &mean, &var);
      if (s == LUMEN_OK && !stats_line(c, "%s: mean %.10g variance %.10g\n", c->in[k], mean, var))
        rc = LUMEN_EXIT_FAILURE;
    }
    lumen_image_free(im);
    if (s != LUMEN_OK) {
      lumen_cli_error(CMD, "%s: %s", c->in[k], lumen_ctx_last_error(c->ctx));
      rc = LUMEN_EXIT_FAILURE;
    }
  }
  lumen_image_free(imgs[0]);
  lumen_image_free(imgs[1]);
  /* the last lines may sit in stdout's buffer: a full disk shows only at the flush */
  if (rc == LUMEN_EXIT_OK) rc = lumen_cli_finish_stdout(CMD);
  if (rc == LUMEN_EXIT_OK) lumen_imgcli_summary(c, c->op, c->njobs, &rep);
  return rc;
}

/* The op (a filter or statistic of the registry, by name or alias) and every option, before
   anything is read: LUMEN_EXIT_OK, or LUMEN_EXIT_USAGE with the message printed. */
static int filter_parse(lumen_imgcli *c, fvals *f, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] == '-' && a[1]) {
      int r = lumen_imgcli_common(c, argc, argv, &i);
      if (r == 0 && !f->op) {
        lumen_cli_error(CMD, "give the op before its options ('%s')", a);
        return LUMEN_EXIT_USAGE;
      }
      if (r == 0) r = lumen_opcli_opt(CMD, LUMEN_OPCLI_FILTER, f, argc, argv, &i);
      if (r < 0) return LUMEN_EXIT_USAGE;
      if (r == 0) {
        lumen_cli_error(CMD, "unknown option '%s' for %s (see 'lumen filter --help')", a, f->op->name);
        return LUMEN_EXIT_USAGE;
      }
    } else if (!c->op) {
      const lumen_op_info *op = lumen_op_find_kind(LUMEN_OP_KIND_FILTER, a);
      if (!op) op = lumen_op_find_kind(LUMEN_OP_KIND_STATISTIC, a);
      if (!op) {
        char names[1024];
        lumen_opcli_op_names(names, sizeof names, LUMEN_OP_KIND_FILTER, LUMEN_OP_KIND_STATISTIC);
        lumen_cli_error(CMD, "unknown op '%s', expected one of: %s", a, names);
        return LUMEN_EXIT_USAGE;
      }
      if (!lumen_opcli_begin(CMD, op, f)) return LUMEN_EXIT_FAILURE;
      c->op = op->name;
    } else {
      c->pos[c->npos++] = argv[i];
    }
  }
  if (!c->op) {
    lumen_cli_error(CMD, "no op given (see 'lumen filter --help')");
    return LUMEN_EXIT_USAGE;
  }
  return lumen_filtercli_check_values(f) ? LUMEN_EXIT_OK : LUMEN_EXIT_USAGE;
}

int lumen_cmd_filter_check(int argc, char **argv) {
  lumen_imgcli c;
  fvals f = {0};
  int rc = lumen_imgcli_begin(&c, CMD, argc) ? filter_parse(&c, &f, argc, argv) : LUMEN_EXIT_FAILURE;
  lumen_opcli_free(&f);
  lumen_imgcli_free(&c);
  return rc;
}

int lumen_cmd_filter(int argc, char **argv) {
  lumen_imgcli c;
  fvals f = {0};
  if (!lumen_imgcli_begin(&c, CMD, argc)) return LUMEN_EXIT_FAILURE;
  int rc = LUMEN_EXIT_OK;
  if (lumen_cli_asks_help(argc, argv)) {
    filter_help(stdout);
    goto out;
  }
  if ((rc = filter_parse(&c, &f, argc, argv)) != LUMEN_EXIT_OK) goto out;
  int stats = f.op->kind == LUMEN_OP_KIND_STATISTIC;
  if ((rc = lumen_imgcli_start(&c, !stats)) != LUMEN_EXIT_OK) goto out;
  lumen_filter_exec ex;
  lumen_filter_exec_init(&ex);
  ex.device = c.device;
  ex.precision = c.precision;
  if (stats) { /* one image at a time, on the first device of a list */
    if (c.device && lumen_dist_devices_parse(c.ctx, c.device, &c.devs) == LUMEN_OK) ex.device = c.devs.name[0];
    rc = stats_ops(&c, &f, ex);
    goto out;
  }
  /* headers first: a batch must have one shape, and outputs are checked before any work */
  if (!lumen_imgbatch_check(&c)) {
    rc = LUMEN_EXIT_FAILURE;
    goto out;
  }
  filter_job fj = {&f, c.precision};
  rc = lumen_imgbatch_run(&c, filter_one, &fj, c.op, f.op->scalar);
out:
  lumen_opcli_free(&f);
  lumen_imgcli_free(&c);
  return rc;
}
#else
LUMEN_CLI_NO_IO_COMMAND(lumen_cmd_filter_check, "filter")
LUMEN_CLI_NO_IO_COMMAND(lumen_cmd_filter, "filter")
#endif /* LUMEN_HAVE_IO */
