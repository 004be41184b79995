/* Options checked before anything is read or written (plausible.c, issue 15): the prefix, the
   models, the fit options of a model, and the plausibility of values whose unit is easily
   confused. */
#ifndef LUMEN_PIPE_OPTIONS_H
#define LUMEN_PIPE_OPTIONS_H

#include <stdint.h>
#include "lumen/fit.h"
#include "lumen/pipeline.h"

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

/* Plausibility: LUMEN_ERR_INVALID_ARGUMENT naming source ("--tr", "sidecar 'x.json'
   RepetitionTime"), the value and the likely mistake; NaN (not given) passes. spgr: an SPGR TR
   (0.5..100 ms), else up to 30 s (inversion recovery). */
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

#endif
