/* Adding up the summary of a fit run in pieces (pipeline/fit_counts.h). */
#include <string.h>
#include "pipeline/fit_counts.h"

void pipe_add_fit_piece(lumen_fit_results *res, const pipe_fit_piece *piece, int take_backend) {
  if (take_backend) {
    memcpy(res->backend_requested, piece->requested, sizeof res->backend_requested);
    memcpy(res->backend_selected, piece->selected, sizeof res->backend_selected);
    memcpy(res->backend_used, piece->used, sizeof res->backend_used);
    memcpy(res->reason, piece->reason, sizeof res->reason);
  }
  for (int t = 0; t < LUMEN_FIT_TIER_COUNT; ++t) res->curves_per_tier[t] += piece->tiers[t];
  for (int s = 0; s < LUMEN_FIT_STATE_COUNT; ++s) res->state_counts[s] += piece->states[s];
  for (int k = 0; k < LUMEN_FIT_MAX_PARAMS; ++k) {
    res->at_lower[k] += piece->at_lower[k];
    res->at_upper[k] += piece->at_upper[k];
  }
  res->seconds += piece->seconds;
}
