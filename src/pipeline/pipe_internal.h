/* Internal pieces shared by the pipeline sources (src/pipeline). */
#ifndef LUMEN_PIPE_INTERNAL_H
#define LUMEN_PIPE_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include "core/internal.h"
#include "lumen/io.h"
#include "lumen/pipeline.h"

/* ---- growable string */
typedef struct pipe_sb {
  char *s;
  size_t n, cap;
  int oom;
} pipe_sb;
void pipe_sb_printf(pipe_sb *b, const char *fmt, ...) LUMEN_PRINTF(2, 3);
void pipe_sb_json_str(pipe_sb *b, const char *s);   /* quoted, escaped */
void pipe_sb_json_num(pipe_sb *b, double v);        /* null for NaN/Inf */
/* Text for HTML element content and quoted attribute values: & < > " ' escaped, control
   characters but tab and newline as U+FFFD (report.html; every user-controlled string). */
void pipe_sb_html(pipe_sb *b, const char *s);
/* A relative link target for href/src: "./" then NAME percent-encoded (all but A-Z a-z 0-9
   - . _ ~ /), so that no file name can become a URL scheme (javascript:) or break the attribute. */
void pipe_sb_href(pipe_sb *b, const char *name);
void pipe_sb_free(pipe_sb *b);

/* ---- utilities */
double pipe_now(void);
lumen_status pipe_mkdir_p(lumen_ctx *ctx, const char *dir);
void pipe_join(char *buf, size_t size, const char *dir, const char *name);
/* The summary a pipeline entry point fills, zeroed: sum, or dummy when the caller gave NULL. */
lumen_pipe_summary *pipe_summary_start(lumen_pipe_summary *sum, lumen_pipe_summary *dummy);
const char *pipe_basename(const char *path);
void pipe_prefix_from(const char *path, char *out, size_t size);
int pipe_file_exists(const char *path);
int64_t pipe_detect_arrival_frac(const double *y, int64_t n, int64_t b0, int64_t b1, double frac);
double pipe_median(double *v, int64_t n);            /* sorts v; NaNs must be removed */
double pipe_percentile(double *v, int64_t n, double p); /* sorts v */

/* ---- one run: geometry, mask, the outputs written, the inputs read */
#define PIPE_MAX_OUTPUTS 256
#define PIPE_HIST_BINS 48
#define PIPE_MAX_INPUTS 48

typedef struct pipe_output {
  char path[LUMEN_PIPE_PATH_MAX];
  char name[256];          /* file name inside out */
  char param[32], unit[32], model[32];
  char png[320];           /* the map's figure (figures/...), "" when none */
  double lo, hi, median;   /* display window and median inside the mask */
  int64_t n_finite;
  int categorical;         /* state and best-model maps: values are categories, not a scale */
  int has_hist;            /* hist holds the map's histogram (report.html) */
  int64_t hist[PIPE_HIST_BINS]; /* finite values in the mask: bins over [lo, hi], or category counts */
  int64_t n_below, n_above;/* finite values in the mask outside the window */
  int window_converged;    /* the window is that of the converged voxels (pipe_map_stats) */
  int64_t n_at_bound;      /* voxels at a bound (hatched in the figure) */
  int is_map;
  char checksum[17];
} pipe_output;

typedef struct pipe_input {
  char role[32];
  char path[LUMEN_PIPE_PATH_MAX];
  char checksum[17];
} pipe_input;

typedef struct pipe_run {
  lumen_ctx *ctx;
  const lumen_pipe_config *cfg;
  const char *command;     /* "dce", "t1" */
  char out[LUMEN_PIPE_PATH_MAX];
  char prefix[256];
  int64_t nx, ny, nz, nvox;
  double affine[16], spacing[4];
  int sform_code, qform_code;
  uint8_t *mask;           /* nvox, 1 = inside (owned) */
  int64_t n_mask;
  pipe_output outputs[PIPE_MAX_OUTPUTS];
  int n_outputs;
  pipe_input inputs[PIPE_MAX_INPUTS];
  int n_inputs;
  pipe_sb stages;          /* JSON members of "stages" (without braces) */
  pipe_sb text;            /* readable summary lines */
  pipe_sb aif_json;        /* AIF curve summary for the report */
  pipe_sb warnings;        /* the run's warnings, one line each ('\n'-terminated; run log, report) */
  char aif_png[320];
  char aif_voxels_png[320]; /* the AIF's voxels over the baseline image (figures/...), "" when none */
  char aif_caption[512];
  pipe_sb aif_svg;         /* the AIF plot for report.html */
  pipe_sb curves_svg;      /* fitted-curve plots for report.html (curves.c) */
  double t_start;
  lumen_pipe_summary *sum;
  int locked;              /* lock_fd holds OUT/.lumen.lock (outdir.c) */
  int lock_fd;
  int old_runlog_removed;  /* pipe_before_write has run */
  char backend_reason_said[512]; /* the last stage line's backend reason: the next says "as above" */
} pipe_run;

/* Checksums (checksum.c): XXH3 64-bit. PIPE_CHECKSUM_KEY names the field that holds one in the run
   log, so that a log or record written with the former FNV-1a ("fnv1a64") never reads as matching. */
#define PIPE_CHECKSUM_KEY "xxh3_64"
#define PIPE_CHECKSUM_NAME "XXH3 64-bit (xxHash) over the file bytes, 16 hex digits"
/* Hash of a file's bytes; returns 0 or an errno value (ENOMEM, EIO, or fopen's). Uses no context,
   so any thread may call it; pipe_checksum_report turns the value into the context's error. */
int pipe_checksum_path(const char *path, uint64_t *hash);
lumen_status pipe_checksum_report(lumen_ctx *ctx, const char *path, int err);
uint64_t pipe_checksum_bytes(uint64_t seed, const void *p, size_t n);
void pipe_checksum_hex(uint64_t hash, char hex[17]);

/* Reads a NIfTI input as float32 and records it (with its checksum) in the run log. */
lumen_status pipe_read_input(pipe_run *run, const char *role, const char *path, lumen_image **im,
                             lumen_nifti_info *info);
/* A DICOM series (a folder or a file, lumen_dicom_series_read; series_uid may be NULL) read as the
   NIfTI inputs are: info gets the series' affine (sform and qform code 1) and no frame interval,
   acq the header's FlipAngle, RepetitionTime (s) and frame times (key "DICOM TriggerTime" ...);
   recorded in the run log with the checksum of its files. acq is overwritten (not freed first). */
lumen_status pipe_read_dicom_series(pipe_run *run, const char *role, const char *path, const char *series_uid,
                                    lumen_image **im, lumen_nifti_info *info, lumen_acquisition *acq);
lumen_status pipe_record_input(pipe_run *run, const char *role, const char *path);
/* Records an input whose checksum the caller computed. */
void pipe_record_input_hash(pipe_run *run, const char *role, const char *path, uint64_t hash);
/* Checks that im has the run's 3-D grid (dims and affine). */
lumen_status pipe_check_grid(pipe_run *run, const char *role, const char *path, const lumen_image *im,
                             const char *ref_path);
/* Loads the mask (or sets every voxel) */
lumen_status pipe_load_mask(pipe_run *run, const char *ref_path);
/* Writes a 3-D float map (nvox values) as DIR/NAME with intent, sidecar, figures. */
lumen_status pipe_write_map(pipe_run *run, const char *name, const float *data, const char *param,
                            const char *unit, const char *model, const char *backend_used, const char *description,
                            int figure);
/* One map of pipe_write_maps: what pipe_write_map takes. */
typedef struct pipe_map_out {
  char name[400];
  const float *data;       /* nvox values */
  char param[48];
  const char *unit, *model, *backend_used;
  char description[256];
  int figure;
  /* the fit state of each voxel (nvox, LUMEN_FIT_*; 255 not fitted) for a model's maps, or NULL: the
     figure's window comes from the converged voxels and voxels at a bound are hatched */
  const uint8_t *state;
} pipe_map_out;
/* Writes maps[0..n) as pipe_write_map one after the other would, with the same files, outputs,
   report rows, figures, log messages and error (that of the first map in the list that failed),
   but the NIfTI files and sidecars on up to the context's threads at once (each file's compression
   on the threads left over): their compression and fsyncs overlap. The bookkeeping (outputs,
   statistics, figures) follows in the list's order. Maps after a failed one may have been written
   (whole files: every write is atomic). One thread, or no memory for the threads' contexts: one at
   a time, as pipe_write_map. */
lumen_status pipe_write_maps(pipe_run *run, const pipe_map_out *maps, int n);
/* A list of maps filled on demand, for pipe_write_map_list: fill(user, i, map) writes map i's nvox
   values (called on several threads at once, for different i); keep(user, i, map), when not NULL,
   runs after it on the calling thread, in the list's order (copies the caller keeps). */
typedef struct pipe_map_fill {
  void (*fill)(void *user, int i, float *map);
  void (*keep)(void *user, int i, const float *map);
  void *user;
} pipe_map_fill;
/* Fills and writes maps[0..n) (data NULL: filled by f; else written as it is; n at most
   PIPE_MAX_OUTPUTS) in batches that pipe_write_maps writes: the maps of a batch are in memory
   together, up to 2 x the context's threads of them (nvox floats each). scratch (nvox floats,
   required) is the first buffer; the others are allocated here, as many as memory allows: with
   none, the maps go one at a time through scratch. Stops at the first error. */
lumen_status pipe_write_map_list(pipe_run *run, pipe_map_out *maps, int n, float *scratch, const pipe_map_fill *f);
/* Records a non-map output (TSV, PNG, JSON ...) written elsewhere. */
void pipe_record_output(pipe_run *run, const char *name);
/* Refuses when NAME exists in out without overwrite. */
lumen_status pipe_check_overwrite(pipe_run *run, const char *name);
lumen_status pipe_write_text_file(pipe_run *run, const char *name, const char *text);
void pipe_run_free(pipe_run *run);
/* A warning of the run: logged (LUMEN_LOG_WARNING) and listed in the run log and the report. */
void pipe_warn(pipe_run *run, const char *fmt, ...) LUMEN_PRINTF(2, 3);
/* Iterates the run's warnings: copies the line at w (start: run->warnings.s, may be NULL) into line
   and returns the next position, or NULL when there is none. */
const char *pipe_next_warning(const char *w, char *line, size_t size);
/* "0 converged 1 max_iterations ... 7 at_bound": the state maps' description. */
void pipe_state_legend(char *buf, size_t size);
/* Appends `, "at_bound": {"PARAM": {"lower": n, "upper": m}, ...}` (fit parameters) to b and
   writes a readable summary of the parameters on a bound into text (" (ve lower 30)", or ""). */
void pipe_at_bound_json(pipe_sb *b, char *text, size_t size, lumen_model model, const lumen_fit_results *res);
/* Appends `"PARAM": [lo, hi, start], ...` for every fit parameter: the plan's effective values. */
void pipe_bounds_json(pipe_sb *b, const lumen_fit_plan *plan, lumen_model model);
/* Marks the run's results unreliable (exit 3, the report's banner, the run log's "unreliable") with why,
   and warns; the first reason is kept. */
void pipe_mark_unreliable(pipe_run *run, const char *why);
/* A plasma AIF peaking below this (mM) is far below what a contrast dose gives (about 2-20 mM for
   0.05-0.2 mmol/kg): a broken vessel search or ROI, or an AIF file in another unit (issue 39 item 1). */
#define PIPE_AIF_PEAK_MIN_MM 1.0
/* Judges one fitted model (or the T1 fit): a warning for voxels on a bound and for failed voxels; more than half the
   voxels failing, or more than half at the upper bound of one parameter, marks the run's results unreliable
   (summary, exit 3) with a warning. */
void pipe_judge_model(pipe_run *run, const char *what, lumen_model model, const lumen_fit_results *res, int64_t fitted,
                      int64_t at_bound, int64_t failed, const char *bound_text);

/* ---- the output folder (outdir.c) */
/* The lock file of an output folder: one run at a time writes into a folder. */
#define PIPE_LOCK_NAME ".lumen.lock"
/* Takes the folder's lock (flock LOCK_EX|LOCK_NB on OUT/.lumen.lock, the holder's PID inside):
   refuses at once when another run holds it, naming that run's PID. */
lumen_status pipe_lock_out(pipe_run *run);
/* Releases the lock (removing the lock file while still holding it); pipe_run_free calls it. */
void pipe_unlock_out(pipe_run *run);
/* Called before each output is written: the first call removes the run log of an earlier run
   under this prefix ({prefix}_runlog.json/.txt), so that an interrupted --overwrite run never leaves
   an old run log (which marks a complete run) beside new files. */
lumen_status pipe_before_write(pipe_run *run);

/* ---- options checked before anything is read or written (plausible.c, issue 15) */
/* --prefix: a file-name part, no path: refuses empty, '/', a leading '.', control characters and
   more than PIPE_PREFIX_MAX bytes. */
#define PIPE_PREFIX_MAX 150
lumen_status pipe_check_prefix(lumen_ctx *ctx, const char *prefix);
/* --models LIST (NULL: tofts) into models[LUMEN_MODEL_COUNT]. */
lumen_status pipe_parse_models(lumen_ctx *ctx, const char *list, lumen_model *models, int *n);
/* --method of lumen t1 (NULL: vfa). */
lumen_status pipe_parse_t1_method(lumen_ctx *ctx, const char *method, lumen_model *out);
/* The fit options of a DCE model (r1: relaxivity) and of a T1 method (tr: NaN for none) from cfg. */
void pipe_fit_options_dce(const lumen_pipe_config *cfg, lumen_model model, double r1, lumen_fit_options *o);
void pipe_fit_options_t1(const lumen_pipe_config *cfg, lumen_model method, double tr, lumen_fit_options *o);

/* run log + report */
lumen_status pipe_write_runlog(pipe_run *run);
lumen_status pipe_write_report(pipe_run *run);
/* figure rendering (report.c) */
/* Window (2nd..98th percentile: of the converged voxels when state is given and has some, else of
   every finite value inside the mask), median, finite count and histogram of a map inside the mask. */
void pipe_map_stats(pipe_run *run, const float *data, const uint8_t *state, pipe_output *o);
/* The map's standalone figure PNG: colour montage with title, colour bar or legend; o's window and
   histogram come from pipe_map_stats, which the caller (pipe_write_map) has run. */
lumen_status pipe_render_montage(pipe_run *run, const float *data, const uint8_t *state, pipe_output *o);
struct pipe_plot;
/* A standalone line-plot PNG (figures/NAME): title, numbered axes, legend. */
lumen_status pipe_render_plot_png(pipe_run *run, const char *name, const struct pipe_plot *p);
/* figures/NAME: the slices holding any of the n voxels (up to 12), background in grey (2nd..98th
   percentile of the image), the voxels in red: which voxels made the AIF (issue 39 item 1). */
lumen_status pipe_render_voxel_overlay(pipe_run *run, const char *name, const char *title, const float *background,
                                       const int64_t *voxels, int64_t n);

/* The fitted-curve figure of one model (curves.c): measured samples and fitted model curves at
   the voxels at the 10th, 50th and 90th percentile of the headline parameter (Ktrans; T1) among
   the converged voxels, appended to run->curves_svg. Optional: out of memory skips it. */
typedef struct pipe_curve_in {
  lumen_model model;
  const lumen_fit_plan *plan;
  const lumen_fit_results *res;
  const int64_t *list;     /* voxel index of each fitted curve */
  int64_t nlist, nt;
  const float *data;       /* nlist x nt, the data fitted */
  const float *consts;     /* nlist x LUMEN_FIT_NCONSTS, or NULL */
  const double *x;         /* nt sample positions of the plan */
  double x_scale;          /* displayed x = x * x_scale (radians -> degrees) */
  const char *xlabel, *ylabel;
  const lumen_fit_options *dense; /* non-NULL (T1 fits of a few volumes): the model is drawn on
                                     PIPE_CURVE_DENSE points across the samples, from a plan of
                                     these options */
  const struct pipe_curves *src;  /* data NULL: the curves fitted are these */
} pipe_curve_in;
#define PIPE_CURVE_DENSE 97
void pipe_curve_figure(pipe_run *run, const pipe_curve_in *in);

/* plausibility of values whose unit is easily confused (plausible.c): LUMEN_ERR_INVALID_ARGUMENT
   naming source ("--tr", "sidecar 'x.json' RepetitionTime"), the value and the likely mistake;
   NaN (not given) passes. spgr: an SPGR TR (0.5..100 ms), else up to 30 s (inversion recovery). */
lumen_status pipe_check_tr(lumen_ctx *ctx, const char *source, double tr, int spgr);
lumen_status pipe_check_tr_any(lumen_ctx *ctx, const char *source, double tr); /* spgr = 0 */
lumen_status pipe_check_flip(lumen_ctx *ctx, const char *source, double deg);
lumen_status pipe_check_dt(lumen_ctx *ctx, const char *source, double dt);
/* the whole series: frames over total_s seconds, at most 4 h (a --dt in ms passes pipe_check_dt up
   to 600 but makes a 1321-frame series last 183 h) */
lumen_status pipe_check_duration(lumen_ctx *ctx, const char *source, double total_s, int64_t frames);
lumen_status pipe_check_relaxivity(lumen_ctx *ctx, const char *source, double r1);
lumen_status pipe_check_t1(lumen_ctx *ctx, const char *source, double t1);
lumen_status pipe_check_hematocrit(lumen_ctx *ctx, const char *source, double hct);
lumen_status pipe_check_time(lumen_ctx *ctx, const char *source, double t); /* ir/sr times, s */

/* stage A */
typedef struct pipe_spgr {
  double fa_rad, tr, r1;
  int64_t b0, b1;          /* baseline frames [b0, b1) */
  double max_invalid_fraction;
} pipe_spgr;
/* Converts the curves of the listed voxels (signal image sig: nvox x nt, voxel fastest) into
   conc (nlist x nt, curve-major). t10 (s) per voxel (NULL: t10_const), b1 per voxel (NULL: 1).
   input_conc: the signal is concentration already (only flags non-finite samples).
   ninvalid[k]: flagged samples of list[k]; bad[k] = 1 when the curve is unusable. threads: how
   many (the context's); the curves do not depend on it. simd: the context's limit of the vector
   instructions (conc_f32.h: the curves are the same at every level).
   mean (nt, or NULL): the mean of the usable curves (bad[k] == 0), *used = their count (mean 0
   when none), summed while the curves are written: each group of 4096 curves in 16 lanes (lane l
   the curves k with (k - group start) % 16 == l, in list order: conc_sum.h), a group's lanes added
   in lane order, the groups' sums in group order, so the same bits for any thread count.
   count (3, or NULL): the totals of the flags: unusable voxels (sum of bad), flagged samples (sum
   of ninvalid), voxels with interpolated samples (bad 0, ninvalid > 0).
   0, or -1 when out of memory for the mean's partial sums (nothing converted). */
int pipe_convert(const float *sig, int64_t nvox, int64_t nt, const int64_t *list, int64_t nlist,
                 const float *t10, double t10_const, const float *b1, const pipe_spgr *sp, int input_conc,
                 int threads, lumen_cpu_simd simd, float *conc, int32_t *ninvalid, uint8_t *bad, double *mean,
                 int64_t *used, int64_t count[3]);
/* The concentration curves of the fitted voxels as pipe_convert_in_place leaves them: list[k]'s
   sample i at base[i * nvox + list[k]], k < nlist. */
typedef struct pipe_curves {
  const float *base;
  int64_t nvox, nt;
  const int64_t *list;
  int64_t nlist;
} pipe_curves;
/* Curves [k0, k0 + n) into dst (n x nt, curve-major), on threads; simd: the vector level allowed
   (moves only: the same bits at every level). */
void pipe_curves_get(const pipe_curves *c, int64_t k0, int64_t n, float *dst, int threads, lumen_cpu_simd simd);
/* pipe_convert with the curves written back over the series (frame-major: list[k]'s sample i at
   sig[i * nvox + list[k]], the same values as pipe_convert's conc[k * nt + i]); the voxels not
   listed keep their samples. No curve array: what `lumen dce` uses (pipe_curves_get reads them). */
int pipe_convert_in_place(float *sig, int64_t nvox, int64_t nt, const int64_t *list, int64_t nlist,
                          const float *t10, double t10_const, const float *b1, const pipe_spgr *sp, int input_conc,
                          int threads, lumen_cpu_simd simd, int32_t *ninvalid, uint8_t *bad, double *mean,
                          int64_t *used, int64_t count[3]);

/* The sum of the signal (sig: nvox x nt) over the listed voxels of every step-th group of
   PIPE_SAMPLE_GROUP consecutive list entries (list[0..15], list[16 step..16 step + 15], ...) whose
   frames are all finite, frame by frame into y (nt), each in list order: what the baseline
   detection of `lumen dce` reads. Threads split the frames: the same bits for any thread count.
   Returns how many voxels were summed, or -1 when out of memory. */
enum { PIPE_SAMPLE_GROUP = 16 };
int64_t pipe_mean_signal_sample(const float *sig, int64_t nvox, int64_t nt, const int64_t *list, int64_t nlist,
                                int64_t step, int threads, double *y);

/* T1 fitting core shared by `lumen t1` and `lumen dce --vfa` */
lumen_status pipe_t1_run(pipe_run *run, lumen_model method, const char *const *files, int nfiles,
                         int write_maps, float **t1_out);

/* ---- BEGIN aif_file.c: `--aif file:PATH` tables (issue 14 item 7) */
/* Reads an AIF table for nt frames at t_min (minutes; times in the file are seconds, or minutes
   in a time_min column, from the FIRST frame: t_min[0] may be nonzero). Fills cp (plasma, mM) and
   cb (whole blood, mM): cb = cp (1 - hct) for a plasma column, cp = cb / (1 - hct) for a blood
   column; detail (may be NULL) receives one line saying what was read. Layouts: one column = one
   plasma value per frame; two columns without header = time s, plasma mM; a header names the
   columns (lumen's own {prefix}_aif.tsv reads back its Cp_mM column); see aif_file.c. Linear
   interpolation; a frame more than one frame interval outside the samples is refused. Errors:
   LUMEN_ERR_INVALID_ARGUMENT naming the file (and the line or the columns), LUMEN_ERR_FORMAT /
   LUMEN_ERR_IO from the table reader. Does not record the input in a run log. */
lumen_status pipe_aif_read_file(lumen_ctx *ctx, const char *path, int64_t nt, const double *t_min, double hct,
                                double *cp, double *cb, char *detail, size_t detail_size);
/* ---- END aif_file.c */

/* stage B */
typedef struct pipe_aif {
  double *cp;              /* nt, plasma mM (owned) */
  double *cb;              /* nt, whole blood mM or NaN (owned) */
  char method[64];         /* "population:parker", "roi", "fitted", "file", "auto:..." */
  char detail[1024];
  double delay_min;
  int64_t arrival;
  double biexp[6];
  int64_t n_voxels;        /* ROI / detected voxels */
  int fallback;            /* 1: --aif auto fell back to a population AIF (a warning of the run) */
  int64_t *voxels;         /* the detected vessel or ROI voxels (n_list; owned), for the report's overlay */
  int64_t n_list;
  float *background;       /* nvox: the series' mean baseline signal (owned; NULL without a report) */
} pipe_aif;
typedef struct pipe_stage_b_in {
  const float *sig;        /* the series (nvox x nt), voxel fastest */
  int64_t nvox, nt;
  const double *t_min;     /* frame times, minutes from the first frame */
  const pipe_spgr *sp;
  const float *b1;         /* may be NULL */
  const double *tissue_mean; /* mean concentration of the usable fitted voxels (nt) */
  const char *ref_path;    /* the series path, for messages */
  int input_conc;
} pipe_stage_b_in;
/* Stage B in two steps around stage A's conversion, which overwrites the series: the curve of
   the vessels (--aif auto) or of the ROI (roi:, fitted:) from the signal (pipe_stage_b_signal:
   aif->cb and aif->n_voxels, cp and cb allocated; tissue_mean not read), then the AIF itself
   (pipe_stage_b: the judgement of the vessels against the mean tissue curve, the bolus arrival,
   a population or file AIF, the table and figure; sig not read). */
lumen_status pipe_stage_b_signal(pipe_run *run, const pipe_stage_b_in *in, pipe_aif *aif);
lumen_status pipe_stage_b(pipe_run *run, const pipe_stage_b_in *in, pipe_aif *aif);
void pipe_aif_free(pipe_aif *aif);

lumen_status pipe_setup_run(lumen_ctx *ctx, const lumen_pipe_config *cfg, pipe_run *run, const char *command,
                            const char *prefix_src, lumen_pipe_summary *sum);
void pipe_set_geometry(pipe_run *run, const lumen_image *im, const lumen_nifti_info *info);

#endif
