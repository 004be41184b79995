/* lumen convert SRC... --out DIR: DICOM files or folders to one NIfTI and one BIDS JSON sidecar
   per series (docs/DICOM.md "lumen convert"), through the series reader that lumen dce, t1 and
   filter use, so that a user can open in any viewer exactly what lumen read. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_IO
#include "lumen/io.h"

#define MAX_PICKS 64

static const char *cmd = "convert";

static void help(FILE *out) {
  fprintf(out,
          "usage: lumen convert SRC... --out DIR [options]\n"
          "       lumen convert SRC... --list\n\n"
          "DICOM files or folders (searched recursively) to one NIfTI and one BIDS JSON sidecar per\n"
          "series, read as lumen dce, t1 and filter read them (docs/DICOM.md): slices by position,\n"
          "frames by the first timing source that orders them (trigger time, temporal position,\n"
          "acquisition time, content time, frame reference time, instance number), Siemens mosaics\n"
          "and enhanced multi-frame files. dcm2niix's voxel order and affine.\n\n"
          "options:\n"
          "  --out DIR            output folder (made when missing)\n"
          "  --series UID|NUMBER  convert only this series (SeriesInstanceUID or SeriesNumber); repeatable\n"
          "  --list               list the series (number, UID, description, files) and stop\n"
          "  --uncompressed       write .nii instead of .nii.gz\n"
          "  --overwrite          replace existing outputs (never through a symbolic link)\n"
          "  --memory-limit SIZE  largest file and series to read (e.g. 4G)\n"
          "  -v, --verbose        log each series' timing sources;  -q, --quiet: no summary lines\n\n"
          "Names: SERIESNUMBER_DESCRIPTION.nii.gz (+ .json); a series of several echoes, magnitude and phase,\n"
          "or several orientations (a localizer) gives one image per part, named as dcm2niix names them\n"
          "(_e1, _e2, _ph, _real, _imaginary, _i00001); '_2', '_3'... when two series share a name.\n"
          "The sidecar holds FlipAngle, RepetitionTime (s, the DICOM TR), FrameTimesStart (s) when the\n"
          "headers time the frames, FrameOrder / FrameTimesSource / FrameTimingNote, and the usual BIDS\n"
          "fields. Voxels are stored as int16 or uint16 when every value is an integer in range, else float32.\n\n"
          "exit status: 0 every series converted (DICOM files that are not images lumen reads, such as a\n"
          "DICOMDIR or a report, are skipped with a warning), 1 a series or an input could not be read or\n"
          "written (the others are still converted), 2 usage error.\n");
}

typedef struct convert_args {
  const char **src;
  int n_src;
  const char *out;
  const char *picks[MAX_PICKS];
  int n_picks, list, uncompressed, overwrite, verbose, quiet;
  int64_t memory_limit;
} convert_args;

static int parse(int argc, char **argv, convert_args *a) {
  memset(a, 0, sizeof *a);
  a->src = calloc((size_t)argc, sizeof *a->src);
  if (!a->src) return LUMEN_EXIT_FAILURE;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    int has_value = i + 1 < argc;
    if (!strcmp(s, "--out") && has_value) a->out = argv[++i];
    else if (!strcmp(s, "--series") && has_value) {
      if (a->n_picks == MAX_PICKS) {
        lumen_cli_error(cmd, "--series: at most %d", MAX_PICKS);
        return LUMEN_EXIT_USAGE;
      }
      a->picks[a->n_picks++] = argv[++i];
    } else if (!strcmp(s, "--memory-limit") && has_value) {
      a->memory_limit = lumen_cli_parse_size(argv[++i]);
      if (a->memory_limit <= 0) {
        lumen_cli_error(cmd, "--memory-limit '%s': expected a size such as 512M or 4G", argv[i]);
        return LUMEN_EXIT_USAGE;
      }
    } else if (!strcmp(s, "--list")) a->list = 1;
    else if (!strcmp(s, "--uncompressed")) a->uncompressed = 1;
    else if (!strcmp(s, "--overwrite")) a->overwrite = 1;
    else if (!strcmp(s, "-v") || !strcmp(s, "--verbose")) a->verbose = 1;
    else if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) a->quiet = 1;
    else if (s[0] == '-' && s[1]) {
      lumen_cli_error(cmd, "unknown option or missing value: '%s' (see 'lumen convert --help')", s);
      return LUMEN_EXIT_USAGE;
    } else a->src[a->n_src++] = s;
  }
  if (a->n_src == 0 || (!a->out && !a->list)) {
    lumen_cli_error(cmd, "SRC... and --out DIR (or --list) are required (see 'lumen convert --help')");
    return LUMEN_EXIT_USAGE;
  }
  return -1;
}

/* The output folder: made when missing (with its parents); an existing one must be a folder. */
static int make_out(const char *dir) {
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) return 0;
  for (char *p = buf + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      if (mkdir(buf, 0777) != 0 && errno != EEXIST) return 0;
      *p = '/';
    }
  if (mkdir(buf, 0777) != 0 && errno != EEXIST) return 0;
  struct stat st;
  return stat(buf, &st) == 0 && S_ISDIR(st.st_mode);
}

static int picked(const convert_args *a, const lumen_dicom_series_entry *e) {
  if (a->n_picks == 0) return 1;
  for (int i = 0; i < a->n_picks; i++) {
    const char *p = a->picks[i];
    if (!strcmp(p, e->series_uid)) return 1;
    if (p[0] && strspn(p, "0123456789") == strlen(p) && strlen(p) < 13 && e->series_number == atoll(p)) return 1;
  }
  return 0;
}

/* NUMBER_DESCRIPTION with every character but letters, digits, '-' and '.' as '_' (no run of
   them, none at the ends); made unique among the names given so far. */
static void series_name(const lumen_dicom_series_entry *e, char used[][160], int n_used, char *name, size_t size) {
  char base[160] = "", desc[70];
  size_t k = 0;
  for (const char *p = e->series_description; *p && k + 1 < sizeof desc; p++) {
    int keep = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.';
    if (keep) desc[k++] = *p;
    else if (k > 0 && desc[k - 1] != '_') desc[k++] = '_';
  }
  while (k > 0 && desc[k - 1] == '_') k--;
  desc[k] = 0;
  if (e->series_number >= 0)
    snprintf(base, sizeof base, "%lld%s%s%s", (long long)e->series_number, k ? "_" : "", desc, e->suffix);
  else snprintf(base, sizeof base, "series%s%s%s", k ? "_" : "", desc, e->suffix);
  snprintf(name, size, "%s", base);
  for (int suffix = 2;; suffix++) {
    int clash = 0;
    for (int i = 0; i < n_used && !clash; i++) clash = !strcmp(used[i], name);
    if (!clash) return;
    snprintf(name, size, "%s_%d", base, suffix);
  }
}

/* The stored type: int16 or uint16 when every value is an integer in range, else float32: from
   the headers when every file's modality LUT is the identity on at most 16 stored bits (DICOM's own
   stored values, as dcm2niix writes them), else by looking at the values. *out is im itself, or an
   image of the narrower type over im's own memory (converted in place, front to back: value i
   moves from byte 4i to byte 2i, never over a value not yet read), to be freed before im. */
static lumen_status stored_type(lumen_ctx *ctx, const lumen_dicom_series_info *info, lumen_image *im,
                                lumen_image **out) {
  float *v = lumen_image_data(im);
  int64_t n = lumen_image_count(im);
  lumen_dtype t = LUMEN_DTYPE_FLOAT32;
  *out = im;
  if (info->stored_integers) {
    t = info->stored_signed || info->stored_bits <= 15 ? LUMEN_DTYPE_INT16 : LUMEN_DTYPE_UINT16;
  } else {
    float lo = 0, hi = 0;
    int fraction = 0;
    for (int64_t i = 0; i < n; i++) {
      float x = v[i];
      /* beyond +-65536 (and NaN, infinities) is not int16/uint16 anyway: 0.5 marks it */
      float c = ((x >= -65536.0f) & (x <= 65536.0f)) ? x : 0.5f;
      fraction |= c != (float)(int32_t)c;
      lo = c < lo ? c : lo;
      hi = c > hi ? c : hi;
    }
    if (!fraction)
      t = lo >= -32768 && hi <= 32767 ? LUMEN_DTYPE_INT16 : lo >= 0 && hi <= 65535 ? LUMEN_DTYPE_UINT16 : t;
  }
  if (t == LUMEN_DTYPE_FLOAT32) return LUMEN_OK;
  int ndim = lumen_image_ndim(im);
  int64_t dims[4];
  double sp[4], A[16];
  for (int a = 0; a < ndim; a++) dims[a] = lumen_image_dim(im, a);
  unsigned char *bytes = (unsigned char *)v;  /* stores through memcpy: the floats and the new values alias */
  if (t == LUMEN_DTYPE_INT16)
    for (int64_t i = 0; i < n; i++) {
      int16_t w = (int16_t)v[i];
      memcpy(bytes + 2 * i, &w, 2);
    }
  else
    for (int64_t i = 0; i < n; i++) {
      uint16_t w = (uint16_t)v[i];
      memcpy(bytes + 2 * i, &w, 2);
    }
  lumen_image *c = NULL;
  lumen_status s = lumen_image_wrap(ctx, v, ndim, dims, t, lumen_device_cpu(), &c);
  if (s == LUMEN_OK && lumen_image_get_spacing(im, sp, ndim) == LUMEN_OK) s = lumen_image_set_spacing(ctx, c, sp, ndim);
  if (s == LUMEN_OK && lumen_image_get_affine(im, A) == LUMEN_OK) s = lumen_image_set_affine(ctx, c, A);
  if (s != LUMEN_OK) {
    lumen_image_free(c);
    return s;
  }
  *out = c;
  return LUMEN_OK;
}

/* One series to DIR/NAME.nii[.gz] + DIR/NAME.json. */
static int convert_one(lumen_ctx *ctx, const convert_args *a, const lumen_dicom_series_entry *e, const char *name) {
  /* the entry's files are one part of one series: no UID filter (an empty UID is a series too) */
  lumen_dicom_series_opts o = {.max_bytes = a->memory_limit};
  lumen_dicom_series_info info;
  lumen_image *im = NULL, *stored = NULL;
  lumen_json *side = NULL;
  char nii[4096], json[4096];
  snprintf(nii, sizeof nii, "%s/%s.%s", a->out, name, a->uncompressed ? "nii" : "nii.gz");
  snprintf(json, sizeof json, "%s/%s.json", a->out, name);
  lumen_status s = lumen_dicom_series_read(ctx, (const char *const *)e->paths, (int)e->files, &o, &im, &info);
  if (s == LUMEN_OK) s = stored_type(ctx, &info, im, &stored);
  if (s == LUMEN_OK) s = lumen_dicom_series_sidecar(ctx, &info, &side);
  if (s == LUMEN_OK) {
    lumen_nifti_write_opts w = {.overwrite = a->overwrite, .description = "lumen convert"};
    if (info.geometry_unknown) w.sform_code = w.qform_code = -1;  /* code 0: no position in the patient */
    s = lumen_nifti_write(ctx, nii, stored, &w);
  }
  if (s == LUMEN_OK) s = lumen_json_write(ctx, side, json, a->overwrite);
  if (s != LUMEN_OK) lumen_cli_error(cmd, "series %lld \"%s\" (%s): %s", (long long)e->series_number, e->series_description,
                                     e->series_uid, lumen_ctx_last_error(ctx));
  else if (!a->quiet) {
    printf("%s  %lld x %lld x %lld x %lld  %lld files", nii, (long long)lumen_image_dim(im, 0),
           (long long)lumen_image_dim(im, 1), (long long)info.slices, (long long)info.frames, (long long)info.files);
    if (info.frames > 1) printf("  %s%s", info.timing_note, info.frame_times_s ? "" : "; no frame times in the headers");
    printf("\n");
  }
  if (stored != im) lumen_image_free(stored);
  lumen_image_free(im);
  lumen_json_free(side);
  lumen_dicom_series_info_clear(&info);
  lumen_ctx_clear_error(ctx);
  return s == LUMEN_OK;
}

static void list_series(const lumen_dicom_series_entry *e, int64_t n) {
  printf("%-8s %-64s %-40s %s\n", "number", "SeriesInstanceUID", "SeriesDescription", "files");
  for (int64_t i = 0; i < n; i++) {
    char number[24] = "-";
    if (e[i].series_number >= 0) snprintf(number, sizeof number, "%lld", (long long)e[i].series_number);
    printf("%-8s %-64s %-40s %lld%s%s\n", number, e[i].series_uid[0] ? e[i].series_uid : "(none)",
           e[i].series_description, (long long)e[i].files, e[i].suffix[0] ? "  part " : "", e[i].suffix);
  }
}

/* Warnings (and with -v the reader's notes) to stderr; errors are printed once, by the command,
   with the series they belong to. */
static void convert_log(void *user, lumen_log_level level, const char *message) {
  static const char *const names[] = {"error", "warning", "info", "debug"};
  (void)user;
  if (level != LUMEN_LOG_ERROR) fprintf(stderr, "lumen convert: %s: %s\n", names[level], message);
}

int lumen_cmd_convert(int argc, char **argv) {
  if (lumen_cli_asks_help(argc, argv)) {
    help(stdout);
    return lumen_cli_finish_stdout(cmd);
  }
  convert_args a;
  int rc = parse(argc, argv, &a);
  if (rc >= 0) {
    free(a.src);
    return rc;
  }
  lumen_ctx *ctx = lumen_cli_context(cmd, a.verbose);
  if (!ctx) {
    free(a.src);
    return LUMEN_EXIT_FAILURE;
  }
  lumen_ctx_set_log(ctx, convert_log, NULL, a.verbose ? LUMEN_LOG_DEBUG : LUMEN_LOG_WARNING);
  lumen_dicom_series_entry *e = NULL;
  int64_t n = 0, skipped = 0;
  rc = LUMEN_EXIT_OK;
  if (lumen_dicom_series_find(ctx, a.src, a.n_src, a.memory_limit, &e, &n, &skipped) != LUMEN_OK) {
    lumen_cli_error(cmd, "%s", lumen_ctx_last_error(ctx));
    rc = LUMEN_EXIT_FAILURE;
  } else if (a.list) {
    list_series(e, n);
  } else if (!make_out(a.out)) {
    lumen_cli_error(cmd, "--out '%s': cannot make the folder, or it is not a folder", a.out);
    rc = LUMEN_EXIT_FAILURE;
  } else {
    char (*used)[160] = calloc((size_t)n, sizeof *used);
    int n_used = 0, converted = 0;
    for (int64_t i = 0; used && i < n; i++) {
      if (!picked(&a, &e[i])) continue;
      series_name(&e[i], used, n_used, used[n_used], sizeof used[n_used]);
      if (convert_one(ctx, &a, &e[i], used[n_used])) converted++;
      else rc = LUMEN_EXIT_FAILURE;
      n_used++;
    }
    if (!used) rc = LUMEN_EXIT_FAILURE;
    if (used && n_used == 0) {
      lumen_cli_error(cmd, "--series: no series matches (run with --list to see them)");
      rc = LUMEN_EXIT_FAILURE;
    }
    if (!a.quiet && used)
      printf("%d of %d series converted%s\n", converted, n_used, skipped ? " (some files skipped: see the warnings)" : "");
    free(used);
  }
  lumen_dicom_series_entries_free(e, n);
  lumen_ctx_destroy(ctx);
  free(a.src);
  int out = lumen_cli_finish_stdout(cmd);
  return rc != LUMEN_EXIT_OK ? rc : out;
}
#else
LUMEN_CLI_NO_IO_COMMAND(lumen_cmd_convert, "convert")
#endif
