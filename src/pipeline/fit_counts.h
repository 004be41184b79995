/* One fit assembled from pieces (stage D checkpoint chunks, the parts of a distributed run):
   the summary fields of lumen_fit_results added up piece by piece. */
#ifndef LUMEN_PIPE_FIT_COUNTS_H
#define LUMEN_PIPE_FIT_COUNTS_H

#include <stdint.h>
#include "lumen/fit.h"

/* The summary of one piece: arrays of LUMEN_FIT_TIER_COUNT, LUMEN_FIT_STATE_COUNT and
   LUMEN_FIT_MAX_PARAMS (twice) counts, its seconds, and its backend names (full buffers of
   LUMEN_FIT_NAME_MAX and LUMEN_FIT_REASON_MAX bytes). */
typedef struct pipe_fit_piece {
  const int64_t *tiers, *states, *at_lower, *at_upper;
  double seconds;
  const char *requested, *selected, *used, *reason;
} pipe_fit_piece;

/* Adds the piece's counts and seconds to res; with take_backend also copies its backend names
   (the first piece that has any). */
void pipe_add_fit_piece(lumen_fit_results *res, const pipe_fit_piece *piece, int take_backend);

#endif
