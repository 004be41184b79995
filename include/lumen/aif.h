/* lumen: population arterial input functions, and spoiled-gradient-echo (SPGR) signal <-> R1 <->
   concentration conversion.

   Units: time in MINUTES, concentrations in mM, TR and T1 in seconds, R1 in 1/s, relaxivity r1
   in 1/(mM s), flip angles in RADIANS. Hematocrit converts whole blood to plasma:
   Cp = Cb / (1 - Hct). */
#ifndef LUMEN_AIF_H
#define LUMEN_AIF_H
#include "lumen/export.h"

#include <stdint.h>
#include "lumen/status.h"
#include "lumen/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Population AIFs. Parker and Georgiou describe WHOLE BLOOD; Weinmann and Fritz-Hansen PLASMA. */
typedef enum lumen_aif_kind {
  LUMEN_AIF_PARKER = 0,    /* "parker": Parker et al. MRM 2006 (whole blood) */
  LUMEN_AIF_GEORGIOU,      /* "georgiou": Georgiou et al. MRM 2018 (whole blood) */
  LUMEN_AIF_WEINMANN,      /* "weinmann": Weinmann 1984 / Tofts 1991 biexponential (plasma) */
  LUMEN_AIF_FRITZ_HANSEN,  /* "fritz-hansen": Fritz-Hansen et al. 1996 (plasma) */
  LUMEN_AIF_COUNT
} lumen_aif_kind;

#define LUMEN_AIF_DEFAULT_HCT 0.45
#define LUMEN_AIF_DEFAULT_DOSE 0.1   /* mmol/kg, Weinmann */

typedef struct lumen_aif_options {
  lumen_aif_kind kind;  /* default LUMEN_AIF_PARKER */
  double delay;         /* bolus arrival, minutes (>= 0): AIF(t) = model(t - delay), 0 before */
  double hct;           /* hematocrit in [0, 1), default 0.45 */
  int plasma;           /* 1 (default): write plasma Cp; 0: write whole blood Cb */
  double dose;          /* Weinmann only: dose in mmol/kg, default 0.1 */
  /* Georgiou only, optional: the published high-resolution curve (the paper's supplementary
     table, e.g. shared/data/osipi/population_aif/PopulationAIF_GeorgiouMRM2018.txt): times in
     minutes (strictly increasing, >= 2 points) and whole-blood mM. As in the OSIPI reference
     implementation, times inside the table's span are interpolated linearly in the table and
     later times use the formula. NULL/0 (default): the formula everywhere; with the rounded
     parameters of the paper's Table 3 it differs from the table by up to 0.085 mM (2.7 %). */
  const double *table_t;
  const double *table_c;
  int64_t table_n;
} lumen_aif_options;

/* "parker", "georgiou", "weinmann", "fritz-hansen"; "unknown" otherwise. */
LUMEN_API const char *lumen_aif_name(lumen_aif_kind kind);
LUMEN_API lumen_status lumen_aif_parse(const char *name, lumen_aif_kind *out);
/* 1 when the published model gives plasma concentration, 0 for whole blood, -1 if unknown. */
LUMEN_API int lumen_aif_is_plasma(lumen_aif_kind kind);
LUMEN_API void lumen_aif_options_init(lumen_aif_options *opts);

/* Evaluates a population AIF at n times t (minutes, any order, finite) into out (n values, mM):
   plasma or whole blood as opts->plasma asks, converting with opts->hct where the model's own
   quantity differs. n may be 0. */
LUMEN_API lumen_status lumen_aif_population(lumen_ctx *ctx, const lumen_aif_options *opts, int64_t n,
                                  const double *t, double *out);

/* ---------------------------------------------------------------- SPGR signal conversion */

/* Per-sample state of a conversion (one byte per sample). */
typedef enum lumen_conc_state {
  LUMEN_CONC_OK = 0,
  LUMEN_CONC_OUT_OF_RANGE,   /* the signal gives E1 outside (0, 1): no finite positive R1 */
  LUMEN_CONC_NOT_FINITE,     /* the signal sample is NaN or infinite */
  LUMEN_CONC_BAD_BASELINE,   /* baseline mean or T10 unusable (not finite, <= 0): whole curve */
  LUMEN_CONC_STATE_COUNT
} lumen_conc_state;

/* "ok", "out_of_range", "not_finite", "bad_baseline"; "unknown" otherwise. */
LUMEN_API const char *lumen_conc_state_name(lumen_conc_state state);

typedef struct lumen_spgr_options {
  double flip_angle;     /* nominal flip angle, radians, in (0, pi) */
  double tr;             /* repetition time, s (> 0) */
  double r1;             /* relaxivity, 1/(mM s) (> 0), default 4.5 (only for concentration) */
  double b1;             /* flip-angle scale (actual = b1 * nominal), default 1 */
  int64_t baseline_start;/* baseline = mean of samples [baseline_start, baseline_end): default */
  int64_t baseline_end;  /* 1 and 2 (OSIPI: samples 1 .. numbaselinepts-1; sample 0 excluded) */
  double invalid_value;  /* value written for flagged samples, default 0 (never NaN) */
} lumen_spgr_options;

LUMEN_API void lumen_spgr_options_init(lumen_spgr_options *opts);

/* SPGR signal -> R1 (1/s) with the pre-contrast T1 t10 (s) and the baseline mean S0:
   M0 sin a = S0 (1 - cos a E10)/(1 - E10), x = S/(M0 sin a), E1 = (1 - x)/(1 - x cos a),
   R1 = -ln(E1)/TR. Samples outside the model are flagged in state (may be NULL) and get
   opts->invalid_value; *n_invalid (may be NULL) counts them. A bad baseline or t10 flags every
   sample (LUMEN_CONC_BAD_BASELINE) and still returns LUMEN_OK: it is a property of the voxel.
   Errors: NULL pointers, n < 1, options out of range, baseline range outside [0, n). */
LUMEN_API lumen_status lumen_spgr_signal_to_r1(lumen_ctx *ctx, const lumen_spgr_options *opts, double t10,
                                     int64_t n, const double *signal, double *r1_out,
                                     uint8_t *state, int64_t *n_invalid);
/* The same, then C = (R1 - 1/t10)/r1 (mM). */
LUMEN_API lumen_status lumen_spgr_signal_to_conc(lumen_ctx *ctx, const lumen_spgr_options *opts, double t10,
                                       int64_t n, const double *signal, double *conc_out,
                                       uint8_t *state, int64_t *n_invalid);
/* Fast exchange: R1 = R10 + r1 C for n samples (r10 in 1/s, r1 in 1/(mM s)). out may be conc. */
LUMEN_API lumen_status lumen_conc_to_r1(lumen_ctx *ctx, double r10, double r1, int64_t n, const double *conc,
                              double *r1_out);
/* Forward SPGR: S = M0 sin a (1 - E1)/(1 - cos a E1), E1 = exp(-TR R1), a = b1 * flip_angle. */
LUMEN_API lumen_status lumen_spgr_r1_to_signal(lumen_ctx *ctx, const lumen_spgr_options *opts, double m0,
                                     int64_t n, const double *r1, double *signal_out);

#ifdef __cplusplus
}
#endif
#endif
