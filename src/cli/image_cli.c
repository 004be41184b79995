/* The image-command machinery of `lumen filter` and `lumen segment` (and their batches,
 * filter_batch_cli.c), written once: the command state and its start, input/output pairs and --batch
 * lists, reading and writing by extension, the progress display and the summary line (the
 * lumen_imgcli_* functions, declared in image_cli.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/image_cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO /* reads and writes images: not in a build without NIfTI/JSON I/O */

/* Library errors are printed by the command with the file name; the log adds warnings only. */
static void imgcli_log(void *user, lumen_log_level level, const char *message) {
  lumen_imgcli *c = user;
  if (level == LUMEN_LOG_ERROR) return;
  if (c->quiet && level != LUMEN_LOG_WARNING) return;
  static const char *const names[] = {"error", "warning", "info", "debug"};
  fprintf(stderr, "%slumen %s: %s: %s\n", c->tty && !c->quiet ? "\r\033[K" : "", c->cmd, names[level], message);
}

lumen_ctx *lumen_imgcli_worker_context(lumen_imgcli *c, int threads) {
  lumen_ctx *ctx = lumen_cli_context(c->cmd, c->verbose);
  if (!ctx) return NULL;
  lumen_ctx_set_log(ctx, imgcli_log, c, c->verbose ? LUMEN_LOG_DEBUG : LUMEN_LOG_WARNING);
  if (threads > 0) lumen_ctx_set_threads(ctx, threads);
  return ctx;
}

lumen_ctx *lumen_imgcli_context(lumen_imgcli *c) {
  c->ctx = lumen_cli_context(c->cmd, c->verbose);
  if (!c->ctx) return NULL;
  lumen_ctx_set_log(c->ctx, imgcli_log, c, c->verbose ? LUMEN_LOG_DEBUG : LUMEN_LOG_WARNING);
  if (c->threads > 0) lumen_ctx_set_threads(c->ctx, c->threads);
  c->tty = isatty(2);
  c->t0 = lumen_cli_now();
  return c->ctx;
}

int lumen_imgcli_number(const char *cmd, const char *opt, const char *text, double *out) {
  char *end = NULL;
  errno = 0;
  double v = text ? strtod(text, &end) : 0;
  if (!text || end == text || *end || errno == ERANGE) {
    lumen_cli_error(cmd, "%s expects a number, got '%s'", opt, text ? text : "");
    return 0;
  }
  *out = v;
  return 1;
}

int lumen_imgcli_int(const char *cmd, const char *opt, const char *text, int *out) {
  char *end = NULL;
  errno = 0;
  long v = text ? strtol(text, &end, 10) : 0;
  if (!text || end == text || *end || errno == ERANGE || v < -2147483647L || v > 2147483647L) {
    lumen_cli_error(cmd, "%s expects an integer, got '%s'", opt, text ? text : "");
    return 0;
  }
  *out = (int)v;
  return 1;
}

int lumen_imgcli_require(const char *cmd, int ok, const char *opt, double value, const char *expected) {
  if (!ok) lumen_cli_error(cmd, "%s is %g, expected %s", opt, value, expected);
  return ok;
}

/* Options every image command has. Returns 1 when argv[*i] was one (value consumed), 0 when it
   is not, -1 on a bad value (message printed). */
int lumen_imgcli_common(lumen_imgcli *c, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
#define NEEDV()                                                        \
  do {                                                                 \
    if (!v) {                                                          \
      lumen_cli_error(c->cmd, "%s needs a value (see --help)", a);     \
      return -1;                                                       \
    }                                                                  \
    (*i)++;                                                            \
  } while (0)
  if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
    c->quiet = 1;
  } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
    c->verbose = 1;
  } else if (strcmp(a, "--overwrite") == 0) {
    c->overwrite = 1;
  } else if (strcmp(a, "--device") == 0) {
    NEEDV();
    lumen_dist_devices d; /* the syntax only: cuda:all is probed when the batch runs */
    if (lumen_dist_devices_expand(NULL, v, 1, NULL, &d) != LUMEN_OK) {
      lumen_cli_error(c->cmd,
                      "--device is '%s', expected cpu, cuda or cuda:N, cuda:all, or a comma list of them "
                      "(cpu,cpu = two CPU workers; cuda:0,cuda:1)",
                      v);
      return -1;
    }
    c->device = v;
  } else if (strcmp(a, "--memory-limit") == 0) {
    NEEDV();
    c->memory_limit = lumen_cli_parse_size(v);
    if (c->memory_limit < 0) {
      lumen_cli_error(c->cmd, "--memory-limit is '%s', expected a size such as 512M, 2G or 1000000 (bytes)", v);
      return -1;
    }
  } else if (strcmp(a, "--no-overlap") == 0) {
    c->no_overlap = 1;
  } else if (strcmp(a, "--precision") == 0) {
    NEEDV();
    lumen_precision p;
    if (strcmp(v, "float32") == 0) v = "full";
    if (strcmp(v, "float16") == 0) v = "half";
    if (lumen_precision_parse(v, &p) != LUMEN_OK) {
      lumen_cli_error(c->cmd, "--precision is '%s', expected full, half or bfloat16", v);
      return -1;
    }
    c->precision = (int)p;
  } else if (strcmp(a, "--threads") == 0) {
    NEEDV();
    if (!lumen_imgcli_int(c->cmd, a, v, &c->threads)) return -1;
    if (c->threads < 0 || c->threads > LUMEN_MAX_THREADS) {
      lumen_cli_error(c->cmd, "--threads is %d, expected 0 (all cores) to %d", c->threads, LUMEN_MAX_THREADS);
      return -1;
    }
  } else if (strcmp(a, "--batch") == 0) {
    NEEDV();
    c->batch = v;
  } else if (strcmp(a, "--png-scale") == 0) {
    NEEDV();
    if (strcmp(v, "clip") != 0 && strcmp(v, "minmax") != 0) {
      lumen_cli_error(c->cmd, "--png-scale is '%s', expected clip or minmax", v);
      return -1;
    }
    c->png_scale = v;
  } else {
    return 0;
  }
  return 1;
#undef NEEDV
}

static int push_job(lumen_imgcli *c, char *in, char *out) {
  char **ni = realloc(c->in, (size_t)(c->njobs + 1) * sizeof *ni);
  if (!ni) return 0;
  c->in = ni;
  char **no = realloc(c->out, (size_t)(c->njobs + 1) * sizeof *no);
  if (!no) return 0;
  c->out = no;
  c->in[c->njobs] = in;
  c->out[c->njobs] = out;
  c->njobs++;
  return 1;
}

/* The jobs of the --batch LIST file: 1 when read, 0 with a message (the file is missing,
   unreadable or malformed; out of memory). */
static int batch_jobs(lumen_imgcli *c, int need_out) {
  int step = need_out ? 2 : 1;
  /* a regular file only: a FIFO or device as the list is refused, not waited on */
  lumen_ctx *ctx = NULL; /* no log: the message is printed once, here */
  (void)lumen_ctx_create(&ctx);
  lumen_status st = ctx ? lumen_text_file_read(ctx, c->batch, 0, &c->batch_text, NULL) : LUMEN_ERR_OUT_OF_MEMORY;
  if (st != LUMEN_OK) {
    lumen_cli_error(c->cmd, "--batch: %s", ctx ? lumen_ctx_last_error(ctx) : "out of memory");
    lumen_ctx_destroy(ctx);
    return 0;
  }
  lumen_ctx_destroy(ctx);
  int line = 0;
  for (char *p = c->batch_text; p && *p;) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = 0;
    line++;
    char *hash = strchr(p, '#');
    if (hash) *hash = 0;
    char *tok[3] = {NULL, NULL, NULL};
    int nt = 0;
    for (char *q = strtok(p, " \t\r"); q; q = strtok(NULL, " \t\r")) {
      if (nt < 3) tok[nt] = q;
      nt++;
    }
    if (nt != 0 && nt != step) {
      lumen_cli_error(c->cmd, "--batch %s:%d: expected %s per line, got %d field(s)", c->batch, line,
                      need_out ? "'IN OUT'" : "'IN'", nt);
      return 0;
    }
    if (nt && !push_job(c, tok[0], need_out ? tok[1] : NULL)) return 0;
    p = nl ? nl + 1 : NULL;
  }
  return 1;
}

int lumen_imgcli_jobs(lumen_imgcli *c, int need_out) {
  int step = need_out ? 2 : 1;
  if (need_out && c->npos % 2 != 0) {
    lumen_cli_error(c->cmd, "'%s' has no output: give IN OUT pairs (or --batch LIST)", c->pos[c->npos - 1]);
    return LUMEN_EXIT_USAGE;
  }
  if (c->njobs == 0 && c->npos == 0 && !c->batch) {
    lumen_cli_error(c->cmd, "no input: give %s or --batch LIST (see 'lumen %s --help')", need_out ? "IN OUT" : "IN",
                    c->cmd);
    return LUMEN_EXIT_USAGE;
  }
  for (int k = 0; k + step - 1 < c->npos; k += step)
    if (!push_job(c, c->pos[k], need_out ? c->pos[k + 1] : NULL)) return LUMEN_EXIT_FAILURE;
  if (c->batch && !batch_jobs(c, need_out)) return LUMEN_EXIT_FAILURE;
  if (c->njobs == 0) { /* a --batch LIST without a line of work */
    lumen_cli_error(c->cmd, "--batch %s: no %s line", c->batch, need_out ? "'IN OUT'" : "'IN'");
    return LUMEN_EXIT_FAILURE;
  }
  return LUMEN_EXIT_OK;
}

void lumen_imgcli_free(lumen_imgcli *c) {
  lumen_imgcli_dicom_free(c);
  free(c->in);
  free(c->out);
  free(c->batch_text);
  free(c->pos);
  lumen_ctx_destroy(c->ctx);
}

/* The format an output's name asks for (the io table), LUMEN_IMAGE_FORMAT_UNKNOWN when lumen does
   not write it. */
static int output_format(const char *path, lumen_format_info *f) {
  int format = lumen_image_format_of_name(path, f);
  return f->can_write ? format : LUMEN_IMAGE_FORMAT_UNKNOWN;
}

/* ".png, .nii or .nii.gz": the suffixes of the formats lumen writes (holding 3-D images: is3d). */
static void output_suffixes(int is3d, char *buf, size_t size) {
  size_t used = 0;
  char all[128] = "";
  for (int k = 0; k < lumen_image_format_count(); k++) {
    lumen_format_info f;
    if (lumen_image_format_get(k, &f) != LUMEN_OK || !f.can_write) continue;
    if (is3d && !(f.holds & LUMEN_FORMAT_HOLDS_3D)) continue;
    used += (size_t)snprintf(all + used, used < sizeof all ? sizeof all - used : 0, "%s%s", used ? " " : "", f.suffixes);
  }
  /* "a b c" -> "a, b or c" */
  buf[0] = 0;
  int n = 0, words = all[0] != 0;
  for (const char *p = all; *p; p++) words += *p == ' ';
  for (char *tok = strtok(all, " "); tok; tok = strtok(NULL, " ")) {
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s%s", n == 0 ? "" : n == words - 1 ? " or " : ", ", tok);
    n++;
  }
}

int lumen_imgcli_read(lumen_imgcli *c, const char *path, lumen_image **out) {
  return lumen_imgcli_read_with(c, c->ctx, path, out);
}

/* An input of any format of the io table (lumen_image_read_any), 2-D or 3-D; DICOM through
   image_dicom.c (its images may have been decoded before the threads started). */
int lumen_imgcli_read_with(lumen_imgcli *c, lumen_ctx *ctx, const char *path, lumen_image **out) {
  *out = NULL;
  lumen_format_info f;
  lumen_status s = lumen_image_probe(ctx, path, &f);
  if (s == LUMEN_OK && (f.format == LUMEN_IMAGE_FORMAT_DICOM || f.format == LUMEN_IMAGE_FORMAT_DICOM_FOLDER))
    return lumen_imgcli_read_dicom(c, ctx, path, out);
  if (s == LUMEN_OK) {
    lumen_image_read_opts o = {.format = f.format, .max_ndim = 3};
    s = lumen_image_read_any(ctx, path, &o, out, NULL);
  }
  if (s != LUMEN_OK) {
    lumen_cli_error(c->cmd, "%s: %s", path, lumen_ctx_last_error(ctx));
    return 0;
  }
  return 1;
}

/* Refuses an output that exists (without --overwrite) or has an unknown extension, before any work. */
int lumen_imgcli_check_out(lumen_imgcli *c, const char *path, int is3d) {
  lumen_format_info f;
  int k = output_format(path, &f);
  char expected[96];
  if (!k) {
    output_suffixes(0, expected, sizeof expected);
    lumen_cli_error(c->cmd, "%s: unknown output type, expected %s", path, expected);
    return 0;
  }
  if (is3d && !(f.holds & LUMEN_FORMAT_HOLDS_3D)) {
    char name[16];
    size_t n = 0;
    for (; f.name[n] && n + 1 < sizeof name; n++) name[n] = (char)toupper((unsigned char)f.name[n]);
    name[n] = 0;
    output_suffixes(1, expected, sizeof expected);
    lumen_cli_error(c->cmd, "%s: a 3-D result cannot be a %s, expected %s", path, name, expected);
    return 0;
  }
  struct stat st;
  if (!c->overwrite && stat(path, &st) == 0) {
    lumen_cli_error(c->cmd, "%s exists: not replaced without --overwrite", path);
    return 0;
  }
  return 1;
}

/* Writes by extension. Masks (uint8 0/1): PNG 0/255, NIfTI uint8 0/1. png_bits: 8 or 16 for
   non-mask images (0 = by type). */
int lumen_imgcli_write(lumen_imgcli *c, const char *path, const lumen_image *img, int is_mask, int png_bits) {
  return lumen_imgcli_write_with(c, c->ctx, path, img, is_mask, png_bits);
}

int lumen_imgcli_write_with(lumen_imgcli *c, lumen_ctx *ctx, const char *path, const lumen_image *img, int is_mask,
                            int png_bits) {
  lumen_status s;
  lumen_image *host = NULL, *scaled = NULL;
  const lumen_image *w = img;
  if (lumen_image_device(img).kind != LUMEN_DEVICE_CPU) {
    s = lumen_image_to_device(ctx, img, lumen_device_cpu(), &host);
    if (s != LUMEN_OK) {
      lumen_cli_error(c->cmd, "%s: %s", path, lumen_ctx_last_error(ctx));
      return 0;
    }
    w = host;
  }
  lumen_format_info f;
  lumen_png_write_opts po = {
      .bit_depth = png_bits,
      .scaling = c->png_scale && strcmp(c->png_scale, "minmax") == 0 ? LUMEN_PNG_SCALE_MINMAX : LUMEN_PNG_SCALE_CLIP};
  lumen_nifti_write_opts no = {.description = "lumen"};
  s = LUMEN_OK;
  if (is_mask && output_format(path, &f) == LUMEN_IMAGE_FORMAT_PNG) { /* a mask as PNG: 0/255, 8 bit */
    s = lumen_image_clone(ctx, w, &scaled);
    if (s == LUMEN_OK) {
      uint8_t *p = lumen_image_data(scaled);
      for (int64_t i = 0; i < lumen_image_count(scaled); i++) p[i] = p[i] ? 255 : 0;
      w = scaled;
    }
    po.bit_depth = 8;
    po.scaling = LUMEN_PNG_SCALE_CLIP;
  }
  lumen_image_write_opts o = {.overwrite = c->overwrite, .png = &po, .nifti = &no};
  if (s == LUMEN_OK) s = lumen_image_write_any(ctx, path, w, &o);
  lumen_image_free(host);
  lumen_image_free(scaled);
  if (s != LUMEN_OK) {
    lumen_cli_error(c->cmd, "%s: %s", path, lumen_ctx_last_error(ctx));
    return 0;
  }
  return 1;
}

void lumen_imgcli_progress(lumen_imgcli *c, int done, int total, const char *name) {
  if (c->quiet) return;
  if (c->tty) {
    int width = 30, fill = total ? done * width / total : width;
    fprintf(stderr, "\r\033[K[");
    for (int k = 0; k < width; k++) fputc(k < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %d/%d %s", done, total, name ? name : "");
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
  } else if (done > 0) {
    fprintf(stderr, "lumen %s: %d/%d %s\n", c->cmd, done, total, name ? name : "");
  }
}

void lumen_imgcli_summary(lumen_imgcli *c, const char *what, int nimages, const lumen_filter_report *rep) {
  if (c->quiet) return;
  char req[1200] = "cpu", used[1024] = "cpu";
  lumen_device_format(rep->requested, req, sizeof req);
  lumen_device_format(rep->used, used, sizeof used);
  int fell_back = rep->fell_back;
  const char *reason = rep->reason;
  if (c->device && (c->devs.n > 1 || c->devs.fell_back || strchr(c->device, ',') || strstr(c->device, ":all"))) {
    /* several workers (or cuda:all): the list as given, the workers, every device used */
    char names[1024];
    lumen_dist_devices_format(&c->devs, names, sizeof names);
    snprintf(req, sizeof req, "%s (%d worker%s: %s)", c->device, c->devs.n, c->devs.n == 1 ? "" : "s", names);
    if (c->used_list[0]) snprintf(used, sizeof used, "%s", c->used_list);
    if (c->devs.fell_back) {
      fell_back = 1;
      reason = c->devs.reason;
    }
  }
  fprintf(stderr, "lumen %s: %s, %d image%s: device requested %s, used %s, %s%s, precision %s, %.3f s\n", c->cmd,
          what, nimages, nimages == 1 ? "" : "s", req, used, fell_back ? "fallback: " : "no fallback",
          fell_back ? reason : "", lumen_precision_name(rep->precision), lumen_cli_now() - c->t0);
}

int lumen_imgcli_same_shape(lumen_imgcli *c, lumen_image **imgs, int n) {
  for (int k = 1; k < n; k++) {
    int same = lumen_image_ndim(imgs[k]) == lumen_image_ndim(imgs[0]);
    for (int a = 0; a < 4 && same; a++) same = lumen_image_dim(imgs[k], a) == lumen_image_dim(imgs[0], a);
    if (!same) {
      lumen_cli_error(c->cmd, "%s is %lldx%lldx%lld, expected the shape of %s (%lldx%lldx%lld): a batch needs one shape",
                      c->in[k], (long long)lumen_image_dim(imgs[k], 0), (long long)lumen_image_dim(imgs[k], 1),
                      (long long)lumen_image_dim(imgs[k], 2), c->in[0], (long long)lumen_image_dim(imgs[0], 0),
                      (long long)lumen_image_dim(imgs[0], 1), (long long)lumen_image_dim(imgs[0], 2));
      return 0;
    }
  }
  return 1;
}

/* ------------------------------------------------------------------ the start of a command */

int lumen_imgcli_begin(lumen_imgcli *c, const char *cmd, int argc) {
  memset(c, 0, sizeof *c);
  c->cmd = cmd;
  c->precision = LUMEN_FILTER_PRECISION_DEFAULT;
  c->pos = calloc((size_t)argc + 1, sizeof *c->pos);
  return c->pos != NULL;
}

int lumen_imgcli_start(lumen_imgcli *c, int need_out) {
  int rc = lumen_imgcli_jobs(c, need_out);
  if (rc != LUMEN_EXIT_OK) return rc;
  return lumen_imgcli_context(c) ? LUMEN_EXIT_OK : LUMEN_EXIT_FAILURE;
}
#endif /* LUMEN_HAVE_IO */
