/* The arterial input function: stage "aif" of `lumen dce` (stage B of the run log; the options
   are docs/PIPELINES.md "Stage B"). Where each part lives:
     stage_aif.c   the stage: --aif dispatched in two steps (below), the bolus arrival, population
                   and file AIFs, the checks of the AIF used, the run log's stage B
     aif_auto.c    --aif auto, all of it but the voxel rule: where the vessels are searched, their
                   curve, the checks that accept it or fall back to Parker (the place to fix
                   automatic AIF detection)
     vessels.c     the candidate vessel voxels (vessels.h, tested on synthetic images)
     aif_roi.c     --aif roi:FILE and fitted:FILE, and the blood curve of a list of voxels (auto's too)
     aif_biexp.c   the biexponential fit of fitted:FILE (lumen_pipe_fit_biexp_aif, public)
     aif_file.c    --aif file:FILE tables
     aif_output.c  the AIF table {prefix}_aif.tsv and its figures */
#ifndef LUMEN_PIPE_AIF_H
#define LUMEN_PIPE_AIF_H

#include <stddef.h>
#include <stdint.h>
#include "pipeline/pipe_conc.h"
#include "pipeline/pipe_run.h"

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

/* What the AIF is made from. */
typedef struct pipe_aif_in {
  const float *sig;        /* the series (nvox x nt), voxel fastest */
  int64_t nvox, nt;
  const double *t_min;     /* frame times, minutes from the first frame */
  const pipe_spgr *sp;
  const float *b1;         /* may be NULL */
  const double *tissue_mean; /* mean concentration of the usable fitted voxels (nt) */
  const char *ref_path;    /* the series path, for messages */
  int input_conc;
} pipe_aif_in;

/* The AIF in two steps around the conversion to concentration, which overwrites the series
   (stage_aif.c): the curve of the vessels (--aif auto) or of the ROI (roi:, fitted:) from the
   signal (pipe_aif_from_signal: aif->cb and aif->n_voxels, cp and cb allocated; tissue_mean not
   read), then the AIF itself (pipe_aif_choose: the judgement of the vessels against the mean
   tissue curve, the bolus arrival, a population or file AIF, the table and figure; sig not read). */
lumen_status pipe_aif_from_signal(pipe_run *run, const pipe_aif_in *in, pipe_aif *aif);
lumen_status pipe_aif_choose(pipe_run *run, const pipe_aif_in *in, pipe_aif *aif);
void pipe_aif_free(pipe_aif *aif);

/* ---- aif_auto.c: --aif auto */
/* Step 1: the candidate vessels (pipe_detect_vessels over the first half of the baseline) and the
   mean whole-blood curve of those usable into cb (nt); *list, *n: the candidates (owned by the
   caller), *used: the usable ones. A failed conversion is no error: used 0, and step 2 falls back. */
void pipe_aif_auto_signal(pipe_run *run, const pipe_aif_in *in, double *cb, int64_t **list, int64_t *n, int64_t *used);
/* The curves the vessels are judged on. */
typedef struct pipe_aif_vessel_curves {
  const double *cb;          /* nt: the vessels' mean whole-blood concentration (mM) */
  const double *tissue_mean; /* nt: the mean tissue concentration of the fitted voxels (mM) */
  int64_t nt;
  int64_t used;              /* the vessel voxels averaged into cb */
  double hct;                /* hematocrit: plasma = blood / (1 - hct) */
  int input_conc;            /* concentration input: no signal to find vessels in */
} pipe_aif_vessel_curves;
/* Why the vessels' curve is no AIF, into why (""when it passes): at least 3 voxels, plasma peak at
   least 3x the tissue peak, peak no later than the tissue's, washout (mean of the last quarter of
   the frames at most 70 % of the peak). */
void pipe_aif_judge_vessels(const pipe_aif_vessel_curves *c, char *why, size_t size);
/* Step 2: the vessels' curve (aif->cb, aif->n_voxels of step 1) as the AIF when it passes
   pipe_aif_judge_vessels; else a warning, aif->fallback = 1 and why in fallback (the caller then
   uses the Parker population AIF). */
void pipe_aif_auto_choose(pipe_run *run, const pipe_aif_in *in, pipe_aif *aif, char *fallback, size_t size);

/* ---- aif_roi.c: --aif roi:FILE, fitted:FILE */
/* The voxels of an ROI image (> 0.5) on the run's grid; recorded as the input "AIF ROI". */
lumen_status pipe_aif_roi_list(pipe_run *run, const char *path, const char *ref_path, int64_t **list, int64_t *n);
/* The mean whole-blood concentration (converted with the blood T1; the voxels' own arrival ends
   their baseline when earlier than the tissue's) of the usable listed voxels into cb (nt). */
lumen_status pipe_aif_blood_curve(pipe_run *run, const pipe_aif_in *in, const int64_t *list, int64_t nlist, double *cb,
                                  int64_t *n_used);
/* The AIF of roi:FILE (the ROI's mean) or fitted:FILE (its biexponential fit), from step 1's cb. */
lumen_status pipe_aif_roi(pipe_run *run, const pipe_aif_in *in, pipe_aif *aif, const char *spec);

/* ---- aif_output.c */
/* DIR/{prefix}_aif.tsv, and with a report figures/{prefix}_aif.png, the report's SVG plot and
   caption, and the AIF's voxels over the baseline image. */
lumen_status pipe_aif_write(pipe_run *run, const pipe_aif_in *in, const pipe_aif *aif);

/* ---- aif_file.c: `--aif file:PATH` tables (issue 14 item 7) */
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

#endif
