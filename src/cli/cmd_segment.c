/* lumen segment: a segmentation algorithm (segment.h) on PNG / NIfTI images, one or many at once.
 * The image-command machinery (pairs, --batch, reading/writing, progress, summary) lives in
 * image_cli.c; the algorithms and their options come from the op registry (filter_cli.h). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/filter_cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO /* reads and writes images: not in a build without NIfTI/JSON I/O */

#define CMD "segment"

static void segment_help(FILE *out) {
  fprintf(out,
          "usage: lumen segment ALGO IN OUT [IN OUT ...] [options]\n"
          "       lumen segment ALGO --batch LIST [options]   (LIST: one 'IN OUT' pair per line)\n"
          "\n"
          "Segmentation algorithms (docs/SEGMENTATION.md) on 2-D or 3-D images: PNG (8/16-bit grey),\n"
          "NIfTI or DICOM (.dcm, or a folder of one image or one 3-D series; docs/DICOM.md) in, the output format\n"
          "from the extension. Masks: 8-bit PNG (0/255) or uint8 NIfTI (0/1).\n"
          "\n"
          "algorithms and their options (default), from the op registry (docs/SEGMENTATION.md):\n");
  lumen_opcli_help_ops(out, LUMEN_OP_KIND_SEGMENT, -1);
  fprintf(out,
          "  window: without --center/--width, a DICOM input's own WindowCenter/WindowWidth; grail: -v logs a and b\n"
          "\n"
          "common options:\n"
          "  --device D        cpu, cuda or cuda:N; steps without a CUDA kernel, or a failed device, run on\n"
          "                    the CPU and the summary says why\n"
          LUMEN_IMAGE_CLI_BATCH_HELP
          "  --precision P     full (default), half or bfloat16: storage of float intermediates and results\n"
          "  --threads N       CPU threads (0 = all cores)\n"
          "  --batch LIST      more 'IN OUT' pairs from a file (all inputs must have one shape)\n"
          "  --png-scale clip|minmax   float results written as PNG (default clip)\n"
          LUMEN_IMAGE_CLI_REPORT_HELP
          "  lumen segment febds mammo.png mask.png --method dog\n"
          "  lumen segment kmeans in.nii.gz labels.nii.gz --k 3 --labels\n\n");
  lumen_cli_help_exit_status(out);
}

/* one image of a batch (lumen_imgbatch_fn): the options with the worker's exec (and a DICOM
   input's own window) */
typedef struct seg_job {
  const fvals *f;
  int precision;
  const double *window_from_file; /* window: per input, the DICOM WindowCenter/Width or NaN (NULL: none) */
} seg_job;

typedef struct file_window {
  double center, width;
} file_window;

static void use_file_window(void *opts, void *user) {
  const file_window *w = user;
  ((lumen_window_opts *)opts)->center = w->center;
  ((lumen_window_opts *)opts)->width = w->width;
}

static lumen_status segment_one(void *user, lumen_ctx *ctx, int64_t item, const char *device,
                                lumen_filter_report *rep, const lumen_image *in, lumen_image **out, int *is_mask,
                                int *png_bits, double *scalar) {
  const seg_job *sj = user;
  lumen_filter_exec ex;
  lumen_filter_exec_init(&ex);
  ex.device = device;
  ex.precision = sj->precision;
  ex.report = rep;
  (void)scalar; /* the algorithms' numbers are not printed */
  file_window w = {NAN, NAN};
  if (sj->window_from_file) w = (file_window){sj->window_from_file[2 * item], sj->window_from_file[2 * item + 1]};
  double v;
  lumen_status s = lumen_op_args_run_with(ctx, sj->f->args, &ex, isfinite(w.center) ? use_file_window : NULL, &w,
                                          in, out, &v);
  if (s != LUMEN_OK) return s;
  *is_mask = lumen_opcli_is_mask(sj->f, *out);
  *png_bits = lumen_image_dtype(in) == LUMEN_DTYPE_UINT16 && !*is_mask ? 16 : 8;
  return LUMEN_OK;
}

/* FEBDS's cross check that no single range says: 1, or 0 with the message printed */
static int segment_check_values(const fvals *f) {
  if (strcmp(f->op->name, "febds") != 0) return 1;
  double low = lumen_opcli_value(f, "dog_low_sigma"), high = lumen_opcli_value(f, "dog_high_sigma");
  if (!(high > low)) {
    lumen_cli_error(CMD, "--dog-high-sigma: dog_high_sigma is %g, expected > dog_low_sigma (%g)", high, low);
    return 0;
  }
  return 1;
}

/* The algorithm and every option, before anything is read: LUMEN_EXIT_OK, or LUMEN_EXIT_USAGE
   with the message printed. */
static int segment_parse(lumen_imgcli *c, fvals *f, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] == '-' && a[1]) {
      int r = lumen_imgcli_common(c, argc, argv, &i);
      if (r == 0 && !f->op) {
        lumen_cli_error(CMD, "give the algorithm before its options ('%s')", a);
        return LUMEN_EXIT_USAGE;
      }
      if (r == 0) r = lumen_opcli_opt(CMD, LUMEN_OPCLI_SEGMENT, f, argc, argv, &i);
      if (r < 0) return LUMEN_EXIT_USAGE;
      if (r == 0) {
        lumen_cli_error(CMD, "unknown option '%s' for %s (see 'lumen segment --help')", a, c->op);
        return LUMEN_EXIT_USAGE;
      }
    } else if (!c->op) {
      const lumen_op_info *op = lumen_op_find_kind(LUMEN_OP_KIND_SEGMENT, a);
      if (!op) {
        char names[1024];
        lumen_opcli_op_names(names, sizeof names, LUMEN_OP_KIND_SEGMENT, -1);
        lumen_cli_error(CMD, "unknown algorithm '%s', expected one of %s", a, names);
        return LUMEN_EXIT_USAGE;
      }
      if (!lumen_opcli_begin(CMD, op, f)) return LUMEN_EXIT_FAILURE;
      c->op = op->name;
    } else {
      c->pos[c->npos++] = argv[i];
    }
  }
  if (!c->op) {
    lumen_cli_error(CMD, "no algorithm given (see 'lumen segment --help')");
    return LUMEN_EXIT_USAGE;
  }
  return segment_check_values(f) ? LUMEN_EXIT_OK : LUMEN_EXIT_USAGE;
}

int lumen_cmd_segment_check(int argc, char **argv) {
  lumen_imgcli c;
  fvals f = {0};
  int rc = lumen_imgcli_begin(&c, CMD, argc) ? segment_parse(&c, &f, argc, argv) : LUMEN_EXIT_FAILURE;
  lumen_opcli_free(&f);
  lumen_imgcli_free(&c);
  return rc;
}

int lumen_cmd_segment(int argc, char **argv) {
  lumen_imgcli c;
  fvals f = {0};
  if (!lumen_imgcli_begin(&c, CMD, argc)) return LUMEN_EXIT_FAILURE;
  int rc = LUMEN_EXIT_OK;
  double *win = NULL;
  if (lumen_cli_asks_help(argc, argv)) {
    segment_help(stdout);
    goto out;
  }
  if ((rc = segment_parse(&c, &f, argc, argv)) != LUMEN_EXIT_OK) goto out;
  if ((rc = lumen_imgcli_start(&c, 1)) != LUMEN_EXIT_OK) goto out;
  if (!lumen_imgbatch_check(&c)) {
    rc = LUMEN_EXIT_FAILURE;
    goto out;
  }
  int seed_dims = lumen_op_args_point_dims(f.args);
  if (seed_dims && seed_dims != c.ndim0) {
    lumen_cli_error(CMD, "--seed-point has %d coordinates, expected %d for %s", seed_dims, c.ndim0, c.in[0]);
    rc = LUMEN_EXIT_FAILURE;
    goto out;
  }
  char what[64];
  if (strcmp(f.op->name, "febds") == 0)
    snprintf(what, sizeof what, "febds (%s)", lumen_febds_method_name((lumen_febds_method)lumen_opcli_value(&f, "method")));
  else
    snprintf(what, sizeof what, "%s", f.op->name);
  seg_job sj = {&f, c.precision, NULL};
  if (strcmp(f.op->name, "window") == 0 && isnan(lumen_opcli_value(&f, "center")) &&
      isnan(lumen_opcli_value(&f, "width"))) {
    /* no --center/--width: a DICOM input's own WindowCenter/WindowWidth (its first values) */
    win = malloc(sizeof(double) * 2 * (size_t)c.njobs);
    if (!win) {
      lumen_cli_error(CMD, "out of memory");
      rc = LUMEN_EXIT_FAILURE;
      goto out;
    }
    for (int k = 0; k < c.njobs; k++) {
      win[2 * k] = win[2 * k + 1] = NAN;
      if (lumen_imgcli_dicom_window(&c, c.in[k], &win[2 * k], &win[2 * k + 1]) && c.verbose)
        fprintf(stderr, "lumen segment: %s: window from the DICOM header: WindowCenter %g, WindowWidth %g\n", c.in[k],
                win[2 * k], win[2 * k + 1]);
    }
    sj.window_from_file = win;
  }
  rc = lumen_imgbatch_run(&c, segment_one, &sj, what, "value");
out:
  free(win);
  lumen_opcli_free(&f);
  lumen_imgcli_free(&c);
  return rc;
}
#else
LUMEN_CLI_NO_IO_COMMAND(lumen_cmd_segment_check, "segment")
LUMEN_CLI_NO_IO_COMMAND(lumen_cmd_segment, "segment")
#endif /* LUMEN_HAVE_IO */
